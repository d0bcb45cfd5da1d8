//! Inputs that grow large stay linear: one test per shape that was quadratic
//! (or worse), each at a size the quadratic code took minutes on. The time
//! limits are for unoptimised test builds on a busy machine, many times what
//! the linear code needs; `benches/engine.rs` measures the same shapes.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolpolicy::runtime::Engine;
use toolpolicy::{Context, Policy, Registry, SessionState, SkillList, Table, Tool};

use crate::cli::support::{policy, scratch};

/// Runs `f` and fails when it took longer than `secs` seconds.
fn within<T>(secs: u64, what: &str, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    let took = start.elapsed();
    assert!(
        took < Duration::from_secs(secs),
        "{what} took {took:?}, over {secs} s: no longer linear?"
    );
    out
}

fn tool(name: String) -> Tool {
    Tool {
        description: format!("Does {name}."),
        name,
        parameters: json!({"type": "object", "properties": {}}),
        source: None,
        defer_loading: false,
        ..Default::default()
    }
}

/// `n` tools named `t0` ... in registry order.
fn tools(n: usize) -> Registry {
    Registry::new((0..n).map(|i| tool(format!("t{i}"))).collect()).expect("unique names")
}

#[test]
fn a_tool_with_100000_required_parameters_loads() {
    let props: serde_json::Map<String, Value> = (0..100_000)
        .map(|i| (format!("p{i}"), json!({"type": "string"})))
        .collect();
    let required: Vec<&String> = props.keys().collect();
    let text = json!([
        {"name": "big", "description": "Big.", "parameters": {"type": "object", "properties": props, "required": required}},
        {"name": "find", "description": "Finds tools."}
    ])
    .to_string();
    within(30, "loading and planning", || {
        let registry = Registry::from_json(&text).expect("loads");
        let empty = Policy::parse("empty.policy", "").expect("valid");
        let engine = Engine::new(empty, registry, SkillList::default());
        for params in ["false", "true"] {
            let source = format!("search find\nDefer(*)\ncatalog_params = {params}\n");
            engine.set_policy(Policy::parse("p.policy", source).expect("valid"));
            let plan = engine
                .session(Context::default())
                .and_then(|s| s.plan(&engine))
                .expect("plans");
            assert_eq!(plan.deferred_len(), 1);
            // With parameters on, the line is cut to its budget like any other.
            let line = plan.catalog().lines().nth(1).unwrap_or_default();
            assert_eq!(line.starts_with("- big(p0, "), params == "true", "{line}");
        }
    });
}

/// A policy with `modes` modes (`m0` ...) and `bots` bots (`b0` ...), each
/// with `per_block` rules whose selectors are general patterns (the kind the
/// compiled table cannot look up by hash) over tools `t0` ... `t{tools}`.
fn wide_policy(modes: usize, bots: usize, per_block: usize, tools: usize) -> String {
    let mut out = String::from("search t0\nDefer(*)\n");
    let mut k = 0;
    let mut rule = |out: &mut String, kind: &str| {
        k += 1;
        let _ = writeln!(out, "  {kind}(t{}*{}, t{})", k % 10, k % 7, (k * 7) % tools);
    };
    for m in 0..modes {
        let _ = writeln!(out, "mode m{m} {{");
        for i in 0..per_block {
            rule(&mut out, ["NoDefer", "Defer", "Hide"][i % 3]);
        }
        out.push_str("  when fast {\n    NoDefer(t1*)\n  }\n}\n");
    }
    for b in 0..bots {
        let _ = writeln!(out, "bot b{b} {{");
        for i in 0..per_block {
            rule(&mut out, ["Grant", "NoDefer", "Defer", "Hide"][i % 4]);
        }
        out.push_str("}\n");
    }
    out
}

#[test]
fn the_explain_matrix_matches_each_item_once() {
    let dir = scratch("linear-matrix");
    let (modes, n) = (50, 4_000);
    let source = wide_policy(modes, 0, 60, n);
    let registry = tools(n);
    let tools_json: Vec<Value> = registry
        .tools()
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description}))
        .collect();
    std::fs::write(dir.join("p.policy"), &source).expect("writes");
    std::fs::write(dir.join("r.json"), json!(tools_json).to_string()).expect("writes");
    let (p, r) = (dir.join("p.policy"), dir.join("r.json"));
    let args = |format: &'static str| {
        let (p, r) = (p.to_string_lossy(), r.to_string_lossy());
        let out = policy(&[
            "explain",
            "--policy",
            &p,
            "--registry",
            &r,
            "--format",
            format,
        ]);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        String::from_utf8(out.stdout).expect("UTF-8")
    };
    // Each cell matching 3,000 general patterns took about 40 s here.
    let text = within(20, "the JSON matrix", || args("json"));
    let doc: Value = serde_json::from_str(&text).expect("JSON");
    let rows = doc["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), n);
    assert_eq!(doc["modes"].as_array().map(Vec::len), Some(modes));
    // Every cell says what the table says about the item in that mode.
    let policy = Policy::parse("p.policy", source).expect("valid");
    let table = Table::compile(&policy);
    for (t, row) in registry.tools().iter().zip(rows).step_by(97) {
        assert_eq!(row["item"], json!(t.name));
        for (m, cell) in row["cells"].as_array().expect("cells").iter().enumerate() {
            let ctx = Context::mode(format!("m{m}"));
            let d = table.decide(
                &table.resolve(&ctx).expect("declared"),
                &toolpolicy::ItemRef::from_tool(t),
            );
            assert_eq!(cell["mode"], json!(format!("m{m}")));
            assert_eq!(cell["exposure"], json!(d.exposure));
            assert_eq!(cell["cause"], json!(d.cause));
        }
    }
    let human = within(20, "the human matrix", || args("human"));
    assert_eq!(human.lines().count(), 1 + 1 + n + 3 + 3);
}

#[test]
fn check_with_a_registry_over_many_modes_and_bots() {
    let n = 2_000;
    let source = wide_policy(20, 20, 50, n);
    let policy = Policy::parse("p.policy", source).expect("valid");
    let registry = tools(n);
    let diags = within(60, "linting with a registry", || {
        toolpolicy::lint::lint(&policy, Some(&registry), None)
    });
    // The shape has findings of its own: they are still found.
    assert!(!diags.is_empty());
}

#[test]
fn policy_test_runs_20000_cases() {
    let dir = scratch("linear-test");
    std::fs::write(
        dir.join("p.policy"),
        "search find\nDefer(*)\nNoDefer(t1*)\n",
    )
    .expect("writes");
    let mut cases = String::new();
    for i in 0..20_000 {
        let expect = if i.to_string().starts_with('1') {
            "active"
        } else {
            "deferred"
        };
        let _ = writeln!(cases, "[[case]]\nitem = \"t{i}\"\nexpect = \"{expect}\"\n");
    }
    // The last case fails, so its line number shows in the report.
    cases.push_str("[[case]]\nitem = \"t1\"\nexpect = \"hidden\"\n");
    std::fs::write(dir.join("p.test.toml"), cases).expect("writes");
    let file = dir.join("p.test.toml");
    let out = within(60, "20,000 cases", || {
        policy(&["test", &file.to_string_lossy()])
    });
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(&format!("p.test.toml:{}: `t1`", 20_000 * 4 + 1)),
        "{stdout}"
    );
    assert!(stdout.ends_with("20000 passed, 1 failed\n"), "{stdout}");
}

#[test]
fn resuming_and_planning_are_linear_in_evidence() {
    let n = 50_000;
    let policy =
        Policy::parse("p.policy", "search t0\nDefer(*)\nmax_activations = 3\n").expect("valid");
    let engine = Engine::new(policy, tools(n), SkillList::default());
    let state = SessionState {
        context: Context::default(),
        // Every tool twice, newest first: each is kept once, in first order.
        evidence: (1..n).rev().chain(1..n).map(|i| format!("t{i}")).collect(),
    };
    // About 0.4 s unoptimised; scanning the evidence per name took 10 s.
    within(5, "resuming and planning", || {
        let session = engine.resume(state).expect("resumes");
        let plan = session.plan(&engine).expect("plans");
        assert_eq!(plan.declared_len(), n);
        assert_eq!(plan.deferred().count(), 0);
        assert_eq!(
            plan.activated().next().map(|t| t.name.as_str()),
            Some("t49999")
        );
        assert_eq!(session.evidence().len(), n - 1);
    });
}

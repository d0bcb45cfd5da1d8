//! Deviations from the documented behaviour found in review, each pinned by the test that showed
//! it: the JSON contracts of section 4, the registry errors of section 3.1,
//! and input that used to crash the command line instead of ending in an
//! error with exit code 1 or 2.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use toolpolicy::decision::CauseKind;
use toolpolicy::{Policy, Registry, SkillList};

use crate::cli::support::policy;

/// A fresh scratch folder for one test, removed when the test ends.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!(
            "toolpolicy-conformance-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch folder");
        Scratch(dir)
    }

    fn write(&self, name: &str, text: &str) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, text).expect("write scratch file");
        path.display().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// docs/cli.md: `"kind": "guard"|"search"|"hide"|"grant"|"nodefer"|...` — the
/// JSON word of every cause is the one the contract lists, not serde's
/// `no_defer`.
#[test]
fn cause_kinds_serialize_as_the_spec_words() {
    for kind in CauseKind::ALL {
        assert_eq!(
            serde_json::to_value(kind).unwrap(),
            serde_json::json!(kind.as_str())
        );
    }
    let out = policy(&[
        "explain",
        "Bash",
        "--policy",
        "policies/pi-desktop.policy",
        "--mode",
        "agent",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("explain JSON");
    assert_eq!(doc["cause"]["kind"], "nodefer", "{doc}");
}

/// docs/registry.md: a missing name is an error that names the entry as
/// `tools[3].name`, like a name that is not a string or a duplicate.
#[test]
fn a_missing_name_is_reported_at_the_name() {
    let e = Registry::from_json(
        r#"[{"name": "a"}, {"name": "b"}, {"name": "c"}, {"description": "x"}]"#,
    )
    .unwrap_err();
    assert_eq!(e.path, "tools[3].name");
    assert!(e.message.contains("missing"), "{e}");
    let e = Registry::from_json(
        r#"{"tools": [{"type": "function", "function": {"description": "x"}}]}"#,
    )
    .unwrap_err();
    assert_eq!(e.path, "tools[0].function.name");
    let e = SkillList::from_json(r#"[{"name": "a"}, {"description": "x"}]"#).unwrap_err();
    assert_eq!(e.path, "skills[1].name");
}

/// Bad input ends in diagnostics, never a crash: blocks nested thousands
/// deep used to overflow the stack (the process aborted).
#[test]
fn deeply_nested_blocks_are_an_error_not_a_crash() {
    for open in ["mode a {\n", "when x {\n", "bot * {\n", "mode a { "] {
        let text = open.repeat(100_000);
        let e = Policy::parse("deep.policy", text).expect_err("invalid");
        assert!(!e.diagnostics.is_empty());
    }
    // The same through the command line, in a thread with the main thread's
    // stack: exit 1 with a diagnostic.
    let dir = Scratch::new("deep");
    let path = dir.write("deep.policy", &"mode a {\n".repeat(100_000));
    let out = policy(&["check", &path]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Legal nesting is untouched.
    assert!(Policy::parse("ok.policy", "mode a {\n  when x {\n    Defer(b)\n  }\n}\n").is_ok());
}

/// `policy plan ... | head -1`: standard output closed early ends the
/// command with exit code 2 and a message, not a panic (101).
#[test]
fn a_closed_standard_output_is_not_a_panic() {
    let dir = Scratch::new("pipe");
    let tools: Vec<serde_json::Value> = (0..2000)
        .map(|i| serde_json::json!({"name": format!("tool_number_{i}"), "description": "Does one thing. More."}))
        .collect();
    let registry = dir.write("reg.json", &serde_json::to_string(&tools).unwrap());
    let pol = dir.write("p.policy", "search tool_number_0\nDefer(*)\n");
    for format in ["json", "human"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_policy"))
            .args(["plan", "--policy", &pol, "--registry", &registry])
            .args(["--format", format])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("policy runs");
        // Far more than a pipe holds is written, and nothing is read.
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("policy ends");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    let _ = std::io::stderr().flush();
}

/// `policy check` on a rule that lists many names ends promptly: the
/// repeated-selector lint compared every selector with every earlier one
/// (20,000 names took minutes, 200,000 hours) and still finds the repeat.
#[test]
fn linting_a_long_rule_is_not_quadratic() {
    let names: Vec<String> = (0..20_000).map(|i| format!("tool_{i}")).collect();
    let text = format!(
        "search ToolSearch\nDefer({}, tool_7, t*)\nDefer(tool_9)\n",
        names.join(", ")
    );
    let p = Policy::parse("long.policy", text).expect("valid");
    // Its cost is measured by the `lint/10000` bench; a quadratic step makes
    // this test take minutes instead of well under a second.
    let diags = toolpolicy::lint::lint(&p, None, None);
    let repeats: Vec<&str> = diags
        .iter()
        .filter(|d| d.code == toolpolicy::diag::Code::Redundant)
        .map(|d| d.message.as_ref())
        .collect();
    assert_eq!(repeats.len(), 2, "{repeats:?}");
    assert!(
        repeats[0].contains("`tool_7` is already listed"),
        "{repeats:?}"
    );
    assert!(
        repeats[1].contains("`Defer(tool_9)` repeats"),
        "{repeats:?}"
    );
}

#[test]
fn the_model_reads_remain_or_remains_by_count() {
    use toolpolicy::{Context, Engine};
    let policy = Policy::parse("t", "search find\nDefer(*)\n").expect("valid");
    let registry = Registry::from_json(
        r#"[{"name": "find"}, {"name": "alpha", "description": "Alpha."},
            {"name": "beta", "description": "Beta."}, {"name": "gamma", "description": "Gamma."}]"#,
    )
    .expect("valid");
    let engine = Engine::new(policy, registry, SkillList::default());
    let mut chat = engine.session(Context::default()).expect("no modes");
    let r = chat.load(&engine, &["alpha"]).expect("loads");
    assert!(r.text.ends_with("2 tools remain on demand."), "{}", r.text);
    let r = chat.load(&engine, &["beta"]).expect("loads");
    assert!(r.text.ends_with("1 tool remains on demand."), "{}", r.text);
}

#[test]
fn a_named_tool_over_the_limit_is_not_also_a_match() {
    use toolpolicy::{Context, Engine};
    let policy = Policy::parse("t", "search find\nmax_activations = 1\nDefer(*)\n").expect("valid");
    let registry = Registry::from_json(
        r#"[{"name": "find"}, {"name": "web_fetch", "description": "Fetch a web page."},
            {"name": "web_search", "description": "Search the web for a page."}]"#,
    )
    .expect("valid");
    let engine = Engine::new(policy, registry, SkillList::default());
    let mut chat = engine.session(Context::default()).expect("no modes");
    let r = chat
        .search(&engine, "web page", &["web_fetch", "web_search"])
        .expect("searches");
    assert_eq!(r.activated, ["web_fetch"]);
    assert_eq!(r.over_limit, ["web_search"]);
    assert!(r.matches.is_empty(), "{:?}", r.matches);
}

#[test]
fn thousands_of_wildcard_rules_are_linted_alike() {
    // 6,000 rules of prefix and suffix patterns in one scope: each pattern
    // repeats every 97 or 89 rules, so the repeats are known in advance.
    let mut text = String::from("search ToolSearch\n");
    for i in 0..6_000 {
        text.push_str(&format!(
            "Defer(tool_{i}, pre{}_*, *_suf{})\n",
            i % 97,
            i % 89
        ));
    }
    let p = Policy::parse("wild.policy", text).expect("valid");
    let repeats = toolpolicy::lint::lint(&p, None, None)
        .iter()
        .filter(|d| d.code == toolpolicy::diag::Code::Redundant)
        .count();
    assert_eq!(repeats, (6_000 - 97) + (6_000 - 89));
}

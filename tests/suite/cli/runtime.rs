//! The runtime commands through the binary: the JSON contracts of docs/cli.md
//! section 4 and their exit codes.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn run(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_policy"))
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")))
        .output()
        .expect("policy runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn json(args: &[&str]) -> Value {
    let (code, out) = run(args);
    assert_eq!(code, Some(0), "{args:?}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {out}"))
}

const PI: [&str; 4] = [
    "--policy",
    "policies/pi-desktop.policy",
    "--registry",
    "examples/registries/pi-desktop.json",
];

fn with<'a>(head: &[&'a str], tail: &[&'a str]) -> Vec<&'a str> {
    head.iter().chain(PI.iter()).chain(tail).copied().collect()
}

#[test]
fn plan_json_has_the_contract_fields() {
    let d = json(&with(&["plan"], &["--mode", "chat", "--format", "json"]));
    let declared: Vec<&str> = d["declared"]
        .as_array()
        .expect("declared")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        declared,
        ["new_context", "ToolSearch", "Read", "Glob", "Grep"]
    );
    assert!(d["deferred"].as_array().is_some_and(|a| !a.is_empty()));
    assert!(d["hidden"].is_array() && d["skills"].is_array());
    assert!(
        d["catalog"]
            .as_str()
            .is_some_and(|c| c.starts_with("# On-demand tools"))
    );
    for k in ["declared", "catalog", "skills", "total", "all_declared"] {
        assert!(d["tokens"][k].is_u64(), "tokens.{k}");
    }
    let t = &d["tokens"];
    assert_eq!(
        t["total"].as_u64(),
        Some(
            t["declared"].as_u64().unwrap_or(0)
                + t["catalog"].as_u64().unwrap_or(0)
                + t["skills"].as_u64().unwrap_or(0)
        )
    );
}

#[test]
fn search_json_has_the_contract_fields() {
    let d = json(&with(
        &["search", "find files by glob pattern"],
        &[
            "--mode",
            "agent",
            "--names",
            "Read,Nope",
            "--format",
            "json",
        ],
    ));
    assert_eq!(d["already_active"], serde_json::json!(["Read"]));
    assert_eq!(d["unavailable"], serde_json::json!(["Nope"]));
    assert_eq!(d["activated"][0], "Glob");
    assert!(d["matches"].is_array());
    assert!(d["remaining_deferred"].is_u64());
}

#[test]
fn search_explain_keeps_the_contract_and_says_why() {
    let args = with(
        &["search", "find files by glob pattern"],
        &["--mode", "agent", "--explain", "--format", "json"],
    );
    let d = json(&args);
    assert_eq!(d["activated"][0], "Glob");
    assert!(d["matches"].is_array() && d["remaining_deferred"].is_u64());
    let explain = d["explain"].as_array().expect("an explain array");
    let results =
        d["activated"].as_array().map_or(0, Vec::len) + d["matches"].as_array().map_or(0, Vec::len);
    assert_eq!(explain.len(), results, "one explanation per result");
    let glob = &explain[0];
    assert_eq!(glob["tool"], "Glob");
    assert!(glob["score"].as_f64().is_some_and(|s| s > 0.0));
    let terms: Vec<&Value> = glob["concepts"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["terms"].as_array().into_iter().flatten())
        .collect();
    assert!(
        terms.iter().any(|t| t["term"] == "glob"
            && t["origin"] == "query"
            && t["fields"]
                .as_array()
                .is_some_and(|f| f.contains(&"name".into()))),
        "{glob}"
    );
    assert!(
        glob["bonuses"].as_array().is_some_and(|b| b
            .iter()
            .all(|b| b["what"].is_string() && b["points"].is_number())),
        "{glob}"
    );
    // Without --explain the JSON has no such field.
    let plain = json(&with(
        &["search", "find files by glob pattern"],
        &["--mode", "agent", "--format", "json"],
    ));
    assert!(plain.get("explain").is_none());
    // The human form says the same in words.
    let (code, out) = run(&with(
        &["search", "find files by glob pattern"],
        &["--mode", "agent", "--explain"],
    ));
    assert_eq!(code, Some(0));
    assert!(out.contains("why (score = concepts + bonuses):"), "{out}");
    assert!(
        out.contains("concept `glob`") && out.contains("(query, weight 1.00) in name"),
        "{out}"
    );
}

#[test]
fn measure_reports_every_mode() {
    let d = json(&with(&["measure"], &["--format", "json"]));
    let modes: Vec<&str> = d["modes"]
        .as_array()
        .expect("modes")
        .iter()
        .filter_map(|m| m["mode"].as_str())
        .collect();
    assert_eq!(modes, ["agent", "chat"]);
    for m in d["modes"].as_array().into_iter().flatten() {
        assert!(m["declared"]["tokens"].as_u64() < m["all"]["tokens"].as_u64());
        assert!(m["listed"]["tokens"].as_u64() < m["no_policy"]["tokens"].as_u64());
    }
}

#[test]
fn replay_json_is_one_entry_per_step() {
    let d = json(&[
        "replay",
        "tests/scenarios/pi-desktop-spec-example.json",
        "--policy",
        "policies/pi-desktop.policy",
        "--registry",
        "examples/registries/pi-desktop.json",
        "--format",
        "json",
    ]);
    let steps = d.as_array().expect("an array of steps");
    assert!(!steps.is_empty());
    for (i, s) in steps.iter().enumerate() {
        assert_eq!(s["step"].as_u64(), Some(i as u64));
        assert!(s["declared"].is_array() && s["result"].is_object());
    }
}

#[test]
fn usage_errors_exit_2() {
    for empty in ["", "skill:"] {
        let (code, _) = run(&["explain", empty, "--policy", "policies/pi-desktop.policy"]);
        assert_eq!(code, Some(2), "explain {empty:?}");
    }
    assert_eq!(
        run(&with(&["plan"], &[])).0,
        Some(2),
        "a policy with modes needs --mode"
    );
    assert_eq!(run(&with(&["plan"], &["--mode", "agnt"])).0, Some(2));
    assert_eq!(
        run(&with(&["plan"], &["--mode", "agent", "--tools", "cobol"])).0,
        Some(2)
    );
    assert_eq!(
        run(&[
            "plan",
            "--policy",
            "policies/invalid/unknown-rule.policy",
            "--registry",
            "examples/registries/pi-desktop.json"
        ])
        .0,
        Some(1),
        "a policy with errors"
    );
}

const GATEWAY: [&str; 4] = [
    "--policy",
    "policies/gateway.policy",
    "--registry",
    "examples/registries/gateway.json",
];

fn names(v: &Value) -> Vec<&str> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Plan mode by hint: the plan keeps exactly the tools whose servers say they
/// are read-only (less the one hidden by name), and a search finds nothing else.
#[test]
fn plan_and_search_honour_hints() {
    let args = |cmd: &[&'static str]| -> Vec<&'static str> {
        let mut v = cmd.to_vec();
        v.extend(GATEWAY);
        v.extend(["--flag", "readonly", "--format", "json"]);
        v
    };
    let plan = json(&args(&["plan"]));
    let registry: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/registries/gateway.json"),
        )
        .expect("registry"),
    )
    .expect("JSON");
    let read_only: Vec<&str> = registry
        .as_array()
        .expect("array")
        .iter()
        .filter(|t| t["annotations"]["readOnlyHint"] == true)
        .filter_map(|t| t["name"].as_str())
        .filter(|n| *n != "everything__get-env")
        .collect();
    let mut shown: Vec<&str> = names(&plan["declared"]);
    shown.extend(names(&plan["deferred"]));
    shown.retain(|n| *n != "tool_search");
    shown.sort_unstable();
    let mut want = read_only.clone();
    want.sort_unstable();
    assert_eq!(shown, want);
    assert!(names(&plan["hidden"]).contains(&"filesystem__write_file"));
    let found = json(&[args(&["search"]), vec!["write a file"]].concat());
    let activated = names(&found["activated"]);
    assert!(!activated.is_empty(), "{found}");
    assert!(activated.iter().all(|n| read_only.contains(n)), "{found}");
    // Without the flag the same search finds the tool that writes.
    let mut plain = vec!["search"];
    plain.extend(GATEWAY);
    plain.extend(["--format", "json", "write a file"]);
    assert!(names(&json(&plain)["activated"]).contains(&"filesystem__write_file"));
}

/// The matrix decides every registry tool by its hints.
#[test]
fn the_matrix_decides_by_hints() {
    let mut args = vec!["explain"];
    args.extend(GATEWAY);
    args.extend(["--flag", "readonly", "--format", "json"]);
    let m = json(&args);
    let cell = |item: &str| {
        m["rows"]
            .as_array()
            .and_then(|rows| rows.iter().find(|r| r["item"] == item))
            .map(|r| {
                (
                    r["cells"][0]["exposure"].clone(),
                    r["cells"][0]["cause"].clone(),
                )
            })
    };
    assert_eq!(
        cell("filesystem__write_file"),
        Some(("hidden".into(), "grant".into()))
    );
    assert_eq!(
        cell("memory__read_graph"),
        Some(("deferred".into(), "defer".into()))
    );
    assert_eq!(
        cell("everything__get-sum"),
        Some(("hidden".into(), "grant".into()))
    );
}

const CASES: &str = "examples/search/pi-desktop.cases.toml";

fn search_eval(cases: &str, tail: &[&str]) -> (Option<i32>, String) {
    let head = ["search-eval", cases];
    run(&with(&head, &[&["--mode", "agent"], tail].concat()))
}

/// A cases file beside the test's other temporary files, removed on drop.
struct TempCases(std::path::PathBuf);

impl TempCases {
    fn new(name: &str, text: &str) -> TempCases {
        let path = std::env::temp_dir().join(format!("toolpolicy-{}-{name}", std::process::id()));
        std::fs::write(&path, text).expect("temporary cases file is writable");
        TempCases(path)
    }
    fn path(&self) -> &str {
        self.0.to_str().expect("temporary path is UTF-8")
    }
}

impl Drop for TempCases {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn search_eval_scores_the_cases_and_keeps_the_floors() {
    let (code, out) = search_eval(CASES, &["--format", "json"]);
    assert_eq!(code, Some(0), "{out}");
    let d: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(d["answerable"], 6);
    assert_eq!(d["no_answer"], 2);
    for k in [
        "recall_at_1",
        "recall_at_4",
        "mrr",
        "recall_activated",
        "activated_per_query",
        "no_answer_abstained",
    ] {
        let v = d[k].as_f64().unwrap_or(-1.0);
        assert!((0.0..=4.0).contains(&v), "{k}: {v}");
    }
    assert!(d["recall_at_4"].as_f64() >= Some(0.9), "{d}");
    assert!(d["misses"].is_array() && d["failed_floors"] == serde_json::json!([]));

    // The human form names the figures, and every miss with its reason.
    let (code, out) = search_eval(CASES, &[]);
    assert_eq!(code, Some(0));
    for line in [
        "recall@1:",
        "recall@4:",
        "MRR:",
        "no-answer, nothing loaded:",
    ] {
        assert!(out.contains(line), "{line}: {out}");
    }

    // A floor not met exits 1 and says which.
    let strict = TempCases::new(
        "strict.toml",
        "[floors]\nmax_activated_per_query = 0.5\nrecall_at_1 = 1.01\n\n\
         [[case]]\nquery = \"find files by glob pattern\"\nexpect = [\"Glob\"]\n",
    );
    let (code, out) = search_eval(strict.path(), &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("floors not met: recall_at_1 1.000 < 1.01, max_activated_per_query"),
        "{out}"
    );

    // JSON cases, `[[query]]` with `q` as the project's own sets write them,
    // and a miss reported with what came back and why.
    let json = TempCases::new(
        "cases.json",
        r#"{"query": [{"q": "glob pattern", "expect": ["AskUser"], "half": "dev"},
                      {"q": "glob pattern", "expect": ["Glob"], "half": "holdout"}]}"#,
    );
    let (code, out) = search_eval(json.path(), &["--half", "dev", "--format", "json"]);
    assert_eq!(code, Some(0), "{out}");
    let d: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(d["answerable"], 1);
    let miss = &d["misses"][0];
    assert_eq!(miss["query"], "glob pattern");
    assert_eq!(miss["activated"][0], "Glob");
    let reason = miss["reason"].as_str().unwrap_or("");
    assert!(reason.contains("`Glob` scored"), "{reason}");
}

#[test]
fn search_eval_refuses_bad_cases_files() {
    let unknown = TempCases::new(
        "unknown.toml",
        "[[case]]\nquery = \"x\"\nexpect = [\"Globb\"]\n",
    );
    let (code, _) = search_eval(unknown.path(), &[]);
    assert_eq!(code, Some(2), "a tool the registry does not have");
    let empty = TempCases::new("empty.toml", "[floors]\nmrr = 0.5\n");
    assert_eq!(search_eval(empty.path(), &[]).0, Some(2), "no cases");
    let typo = TempCases::new("typo.toml", "[[case]]\nqeury = \"x\"\n");
    assert_eq!(search_eval(typo.path(), &[]).0, Some(2), "unknown key");
    assert_eq!(
        search_eval(CASES, &["--half", "nope"]).0,
        Some(2),
        "no case in that half"
    );
}

#[test]
fn search_explain_says_why_nothing_was_loaded() {
    let query = "order a large pepperoni pizza";
    let (code, out) = run(&with(&["search", query], &["--mode", "agent", "--explain"]));
    assert_eq!(code, Some(0));
    assert!(out.contains("activated:          (none)"), "{out}");
    assert!(
        out.contains("nothing loaded: the best candidate, `") && out.contains("falls short: "),
        "{out}"
    );
    assert!(out.contains("`pepperoni`, `pizza`"), "{out}");
    let d = json(&with(
        &["search", query],
        &["--mode", "agent", "--explain", "--format", "json"],
    ));
    let best = &d["explain"][0];
    assert_eq!(best["fit"]["fits"], false, "{best}");
    assert!(
        best["fit"]["units"]
            .as_array()
            .is_some_and(|u| u.len() == 4),
        "{best}"
    );
    // A query that loads something shows each result's fit, and no shortfall.
    let (_, out) = run(&with(
        &["search", "find files by glob pattern"],
        &["--mode", "agent", "--explain"],
    ));
    assert!(!out.contains("nothing loaded"), "{out}");
    assert!(out.contains("fits, covering"), "{out}");
}

//! The runtime commands through the binary: the JSON contracts of SPEC
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

//! `policy learn` on logs written by hand, and the search misses `policy
//! report` pairs: a load by name is no query, a refused call or load is no
//! miss, requests without a session teach as sessions do.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::audit::report::{scratch, write_log};

fn policy_cmd(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_policy"))
        .args(args)
        .output()
        .unwrap()
}

/// The standard output of a command that must succeed.
fn ok(args: &[&str]) -> String {
    let out = policy_cmd(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A registry of four tools and a policy that defers every tool and hides
/// one; `svc__gone` is in no registry.
fn setup(dir: &Path) -> (String, String) {
    let registry = dir.join("registry.json");
    std::fs::write(
        &registry,
        json!([
            {"name": "svc__notes", "description": "Create a note."},
            {"name": "svc__calendar", "description": "Create an event in the calendar."},
            {"name": "svc__secret", "description": "Read the vault."},
            {"name": "Read", "description": "Read a file."},
        ])
        .to_string(),
    )
    .unwrap();
    let policy = dir.join("p.policy");
    std::fs::write(&policy, "Defer(*)\nNoDefer(Read)\nHide(svc__secret)\n").unwrap();
    (
        policy.to_str().unwrap().to_string(),
        registry.to_str().unwrap().to_string(),
    )
}

/// Events of one session (or, with `sessionless`, of one client's requests
/// each named alone), a minute apart from `minute` on.
fn session(name: &str, sessionless: bool, minute: u32, steps: Vec<Value>) -> Vec<Value> {
    steps
        .into_iter()
        .enumerate()
        .map(|(i, mut e)| {
            let m = minute + i as u32;
            e["ts"] = json!(format!("2026-12-01T{:02}:{:02}:00.000Z", m / 60, m % 60));
            e["version"] = json!(1);
            e["caller"] = json!("alice");
            e["context"] = json!({"mode": null, "bot": null, "flags": []});
            if sessionless {
                e["session"] = json!(format!("{name}-{i}"));
                e["sessionless"] = json!(true);
                e["client"] = json!(name);
            } else {
                e["session"] = json!(name);
            }
            e
        })
        .collect()
}

fn list() -> Value {
    json!({"event": "list", "declared": 1, "names": ["Read"], "tokens": 10, "all_declared": 40})
}

fn search(query: &str, activated: &[&str]) -> Value {
    json!({"event": "search", "query": query, "names": [], "activated": activated,
        "matches": 0, "empty": activated.is_empty(), "status": "ok"})
}

/// A search by names alone, as a model loads a tool it knows the name of.
fn by_name(tool: &str) -> Value {
    json!({"event": "search", "query": "", "names": [tool], "activated": [tool],
        "matches": 0, "empty": false, "status": "ok"})
}

fn call(tool: &str) -> Value {
    json!({"event": "call", "tool": tool, "outcome": "allowed", "status": "ok",
        "cause": {"kind": "default"}})
}

fn refused(tool: &str) -> Value {
    json!({"event": "call", "tool": tool, "outcome": "not_found",
        "cause": {"kind": "hide", "rule": "Hide(svc__secret)"}})
}

/// A search that found nothing (or the wrong tool), then a load by name and
/// a call of the tool the model wanted.
fn taught(name: &str, minute: u32, query: &str, tool: &str) -> Vec<Value> {
    session(
        name,
        false,
        minute,
        vec![list(), search(query, &[]), by_name(tool), call(tool)],
    )
}

/// A search, a search by names alone, then a call of the named tool: the
/// call is a miss of the search with words, not of the load by name.
#[test]
fn a_load_by_name_is_paired_with_the_search_before_it() {
    let dir = scratch("by-name");
    let log = dir.join("a.jsonl");
    let events = session(
        "s1",
        false,
        0,
        vec![
            list(),
            search("jot memos down quickly", &["svc__calendar"]),
            by_name("svc__notes"),
            call("svc__notes"),
        ],
    );
    write_log(&log, &events);
    let out = ok(&["report", log.to_str().unwrap(), "--format", "json"]);
    let json: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        json["search_misses"],
        json!([{"query": "jot memos down quickly", "tool": "svc__notes", "missing_words": null}]),
        "{json}"
    );
}

/// A load of a tool the policy would not give, after a search that missed
/// it, is no miss: a hidden tool is not one the search should find.
#[test]
fn a_refused_load_or_call_is_no_miss() {
    let dir = scratch("refused");
    let log = dir.join("a.jsonl");
    let load = json!({"event": "load", "names": ["svc__secret"], "activated": [],
        "unavailable": ["svc__secret"], "status": "ok"});
    let events = session(
        "s1",
        false,
        0,
        vec![
            list(),
            search("open the vault", &[]),
            load,
            refused("svc__secret"),
        ],
    );
    write_log(&log, &events);
    let json: Value =
        serde_json::from_str(&ok(&["report", log.to_str().unwrap(), "--format", "json"])).unwrap();
    assert_eq!(json["search_misses"], json!([]), "{json}");
}

/// Logs of sessions that taught terms, and of some that must teach none.
fn logs(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    let mut write = |name: &str, events: Vec<Value>| {
        let path = dir.join(name);
        write_log(&path, &events);
        files.push(path.to_str().unwrap().to_string());
    };
    // Two sessions and one client's requests without a session ask for
    // notes alike (case, width and spacing apart).
    write(
        "one.jsonl",
        [
            taught("s1", 0, "jot memos down quickly", "svc__notes"),
            taught("s2", 10, "Jot  memos down QUICKLY", "svc__notes"),
        ]
        .concat(),
    );
    // The client's requests reached two processes: the search went to
    // one, the call to the other (read in the order they were sent).
    let mut requests = session(
        "claude-code",
        true,
        20,
        vec![
            list(),
            search("ｊｏｔ memos down quickly", &[]),
            call("svc__notes"),
        ],
    );
    let sent_elsewhere = requests.split_off(2);
    write(
        "two.jsonl",
        [
            requests,
            // Taught by one session only.
            taught("s4", 30, "book a slot", "svc__calendar"),
            // A tool the policy hides, allowed when the log was written.
            taught("s5", 40, "open the vault", "svc__secret"),
            taught("s6", 50, "open the vault", "svc__secret"),
            // A tool the registry lacks.
            taught("s7", 60, "summon the ghost", "svc__gone"),
            taught("s8", 70, "summon the ghost", "svc__gone"),
        ]
        .concat(),
    );
    write(
        "three.jsonl",
        [
            sent_elsewhere,
            // Refused calls teach nothing.
            session(
                "s9",
                false,
                80,
                vec![list(), search("unlock it", &[]), refused("svc__secret")],
            ),
            session(
                "s10",
                false,
                90,
                vec![list(), search("unlock it", &[]), refused("svc__secret")],
            ),
            // A declared tool needs no term.
            session(
                "s11",
                false,
                100,
                vec![list(), search("show the file", &[]), call("Read")],
            ),
            session(
                "s12",
                false,
                110,
                vec![list(), search("show the file", &[]), call("Read")],
            ),
            // A search by names alone is no query.
            session(
                "s13",
                false,
                120,
                vec![list(), by_name("svc__calendar"), call("svc__calendar")],
            ),
            session(
                "s14",
                false,
                130,
                vec![list(), by_name("svc__calendar"), call("svc__calendar")],
            ),
        ]
        .concat(),
    );
    files
}

fn learn(files: &[String], policy: &str, registry: &str, rest: &[&str]) -> Output {
    let mut args = vec!["learn"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["--policy", policy, "--registry", registry]);
    args.extend(rest);
    policy_cmd(&args)
}

#[test]
fn terms_are_the_queries_sessions_agree_on_for_a_deferred_tool() {
    let dir = scratch("learn");
    let (policy, registry) = setup(&dir);
    let files = logs(&dir);
    let out = dir.join("terms.toml");
    let run = learn(
        &files,
        &policy,
        &registry,
        &["--out", out.to_str().unwrap()],
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        text,
        "# written by `policy learn`, reviewed like any change of the policy\n\
         [svc__notes]\n\
         terms = [\n    \"jot memos down quickly\", # 3 sessions\n]\n",
    );
    // With one session enough, the calendar's query is a term too, and
    // still nothing for the hidden, the missing or the declared tool.
    let json = learn(
        &files,
        &policy,
        &registry,
        &[
            "--out",
            out.to_str().unwrap(),
            "--min-sessions",
            "1",
            "--format",
            "json",
        ],
    );
    assert!(
        json.status.success(),
        "{}",
        String::from_utf8_lossy(&json.stderr)
    );
    let json: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(
        json["terms"],
        json!([
            {"tool": "svc__calendar", "term": "book a slot", "sessions": 1, "new": true},
            {"tool": "svc__notes", "term": "jot memos down quickly", "sessions": 3, "new": false},
        ]),
        "{json}"
    );
    // `--format json` wrote nothing.
    assert_eq!(std::fs::read_to_string(&out).unwrap(), text);
    // Three sessions are not four.
    let strict = learn(
        &files,
        &policy,
        &registry,
        &["--min-sessions", "4", "--format", "json"],
    );
    let strict: Value = serde_json::from_slice(&strict.stdout).unwrap();
    assert_eq!(strict["terms"], json!([]), "{strict}");
}

/// The same logs given in another order write the same bytes.
#[test]
fn the_same_logs_in_any_order_write_the_same_file() {
    let dir = scratch("order");
    let (policy, registry) = setup(&dir);
    let files = logs(&dir);
    let mut texts = Vec::new();
    for order in [[0, 1, 2], [2, 1, 0], [1, 2, 0]] {
        let given: Vec<String> = order.iter().map(|&i| files[i].clone()).collect();
        let out = dir.join(format!("terms-{}.toml", texts.len()));
        let run = learn(
            &given,
            &policy,
            &registry,
            &["--out", out.to_str().unwrap(), "--min-sessions", "1"],
        );
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        texts.push(std::fs::read(&out).unwrap());
    }
    assert!(texts.windows(2).all(|w| w[0] == w[1]));
    assert!(String::from_utf8_lossy(&texts[0]).contains("book a slot"));
}

/// Merging keeps the file's own tools and terms, adds the new ones in
/// order, and raises a count the logs taught again.
#[test]
fn merging_keeps_what_the_file_had() {
    let dir = scratch("merge");
    let (policy, registry) = setup(&dir);
    let files = logs(&dir);
    let out = dir.join("terms.toml");
    std::fs::write(
        &out,
        "# kept by hand\n[svc__notes]\nterms = [\"zzz last\", \"jot memos down quickly\"] # 1 session\n\n[\"a tool\"]\nterms = [\"its own\"]\n",
    )
    .unwrap();
    let run = learn(
        &files,
        &policy,
        &registry,
        &["--out", out.to_str().unwrap()],
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        stdout.contains("0 new terms for 0 tools, 1 taught again"),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "# written by `policy learn`, reviewed like any change of the policy\n\
         [\"a tool\"]\n\
         terms = [\n    \"its own\",\n]\n\
         [svc__notes]\n\
         terms = [\n    \"jot memos down quickly\", # 3 sessions\n    \"zzz last\",\n]\n",
    );
}

/// A terms file that is not one is named with its line and column, and
/// left as it was.
#[test]
fn a_broken_terms_file_is_an_error_and_nothing_is_written() {
    let dir = scratch("broken");
    let (policy, registry) = setup(&dir);
    let files = logs(&dir);
    let out = dir.join("terms.toml");
    let broken = "[svc__notes]\nterms = [\"a\"]\nweight = 2\n";
    std::fs::write(&out, broken).unwrap();
    let run = learn(
        &files,
        &policy,
        &registry,
        &["--out", out.to_str().unwrap()],
    );
    assert_eq!(run.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("terms.toml:3:1: not a terms file"),
        "{stderr}"
    );
    assert!(stderr.contains("`weight`"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), broken);
    // No file to write and none the policy names: a usage error.
    let run = learn(&files, &policy, &registry, &[]);
    assert_eq!(run.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&run.stderr).contains("--out"));
}

/// A policy that names its terms file: `policy learn` writes there without
/// `--out` (creating it the first time), and the search then finds the
/// tool by the words that taught it, which it could not before.
#[test]
fn the_terms_file_a_policy_names_is_learnt_into_and_searched() {
    let dir = scratch("named");
    let (policy, registry) = setup(&dir);
    let files = logs(&dir);
    let query = "jot memos down quickly";
    let search = |policy: &str| {
        let out = ok(&[
            "search",
            query,
            "--policy",
            policy,
            "--registry",
            &registry,
            "--format",
            "json",
        ]);
        serde_json::from_str::<Value>(&out).unwrap()["activated"].clone()
    };
    assert_eq!(
        search(&policy),
        json!([]),
        "no word of the query is a tool's"
    );
    let text = std::fs::read_to_string(&policy).unwrap();
    std::fs::write(&policy, format!("terms = \"search-terms.toml\"\n{text}")).unwrap();
    let terms = dir.join("search-terms.toml");
    assert!(!terms.exists());
    let run = learn(&files, &policy, &registry, &[]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let written = std::fs::read_to_string(&terms).unwrap();
    assert!(written.contains("[svc__notes]"), "{written}");
    assert_eq!(search(&policy), json!(["svc__notes"]));
    let out = ok(&[
        "search",
        query,
        "--policy",
        &policy,
        "--registry",
        &registry,
        "--explain",
    ]);
    assert!(
        out.contains("learned term `jot memos down quickly`"),
        "{out}"
    );
}

/// A terms file the policy names that is not one: the policy does not
/// load, and the error gives where in the terms file.
#[test]
fn a_named_terms_file_that_is_not_one_stops_the_policy_with_its_position() {
    let dir = scratch("named-broken");
    let (policy, registry) = setup(&dir);
    let text = std::fs::read_to_string(&policy).unwrap();
    std::fs::write(&policy, format!("terms = \"t.toml\"\n{text}")).unwrap();
    std::fs::write(
        dir.join("t.toml"),
        "[svc__notes]\nterms = [\"a\"]\nweight = 2\n",
    )
    .unwrap();
    let out = policy_cmd(&["check", &policy, "--registry", &registry]);
    assert_eq!(out.status.code(), Some(1));
    let stderr =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("PL016"), "{stderr}");
    assert!(
        stderr.contains("the terms file `t.toml` is not a terms file: 3:1:"),
        "{stderr}"
    );
    // Not there at all: the same code, saying so.
    std::fs::remove_file(dir.join("t.toml")).unwrap();
    let out = policy_cmd(&["search", "x", "--policy", &policy, "--registry", &registry]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("PL016") && stderr.contains("cannot be read"),
        "{stderr}"
    );
}

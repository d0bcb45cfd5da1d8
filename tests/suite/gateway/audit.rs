//! `policy gateway --audit FILE` against the fixture server: forwarded
//! calls carry their server, time and `isError`; refusals their rule;
//! reloads are events; arguments and results never reach the log.

use serde_json::{Value, json};

use crate::gateway::support::*;

const POLICY: &str = "\
guard fx__echo
Hide(fx__secret)
Defer(*)
";

fn events(log: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

#[test]
#[cfg(unix)]
fn the_gateway_writes_calls_refusals_and_reloads_but_no_argument_or_result() {
    let dir = temp_dir("audit");
    let (p, s) = files(
        &dir,
        POLICY,
        &[("fx", fixture("echo,secret,slow,fail", &[]))],
    );
    let log = dir.join("audit.jsonl");
    let log_arg = log.to_str().unwrap().to_string();
    let mut g = Gateway::connect(&file_args(&p, &s, &["--audit", &log_arg]), "2025-11-25");
    g.list();
    let r = g.call("fx__echo", json!({"text": "ARGUMENT-TEXT"}));
    assert!(text(&r).contains("ARGUMENT-TEXT"), "{r}");
    let r = g.call("tool_search", json!({"query": "", "names": ["fx__fail"]}));
    assert!(!is_error(&r), "{r}");
    let r = g.call(
        "call_tool",
        json!({"name": "fx__fail", "arguments": {"x": "OTHER-ARGUMENT"}}),
    );
    assert!(is_error(&r), "{r}");
    let r = g.call("fx__secret", json!({}));
    assert!(is_error(&r), "{r}");
    std::fs::write(&p, "Defer(\n").unwrap();
    g.signal("HUP");
    assert!(
        g.wait_stderr("keeping the last good policy", 1),
        "{}",
        g.stderr()
    );
    assert_eq!(g.finish(), Some(0), "{}", g.stderr());

    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        !text.contains("ARGUMENT") && !text.contains("echo: "),
        "{text}"
    );
    let events = events(&log);
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["list", "call", "search", "call", "call", "reload"],
        "{text}"
    );
    let echo = &events[1];
    assert_eq!(
        (echo["tool"].as_str(), echo["outcome"].as_str()),
        (Some("fx__echo"), Some("allowed"))
    );
    assert_eq!(
        (echo["server"].as_str(), echo["is_error"].as_bool()),
        (Some("fx"), Some(false))
    );
    assert!(echo["ms"].as_f64().is_some_and(|ms| ms >= 0.0), "{echo}");
    assert_eq!(echo["cause"]["kind"], "guard");
    let fail = &events[3];
    assert_eq!(
        (fail["tool"].as_str(), fail["is_error"].as_bool()),
        (Some("fx__fail"), Some(true))
    );
    assert_eq!(fail["status"], "error");
    let secret = &events[4];
    assert_eq!(secret["outcome"], "not_found");
    assert_eq!(secret["cause"]["rule"], "Hide(fx__secret)");
    assert!(secret.get("server").is_none());
    let reload = &events[5];
    assert_eq!(
        (reload["what"].as_str(), reload["ok"].as_bool()),
        (Some("policy"), Some(false))
    );
    assert_eq!(reload["codes"], json!(["PL001"]));
    assert!(reload.get("session").is_none());
    // One session, named, in the command line's context.
    let session = &events[0]["session"];
    assert!(events[..5].iter().all(|e| &e["session"] == session));

    let out = std::process::Command::new(policy_bin())
        .args(["report", &log_arg])
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains("\n  fx: 2 calls, 1 errors, p50 "),
        "{report}"
    );
    assert!(report.contains("1 reloads, 1 failed"), "{report}");
    assert!(
        report.contains("  1× hide `Hide(fx__secret)` at "),
        "{report}"
    );
}

#[test]
fn a_gateway_whose_log_cannot_be_opened_serves_on() {
    let dir = temp_dir("audit-unopenable");
    let (p, s) = files(&dir, POLICY, &[("fx", fixture("echo", &[]))]);
    let log = dir.join("missing-folder").join("audit.jsonl");
    let log = log.to_str().unwrap();
    let mut g = Gateway::connect(&file_args(&p, &s, &["--audit", log]), "2025-11-25");
    assert_eq!(g.list(), ["fx__echo"]);
    assert!(
        g.stderr().contains("warning: cannot open the audit log `"),
        "{}",
        g.stderr()
    );
    assert_eq!(g.finish(), Some(0));
}

/// A tool whose definition changes after start is a `drift` event with the
/// fields that changed, as standard error names them.
#[test]
#[cfg(unix)]
fn a_tool_that_changes_after_start_is_a_drift_event() {
    let dir = temp_dir("audit-drift");
    let (p, s) = files(&dir, "NoDefer(*)\n", &[("fx", fixture("echo,mutate", &[]))]);
    let log = dir.join("audit.jsonl");
    let log_arg = log.to_str().unwrap().to_string();
    let mut g = Gateway::connect(&file_args(&p, &s, &["--audit", &log_arg]), "2025-11-25");
    assert_eq!(text(&g.call("fx__mutate", json!({}))), "mutate: changed");
    assert!(g.wait_stderr("changed after start", 1), "{}", g.stderr());
    assert_eq!(g.finish(), Some(0), "{}", g.stderr());
    let drift: Vec<Value> = events(&log)
        .into_iter()
        .filter(|e| e["event"] == "drift")
        .collect();
    assert_eq!(drift.len(), 1, "{drift:?}");
    assert_eq!(drift[0]["tool"], "fx__mutate");
    assert_eq!(
        drift[0]["fields"],
        json!(["description", "input schema", "annotations"])
    );
    assert_eq!(drift[0]["locked"], false);
}

/// `mkfifo PATH`, or false where there is none.
#[cfg(unix)]
fn mkfifo(path: &std::path::Path) -> bool {
    std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .is_ok_and(|s| s.success())
}

/// `--audit` naming a FIFO that no process reads: the log is opened
/// without waiting for a reader, and the gateway says why it has none and
/// serves on.
#[test]
#[cfg(unix)]
fn a_fifo_nobody_reads_as_the_log_is_a_warning_not_a_wait() {
    let dir = temp_dir("audit-fifo");
    let (p, s) = files(&dir, POLICY, &[("fx", fixture("echo", &[]))]);
    let fifo = dir.join("audit.fifo");
    assert!(mkfifo(&fifo));
    let fifo = fifo.to_str().unwrap();
    let mut g = Gateway::connect(&file_args(&p, &s, &["--audit", fifo]), "2025-11-25");
    assert_eq!(g.list(), ["fx__echo"], "{}", g.stderr());
    assert!(
        g.stderr().contains("warning: cannot open the audit log `")
            && g.stderr()
                .contains("audit.fifo`: it is a FIFO that no process reads"),
        "{}",
        g.stderr()
    );
    assert_eq!(g.finish(), Some(0), "{}", g.stderr());
}

/// `policy replay --audit FIFO` with no reader ends (within the deadline)
/// with the same warning.
#[test]
#[cfg(unix)]
fn replay_with_a_fifo_nobody_reads_as_the_log_ends() {
    let dir = temp_dir("audit-fifo-replay");
    let fifo = dir.join("audit.fifo");
    assert!(mkfifo(&fifo));
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let (code, out, err) = policy_to_end(&[
        "replay",
        root.join("tests/data/audit/tuning.json").to_str().unwrap(),
        "--policy",
        root.join("policies/pi-desktop.policy").to_str().unwrap(),
        "--registry",
        root.join("examples/registries/pi-desktop.json")
            .to_str()
            .unwrap(),
        "--audit",
        fifo.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        err.contains("audit.fifo`: it is a FIFO that no process reads"),
        "{err}"
    );
}

/// Lines of `log` whose event is `event`; none when there is no file.
fn count(log: &std::path::Path, event: &str) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| serde_json::from_str::<Value>(l).is_ok_and(|v| v["event"] == event))
        .count()
}

/// logrotate's default: the log is moved aside, then the gateway gets
/// SIGHUP. It opens the log's path anew, and the events after go there, not
/// into the moved file.
#[test]
#[cfg(unix)]
fn sighup_reopens_the_log_at_its_path() {
    let dir = temp_dir("audit-rotate");
    let (p, s) = files(&dir, POLICY, &[("fx", fixture("echo", &[]))]);
    let log = dir.join("audit.jsonl");
    let moved = dir.join("audit.jsonl.1");
    let log_arg = log.to_str().unwrap().to_string();
    let mut g = Gateway::connect(&file_args(&p, &s, &["--audit", &log_arg]), "2025-11-25");
    g.list();
    let until = std::time::Instant::now() + DEADLINE;
    while count(&log, "list") == 0 && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(count(&log, "list"), 1, "{}", g.stderr());
    std::fs::rename(&log, &moved).unwrap();
    g.signal("HUP");
    assert!(g.wait_stderr("note: reloaded", 1), "{}", g.stderr());
    let until = std::time::Instant::now() + DEADLINE;
    while count(&log, "list") == 0 && std::time::Instant::now() < until {
        g.list();
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        count(&log, "list") >= 1,
        "nothing at the log's path after SIGHUP\n{}",
        g.stderr()
    );
    let in_moved = count(&moved, "list");
    g.list();
    assert_eq!(g.finish(), Some(0), "{}", g.stderr());
    assert_eq!(
        count(&moved, "list"),
        in_moved,
        "the moved file still grows"
    );
}

/// Requests without a session (2026-07-28) each have a session of their
/// own in the engine; their events say so, and name the client as it
/// introduces itself, so that `policy report` reads one client's requests
/// as its chat: the search that missed, the deferred tool it then reached.
#[test]
#[cfg(unix)]
fn requests_without_a_session_are_marked_and_read_as_their_client_s_chat() {
    use crate::gateway::listen::{Listening, stateless_call, stateless_list};

    let dir = temp_dir("audit-sessionless");
    let log = dir.join("audit.jsonl");
    let log_arg = log.to_str().unwrap().to_string();
    let mut l = Listening::start(POLICY, "echo,secret,pid", &[], &["--audit", &log_arg]);
    assert_eq!(
        stateless_list(&l.addr, &[]),
        ["fx__echo", "tool_search", "call_tool"]
    );
    let found = stateless_call(&l.addr, &[], "tool_search", json!({"query": "echo"}));
    assert!(!is_error(&found), "{found}");
    let pid = stateless_call(&l.addr, &[], "call_tool", json!({"name": "fx__pid"}));
    assert!(!is_error(&pid), "{pid}");
    l.gw.signal("TERM");
    assert_eq!(l.gw.wait_exit(), Some(0), "{}", l.gw.stderr());

    let events = events(&log);
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["list", "search", "call"], "{events:?}");
    for e in &events {
        assert_eq!(e["sessionless"], true, "{e}");
        assert_eq!(e["client"], "suite", "{e}");
    }
    // Each request is named alone.
    assert_ne!(events[0]["session"], events[2]["session"]);

    let out = std::process::Command::new(policy_bin())
        .args(["report", &log_arg, "--format", "json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(report["sessions"], 1, "{report}");
    assert_eq!(report["search_misses"][0]["query"], "echo", "{report}");
    assert_eq!(report["search_misses"][0]["tool"], "fx__pid", "{report}");
    assert_eq!(
        report["load_in_most_sessions"][0]["line"], "NoDefer(fx__pid)",
        "{report}"
    );
    drop(dir);
}

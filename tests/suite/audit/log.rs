//! The audit log: the events a session hands its subscriber, the JSON Lines
//! writer, `replay --audit` and `policy report`.

use std::sync::{Arc, Mutex};

use toolpolicy::audit::{AuditHook, Event, EventKind, Forwarded, Outcome};
use toolpolicy::runtime::{Engine, ResultStatus};
use toolpolicy::{CauseKind, Context, Policy, Registry, SkillList};

const POLICY: &str = "search ToolSearch\nDefer(*)\nNoDefer(Read)\nHide(Secret)\n";
const REGISTRY: &str = r#"[
    {"name": "Read", "description": "Read a file."},
    {"name": "ToolSearch", "description": "Find tools."},
    {"name": "WebFetch", "description": "Fetch a web page. Returns markdown."},
    {"name": "Secret", "description": "Hidden."}
]"#;

fn engine() -> Engine {
    Engine::new(
        Policy::parse("p.policy", POLICY).unwrap(),
        Registry::from_json(REGISTRY).unwrap(),
        SkillList::default(),
    )
}

fn collector() -> (AuditHook, Arc<Mutex<Vec<Event>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let into = Arc::clone(&seen);
    let hook: AuditHook = Arc::new(move |e: &Event| into.lock().unwrap().push(e.clone()));
    (hook, seen)
}

#[test]
fn a_session_tells_its_subscriber_every_operation() {
    let engine = engine();
    let (hook, seen) = collector();
    engine.set_audit(Some(hook));
    let mut s = engine.session(Context::default()).unwrap();
    s.plan(&engine).unwrap();
    s.search(&engine, "fetch a web page", &[] as &[&str])
        .unwrap();
    s.load(&engine, &["Secret", "Nope"]).unwrap();
    s.call(&engine, "Secret").unwrap();
    s.call(&engine, "WebFetch").unwrap();
    s.record_forwarded(
        &engine,
        "WebFetch",
        ResultStatus::Ok,
        Some(Forwarded {
            server: Some("web".into()),
            ms: Some(12.5),
            is_error: Some(false),
        }),
    )
    .unwrap();
    s.prompt(&engine).unwrap();
    s.compact();
    s.restart(&engine).unwrap();
    s.set_mode(&engine, None).unwrap();

    let events = seen.lock().unwrap();
    let names: Vec<&str> = events.iter().map(Event::name).collect();
    assert_eq!(
        names,
        [
            "list", "search", "load", "call", "call", "prompt", "compact", "restart", "mode"
        ]
    );
    let session = events[0].session.clone().unwrap();
    assert!(
        events
            .iter()
            .all(|e| e.session.as_deref() == Some(&*session))
    );
    assert!(
        events
            .iter()
            .all(|e| e.version == toolpolicy::audit::VERSION)
    );
    let EventKind::List {
        declared,
        names,
        tokens,
        all_declared,
    } = &events[0].kind
    else {
        panic!("{:?}", events[0]);
    };
    assert_eq!(
        (*declared, names.as_slice()),
        (2, ["Read".to_string()].as_slice())
    );
    assert!(tokens < all_declared, "{tokens} {all_declared}");
    let EventKind::Search {
        query,
        activated,
        empty,
        ..
    } = &events[1].kind
    else {
        panic!("{:?}", events[1]);
    };
    assert_eq!(query.as_deref(), Some("fetch a web page"));
    assert_eq!(activated, &["WebFetch"]);
    assert!(!empty);
    let EventKind::Load { unavailable, .. } = &events[2].kind else {
        panic!("{:?}", events[2]);
    };
    assert_eq!(unavailable, &["Secret", "Nope"]);
    // A refused call is written at once, with the rule that hid the tool.
    let EventKind::Call {
        tool,
        outcome,
        cause,
        status,
        ..
    } = &events[3].kind
    else {
        panic!("{:?}", events[3]);
    };
    assert_eq!(
        (tool.as_str(), *outcome, *status),
        ("Secret", Outcome::NotFound, None)
    );
    let cause = cause.as_ref().unwrap();
    assert_eq!(cause.kind, CauseKind::Hide);
    assert_eq!(cause.rule.as_deref(), Some("Hide(Secret)"));
    assert_eq!(
        (cause.file.as_deref(), cause.line),
        (Some("p.policy"), Some(4))
    );
    // An allowed one when its result is known, with what the front end learnt.
    let EventKind::Call {
        tool,
        outcome,
        status,
        server,
        ms,
        is_error,
        ..
    } = &events[4].kind
    else {
        panic!("{:?}", events[4]);
    };
    assert_eq!((tool.as_str(), *outcome), ("WebFetch", Outcome::Allowed));
    assert_eq!(*status, Some(ResultStatus::Ok));
    assert_eq!(
        (server.as_deref(), *ms, *is_error),
        (Some("web"), Some(12.5), Some(false))
    );
}

#[test]
fn an_allowed_call_without_a_result_is_written_at_the_next_prompt() {
    let engine = engine();
    let (hook, seen) = collector();
    engine.set_audit(Some(hook));
    let mut s = engine.session(Context::default()).unwrap();
    s.call(&engine, "Read").unwrap();
    assert!(seen.lock().unwrap().is_empty());
    s.prompt(&engine).unwrap();
    let events = seen.lock().unwrap();
    let EventKind::Call {
        tool,
        status,
        cause,
        ..
    } = &events[0].kind
    else {
        panic!("{:?}", events[0]);
    };
    assert_eq!((tool.as_str(), *status), ("Read", None));
    assert_eq!(cause.as_ref().unwrap().kind, CauseKind::NoDefer);
    assert_eq!(events[1].name(), "prompt");
}

#[test]
fn sessions_have_names_of_their_own_and_a_caller_when_told() {
    let engine = engine();
    let (hook, seen) = collector();
    engine.set_audit(Some(Arc::clone(&hook)));
    let a = engine.session(Context::default()).unwrap();
    let mut b = engine.session(Context::default()).unwrap();
    assert_ne!(a.audit_session(), b.audit_session());
    b.set_audit(Some(hook), "chat-7");
    b.set_audit_caller(Some("alice"));
    b.plan(&engine).unwrap();
    let events = seen.lock().unwrap();
    assert_eq!(events[0].session.as_deref(), Some("chat-7"));
    assert_eq!(events[0].caller.as_deref(), Some("alice"));
    // Another engine of the same process (a host that builds a new one on
    // each reload of its settings) names its sessions apart.
    let other = self::engine();
    other.set_audit(Some(collector().0));
    let c = other.session(Context::default()).unwrap();
    assert_ne!(c.audit_session(), a.audit_session());
}

#[test]
fn reloads_are_events_with_the_codes_of_a_failure() {
    let engine = engine();
    let (hook, seen) = collector();
    engine.set_audit(Some(hook));
    engine.reload_policy("p.policy", "Defer(*)\n").unwrap();
    engine.reload_policy("p.policy", "Defer(\n").unwrap_err();
    let events = seen.lock().unwrap();
    let EventKind::Reload { what, ok, codes } = &events[0].kind else {
        panic!()
    };
    assert_eq!(
        (what.as_str(), *ok, codes.is_empty()),
        ("policy", true, true)
    );
    let EventKind::Reload { ok, codes, .. } = &events[1].kind else {
        panic!()
    };
    assert!(!ok);
    assert_eq!(codes, &["PL001"]);
    assert!(events.iter().all(|e| e.session.is_none()));
}

#[test]
fn a_session_without_a_subscriber_builds_no_event() {
    // Nothing to observe but that it works and nothing is called.
    let engine = engine();
    let mut s = engine.session(Context::default()).unwrap();
    assert_eq!(s.audit_session(), None);
    s.call(&engine, "Read").unwrap();
    s.record_result(&engine, "Read", ResultStatus::Ok).unwrap();
    assert_eq!(s.evidence(), ["Read"]);
}

// ---------------------------------------------------------------------------
// `replay --audit` and `policy report`

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn policy(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_policy"))
        .current_dir(root())
        .args(args)
        .output()
        .expect("the policy binary runs")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolpolicy-audit-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const PI_POLICY: &str = "policies/pi-desktop.policy";
const PI_REGISTRY: &str = "examples/registries/pi-desktop.json";

/// `tests/data/audit/tuning.json` replayed `times` times into `log`.
fn replay_tuning(log: &Path, times: usize, extra: &[&str]) {
    for _ in 0..times {
        let log = log.to_str().unwrap();
        let mut args = vec![
            "replay",
            "tests/data/audit/tuning.json",
            "--policy",
            PI_POLICY,
            "--registry",
            PI_REGISTRY,
            "--audit",
            log,
        ];
        args.extend(extra);
        let out = policy(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn replay_writes_one_event_per_line_with_its_version() {
    let dir = scratch("lines");
    let log = dir.join("audit.jsonl");
    replay_tuning(&log, 1, &[]);
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    // 8 steps, each followed by its plan, and two prompts among them.
    assert_eq!(lines.len(), 16, "{text}");
    for l in &lines {
        assert_eq!(l["version"], 1);
        assert!(l["ts"].as_str().unwrap().ends_with('Z'));
        assert_eq!(l["context"]["mode"], "agent");
        assert!(l.get("arguments").is_none() && l.get("result").is_none());
    }
    let events: Vec<&str> = lines.iter().map(|l| l["event"].as_str().unwrap()).collect();
    assert_eq!(&events[..4], ["prompt", "list", "search", "list"]);
    assert_eq!(lines[2]["query"], "play some jazz on spotify");
    assert_eq!(lines[2]["empty"], true);
    // Appended: a second run adds to the file.
    replay_tuning(&log, 1, &[]);
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 32);
}

#[test]
fn audit_no_queries_leaves_the_query_out() {
    let dir = scratch("no-queries");
    let log = dir.join("audit.jsonl");
    replay_tuning(&log, 1, &["--audit-no-queries"]);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("\"event\":\"search\""), "{text}");
    assert!(
        !text.contains("\"query\"") && !text.contains("jazz"),
        "{text}"
    );
    let report = stdout(&policy(&["report", log.to_str().unwrap()]));
    assert!(report.contains("1× `(query not logged)`"), "{report}");
}

#[test]
fn a_log_that_cannot_be_opened_is_a_warning() {
    let dir = scratch("unopenable");
    let log = dir.join("no-such-folder").join("audit.jsonl");
    let out = policy(&[
        "replay",
        "tests/data/audit/tuning.json",
        "--policy",
        PI_POLICY,
        "--registry",
        PI_REGISTRY,
        "--audit",
        log.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("warning: cannot open the audit log `"),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("8 steps replayed"));
}

const TUNING_REPORT: &str = "\
32 events, 2 sessions, 16 turns listed: 17,120 tokens declared, 29,232 had every tool been declared (41% saved)

searches that activated nothing:
  2× `play some jazz on spotify`

search misses (a tool called or loaded that the search before did not return):
  `fetch a web page` then `AskUser`: its name and description lack fetch, web, page

deferred tools loaded in most sessions (declare them):
  AskUser (2 of 2 sessions loaded it): NoDefer(AskUser)
  Diagnostics (2 of 2 sessions loaded it): NoDefer(Diagnostics)
  WebFetch (2 of 2 sessions loaded it): NoDefer(WebFetch)

declared tools never called (defer them):
  Bash (2 of 2 sessions declared it): `Defer(Bash)`  (not suggested: a rule of the policy would overrule it)
  Edit (2 of 2 sessions declared it): `Defer(Edit)`  (not suggested: a rule of the policy would overrule it)
  Write (2 of 2 sessions declared it): `Defer(Write)`  (not suggested: a rule of the policy would overrule it)

refusals by cause:
  2× defer `Defer(*)` at policies/pi-desktop.policy:19: Diagnostics

call latency by server: none
";

#[test]
fn report_of_a_replayed_scenario_line_by_line() {
    let dir = scratch("golden");
    let log = dir.join("audit.jsonl");
    replay_tuning(&log, 2, &[]);
    let log = log.to_str().unwrap();
    let args = [
        "report",
        log,
        "--policy",
        PI_POLICY,
        "--registry",
        PI_REGISTRY,
    ];
    assert_eq!(stdout(&policy(&args)), TUNING_REPORT);

    let json: serde_json::Value = serde_json::from_str(&stdout(&policy(
        &[&args[..], &["--format", "json"]].concat(),
    )))
    .unwrap();
    assert_eq!(json["sessions"], 2);
    assert_eq!(
        json["empty_searches"],
        serde_json::json!([["play some jazz on spotify", 2]])
    );
    assert_eq!(json["search_misses"][0]["tool"], "AskUser");
    assert_eq!(
        json["search_misses"][0]["missing_words"],
        serde_json::json!(["fetch", "web", "page"])
    );
    assert_eq!(json["never_called"][0]["checked"], false);
    assert_eq!(json["load_in_most_sessions"][0]["checked"], true);
    assert_eq!(json["refusals"][0]["rule"], "Defer(*)");
    assert_eq!(json["refusals"][0]["at"], "policies/pi-desktop.policy:19");

    // Without the policy, lines are suggested unchecked; without the
    // registry, misses name no words.
    let bare = stdout(&policy(&["report", log]));
    assert!(
        bare.contains("  Bash (2 of 2 sessions declared it): Defer(Bash)\n"),
        "{bare}"
    );
    assert!(
        bare.contains("  `fetch a web page` then `AskUser`\n"),
        "{bare}"
    );
    // Nothing since a time after every event.
    let later = stdout(&policy(&["report", log, "--since", "9999"]));
    assert!(later.starts_with("0 events, 0 sessions"), "{later}");
}

#[test]
fn report_reads_several_logs_in_any_order_and_skips_bad_lines() {
    let dir = scratch("several");
    let (a, b) = (dir.join("a.jsonl"), dir.join("b.jsonl"));
    replay_tuning(&a, 1, &[]);
    let out = policy(&[
        "replay",
        "examples/gateway/review-session.json",
        "--audit",
        b.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut text = std::fs::read_to_string(&b).unwrap();
    text.insert_str(0, "{\"truncated\n");
    text.push_str("not an event\n");
    std::fs::write(&b, text).unwrap();
    let report = stdout(&policy(&[
        "report",
        b.to_str().unwrap(),
        a.to_str().unwrap(),
    ]));
    assert!(report.starts_with("26 events, 2 sessions"), "{report}");
    assert!(
        report.contains(
            "  1× hide `Hide(memory__create*, memory__add*, memory__delete*)` at \
             examples/gateway/modes.policy:17: memory__create_entities\n"
        ),
        "{report}"
    );
    let b = b.display().to_string();
    assert!(
        report.contains("warning: 2 lines are not events and were skipped:"),
        "{report}"
    );
    assert!(report.contains(&format!("  {b}:1: ")), "{report}");
    assert!(report.contains(&format!("  {b}:12: ")), "{report}");
}

// ---------------------------------------------------------------------------
// The writer under load: a full queue, several processes on one file

use std::time::{Duration, Instant};
use toolpolicy::audit::writer::{AuditLog, Options};

/// A `search` event numbered `n`, as a session makes one.
fn numbered(n: usize) -> Event {
    Event {
        version: toolpolicy::audit::VERSION,
        session: Some("s-1".into()),
        caller: None,
        client: None,
        sessionless: false,
        context: Some(Default::default()),
        kind: EventKind::Search {
            query: Some(format!("query number {n}")),
            names: Vec::new(),
            activated: Vec::new(),
            already_active: Vec::new(),
            matches: 0,
            matched: Vec::new(),
            empty: true,
            status: ResultStatus::Ok,
        },
    }
}

/// A log whose disk stops: the file is a FIFO nobody reads until told, so
/// the writer thread blocks in `write` once the pipe is full. Events past
/// the queue are dropped and counted, recording never waits, and once the
/// reader drains the pipe the count is in the log as a `dropped` event.
#[cfg(unix)]
#[test]
fn a_full_queue_drops_and_counts_and_never_blocks() {
    let dir = scratch("full-queue");
    let fifo = dir.join("audit.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("skipped: mkfifo is not available");
        return;
    }
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut file = std::fs::File::open(&fifo).unwrap();
            // Nothing is read until the events are all recorded (or 30 s).
            let _ = wait.recv_timeout(Duration::from_secs(30));
            let mut text = String::new();
            std::io::Read::read_to_string(&mut file, &mut text).unwrap();
            text
        })
    };
    let options = Options {
        queries: true,
        capacity: 16,
    };
    // The log is opened without waiting for a reader: until the reader's
    // thread is inside its `open`, there is none, and the open says so.
    let until = Instant::now() + Duration::from_secs(20);
    let log = loop {
        match AuditLog::open(&fifo, options) {
            Ok(log) => break log,
            Err(e) if Instant::now() < until => {
                assert!(e.to_string().contains("no process reads"), "{e}");
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("the reader never came: {e}"),
        }
    };
    const EVENTS: usize = 20_000;
    let started = Instant::now();
    for n in 0..EVENTS {
        log.record(&numbered(n));
    }
    let took = started.elapsed();
    let dropped = log.dropped();
    // The pipe holds 64 KiB and the writer one batch of as much: most of
    // 20,000 lines of ~250 bytes cannot have been written.
    assert!(dropped > EVENTS as u64 / 2, "only {dropped} dropped");
    // Serving was not held up: recording took no longer than serializing.
    assert!(took < Duration::from_secs(10), "recording took {took:?}");
    go.send(()).unwrap();
    log.flush(Duration::from_secs(20));
    drop(log);
    let text = reader.join().unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a whole line: {l}: {e}")))
        .collect();
    let written: Vec<u64> = lines
        .iter()
        .filter(|l| l["event"] == "search")
        .map(|l| {
            let q = l["query"].as_str().unwrap();
            q.strip_prefix("query number ").unwrap().parse().unwrap()
        })
        .collect();
    let counted: u64 = lines
        .iter()
        .filter(|l| l["event"] == "dropped")
        .map(|l| l["count"].as_u64().unwrap())
        .sum();
    assert!(counted > 0, "no `dropped` event in the log");
    assert_eq!(counted, dropped, "the log counts every dropped event");
    assert_eq!(written.len() as u64 + counted, EVENTS as u64);
    // What got through is in the order it was recorded.
    assert!(written.windows(2).all(|w| w[0] < w[1]));
}

/// A log on a disk that fills (`/dev/full`, through a link at the log's
/// path) and then has room again (the link replaced by a file, reopened as
/// SIGHUP reopens it): each turn is said once, not once per event, and every
/// event that could not be written is counted.
#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_is_said_once_each_way_and_its_lost_events_counted() {
    let dir = scratch("full-disk");
    let path = dir.join("audit.jsonl");
    std::os::unix::fs::symlink("/dev/full", &path).unwrap();
    let said: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = Arc::clone(&said);
    let log = AuditLog::open_with(
        &path,
        Options::default(),
        Arc::new(move |w: String| sink.lock().unwrap().push(w)),
    )
    .unwrap();
    for n in 0..30 {
        log.record(&numbered(n));
        if n % 10 == 9 {
            log.flush(Duration::from_secs(10));
        }
    }
    assert_eq!(log.write_failures(), 30);
    let warnings = said.lock().unwrap().clone();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("warning: cannot write the audit log `")
            && warnings[0].contains("audit.jsonl`: no space left on device"),
        "{warnings:?}"
    );
    std::fs::remove_file(&path).unwrap();
    log.reopen();
    for n in 30..35 {
        log.record(&numbered(n));
    }
    log.flush(Duration::from_secs(10));
    let warnings = said.lock().unwrap().clone();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[1].starts_with("note: the audit log `")
            && warnings[1].ends_with("is written again; 30 events were lost"),
        "{warnings:?}"
    );
    assert_eq!(log.write_failures(), 30);
    let text = std::fs::read_to_string(&path).unwrap();
    let written = text.lines().filter(|l| l.contains("\"search\"")).count();
    assert_eq!(written, 5, "{text}");
}

/// A log moved aside and reopened: what is recorded after goes to a new
/// file at the path; a reopen that fails keeps the open file and says why.
#[cfg(unix)]
#[test]
fn a_reopened_log_writes_at_its_path_and_a_failed_reopen_keeps_the_old_file() {
    let dir = scratch("reopen");
    let path = dir.join("audit.jsonl");
    let moved = dir.join("audit.jsonl.1");
    let said: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = Arc::clone(&said);
    let log = AuditLog::open_with(
        &path,
        Options::default(),
        Arc::new(move |w: String| sink.lock().unwrap().push(w)),
    )
    .unwrap();
    log.record(&numbered(0));
    log.flush(Duration::from_secs(10));
    std::fs::rename(&path, &moved).unwrap();
    log.reopen();
    log.record(&numbered(1));
    log.flush(Duration::from_secs(10));
    let lines = |p: &Path| {
        std::fs::read_to_string(p)
            .unwrap_or_default()
            .lines()
            .count()
    };
    assert_eq!((lines(&moved), lines(&path)), (1, 1));
    // The path becomes a folder: the reopen fails, and the file open stays.
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    log.reopen();
    log.record(&numbered(2));
    log.flush(Duration::from_secs(10));
    let warnings = said.lock().unwrap().clone();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("warning: cannot reopen the audit log `")
            && warnings[0].ends_with("; writing on to the file already open"),
        "{warnings:?}"
    );
    assert_eq!(log.write_failures(), 0);
}

/// Four `policy replay --audit` processes appending to one file at once:
/// every line is whole (no two interleaved), and each process's events are
/// all there, in order.
#[test]
fn several_processes_append_whole_lines_to_one_file() {
    let dir = scratch("processes");
    let log = dir.join("audit.jsonl");
    const STEPS: usize = 1500;
    const PROCESSES: usize = 4;
    let steps: Vec<serde_json::Value> = (0..STEPS)
        .map(|n| serde_json::json!({"search": {"query": format!("fetch web page number {n}")}}))
        .collect();
    let scenario = dir.join("many.json");
    std::fs::write(
        &scenario,
        serde_json::json!({"mode": "agent", "steps": steps}).to_string(),
    )
    .unwrap();
    let children: Vec<_> = (0..PROCESSES)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_policy"))
                .current_dir(root())
                .args(["replay", scenario.to_str().unwrap(), "--policy", PI_POLICY])
                .args(["--registry", PI_REGISTRY, "--audit", log.to_str().unwrap()])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let mut by_session: std::collections::BTreeMap<String, Vec<usize>> = Default::default();
    for line in text.lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not a whole line: {line}: {e}"));
        if v["event"] == "search" {
            let q = v["query"].as_str().unwrap();
            let n = q
                .strip_prefix("fetch web page number ")
                .unwrap()
                .parse()
                .unwrap();
            by_session
                .entry(v["session"].as_str().unwrap().to_string())
                .or_default()
                .push(n);
        }
        assert_ne!(v["event"], "dropped", "events were dropped: {line}");
    }
    assert_eq!(by_session.len(), PROCESSES, "{:?}", by_session.keys());
    for (session, ns) in &by_session {
        assert_eq!(*ns, (0..STEPS).collect::<Vec<_>>(), "{session}");
    }
    // Several batches of each process went in, so their writes did meet.
    assert!(text.len() > PROCESSES * 64 * 1024, "{} bytes", text.len());
}

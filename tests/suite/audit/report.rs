//! `policy report` on logs written by hand: requests without a session read
//! as the chats they were, lines it suggests that the policy can apply and
//! that change only their own tool, and lines too long to be events.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolpolicy-report-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Events as a JSON Lines audit log.
pub fn write_log(path: &Path, events: &[Value]) {
    let text: String = events.iter().map(|e| format!("{e}\n")).collect();
    std::fs::write(path, text).unwrap();
}

/// `policy report` with `args`, its standard output (it must succeed).
fn report(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_policy"))
        .arg("report")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn report_json(args: &[&str]) -> Value {
    serde_json::from_str(&report(&[args, &["--format", "json"]].concat())).unwrap()
}

/// The time of minute `m` of a day, as the log writes it.
fn at(m: u32) -> String {
    format!("2026-12-01T{:02}:{:02}:00.000Z", m / 60, m % 60)
}

fn ctx() -> Value {
    json!({"mode": "agent", "bot": null, "flags": []})
}

/// One chat: a list that declares `Read`, a search for a web page that
/// returns nothing, then `WebFetch` used. In a session (`session` names
/// it) the deferred tool is refused first and declared from the next step;
/// without one (`session` is `None`) each step is a request of its own,
/// named alone, and the call reaches the tool at once.
fn chat(session: Option<&str>, n: usize, minute: u32) -> Vec<Value> {
    let mut request = 0;
    let mut event = |e: Value| {
        request += 1;
        let mut e = e;
        e["ts"] = json!(at(minute));
        e["version"] = json!(1);
        e["caller"] = json!("alice");
        e["context"] = ctx();
        match session {
            Some(s) => e["session"] = json!(s),
            None => {
                e["session"] = json!(format!("r{n}-{request}"));
                e["sessionless"] = json!(true);
                e["client"] = json!("claude-code");
            }
        }
        e
    };
    let list = json!({"event": "list", "declared": 1, "names": ["Read"], "tokens": 100, "all_declared": 300});
    let search = json!({"event": "search", "query": "fetch a web page", "names": [], "activated": [],
        "matches": 0, "empty": true, "status": "ok"});
    let allowed = json!({"event": "call", "tool": "WebFetch", "outcome": "allowed", "status": "ok",
        "cause": {"kind": "defer", "rule": "Defer(*)"}});
    let mut out = vec![event(list.clone()), event(search)];
    if session.is_some() {
        out.push(event(
            json!({"event": "call", "tool": "WebFetch", "outcome": "not_found",
            "cause": {"kind": "defer", "rule": "Defer(*)"}, "declared_next_step": true}),
        ));
    }
    out.push(event(allowed));
    out
}

/// Five chats an hour apart, in sessions or as requests without one.
fn five_chats(sessions: bool) -> Vec<Value> {
    (0..5)
        .flat_map(|n| {
            let name = format!("s{n}");
            chat(sessions.then_some(name.as_str()), n, n as u32 * 60)
        })
        .collect()
}

/// Requests without a session are read as the chats of their caller and
/// client: the report says of five such chats what it says of five
/// sessions, the same miss and the same line to declare.
#[test]
fn requests_without_a_session_are_read_as_the_chats_they_were() {
    let dir = scratch("sessionless");
    let (with, without) = (dir.join("sessions.jsonl"), dir.join("requests.jsonl"));
    write_log(&with, &five_chats(true));
    write_log(&without, &five_chats(false));
    for log in [&with, &without] {
        let text = report(&[log.to_str().unwrap()]);
        assert!(
            text.contains("  `fetch a web page` then `WebFetch`\n"),
            "{text}"
        );
        assert!(
            text.contains("  WebFetch (5 of 5 sessions loaded it): NoDefer(WebFetch)\n"),
            "{text}"
        );
        let json = report_json(&[log.to_str().unwrap()]);
        assert_eq!(json["sessions"], 5, "{text}");
        assert_eq!(json["turns"], 5, "{text}");
        assert_eq!(json["tokens"], 500, "{text}");
    }
    let text = report(&[without.to_str().unwrap()]);
    assert!(
        text.starts_with(
            "15 events, 5 sessions (5 of them gathered from requests without a session), 5 turns"
        ),
        "{text}"
    );
    assert_eq!(
        report_json(&[without.to_str().unwrap()])["sessions_from_requests"],
        5
    );

    // Requests closer than the idle time are one chat; another caller's,
    // another client's or another context's are chats of their own.
    let mut events = five_chats(false);
    for (i, e) in events.iter_mut().enumerate() {
        e["ts"] = json!(at(i as u32));
    }
    let mut bob = chat(None, 9, 0);
    bob.iter_mut().for_each(|e| e["caller"] = json!("bob"));
    let mut other = chat(None, 10, 0);
    other.iter_mut().for_each(|e| e["client"] = json!("cursor"));
    let mut plan = chat(None, 11, 0);
    plan.iter_mut()
        .for_each(|e| e["context"]["mode"] = json!("plan"));
    events.extend(bob.into_iter().chain(other).chain(plan));
    write_log(&without, &events);
    let json = report_json(&[without.to_str().unwrap()]);
    assert_eq!(json["sessions"], 4, "{json}");
    assert_eq!(json["load_in_most_sessions"][0]["sessions"], 4, "{json}");
}

/// A million requests without a session are read in bounded memory: what
/// one caller's requests leave behind does not grow with their number.
#[cfg(target_os = "linux")]
#[test]
fn many_requests_without_a_session_take_memory_independent_of_their_number() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_policy"))
        .args(["report", "/dev/stdin", "--format", "json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut text = String::new();
    let requests = 40_000;
    for n in 0..requests {
        for e in chat(None, n, (n / 1000) as u32) {
            text.push_str(&e.to_string());
            text.push('\n');
        }
        if text.len() > 1 << 20 {
            stdin.write_all(text.as_bytes()).unwrap();
            text.clear();
        }
    }
    stdin.write_all(text.as_bytes()).unwrap();
    let peak = peak_kib(child.id());
    drop(stdin);
    let out = wait_output(child, Duration::from_secs(120));
    let json: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(json["events"], requests * 3);
    assert_eq!(json["sessions"], 1, "{json}");
    // Each request a session of its own held some 2 KiB: 80 MiB here.
    assert!(peak < 40 * 1024, "peak {peak} KiB");
}

/// The peak resident size of process `pid`, in KiB.
#[cfg(target_os = "linux")]
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// The child's standard output once it ends, within `limit`.
fn wait_output(mut child: std::process::Child, limit: Duration) -> Vec<u8> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            assert!(status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            return out.stdout;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("`policy report` still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A line longer than an event may be is a bad line: counted, named, and
/// read past without holding it; the lines around it are read.
#[cfg(target_os = "linux")]
#[test]
fn a_line_past_the_limit_is_a_bad_line_read_in_bounded_memory() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_policy"))
        .args(["report", "/dev/stdin", "--format", "json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let events = chat(Some("s1"), 1, 0);
    writeln!(stdin, "{}", events[0]).unwrap();
    let block = vec![b' '; 1 << 20];
    for _ in 0..96 {
        stdin.write_all(&block).unwrap();
    }
    writeln!(stdin).unwrap();
    for e in &events[1..] {
        writeln!(stdin, "{e}").unwrap();
    }
    let peak = peak_kib(child.id());
    drop(stdin);
    let out = wait_output(child, Duration::from_secs(60));
    let json: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(json["events"], 4, "{json}");
    assert_eq!(json["bad_lines"], 1, "{json}");
    let bad = &json["bad_lines_shown"][0];
    assert_eq!(bad["line"], 2, "{json}");
    assert_eq!(
        bad["message"], "a line of 100,663,296 bytes, longer than the 4 MiB an event may be",
        "{json}"
    );
    assert!(peak < 40 * 1024, "peak {peak} KiB");
}

/// A tool named like a selector of another kind is suggested quoted, and a
/// line is checked for what it would change besides its own tool.
#[test]
fn a_tool_named_like_a_hint_selector_is_suggested_quoted() {
    let dir = scratch("hint-name");
    let registry = dir.join("registry.json");
    std::fs::write(
        &registry,
        json!([
            {"name": "hint:destructive", "description": "Named like a hint."},
            {"name": "Rm", "description": "Removes.", "annotations": {"destructiveHint": true}},
            {"name": "Ls", "description": "Lists.", "annotations": {"readOnlyHint": true}},
        ])
        .to_string(),
    )
    .unwrap();
    let policy = dir.join("p.policy");
    std::fs::write(&policy, "Defer(*)\n").unwrap();
    let log = dir.join("audit.jsonl");
    let events: Vec<Value> = (0..2)
        .flat_map(|n| {
            let s = format!("s{n}");
            [
                json!({"event": "list", "declared": 0, "names": [], "tokens": 10, "all_declared": 30}),
                json!({"event": "load", "names": ["hint:destructive"], "activated": ["hint:destructive"],
                    "unavailable": [], "status": "ok"}),
            ]
            .map(|mut e| {
                e["version"] = json!(1);
                e["session"] = json!(s);
                e["context"] = json!({"mode": null, "bot": null, "flags": []});
                e
            })
        })
        .collect();
    write_log(&log, &events);
    let args = [
        log.to_str().unwrap(),
        "--policy",
        policy.to_str().unwrap(),
        "--registry",
        registry.to_str().unwrap(),
    ];
    let text = report(&args);
    assert!(
        text.contains(
            "  hint:destructive (2 of 2 sessions loaded it): NoDefer(\"hint:destructive\")\n"
        ),
        "{text}"
    );
    let json = report_json(&args);
    let s = &json["load_in_most_sessions"][0];
    assert_eq!(s["line"], "NoDefer(\"hint:destructive\")", "{json}");
    assert_eq!(s["checked"], true, "{json}");
    let bare = report(&[log.to_str().unwrap()]);
    assert!(bare.contains(": NoDefer(\"hint:destructive\")\n"), "{bare}");
}

/// What the policy cannot apply, or what would change nothing, is not
/// suggested: no `Defer` of a guard, of a search tool or of a tool the
/// policy defers already, and no search miss of a call it refused.
#[test]
fn only_lines_the_policy_can_apply_and_that_change_something_are_suggested() {
    let dir = scratch("applicable");
    let policy = dir.join("p.policy");
    std::fs::write(
        &policy,
        "guard Guard\nsearch Find\nDefer(Old)\nHide(Secret)\n",
    )
    .unwrap();
    let log = dir.join("audit.jsonl");
    let events: Vec<Value> = [
        json!({"event": "list", "declared": 4, "names": ["Guard", "Find", "Old", "Read"],
            "tokens": 10, "all_declared": 30}),
        json!({"event": "search", "query": "read the secret", "names": [], "activated": [],
            "matches": 0, "empty": true, "status": "ok"}),
        json!({"event": "call", "tool": "Secret", "outcome": "not_found",
            "cause": {"kind": "hide", "rule": "Hide(Secret)"}}),
        json!({"event": "call", "tool": "Nothing", "outcome": "not_found"}),
    ]
    .map(|mut e| {
        e["version"] = json!(1);
        e["session"] = json!("s1");
        e["context"] = json!({"mode": null, "bot": null, "flags": []});
        e
    })
    .into();
    write_log(&log, &events);
    let json = report_json(&[log.to_str().unwrap(), "--policy", policy.to_str().unwrap()]);
    let lines: Vec<&str> = json["never_called"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["line"].as_str().unwrap())
        .collect();
    assert_eq!(lines, ["Defer(Read)"], "{json}");
    assert_eq!(json["never_called"][0]["checked"], true, "{json}");
    assert_eq!(json["search_misses"], json!([]), "{json}");
    // The refusals are still counted as refusals.
    assert_eq!(json["refusals"].as_array().unwrap().len(), 2, "{json}");
}

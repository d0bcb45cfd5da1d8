//! `policy gateway --listen` against callers that try to take more than
//! their part: bodies that never arrive, requests of millions of tiny JSON
//! values, one caller opening session after session. Raw HTTP/1.1 over
//! loopback, as in `listen.rs`; every wait has a deadline.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::gateway::listen::{Listening, Session, read_answer, send, stateless, stateless_list};
use crate::gateway::support::*;

const POLICY: &str = "\
guard fx__echo
Hide(fx__secret)
Defer(*)
";

const TOOLS: &str = "echo,secret,pid,slow";

const ALICE: &str = "alice-token-0123456789";
const MALLORY: &str = "mallory-token-0123456789";
const TOKENS: &[(&str, &str)] = &[("ALICE_TOKEN", ALICE), ("MALLORY_TOKEN", MALLORY)];

fn two_callers() -> Value {
    json!({"clients": {
        "alice": {"token": "${ALICE_TOKEN}"},
        "mallory": {"token": "${MALLORY_TOKEN}"}},
        "authorization_servers": ["https://id.example.com"]})
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// Sends a request's head and the first byte of the body it declares,
/// and no more: the connection waits for the rest.
fn start_slow_body(addr: &str, token: &str) -> TcpStream {
    let stream = TcpStream::connect(addr).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n\
         Authorization: Bearer {token}\r\nContent-Length: 1000\r\n\r\n{{"
    );
    stream
        .try_clone()
        .unwrap()
        .write_all(head.as_bytes())
        .unwrap();
    stream
}

/// Bodies that never arrive hold their caller's share of requests, not the
/// listener's: another caller is served beside them.
#[test]
fn bodies_that_never_arrive_hold_no_share_of_other_callers() {
    let l = Listening::with_clients(
        POLICY,
        &two_callers(),
        TOKENS,
        &["--max-concurrent", "2", "--max-concurrent-per-caller", "2"],
    );
    let mallory = bearer(MALLORY);
    let alice = bearer(ALICE);
    let as_mallory = [("Authorization", mallory.as_str())];
    let as_alice = [("Authorization", alice.as_str())];
    // Mallory's share is taken by the two bodies once the listener has read
    // their heads. Connections are served on several threads: a request
    // sent meanwhile may take the share first and one body be refused, so
    // the bodies are sent again until they hold the share together.
    let until = Instant::now() + DEADLINE;
    let _held: Vec<TcpStream> = loop {
        let held: Vec<TcpStream> = (0..2).map(|_| start_slow_body(&l.addr, MALLORY)).collect();
        let refused = (0..25).any(|_| {
            std::thread::sleep(Duration::from_millis(20));
            stateless(&l.addr, &as_mallory, "tools/list", json!({})).status == 429
        });
        if refused {
            break held;
        }
        assert!(Instant::now() < until, "{}", l.gw.stderr());
    };
    let answer = stateless(&l.addr, &as_alice, "tools/list", json!({}));
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(stateless_list(&l.addr, &as_alice).len(), 3);
}

/// A body must arrive in full within `--body-timeout` of its head, however
/// it is sent: one byte and then nothing, or a byte now and then. Past it
/// the request gets 408, and its caller's share is back.
#[test]
fn a_body_slower_than_the_body_timeout_gets_408_and_frees_its_share() {
    let l = Listening::with_clients(
        POLICY,
        &two_callers(),
        TOKENS,
        &["--max-concurrent-per-caller", "2", "--body-timeout", "1"],
    );
    let started = Instant::now();
    let stalled = start_slow_body(&l.addr, MALLORY);
    let dripping = start_slow_body(&l.addr, MALLORY);
    let mut writer = dripping.try_clone().unwrap();
    let drip = std::thread::spawn(move || {
        // A byte every 100 ms for up to the whole deadline: never a pause
        // long enough for a per-read wait to end it.
        let until = Instant::now() + DEADLINE;
        while Instant::now() < until && writer.write_all(b" ").is_ok() {
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    for stream in [stalled, dripping] {
        let answer = read_answer(stream);
        let waited = started.elapsed();
        assert_eq!(answer.status, 408, "{answer:?}");
        assert!(
            answer.body.contains("did not arrive in full within 1 s"),
            "{answer:?}"
        );
        assert_eq!(answer.header("connection"), Some("close"), "{answer:?}");
        assert!(waited >= Duration::from_millis(900), "{waited:?}");
        assert!(waited < DEADLINE, "{waited:?}");
    }
    drip.join().unwrap();
    // Both of Mallory's shares are back.
    let mallory = bearer(MALLORY);
    let as_mallory = [("Authorization", mallory.as_str())];
    assert_eq!(stateless_list(&l.addr, &as_mallory).len(), 3);
    assert_eq!(stateless_list(&l.addr, &as_mallory).len(), 3);
}

/// The gateway's peak resident set in KiB (Linux only).
fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A 2026-07-28 `tools/call` of `call_tool` whose inner arguments are
/// `arguments`, as raw JSON.
fn call_with(addr: &str, tool: &str, arguments: &str) -> crate::gateway::listen::Answer {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"call_tool","arguments":{{"name":"{tool}","arguments":{arguments}}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"suite","version":"1"}}}}}}}}"#
    );
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "call_tool"),
    ];
    send(addr, "POST", &headers, &body)
}

/// A body of millions of tiny JSON values (`[0,0,0,...]`) would cost the
/// gateway hundreds of bytes of memory for each two bytes sent, and the
/// runtime's thread seconds of parsing: it is refused with 413 after one
/// cheap pass. What stays within the bound, many values or few large ones,
/// is served at a small multiple of its size, and other callers are
/// answered meanwhile.
#[test]
fn a_body_of_many_tiny_values_costs_a_small_multiple_of_its_size() {
    let l = Listening::start(POLICY, TOOLS, &[], &[]);
    let Some(pid) = l.gw.pid().filter(|&pid| peak_kib(pid).is_some()) else {
        eprintln!("skipped: no /proc to read the gateway's peak resident set from");
        return;
    };
    assert_eq!(stateless_list(&l.addr, &[]).len(), 3);
    let before = peak_kib(pid).unwrap();

    // 4 MiB of zeros: two million values.
    let zeros = format!(r#"{{"a":[{}]}}"#, vec!["0"; 2 << 20].join(","));
    let addr = l.addr.clone();
    let other = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        let started = Instant::now();
        let list = stateless_list(&addr, &[]);
        (list.len(), started.elapsed())
    });
    let started = Instant::now();
    let refused = call_with(&l.addr, "fx__pid", &zeros);
    let took = started.elapsed();
    let (listed, waited) = other.join().unwrap();
    assert_eq!(refused.status, 413, "{:?}", refused.status);
    assert!(
        refused.body.contains("more than 131072 JSON values"),
        "{}",
        refused.body
    );
    assert_eq!(listed, 3);
    let after_zeros = peak_kib(pid).unwrap();
    eprintln!(
        "4 MiB of zeros refused in {took:?}; another caller answered in {waited:?}; \
         peak {before} KiB before, {after_zeros} KiB after"
    );

    // Under the bound: 100,000 values, and 15 MiB in 1,000 strings.
    let many = format!(r#"{{"a":[{}]}}"#, vec!["0"; 100_000].join(","));
    let answer = call_with(&l.addr, "fx__pid", &many);
    assert_eq!(answer.status, 200, "{:?}", answer.status);
    let long = format!(
        r#"{{"a":[{}]}}"#,
        vec![format!("\"{}\"", "x".repeat(15 << 10)); 1000].join(",")
    );
    let answer = call_with(&l.addr, "fx__pid", &long);
    assert_eq!(answer.status, 200, "{:?}", answer.status);
    let after = peak_kib(pid).unwrap();
    eprintln!(
        "100,000 values and 15 MiB of strings served: peak {after} KiB (+{} KiB)",
        after.saturating_sub(before)
    );
    assert!(
        after_zeros < before + 16 * 1024,
        "refusing 4 MiB of zeros took the peak from {before} KiB to {after_zeros} KiB"
    );
    assert!(
        after < before + 128 * 1024,
        "requests within the bounds took the peak from {before} KiB to {after} KiB"
    );
    // Generous for a debug build on a loaded machine; an unbounded parse
    // of the zeros alone takes several seconds there.
    assert!(waited < Duration::from_secs(5), "{waited:?}");
}

/// `--max-sessions` is shared between callers: one opening session after
/// session ends its own longest idle ones, not another caller's.
#[test]
fn past_max_sessions_a_caller_over_its_share_loses_its_own_sessions() {
    let l = Listening::with_clients(POLICY, &two_callers(), TOKENS, &["--max-sessions", "4"]);
    let mallory = bearer(MALLORY);
    let alice = bearer(ALICE);
    let as_mallory = [("Authorization", mallory.as_str())];
    let as_alice = [("Authorization", alice.as_str())];
    let pause = || std::thread::sleep(Duration::from_millis(20));
    let status = |s: &mut Session| s.request("tools/list", json!({})).status;

    // Alone, Mallory may fill the pool.
    let mut m: Vec<Session> = (0..4)
        .map(|_| {
            pause();
            Session::open_with(&l.addr, &as_mallory)
        })
        .collect();
    // Alice within her share (half of 4): each of her sessions ends
    // Mallory's longest idle one.
    pause();
    let mut a1 = Session::open_with(&l.addr, &as_alice);
    pause();
    let mut a2 = Session::open_with(&l.addr, &as_alice);
    assert_eq!(status(&mut m[0]), 404);
    assert_eq!(status(&mut m[1]), 404);
    // Mallory's two left are used; Alice's are now the longest idle.
    pause();
    assert_eq!(status(&mut m[2]), 200);
    assert_eq!(status(&mut m[3]), 200);
    // Mallory at her share opens more: her own longest idle end, never
    // Alice's.
    for _ in 0..4 {
        pause();
        m.push(Session::open_with(&l.addr, &as_mallory));
    }
    assert_eq!(status(&mut a1), 200);
    assert_eq!(status(&mut a2), 200);
    for (i, s) in m.iter_mut().enumerate() {
        let expected = if i >= 6 { 200 } else { 404 };
        assert_eq!(status(s), expected, "Mallory's session {i}");
    }
    // Over her share, Alice ends her own longest idle session too.
    pause();
    let mut a3 = Session::open_with(&l.addr, &as_alice);
    assert_eq!(status(&mut a1), 404);
    assert_eq!(status(&mut a2), 200);
    assert_eq!(status(&mut a3), 200);
    assert_eq!(status(&mut m[6]), 200);
    assert_eq!(status(&mut m[7]), 200);
}

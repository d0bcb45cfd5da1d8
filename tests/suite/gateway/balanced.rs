//! Several `policy gateway --listen` processes behind a real load balancer:
//! HAProxy (Debian's package), round-robin, no stickiness, no routing rule,
//! in front of three gateways that share a session key, all on loopback.
//!
//! - both eras from many clients (the load driver, `examples/http_load.rs`):
//!   every call answered, each caller in its own context whichever process
//!   serves it;
//! - one process killed (SIGKILL) in the middle of a run, and one drained
//!   (SIGTERM) and started again: no failed call without a session, and no
//!   404 and no other caller's context for a session;
//! - a hidden tool reachable on no path through any process: by name, by
//!   call-through, with a forged session id, with another caller's id, and
//!   with an id replayed after the key changed.
//!
//! HAProxy must be on `PATH` (`.ci/run` installs the pinned package). Where
//! it is not, the test says so and passes, unless
//! `TOOLPOLICY_REQUIRE_HAPROXY` is set, as in CI: then it fails.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::gateway::listen::{
    ALICE, BOB, OPS_POLICY as POLICY, Session, serving_at, stateless, stateless_call,
};
use crate::gateway::support::*;

/// The Debian package `.ci/run` installs.
const HAPROXY_PACKAGE: &str = "haproxy=2.6.12-1+deb12u3";

/// The HAProxy binary, or `None` (said on standard error) where the test
/// may be skipped.
fn haproxy() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .chain([PathBuf::from("/usr/sbin")])
            .map(|dir| dir.join("haproxy"))
            .find(|bin| bin.is_file())
    });
    if found.is_none() {
        let how = format!("HAProxy is not installed (`apt-get install {HAPROXY_PACKAGE}`)");
        assert!(
            std::env::var_os("TOOLPOLICY_REQUIRE_HAPROXY").is_none(),
            "{how}, and TOOLPOLICY_REQUIRE_HAPROXY asks for this test"
        );
        eprintln!("skipped: {how}");
    }
    found
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// HAProxy in front of `backends`, round-robin, checking each process's
/// `/readyz`; a request a process dropped unanswered (it was killed) or
/// refused (it is draining) is tried again on another, as a load balancer
/// in front of any service is set up.
struct Balancer {
    child: Child,
    addr: String,
    _dir: TempDir,
}

impl Balancer {
    fn start(bin: &Path, backends: &[String]) -> Balancer {
        let dir = temp_dir("haproxy");
        let port = free_port();
        let servers: String = backends
            .iter()
            .enumerate()
            .map(|(i, addr)| format!("  server gw{i} {addr} check inter 100ms fall 1 rise 1\n"))
            .collect();
        let config = format!(
            "global\n  maxconn 2000\n\
             defaults\n  mode http\n  timeout connect 1s\n  timeout client 30s\n  timeout server 30s\n\
             \x20 retries 3\n  option redispatch 1\n  retry-on conn-failure empty-response 503\n\
             frontend mcp\n  bind 127.0.0.1:{port}\n  default_backend gateways\n\
             backend gateways\n  balance roundrobin\n  option httpchk GET /readyz\n\
             \x20 http-check expect status 200\n{servers}"
        );
        let file = dir.join("haproxy.cfg");
        std::fs::write(&file, config).unwrap();
        let check = Command::new(bin)
            .args(["-c", "-f"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            check.status.success(),
            "{}",
            String::from_utf8_lossy(&check.stderr)
        );
        let child = Command::new(bin)
            .arg("-db")
            .arg("-f")
            .arg(&file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let addr = format!("127.0.0.1:{port}");
        let until = Instant::now() + DEADLINE;
        while std::net::TcpStream::connect(&addr).is_err() {
            assert!(Instant::now() < until, "HAProxy did not listen at {addr}");
            std::thread::sleep(Duration::from_millis(20));
        }
        Balancer {
            child,
            addr,
            _dir: dir,
        }
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The files every gateway process reads, and its command line.
struct Team {
    dir: TempDir,
    args: Vec<String>,
}

impl Team {
    fn new() -> Team {
        let dir = temp_dir("balanced");
        let (policy, servers) = files(
            &dir,
            POLICY,
            &[("fx", fixture("echo,secret,pid,slow", &[]))],
        );
        let clients = json!({"clients": {
            "alice": {"token": "${ALICE_TOKEN}", "flags": ["ops"]},
            "bob": {"token": "${BOB_TOKEN}"}}});
        std::fs::write(dir.join("clients.json"), clients.to_string()).unwrap();
        write_key(&dir.join("session.key"), 1);
        let args = [
            "--policy",
            policy.to_str().unwrap(),
            "--servers",
            servers.to_str().unwrap(),
            "--clients",
            dir.join("clients.json").to_str().unwrap(),
            "--session-key-file",
            dir.join("session.key").to_str().unwrap(),
            "--drain-timeout",
            "5",
        ]
        .map(String::from)
        .to_vec();
        Team { dir, args }
    }

    /// A gateway process listening at `listen`, and the address it serves.
    fn process(&self, listen: &str) -> (Gateway, String) {
        let mut args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        args.extend(["--listen", listen]);
        let gw = Gateway::spawn_env(&args, &[("ALICE_TOKEN", ALICE), ("BOB_TOKEN", BOB)]);
        let addr = serving_at(&gw);
        wait_ready(&addr);
        (gw, addr)
    }
}

/// A key of 32 bytes, as hex, made from `seed`.
fn write_key(path: &Path, seed: u8) {
    let hex: String = (0..32u8)
        .map(|i| format!("{:02x}", i.wrapping_mul(37).wrapping_add(seed)))
        .collect();
    std::fs::write(path, format!("{hex}\n")).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
}

fn wait_ready(addr: &str) {
    let until = Instant::now() + DEADLINE;
    loop {
        let ready = get(addr, "/readyz");
        if ready == 200 {
            return;
        }
        assert!(Instant::now() < until, "{addr} never became ready: {ready}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The status of `GET path`, or 0 when nothing answered.
fn get(addr: &str, path: &str) -> u16 {
    use std::io::{Read as _, Write as _};
    let Ok(mut stream) = std::net::TcpStream::connect(addr) else {
        return 0;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return 0;
    }
    let mut head = String::new();
    let _ = stream.read_to_string(&mut head);
    head.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn owned(headers: &[(&str, &str)]) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

fn driver_bin() -> PathBuf {
    fixture_bin().with_file_name("http_load")
}

/// The load driver started on `url`: `clients` clients of `era`, half
/// Alice, half Bob, `calls` calls each of the guard `fx__echo`.
fn drive(url: &str, era: &str, clients: u32, calls: u32) -> Child {
    Command::new(driver_bin())
        .args(["--url", url, "--tool", "fx__echo", "--era", era, "--json"])
        .args([
            "--clients",
            &clients.to_string(),
            "--calls",
            &calls.to_string(),
        ])
        .args(["--token", ALICE, "--token", BOB, "--warmup", "1"])
        .args([
            "--rate",
            "150",
            "--request-timeout",
            "10",
            "--timeout",
            "60",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The driver's report, once it ended (within its own `--timeout`).
fn report(child: Child) -> Value {
    let out = child.wait_with_output().unwrap();
    serde_json::from_str(&String::from_utf8_lossy(&out.stdout)).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn assert_every_call_answered(report: &Value, calls: u64) {
    assert_eq!(report["failed"], 0, "{report}");
    assert_eq!(report["answered"], calls, "{report}");
}

/// The pid of the fixture behind whichever process served the call: a
/// different one per gateway process.
fn served_by(addr: &str, who: &[(&str, &str)]) -> String {
    let result = stateless_call(addr, who, "call_tool", json!({"name": "fx__pid"}));
    assert!(!is_error(&result), "{result}");
    text(&result)
}

/// What `who` may reach, asked through the balancer in both eras and in a
/// session: the list, and whether `fx__pid` and `fx__secret` answer.
fn assert_context(addr: &str, who: &[(&str, &str)], ops: bool) {
    for _ in 0..3 {
        let list = stateless(addr, who, "tools/list", json!({})).result();
        let names: Vec<&str> = list["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert!(!names.contains(&"fx__secret"), "{names:?}");
        let pid = stateless_call(addr, who, "call_tool", json!({"name": "fx__pid"}));
        assert_eq!(is_error(&pid), !ops, "{pid}");
        let secret = stateless_call(addr, who, "call_tool", json!({"name": "fx__secret"}));
        assert!(is_error(&secret), "{secret}");
    }
}

/// A session's requests in its caller's context: the guard answers, and
/// `fx__pid` is found by name and called for a caller with `ops` only.
fn assert_session_context(session: &mut Session, ops: bool) {
    assert!(session.list().contains(&"fx__echo".to_string()));
    let echo = session.call("fx__echo", json!({"text": "hi"}));
    assert!(!is_error(&echo), "{echo}");
    let found = session.call("tool_search", json!({"query": "", "names": ["fx__pid"]}));
    assert_eq!(
        text(&found).contains("Not available"),
        !ops,
        "{}: {found}",
        session.id
    );
    // Found on one process, called on the next: activations are each
    // process's own, and call-through reaches what the context does not
    // hide, so the call does not depend on where the search was served.
    let pid = session.call("call_tool", json!({"name": "fx__pid"}));
    assert_eq!(is_error(&pid), !ops, "{pid}");
    let secret = session.call("call_tool", json!({"name": "fx__secret"}));
    assert!(is_error(&secret), "{secret}");
}

#[test]
fn behind_haproxy_any_process_serves_any_request_and_sessions_survive_a_lost_process() {
    let Some(bin) = haproxy() else {
        return;
    };
    let started = Instant::now();
    let team = Team::new();
    let mut processes: Vec<(Gateway, String)> =
        (0..3).map(|_| team.process("127.0.0.1:0")).collect();
    let backends: Vec<String> = processes.iter().map(|(_, a)| a.clone()).collect();
    let lb = Balancer::start(&bin, &backends);
    let url = format!("http://{}/mcp", lb.addr);
    let alice = bearer(ALICE);
    let bob = bearer(BOB);
    let as_alice = [("Authorization", alice.as_str())];
    let as_bob = [("Authorization", bob.as_str())];

    // Round-robin with no stickiness: requests land on every process.
    let served: std::collections::BTreeSet<String> =
        (0..6).map(|_| served_by(&lb.addr, &as_alice)).collect();
    assert_eq!(served.len(), 3, "{served:?}");

    // Each caller its own context, whichever process answers.
    assert_context(&lb.addr, &as_alice, true);
    assert_context(&lb.addr, &as_bob, false);

    // A session opened on one process is served by all three (its list,
    // its guard, a search by name), each request in its caller's context,
    // with no 404.
    let mut a = Session::open_with(&lb.addr, &as_alice);
    let mut b = Session::open_with(&lb.addr, &as_bob);
    for _ in 0..4 {
        assert_session_context(&mut a, true);
        assert_session_context(&mut b, false);
    }

    // Both eras under load; one process killed in the middle of the run.
    let stateless_run = drive(&url, "2026-07-28", 20, 30);
    let session_run = drive(&url, "2025-11-25", 20, 30);
    std::thread::sleep(Duration::from_millis(1500));
    let (mut killed, killed_addr) = processes.remove(0);
    killed.signal("KILL");
    let _ = killed.wait_exit();
    let stateless_report = report(stateless_run);
    let session_report = report(session_run);
    assert_every_call_answered(&stateless_report, 600);
    assert_every_call_answered(&session_report, 600);
    assert_eq!(session_report["sessions_opened"], 20, "{session_report}");

    // The sessions opened before still answer, on the processes left.
    for _ in 0..3 {
        assert_session_context(&mut a, true);
        assert_session_context(&mut b, false);
    }

    // One process drained (SIGTERM) under load, then started again at its
    // address; the killed one too.
    let stateless_run = drive(&url, "2026-07-28", 20, 30);
    let session_run = drive(&url, "2025-11-25", 20, 30);
    std::thread::sleep(Duration::from_millis(1500));
    let (mut drained, drained_addr) = processes.remove(0);
    drained.signal("TERM");
    assert_eq!(drained.wait_exit(), Some(0), "{}", drained.stderr());
    processes.push(team.process(&drained_addr));
    processes.push(team.process(&killed_addr));
    let stateless_report = report(stateless_run);
    let session_report = report(session_run);
    assert_every_call_answered(&stateless_report, 600);
    assert_every_call_answered(&session_report, 600);
    assert_eq!(session_report["sessions_opened"], 20, "{session_report}");
    assert_context(&lb.addr, &as_alice, true);
    assert_context(&lb.addr, &as_bob, false);
    assert_session_context(&mut a, true);
    assert_session_context(&mut b, false);

    // No path to a hidden tool, through any process.
    for _ in 0..3 {
        let secret = a.call("call_tool", json!({"name": "fx__secret"}));
        assert!(is_error(&secret), "{secret}");
        let answer = a.request("tools/call", json!({"name": "fx__secret", "arguments": {}}));
        assert!(
            answer.status != 200
                || answer.body.contains("error")
                || answer.body.contains("isError"),
            "{answer:?}"
        );
        let found = a.call("tool_search", json!({"query": "secret"}));
        assert!(!text(&found).contains("fx__secret"), "{found}");
    }
    // An id of Alice's shown with Bob's credential; an altered id; a forged
    // one: 404 from every process, saying nothing of the session.
    let mut unknown = Session::with_id(&lb.addr, "not-a-session", owned(&as_bob));
    let reference = unknown.request("tools/list", json!({}));
    assert_eq!(reference.status, 404, "{reference:?}");
    for _ in 0..3 {
        let mut stolen = Session::with_id(&lb.addr, &a.id, owned(&as_bob));
        let answer = stolen.request(
            "tools/call",
            json!({"name": "call_tool", "arguments": {"name": "fx__pid"}}),
        );
        assert_eq!(answer.status, 404, "{answer:?}");
        assert_eq!(answer.body, reference.body);
        let mut altered = a.id.clone().into_bytes();
        let last = altered.len() - 1;
        altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(altered).unwrap();
        let mut altered = Session::with_id(&lb.addr, &altered, owned(&as_alice));
        let answer = altered.request("tools/list", json!({}));
        assert_eq!(answer.status, 404, "{answer:?}");
        assert_eq!(answer.body, reference.body);
    }

    // The key changes (every process started again with a new one): an id
    // signed with the old key is refused everywhere.
    write_key(&team.dir.join("session.key"), 2);
    let addrs: Vec<String> = processes.iter().map(|(_, a)| a.clone()).collect();
    for (gw, _) in &mut processes {
        gw.signal("TERM");
        assert_eq!(gw.wait_exit(), Some(0), "{}", gw.stderr());
    }
    processes.clear();
    for addr in &addrs {
        processes.push(team.process(addr));
    }
    for _ in 0..3 {
        let answer = a.request("tools/list", json!({}));
        assert_eq!(answer.status, 404, "{answer:?}");
        assert_eq!(answer.body, reference.body);
    }
    // A new session under the new key is served everywhere.
    let mut fresh = Session::open_with(&lb.addr, &as_alice);
    for _ in 0..3 {
        assert!(!is_error(
            &fresh.call("fx__echo", json!({"text": "new key"}))
        ));
    }
    assert!(
        started.elapsed() < Duration::from_secs(90),
        "took {:?}",
        started.elapsed()
    );
    drop(lb);
}

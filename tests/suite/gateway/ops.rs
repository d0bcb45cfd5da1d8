//! Running a listening gateway in production: a clients file whose callers
//! name their own modes (no `--mode`), the dry run of each caller,
//! `/healthz` and `/readyz`, the drain on SIGTERM and `--threads`. Every
//! wait has a deadline; all traffic is to loopback.

use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::gateway::clients::{SigningKey, jwks};
use jsonwebtoken::Algorithm;

use crate::gateway::listen::{Answer, Listening, read_answer, stateless, stateless_call};
use crate::gateway::support::*;

/// Two modes: `ops` is served `fx__pid` on the first turn, `ci` never.
const MODES: &str = "\
Defer(*)
mode ops {
  NoDefer(fx__pid)
}
mode ci {
  Hide(fx__pid)
}
";

const ALICE: &str = "alice-token-0123456789";
const CI: &str = "ci-token-0123456789abc";

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// A GET (or another method) of `path`, with extra headers, and its answer.
fn get(addr: &str, method: &str, path: &str, headers: &[(&str, &str)]) -> Answer {
    use std::io::Write as _;
    let mut stream = TcpStream::connect(addr).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    read_answer(stream)
}

/// The policy, the servers file (one fixture `fx`) and a clients file in
/// `dir`; returns the arguments to run the gateway on them.
fn clients_files(
    dir: &std::path::Path,
    policy: &str,
    clients: &Value,
    env: &[(&str, &str)],
) -> Vec<String> {
    let (p, s) = files(dir, policy, &[("fx", fixture("echo,pid,slow,secret", env))]);
    let c = dir.join("clients.json");
    std::fs::write(&c, clients.to_string()).unwrap();
    [
        "--policy",
        p.to_str().unwrap(),
        "--servers",
        s.to_str().unwrap(),
        "--clients",
        c.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec()
}

fn tokens() -> [(&'static str, &'static str); 2] {
    [("ALICE_TOKEN", ALICE), ("CI_TOKEN", CI)]
}

fn both_moded() -> Value {
    json!({"clients": {
        "alice": {"token": "${ALICE_TOKEN}", "mode": "ops"},
        "ci": {"token": "${CI_TOKEN}", "mode": "ci"}}})
}

#[test]
fn a_clients_file_whose_callers_name_modes_needs_no_mode_flag() {
    let l = Listening::with_clients(MODES, &both_moded(), &tokens(), &[]);
    let alice = bearer(ALICE);
    let ci = bearer(CI);
    let listed = |auth: &str| {
        let r = stateless(&l.addr, &[("Authorization", auth)], "tools/list", json!({}));
        r.result()["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert!(listed(&alice).contains(&"fx__pid".to_string()));
    assert!(!listed(&ci).contains(&"fx__pid".to_string()));
    // Each caller is held to its own mode: `ci` never reaches the tool.
    let r = stateless_call(
        &l.addr,
        &[("Authorization", &ci)],
        "call_tool",
        json!({"name": "fx__pid"}),
    );
    assert!(is_error(&r), "{r}");
}

#[test]
fn a_caller_left_without_a_mode_is_named_at_start() {
    let dir = temp_dir("ops-unmoded");
    let file = json!({"clients": {
        "alice": {"token": "${ALICE_TOKEN}", "mode": "ops"},
        "bob": {"token": "${CI_TOKEN}"}}});
    let args = clients_files(&dir, MODES, &file, &[]);
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.extend(["--listen", "127.0.0.1:0"]);
    let (code, out, err) = run_to_end_env(&args, &tokens());
    assert_eq!(code, Some(2), "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("`clients.bob`: names no mode"), "{err}");
    assert!(!err.contains("`clients.alice`"), "{err}");
    assert!(err.contains("`ops`, `ci`"), "{err}");
    // With `--mode`, bob takes the command line's.
    args.extend(["--mode", "ci", "--dry-run"]);
    let (code, _, err) = run_to_end_env(&args, &tokens());
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn jwt_defaults_without_a_mode_are_named_at_start() {
    let dir = temp_dir("ops-jwt-unmoded");
    let key = SigningKey::new("k", Algorithm::ES256);
    std::fs::write(dir.join("jwks.json"), jwks(&[key.jwk(true)])).unwrap();
    let file = json!({
        "clients": {"alice": {"token": "${ALICE_TOKEN}", "mode": "ops"}},
        "jwt": {"issuer": "https://id.example.com", "audience": "toolpolicy",
                "jwks_file": dir.join("jwks.json"), "claims": {"mode": "tp_mode"}}});
    let args = clients_files(&dir, MODES, &file, &[]);
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.extend(["--listen", "127.0.0.1:0"]);
    let (code, _, err) = run_to_end_env(&args, &tokens());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("`jwt.defaults`: names no mode"), "{err}");
    // Defaults that name one: every token has a mode, from its claim or them.
    let mut file = file;
    file["jwt"]["defaults"] = json!({"mode": "ci"});
    std::fs::write(dir.join("clients.json"), file.to_string()).unwrap();
    args.retain(|a| *a != "--listen" && *a != "127.0.0.1:0");
    args.push("--dry-run");
    let (code, out, err) = run_to_end_env(&args, &tokens());
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("caller `jwt.defaults`: mode `ci`"), "{out}");
}

#[test]
fn a_clients_reload_that_leaves_a_caller_without_a_mode_keeps_the_last_good_file() {
    let l = Listening::with_clients(MODES, &both_moded(), &tokens(), &[]);
    let alice = bearer(ALICE);
    let call = |auth: &str| {
        stateless_call(
            &l.addr,
            &[("Authorization", auth)],
            "call_tool",
            json!({"name": "fx__pid"}),
        )
    };
    assert!(!is_error(&call(&alice)));
    // Alice loses her mode, and ci is dropped: the file is refused whole.
    std::fs::write(
        l.dir.join("clients.json"),
        json!({"clients": {"alice": {"token": "${ALICE_TOKEN}"}}}).to_string(),
    )
    .unwrap();
    assert!(
        l.gw.wait_stderr("keeping the last good clients file", 1),
        "{}",
        l.gw.stderr()
    );
    let err = l.gw.stderr();
    assert!(err.contains("`clients.alice`: names no mode"), "{err}");
    assert!(!is_error(&call(&alice)));
    let ci = call(&bearer(CI));
    assert!(
        is_error(&ci),
        "ci is still `ci`, which hides the tool: {ci}"
    );
    assert!(!ci.to_string().contains("401"), "{ci}");
}

#[test]
fn the_dry_run_reports_each_caller_or_the_one_named() {
    let dir = temp_dir("ops-dry");
    let args = clients_files(&dir, MODES, &both_moded(), &[]);
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.push("--dry-run");
    let (code, out, err) = run_to_end_env(&args, &tokens());
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("  fx: 4 tools\n"), "{out}");
    let alice = out.split("caller `alice`").nth(1).unwrap();
    let (alice, ci) = alice.split_once("caller `ci`").unwrap();
    assert!(alice.contains("mode `ops`"), "{out}");
    assert!(alice.contains("fx__pid"), "{out}");
    assert!(ci.contains("mode `ci`"), "{out}");
    assert!(ci.contains("hidden (1):\n    fx__pid\n"), "{out}");
    assert!(
        alice.contains("tokens: ") && ci.contains("tokens: "),
        "{out}"
    );

    args.extend(["--format", "json", "--caller", "ci"]);
    let (code, out, err) = run_to_end_env(&args, &tokens());
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let callers = v["callers"].as_array().unwrap();
    assert_eq!(callers.len(), 1, "{v}");
    assert_eq!(callers[0]["caller"], "ci");
    assert_eq!(callers[0]["at"], "clients.ci");
    assert_eq!(callers[0]["context"]["mode"], "ci");
    assert_eq!(callers[0]["hidden_tools"], json!(["fx__pid"]));
    assert_eq!(callers[0]["deferred"], json!(3));
    assert!(!callers[0]["listed"].as_array().unwrap().is_empty());
    assert!(callers[0]["tokens"]["listed"].as_u64().unwrap() > 0);
    assert_eq!(v["servers"][0]["tools"], 4);

    let last = args.len() - 1;
    args[last] = "carol";
    let (code, out, err) = run_to_end_env(&args, &tokens());
    assert_eq!(code, Some(2), "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("`--caller` `carol` is not a caller of")
            && err.contains("its callers are `alice`, `ci`"),
        "{err}"
    );
}

#[test]
fn health_pages_answer_without_a_credential_and_reveal_nothing() {
    let l = Listening::with_clients(MODES, &both_moded(), &tokens(), &[]);
    let live = get(&l.addr, "GET", "/healthz", &[]);
    assert_eq!((live.status, live.body.as_str()), (200, "ok\n"), "{live:?}");
    let ready = get(&l.addr, "GET", "/readyz", &[]);
    assert_eq!((ready.status, ready.body.as_str()), (200, "ready\n"));
    let head = get(&l.addr, "HEAD", "/readyz", &[]);
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty(), "{head:?}");
    let post = get(&l.addr, "POST", "/healthz", &[("Content-Length", "0")]);
    assert_eq!(post.status, 405, "{post:?}");
    assert_eq!(post.header("allow"), Some("GET, HEAD"));
    // `/mcp` still asks for a credential.
    let mcp = get(&l.addr, "GET", "/mcp", &[]);
    assert_eq!(mcp.status, 401, "{mcp:?}");
    for a in [&live, &ready] {
        assert!(!a.body.contains("fx"), "{a:?}");
    }
}

#[test]
fn readyz_fails_while_a_server_is_down() {
    let dir = temp_dir("ops-ready-down");
    let (p, s) = files(
        &dir,
        "Defer(*)\n",
        &[
            ("fx", fixture("echo", &[])),
            ("down", fixture("echo", &[("FIXTURE_EXIT_AT_START", "1")])),
        ],
    );
    let args = file_args(&p, &s, &["--listen", "127.0.0.1:0"]);
    let gw = Gateway::spawn(&args).holding(dir);
    let addr = crate::gateway::listen::serving_at(&gw);
    let ready = get(&addr, "GET", "/readyz", &[]);
    assert_eq!(ready.status, 503, "{ready:?}");
    assert_eq!(ready.body, "not ready: 1 of 2 servers is not running\n");
    assert!(!ready.body.contains("down"), "{ready:?}");
    assert_eq!(get(&addr, "GET", "/healthz", &[]).status, 200);
}

/// A call to `fx__slow` in a thread of its own, and its answer.
fn slow_call(addr: &str) -> std::thread::JoinHandle<Answer> {
    let addr = addr.to_string();
    std::thread::spawn(move || {
        stateless(
            &addr,
            &[],
            "tools/call",
            json!({"name": "call_tool", "arguments": {"name": "fx__slow", "arguments": {}}}),
        )
    })
}

#[cfg(unix)]
#[test]
fn sigterm_drains_the_requests_in_flight_and_refuses_new_ones() {
    let mut l = Listening::start(
        "Defer(*)\n",
        "echo,pid,slow",
        &[("FIXTURE_SLOW_MS", "1500")],
        &["--drain-timeout", "8"],
    );
    let pid = text(&stateless_call(
        &l.addr,
        &[],
        "call_tool",
        json!({"name": "fx__pid"}),
    ));
    let slow = slow_call(&l.addr);
    // The call is in flight once the fixture has it: wait a little.
    std::thread::sleep(Duration::from_millis(400));
    let t0 = Instant::now();
    l.gw.signal("TERM");
    assert!(l.gw.wait_stderr("draining", 1), "{}", l.gw.stderr());
    let ready = get(&l.addr, "GET", "/readyz", &[]);
    assert_eq!(ready.status, 503, "{ready:?}");
    assert!(ready.body.contains("shutting down"), "{ready:?}");
    assert_eq!(get(&l.addr, "GET", "/healthz", &[]).status, 200);
    let refused = stateless(&l.addr, &[], "tools/list", json!({}));
    assert_eq!(refused.status, 503, "{refused:?}");
    let answered = slow.join().unwrap();
    let result = answered.result();
    assert!(!is_error(&result), "{result}");
    assert!(text(&result).starts_with("slow"), "{result}");
    assert_eq!(l.gw.wait_exit(), Some(0), "{}", l.gw.stderr());
    assert!(t0.elapsed() < Duration::from_secs(8), "{:?}", t0.elapsed());
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the server outlived the gateway"
    );
}

#[cfg(unix)]
#[test]
fn the_drain_ends_at_its_bound() {
    let mut l = Listening::start(
        "Defer(*)\n",
        "echo,slow",
        &[("FIXTURE_SLOW_MS", "15000")],
        &["--drain-timeout", "0.5"],
    );
    let slow = slow_call(&l.addr);
    std::thread::sleep(Duration::from_millis(400));
    let t0 = Instant::now();
    l.gw.signal("TERM");
    assert_eq!(l.gw.wait_exit(), Some(0), "{}", l.gw.stderr());
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    assert!(
        l.gw.stderr().contains("1 requests still in flight"),
        "{}",
        l.gw.stderr()
    );
    drop(slow);
}

#[test]
fn threads_is_checked_and_serves() {
    let dir = temp_dir("ops-threads");
    let (p, s) = files(&dir, "Defer(*)\n", &[("fx", fixture("echo,pid", &[]))]);
    for bad in ["0", "17", "two"] {
        let args = file_args(&p, &s, &["--listen", "127.0.0.1:0", "--threads", bad]);
        let (code, _, err) = run_to_end(&args);
        assert_eq!(code, Some(2), "{bad}: {err}");
        assert!(err.contains("`--threads` must be"), "{bad}: {err}");
    }
    let l = Listening::start("Defer(*)\n", "echo,pid", &[], &["--threads", "2"]);
    let r = stateless_call(&l.addr, &[], "call_tool", json!({"name": "fx__pid"}));
    assert!(!is_error(&r), "{r}");
}

//! `policy gateway --listen`: MCP's streamable HTTP transport served to
//! many clients at once, driven with raw HTTP/1.1 over a TCP socket (so a
//! test can send what no well-behaved client would: a false length, a body
//! without end, a foreign `Origin`), in front of the MCP fixture. Both
//! eras: sessions opened by `initialize` (2025-11-25) and requests without
//! a session (2026-07-28). Every wait has a deadline.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::gateway::support::*;

const POLICY: &str = "\
guard fx__echo
Hide(fx__secret)
Defer(*)
";

const TOOLS: &str = "echo,secret,pid,slow";

/// A gateway listening on a free loopback port.
pub struct Listening {
    pub gw: Gateway,
    pub addr: String,
    pub dir: std::path::PathBuf,
}

/// The address a gateway started with `--listen` says it serves at, once
/// it says so; traffic goes to loopback whatever the address bound.
pub fn serving_at(gw: &Gateway) -> String {
    assert!(
        gw.wait_stderr("serving MCP over HTTP at http://", 1),
        "{}",
        gw.stderr()
    );
    gw.stderr()
        .split("serving MCP over HTTP at http://")
        .nth(1)
        .and_then(|rest| rest.split("/mcp").next())
        .unwrap()
        .replace("0.0.0.0:", "127.0.0.1:")
}

impl Listening {
    /// The gateway on `policy` and one fixture `fx` with `tools`, with
    /// `extra` arguments after `--listen 127.0.0.1:0`.
    pub fn start(policy: &str, tools: &str, env: &[(&str, &str)], extra: &[&str]) -> Listening {
        Listening::start_at("127.0.0.1:0", policy, tools, env, extra, None)
    }

    /// [`Listening::start`] with a clients file, the tokens it names in
    /// the gateway's environment.
    pub fn with_clients(
        policy: &str,
        clients: &Value,
        tokens: &[(&str, &str)],
        extra: &[&str],
    ) -> Listening {
        Listening::start_at(
            "127.0.0.1:0",
            policy,
            TOOLS,
            &[],
            extra,
            Some((clients, tokens)),
        )
    }

    pub fn start_at(
        listen: &str,
        policy: &str,
        tools: &str,
        env: &[(&str, &str)],
        extra: &[&str],
        clients: Option<(&Value, &[(&str, &str)])>,
    ) -> Listening {
        let dir = temp_dir("listen");
        let (p, s) = files(&dir, policy, &[("fx", fixture(tools, env))]);
        let clients_file = dir.join("clients.json");
        let mut args = file_args(&p, &s, &["--listen", listen]);
        let mut gateway_env: &[(&str, &str)] = &[];
        if let Some((file, tokens)) = clients {
            std::fs::write(&clients_file, file.to_string()).unwrap();
            args.extend_from_slice(&["--clients", clients_file.to_str().unwrap()]);
            gateway_env = tokens;
        }
        args.extend_from_slice(extra);
        let path = dir.to_path_buf();
        let gw = Gateway::spawn_env(&args, gateway_env).holding(dir);
        let addr = serving_at(&gw);
        Listening {
            gw,
            addr,
            dir: path,
        }
    }
}

/// One HTTP answer.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC messages of a JSON or event-stream body.
    pub fn messages(&self) -> Vec<Value> {
        if self
            .header("content-type")
            .is_some_and(|c| c.starts_with("application/json"))
        {
            return vec![serde_json::from_str(&self.body).unwrap()];
        }
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    }

    /// The `result` of the answer to a request.
    pub fn result(&self) -> Value {
        assert_eq!(self.status, 200, "{self:?}");
        let messages = self.messages();
        let answer = messages
            .iter()
            .find(|m| m.get("result").is_some() || m.get("error").is_some())
            .unwrap_or_else(|| panic!("no answer in {self:?}"));
        assert!(answer.get("error").is_none(), "{answer}");
        answer["result"].clone()
    }
}

/// Reads an HTTP/1.1 answer from `stream` to its end (the request asked to
/// close the connection), within the deadline.
pub fn read_answer(mut stream: TcpStream) -> Answer {
    stream.set_read_timeout(Some(DEADLINE)).unwrap();
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let chunked = headers.iter().any(|(k, v)| {
        k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
    });
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    Answer {
        status,
        headers,
        body,
    }
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || after.len() < n {
            out.push_str(&after[..n.min(after.len())]);
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].strip_prefix("\r\n").unwrap_or(&after[n..]);
    }
    out
}

/// Sends one request with `headers` and `body` and reads its answer.
pub fn send(addr: &str, method: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let stream = TcpStream::connect(addr).unwrap();
    let mut head = format!(
        "{method} /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("accept"))
    {
        head.push_str("Accept: application/json, text/event-stream\r\n");
    }
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
    {
        head.push_str("Content-Type: application/json\r\n");
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut writer = stream.try_clone().unwrap();
    writer.write_all(head.as_bytes()).unwrap();
    writer.write_all(body.as_bytes()).unwrap();
    read_answer(stream)
}

/// A session of the 2025 era, opened by `initialize`.
pub struct Session {
    pub addr: String,
    pub id: String,
    /// The id of the last request sent.
    pub next: u64,
    pub extra: Vec<(String, String)>,
}

impl Session {
    pub fn open(addr: &str) -> Session {
        Session::open_with(addr, &[])
    }

    /// A session whose every request carries `extra` headers too.
    pub fn open_with(addr: &str, extra: &[(&str, &str)]) -> Session {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "suite", "version": "1"}}});
        let answer = send(addr, "POST", extra, &init.to_string());
        assert_eq!(answer.status, 200, "{answer:?}");
        let id = answer
            .header("mcp-session-id")
            .unwrap_or_else(|| panic!("no session in {answer:?}"))
            .to_string();
        let session = Session {
            addr: addr.into(),
            id,
            next: 1,
            extra: extra
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        let done = session.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert_eq!(done.status, 202, "{done:?}");
        session
    }

    /// A session by its id, as a client that holds it (`extra` headers on
    /// every request) sends it to `addr`.
    pub fn with_id(addr: &str, id: &str, extra: Vec<(String, String)>) -> Session {
        Session {
            addr: addr.into(),
            id: id.into(),
            next: 100,
            extra,
        }
    }

    pub fn post(&self, message: &Value) -> Answer {
        let mut headers: Vec<(&str, &str)> = vec![
            ("Mcp-Session-Id", &self.id),
            ("MCP-Protocol-Version", "2025-11-25"),
        ];
        headers.extend(self.extra.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        send(&self.addr, "POST", &headers, &message.to_string())
    }

    pub fn request(&mut self, method: &str, params: Value) -> Answer {
        self.next += 1;
        self.post(&json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params}))
    }

    pub fn list(&mut self) -> Vec<String> {
        names(&self.request("tools/list", json!({})).result())
    }

    pub fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
            .result()
    }
}

fn names(list: &Value) -> Vec<String> {
    list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// A request of the 2026-07-28 era: no session, its version and the
/// client's capabilities in `_meta`, its method (and name) in headers.
pub fn stateless(addr: &str, extra: &[(&str, &str)], method: &str, mut params: Value) -> Answer {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "suite", "version": "1"},
    });
    let name = params["name"].as_str().map(str::to_string);
    let mut headers: Vec<(&str, &str)> = vec![
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    if let Some(name) = &name {
        headers.push(("Mcp-Name", name));
    }
    headers.extend_from_slice(extra);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    send(addr, "POST", &headers, &body.to_string())
}

pub fn stateless_list(addr: &str, extra: &[(&str, &str)]) -> Vec<String> {
    names(&stateless(addr, extra, "tools/list", json!({})).result())
}

pub fn stateless_call(addr: &str, extra: &[(&str, &str)], name: &str, arguments: Value) -> Value {
    stateless(
        addr,
        extra,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
    .result()
}

#[test]
fn sessions_and_requests_without_one_share_one_server_each_as_the_policy_says() {
    let l = Listening::start(POLICY, TOOLS, &[], &[]);
    let mut a = Session::open(&l.addr);
    let mut b = Session::open(&l.addr);
    let first = ["fx__echo", "tool_search", "call_tool"];
    assert_eq!(a.list(), first);
    assert_eq!(b.list(), first);
    assert_eq!(stateless_list(&l.addr, &[]), first);

    // A session's search activates for that session alone.
    let found = a.call("tool_search", json!({"query": "", "names": ["fx__pid"]}));
    assert!(text(&found).contains("fx__pid"), "{found}");
    let pid_a = a.call("call_tool", json!({"name": "fx__pid"}));
    assert!(!is_error(&pid_a), "{pid_a}");
    let refused = b.call("call_tool", json!({"name": "fx__pid"}));
    assert!(
        is_error(&refused) && text(&refused).contains("not found"),
        "{refused}"
    );

    // Without a session: a deferred tool is reached, through the
    // call-through tool or by its name, a hidden one is not, and the server
    // behind is the one the sessions use.
    for (name, arguments) in [
        ("call_tool", json!({"name": "fx__pid"})),
        ("fx__pid", json!({})),
    ] {
        let pid = stateless_call(&l.addr, &[], name, arguments);
        assert!(!is_error(&pid), "{pid}");
        assert_eq!(text(&pid), text(&pid_a));
    }
    for (name, arguments) in [
        ("fx__secret", json!({})),
        ("call_tool", json!({"name": "fx__secret"})),
        ("fx__nothing", json!({})),
    ] {
        let r = stateless_call(&l.addr, &[], name, arguments);
        assert!(
            is_error(&r) && text(&r).ends_with("not found."),
            "{name}: {r}"
        );
    }
    // A search without a session returns the schema, and activates nothing
    // a later request sees: the list is the first turn's still.
    let found = stateless_call(
        &l.addr,
        &[],
        "tool_search",
        json!({"query": "", "names": ["fx__slow"]}),
    );
    assert!(text(&found).contains("fx__slow"), "{found}");
    assert!(
        text(&found).contains("inputSchema") || text(&found).contains("\"type\""),
        "{found}"
    );
    assert_eq!(stateless_list(&l.addr, &[]), first);
}

#[test]
fn a_non_loopback_address_is_refused_at_start_saying_why() {
    let dir = temp_dir("listen-wide");
    let (p, s) = files(&dir, POLICY, &[("fx", fixture(TOOLS, &[]))]);
    let (code, _, err) = run_to_end(&file_args(&p, &s, &["--listen", "0.0.0.0:0"]));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("`--listen` `0.0.0.0:0` is not a loopback address"),
        "{err}"
    );
    assert!(!err.contains("started with"), "no server starts: {err}");
}

#[test]
fn origin_and_host_outside_what_is_allowed_are_refused_with_403() {
    let l = Listening::start(
        POLICY,
        TOOLS,
        &[],
        &["--allow-origin", "http://localhost:5173"],
    );
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let evil = stateless(
        &l.addr,
        &[("Origin", "https://evil.example")],
        "tools/list",
        json!({}),
    );
    assert_eq!(evil.status, 403, "{evil:?}");
    assert!(
        evil.body
            .contains("origin `https://evil.example` is not allowed"),
        "{evil:?}"
    );
    // The allowed origin, written another way, and no origin at all, pass.
    for extra in [vec![("Origin", "HTTP://LOCALHOST:5173")], vec![]] {
        assert_eq!(stateless_list(&l.addr, &extra).len(), 3);
    }
    // A page that rebinds its own name to 127.0.0.1 sends its own Host.
    let stream = TcpStream::connect(&l.addr).unwrap();
    let body = list.to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: rebound.example:{}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\n\r\n{body}",
        l.addr.rsplit(':').next().unwrap(),
        body.len()
    );
    stream
        .try_clone()
        .unwrap()
        .write_all(request.as_bytes())
        .unwrap();
    let rebound = read_answer(stream);
    assert_eq!(rebound.status, 403, "{rebound:?}");
}

#[test]
fn idle_sessions_end_and_past_the_bound_the_longest_idle_ends_first() {
    let l = Listening::start(
        POLICY,
        TOOLS,
        &[],
        &["--session-idle", "0.6", "--max-sessions", "2"],
    );
    let mut first = Session::open(&l.addr);
    std::thread::sleep(Duration::from_millis(100));
    let mut second = Session::open(&l.addr);
    assert_eq!(first.list().len(), 3);
    // `second` is now the longest idle: a third session ends it.
    let mut third = Session::open(&l.addr);
    let ended = second.request("tools/list", json!({}));
    assert_eq!(ended.status, 404, "{ended:?}");
    assert_eq!(first.list().len(), 3);
    assert_eq!(third.list().len(), 3);
    // Kept busy past the idle time, `first` lives; `third` idles out.
    let until = Instant::now() + Duration::from_millis(1500);
    while Instant::now() < until {
        assert_eq!(first.list().len(), 3);
        std::thread::sleep(Duration::from_millis(150));
    }
    let idle = third.request("tools/list", json!({}));
    assert_eq!(idle.status, 404, "{idle:?}");
    // Its client starts a new session, as MCP says.
    assert_eq!(Session::open(&l.addr).list().len(), 3);
}

#[test]
fn an_unknown_session_is_404() {
    // Without a clients file every caller is the same unnamed caller: the
    // session's id is what a client holds. An unknown id is 404.
    let l = Listening::start(POLICY, TOOLS, &[], &[]);
    let mut s = Session::open(&l.addr);
    s.id = "not-a-session".into();
    assert_eq!(s.request("tools/list", json!({})).status, 404);
}

#[test]
fn a_body_over_the_message_limit_is_refused_with_413_before_it_is_read() {
    let l = Listening::start(POLICY, TOOLS, &[], &[]);
    // A declared length over 16 MiB: answered at once, no byte sent.
    let stream = TcpStream::connect(&l.addr).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n",
        l.addr,
        (16 << 20) + 1
    );
    stream
        .try_clone()
        .unwrap()
        .write_all(head.as_bytes())
        .unwrap();
    let started = Instant::now();
    let answer = read_answer(stream);
    assert_eq!(answer.status, 413, "{answer:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    // A body sent in chunks, with no length: cut off at the limit.
    let stream = TcpStream::connect(&l.addr).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n",
        l.addr
    );
    let mut writer = stream.try_clone().unwrap();
    writer.write_all(head.as_bytes()).unwrap();
    let chunk = format!("{:x}\r\n{}\r\n", 1 << 20, " ".repeat(1 << 20));
    for _ in 0..17 {
        // The gateway may answer and close before the last chunk.
        if writer.write_all(chunk.as_bytes()).is_err() {
            break;
        }
    }
    let _ = writer.write_all(b"0\r\n\r\n");
    let answer = read_answer(stream);
    assert_eq!(answer.status, 413, "{answer:?}");
    // And the gateway serves on.
    assert_eq!(stateless_list(&l.addr, &[]).len(), 3);
}

#[test]
fn concurrent_requests_past_the_bounds_get_429_per_caller_and_503_in_all() {
    for (flags, status) in [
        (
            ["--max-concurrent-per-caller", "1", "--max-concurrent", "8"],
            429,
        ),
        (
            ["--max-concurrent-per-caller", "8", "--max-concurrent", "1"],
            503,
        ),
    ] {
        let l = Listening::start(POLICY, TOOLS, &[("FIXTURE_SLOW_MS", "1500")], &flags);
        let addr = l.addr.clone();
        let slow = std::thread::spawn(move || {
            // The probes below may take the one share first: then again.
            let until = Instant::now() + DEADLINE;
            loop {
                let call = json!({"name": "call_tool", "arguments": {"name": "fx__slow"}});
                let answer = stateless(&addr, &[], "tools/call", call);
                if answer.status == 200 || Instant::now() > until {
                    return answer.result();
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        // Refused at once while the slow call runs, never queued.
        let until = Instant::now() + DEADLINE;
        let refused = loop {
            let answer = stateless(&l.addr, &[], "tools/list", json!({}));
            if answer.status != 200 {
                break answer;
            }
            assert!(Instant::now() < until, "never refused");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(refused.status, status, "{refused:?}");
        assert_eq!(refused.header("retry-after"), Some("1"), "{refused:?}");
        let r = slow.join().unwrap();
        assert!(!is_error(&r), "{r}");
        // Its share back, the next request is served.
        assert_eq!(stateless_list(&l.addr, &[]).len(), 3);
    }
}

#[test]
fn a_reload_reaches_open_sessions_and_requests_without_one() {
    let l = Listening::start(POLICY, TOOLS, &[], &[]);
    let mut s = Session::open(&l.addr);
    assert_eq!(s.list(), ["fx__echo", "tool_search", "call_tool"]);
    std::fs::write(
        l.dir.join("gateway.policy"),
        "guard fx__echo\nHide(fx__secret)\nHide(fx__pid)\nNoDefer(*)\n",
    )
    .unwrap();
    assert!(l.gw.wait_stderr("reloaded", 1), "{}", l.gw.stderr());
    // Nothing is deferred now: no search tool, no call-through tool.
    assert_eq!(s.list(), ["fx__echo", "fx__slow"]);
    let r = s.call("fx__pid", json!({}));
    assert!(is_error(&r), "{r}");
    let r = stateless_call(&l.addr, &[], "fx__pid", json!({}));
    assert!(is_error(&r), "{r}");
    assert_eq!(stateless_list(&l.addr, &[]), ["fx__echo", "fx__slow"]);
}

#[cfg(unix)]
#[test]
fn sigterm_ends_the_sessions_then_the_servers() {
    let mut l = Listening::start(POLICY, TOOLS, &[], &[]);
    let mut s = Session::open(&l.addr);
    let pid = text(&stateless_call(
        &l.addr,
        &[],
        "call_tool",
        json!({"name": "fx__pid"}),
    ));
    assert_eq!(s.list().len(), 3);
    l.gw.signal("TERM");
    assert_eq!(l.gw.wait_exit(), Some(0), "{}", l.gw.stderr());
    let err = l.gw.stderr();
    assert!(err.contains("note: SIGTERM: ended 1 sessions"), "{err}");
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the server outlived the gateway"
    );
}

#[test]
fn under_stateless_a_2025_client_is_served_without_a_session() {
    let l = Listening::start(POLICY, TOOLS, &[], &["--stateless"]);
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "suite", "version": "1"}}});
    let answer = send(&l.addr, "POST", &[], &init.to_string());
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(answer.header("mcp-session-id"), None, "{answer:?}");
    let old = [("MCP-Protocol-Version", "2025-11-25")];
    let post = |method: &str, params: Value| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        send(&l.addr, "POST", &old, &body.to_string()).result()
    };
    assert_eq!(
        names(&post("tools/list", json!({}))),
        ["fx__echo", "tool_search", "call_tool"]
    );
    let pid = post(
        "tools/call",
        json!({"name": "call_tool", "arguments": {"name": "fx__pid"}}),
    );
    assert!(!is_error(&pid), "{pid}");
    let secret = post(
        "tools/call",
        json!({"name": "call_tool", "arguments": {"name": "fx__secret"}}),
    );
    assert!(is_error(&secret), "{secret}");
}

/// A policy under which the flag `ops` shows `fx__pid`.
pub const OPS_POLICY: &str = "\
guard fx__echo
Hide(fx__secret)
Defer(*)
when !ops {
  Hide(fx__pid)
}
";

pub const ALICE: &str = "alice-token-0123456789";
pub const BOB: &str = "bob-token-0123456789abcd";

fn clients(alice_flags: &[&str], bob_flags: &[&str]) -> Value {
    json!({"clients": {
        "alice": {"token": "${ALICE_TOKEN}", "flags": alice_flags},
        "bob": {"token": "${BOB_TOKEN}", "flags": bob_flags}},
        "authorization_servers": ["https://id.example.com"]})
}

const TOKENS: &[(&str, &str)] = &[("ALICE_TOKEN", ALICE), ("BOB_TOKEN", BOB)];

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

#[test]
fn callers_named_by_their_tokens_are_served_their_own_contexts() {
    let audit = temp_dir("listen-audit");
    let log = audit.join("audit.jsonl");
    let l = Listening::with_clients(
        OPS_POLICY,
        &clients(&["ops"], &[]),
        TOKENS,
        &["--audit", log.to_str().unwrap()],
    );
    // No token, and a token the file does not know: 401, pointing to the
    // metadata, saying no more than whether a token was shown.
    let missing = stateless(&l.addr, &[], "tools/list", json!({}));
    assert_eq!(missing.status, 401, "{missing:?}");
    let challenge = missing.header("www-authenticate").unwrap().to_string();
    let metadata_url = format!("http://{}/.well-known/oauth-protected-resource/mcp", l.addr);
    assert_eq!(
        challenge,
        format!("Bearer resource_metadata=\"{metadata_url}\"")
    );
    let wrong = stateless(
        &l.addr,
        &[("Authorization", "Bearer nope-nope-nope-nope")],
        "tools/list",
        json!({}),
    );
    assert_eq!(wrong.status, 401, "{wrong:?}");
    assert_eq!(
        wrong.header("www-authenticate"),
        Some(format!("{challenge}, error=\"invalid_token\"").as_str())
    );
    assert_eq!(wrong.body, missing.body);
    // The metadata names the authorization server.
    let stream = TcpStream::connect(&l.addr).unwrap();
    let request = format!(
        "GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        l.addr
    );
    stream
        .try_clone()
        .unwrap()
        .write_all(request.as_bytes())
        .unwrap();
    let metadata: Value = serde_json::from_str(&read_answer(stream).body).unwrap();
    assert_eq!(
        metadata["authorization_servers"],
        json!(["https://id.example.com"])
    );
    assert_eq!(
        metadata["resource"],
        json!(format!("http://{}/mcp", l.addr))
    );

    // Alice has `ops`: `fx__pid` is hers; Bob's context hides it.
    let alice = bearer(ALICE);
    let bob = bearer(BOB);
    let as_alice = [("Authorization", alice.as_str())];
    let as_bob = [("Authorization", bob.as_str())];
    let pid = stateless_call(&l.addr, &as_alice, "call_tool", json!({"name": "fx__pid"}));
    assert!(!is_error(&pid), "{pid}");
    let refused = stateless_call(&l.addr, &as_bob, "call_tool", json!({"name": "fx__pid"}));
    assert!(is_error(&refused), "{refused}");
    let mut a = Session::open_with(&l.addr, &as_alice);
    let found = a.call("tool_search", json!({"query": "", "names": ["fx__pid"]}));
    assert!(text(&found).contains("fx__pid"), "{found}");
    let mut b = Session::open_with(&l.addr, &as_bob);
    let found = b.call("tool_search", json!({"query": "", "names": ["fx__pid"]}));
    assert!(text(&found).contains("Not available"), "{found}");
    // A session is its opener's alone.
    let mut stolen = Session {
        addr: l.addr.clone(),
        id: a.id.clone(),
        next: 10,
        extra: vec![("Authorization".into(), bob.clone())],
    };
    assert_eq!(stolen.request("tools/list", json!({})).status, 404);
    assert_eq!(a.list().len(), 3);
    // The audit log names the caller.
    drop(l);
    let written = std::fs::read_to_string(&log).unwrap();
    assert!(written.contains("\"caller\":\"alice\""), "{written}");
    assert!(written.contains("\"caller\":\"bob\""), "{written}");
}

#[test]
fn a_reload_of_the_clients_file_hides_a_tool_for_one_caller_only() {
    let l = Listening::with_clients(OPS_POLICY, &clients(&["ops"], &["ops"]), TOKENS, &[]);
    let alice = bearer(ALICE);
    let bob = bearer(BOB);
    let as_alice = [("Authorization", alice.as_str())];
    let as_bob = [("Authorization", bob.as_str())];
    let mut a = Session::open_with(&l.addr, &as_alice);
    let found = a.call("tool_search", json!({"query": "", "names": ["fx__pid"]}));
    assert!(text(&found).contains("fx__pid"), "{found}");
    assert!(!is_error(&a.call("call_tool", json!({"name": "fx__pid"}))));
    std::fs::write(
        l.dir.join("clients.json"),
        clients(&[], &["ops"]).to_string(),
    )
    .unwrap();
    assert!(l.gw.wait_stderr("reloaded", 1), "{}", l.gw.stderr());
    // Alice's open session and her requests without one lose it; Bob keeps it.
    let r = a.call("call_tool", json!({"name": "fx__pid"}));
    assert!(is_error(&r), "{r}");
    let r = stateless_call(&l.addr, &as_alice, "call_tool", json!({"name": "fx__pid"}));
    assert!(is_error(&r), "{r}");
    let r = stateless_call(&l.addr, &as_bob, "call_tool", json!({"name": "fx__pid"}));
    assert!(!is_error(&r), "{r}");
}

#[test]
fn a_policy_reload_that_cannot_serve_a_caller_keeps_the_last_good_policy() {
    let policy = "guard fx__echo\nHide(fx__secret)\nDefer(*)\nmode ops {\n  NoDefer(fx__pid)\n}\nmode view {\n  Defer(fx__pid)\n}\n";
    let c = json!({"clients": {
        "alice": {"token": "${ALICE_TOKEN}", "mode": "ops"},
        "bob": {"token": "${BOB_TOKEN}", "mode": "view"}}});
    let l = Listening::with_clients(policy, &c, TOKENS, &["--mode", "view"]);
    let alice = bearer(ALICE);
    let as_alice = [("Authorization", alice.as_str())];
    assert!(stateless_list(&l.addr, &as_alice).contains(&"fx__pid".to_string()));
    // Alice's mode goes away: the policy would serve the command line's
    // context, but not her, so it is not put in force.
    std::fs::write(
        l.dir.join("gateway.policy"),
        "guard fx__echo\nHide(fx__secret)\nDefer(*)\nmode view {\n  Hide(fx__pid)\n}\n",
    )
    .unwrap();
    assert!(
        l.gw.wait_stderr("keeping the last good policy", 1),
        "{}",
        l.gw.stderr()
    );
    let err = l.gw.stderr();
    assert!(err.contains("`clients.alice` in `"), "{err}");
    assert!(stateless_list(&l.addr, &as_alice).contains(&"fx__pid".to_string()));
    let r = stateless_call(&l.addr, &as_alice, "fx__pid", json!({}));
    assert!(!is_error(&r), "{r}");
}

#[test]
fn with_a_clients_file_the_gateway_may_listen_beyond_loopback() {
    let l = Listening::start_at(
        "0.0.0.0:0",
        OPS_POLICY,
        TOOLS,
        &[],
        &[],
        Some((&clients(&[], &[]), TOKENS)),
    );
    let alice = bearer(ALICE);
    assert_eq!(
        stateless_list(&l.addr, &[("Authorization", &alice)]).len(),
        3
    );
    assert_eq!(stateless(&l.addr, &[], "tools/list", json!({})).status, 401);
}

#[test]
fn a_client_the_policy_cannot_serve_is_refused_at_start() {
    let dir = temp_dir("listen-clients");
    let (p, s) = files(
        &dir,
        "mode ops {\n  Defer(*)\n}\n",
        &[("fx", fixture(TOOLS, &[]))],
    );
    let c = dir.join("clients.json");
    std::fs::write(
        &c,
        json!({"clients": {"ci": {"token_sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "mode": "nightly"}}}).to_string(),
    )
    .unwrap();
    let (code, _, err) = run_to_end(&file_args(
        &p,
        &s,
        &[
            "--mode",
            "ops",
            "--listen",
            "127.0.0.1:0",
            "--clients",
            c.to_str().unwrap(),
        ],
    ));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("`clients.ci` in `"), "{err}");
    assert!(err.contains("nightly"), "{err}");
    assert!(!err.contains("started with"), "no server starts: {err}");
}

/// A POST of a `tools/list` with this `Host`.
fn with_host(addr: &str, host: &str) -> Answer {
    let stream = TcpStream::connect(addr).unwrap();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream
        .try_clone()
        .unwrap()
        .write_all(request.as_bytes())
        .unwrap();
    read_answer(stream)
}

#[test]
fn behind_a_proxy_the_host_and_the_public_url_are_given() {
    // Without a clients file, a proxy's public name is answered once given.
    let l = Listening::start(POLICY, TOOLS, &[], &["--allow-host", "mcp.example.com"]);
    assert_eq!(with_host(&l.addr, "mcp.example.com").status, 200);
    assert_eq!(with_host(&l.addr, "other.example.com").status, 403);
    // With one, the challenge names the metadata where clients reach it.
    let l = Listening::with_clients(
        OPS_POLICY,
        &clients(&[], &[]),
        TOKENS,
        &["--public-url", "https://mcp.example.com/mcp"],
    );
    let refused = with_host(&l.addr, "internal:8080");
    assert_eq!(refused.status, 401, "{refused:?}");
    assert_eq!(
        refused.header("www-authenticate"),
        Some(
            "Bearer resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\""
        )
    );
}

#[test]
fn a_forwarded_call_is_cut_off_at_the_call_timeout() {
    let l = Listening::start("NoDefer(*)\n", "echo,hang", &[], &["--call-timeout", "0.5"]);
    let started = Instant::now();
    let r = stateless_call(&l.addr, &[], "fx__hang", json!({}));
    assert!(is_error(&r), "{r}");
    assert!(text(&r).contains("fx"), "{r}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let mut s = Session::open(&l.addr);
    assert!(is_error(&s.call("fx__hang", json!({}))));
    assert!(!is_error(&s.call("fx__echo", json!({"text": "on"}))));
}

/// Opens a session's `GET` event stream and reads its status line; the
/// stream stays open while the returned socket lives.
fn open_stream(addr: &str, session: &str) -> (TcpStream, u16) {
    let mut stream = TcpStream::connect(addr).unwrap();
    let request = format!(
        "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\
         Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).unwrap();
    stream.set_read_timeout(Some(DEADLINE)).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
        head.push(byte[0]);
    }
    let status = String::from_utf8_lossy(&head)
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (stream, status)
}

#[test]
fn open_streams_count_against_the_caller_s_streams_not_its_requests() {
    let l = Listening::start(POLICY, TOOLS, &[], &["--max-concurrent-per-caller", "1"]);
    let mut a = Session::open(&l.addr);
    let b = Session::open(&l.addr);
    let (_held, first) = open_stream(&l.addr, &a.id);
    assert_eq!(first, 200);
    let (_, second) = open_stream(&l.addr, &b.id);
    assert_eq!(second, 429);
    // Requests are served beside the open stream.
    assert_eq!(a.list().len(), 3);
}

#[test]
fn a_request_that_only_claims_to_be_a_stream_takes_a_request_s_share() {
    let l = Listening::start(
        "NoDefer(*)\n",
        TOOLS,
        &[("FIXTURE_SLOW_MS", "1500")],
        &["--max-concurrent-per-caller", "1"],
    );
    let a = Session::open(&l.addr);
    let (addr, id) = (l.addr.clone(), a.id.clone());
    let slow = std::thread::spawn(move || {
        let s = Session {
            addr,
            id,
            next: 50,
            extra: vec![],
        };
        let until = Instant::now() + DEADLINE;
        loop {
            let call = json!({"jsonrpc": "2.0", "id": 51, "method": "tools/call",
                "params": {"name": "fx__slow", "arguments": {}}});
            let answer = s.post(&call);
            if answer.status == 200 || Instant::now() > until {
                return answer.status;
            }
        }
    });
    // A 2025 request's `Mcp-Method` is nobody's check: claiming a stream
    // there, it still waits its turn with the requests.
    let headers = [
        ("Mcp-Method", "subscriptions/listen"),
        ("Mcp-Session-Id", a.id.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let list = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}).to_string();
    let until = Instant::now() + DEADLINE;
    let refused = loop {
        let answer = send(&l.addr, "POST", &headers, &list);
        if answer.status != 200 {
            break answer;
        }
        assert!(Instant::now() < until, "never refused");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(refused.status, 429, "{refused:?}");
    assert_eq!(slow.join().unwrap(), 200);
}

/// Reads `stream` until what it has read contains `needle` (true) or it
/// ends or the deadline passes (false); what was read is left in `seen`.
fn read_until(stream: &mut TcpStream, needle: &str, seen: &mut String) -> bool {
    let until = Instant::now() + DEADLINE;
    let mut buf = [0u8; 4096];
    while !seen.contains(needle) && Instant::now() < until {
        stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        match stream.read(&mut buf) {
            Ok(0) => return false,
            Ok(n) => seen.push_str(&String::from_utf8_lossy(&buf[..n])),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return false,
        }
    }
    seen.contains(needle)
}

/// A reload tells each session's client that its list changed: on its
/// `GET` stream when one is open, and, for a session without one, on the
/// first stream it opens afterwards (nothing is lost for want of a stream).
#[test]
fn a_reload_is_told_on_each_session_s_stream_even_one_opened_later() {
    let l = Listening::start(POLICY, TOOLS, &[], &[]);
    let mut a = Session::open(&l.addr);
    let mut b = Session::open(&l.addr);
    assert_eq!(a.list().len(), 3);
    assert_eq!(b.list().len(), 3);
    let (mut stream_a, status) = open_stream(&l.addr, &a.id);
    assert_eq!(status, 200);
    std::fs::write(l.dir.join("gateway.policy"), "NoDefer(*)\n").unwrap();
    assert!(l.gw.wait_stderr("reloaded", 1), "{}", l.gw.stderr());
    let mut seen = String::new();
    assert!(
        read_until(&mut stream_a, "notifications/tools/list_changed", &mut seen),
        "{seen:?}"
    );
    let (mut stream_b, status) = open_stream(&l.addr, &b.id);
    assert_eq!(status, 200);
    let mut seen = String::new();
    assert!(
        read_until(&mut stream_b, "notifications/tools/list_changed", &mut seen),
        "{seen:?}"
    );
    assert_eq!(b.list(), ["fx__echo", "fx__secret", "fx__pid", "fx__slow"]);
}

/// `DELETE` ends a session: its open stream closes, and a request in it
/// is 404 from then on.
#[test]
fn a_deleted_session_ends_its_stream_and_is_404() {
    let l = Listening::start(POLICY, TOOLS, &[], &[]);
    let mut s = Session::open(&l.addr);
    assert_eq!(s.list().len(), 3);
    let (mut stream, status) = open_stream(&l.addr, &s.id);
    assert_eq!(status, 200);
    let headers = [
        ("Mcp-Session-Id", s.id.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let deleted = send(&l.addr, "DELETE", &headers, "");
    assert_eq!(deleted.status, 204, "{deleted:?}");
    // The stream's last chunk comes, then the end.
    let mut seen = String::new();
    assert!(
        !read_until(&mut stream, "never sent", &mut seen),
        "{seen:?}"
    );
    assert!(seen.ends_with("0\r\n\r\n"), "{seen:?}");
    assert_eq!(s.request("tools/list", json!({})).status, 404);
}

/// A client that loses a request's stream before the answer comes opens it
/// again with the last event ID it saw, and gets the answer there.
#[test]
fn a_lost_request_stream_is_resumed_by_its_last_event_id() {
    let l = Listening::start("NoDefer(*)\n", TOOLS, &[("FIXTURE_SLOW_MS", "1500")], &[]);
    let s = Session::open(&l.addr);
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "fx__slow", "arguments": {}}})
    .to_string();
    let mut post = TcpStream::connect(&l.addr).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nMcp-Session-Id: {}\r\n\
         MCP-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\n\r\n{call}",
        l.addr,
        s.id,
        call.len()
    );
    post.write_all(head.as_bytes()).unwrap();
    // The stream opens with an event whose ID names it.
    let mut seen = String::new();
    assert!(read_until(&mut post, "retry:", &mut seen), "{seen:?}");
    let event = seen
        .lines()
        .find_map(|l| l.strip_prefix("id:"))
        .map(|id| id.trim().to_string())
        .unwrap_or_else(|| panic!("no event ID in {seen:?}"));
    assert!(!seen.contains("\"result\""), "{seen:?}");
    drop(post);
    let headers = [
        ("Mcp-Session-Id", s.id.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
        ("Accept", "text/event-stream"),
        ("Last-Event-ID", event.as_str()),
    ];
    let resumed = send(&l.addr, "GET", &headers, "");
    assert_eq!(resumed.status, 200, "{resumed:?}");
    let messages = resumed.messages();
    let answer = messages
        .iter()
        .find(|m| m["id"] == 7)
        .unwrap_or_else(|| panic!("no answer in {resumed:?}"));
    assert!(answer["result"]["isError"] != true, "{answer}");
}

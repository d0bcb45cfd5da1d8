//! Drives `policy gateway` as a child process over stdio with raw JSON-RPC
//! lines, in front of the MCP fixture server (`examples/mcp_fixture.rs`).
//! Every wait has a deadline, so no test can hang.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long any one wait may take.
pub const DEADLINE: Duration = Duration::from_secs(20);

pub fn policy_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_policy"))
}

/// The fixture server, built beside the binary by `cargo test`.
pub fn fixture_bin() -> PathBuf {
    let dir = policy_bin()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let bin = dir.join("examples").join(if cfg!(windows) {
        "mcp_fixture.exe"
    } else {
        "mcp_fixture"
    });
    assert!(
        bin.exists(),
        "{} is missing: `cargo test` builds it, or run `cargo build --example mcp_fixture`",
        bin.display()
    );
    bin
}

/// A fresh folder for one test's files, removed when dropped.
pub struct TempDir(PathBuf);

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn temp_dir(tag: &str) -> TempDir {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "toolpolicy-gateway-{}-{}-{tag}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    TempDir(dir)
}

/// Sends `signal` (`TERM`, `KILL`, ...) to process `pid`.
#[cfg(unix)]
pub fn kill(pid: &str, signal: &str) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), pid])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{signal} {pid}");
}

/// A gateway, under `NoDefer(*)`, in front of one fixture server `fx` with
/// these tools and extra environment.
pub fn one_fixture(tag: &str, tools: &str, env: &[(&str, &str)]) -> Gateway {
    let dir = temp_dir(tag);
    let (p, s) = files(&dir, "NoDefer(*)\n", &[("fx", fixture(tools, env))]);
    Gateway::connect_files(&p, &s, "2025-11-25").holding(dir)
}

/// A servers entry that runs the fixture with these tools and extra environment.
pub fn fixture(tools: &str, env: &[(&str, &str)]) -> Value {
    let mut e = serde_json::Map::new();
    e.insert("FIXTURE_TOOLS".into(), json!(tools));
    for (k, v) in env {
        e.insert((*k).into(), json!(v));
    }
    json!({"command": fixture_bin(), "env": e})
}

/// Writes the policy and the servers file into `dir`; returns their paths.
pub fn files(dir: &Path, policy: &str, servers: &[(&str, Value)]) -> (PathBuf, PathBuf) {
    let p = dir.join("gateway.policy");
    std::fs::write(&p, policy).unwrap();
    let mut m = String::from("{\"mcpServers\": {");
    for (i, (name, entry)) in servers.iter().enumerate() {
        if i > 0 {
            m.push(',');
        }
        m.push_str(&format!("{}: {entry}", json!(name)));
    }
    m.push_str("}}");
    let s = dir.join("servers.json");
    std::fs::write(&s, m).unwrap();
    (p, s)
}

/// A running gateway and a client's view of it.
pub struct Gateway {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Standard error read so far, and when it last grew.
    stderr: Arc<Mutex<(String, Instant)>>,
    /// While set, the gateway's standard error is not read, as by a client
    /// that pipes it and never reads it.
    stderr_paused: Arc<std::sync::atomic::AtomicBool>,
    /// Notifications received while waiting for responses.
    pub notifications: Vec<Value>,
    next_id: u64,
    /// The folder of the gateway's files, removed after the gateway ends.
    dir: Option<TempDir>,
}

impl Gateway {
    /// Starts `policy gateway` with these arguments (after `gateway`).
    pub fn spawn(args: &[&str]) -> Gateway {
        Gateway::spawn_env(args, &[])
    }

    /// [`Gateway::spawn`] with these variables added to its environment
    /// (see [`gateway_command`]).
    pub fn spawn_env(args: &[&str], env: &[(&str, &str)]) -> Gateway {
        Gateway::spawn_command(gateway_command(args, env))
    }

    /// Runs `cmd`, a gateway started some other way (through a shell).
    pub fn spawn_command(mut cmd: Command) -> Gateway {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, lines) = channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new((String::new(), Instant::now())));
        let sink = Arc::clone(&stderr);
        let stderr_paused = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let paused = Arc::clone(&stderr_paused);
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(err);
            let mut line = String::new();
            loop {
                while paused.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(10));
                }
                line.clear();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let mut s = sink.lock().unwrap();
                s.0.push_str(line.trim_end_matches('\n'));
                s.0.push('\n');
                s.1 = Instant::now();
            }
        });
        Gateway {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr,
            stderr_paused,
            notifications: Vec::new(),
            next_id: 1,
            dir: None,
        }
    }

    /// Keeps `dir` until the gateway has ended.
    pub fn holding(mut self, dir: TempDir) -> Gateway {
        self.dir = Some(dir);
        self
    }

    /// Starts the gateway and completes the `initialize` handshake at `version`.
    pub fn connect(args: &[&str], version: &str) -> Gateway {
        Gateway::connect_env(args, &[], version)
    }

    /// [`Gateway::connect`] with these variables added to its environment.
    pub fn connect_env(args: &[&str], env: &[(&str, &str)], version: &str) -> Gateway {
        Gateway::spawn_env(args, env).initialized(version)
    }

    /// Completes the `initialize` handshake at `version`.
    pub fn initialized(self, version: &str) -> Gateway {
        let mut g = self;
        let init = g.request(
            "initialize",
            json!({"protocolVersion": version, "capabilities": {},
                   "clientInfo": {"name": "suite", "version": "0"}}),
        );
        assert!(init.get("result").is_some(), "{init}\n{}", g.stderr());
        g.notify("notifications/initialized", json!({}));
        g
    }

    /// [`Gateway::connect`] with a policy and a servers file and nothing else.
    pub fn connect_files(policy: &Path, servers: &Path, version: &str) -> Gateway {
        Gateway::connect(&file_args(policy, servers, &[]), version)
    }

    pub fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The next message on standard output; every line must be JSON-RPC.
    pub fn next(&mut self, until: Instant) -> Option<Value> {
        let left = until.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(left) {
            Ok(line) => {
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {line}"));
                assert_eq!(v["jsonrpc"], "2.0", "{line}");
                Some(v)
            }
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => None,
        }
    }

    /// Sends a request and waits for its response (notifications are kept).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let until = Instant::now() + DEADLINE;
        while let Some(v) = self.next(until) {
            if v.get("id") == Some(&json!(id)) {
                return v;
            }
            self.notifications.push(v);
        }
        panic!(
            "no answer to `{method}` in time\nstderr:\n{}",
            self.stderr()
        );
    }

    /// The listed tools' names.
    pub fn list(&mut self) -> Vec<String> {
        let r = self.request("tools/list", json!({}));
        r["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{r}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// Calls a tool; returns the result object.
    pub fn call(&mut self, name: &str, arguments: Value) -> Value {
        let r = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        r.get("result")
            .cloned()
            .unwrap_or_else(|| panic!("`{name}` gave no result: {r}"))
    }

    /// Calls `name` until it answers without an error, for at most `within`
    /// (a server being restarted or reconnected); every error in between
    /// must name `server`. Returns the last result.
    pub fn call_until_answered(
        &mut self,
        name: &str,
        arguments: Value,
        server: &str,
        within: Duration,
    ) -> Value {
        let until = Instant::now() + within;
        loop {
            let r = self.call(name, arguments.clone());
            if !is_error(&r) || Instant::now() >= until {
                return r;
            }
            assert!(text(&r).contains(&format!("server `{server}`")), "{r}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until a `tools/list_changed` notification has arrived.
    pub fn wait_list_changed(&mut self, within: Duration) -> bool {
        let until = Instant::now() + within;
        loop {
            if let Some(i) = self
                .notifications
                .iter()
                .position(|n| n["method"] == "notifications/tools/list_changed")
            {
                self.notifications.remove(i);
                return true;
            }
            match self.next(until) {
                Some(v) => self.notifications.push(v),
                None => return false,
            }
        }
    }

    /// A tool's text answer read as a count (the fixture's `lists`,
    /// `connections`).
    pub fn call_count(&mut self, name: &str) -> usize {
        let r = self.call(name, json!({}));
        text(&r)
            .parse()
            .unwrap_or_else(|_| panic!("`{name}` did not answer a count: {r}"))
    }

    /// Sends `signal` (`TERM`, `INT`, `HUP`, ...) to the gateway.
    #[cfg(unix)]
    pub fn signal(&self, signal: &str) {
        kill(&self.child.id().to_string(), signal);
    }

    /// The gateway's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        Some(self.child.id())
    }

    /// Standard error as read so far, once it has been quiet for 100 ms
    /// since this call (at most a second): the gateway writes it from a
    /// thread of its own, so a line may reach it just after the answer that
    /// followed it.
    pub fn stderr(&self) -> String {
        let asked = Instant::now();
        let quiet = Duration::from_millis(100);
        loop {
            let (text, grew) = self.stderr.lock().unwrap().clone();
            if grew.max(asked).elapsed() >= quiet || asked.elapsed() >= Duration::from_secs(1) {
                return text;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits until standard error contains `text` `times` times.
    pub fn wait_stderr(&self, text: &str, times: usize) -> bool {
        let until = Instant::now() + DEADLINE;
        while Instant::now() < until {
            if self.stderr.lock().unwrap().0.matches(text).count() >= times {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Closes standard input and waits for the exit code.
    pub fn finish(&mut self) -> Option<i32> {
        self.close_input();
        self.wait_exit()
    }

    /// Stops or resumes reading the gateway's standard error.
    pub fn pause_stderr(&self, paused: bool) {
        self.stderr_paused.store(paused, Ordering::Relaxed);
    }

    /// Closes standard input, as a client that goes does.
    pub fn close_input(&mut self) {
        drop(self.stdin.take());
    }

    /// Waits, bounded, for the exit code.
    pub fn wait_exit(&mut self) -> Option<i32> {
        let until = Instant::now() + DEADLINE;
        while Instant::now() < until {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        drop(self.dir.take());
    }
}

/// The gateway's arguments for a policy and a servers file, then `extra`.
pub fn file_args<'a>(policy: &'a Path, servers: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "--policy",
        policy.to_str().unwrap(),
        "--servers",
        servers.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args
}

/// The text of a tool result's first content block.
pub fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

pub fn is_error(result: &Value) -> bool {
    result["isError"] == json!(true)
}

/// `policy gateway ARGS` with these variables added to its environment.
/// The TLS roots are the system's unless `env` sets `SSL_CERT_FILE` or
/// `SSL_CERT_DIR`: the ones of the shell running the tests are not passed on.
pub fn gateway_command(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(policy_bin());
    cmd.arg("gateway")
        .args(args)
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR")
        .envs(env.iter().copied());
    cmd
}

/// Runs `policy gateway` to its end with these arguments and no client;
/// returns exit code, stdout and stderr, within the deadline.
pub fn run_to_end(args: &[&str]) -> (Option<i32>, String, String) {
    run_to_end_env(args, &[])
}

/// [`run_to_end`] with these variables added to the gateway's environment.
pub fn run_to_end_env(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    command_to_end(gateway_command(args, env))
}

/// `policy ARGS` (any subcommand) run to its end with no input; returns
/// exit code, stdout and stderr, within the deadline.
pub fn policy_to_end(args: &[&str]) -> (Option<i32>, String, String) {
    let mut cmd = Command::new(policy_bin());
    cmd.args(args);
    command_to_end(cmd)
}

/// A command run to its end with no input; returns exit code, stdout and
/// stderr, within the deadline (past it, the command is killed and the test
/// fails naming it).
pub fn command_to_end(mut cmd: Command) -> (Option<i32>, String, String) {
    let program = std::path::Path::new(cmd.get_program())
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let args: Vec<String> = cmd
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + DEADLINE;
    while Instant::now() < until {
        if let Ok(Some(_)) = child.try_wait() {
            let out = child.wait_with_output().unwrap();
            return (
                out.status.code(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("`{program} {}` did not end in time", args.join(" "));
}

/// The fixture serving streamable HTTP (`FIXTURE_HTTP=1`), or HTTPS when
/// `env` gives it a certificate; killed when dropped.
pub struct HttpFixture {
    pub child: Child,
    pub url: String,
}

impl HttpFixture {
    /// Starts it with these tools and extra environment, and waits for its URL.
    pub fn start(tools: &str, env: &[(&str, &str)]) -> HttpFixture {
        let mut child = Command::new(fixture_bin())
            .env("FIXTURE_HTTP", "1")
            .env("FIXTURE_TOOLS", tools)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(DEADLINE).unwrap_or_default();
        let url = line.trim().to_string();
        if !url.starts_with("http://127.0.0.1:") && !url.starts_with("https://127.0.0.1:") {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the HTTP fixture did not print its URL: {line:?}");
        }
        HttpFixture { child, url }
    }

    pub fn port(&self) -> String {
        let rest = self.url.split_once("127.0.0.1:").map(|(_, r)| r);
        rest.and_then(|r| r.split('/').next())
            .unwrap_or_default()
            .to_string()
    }

    /// Waits until the process has ended (after a `crash` call).
    pub fn wait_gone(&mut self) -> bool {
        let until = Instant::now() + DEADLINE;
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

impl Drop for HttpFixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The fixture server `web` behind the gateway (tools `echo`, `slow`, under a
/// policy that declares `echo` and defers `slow`) answers a direct call, a
/// search, and a call through `call_tool`.
pub fn assert_web_echoes_and_calls_through(g: &mut Gateway) {
    assert_eq!(
        text(&g.call("web__echo", json!({"text": "hi"}))),
        "echo: {\"text\":\"hi\"}"
    );
    let r = g.call("tool_search", json!({"query": "slow"}));
    assert!(text(&r).contains("`web__slow`"), "{r}");
    let r = g.call(
        "call_tool",
        json!({"name": "web__slow", "arguments": {"text": "x"}}),
    );
    assert!(!is_error(&r), "{r}");
    assert_eq!(text(&r), "slow: {\"text\":\"x\"}");
}

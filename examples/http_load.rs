//! A load driver for MCP's streamable HTTP transport (docs/performance.md,
//! "Many clients over HTTP"): N clients at once, each on its own keep-alive
//! connection, each making M `tools/call` requests of one tool, and the
//! throughput and latency of the answers. `tests/e2e/load.py` runs it
//! against the fixture served over HTTP directly and through `policy gateway
//! --listen`; the load-balancer test runs it through HAProxy in front of
//! several gateway processes.
//!
//! ```text
//! http_load --url http://127.0.0.1:PORT/mcp --tool NAME
//!           [--clients 100] [--calls 100] [--rate CALLS_PER_S]
//!           [--era 2026-07-28|2025-11-25] [--token T]...
//!           [--warmup 5] [--request-timeout 30] [--timeout 300] [--json]
//! ```
//!
//! Both protocol eras: `2026-07-28` (the default) sends every call without a
//! session, its protocol version in the request's `_meta`; `2025-11-25`
//! opens a session per client with the `initialize` handshake (the
//! `Mcp-Session-Id` the answer names, then `notifications/initialized`) and
//! sends every call in it. A session the server no longer knows (404) is a
//! failed call, and the client opens a new one for its next call. With
//! `--token`, client `i` sends the `i mod k`-th of the `k` tokens given as
//! its bearer credential.
//!
//! Without `--rate`, each client sends its next request as soon as the last
//! is answered (a closed loop: with more clients than cores, a call's
//! latency is mostly its wait behind the others'). With `--rate R`, the
//! calls are spread evenly over time at R a second in all, client `i`'s
//! `k`-th at `(k * N + i) / R` seconds from the start; below the server's
//! capacity, a call's latency is then what serving it costs, not the length
//! of a queue. The time a call waits past its slot, because its client was
//! still waiting for the call before, is reported as lag.
//!
//! One current-thread runtime drives every client, so the driver takes one
//! core at most and little of it. Only loopback addresses are served: any
//! other host is refused. Every request is bounded by `--request-timeout`
//! and the whole run by `--timeout`. Every answer is checked (status 200, the
//! request's id, no error, the echoed text); the exit status is 0 when all
//! were answered well, 1 otherwise, 2 for a bad command line.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1::SendRequest;
use serde_json::{Value, json};
use tokio::time::Instant;

const USAGE: &str = "\
usage: http_load --url http://127.0.0.1:PORT/mcp --tool NAME [--clients N] [--calls M]
                 [--rate CALLS_PER_S] [--era 2026-07-28|2025-11-25] [--token T]...
                 [--warmup K] [--request-timeout S] [--timeout S] [--json]";

/// The revision without sessions, and the last one with them.
const STATELESS: &str = "2026-07-28";
const SESSIONS: &str = "2025-11-25";

/// Errors kept word for word; past these, only counted.
const KEPT_ERRORS: usize = 5;

/// What the command line asks for.
#[derive(Debug)]
struct Options {
    url: String,
    addr: SocketAddr,
    /// `Host` header: the URL's authority.
    host: String,
    path: String,
    tool: String,
    clients: usize,
    calls: usize,
    rate: Option<f64>,
    /// The protocol revision the clients speak.
    era: &'static str,
    /// Bearer tokens, handed to the clients in turn.
    tokens: Vec<String>,
    warmup: usize,
    request_timeout: Duration,
    timeout: Duration,
    json: bool,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = match parse(&args) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("http_load: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("http_load: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let report = runtime.block_on(run(&options));
    if options.json {
        println!("{}", report.to_json(&options));
    } else {
        report.print(&options);
    }
    if report.complete() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Reads the command line; every error says which option and why.
fn parse(args: &[String]) -> Result<Options, String> {
    let mut url = None;
    let mut tool = None;
    let mut clients = 100;
    let mut calls = 100;
    let mut rate = None;
    let mut warmup = 5;
    let mut request_timeout = 30.0;
    let mut timeout = 300.0;
    let mut json = false;
    let mut era = STATELESS;
    let mut tokens = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let mut value = |name: &str| {
            rest.next()
                .cloned()
                .ok_or_else(|| format!("`{name}` needs a value"))
        };
        match arg.as_str() {
            "--url" => url = Some(value("--url")?),
            "--tool" => tool = Some(value("--tool")?),
            "--clients" => clients = number("--clients", &value("--clients")?, 1, 1000)?,
            "--calls" => calls = number("--calls", &value("--calls")?, 1, 100_000)?,
            "--warmup" => warmup = number("--warmup", &value("--warmup")?, 0, 1000)?,
            "--rate" => rate = Some(seconds("--rate", &value("--rate")?, 0.1, 1e6)?),
            "--request-timeout" => {
                request_timeout = seconds(
                    "--request-timeout",
                    &value("--request-timeout")?,
                    0.001,
                    600.0,
                )?
            }
            "--timeout" => timeout = seconds("--timeout", &value("--timeout")?, 0.001, 3600.0)?,
            "--json" => json = true,
            "--era" => {
                era = match value("--era")?.as_str() {
                    STATELESS => STATELESS,
                    SESSIONS => SESSIONS,
                    other => {
                        return Err(format!(
                            "`--era` is `{STATELESS}` (requests without a session) or \
                             `{SESSIONS}` (a session per client), not `{other}`"
                        ));
                    }
                }
            }
            "--token" => {
                let token = value("--token")?;
                if token.is_empty() || token.bytes().any(|b| !b.is_ascii_graphic()) {
                    return Err(
                        "`--token` must be visible ASCII characters with no space".to_string()
                    );
                }
                tokens.push(token);
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    let url = url.ok_or("`--url` is required")?;
    let tool = tool.ok_or("`--tool` is required")?;
    let (addr, host, path) = loopback_url(&url)?;
    if let Some(rate) = rate {
        let needed = (clients * calls) as f64 / rate;
        if needed > timeout {
            return Err(format!(
                "{clients} clients × {calls} calls at {rate} a second take {needed:.0} s, \
                 more than `--timeout` {timeout} s"
            ));
        }
    }
    Ok(Options {
        url,
        addr,
        host,
        path,
        tool,
        clients,
        calls,
        rate,
        era,
        tokens,
        warmup,
        request_timeout: Duration::from_secs_f64(request_timeout),
        timeout: Duration::from_secs_f64(timeout),
        json,
    })
}

fn number(name: &str, text: &str, low: usize, high: usize) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if (low..=high).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{name}` must be a whole number from {low} to {high}, not `{text}`"
        )),
    }
}

fn seconds(name: &str, text: &str, low: f64, high: f64) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() && (low..=high).contains(&x) => Ok(x),
        _ => Err(format!(
            "`{name}` must be a number from {low} to {high}, not `{text}`"
        )),
    }
}

/// The address, `Host` value and path of an `http://` URL on a loopback
/// address (`127.0.0.0/8`, `::1` or `localhost`); anything else refused.
fn loopback_url(url: &str) -> Result<(SocketAddr, String, String), String> {
    let uri: hyper::Uri = url
        .parse()
        .map_err(|e| format!("`{url}` is not a URL: {e}"))?;
    if uri.scheme_str() != Some("http") {
        return Err(format!(
            "`{url}`: only plain `http://` URLs on loopback are driven"
        ));
    }
    let authority = uri
        .authority()
        .ok_or_else(|| format!("`{url}` has no host"))?;
    let name = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let ip = if name.eq_ignore_ascii_case("localhost") {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    } else {
        name.parse::<IpAddr>()
            .map_err(|_| format!("`{url}`: the host must be a loopback address, not `{name}`"))?
    };
    if !ip.is_loopback() {
        return Err(format!(
            "`{url}`: `{ip}` is not a loopback address; this driver only loads this machine"
        ));
    }
    let port = authority
        .port_u16()
        .ok_or_else(|| format!("`{url}` has no port"))?;
    let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    Ok((
        SocketAddr::new(ip, port),
        authority.as_str().to_string(),
        path,
    ))
}

/// What the clients saw.
#[derive(Default)]
struct Tally {
    /// Latency of each answered call, in µs.
    latencies: Vec<u64>,
    /// How long each paced call was sent past its slot, in µs.
    lags: Vec<u64>,
    failed: usize,
    errors: Vec<String>,
    /// Sessions opened (`2025-11-25`), the first of each client's included.
    sessions_opened: usize,
    /// The measured phase: from its start to the last answer.
    wall: Duration,
    /// Set when the run hit `--timeout`.
    cut_off: bool,
}

impl Tally {
    fn fail(&mut self, error: String) {
        self.failed += 1;
        if self.errors.len() < KEPT_ERRORS {
            self.errors.push(error);
        }
    }
}

struct Report {
    tally: Tally,
    expected: usize,
}

impl Report {
    fn complete(&self) -> bool {
        !self.tally.cut_off && self.tally.failed == 0 && self.tally.latencies.len() == self.expected
    }

    fn throughput(&self) -> f64 {
        let secs = self.tally.wall.as_secs_f64();
        if secs > 0.0 {
            self.tally.latencies.len() as f64 / secs
        } else {
            0.0
        }
    }

    fn to_json(&self, options: &Options) -> Value {
        let t = &self.tally;
        let ms = |us: Option<u64>| us.map(|us| us as f64 / 1000.0);
        json!({
            "url": options.url,
            "tool": options.tool,
            "clients": options.clients,
            "calls": options.calls,
            "rate": options.rate,
            "era": options.era,
            "sessions_opened": t.sessions_opened,
            "answered": t.latencies.len(),
            "failed": t.failed,
            "errors": t.errors,
            "cut_off": t.cut_off,
            "wall_s": t.wall.as_secs_f64(),
            "throughput": self.throughput(),
            "p50_ms": ms(percentile(&t.latencies, 50.0)),
            "p90_ms": ms(percentile(&t.latencies, 90.0)),
            "p99_ms": ms(percentile(&t.latencies, 99.0)),
            "max_ms": ms(percentile(&t.latencies, 100.0)),
            "lag_p50_ms": ms(percentile(&t.lags, 50.0)),
            "lag_p99_ms": ms(percentile(&t.lags, 99.0)),
        })
    }

    fn print(&self, options: &Options) {
        let t = &self.tally;
        let how = match options.rate {
            Some(rate) => format!("paced at {rate} calls/s"),
            None => "closed loop".to_string(),
        };
        println!(
            "{} clients × {} calls of `{}` at {} ({how}, {})",
            options.clients,
            options.calls,
            options.tool,
            options.url,
            if options.era == SESSIONS {
                format!("{SESSIONS}: {} sessions opened", t.sessions_opened)
            } else {
                format!("{STATELESS}: no session")
            }
        );
        println!(
            "  {} answered, {} failed in {:.2} s: {:.0} calls/s",
            t.latencies.len(),
            t.failed,
            t.wall.as_secs_f64(),
            self.throughput()
        );
        let ms = |p: f64| percentile(&t.latencies, p).map(|us| us as f64 / 1000.0);
        if let (Some(p50), Some(p90), Some(p99)) = (ms(50.0), ms(90.0), ms(99.0)) {
            println!(
                "  latency p50 {p50:.2} ms, p90 {p90:.2} ms, p99 {p99:.2} ms, max {:.2} ms",
                ms(100.0).unwrap_or(p99)
            );
        } else {
            println!("  no call was answered");
        }
        if options.rate.is_some() {
            let lag = |p: f64| percentile(&t.lags, p).map(|us| us as f64 / 1000.0);
            if let (Some(p50), Some(p99)) = (lag(50.0), lag(99.0)) {
                println!("  sent past their slot: p50 {p50:.2} ms, p99 {p99:.2} ms");
            }
        }
        if t.cut_off {
            println!(
                "  the run did not end within {} s",
                options.timeout.as_secs_f64()
            );
        }
        for error in &t.errors {
            println!("  error: {error}");
        }
    }
}

/// The value at or above `p` percent of `values` (nearest rank).
fn percentile(values: &[u64], p: f64) -> Option<u64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// Connects every client, warms each up, then runs the measured calls.
async fn run(options: &Options) -> Report {
    let tally = Arc::new(Mutex::new(Tally::default()));
    let barrier = Arc::new(tokio::sync::Barrier::new(options.clients + 1));
    let shared = Arc::new(Shared {
        addr: options.addr,
        host: options.host.clone(),
        path: options.path.clone(),
        tool: options.tool.clone(),
        era: options.era,
        tokens: options.tokens.clone(),
        request_timeout: options.request_timeout,
        tally: Arc::clone(&tally),
    });
    let mut tasks = tokio::task::JoinSet::new();
    // The measured phase's start, sent once every client has warmed up.
    let (begin, start) = tokio::sync::watch::channel(None::<Instant>);
    for i in 0..options.clients {
        let shared = Arc::clone(&shared);
        let tally = Arc::clone(&tally);
        let barrier = Arc::clone(&barrier);
        let mut start = start.clone();
        let (calls, warmup, rate, clients) =
            (options.calls, options.warmup, options.rate, options.clients);
        tasks.spawn(async move {
            let mut client = Client::new(shared, i);
            for n in 0..warmup {
                // Warm-up errors count as failures too: a run that cannot
                // warm up measures nothing worth reading.
                if let Err(e) = client.call(n).await {
                    lock(&tally).fail(e);
                }
            }
            barrier.wait().await;
            let Ok(start) = start.wait_for(Option::is_some).await.map(|s| *s) else {
                return;
            };
            let Some(start) = start else {
                return;
            };
            for k in 0..calls {
                let mut lag = None;
                if let Some(rate) = rate {
                    let slot = start + Duration::from_secs_f64((k * clients + i) as f64 / rate);
                    tokio::time::sleep_until(slot).await;
                    lag = Some(Instant::now().saturating_duration_since(slot));
                }
                let sent = Instant::now();
                let outcome = client.call(warmup + k).await;
                let took = sent.elapsed();
                let mut tally = lock(&tally);
                match outcome {
                    Ok(()) => {
                        tally.latencies.push(took.as_micros() as u64);
                        if let Some(lag) = lag {
                            tally.lags.push(lag.as_micros() as u64);
                        }
                    }
                    Err(e) => tally.fail(e),
                }
            }
        });
    }
    let expected = options.clients * options.calls;
    let deadline = Instant::now() + options.timeout;
    // Every client connected and warmed up (or the run is cut off).
    let warmed = tokio::time::timeout_at(deadline, barrier.wait())
        .await
        .is_ok();
    let begun = Instant::now();
    let _ = begin.send(Some(begun));
    let ended = warmed
        && tokio::time::timeout_at(deadline, async {
            while tasks.join_next().await.is_some() {}
        })
        .await
        .is_ok();
    tasks.abort_all();
    let mut tally = std::mem::take(&mut *lock(&tally));
    tally.wall = begun.elapsed();
    tally.cut_off = !ended;
    Report { tally, expected }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What every client shares.
struct Shared {
    addr: SocketAddr,
    host: String,
    path: String,
    tool: String,
    era: &'static str,
    tokens: Vec<String>,
    request_timeout: Duration,
    /// Where the clients count the sessions they open.
    tally: Arc<Mutex<Tally>>,
}

/// One client: its own keep-alive connection, opened again after a failure,
/// and (`2025-11-25`) its session, opened again after a 404.
struct Client {
    shared: Arc<Shared>,
    index: usize,
    sender: Option<SendRequest<Full<Bytes>>>,
    session: Option<String>,
}

/// An answer's status, whether its body is JSON, its session header and
/// its body.
struct Exchanged {
    status: hyper::StatusCode,
    json_body: bool,
    session: Option<String>,
    body: String,
}

impl Client {
    fn new(shared: Arc<Shared>, index: usize) -> Client {
        Client {
            shared,
            index,
            sender: None,
            session: None,
        }
    }

    /// Call `n` of this client, within the request timeout; on a failure the
    /// connection is dropped, so the next call opens a fresh one.
    async fn call(&mut self, n: usize) -> Result<(), String> {
        let limit = self.shared.request_timeout;
        let outcome = match tokio::time::timeout(limit, self.exchange(n)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(format!(
                "call {n} of client {}: no answer within {} s",
                self.index,
                limit.as_secs_f64()
            )),
        };
        if outcome.is_err() {
            self.sender = None;
        }
        outcome
    }

    async fn exchange(&mut self, n: usize) -> Result<(), String> {
        let who = format!("call {n} of client {}", self.index);
        if self.shared.era == SESSIONS && self.session.is_none() {
            self.open_session(&who).await?;
        }
        let text = format!("c{}-{n}", self.index);
        let mut params = json!({
            "name": self.shared.tool,
            "arguments": {"text": text},
        });
        if self.shared.era == STATELESS {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": STATELESS,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "http_load", "version": "1"},
            });
        }
        let body = json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params});
        let answer = self.post(&who, &body, Some("tools/call")).await?;
        if answer.status == hyper::StatusCode::NOT_FOUND && self.session.is_some() {
            // The server no longer knows the session: the next call opens
            // a new one, and this one failed.
            self.session = None;
            return Err(format!(
                "{who}: status 404, the session is gone: {}",
                clip(&answer.body)
            ));
        }
        if answer.status != hyper::StatusCode::OK {
            return Err(format!(
                "{who}: status {}: {}",
                answer.status,
                clip(&answer.body)
            ));
        }
        let reply = answer_of(&answer.body, answer.json_body)
            .ok_or_else(|| format!("{who}: no JSON-RPC answer in `{}`", clip(&answer.body)))?;
        check(&reply, n, &text).map_err(|e| format!("{who}: {e}"))
    }

    /// The `2025-11-25` handshake: `initialize`, the session its answer
    /// names, then `notifications/initialized` in that session.
    async fn open_session(&mut self, who: &str) -> Result<(), String> {
        let initialize = json!({
            "jsonrpc": "2.0",
            "id": "init",
            "method": "initialize",
            "params": {
                "protocolVersion": SESSIONS,
                "capabilities": {},
                "clientInfo": {"name": "http_load", "version": "1"},
            },
        });
        let answer = self.post(who, &initialize, Some("initialize")).await?;
        if answer.status != hyper::StatusCode::OK {
            return Err(format!(
                "{who}: initialize: status {}: {}",
                answer.status,
                clip(&answer.body)
            ));
        }
        let reply = answer_of(&answer.body, answer.json_body)
            .filter(|r| r.get("result").is_some())
            .ok_or_else(|| format!("{who}: initialize: no result in `{}`", clip(&answer.body)))?;
        let version = reply["result"]["protocolVersion"].as_str().unwrap_or("");
        if version != SESSIONS {
            return Err(format!(
                "{who}: initialize: the server answered protocol `{version}`, not `{SESSIONS}`"
            ));
        }
        let session = answer
            .session
            .ok_or_else(|| format!("{who}: initialize: no `Mcp-Session-Id` in the answer"))?;
        self.session = Some(session);
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let answer = self
            .post(who, &initialized, Some("notifications/initialized"))
            .await?;
        if !answer.status.is_success() {
            self.session = None;
            return Err(format!(
                "{who}: notifications/initialized: status {}: {}",
                answer.status,
                clip(&answer.body)
            ));
        }
        lock(&self.shared.tally).sessions_opened += 1;
        Ok(())
    }

    /// One JSON-RPC message posted on this client's connection (opened
    /// first if it has none), with its session and credential.
    async fn post(
        &mut self,
        who: &str,
        message: &Value,
        method: Option<&str>,
    ) -> Result<Exchanged, String> {
        let sender = match &mut self.sender {
            Some(sender) => sender,
            None => {
                let stream = tokio::net::TcpStream::connect(self.shared.addr)
                    .await
                    .map_err(|e| format!("{who}: cannot connect to {}: {e}", self.shared.addr))?;
                let _ = stream.set_nodelay(true);
                let (sender, connection) =
                    hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                        .await
                        .map_err(|e| format!("{who}: {e}"))?;
                tokio::spawn(connection);
                self.sender.insert(sender)
            }
        };
        sender.ready().await.map_err(|e| format!("{who}: {e}"))?;
        let version = if self.shared.era == SESSIONS {
            SESSIONS
        } else {
            STATELESS
        };
        let mut request = hyper::Request::post(self.shared.path.as_str())
            .header(hyper::header::HOST, self.shared.host.as_str())
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::ACCEPT, "application/json, text/event-stream")
            .header("mcp-protocol-version", version);
        if self.shared.era == STATELESS {
            if let Some(method) = method {
                request = request.header("mcp-method", method);
            }
            if message["method"] == "tools/call" {
                request = request.header("mcp-name", self.shared.tool.as_str());
            }
        }
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session.as_str());
        }
        let tokens = &self.shared.tokens;
        if !tokens.is_empty() {
            let token = &tokens[self.index % tokens.len()];
            request = request.header(hyper::header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let request = request
            .body(Full::new(Bytes::from(message.to_string())))
            .map_err(|e| format!("{who}: {e}"))?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| format!("{who}: {e}"))?;
        let status = response.status();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let json_body = header("content-type").is_some_and(|v| v.starts_with("application/json"));
        let session = header("mcp-session-id");
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("{who}: reading the answer: {e}"))?
            .to_bytes();
        Ok(Exchanged {
            status,
            json_body,
            session,
            body: String::from_utf8_lossy(&bytes).into_owned(),
        })
    }
}

/// The JSON-RPC answer of a JSON body or of an event stream's `data:` lines.
fn answer_of(body: &str, json_body: bool) -> Option<Value> {
    if json_body {
        return serde_json::from_str(body).ok();
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|m| m.get("result").is_some() || m.get("error").is_some())
}

/// An answer to request `id` that succeeded and echoes `text`.
fn check(answer: &Value, id: usize, text: &str) -> Result<(), String> {
    if answer.get("id").and_then(Value::as_u64) != Some(id as u64) {
        return Err(format!(
            "answer to another request: {}",
            clip(&answer.to_string())
        ));
    }
    if let Some(error) = answer.get("error") {
        return Err(format!("error {}", clip(&error.to_string())));
    }
    let result = answer.get("result").ok_or("no result")?;
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return Err(format!("tool error {}", clip(&result.to_string())));
    }
    if !result.to_string().contains(text) {
        return Err(format!(
            "the answer does not echo `{text}`: {}",
            clip(&result.to_string())
        ));
    }
    Ok(())
}

fn clip(text: &str) -> String {
    let mut end = text.len().min(300);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

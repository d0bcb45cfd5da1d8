//! One child MCP server, reached with rmcp's client side: a local process
//! over standard input/output (its standard error copied to ours line by
//! line with a `[NAME] ` prefix) or a remote server over streamable HTTP.
//! Either is restarted (reconnected) on demand with capped exponential
//! back-off after it fails to start or goes away. Every failure becomes a message that
//! names the server; nothing here panics or prints to standard output.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock,
    Implementation, JsonObject, PaginatedRequestParams, ProtocolVersion,
};
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, ClientServiceExt, NotificationContext, Peer,
    RunningService,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, StreamableHttpError,
};
use rmcp::{ClientHandler, RoleClient, ServiceError};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::sync::{Mutex, mpsc};
use tokio::time::Instant;

use super::servers::{ServerSpec, Transport};
use super::stdio::ChildProcess;

/// The configuration of MCP's streamable HTTP transport toward `url`, each
/// request carrying `headers` (checked when the servers file was read).
fn http_config(url: &str, headers: &[(String, String)]) -> StreamableHttpClientTransportConfig {
    let headers = headers
        .iter()
        .filter_map(|(k, v)| {
            Some((
                http::HeaderName::from_bytes(k.as_bytes()).ok()?,
                http::HeaderValue::from_str(v).ok()?,
            ))
        })
        .collect::<HashMap<_, _>>();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
    config.retry_config = Arc::new(sse_retry());
    // A server that no longer knows our session (it restarted, perhaps
    // with other tools) is reconnected by the gateway, which then lists its
    // tools again; the transport's own re-initialisation would keep the old
    // list. See `Child::call`.
    config.reinit_on_expired_session = false;
    config
}

/// How often a dropped event stream is resumed before the call on it fails:
/// a server that has gone is then restarted through the gateway's own
/// back-off, and the call answers at once rather than at its timeout (the
/// transport's default resumes for ever).
fn sse_retry() -> ExponentialBackoff {
    let mut retry = ExponentialBackoff::default();
    retry.max_times = Some(2);
    retry.base_duration = Duration::from_millis(250);
    retry.max_delay = Some(Duration::from_secs(1));
    retry
}

/// How long the HTTP client keeps an idle connection to a remote server:
/// under the 5 s after which Node's and uvicorn's HTTP servers (those of
/// MCP's TypeScript and Python SDKs) close one, so that a request never
/// goes out on a connection the server is closing.
pub const HTTP_IDLE: Duration = Duration::from_secs(4);

/// The HTTP client of one remote server: rmcp's redirect rule (same-origin
/// 307/308 only), built here so that a failure to set up TLS is an error
/// naming the server rather than a panic in rmcp, and keeping idle
/// connections for [`HTTP_IDLE`] (rmcp's own client keeps none, so every
/// call would open TCP and, for `https`, a TLS session: two network round
/// trips more per call). TLS roots (the system's, or those `SSL_CERT_FILE`
/// / `SSL_CERT_DIR` name) are loaded for `https` URLs only: an `http`
/// server does not depend on them (redirects keep the origin).
fn http_client(url: &str) -> Result<reqwest::Client, String> {
    install_crypto_provider();
    let mut builder = reqwest::Client::builder()
        .pool_idle_timeout(HTTP_IDLE)
        .redirect(same_origin_redirects());
    if !url.starts_with("https:") {
        builder = builder.tls_certs_only([]);
    }
    builder.build().map_err(|e| {
        let mut cause: &dyn std::error::Error = &e;
        while let Some(c) = cause.source() {
            cause = c;
        }
        let set = ["SSL_CERT_FILE", "SSL_CERT_DIR"]
            .iter()
            .filter_map(|k| Some(format!("`{k}` is `{}`", std::env::var(k).ok()?)))
            .collect::<Vec<_>>();
        let roots = if set.is_empty() {
            "the system's certificate authorities".to_string()
        } else {
            set.join(", ")
        };
        format!("cannot check TLS certificates ({roots}): {cause}")
    })
}

/// rmcp's redirect policy for its own client: a 307 or 308 to the same
/// origin is followed (up to 10 hops), as those keep the method and body;
/// anything else is returned as it is, so that neither a POST becomes a GET
/// nor the session and headers go to another host.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_body || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > 10 {
            attempt.error("more than 10 redirects")
        } else {
            attempt.follow()
        }
    })
}

/// rustls' `ring` provider for `https` servers, installed once per process
/// (reqwest is built without a provider of its own).
fn install_crypto_provider() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The most tools the gateway takes from one server: the size of the
/// engine's largest benchmark registry, for all servers together.
pub const MAX_TOOLS: usize = 10_000;
/// The most pages of tools the gateway asks one server for.
pub const MAX_PAGES: usize = 1_000;
/// The most bytes of tool definitions (as JSON) the gateway takes from one
/// server: a page may be as large as a message (16 MiB), so pages alone do
/// not bound it. The largest registry here, 160 Feishu tools described in
/// Chinese, takes 0.4 MiB.
pub const MAX_LISTED_BYTES: usize = 32 << 20;

/// The length of `value` as JSON, counted without writing it out.
fn json_len(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// A server's pagination cursor in a message: quoted, and cut short.
fn shown_cursor(cursor: &str) -> String {
    const SHOWN: usize = 40;
    match cursor.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{:?}…", &cursor[..cut]),
        None => format!("{cursor:?}"),
    }
}

/// First wait before a restart; doubled after each failure up to [`BACKOFF_CAP`].
pub const BACKOFF_START: Duration = Duration::from_millis(500);
/// The longest wait between two restarts of a failing child.
pub const BACKOFF_CAP: Duration = Duration::from_secs(30);
/// The longest a child's stop may take: a local server's two waits of
/// [`super::stdio::EXIT_WAIT`] and its kill, or a remote session's end.
pub const STOP_WAIT: Duration = Duration::from_secs(8);

/// What a child tells the gateway outside of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The child at this index came up or announced `tools/list_changed`: re-list it.
    ToolsChanged(usize),
}

/// The client side the gateway runs toward one child.
#[derive(Clone)]
struct Handler {
    index: usize,
    events: mpsc::UnboundedSender<Event>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.events.send(Event::ToolsChanged(self.index));
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolpolicy-gateway", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

/// Whether a running child has gone: its service loop ended (the process
/// exited or closed its output) or was cancelled.
fn gone(service: &RunningService<RoleClient, Handler>) -> bool {
    service.is_closed() || service.peer().is_transport_closed()
}

/// A started child and its tools.
type Started = (RunningService<RoleClient, Handler>, Vec<Value>);

/// Why a start failed: the server refused the handshake (worth another
/// lifecycle), or anything else.
enum Failure {
    Refused(String),
    Other(String),
}

enum State {
    Up(RunningService<RoleClient, Handler>),
    Down {
        error: String,
        failures: u32,
        retry_at: Instant,
    },
}

/// One child server and its state.
pub struct Child {
    pub spec: ServerSpec,
    index: usize,
    start_timeout: Duration,
    events: mpsc::UnboundedSender<Event>,
    state: Mutex<State>,
}

/// How long to wait after `failures` failures in a row.
pub fn backoff(failures: u32) -> Duration {
    let factor = 1u32 << failures.saturating_sub(1).min(16);
    BACKOFF_START.saturating_mul(factor).min(BACKOFF_CAP)
}

fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

impl Child {
    pub fn new(
        spec: ServerSpec,
        index: usize,
        start_timeout: Duration,
        events: mpsc::UnboundedSender<Event>,
    ) -> Arc<Child> {
        Arc::new(Child {
            spec,
            index,
            start_timeout,
            events,
            state: Mutex::new(State::Down {
                error: "not started yet".into(),
                failures: 0,
                retry_at: Instant::now(),
            }),
        })
    }

    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// Whether requests to it carry headers from the servers file (a token,
    /// most often).
    fn sends_headers(&self) -> bool {
        matches!(&self.spec.transport, Transport::Http { headers, .. } if !headers.is_empty())
    }

    /// [`error_text`] for this server, its URL shown by its origin.
    fn error_text(&self, e: &(dyn std::error::Error + 'static)) -> String {
        self.shown(error_text(e, self.sends_headers()))
    }

    /// [`init_error_text`] for this server, its URL shown by its origin.
    fn init_error_text(&self, e: &ClientInitializeError) -> String {
        self.shown(init_error_text(e, self.sends_headers()))
    }

    /// `text` with a remote server's URL, which the HTTP client's messages
    /// quote whole, replaced by its origin: a path or query may hold a key.
    fn shown(&self, text: String) -> String {
        let (Transport::Http { url, .. }, Some(origin)) =
            (&self.spec.transport, self.spec.origin())
        else {
            return text;
        };
        without_url(text, url, &origin)
    }

    /// Starts the child and lists its tools (MCP tool objects, in its order).
    pub async fn start(&self) -> Result<Vec<Value>, String> {
        let mut state = self.state.lock().await;
        self.start_locked(&mut state).await
    }

    async fn start_locked(&self, state: &mut State) -> Result<Vec<Value>, String> {
        let failures = match &*state {
            State::Down { failures, .. } => *failures,
            State::Up(_) => 0,
        };
        match self.spawn_either_era().await {
            Ok((service, tools)) => {
                *state = State::Up(service);
                Ok(tools)
            }
            Err(error) => {
                let failures = failures.saturating_add(1);
                *state = State::Down {
                    error: error.clone(),
                    failures,
                    retry_at: Instant::now() + backoff(failures),
                };
                Err(error)
            }
        }
    }

    /// Starts the child through `initialize`, which servers of every era so
    /// far answer; one that refuses it (a server of 2026-07-28 or later
    /// only) is started again and reached through `server/discover`.
    async fn spawn_either_era(&self) -> Result<Started, String> {
        match self.spawn(ClientLifecycleMode::Initialize).await {
            Ok(started) => Ok(started),
            Err(Failure::Refused(first)) => {
                let modern = ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::LATEST],
                };
                self.spawn(modern).await.map_err(|second| match second {
                    Failure::Refused(e) | Failure::Other(e) => {
                        format!("{first}; through `server/discover`: {e}")
                    }
                })
            }
            Err(Failure::Other(e)) => Err(e),
        }
    }

    async fn spawn(&self, lifecycle: ClientLifecycleMode) -> Result<Started, Failure> {
        let handler = Handler {
            index: self.index,
            events: self.events.clone(),
        };
        match &self.spec.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let process = self.spawn_process(command, args, env, cwd.as_deref())?;
                self.handshake(handler.serve_with_lifecycle(process, lifecycle))
                    .await
            }
            Transport::Http { url, headers } => {
                let client = http_client(url).map_err(|e| {
                    Failure::Other(format!("server `{}` did not start: {e}", self.spec.name))
                })?;
                let transport =
                    StreamableHttpClientTransport::with_client(client, http_config(url, headers));
                self.handshake(handler.serve_with_lifecycle(transport, lifecycle))
                    .await
            }
        }
    }

    /// Starts a local child's process, its standard error copied to ours.
    fn spawn_process(
        &self,
        command: &str,
        args: &[String],
        env: &[(String, String)],
        cwd: Option<&std::path::Path>,
    ) -> Result<ChildProcess, Failure> {
        let name = &self.spec.name;
        let mut cmd = tokio::process::Command::new(command);
        cmd.args(args);
        cmd.envs(env.iter().map(|(k, v)| (k, v)));
        if let Some(cwd) = cwd {
            cmd.current_dir(cwd);
        }
        let (process, stderr) = ChildProcess::spawn(cmd).map_err(|e| {
            Failure::Other(format!(
                "server `{name}` could not be started (`{command}`): {e}"
            ))
        })?;
        if let Some(stderr) = stderr {
            tokio::spawn(copy_stderr(name.clone(), stderr));
        }
        Ok(process)
    }

    /// Waits, within the start timeout, for the lifecycle handshake and the
    /// first tool list, whatever the transport.
    async fn handshake(
        &self,
        serving: impl Future<
            Output = Result<RunningService<RoleClient, Handler>, ClientInitializeError>,
        >,
    ) -> Result<Started, Failure> {
        let name = &self.spec.name;
        let started = async {
            let service = serving.await.map_err(|e| {
                let refused = matches!(
                    e,
                    ClientInitializeError::JsonRpcError(_)
                        | ClientInitializeError::NoCompatibleProtocolVersion { .. }
                        | ClientInitializeError::ExpectedInitResult(_)
                );
                let text = format!(
                    "server `{name}` did not start: {}",
                    self.init_error_text(&e)
                );
                if refused {
                    Failure::Refused(text)
                } else {
                    Failure::Other(text)
                }
            })?;
            let tools = self
                .list_all(service.peer())
                .await
                .map_err(Failure::Other)?;
            Ok::<_, Failure>((service, tools))
        };
        tokio::time::timeout(self.start_timeout, started)
            .await
            .map_err(|_| {
                Failure::Other(format!(
                    "server `{name}` did not start within {}",
                    secs(self.start_timeout)
                ))
            })?
    }

    /// Re-lists a running child's tools (after its `tools/list_changed`).
    pub async fn list_tools(&self) -> Result<Vec<Value>, String> {
        let peer = self.peer().await?;
        tokio::time::timeout(self.start_timeout, self.list_all(&peer))
            .await
            .map_err(|_| format!("server `{}` did not list its tools in time", self.name()))?
    }

    /// Every page of a server's tools, as rmcp's `list_all_tools` but
    /// bounded: a server whose pages go round in a circle (a cursor it sent
    /// before), or that sends more than [`MAX_PAGES`] pages or
    /// [`MAX_TOOLS`] tools, is an error saying so rather than a listing that
    /// grows until the start timeout.
    async fn list_all(&self, peer: &Peer<RoleClient>) -> Result<Vec<Value>, String> {
        use std::hash::{BuildHasher, RandomState};

        let failed =
            |why: String| format!("server `{}` did not list its tools: {why}", self.name());
        let mut tools = Vec::new();
        let mut bytes = 0usize;
        // Cursors are the server's text, of any length: kept as hashes.
        let hasher = RandomState::new();
        let mut seen = std::collections::HashSet::new();
        let mut cursor = None;
        for _ in 0..MAX_PAGES {
            let params = PaginatedRequestParams::default().with_cursor(cursor.take());
            let page = peer
                .list_tools(Some(params))
                .await
                .map_err(|e| failed(self.error_text(&e)))?;
            if tools.len() + page.tools.len() > MAX_TOOLS {
                return Err(failed(format!(
                    "it has more than {MAX_TOOLS} tools, the most the gateway takes from one server"
                )));
            }
            for tool in &page.tools {
                bytes += json_len(tool);
                if bytes > MAX_LISTED_BYTES {
                    return Err(failed(format!(
                        "its tools take more than {} MiB, the most the gateway takes from one \
                         server",
                        MAX_LISTED_BYTES >> 20
                    )));
                }
                tools.extend(serde_json::to_value(tool).ok());
            }
            let Some(next) = page.next_cursor else {
                return Ok(tools);
            };
            if !seen.insert(hasher.hash_one(&next)) {
                return Err(failed(format!(
                    "it sent the cursor {} a second time, so its pages go round in a circle",
                    shown_cursor(&next)
                )));
            }
            cursor = Some(next);
        }
        Err(failed(format!("it sent more than {MAX_PAGES} pages")))
    }

    /// Restarts a child that failed or died once its back-off has run out;
    /// the gateway re-lists it when it comes up.
    pub async fn revive_if_due(&self) {
        let due = match &*self.state.lock().await {
            State::Up(s) => gone(s),
            State::Down {
                failures, retry_at, ..
            } => *failures > 0 && Instant::now() >= *retry_at,
        };
        if due {
            let _ = self.peer().await;
        }
    }

    /// The running child's peer, restarting it first when it is down and its
    /// back-off has run out; otherwise why it cannot be reached.
    async fn peer(&self) -> Result<Peer<RoleClient>, String> {
        let mut state = self.state.lock().await;
        if let State::Up(service) = &*state {
            if !gone(service) {
                return Ok(service.peer().clone());
            }
            *state = self.exited();
        }
        let State::Down {
            error, retry_at, ..
        } = &*state
        else {
            return Err(format!("server `{}` is not available", self.name()));
        };
        let now = Instant::now();
        if now < *retry_at {
            return Err(format!(
                "{error}; next restart in {}",
                secs(*retry_at - now)
            ));
        }
        let remote = matches!(self.spec.transport, Transport::Http { .. });
        if remote {
            log!("note: reconnecting to server `{}`", self.name());
        } else {
            log!("note: restarting server `{}`", self.name());
        }
        if let Err(e) = self.start_locked(&mut state).await {
            log!("error: {e}");
            return Err(e);
        }
        let done = if remote { "reconnected" } else { "restarted" };
        log!("note: server `{}` {done}", self.name());
        let _ = self.events.send(Event::ToolsChanged(self.index));
        match &*state {
            State::Up(service) => Ok(service.peer().clone()),
            State::Down { error, .. } => Err(error.clone()),
        }
    }

    /// Forwards one call; every failure is an error result naming the server.
    pub async fn call(
        &self,
        tool: &str,
        arguments: Option<JsonObject>,
        timeout: Duration,
    ) -> CallToolResult {
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = arguments;
        // Only a remote server can lose the session, so only its calls keep
        // a copy of the arguments for a second attempt.
        let again = matches!(self.spec.transport, Transport::Http { .. }).then(|| params.clone());
        let mut outcome = self.call_once(params, timeout).await;
        // A remote server that answers "no such session" has restarted and
        // has not seen the call: reconnect (which lists its tools again)
        // and send the call once more.
        if let (Ok(Err(e)), Some(params)) = (&outcome, again)
            && session_expired(e)
        {
            outcome = self.call_once(params, timeout).await;
        }
        match outcome {
            Err(e) => error_result(format!("{e} (tool `{tool}` not called)")),
            Ok(Ok(Some(result))) => result,
            Ok(Ok(None)) => error_result(format!(
                "server `{}` did not answer `{tool}` within {}",
                self.name(),
                secs(timeout)
            )),
            Ok(Err(ServiceError::TransportClosed)) => error_result(match self.spec.transport {
                Transport::Stdio { .. } => format!(
                    "server `{}` exited or closed its output during `{tool}`; it is started \
                     again for the next call",
                    self.name()
                ),
                Transport::Http { .. } => format!(
                    "server `{}` ended the connection during `{tool}` (it went away, or sent a \
                     message over the 16 MiB limit for one MCP message); it is reconnected for \
                     the next call",
                    self.name()
                ),
            }),
            Ok(Err(ServiceError::McpError(error))) => error_result(format!(
                "server `{}` failed on `{tool}`: {} (JSON-RPC error {})",
                self.name(),
                error.message,
                error.code.0
            )),
            Ok(Err(e)) => error_result(format!(
                "server `{}` failed on `{tool}`: {}",
                self.name(),
                self.error_text(&e)
            )),
        }
    }

    /// One attempt of [`Child::call`]: `Err` when the server cannot be
    /// reached (the call not sent), `Ok(Ok(None))` when it did not answer
    /// within `timeout`. A transport failure marks the server down, and so
    /// does a session the server no longer knows.
    async fn call_once(
        &self,
        params: CallToolRequestParams,
        timeout: Duration,
    ) -> Result<Result<Option<CallToolResult>, ServiceError>, String> {
        let peer = self.peer().await?;
        match tokio::time::timeout(timeout, peer.call_tool(params)).await {
            Ok(Ok(result)) => Ok(Ok(Some(result))),
            Ok(Err(e)) => {
                // A request the transport could not carry: the server has
                // gone (a process that exited, an HTTP server that no longer
                // answers) and is restarted or reconnected on demand.
                let lost = matches!(
                    e,
                    ServiceError::TransportSend(_) | ServiceError::TransportClosed
                );
                if session_expired(&e) {
                    self.mark_down_because("no longer knows the gateway's session (it restarted, or ended the session)")
                        .await;
                } else if lost || peer.is_transport_closed() {
                    self.mark_down(lost).await;
                }
                Ok(Err(e))
            }
            Err(_) => Ok(Ok(None)),
        }
    }

    /// The state of a child found gone: the first restart is tried at once,
    /// the back-off counts from there.
    fn exited(&self) -> State {
        self.down_because(match self.spec.transport {
            Transport::Stdio { .. } => "exited",
            Transport::Http { .. } => "went away",
        })
    }

    /// [`Child::exited`], saying `what` happened.
    fn down_because(&self, what: &str) -> State {
        log!("warning: server `{}` {what}", self.name());
        State::Down {
            error: format!("server `{}` {what}", self.name()),
            failures: 1,
            retry_at: Instant::now(),
        }
    }

    /// Marks a running child down when it has gone, or when `lost` (its
    /// transport failed a request) even if its service still runs.
    async fn mark_down(&self, lost: bool) {
        let mut state = self.state.lock().await;
        if matches!(&*state, State::Up(s) if lost || gone(s)) {
            *state = self.exited();
        }
    }

    /// Marks a running child down because `what` happened to it.
    async fn mark_down_because(&self, what: &str) {
        let mut state = self.state.lock().await;
        if matches!(&*state, State::Up(_)) {
            *state = self.down_because(what);
        }
    }

    /// Stops the child and waits until it has: a local server has its
    /// input closed, then `SIGTERM`, then is killed, each after a wait (see
    /// [`super::stdio`]); a remote one has its session ended. Bounded by
    /// [`STOP_WAIT`], after which the process is killed as the gateway exits.
    pub async fn stop(&self) {
        let stopped = State::Down {
            error: format!("server `{}` was stopped", self.name()),
            failures: 0,
            retry_at: Instant::now(),
        };
        let old = std::mem::replace(&mut *self.state.lock().await, stopped);
        if let State::Up(mut service) = old {
            let _ = service.close_with_timeout(STOP_WAIT).await;
        }
    }
}

/// An rmcp error for a person: without the transport's Rust type, which
/// rmcp's messages name (`Transport [rmcp::transport::...] error`), and with
/// its deepest cause (`Connection refused`), which the HTTP client's own
/// message leaves out; or, for a certificate problem or a refused
/// authorization, what it means in plain words ([`plain_cause`]).
/// `headers_sent`: the server's entry has `headers`.
fn error_text(e: &(dyn std::error::Error + 'static), headers_sent: bool) -> String {
    with_cause(e, e, headers_sent)
}

/// A handshake error's text: rmcp keeps the transport's error in a field
/// that is not its source, so the cause is looked for there.
fn init_error_text(e: &ClientInitializeError, headers_sent: bool) -> String {
    match e {
        ClientInitializeError::TransportError { error, .. } => with_cause(e, error, headers_sent),
        _ => error_text(e, headers_sent),
    }
}

/// `e`'s text without Rust types, then the deepest cause under `causes`.
fn with_cause(
    e: &dyn std::error::Error,
    causes: &(dyn std::error::Error + 'static),
    headers_sent: bool,
) -> String {
    if let Some(plain) = plain_cause(causes, headers_sent) {
        return plain;
    }
    let mut text = e.to_string();
    while let Some(start) = text.find(" [rmcp::") {
        let mut depth = 0usize;
        let end = text[start + 1..].char_indices().find_map(|(i, c)| {
            match c {
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(start + 1 + i + 1);
                    }
                }
                _ => {}
            }
            None
        });
        match end {
            Some(end) => text.replace_range(start..end, ""),
            None => break,
        }
    }
    let mut cause = causes.source();
    let mut deepest = None;
    while let Some(c) = cause {
        deepest = Some(c.to_string());
        cause = next_cause(c);
    }
    match deepest {
        Some(d) if !d.is_empty() && !text.contains(&d) => format!("{text}: {d}"),
        _ => text,
    }
}

/// Whether `e` says the remote server no longer knows the session (HTTP
/// 404 on a request that carried it): it restarted, and did not see the
/// request.
fn session_expired(e: &ServiceError) -> bool {
    let mut node: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = node {
        if matches!(
            c.downcast_ref::<StreamableHttpError<reqwest::Error>>(),
            Some(StreamableHttpError::SessionExpired)
        ) {
            return true;
        }
        node = next_cause(c);
    }
    false
}

/// The cause under `c`: rmcp's HTTP error holds reqwest's without making it
/// its source.
fn next_cause<'a>(
    c: &'a (dyn std::error::Error + 'static),
) -> Option<&'a (dyn std::error::Error + 'static)> {
    match c.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        Some(StreamableHttpError::Client(inner)) => Some(inner),
        _ => c.source(),
    }
}

/// What a failure means, in the words of the servers file, when its causes
/// hold a TLS error (the certificate refused, a handshake that failed) or an
/// HTTP 401 or 403 (with or without a `WWW-Authenticate` challenge).
fn plain_cause(causes: &(dyn std::error::Error + 'static), headers_sent: bool) -> Option<String> {
    let mut node = Some(causes);
    while let Some(c) = node {
        if let Some(tls) = tls_error(c) {
            return Some(tls_text(tls));
        }
        let status = match c.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            Some(StreamableHttpError::AuthRequired(_)) => Some(401),
            Some(StreamableHttpError::InsufficientScope(_)) => Some(403),
            Some(StreamableHttpError::UnexpectedServerResponse(r)) if r.starts_with("HTTP 401") => {
                Some(401)
            }
            Some(StreamableHttpError::UnexpectedServerResponse(r)) if r.starts_with("HTTP 403") => {
                Some(403)
            }
            _ => None,
        };
        if let Some(status) = status {
            return Some(auth_text(status, headers_sent));
        }
        node = next_cause(c);
    }
    None
}

/// The rustls error in `c`, directly or inside the I/O errors the TLS
/// stream and the connector wrap it in (whose `source` skips it).
fn tls_error<'a>(c: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut e = c;
    loop {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        e = e.downcast_ref::<std::io::Error>()?.get_ref()?;
    }
}

/// A TLS failure for a person: which check refused the certificate, and
/// how a private certificate authority is trusted.
fn tls_text(e: &rustls::Error) -> String {
    use rustls::CertificateError as C;
    let why = match e {
        rustls::Error::InvalidCertificate(c) => c,
        rustls::Error::InvalidMessage(_) => {
            return format!(
                "the TLS handshake failed ({e}): is the server serving plain HTTP on this port? \
                 Then its URL is `http://`"
            );
        }
        _ => return format!("the TLS handshake failed: {e}"),
    };
    let why = match why {
        C::UnknownIssuer => "it is not issued by a certificate authority this machine trusts \
             (for a private authority, point `SSL_CERT_FILE` or `SSL_CERT_DIR` at its certificate)"
            .to_string(),
        C::NotValidForNameContext {
            expected,
            presented,
        } => {
            let names = presented
                .iter()
                .map(|p| format!("`{}`", bare_name(p)))
                .collect::<Vec<_>>();
            let names = if names.is_empty() {
                "no name".to_string()
            } else {
                names.join(", ")
            };
            format!(
                "it is for another host: it names {names}, not `{}`",
                expected.to_str()
            )
        }
        C::NotValidForName => "it is for another host than the URL's".to_string(),
        C::Expired | C::ExpiredContext { .. } => "it has expired".to_string(),
        C::NotValidYet | C::NotValidYetContext { .. } => {
            "it is not valid yet (is this machine's clock right?)".to_string()
        }
        C::Revoked => "it has been revoked".to_string(),
        other => other.to_string(),
    };
    format!("the server's TLS certificate is not accepted: {why}")
}

/// `example.test` out of `DnsName("example.test")`, as rustls shows a name
/// a certificate presents; any other text as it is.
fn bare_name(presented: &str) -> &str {
    let inner = presented
        .split_once('(')
        .and_then(|(_, rest)| rest.strip_suffix(')'))
        .unwrap_or(presented);
    inner
        .strip_prefix('"')
        .and_then(|n| n.strip_suffix('"'))
        .unwrap_or(inner)
}

/// An HTTP 401 or 403 for a person: a token goes in the entry's `headers`.
fn auth_text(status: u16, headers_sent: bool) -> String {
    match (status, headers_sent) {
        (401, false) => "the server requires authorization (HTTP 401): give it a token in the \
             entry's `headers`, such as `\"Authorization\": \"Bearer ${TOKEN}\"` (OAuth \
             sign-in is not supported)"
            .to_string(),
        (401, true) => "the server refused the authorization in the entry's `headers` \
             (HTTP 401): check the token (OAuth sign-in is not supported)"
            .to_string(),
        (_, false) => "the server refused access (HTTP 403): it may need a token in the \
             entry's `headers`"
            .to_string(),
        (_, true) => "the server refused access (HTTP 403): the token in the entry's \
             `headers` does not allow it"
            .to_string(),
    }
}

/// `text` with `url`, as written or as the HTTP client normalises it,
/// replaced by `origin`.
fn without_url(mut text: String, url: &str, origin: &str) -> String {
    let normalised = reqwest::Url::parse(url).map(|u| u.to_string()).ok();
    for form in normalised.iter().map(String::as_str).chain([url]) {
        if form != origin && !form.is_empty() {
            text = text.replace(form, origin);
        }
    }
    text
}

/// A tool result the model reads as an error.
pub fn error_result(text: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// The longest piece of a child's standard error copied as one line: a
/// child that never ends its line cannot make the gateway hold more.
const STDERR_LINE_BYTES: u64 = 64 * 1024;

/// Copies a child's standard error to ours, one whole line at a time, each
/// prefixed with the server's name; bytes that are not UTF-8 are replaced.
async fn copy_stderr(name: String, stderr: tokio::process::ChildStderr) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        let mut piece = (&mut reader).take(STDERR_LINE_BYTES);
        match piece.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                let text = String::from_utf8_lossy(&line);
                let text = text.trim_end_matches(['\n', '\r']);
                log!("[{name}] {text}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Chain(&'static str, Option<Box<Chain>>);
    impl std::fmt::Display for Chain {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }
    impl std::error::Error for Chain {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|c| c as _)
        }
    }

    #[test]
    fn error_text_drops_rust_types_and_adds_the_root_cause() {
        let e = Chain(
            "Transport [rmcp::transport::worker::WorkerTransport<W<reqwest::Client>>] error: Client error: sending",
            Some(Box::new(Chain(
                "client error (Connect)",
                Some(Box::new(Chain("Connection refused (os error 111)", None))),
            ))),
        );
        assert_eq!(
            error_text(&e, false),
            "Transport error: Client error: sending: Connection refused (os error 111)"
        );
        assert_eq!(error_text(&Chain("plain", None), false), "plain");
        let open = Chain("Transport [rmcp::x<", None);
        assert_eq!(error_text(&open, false), "Transport [rmcp::x<");
    }

    #[test]
    fn a_certificate_s_names_are_shown_bare() {
        assert_eq!(bare_name("DnsName(\"example.test\")"), "example.test");
        assert_eq!(bare_name("IpAddress(127.0.0.1)"), "127.0.0.1");
        assert_eq!(bare_name("example.test"), "example.test");
        assert_eq!(bare_name("Odd(\"x"), "Odd(\"x");
    }

    #[test]
    fn a_tls_error_is_found_under_nested_io_errors() {
        use std::io::{Error, ErrorKind};
        let tls = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let nested = Error::other(Error::new(ErrorKind::InvalidData, tls));
        let text = error_text(&nested, false);
        assert!(text.starts_with("the server's TLS certificate is not accepted: it is not issued by a certificate authority this machine trusts"), "{text}");
        let expired = rustls::Error::InvalidCertificate(rustls::CertificateError::Expired);
        assert_eq!(
            error_text(&Error::other(expired), false),
            "the server's TLS certificate is not accepted: it has expired"
        );
        assert_eq!(error_text(&Error::other("plain"), false), "plain");
    }

    #[test]
    fn a_url_in_a_message_is_shown_by_its_origin() {
        let text = "error sending request for url (https://h.example/mcp?key=k)".to_string();
        assert_eq!(
            without_url(text, "https://H.example:443/mcp?key=k", "https://h.example"),
            "error sending request for url (https://h.example)"
        );
        let text = "at http://h:8/mcp?key=k".to_string();
        assert_eq!(
            without_url(text, "http://h:8/mcp?key=k", "http://h:8"),
            "at http://h:8"
        );
    }

    #[test]
    fn backoff_doubles_to_its_cap() {
        assert_eq!(backoff(1), Duration::from_millis(500));
        assert_eq!(backoff(2), Duration::from_secs(1));
        assert_eq!(backoff(4), Duration::from_secs(4));
        assert_eq!(backoff(7), BACKOFF_CAP);
        assert_eq!(backoff(u32::MAX), BACKOFF_CAP);
    }
}

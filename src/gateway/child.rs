//! One child MCP server, reached with rmcp's client side: a local process
//! over standard input/output ([`super::stdio`]; its standard error copied
//! to ours line by line with a `[NAME] ` prefix, escaped) or a remote server over
//! streamable HTTP (`super::remote`). Either is restarted (reconnected)
//! on demand with capped exponential back-off after it fails to start or
//! goes away, and its tools are listed within bounds. Every failure becomes
//! a message that names the server (`super::messages`); nothing here
//! panics or prints to standard output.

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
use rmcp::{ClientHandler, RoleClient, ServiceError};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::sync::{Mutex, mpsc};
use tokio::time::Instant;

use super::messages::{error_text, init_error_text, session_expired};
use super::remote::{http_client, http_config};
use super::servers::{ServerSpec, Transport};
use super::stdio::ChildProcess;

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

/// One attempt of a call on a reached server: refused by `admit` (`Err`,
/// not sent), or sent, with what came of it.
type Attempt = Result<Result<Option<CallToolResult>, ServiceError>, CallToolResult>;

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

/// What takes a child's listing when it was started again: the gateway,
/// which holds it to the lock before the child is reached.
pub type OnListed = Box<dyn Fn(usize, Vec<Value>) + Send + Sync>;

/// One child server and its state.
pub struct Child {
    pub spec: ServerSpec,
    index: usize,
    start_timeout: Duration,
    events: mpsc::UnboundedSender<Event>,
    state: Mutex<State>,
    /// Set once by the gateway ([`Child::on_listed`]).
    listed: std::sync::OnceLock<OnListed>,
}

/// What became of a call handed to [`Child::call`].
pub enum Called {
    /// The server's result, or an error result saying why there is none.
    Answered(CallToolResult),
    /// Not sent: once the server was reached, `admit` refused the call
    /// (with this result), as the server had been started again with tools
    /// the call may no longer reach.
    Refused(CallToolResult),
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
            listed: std::sync::OnceLock::new(),
        })
    }

    /// Hands every listing the child makes when it is started again on
    /// demand to `listed`, before anything reaches the child: the gateway
    /// puts it in its registry, marked against the lock, so that a call
    /// waiting for the child is decided on the tools it serves now. Set
    /// once; later calls change nothing.
    pub fn on_listed(&self, listed: OnListed) {
        let _ = self.listed.set(listed);
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

    /// `text` with every URL in it shown by its origin: the HTTP client's
    /// messages quote a remote server's URL whole (less its user info), and
    /// a path or query may hold a key.
    fn shown(&self, text: String) -> String {
        super::origin::origins_only(&text)
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
                    "it sent the cursor {:?} a second time, so its pages go round in a circle",
                    // The server's text, of any length: quoted, cut short.
                    crate::runtime::catalog::cut(&next, 40)
                )));
            }
            cursor = Some(next);
        }
        Err(failed(format!("it sent more than {MAX_PAGES} pages")))
    }

    /// Whether the child runs now, started and listed and not gone. One
    /// whose state stays held past `wait` (it is being started) does not.
    pub async fn is_up(&self, wait: Duration) -> bool {
        match tokio::time::timeout(wait, self.state.lock()).await {
            Ok(state) => matches!(&*state, State::Up(s) if !gone(s)),
            Err(_) => false,
        }
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
        let tools = match self.start_locked(&mut state).await {
            Ok(tools) => tools,
            Err(e) => {
                log!("error: {e}");
                return Err(e);
            }
        };
        let done = if remote { "reconnected" } else { "restarted" };
        log!("note: server `{}` {done}", self.name());
        // Installed while the state is locked: no caller gets the peer
        // before the registry holds what the child lists now.
        if let Some(listed) = self.listed.get() {
            listed(self.index, tools);
        }
        let _ = self.events.send(Event::ToolsChanged(self.index));
        match &*state {
            State::Up(service) => Ok(service.peer().clone()),
            State::Down { error, .. } => Err(error.clone()),
        }
    }

    /// Forwards one call; every failure is an error result naming the
    /// server. `admit` is asked once the server is reached, right before
    /// each attempt is sent (a restart on the way may have changed the
    /// tools): a result it gives is the call's instead, and nothing is sent.
    pub async fn call(
        &self,
        tool: &str,
        arguments: Option<JsonObject>,
        timeout: Duration,
        admit: &(dyn Fn() -> Option<CallToolResult> + Sync),
    ) -> Called {
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = arguments;
        // Only a remote server can lose the session, so only its calls keep
        // a copy of the arguments for a second attempt.
        let again = matches!(self.spec.transport, Transport::Http { .. }).then(|| params.clone());
        let mut outcome = self.call_once(params, timeout, admit).await;
        // A remote server that answers "no such session" has restarted and
        // has not seen the call: reconnect (which lists its tools again)
        // and send the call once more.
        if let (Ok(Ok(Err(e))), Some(params)) = (&outcome, again)
            && session_expired(e)
        {
            outcome = self.call_once(params, timeout, admit).await;
        }
        match outcome {
            Ok(Err(refused)) => Called::Refused(refused),
            Err(e) => Called::Answered(error_result(format!("{e} (tool `{tool}` not called)"))),
            Ok(Ok(sent)) => Called::Answered(self.answer(tool, sent, timeout)),
        }
    }

    /// The result of a call that was sent, in words where it failed.
    fn answer(
        &self,
        tool: &str,
        outcome: Result<Option<CallToolResult>, ServiceError>,
        timeout: Duration,
    ) -> CallToolResult {
        match outcome {
            Ok(Some(result)) => result,
            Ok(None) => error_result(format!(
                "server `{}` did not answer `{tool}` within {}",
                self.name(),
                secs(timeout)
            )),
            Err(ServiceError::TransportClosed) => error_result(match self.spec.transport {
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
            Err(ServiceError::McpError(error)) => error_result(format!(
                "server `{}` failed on `{tool}`: {} (JSON-RPC error {})",
                self.name(),
                error.message,
                error.code.0
            )),
            Err(e) => error_result(format!(
                "server `{}` failed on `{tool}`: {}",
                self.name(),
                self.error_text(&e)
            )),
        }
    }

    /// One attempt of [`Child::call`]: `Err` when the server cannot be
    /// reached and `Ok(Err)` when `admit` refused the call (neither sent),
    /// `Ok(Ok(Ok(None)))` when it did not answer within `timeout`. A
    /// transport failure marks the server down, and so does a session the
    /// server no longer knows.
    async fn call_once(
        &self,
        params: CallToolRequestParams,
        timeout: Duration,
        admit: &(dyn Fn() -> Option<CallToolResult> + Sync),
    ) -> Result<Attempt, String> {
        let peer = self.peer().await?;
        if let Some(refused) = admit() {
            return Ok(Err(refused));
        }
        Ok(Ok(self.send(&peer, params, timeout).await))
    }

    /// Sends one call to a reached server.
    async fn send(
        &self,
        peer: &Peer<RoleClient>,
        params: CallToolRequestParams,
        timeout: Duration,
    ) -> Result<Option<CallToolResult>, ServiceError> {
        match tokio::time::timeout(timeout, peer.call_tool(params)).await {
            Ok(Ok(result)) => Ok(Some(result)),
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
                Err(e)
            }
            Err(_) => Ok(None),
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

/// A tool result the model reads as an error.
pub fn error_result(text: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// The longest piece of a child's standard error copied as one line: a
/// child that never ends its line cannot make the gateway hold more.
const STDERR_LINE_BYTES: u64 = 64 * 1024;

/// Copies a child's standard error to ours, one whole line at a time, each
/// as [`stderr_line`] writes it.
async fn copy_stderr(name: String, stderr: tokio::process::ChildStderr) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        let mut piece = (&mut reader).take(STDERR_LINE_BYTES);
        match piece.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => super::log::line(stderr_line(&name, &line)),
        }
    }
}

/// One line of a child's standard error as the gateway writes it: prefixed
/// with the server's name, bytes that are not UTF-8 replaced, its line end
/// (`\n` or `\r\n`) dropped, and every other control or invisible character
/// shown escaped (`\u{1b}`). A server's text is not the gateway's: copied
/// raw, an escape sequence, a carriage return or a backspace could erase
/// or rewrite the warning about its tools above it, retitle the terminal or
/// write the clipboard.
fn stderr_line(name: &str, raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw);
    let text = text.strip_suffix('\n').unwrap_or(&text);
    let text = text.strip_suffix('\r').unwrap_or(text);
    format!(
        "[{}] {}",
        crate::chars::escape_name(name),
        crate::chars::escape(text)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_error_lines_show_escapes_instead_of_acting() {
        assert_eq!(stderr_line("fx", b"plain\ttext\r\n"), "[fx] plain\ttext");
        assert_eq!(
            stderr_line(
                "fx",
                b"\x1b[1A\x1b[2K\rall fine\x08\x1b]0;title\x07\xff\xc2\x9b\xe2\x80\xae\n"
            ),
            "[fx] \\u{1b}[1A\\u{1b}[2K\\u{d}all fine\\u{8}\\u{1b}]0;title\\u{7}\u{fffd}\\u{9b}\\u{202e}"
        );
        // A line cut at its limit, without its end, is escaped the same.
        assert_eq!(stderr_line("fx", b"cut\r"), "[fx] cut");
        assert_eq!(stderr_line("fx", b"\r\r\n"), "[fx] \\u{d}");
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

//! `policy gateway --listen HOST:PORT`: MCP's streamable HTTP transport at
//! `/mcp`, for any number of clients at once, in front of the servers the
//! gateway started once and shares (docs/gateway.md, "Serving a team over
//! HTTP").
//!
//! rmcp's server side speaks the transport: sessions named by
//! `Mcp-Session-Id` (the initialize handshake, before 2026-07-28) and
//! requests without a session (2026-07-28, or every request under
//! `--stateless`). This module stands in front of it and decides what is
//! the gateway's own, in this order:
//!
//! 1. the path (`/mcp`, the protected-resource metadata, the routes other
//!    parts add with [`Listener::route`], else 404);
//! 2. `Host` (loopback names only where callers are not named by a
//!    credential) and `Origin` (`--allow-origin`): 403, against DNS
//!    rebinding;
//! 3. who is calling ([`Callers`]): 401 with its challenge;
//! 4. a declared body over the message limit: 413, before a byte of it is
//!    read;
//! 5. the caller's share of concurrent requests: 429, never a queue;
//! 6. the body, read here in full: within `--body-timeout` of the head
//!    (else 408), up to the message limit (else 413), and holding at most
//!    [`MAX_VALUES`] JSON values, counted in one pass that allocates
//!    nothing (else 413): rmcp's parse costs a few hundred bytes per value,
//!    so a body of tiny values would cost over a hundred times its size;
//! 7. the whole listener's share of concurrent requests, taken only once
//!    the body is in (a body that never comes holds its caller's share
//!    alone): 503, never a queue;
//! 8. the session: an ended or unknown one, or one another caller opened,
//!    is 404, and the client starts a new one, as MCP says.
//!
//! Every MCP request then carries its [`Caller`]. A request in a session
//! is served by that session's [`Connection`], made at its first request
//! in the caller's context (a standard-input connection's behaviour); a
//! request without one by a [`Connection::stateless`] made for it alone.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{self, HeaderName};
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ListToolsResult, PaginatedRequestParams, ServerConfig,
    SubscriptionFilter,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::{SessionManager as _, StreamableHttpServerConfig};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::Context;

use super::Gateway;
use super::clients::Clients;
use super::connection::{self, Connection};
use super::sessions::Sessions;

/// Where MCP is served.
pub const MCP_PATH: &str = "/mcp";
/// Where the metrics are served, when the gateway counts them.
pub const METRICS_PATH: &str = "/metrics";
/// Where the protected-resource metadata (RFC 9728) is served.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";
/// The most bytes one request body may hold: MCP's message limit.
pub const MAX_BODY: usize = 16 << 20;
/// The most JSON values one request body may hold, object keys counted:
/// a body at the bound adds about 40 MiB to the gateway however it is made.
pub const MAX_VALUES: usize = 1 << 17;
/// How long a request's body may take to arrive by default.
pub const BODY_WAIT: Duration = Duration::from_secs(30);
/// The session header, as HTTP/1.1 header names are matched (any case).
const SESSION_HEADER: &str = "mcp-session-id";
/// The 2026-07-28 revision names each request's method in a header.
const METHOD_HEADER: &str = "mcp-method";
const VERSION_HEADER: &str = "mcp-protocol-version";
/// The first protocol revision without sessions.
const FIRST_STATELESS: &str = "2026-07-28";

/// A response body, as rmcp's answers have it.
pub type Body = BoxBody<Bytes, Infallible>;

/// What the command line sets for the listener.
#[derive(Debug, Clone)]
pub struct ListenOptions {
    /// Every request is served without a session, whatever its era.
    pub stateless: bool,
    /// A session with no request for this long ends.
    pub session_idle: Duration,
    /// The most sessions open at once, shared between callers: past it a
    /// caller over its share loses its own longest idle one (`to_end`).
    pub max_sessions: usize,
    /// Origins a browser may call from (`scheme://host[:port]`); a request
    /// with another `Origin` is refused. Requests without one pass.
    pub allow_origins: Vec<String>,
    /// `Host` names accepted besides the loopback ones (where callers are
    /// not named by a credential) or instead of any (where they are).
    pub allow_hosts: Vec<String>,
    /// The most bytes one request body may hold.
    pub max_body: usize,
    /// The most JSON values (object keys counted) one request body may hold.
    pub max_values: usize,
    /// A request's body arrives in full within this long of its head.
    pub body_timeout: Duration,
    /// Requests served at once, in all.
    pub max_concurrent: usize,
    /// Requests served at once for one caller.
    pub max_concurrent_per_caller: usize,
}

impl Default for ListenOptions {
    fn default() -> ListenOptions {
        ListenOptions {
            stateless: false,
            session_idle: Duration::from_secs(30 * 60),
            max_sessions: 1000,
            allow_origins: Vec::new(),
            allow_hosts: Vec::new(),
            max_body: MAX_BODY,
            max_values: MAX_VALUES,
            body_timeout: BODY_WAIT,
            max_concurrent: 256,
            max_concurrent_per_caller: 32,
        }
    }
}

/// Who is calling: a name for the audit log, a key for the limits and
/// the sessions, and the context the policy decides in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// `None` where callers are not named (no clients file).
    pub name: Option<Arc<str>>,
    /// What tells this caller apart from every other; `None` where
    /// callers are not named.
    pub key: Option<Arc<str>>,
    pub context: Context,
}

/// A request refused before MCP sees it: its status, headers and text.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub status: StatusCode,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub text: String,
}

impl Refusal {
    pub fn new(status: StatusCode, text: impl Into<String>) -> Refusal {
        Refusal {
            status,
            headers: Vec::new(),
            text: text.into(),
        }
    }

    fn into_response(self) -> Response<Body> {
        let mut response = plain(self.status, self.text);
        for (name, value) in self.headers {
            response.headers_mut().append(name, value);
        }
        response
    }
}

/// How the listener learns who is calling.
pub enum Callers {
    /// No clients file: every caller is served the command line's
    /// context, unnamed.
    CommandLine(Context),
    /// A clients file: the credential names the caller, whose context is
    /// the command line's with the fields its entry (or token) sets.
    Clients {
        clients: Arc<Clients>,
        base: Context,
        /// The URL clients reach `/mcp` at, as `--public-url` gives it;
        /// `None`: made from each request's `Host` (and a proxy's
        /// `X-Forwarded-Proto` and `X-Forwarded-Host`).
        public_url: Option<String>,
    },
}

impl Callers {
    /// The caller a request's headers name, or why it is refused: 401 with
    /// the challenge that points to the protected-resource metadata.
    pub async fn identify(&self, headers: &HeaderMap) -> Result<Caller, Refusal> {
        let (clients, base) = match self {
            Callers::CommandLine(context) => {
                return Ok(Caller {
                    name: None,
                    key: None,
                    context: context.clone(),
                });
            }
            Callers::Clients { clients, base, .. } => (clients, base),
        };
        match clients.authenticate(headers).await {
            Ok(caller) => Ok(Caller {
                name: Some(caller.name.as_str().into()),
                key: Some(caller.key().into()),
                context: caller.context(base),
            }),
            Err(denied) => {
                log!("note: refused a request with 401: {}", denied.reason());
                let resource = self.resource(headers);
                let challenge = denied
                    .www_authenticate(&super::clients::metadata_url(&resource).unwrap_or_default());
                let mut refusal = Refusal::new(
                    denied.status(),
                    "unauthorized: this gateway serves callers with a bearer token it accepts",
                );
                if let Ok(value) = HeaderValue::from_str(&challenge) {
                    refusal.headers.push((header::WWW_AUTHENTICATE, value));
                }
                Err(refusal)
            }
        }
    }

    /// Whether callers are told apart by a credential: then the listener
    /// may bind beyond loopback and takes any `Host`.
    pub fn authenticates(&self) -> bool {
        matches!(self, Callers::Clients { .. })
    }

    /// The URL of `/mcp` as the client reached it.
    fn resource(&self, headers: &HeaderMap) -> String {
        if let Callers::Clients {
            public_url: Some(url),
            ..
        } = self
        {
            return url.clone();
        }
        let first = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.split(',').next())
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let scheme = first("x-forwarded-proto")
            .filter(|p| p == "http" || p == "https")
            .unwrap_or_else(|| "http".into());
        let host = first("x-forwarded-host")
            .or_else(|| first("host"))
            .unwrap_or_else(|| "localhost".into());
        format!("{scheme}://{host}{MCP_PATH}")
    }

    /// The protected-resource metadata (RFC 9728) for a request with these
    /// headers; `None` without a clients file (then 404).
    fn metadata(&self, headers: &HeaderMap) -> Option<serde_json::Value> {
        match self {
            Callers::CommandLine(_) => None,
            Callers::Clients { clients, .. } => {
                Some(clients.protected_resource_metadata(&self.resource(headers)))
            }
        }
    }
}

/// A route other parts of the gateway add beside `/mcp` (a `/metrics`
/// page): given the request's head, its answer, or `None` to pass.
pub type Route = Arc<dyn Fn(&http::request::Parts) -> Option<Response<Body>> + Send + Sync>;

/// What `/metrics` serves: given the open sessions, the exposition text
/// and its content type.
#[derive(Clone)]
pub struct MetricsPage {
    pub render: Arc<dyn Fn(usize) -> (String, &'static str) + Send + Sync>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn plain(status: StatusCode, text: impl Into<String>) -> Response<Body> {
    let mut text = text.into();
    text.push('\n');
    let mut response = Response::new(Full::new(Bytes::from(text)).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// One open session as the listener sees it.
struct Open {
    /// The caller who opened it; only they may use it.
    owner: Option<Arc<str>>,
    /// The caller whose share of `--max-sessions` it takes: the owner, or
    /// the client's address where callers are not named.
    share: Arc<str>,
    /// When its last request ended (or began, while `busy`).
    last: Instant,
    /// Requests of it in flight: a busy session is never idle.
    busy: u32,
}

/// The listener: its options, its callers, rmcp's service and the state
/// of its sessions and limits. Shared by every connection.
pub struct Listener {
    options: ListenOptions,
    callers: Callers,
    service: StreamableHttpService<Handler, Sessions>,
    manager: Arc<Sessions>,
    sessions: Mutex<HashMap<Arc<str>, Open>>,
    all: Arc<Semaphore>,
    per_caller: Mutex<HashMap<String, Arc<Semaphore>>>,
    routes: Mutex<Vec<Route>>,
    /// The page `/metrics` serves (the exposition text and its content
    /// type), when the gateway counts its events.
    metrics: Mutex<Option<MetricsPage>>,
    /// Set at shutdown: requests from then on are refused.
    closing: std::sync::atomic::AtomicBool,
}

impl Listener {
    pub fn new(gateway: Arc<Gateway>, options: ListenOptions, callers: Callers) -> Arc<Listener> {
        // Sessions end by the listener's own idle clock, which a long call
        // does not run down.
        let manager = Arc::new(Sessions::default());
        // Host and Origin are checked before rmcp sees the request.
        let config = StreamableHttpServerConfig::default()
            .disable_allowed_hosts()
            .disable_allowed_origins()
            .with_legacy_session_mode(!options.stateless)
            .with_json_response(true)
            // The listener has read and bounded the body already.
            .with_max_request_body_bytes(options.max_body);
        let service = StreamableHttpService::new(
            move || Ok(Handler::new(Arc::clone(&gateway))),
            Arc::clone(&manager),
            config,
        );
        Arc::new(Listener {
            all: Arc::new(Semaphore::new(options.max_concurrent.max(1))),
            options,
            callers,
            service,
            manager,
            sessions: Mutex::new(HashMap::new()),
            per_caller: Mutex::new(HashMap::new()),
            routes: Mutex::new(Vec::new()),
            metrics: Mutex::new(None),
            closing: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Adds a route beside `/mcp`, tried in the order added, after the
    /// protected-resource metadata and before the 404 (a `/metrics` page).
    pub fn route(&self, route: Route) {
        lock(&self.routes).push(route);
    }

    /// Serves `page` at `/metrics`, under the same checks as `/mcp`: the
    /// `Host` and `Origin` rules, and a credential where callers have one.
    pub fn serve_metrics(&self, page: MetricsPage) {
        *lock(&self.metrics) = Some(page);
    }

    /// How many sessions are open.
    pub fn sessions(&self) -> usize {
        lock(&self.sessions).len()
    }

    /// Answers one HTTP request from `remote`.
    pub async fn handle<B>(
        self: &Arc<Self>,
        request: Request<B>,
        remote: SocketAddr,
    ) -> Response<Body>
    where
        B: hyper::body::Body + Send + 'static,
        B::Error: std::fmt::Display,
    {
        if self.closing.load(std::sync::atomic::Ordering::Relaxed) {
            return plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "service unavailable: the gateway is shutting down",
            );
        }
        let path = request.uri().path();
        let metrics = match path {
            MCP_PATH => None,
            METRICS_PATH => match lock(&self.metrics).clone() {
                Some(page) => Some(page),
                None => return self.elsewhere(request),
            },
            _ => return self.elsewhere(request),
        };
        if let Err(refusal) = self.check_host(request.headers()) {
            return refusal.into_response();
        }
        if let Err(refusal) = self.check_origin(request.headers()) {
            return refusal.into_response();
        }
        let caller = match self.callers.identify(request.headers()).await {
            Ok(caller) => caller,
            Err(refusal) => return refusal.into_response(),
        };
        if let Some(page) = metrics {
            return self.metrics_page(&page, request.method());
        }
        if let Some(len) = declared_length(request.headers())
            && len > self.options.max_body as u64
        {
            let mut response = plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "payload too large: the body is {len} bytes, over the {} bytes limit for one MCP message",
                    self.options.max_body
                ),
            );
            // The body is never read: the connection cannot carry another request.
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return response;
        }
        // A GET stream and a `subscriptions/listen` stay open for as long
        // as the client wants them: they count against the caller's share
        // of streams, not of requests being served. (rmcp holds a
        // 2026-07-28 request's `Mcp-Method` to its body; an older one's is
        // not taken at its word.)
        let streaming = request.method() == Method::GET
            || (request
                .headers()
                .get(METHOD_HEADER)
                .is_some_and(|m| m.as_bytes() == b"subscriptions/listen")
                && request
                    .headers()
                    .get(VERSION_HEADER)
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|v| v >= FIRST_STATELESS));
        let key = match &caller.key {
            Some(key) => key.to_string(),
            None => format!("address:{}", remote.ip()),
        };
        let mine = match self.caller_share(&key, streaming) {
            Ok(permit) => permit,
            Err(refusal) => return refusal.into_response(),
        };
        let declared = declared_length(request.headers());
        let (parts, body) = request.into_parts();
        let body = match self.read_body(body, declared).await {
            Ok(body) => body,
            Err(refusal) => return refusal.into_response(),
        };
        if let Err(refusal) = self.check_values(&body) {
            return refusal.into_response();
        }
        let all = if streaming {
            None
        } else {
            match self.listener_share() {
                Ok(permit) => Some(permit),
                Err(refusal) => return refusal.into_response(),
            }
        };
        let request = Request::from_parts(parts, Full::new(body));
        let session = match request
            .headers()
            .get(SESSION_HEADER)
            .map(|v| v.to_str().unwrap_or_default())
        {
            None => None,
            Some(id) => match self.enter(id, &caller, !streaming) {
                Some(entered) => Some(entered),
                None => {
                    return plain(
                        StatusCode::NOT_FOUND,
                        "not found: the session ended or never was; start a new one",
                    );
                }
            },
        };
        let opens = session.is_none() && request.method() == Method::POST;
        let deletes = request.method() == Method::DELETE;
        let mut request = request;
        request.extensions_mut().insert(caller.clone());
        let mut response = self.service.handle(request).await;
        if deletes && response.status() == StatusCode::ACCEPTED {
            // The session is gone, not queued to go: clients look for 200 or 204.
            *response.status_mut() = StatusCode::NO_CONTENT;
        }
        if opens
            && let Some(id) = response
                .headers()
                .get(SESSION_HEADER)
                .and_then(|v| v.to_str().ok())
        {
            self.opened(id.into(), caller.key.clone(), key.into());
        }

        let held = (mine, all, session);
        response.map(|body| {
            body.map_frame(move |frame| {
                let _held = &held;
                frame
            })
            .boxed()
        })
    }

    /// `/metrics`: the counts as a scrape reads them, the open sessions
    /// as the listener counts them.
    fn metrics_page(&self, page: &MetricsPage, method: &Method) -> Response<Body> {
        if method != Method::GET && method != Method::HEAD {
            let mut response = plain(
                StatusCode::METHOD_NOT_ALLOWED,
                format!("method not allowed: `{METRICS_PATH}` answers GET"),
            );
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            return response;
        }
        let (text, content_type) = (page.render)(self.sessions());
        let mut response = Response::new(Full::new(Bytes::from(text)).boxed());
        if let Ok(value) = HeaderValue::from_str(content_type) {
            response.headers_mut().insert(header::CONTENT_TYPE, value);
        }
        response
    }

    /// A request for another path than `/mcp`.
    fn elsewhere<B>(&self, request: Request<B>) -> Response<Body> {
        let (parts, _) = request.into_parts();
        let path = parts.uri.path();
        if path == METADATA_PATH || path.strip_prefix(METADATA_PATH) == Some(MCP_PATH) {
            return match self.callers.metadata(&parts.headers) {
                Some(document) => {
                    let mut response =
                        Response::new(Full::new(Bytes::from(document.to_string())).boxed());
                    response.headers_mut().insert(
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("application/json"),
                    );
                    response
                }
                None => plain(
                    StatusCode::NOT_FOUND,
                    "not found: this gateway names no authorization server (it has no clients file)",
                ),
            };
        }
        let routes = lock(&self.routes).clone();
        for route in routes {
            if let Some(response) = route(&parts) {
                return response;
            }
        }
        plain(
            StatusCode::NOT_FOUND,
            format!("not found: MCP is served at `{MCP_PATH}`"),
        )
    }

    /// `Host` names a loopback address where callers are not told apart by
    /// a credential (a DNS-rebinding page names its own host), or one of
    /// `--allow-host`.
    fn check_host(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let allowed = &self.options.allow_hosts;
        if allowed.is_empty() && self.callers.authenticates() {
            return Ok(());
        }
        let Some(value) = headers.get(header::HOST) else {
            return Err(Refusal::new(
                StatusCode::BAD_REQUEST,
                "bad request: no `Host` header",
            ));
        };
        let value = value.to_str().unwrap_or_default();
        let host = host_name(value);
        let loopback = !self.callers.authenticates() && is_loopback_name(&host);
        if loopback || allowed.iter().any(|a| host_name(a) == host) {
            return Ok(());
        }
        Err(Refusal::new(
            StatusCode::FORBIDDEN,
            format!(
                "forbidden: `Host` `{}` is not served here (add it with `--allow-host`)",
                crate::chars::escape(value)
            ),
        ))
    }

    /// An `Origin` header, where there is one, is one of `--allow-origin`.
    fn check_origin(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let Some(value) = headers.get(header::ORIGIN) else {
            return Ok(());
        };
        let shown = String::from_utf8_lossy(value.as_bytes()).into_owned();
        let origin = value.to_str().ok().and_then(normal_origin);
        if origin.is_some_and(|o| {
            self.options
                .allow_origins
                .iter()
                .any(|a| normal_origin(a).as_ref() == Some(&o))
        }) {
            return Ok(());
        }
        Err(Refusal::new(
            StatusCode::FORBIDDEN,
            format!(
                "forbidden: origin `{}` is not allowed (add it with `--allow-origin`)",
                crate::chars::escape(&shown)
            ),
        ))
    }

    /// The caller's share of requests in flight (taken before its body is
    /// read, so that bodies slow to come hold their own caller's share), or
    /// 429. A stream takes a share of the caller's streams instead.
    fn caller_share(&self, key: &str, stream: bool) -> Result<OwnedSemaphorePermit, Refusal> {
        let key = if stream {
            format!("streams of {key}")
        } else {
            key.to_string()
        };
        let mine = {
            let mut per_caller = lock(&self.per_caller);
            if per_caller.len() > 4096 {
                // Callers with nothing in flight hold nothing worth keeping.
                let full = self.options.max_concurrent_per_caller.max(1);
                per_caller.retain(|_, s| s.available_permits() < full);
            }
            Arc::clone(per_caller.entry(key).or_insert_with(|| {
                Arc::new(Semaphore::new(
                    self.options.max_concurrent_per_caller.max(1),
                ))
            }))
        };
        mine.try_acquire_owned().map_err(|_| {
            let what = if stream {
                "streams are open"
            } else {
                "requests are being served"
            };
            busy(
                StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "too many requests: {} of this caller's {what}; retry when one ends",
                    self.options.max_concurrent_per_caller
                ),
            )
        })
    }

    /// The listener's share of requests in flight, taken once the body is
    /// in, or 503.
    fn listener_share(&self) -> Result<OwnedSemaphorePermit, Refusal> {
        Arc::clone(&self.all).try_acquire_owned().map_err(|_| {
            busy(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "service unavailable: {} requests are being served; retry when one ends",
                    self.options.max_concurrent
                ),
            )
        })
    }

    /// A request's body, read in full within `--body-timeout` and up to the
    /// message limit, or the refusal: 408 and 413, and the connection
    /// closes (the rest of the body is never read).
    async fn read_body<B>(&self, body: B, declared: Option<u64>) -> Result<Bytes, Refusal>
    where
        B: hyper::body::Body,
        B::Error: std::fmt::Display,
    {
        use bytes::{Buf as _, BufMut as _};
        let limit = self.options.max_body;
        // A declared length is within the limit (checked before): the
        // buffer is made once, at its size.
        let size = declared.map_or(0, |n| usize::try_from(n).unwrap_or(limit).min(limit));
        let mut collected = bytes::BytesMut::with_capacity(size);
        let read = async {
            let mut body = std::pin::pin!(body);
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| {
                    Refusal::new(
                        StatusCode::BAD_REQUEST,
                        format!("bad request: the body could not be read: {e}"),
                    )
                })?;
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                if data.remaining() > limit - collected.len() {
                    return Err(Refusal::new(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        format!(
                            "payload too large: the body is over the {limit} bytes limit for one MCP message"
                        ),
                    ));
                }
                collected.put(data);
            }
            Ok(())
        };
        let wait = self.options.body_timeout;
        let read = match tokio::time::timeout(wait, read).await {
            Ok(read) => read,
            Err(_) => Err(Refusal::new(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "request timeout: the body did not arrive in full within {} s of the request's head (`--body-timeout`)",
                    seconds(wait)
                ),
            )),
        };
        match read {
            Ok(()) => Ok(collected.freeze()),
            Err(mut refusal) => {
                refusal
                    .headers
                    .push((header::CONNECTION, HeaderValue::from_static("close")));
                Err(refusal)
            }
        }
    }

    /// At most `max_values` JSON values in `body`, or 413: counted before
    /// rmcp parses it, since its parse costs a few hundred bytes and a
    /// microsecond per value, on the runtime's only thread.
    fn check_values(&self, body: &[u8]) -> Result<(), Refusal> {
        let max = self.options.max_values;
        if json_values(body, max) <= max {
            return Ok(());
        }
        Err(Refusal::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "payload too large: the body holds more than {max} JSON values (object keys counted), \
                 the most one MCP message may hold here"
            ),
        ))
    }

    /// A request enters session `id`: `None` when it is not open, or is
    /// another caller's. While the returned guard lives the session is busy
    /// (for a request, not a stream) and never idle.
    fn enter(self: &Arc<Self>, id: &str, caller: &Caller, busy: bool) -> Option<InSession> {
        let mut sessions = lock(&self.sessions);
        let open = sessions.get_mut(id)?;
        if open.owner != caller.key {
            return None;
        }
        open.last = Instant::now();
        if busy {
            open.busy += 1;
        }
        Some(InSession {
            listener: Arc::clone(self),
            id: id.into(),
            busy,
        })
    }

    /// rmcp opened session `id` for `owner`, in the share of caller
    /// `share`; past `--max-sessions` others end, as [`to_end`] picks them.
    fn opened(self: &Arc<Self>, id: Arc<str>, owner: Option<Arc<str>>, share: Arc<str>) {
        let mut sessions = lock(&self.sessions);
        sessions.insert(
            Arc::clone(&id),
            Open {
                owner,
                share: Arc::clone(&share),
                last: Instant::now(),
                busy: 0,
            },
        );
        let max = self.options.max_sessions.max(1);
        let mut ending = Vec::new();
        while sessions.len() > max {
            let Some(k) = to_end(&sessions, &id, &share, max) else {
                break;
            };
            sessions.remove(&k);
            ending.push(k);
        }
        drop(sessions);
        if !ending.is_empty() {
            log!(
                "note: {} sessions open, over `--max-sessions` {}: ending the longest idle of a caller over its share",
                max + ending.len(),
                max
            );
        }
        self.end(ending);
    }

    /// Ends sessions in rmcp (their streams close, their handlers drop).
    fn end(&self, ids: Vec<Arc<str>>) {
        if ids.is_empty() {
            return;
        }
        let manager = Arc::clone(&self.manager);
        tokio::spawn(async move {
            for id in ids {
                let _ = manager.close_session(&id).await;
            }
        });
    }

    /// Ends idle sessions, and forgets those rmcp closed (a client's
    /// `DELETE`), until the task is dropped.
    pub async fn reap(self: Arc<Self>) {
        let idle = self.options.session_idle;
        let tick = (idle / 4).clamp(Duration::from_millis(20), Duration::from_secs(5));
        let mut interval = tokio::time::interval(tick);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            interval.tick().await;
            let live = self.manager.ids();
            let mut sessions = lock(&self.sessions);
            let ending: Vec<Arc<str>> = sessions
                .iter()
                .filter(|(_, o)| o.busy == 0 && o.last.elapsed() >= idle)
                .map(|(k, _)| Arc::clone(k))
                .collect();
            for k in &ending {
                sessions.remove(k);
            }
            // Registered after rmcp made it: a session not yet in `live` is
            // one made since the read above, not one that ended.
            sessions.retain(|k, o| live.contains(k) || o.last.elapsed() < Duration::from_secs(1));
            drop(sessions);
            self.end(ending);
        }
    }

    /// Ends every session (their streams close); returns how many there were.
    pub async fn close_all(&self) -> usize {
        self.closing
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let ids: Vec<Arc<str>> = lock(&self.sessions).drain().map(|(k, _)| k).collect();
        let all: Vec<Arc<str>> = self.manager.ids().into_iter().collect();
        for id in &all {
            let _ = self.manager.close_session(id).await;
        }
        ids.len().max(all.len())
    }

    /// Serves `listener` until the task is dropped: each connection on a
    /// task of its own, HTTP/1.1 with keep-alive.
    pub async fn serve(self: Arc<Self>, listener: tokio::net::TcpListener) {
        loop {
            let (stream, remote) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, most likely: wait, then go on.
                    log!("warning: cannot accept a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            let this = Arc::clone(&self);
            tokio::spawn(async move {
                let io = hyper_util::rt::TokioIo::new(stream);
                let service = hyper::service::service_fn(move |request| {
                    let this = Arc::clone(&this);
                    async move { Ok::<_, Infallible>(this.handle(request, remote).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(HEADER_WAIT)
                    .serve_connection(io, service)
                    .await;
            });
        }
    }
}

/// How long a client may take to send a request's head.
const HEADER_WAIT: Duration = Duration::from_secs(30);

/// A request's place in its session, released when its answer is sent.
struct InSession {
    listener: Arc<Listener>,
    id: Arc<str>,
    busy: bool,
}

impl Drop for InSession {
    fn drop(&mut self) {
        if let Some(open) = lock(&self.listener.sessions).get_mut(&self.id) {
            open.last = Instant::now();
            if self.busy {
                open.busy = open.busy.saturating_sub(1);
            }
        }
    }
}

/// The session to end when the sessions are over `max`, caller `asker`
/// having opened session `new`: each caller's share is `max` divided by the
/// callers holding sessions. A caller over its share loses its own longest
/// idle session; one within it ends the longest idle session of the caller
/// holding the most (who is over its share, since the whole is over). A
/// session serving a request, and the new one, are never ended: `None`
/// when there is no other to end.
fn to_end(
    sessions: &HashMap<Arc<str>, Open>,
    new: &str,
    asker: &str,
    max: usize,
) -> Option<Arc<str>> {
    let mut held: HashMap<&str, usize> = HashMap::new();
    for open in sessions.values() {
        *held.entry(&*open.share).or_default() += 1;
    }
    let share = (max / held.len().max(1)).max(1);
    let longest_idle = |caller: &str| {
        sessions
            .iter()
            .filter(|(k, o)| o.busy == 0 && &***k != new && &*o.share == caller)
            .min_by_key(|(_, o)| o.last)
            .map(|(k, _)| Arc::clone(k))
    };
    if held.get(asker).copied().unwrap_or(0) > share {
        return longest_idle(asker);
    }
    let mut over: Vec<(&str, usize)> = held.into_iter().filter(|&(_, n)| n > share).collect();
    // The most first; between equals, in a fixed order.
    over.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    over.into_iter()
        .find_map(|(caller, _)| longest_idle(caller))
}

/// A refusal for a share that is taken: the client retries in a second.
fn busy(status: StatusCode, text: String) -> Refusal {
    let mut refusal = Refusal::new(status, text);
    refusal
        .headers
        .push((header::RETRY_AFTER, HeaderValue::from_static("1")));
    refusal
}

/// A duration as a number of seconds, as the flags take it (`30`, `0.5`).
fn seconds(d: Duration) -> String {
    d.as_secs_f64().to_string()
}

/// How many JSON values `body` holds, object keys counted, as its bytes
/// show them without a parse: each string (skipped whole), array, object
/// and scalar counts one. Exact for JSON; what is not JSON is rmcp's to
/// refuse. The count stops past `max`.
fn json_values(body: &[u8], max: usize) -> usize {
    let mut count = 0;
    let mut in_scalar = false;
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'"' => {
                count += 1;
                in_scalar = false;
                i += 1;
                // To the closing quote, over escaped characters.
                loop {
                    match memchr::memchr2(b'"', b'\\', body.get(i..).unwrap_or_default()) {
                        Some(at) if body[i + at] == b'\\' => i += at + 2,
                        Some(at) => {
                            i += at;
                            break;
                        }
                        None => {
                            i = body.len();
                            break;
                        }
                    }
                }
            }
            b'[' | b'{' => {
                count += 1;
                in_scalar = false;
            }
            b']' | b'}' | b',' | b':' | b' ' | b'\t' | b'\n' | b'\r' => in_scalar = false,
            _ => {
                if !in_scalar {
                    count += 1;
                    in_scalar = true;
                }
            }
        }
        if count > max {
            break;
        }
        i += 1;
    }
    count
}

/// The body length a request declares, when it declares one.
fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The host of a `Host` value (or an `--allow-host` entry): lowercase,
/// without its port or an IPv6 address's brackets.
fn host_name(value: &str) -> String {
    let value = value.trim().to_ascii_lowercase();
    if let Some(rest) = value.strip_prefix('[') {
        return rest.split(']').next().unwrap_or_default().to_string();
    }
    match value.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => {
            host.to_string()
        }
        _ => value,
    }
}

fn is_loopback_name(host: &str) -> bool {
    host == "localhost"
        || host.ends_with(".localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// An origin as browsers send it and `--allow-origin` names it, made
/// comparable: `scheme://host:port`, lowercase, the scheme's default port
/// written out. `None` for what is not an origin (`null`, a path).
pub fn normal_origin(value: &str) -> Option<String> {
    let uri: http::Uri = value.trim().parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let authority = uri.authority()?;
    if authority.as_str().contains('@') || uri.path_and_query().is_some_and(|p| p.as_str() != "/") {
        return None;
    }
    let port = authority.port_u16().or(match scheme.as_str() {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    })?;
    Some(format!(
        "{scheme}://{}:{port}",
        authority.host().to_ascii_lowercase()
    ))
}

/// Whether every address `--listen` resolves to is a loopback one.
pub fn all_loopback(addrs: &[SocketAddr]) -> bool {
    !addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback())
}

/// rmcp's handler for one session, or for one request without a session.
/// It learns its caller from the request (the listener put it there) and
/// serves through a [`Connection`].
struct Handler {
    gateway: Arc<Gateway>,
    /// The session's connection, made at its first request.
    session: Mutex<Option<Arc<Connection>>>,
    /// The task that tells the session's client of reloads.
    reloads: Mutex<Option<tokio::task::AbortHandle>>,
}

impl Handler {
    fn new(gateway: Arc<Gateway>) -> Handler {
        Handler {
            gateway,
            session: Mutex::new(None),
            reloads: Mutex::new(None),
        }
    }

    /// The connection that serves a request: the session's (in the
    /// caller's context of now: a reload of the clients file moves it), or
    /// one made for a request without a session.
    fn connection(
        &self,
        request: &RequestContext<RoleServer>,
    ) -> Result<Arc<Connection>, McpError> {
        let peer = &request.peer;
        // The client's own name: in each request's `_meta` from 2026-07-28
        // on, from `initialize` before. Only the name is read (rmcp's
        // `client_info()` would copy the whole of what the client sent).
        let client = request
            .meta
            .get("io.modelcontextprotocol/clientInfo")
            .and_then(|info| info.get("name"))
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
            .or_else(|| peer.peer_info().map(|i| i.client_info.name.clone()));
        let parts = request.extensions.get::<http::request::Parts>();
        let Some(caller) = parts.and_then(|p| p.extensions.get::<Caller>()) else {
            return Err(McpError::internal_error(
                "the request reached MCP without a caller",
                None,
            ));
        };
        let failed = |e: crate::ContextError| refused_context(caller, &e);
        let in_session = parts.is_some_and(|p| p.headers.contains_key(SESSION_HEADER));
        if !in_session {
            let connection =
                Connection::stateless(Arc::clone(&self.gateway), caller.context.clone())
                    .map_err(failed)?;
            connection.set_caller(caller.name.as_deref());
            connection.set_client(client.as_deref());
            return Ok(Arc::new(connection));
        }
        let mut slot = lock(&self.session);
        if let Some(connection) = &*slot {
            connection
                .set_context(caller.context.clone())
                .map_err(failed)?;
            return Ok(Arc::clone(connection));
        }
        let connection = Arc::new(
            Connection::new(Arc::clone(&self.gateway), caller.context.clone()).map_err(failed)?,
        );
        connection.set_caller(caller.name.as_deref());
        connection.set_client(client.as_deref());
        let task = tokio::spawn(connection::tell_reloads(
            Arc::clone(&self.gateway),
            peer.clone(),
        ));
        *lock(&self.reloads) = Some(task.abort_handle());
        *slot = Some(Arc::clone(&connection));
        Ok(connection)
    }
}

/// A caller whose context the policy refuses (a token's mode the policy
/// does not declare) is told its own value, and no more: the help that
/// lists the policy's modes and flags would show other callers' ones. The
/// whole of it goes to the gateway's log.
fn refused_context(caller: &Caller, e: &crate::ContextError) -> McpError {
    let who = caller
        .name
        .as_deref()
        .map(|n| format!(" `{}`", crate::chars::escape_name(n)))
        .unwrap_or_default();
    log!("error: the policy cannot serve the context of caller{who}: {e}");
    McpError::internal_error(
        format!(
            "the policy cannot serve this caller's context: {}",
            e.message
        ),
        None,
    )
}

impl Drop for Handler {
    fn drop(&mut self) {
        if let Some(task) = lock(&self.reloads).take() {
            task.abort();
        }
    }
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        connection::server_info()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let connection = self.connection(&context)?;
        // Boxed, as every handler future here: see `call_tool`.
        Box::pin(async move { ServerHandler::list_tools(&*connection, request, context).await })
            .await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let connection = self.connection(&context)?;
        // Boxed: rmcp's session task awaits the handler's request future in
        // place during the handshake, so it keeps room for the largest one
        // for as long as the session lives, and a forwarded call's is tens
        // of KiB. Boxed, it takes that room only while a call runs.
        Box::pin(async move { ServerHandler::call_tool(&*connection, request, context).await })
            .await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        connection::subscription_filter(requested)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        Box::pin(connection::listen_for_reloads(&self.gateway, context)).await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_compare_by_scheme_host_and_port() {
        assert_eq!(
            normal_origin("HTTPS://App.Example.com"),
            Some("https://app.example.com:443".into())
        );
        assert_eq!(
            normal_origin("http://localhost:5173"),
            Some("http://localhost:5173".into())
        );
        assert_eq!(
            normal_origin("https://a.example:443/"),
            normal_origin("https://a.example")
        );
        assert_ne!(
            normal_origin("http://a.example"),
            normal_origin("https://a.example")
        );
        for not_an_origin in [
            "null",
            "a.example",
            "https://a.example/path",
            "https://u@a.example",
            "",
        ] {
            assert_eq!(normal_origin(not_an_origin), None, "{not_an_origin}");
        }
    }

    /// A route added beside `/mcp` (where a `/metrics` page goes) answers
    /// its path; other paths stay 404, and `/mcp` stays MCP's.
    #[tokio::test]
    async fn a_route_added_beside_mcp_answers_its_path() {
        let policy = crate::Policy::parse("test.policy", "Defer(*)\n").unwrap();
        let options = super::super::Options {
            policy_path: "test.policy".into(),
            context: Context::default(),
            exposure: super::super::Exposure::Call,
            call_tool: "call_tool".into(),
            call_timeout: Duration::from_secs(1),
            start_timeout: Duration::from_secs(1),
        };
        let (gateway, _, _) = Gateway::start(options, policy, Vec::new()).await;
        let listener = Listener::new(
            gateway,
            ListenOptions::default(),
            Callers::CommandLine(Context::default()),
        );
        listener.route(Arc::new(|parts: &http::request::Parts| {
            (parts.uri.path() == "/metrics").then(|| plain(StatusCode::OK, "requests 0"))
        }));
        let remote: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let get = |path: &str| {
            Request::get(path)
                .header(header::HOST, "127.0.0.1")
                .body(http_body_util::Empty::<Bytes>::new())
                .unwrap()
        };
        let metrics = listener.handle(get("/metrics"), remote).await;
        assert_eq!(metrics.status(), StatusCode::OK);
        let body = metrics.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], b"requests 0\n");
        assert_eq!(
            listener.handle(get("/other"), remote).await.status(),
            StatusCode::NOT_FOUND
        );
        // A GET of `/mcp` without a session is MCP's to refuse, not the route's.
        let mcp = listener.handle(get("/mcp"), remote).await;
        assert_ne!(mcp.status(), StatusCode::OK);
        assert_ne!(mcp.status(), StatusCode::NOT_FOUND);
    }

    #[test]
    fn json_values_are_counted_without_a_parse() {
        let count = |text: &str| json_values(text.as_bytes(), 1000);
        assert_eq!(count(r#"{"a": [0, -1.5e3, true, null, "x"]}"#), 8);
        // Brackets, commas and quotes inside strings are the string's.
        assert_eq!(count(r#"["a\"b,[{", "\\", "c:}"]"#), 4);
        assert_eq!(count(" [ 1 ,\n2\t]\r\n"), 3);
        assert_eq!(count("{}"), 1);
        assert_eq!(count(""), 0);
        // Not JSON: a count all the same, and no panic.
        for broken in [r#"["abc"#, "\"\\", "[1 2", "\\", "]]]"] {
            assert!(count(broken) <= broken.len(), "{broken}");
        }
        // Counting stops past the bound.
        assert_eq!(json_values(b"[0,0,0,0,0,0]", 2), 3);
    }

    fn open(share: &str, idle_ms: u64, busy: u32) -> Open {
        Open {
            owner: Some(share.into()),
            share: share.into(),
            last: Instant::now() - Duration::from_millis(idle_ms),
            busy,
        }
    }

    /// Past the bound, a caller over its share loses its own longest idle
    /// session, and one within it ends the longest idle of whoever holds
    /// the most; a busy session is never ended, and a caller over its
    /// share never ends another's.
    #[test]
    fn past_the_bound_the_session_to_end_is_of_a_caller_over_its_share() {
        let sessions = |list: &[(&str, &str, u64, u32)]| -> HashMap<Arc<str>, Open> {
            list.iter()
                .map(|&(id, who, idle, busy)| (Arc::from(id), open(who, idle, busy)))
                .collect()
        };
        // Bob holds three of four, Alice opens her first: Bob's longest idle.
        let s = sessions(&[
            ("b1", "bob", 300, 0),
            ("b2", "bob", 200, 0),
            ("b3", "bob", 100, 0),
            ("b4", "bob", 900, 1),
            ("a1", "alice", 0, 0),
        ]);
        assert_eq!(to_end(&s, "a1", "alice", 4).as_deref(), Some("b1"));
        // Alice within her share, though her session is the longest idle.
        let s = sessions(&[
            ("a1", "alice", 900, 0),
            ("b1", "bob", 100, 0),
            ("b2", "bob", 200, 0),
            ("b3", "bob", 0, 0),
        ]);
        assert_eq!(to_end(&s, "b3", "bob", 3).as_deref(), Some("b2"));
        // Bob over his share with only busy sessions: none of Alice's ends.
        let s = sessions(&[
            ("a1", "alice", 900, 0),
            ("b1", "bob", 100, 1),
            ("b2", "bob", 200, 1),
            ("b3", "bob", 0, 0),
        ]);
        assert_eq!(to_end(&s, "b3", "bob", 3), None);
        // One caller alone: its own longest idle, as before there were shares.
        let s = sessions(&[("x1", "x", 500, 0), ("x2", "x", 900, 0), ("x3", "x", 0, 0)]);
        assert_eq!(to_end(&s, "x3", "x", 2).as_deref(), Some("x2"));
    }

    #[test]
    fn host_names_drop_port_and_brackets() {
        assert_eq!(host_name("LocalHost:8080"), "localhost");
        assert_eq!(host_name("[::1]:8080"), "::1");
        assert_eq!(host_name("127.0.0.1"), "127.0.0.1");
        assert_eq!(host_name("::1"), "::1");
        assert!(is_loopback_name("::1"));
        assert!(is_loopback_name("127.0.0.2"));
        assert!(is_loopback_name("localhost"));
        assert!(!is_loopback_name("localhost.example.com"));
        assert!(!is_loopback_name("192.168.1.2"));
    }
}

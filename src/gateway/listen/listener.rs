//! The listener itself: what it holds, how it is made, and the order in
//! which it answers a request (the steps the module documentation lists);
//! and the accept loop that hands it each connection.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use http::header::{self};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full};
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use tokio::sync::Semaphore;

use super::super::Gateway;
use super::super::body::Body;
use super::super::session_id::{SessionIds, SessionKey};
use super::super::sessions::{self, Making, Sessions};
use super::answer::{declared_length, lock, plain};
use super::callers::Callers;
use super::handler::Handler;
use super::options::{
    FIRST_STATELESS, ListenOptions, MCP_PATH, METADATA_PATH, METHOD_HEADER, METRICS_PATH,
    MetricsPage, Route, SESSION_HEADER, VERSION_HEADER,
};

/// One open session as the listener sees it.
pub(super) struct Open {
    /// The caller who opened it; only they may use it.
    pub(super) owner: Option<Arc<str>>,
    /// The caller whose share of `--max-sessions` it takes: the owner, or
    /// the client's address where callers are not named.
    pub(super) share: Arc<str>,
    /// When its last request ended (or began, while `busy`).
    pub(super) last: Instant,
    /// Requests of it in flight: a busy session is never idle.
    pub(super) busy: u32,
    /// When its id stops being valid (`--session-max-age`).
    pub(super) expires: SystemTime,
}

/// The listener: its options, its callers, rmcp's service and the state
/// of its sessions and limits. Shared by every connection.
pub struct Listener {
    pub(super) options: ListenOptions,
    pub(super) callers: Callers,
    pub(super) service: StreamableHttpService<Handler, Sessions>,
    pub(super) manager: Arc<Sessions>,
    /// Makes and checks session ids; `None` only where the system's random
    /// source failed (then rmcp's ids, which no process recreates).
    pub(super) ids: Option<SessionIds>,
    /// Whether a session this process does not hold is recreated from its
    /// id (the key is shared).
    pub(super) recreates: bool,
    pub(super) sessions: Mutex<HashMap<Arc<str>, Open>>,
    pub(super) all: Arc<Semaphore>,
    pub(super) per_caller: Mutex<HashMap<String, Arc<Semaphore>>>,
    pub(super) routes: Mutex<Vec<Route>>,
    /// The page `/metrics` serves (the exposition text and its content
    /// type), when the gateway counts its events.
    pub(super) metrics: Mutex<Option<MetricsPage>>,
    /// Set at shutdown: requests from then on are refused.
    pub(super) closing: std::sync::atomic::AtomicBool,
    /// `/healthz`, `/readyz`, and the requests in flight a drain waits for.
    pub(super) health: Arc<super::super::health::Health>,
}

impl Listener {
    pub fn new(gateway: Arc<Gateway>, options: ListenOptions, callers: Callers) -> Arc<Listener> {
        // Sessions end by the listener's own idle clock, which a long call
        // does not run down.
        let manager = Arc::new(Sessions::default());
        let health = super::super::health::Health::new(Arc::clone(&gateway));
        // Host and Origin are checked before rmcp sees the request.
        let mut config = StreamableHttpServerConfig::default()
            .disable_allowed_hosts()
            .disable_allowed_origins()
            .with_legacy_session_mode(!options.stateless)
            .with_json_response(true)
            // The listener has read and bounded the body already.
            .with_max_request_body_bytes(options.max_body);
        let recreates = options.session_key.is_some() && !options.stateless;
        if recreates {
            // rmcp's restore path recreates a session the listener verified.
            config.session_store = Some(Arc::new(sessions::Recreations));
        }
        let key = options.session_key.clone().or_else(|| {
            SessionKey::random()
                .inspect_err(|e| log!("warning: session ids are not signed: {e}"))
                .ok()
        });
        let ids = key.map(|key| SessionIds::new(&key, options.session_max_age));
        let service = StreamableHttpService::new(
            move || Ok(Handler::new(Arc::clone(&gateway), recreates)),
            Arc::clone(&manager),
            config,
        );
        Arc::new(Listener {
            all: Arc::new(Semaphore::new(options.max_concurrent.max(1))),
            options,
            callers,
            service,
            manager,
            ids,
            recreates,
            sessions: Mutex::new(HashMap::new()),
            per_caller: Mutex::new(HashMap::new()),
            routes: Mutex::new(Vec::new()),
            metrics: Mutex::new(None),
            closing: std::sync::atomic::AtomicBool::new(false),
            health,
        })
    }

    /// Its health, and the drain SIGTERM starts.
    pub fn health(&self) -> &Arc<super::super::health::Health> {
        &self.health
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
        let health = &self.health;
        if let Some(page) = health.answer(request.method(), request.uri().path()).await {
            return page;
        }
        if self.closing.load(std::sync::atomic::Ordering::Relaxed) || health.draining() {
            let mut response = plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "service unavailable: the gateway is shutting down",
            );
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return response;
        }
        // Counted until its answer is sent: a drain waits for it.
        let flight = health.enter();
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
        // A stream lasts as long as its client wants: a drain ends it.
        let flight = (!streaming).then_some(flight);
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
        let deletes = parts.method == Method::DELETE;
        let mut making = None;
        let session = match parts
            .headers
            .get(SESSION_HEADER)
            .map(|v| v.to_str().unwrap_or_default())
        {
            None => {
                if parts.method == Method::POST && !self.options.stateless {
                    making = self.mint(&body[..], &caller).map(Making::New);
                }
                None
            }
            Some(id) => match self.enter(id, &caller, !streaming, &key, deletes) {
                Some((entered, again)) => {
                    making =
                        again.map(|claims| Making::Again(id.into(), Box::new(claims.initialize())));
                    Some(entered)
                }
                None => {
                    return plain(
                        StatusCode::NOT_FOUND,
                        "not found: the session ended or never was; start a new one",
                    );
                }
            },
        };
        let opens = session.is_none() && parts.method == Method::POST;
        let mut request = Request::from_parts(parts, Full::new(body));
        request.extensions_mut().insert(caller.clone());
        let mut response = match making {
            Some(making) => sessions::making(making, self.service.handle(request)).await,
            None => self.service.handle(request).await,
        };
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

        let held = (mine, all, session, flight);
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
    pub(super) fn metrics_page(&self, page: &MetricsPage, method: &Method) -> Response<Body> {
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
    pub(super) fn elsewhere<B>(&self, request: Request<B>) -> Response<Body> {
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
}

impl Listener {
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
pub(super) const HEADER_WAIT: Duration = Duration::from_secs(30);

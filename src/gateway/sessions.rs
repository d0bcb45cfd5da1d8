//! The HTTP listener's sessions (docs/gateway.md, "Serving a team over
//! HTTP"): rmcp's `SessionManager`, made light enough to keep a thousand
//! idle sessions open.
//!
//! rmcp's own manager runs a worker task per session between the HTTP side
//! and the session's MCP service, with five channels of its own; a channel
//! holds a block of 32 message slots from the start, several hundred bytes
//! each, so a session took about 80 KiB before it did anything
//! (docs/performance.md). Here a session is an entry in a map, one channel
//! of boxed messages into its service (a block of 32 pointers), and the
//! table that says where the service's messages go. They are routed as the
//! service sends them, with no task between:
//!
//! - an answer (or an error) goes to the stream of the request it answers,
//!   and ends it; the answer to `initialize` goes back to the handshake;
//! - a progress notification goes to the stream of the request that gave
//!   its token, a cancellation or a request of the server's to the stream of
//!   the request it belongs to (SEP-2260);
//! - anything else to the session's `GET` stream, or, while none is open,
//!   into a backlog of at most [`BACKLOG`] messages that the next `GET`
//!   stream receives first.
//!
//! Event IDs are rmcp's: `index/stream` on a request's stream, `index` on the
//! `GET` stream, so a client that lost a request's stream resumes it with
//! `Last-Event-ID` and gets what it missed (the last [`REPLAY`] events).
//!
//! A session's ID is the listener's to make (a signed one, see
//! [`super::session_id`]): rmcp asks for a new session without saying for
//! whom, so the listener names the ID for the request it hands rmcp
//! ([`making`]). A session this process does not hold is recreated under
//! its ID the same way: the listener verified the ID and names the
//! handshake to replay; rmcp's restore path ([`Recreations`], the store it
//! loads a session's handshake from) replays it into a new service.

use std::collections::{HashMap, HashSet, VecDeque};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use rmcp::RoleServer;
use rmcp::model::InitializeRequestParams;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, GetExtensions as _, GetMeta as _, JsonRpcMessage,
    ProgressToken, RequestId, ServerJsonRpcMessage, ServerNotification,
};
use rmcp::service::OriginatingRequestId;
use rmcp::transport::Transport;
use rmcp::transport::common::server_side_http::{ServerSseMessage, SessionId, session_id};
use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};
use rmcp::transport::streamable_http_server::{RestoreOutcome, SessionManager};
use tokio::sync::{mpsc, oneshot};

/// Client messages queued for a session's service.
const INBOX: usize = 16;
/// Messages queued on one stream for the client to read.
const STREAM: usize = 32;
/// Messages for the `GET` stream kept while none is open.
pub const BACKLOG: usize = 16;
/// Events of a request's stream kept for a client that resumes it.
pub const REPLAY: usize = 16;
/// `GET` streams beside the first (kept open, fed nothing), as rmcp allows.
const SHADOWS: usize = 32;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Why a session cannot do what was asked.
#[derive(Debug)]
pub enum SessionError {
    /// No session has this ID (never had, or it ended).
    Unknown,
    /// The session ended while the request was under way.
    Ended,
    /// A `Last-Event-ID` this gateway did not give, or for a stream that
    /// has ended.
    NoSuchEvent(String),
}

impl std::fmt::Display for SessionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SessionError::Unknown => write!(f, "no such session"),
            SessionError::Ended => write!(f, "the session ended"),
            SessionError::NoSuchEvent(id) => write!(f, "no stream to resume at event `{id}`"),
        }
    }
}

impl std::error::Error for SessionError {}

/// What the request under way makes, as the listener names it.
#[derive(Debug, Clone)]
pub enum Making {
    /// A new session, under this ID.
    New(SessionId),
    /// Session `.0`, which this process does not hold, again: its ID was
    /// verified, and its handshake is `.1`.
    Again(SessionId, Box<InitializeRequestParams>),
}

tokio::task_local! {
    static MAKING: Making;
}

/// Runs `serve` (rmcp's handling of one request) making what `making`
/// says: rmcp asks for sessions on the request's own task.
pub async fn making<F: Future>(making: Making, serve: F) -> F::Output {
    MAKING.scope(making, serve).await
}

/// The store rmcp's restore path loads a session's handshake from: the
/// one the listener named for the request under way, for its session alone.
/// Nothing is stored: the ID carries what a recreation needs.
pub struct Recreations;

#[async_trait::async_trait]
impl SessionStore for Recreations {
    async fn load(&self, id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        Ok(MAKING
            .try_with(|making| match making {
                Making::Again(again, handshake) if &**again == id => {
                    Some(SessionState::new((**handshake).clone()))
                }
                _ => None,
            })
            .ok()
            .flatten())
    }

    async fn store(&self, _: &str, _: &SessionState) -> Result<(), SessionStoreError> {
        Ok(())
    }

    async fn delete(&self, _: &str) -> Result<(), SessionStoreError> {
        Ok(())
    }
}

/// The listener's sessions.
pub struct Sessions {
    map: Mutex<HashMap<SessionId, Entry>>,
    /// The reconnection delay told to clients first on each request's stream.
    retry: Option<Duration>,
}

impl Default for Sessions {
    fn default() -> Sessions {
        Sessions {
            map: Mutex::new(HashMap::new()),
            retry: Some(Duration::from_secs(3)),
        }
    }
}

/// One session as the map holds it: the way into its service and the
/// table its service's messages are routed by.
#[derive(Clone)]
struct Entry {
    inbox: mpsc::Sender<Box<ClientJsonRpcMessage>>,
    routes: Arc<Mutex<Routes>>,
}

impl Entry {
    /// The session's routes, while it has not ended.
    fn open_routes(&self) -> Result<std::sync::MutexGuard<'_, Routes>, SessionError> {
        let routes = lock(&self.routes);
        if routes.closed {
            return Err(SessionError::Ended);
        }
        Ok(routes)
    }
}

/// Where a session's service's messages go.
#[derive(Default)]
struct Routes {
    /// The session ended: nothing is routed any more.
    closed: bool,
    /// The `initialize` request waiting for its answer.
    init: Option<(RequestId, oneshot::Sender<ServerJsonRpcMessage>)>,
    /// Requests under way, each with the stream its answer goes to.
    requests: HashMap<RequestId, Pending>,
    /// Progress tokens of requests under way.
    progress: HashMap<ProgressToken, RequestId>,
    /// The number the next request's stream gets (its event IDs name it).
    next_stream: u64,
    /// The `GET` stream, when one is open.
    common: Option<mpsc::Sender<ServerSseMessage>>,
    /// Further `GET` streams, kept open and fed nothing.
    shadows: Vec<mpsc::Sender<ServerSseMessage>>,
    /// What the `GET` stream missed while none was open.
    backlog: VecDeque<ServerSseMessage>,
    /// The next event index on the `GET` stream.
    common_index: usize,
}

/// A request under way: the stream its answer goes to.
struct Pending {
    stream: u64,
    tx: mpsc::Sender<ServerSseMessage>,
    /// The events sent so far (the last [`REPLAY`]), for a client that
    /// resumes the stream.
    sent: VecDeque<ServerSseMessage>,
    next_index: usize,
    progress: Option<ProgressToken>,
}

impl Pending {
    /// The next event ID on this stream.
    fn next_id(&mut self) -> String {
        let id = format!("{}/{}", self.next_index, self.stream);
        self.next_index += 1;
        id
    }

    fn keep(&mut self, event: &ServerSseMessage) {
        if self.sent.len() == REPLAY {
            self.sent.pop_front();
        }
        self.sent.push_back(event.clone());
    }
}

/// Where one message of the service's goes, found under the lock and
/// delivered outside it.
enum Delivery {
    Nowhere,
    Init(
        oneshot::Sender<ServerJsonRpcMessage>,
        Box<ServerJsonRpcMessage>,
    ),
    Stream(mpsc::Sender<ServerSseMessage>, ServerSseMessage),
}

impl Delivery {
    async fn deliver(self) {
        match self {
            Delivery::Nowhere => {}
            Delivery::Init(tx, message) => {
                let _ = tx.send(*message);
            }
            // A client that stopped reading has dropped its stream: the
            // message has nobody to go to.
            Delivery::Stream(tx, event) => {
                let _ = tx.send(event).await;
            }
        }
    }
}

impl Routes {
    fn close(&mut self) {
        self.closed = true;
        self.init = None;
        self.requests.clear();
        self.progress.clear();
        self.common = None;
        self.shadows.clear();
        self.backlog.clear();
    }

    /// Where `message` goes (see the module's comment).
    fn route(&mut self, message: ServerJsonRpcMessage) -> Delivery {
        if self.closed {
            return Delivery::Nowhere;
        }
        let request = match &message {
            JsonRpcMessage::Response(r) => Some((r.id.clone(), true)),
            JsonRpcMessage::Error(e) => e.id.clone().map(|id| (id, true)),
            JsonRpcMessage::Notification(n) => match &n.notification {
                ServerNotification::ProgressNotification(p) => self
                    .progress
                    .get(&p.params.progress_token)
                    .map(|id| (id.clone(), false)),
                ServerNotification::CancelledNotification(c) => {
                    c.params.request_id.clone().map(|id| (id, false))
                }
                _ => None,
            },
            JsonRpcMessage::Request(r) => r
                .request
                .extensions()
                .get::<OriginatingRequestId>()
                .map(|o| (o.0.clone(), false)),
        };
        if let Some((id, answers)) = request {
            if answers && self.init.as_ref().is_some_and(|(i, _)| *i == id) {
                let (_, tx) = self.init.take().expect("checked above");
                return Delivery::Init(tx, Box::new(message));
            }
            if answers && let Some(mut pending) = self.requests.remove(&id) {
                if let Some(token) = &pending.progress {
                    self.progress.remove(token);
                }
                let event = ServerSseMessage::new(pending.next_id(), message);
                // The sender goes with the delivery: the stream ends after it.
                return Delivery::Stream(pending.tx, event);
            }
            if !answers && let Some(pending) = self.requests.get_mut(&id) {
                let event = ServerSseMessage::new(pending.next_id(), message);
                pending.keep(&event);
                return Delivery::Stream(pending.tx.clone(), event);
            }
        }
        let event = ServerSseMessage::new(self.common_index.to_string(), message);
        self.common_index += 1;
        match &self.common {
            Some(tx) if !tx.is_closed() => Delivery::Stream(tx.clone(), event),
            _ => {
                self.common = None;
                if self.backlog.len() == BACKLOG {
                    self.backlog.pop_front();
                }
                self.backlog.push_back(event);
                Delivery::Nowhere
            }
        }
    }

    /// A `GET` stream: the first open one gets the backlog and what comes
    /// next; while it is open, another is kept open and fed nothing (rmcp's
    /// shadow streams: clients that open several do not close each other's).
    fn open_common(&mut self) -> mpsc::Receiver<ServerSseMessage> {
        if let Some(tx) = &self.common
            && !tx.is_closed()
        {
            let (tx, rx) = mpsc::channel(1);
            self.shadows.retain(|s| !s.is_closed());
            if self.shadows.len() >= SHADOWS {
                self.shadows.remove(0);
            }
            self.shadows.push(tx);
            return rx;
        }
        let (tx, rx) = mpsc::channel(STREAM.max(BACKLOG));
        for event in self.backlog.drain(..) {
            // The channel is empty and holds the whole backlog.
            let _ = tx.try_send(event);
        }
        self.common = Some(tx);
        rx
    }
}

/// The messages of one stream, as rmcp's HTTP side reads them.
pub struct Events(mpsc::Receiver<ServerSseMessage>);

impl Stream for Events {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx)
    }
}

/// A session's end of the channel its service reads, and the table its
/// messages are routed by.
pub struct SessionTransport {
    inbox: mpsc::Receiver<Box<ClientJsonRpcMessage>>,
    routes: Arc<Mutex<Routes>>,
}

impl Drop for SessionTransport {
    /// The service is gone: whoever waits for an answer from it hears so.
    fn drop(&mut self) {
        lock(&self.routes).close();
    }
}

impl Transport<RoleServer> for SessionTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let delivery = lock(&self.routes).route(item);
        async move {
            delivery.deliver().await;
            Ok(())
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        self.inbox.recv().await.map(|m| *m)
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inbox.close();
        lock(&self.routes).close();
        Ok(())
    }
}

impl Sessions {
    /// The IDs of the open sessions.
    pub fn ids(&self) -> HashSet<SessionId> {
        lock(&self.map).keys().cloned().collect()
    }

    /// Whether session `id` is open here.
    pub fn holds(&self, id: &str) -> bool {
        lock(&self.map).contains_key(id)
    }

    /// How many sessions are open.
    pub fn len(&self) -> usize {
        lock(&self.map).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A new entry under `id`, and its service's transport.
    fn insert(&self, id: SessionId) -> SessionTransport {
        let (inbox, rx) = mpsc::channel(INBOX);
        let routes = Arc::new(Mutex::new(Routes::default()));
        lock(&self.map).insert(
            id,
            Entry {
                inbox,
                routes: Arc::clone(&routes),
            },
        );
        SessionTransport { inbox: rx, routes }
    }

    fn entry(&self, id: &SessionId) -> Result<Entry, SessionError> {
        lock(&self.map)
            .get(id)
            .cloned()
            .ok_or(SessionError::Unknown)
    }

    /// Hands `message` to the session's service.
    async fn push(entry: &Entry, message: ClientJsonRpcMessage) -> Result<(), SessionError> {
        entry
            .inbox
            .send(Box::new(message))
            .await
            .map_err(|_| SessionError::Ended)
    }
}

impl SessionManager for Sessions {
    type Error = SessionError;
    type Transport = SessionTransport;

    async fn create_session(&self) -> Result<(SessionId, SessionTransport), SessionError> {
        // The listener's ID, unless it named none (or one already open).
        let named = MAKING
            .try_with(|making| match making {
                Making::New(id) => Some(id.clone()),
                Making::Again(..) => None,
            })
            .ok()
            .flatten()
            .filter(|id| !lock(&self.map).contains_key(id));
        let id = named.unwrap_or_else(session_id);
        Ok((id.clone(), self.insert(id)))
    }

    /// Session `id` again, under its ID (the listener verified it).
    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<SessionTransport>, SessionError> {
        if lock(&self.map).contains_key(&id) {
            return Ok(RestoreOutcome::AlreadyPresent);
        }
        Ok(RestoreOutcome::Restored(self.insert(id)))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, SessionError> {
        let entry = self.entry(id)?;
        let (tx, rx) = oneshot::channel();
        if let JsonRpcMessage::Request(request) = &message {
            let mut routes = entry.open_routes()?;
            routes.init = Some((request.id.clone(), tx));
        }
        Self::push(&entry, message).await?;
        rx.await.map_err(|_| SessionError::Ended)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, SessionError> {
        Ok(lock(&self.map).contains_key(id))
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), SessionError> {
        // Its inbox's sender goes with the entry: the service reads the
        // end of its input and stops.
        if let Some(entry) = lock(&self.map).remove(id) {
            lock(&entry.routes).close();
        }
        Ok(())
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionError> {
        let entry = self.entry(id)?;
        let (tx, rx) = mpsc::channel(STREAM);
        if let JsonRpcMessage::Request(request) = &message {
            let mut routes = entry.open_routes()?;
            let stream = routes.next_stream;
            routes.next_stream += 1;
            let progress = request.request.get_meta().get_progress_token();
            let mut pending = Pending {
                stream,
                tx,
                sent: VecDeque::new(),
                next_index: 0,
                progress: progress.clone(),
            };
            if let Some(retry) = self.retry {
                let priming = ServerSseMessage::priming(pending.next_id(), retry);
                pending.keep(&priming);
                // The channel is new and empty.
                let _ = pending.tx.try_send(priming);
            }
            if let Some(token) = progress {
                routes.progress.insert(token, request.id.clone());
            }
            routes.requests.insert(request.id.clone(), pending);
        }
        Self::push(&entry, message).await?;
        Ok(Events(rx))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), SessionError> {
        let entry = self.entry(id)?;
        if let JsonRpcMessage::Notification(n) = &message
            && let ClientNotification::CancelledNotification(c) = &n.notification
            && let Some(request) = &c.params.request_id
        {
            // The client gave up on the request: its stream ends now, as
            // rmcp's manager ends it.
            let mut routes = lock(&entry.routes);
            if let Some(pending) = routes.requests.remove(request)
                && let Some(token) = pending.progress
            {
                routes.progress.remove(&token);
            }
        }
        Self::push(&entry, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionError> {
        let entry = self.entry(id)?;
        let mut routes = entry.open_routes()?;
        Ok(Events(routes.open_common()))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionError> {
        let entry = self.entry(id)?;
        let mut routes = entry.open_routes()?;
        let unknown = || SessionError::NoSuchEvent(last_event_id.clone());
        let Some((index, stream)) = last_event_id.split_once('/') else {
            // The `GET` stream: what it missed is in the backlog.
            last_event_id.parse::<usize>().map_err(|_| unknown())?;
            return Ok(Events(routes.open_common()));
        };
        let index: usize = index.parse().map_err(|_| unknown())?;
        let stream: u64 = stream.parse().map_err(|_| unknown())?;
        let pending = routes
            .requests
            .values_mut()
            .find(|p| p.stream == stream)
            .ok_or_else(unknown)?;
        let (tx, rx) = mpsc::channel(STREAM.max(REPLAY));
        for event in &pending.sent {
            let seen = event
                .event_id
                .as_deref()
                .and_then(|e| e.split('/').next())
                .and_then(|i| i.parse::<usize>().ok())
                .is_some_and(|i| i <= index);
            if !seen {
                let _ = tx.try_send(event.clone());
            }
        }
        // The stream the client lost ends; this one takes its place.
        pending.tx = tx;
        Ok(Events(rx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(json: serde_json::Value) -> ClientJsonRpcMessage {
        serde_json::from_value(json).unwrap()
    }

    fn server(json: serde_json::Value) -> ServerJsonRpcMessage {
        serde_json::from_value(json).unwrap()
    }

    /// The next event of `stream`, `None` at its end; waits at most a second.
    async fn next(
        stream: &mut (impl Stream<Item = ServerSseMessage> + Unpin),
    ) -> Option<ServerSseMessage> {
        let poll = std::future::poll_fn(|cx| Pin::new(&mut *stream).poll_next(cx));
        tokio::time::timeout(Duration::from_secs(1), poll)
            .await
            .expect("an event or the end within a second")
    }

    /// The event's ID and its message's JSON (`null` for a priming event).
    fn seen(event: &ServerSseMessage) -> (String, serde_json::Value) {
        (
            event.event_id.clone().unwrap_or_default(),
            serde_json::to_value(event.message.as_deref()).unwrap(),
        )
    }

    fn call(id: u64) -> ClientJsonRpcMessage {
        client(
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "x", "_meta": {"progressToken": "p"}}}),
        )
    }

    fn progress() -> ServerJsonRpcMessage {
        server(
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": "p", "progress": 1}}),
        )
    }

    fn answer(id: u64) -> ServerJsonRpcMessage {
        server(serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {"content": []}}))
    }

    fn list_changed() -> ServerJsonRpcMessage {
        server(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}))
    }

    #[tokio::test]
    async fn a_request_s_stream_gets_its_progress_and_its_answer_then_ends() {
        let sessions = Sessions::default();
        let (id, mut transport) = sessions.create_session().await.unwrap();
        let mut stream = sessions.create_stream(&id, call(1)).await.unwrap();
        assert!(matches!(
            transport.receive().await,
            Some(JsonRpcMessage::Request(_))
        ));
        transport.send(progress()).await.unwrap();
        // Not this request's: the `GET` stream's, kept until one opens.
        transport.send(list_changed()).await.unwrap();
        transport.send(answer(1)).await.unwrap();
        let priming = next(&mut stream).await.unwrap();
        assert_eq!(priming.event_id.as_deref(), Some("0/0"));
        assert_eq!(priming.retry, Some(Duration::from_secs(3)));
        let (event, message) = seen(&next(&mut stream).await.unwrap());
        assert_eq!(event, "1/0");
        assert_eq!(message["method"], "notifications/progress");
        let (event, message) = seen(&next(&mut stream).await.unwrap());
        assert_eq!(event, "2/0");
        assert_eq!(message["id"], 1);
        assert!(
            next(&mut stream).await.is_none(),
            "the answer ends the stream"
        );

        let mut common = sessions.create_standalone_stream(&id).await.unwrap();
        let (event, message) = seen(&next(&mut common).await.unwrap());
        assert_eq!(event, "0");
        assert_eq!(message["method"], "notifications/tools/list_changed");
        transport.send(list_changed()).await.unwrap();
        assert_eq!(seen(&next(&mut common).await.unwrap()).0, "1");
        // A second `GET` stream is kept open and fed nothing.
        let mut shadow = sessions.create_standalone_stream(&id).await.unwrap();
        transport.send(list_changed()).await.unwrap();
        assert_eq!(seen(&next(&mut common).await.unwrap()).0, "2");
        let nothing = std::future::poll_fn(|cx| Pin::new(&mut shadow).poll_next(cx));
        assert!(
            tokio::time::timeout(Duration::from_millis(50), nothing)
                .await
                .is_err()
        );
    }

    #[tokio::test]
    async fn a_resumed_stream_gets_what_came_after_the_last_event_seen() {
        let sessions = Sessions::default();
        let (id, mut transport) = sessions.create_session().await.unwrap();
        let mut lost = sessions.create_stream(&id, call(1)).await.unwrap();
        transport.receive().await.unwrap();
        assert_eq!(
            next(&mut lost).await.unwrap().event_id.as_deref(),
            Some("0/0")
        );
        transport.send(progress()).await.unwrap();
        drop(lost);
        let mut resumed = sessions.resume(&id, "0/0".into()).await.unwrap();
        assert_eq!(seen(&next(&mut resumed).await.unwrap()).0, "1/0");
        transport.send(answer(1)).await.unwrap();
        assert_eq!(seen(&next(&mut resumed).await.unwrap()).0, "2/0");
        assert!(next(&mut resumed).await.is_none());
        // An ended stream, or an ID never given, cannot be resumed.
        for gone in ["2/0", "0/9", "x", "1/y"] {
            assert!(sessions.resume(&id, gone.into()).await.is_err(), "{gone}");
        }
    }

    #[tokio::test]
    async fn initialize_gets_its_answer_or_hears_that_the_service_is_gone() {
        let sessions = Arc::new(Sessions::default());
        let init = || {
            client(
                serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"}}}),
            )
        };
        let (id, mut transport) = sessions.create_session().await.unwrap();
        let waiting = tokio::spawn({
            let (sessions, id) = (Arc::clone(&sessions), id.clone());
            async move { sessions.initialize_session(&id, init()).await }
        });
        assert!(transport.receive().await.is_some());
        transport.send(answer(0)).await.unwrap();
        let answered = waiting.await.unwrap().unwrap();
        assert!(matches!(answered, JsonRpcMessage::Response(_)));

        let (id, mut transport) = sessions.create_session().await.unwrap();
        let waiting = tokio::spawn({
            let (sessions, id) = (Arc::clone(&sessions), id.clone());
            async move { sessions.initialize_session(&id, init()).await }
        });
        assert!(transport.receive().await.is_some());
        drop(transport);
        assert!(matches!(waiting.await.unwrap(), Err(SessionError::Ended)));
    }

    #[tokio::test]
    async fn a_closed_session_ends_its_streams_and_its_service_s_input() {
        let sessions = Sessions::default();
        let (id, mut transport) = sessions.create_session().await.unwrap();
        let mut stream = sessions.create_stream(&id, call(1)).await.unwrap();
        let mut common = sessions.create_standalone_stream(&id).await.unwrap();
        transport.receive().await.unwrap();
        assert_eq!(sessions.ids().len(), 1);
        sessions.close_session(&id).await.unwrap();
        assert!(!sessions.has_session(&id).await.unwrap());
        assert!(sessions.is_empty());
        next(&mut stream).await.unwrap(); // the priming event, sent before
        assert!(next(&mut stream).await.is_none());
        assert!(next(&mut common).await.is_none());
        assert!(transport.receive().await.is_none());
        assert!(matches!(
            sessions.create_stream(&id, call(2)).await,
            Err(SessionError::Unknown)
        ));
    }

    #[tokio::test]
    async fn a_request_the_client_cancels_loses_its_stream() {
        let sessions = Sessions::default();
        let (id, mut transport) = sessions.create_session().await.unwrap();
        let mut stream = sessions.create_stream(&id, call(1)).await.unwrap();
        transport.receive().await.unwrap();
        let cancel = client(serde_json::json!({"jsonrpc": "2.0",
            "method": "notifications/cancelled", "params": {"requestId": 1}}));
        sessions.accept_message(&id, cancel).await.unwrap();
        assert!(matches!(
            transport.receive().await,
            Some(JsonRpcMessage::Notification(_))
        ));
        next(&mut stream).await.unwrap();
        assert!(next(&mut stream).await.is_none());
    }
}

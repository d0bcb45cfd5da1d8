//! What the listener is told: its paths and limits, its options, the routes
//! and the metrics page other parts of the gateway add.

use std::sync::Arc;
use std::time::Duration;

use http::Response;

use super::super::body::Body;
use super::super::session_id::SessionKey;

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
pub(super) const SESSION_HEADER: &str = "mcp-session-id";
/// The 2026-07-28 revision names each request's method in a header.
pub(super) const METHOD_HEADER: &str = "mcp-method";
pub(super) const VERSION_HEADER: &str = "mcp-protocol-version";
/// The first protocol revision without sessions.
pub(super) const FIRST_STATELESS: &str = "2026-07-28";

/// What the command line sets for the listener.
#[derive(Debug, Clone)]
pub struct ListenOptions {
    /// Every request is served without a session, whatever its era.
    pub stateless: bool,
    /// A session with no request for this long ends.
    pub session_idle: Duration,
    /// The key session ids are signed with, shared by the processes behind
    /// one address: then a process recreates a session it does not hold.
    /// `None`: a key of this process's own, and a session it does not hold
    /// is 404.
    pub session_key: Option<SessionKey>,
    /// A session id is valid for this long after it was made.
    pub session_max_age: Duration,
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
            session_key: None,
            session_max_age: Duration::from_secs(24 * 60 * 60),
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

/// A route other parts of the gateway add beside `/mcp` (a `/metrics`
/// page): given the request's head, its answer, or `None` to pass.
pub type Route = Arc<dyn Fn(&http::request::Parts) -> Option<Response<Body>> + Send + Sync>;

/// What `/metrics` serves: given the open sessions, the exposition text
/// and its content type.
#[derive(Clone)]
pub struct MetricsPage {
    pub render: Arc<dyn Fn(usize) -> (String, &'static str) + Send + Sync>,
}

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
//! 0. `/healthz` and `/readyz` ([`super::health`]), answered to anyone;
//!    during a drain, every other request is refused with 503;
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
//! 8. the session. Its id is signed ([`super::session_id`]): it binds the
//!    caller who opened it, the caller's context, the protocol version and
//!    when it was made, under a key (`--session-key-file`, shared by the
//!    processes behind one address; else one of this process's own). A
//!    session this process holds is served to the caller who opened it
//!    until `--session-max-age`. One it does not hold (another process
//!    opened it, or this one ended it), whose id verifies for this caller
//!    in this context under a shared key, is recreated under the same id:
//!    the handshake the id names is replayed into a new session, whose
//!    activations are empty and whose servers' sessions open at its first
//!    call. Any other id (another caller's, made before the caller's
//!    context changed, altered, expired, made under another key, or
//!    none) is 404 with the same body, and the client starts a new session,
//!    as MCP says.
//!
//! Every MCP request then carries its [`Caller`]. A request in a session
//! is served by that session's [`Connection`](super::connection::Connection), made at its first request
//! in the caller's context (a standard-input connection's behaviour); a
//! request without one by a [`Connection::stateless`](super::connection::Connection::stateless) made for it alone.

mod answer;
mod callers;
mod checks;
mod handler;
mod listener;
mod options;
mod session;
#[cfg(test)]
mod tests;

pub use super::body::Body;
pub use answer::{Refusal, all_loopback, normal_origin};
pub use callers::{Caller, Callers};
pub use listener::Listener;
pub use options::{
    BODY_WAIT, ListenOptions, MAX_BODY, MAX_VALUES, MCP_PATH, METADATA_PATH, METRICS_PATH,
    MetricsPage, Route,
};

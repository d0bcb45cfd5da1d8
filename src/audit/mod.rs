//! The audit log's events: what a session did with the tools it was given,
//! as plain data a front end subscribes to.
//!
//! A front end sets one [`AuditHook`] on the [`Engine`](crate::Engine)
//! (sessions made after take it) or on one [`Session`](crate::Session). The
//! session calls it, synchronously, with an [`Event`] after each operation:
//! a plan (`list`), a search, a load, a call, a prompt, a mode switch, a
//! restart, a compaction. The library does no I/O of its own: writing the
//! events somewhere is the hook's business ([`writer`] is the JSON Lines one
//! the front ends share). A session without a hook builds no event at all.
//!
//! Arguments and results of calls never reach an event: the library never
//! sees them.
//!
//! Reading logs back is the other half: [`read`] reads JSON Lines logs a
//! line at a time (bad lines named, never a stop), and [`sessions`] puts the
//! sessions back together from their events; [`report`] is what a policy
//! author tunes from (`policy report`, and the Node and Python modules'
//! `auditReport`/`audit_report`), [`learn`] the search terms they teach
//! (`policy learn`).

pub mod learn;
#[cfg(feature = "metrics")]
pub mod metrics;
pub mod read;
pub mod report;
pub mod sessions;
#[cfg(feature = "audit-log")]
pub mod writer;

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::decision::{CauseKind, Context};
use crate::runtime::ResultStatus;

/// The version of the log's schema, written in every event. A change that
/// removes or retypes a field bumps it; a new optional field does not.
pub const VERSION: u32 = 1;

/// A subscriber to a session's events. Called on the session's own thread:
/// it must be quick (queue, do not write).
pub type AuditHook = Arc<dyn Fn(&Event) + Send + Sync>;

/// One event of the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// [`VERSION`] when the event was made.
    pub version: u32,
    /// The session the event belongs to; none for engine-wide events
    /// (`reload`, `drift`, `dropped`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Who is calling, when a front end knows (a named client).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
    /// The client program, by the name it introduces itself with (MCP's
    /// `clientInfo`), when a front end is told it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The event belongs to one request that is part of no session (a
    /// request of MCP's 2026-07-28 revision over HTTP): `session` then names
    /// that request alone, and a reader groups such requests by `caller`,
    /// `client` and `context` to see what one client did over many.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sessionless: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<EventContext>,
    #[serde(flatten)]
    pub kind: EventKind,
}

/// The part of a session's context the log keeps: runtime grants are left
/// out (they may be per user).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EventContext {
    pub mode: Option<String>,
    pub bot: Option<String>,
    #[serde(default)]
    pub flags: Vec<String>,
}

impl EventContext {
    /// The context the event was logged in, to ask a policy about (no
    /// grants: a log holds none).
    pub fn to_context(&self) -> Context {
        Context {
            mode: self.mode.clone(),
            bot: self.bot.clone(),
            flags: self.flags.iter().cloned().collect(),
            grants: None,
        }
    }
}

impl From<&Context> for EventContext {
    fn from(c: &Context) -> Self {
        EventContext {
            mode: c.mode.clone(),
            bot: c.bot.clone(),
            flags: c.flags.iter().cloned().collect(),
        }
    }
}

/// The rule (or default) that decided a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventCause {
    pub kind: CauseKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
}

/// What a direct call got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Allowed,
    NotFound,
}

/// What a front end that forwards a call learnt from it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Forwarded {
    /// The server that answered.
    pub server: Option<String>,
    /// How long it took, in milliseconds.
    pub ms: Option<f64>,
    /// The result's own `isError`.
    pub is_error: Option<bool>,
}

/// Which event, and its own fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EventKind {
    /// A plan: what the model is given this turn.
    List {
        /// How many tools are declared.
        declared: usize,
        /// The declared tools apart from the engine's own search tools.
        names: Vec<String>,
        /// Tokens of the plan (declared tools, catalog, skills).
        tokens: u64,
        /// Tokens had every tool that is not hidden been declared.
        all_declared: u64,
    },
    Search {
        /// The query; left out when the front end is told to.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        query: Option<String>,
        /// Exact names asked for.
        names: Vec<String>,
        activated: Vec<String>,
        /// Named tools that were active already.
        #[serde(default)]
        already_active: Vec<String>,
        /// How many other matches were named, not activated.
        matches: usize,
        /// Those matches.
        #[serde(default)]
        matched: Vec<String>,
        /// Nothing was activated.
        empty: bool,
        status: ResultStatus,
    },
    Load {
        names: Vec<String>,
        activated: Vec<String>,
        unavailable: Vec<String>,
        status: ResultStatus,
    },
    /// A direct call. An allowed call is written when its result is known,
    /// with the result's status (and, from a front end that forwards it, the
    /// server, the time and `isError`); a refused one at once.
    Call {
        tool: String,
        outcome: Outcome,
        /// What decided the tool's exposure; none for an unknown tool.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cause: Option<EventCause>,
        /// Refused, and declared from the next step (`on_miss`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        declared_next_step: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<ResultStatus>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ms: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        is_error: Option<bool>,
    },
    Prompt,
    Mode {
        mode: Option<String>,
    },
    Restart,
    Compact {
        /// Tools whose evidence left the effective context.
        evidence_dropped: usize,
    },
    Reload {
        /// `policy`, `registry` or `skills`.
        what: String,
        ok: bool,
        /// The diagnostics' codes when it failed.
        #[serde(default)]
        codes: Vec<String>,
    },
    Drift {
        tool: String,
        fields: Vec<String>,
        locked: bool,
    },
    /// Written by a log writer: events it dropped since its last line.
    Dropped {
        count: u64,
    },
}

impl Event {
    /// An engine-wide event (no session).
    pub fn global(kind: EventKind) -> Event {
        Event {
            version: VERSION,
            session: None,
            caller: None,
            client: None,
            sessionless: false,
            context: None,
            kind,
        }
    }

    /// The event's name as the log writes it.
    pub fn name(&self) -> &'static str {
        match self.kind {
            EventKind::List { .. } => "list",
            EventKind::Search { .. } => "search",
            EventKind::Load { .. } => "load",
            EventKind::Call { .. } => "call",
            EventKind::Prompt => "prompt",
            EventKind::Mode { .. } => "mode",
            EventKind::Restart => "restart",
            EventKind::Compact { .. } => "compact",
            EventKind::Reload { .. } => "reload",
            EventKind::Drift { .. } => "drift",
            EventKind::Dropped { .. } => "dropped",
        }
    }
}

/// A session's subscription: the hook, and the names its events carry.
#[derive(Clone)]
pub(crate) struct Audit {
    pub hook: AuditHook,
    pub session: Arc<str>,
    pub caller: Option<Arc<str>>,
    pub client: Option<Arc<str>>,
    pub sessionless: bool,
    /// Allowed calls whose result is not known yet: their `call` event
    /// waits for it.
    pub pending: Vec<(String, Option<EventCause>)>,
}

impl fmt::Debug for Audit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Audit")
            .field("session", &self.session)
            .field("caller", &self.caller)
            .field("client", &self.client)
            .field("sessionless", &self.sessionless)
            .finish_non_exhaustive()
    }
}

impl Audit {
    pub fn emit(&self, context: &Context, kind: EventKind) {
        (self.hook)(&Event {
            version: VERSION,
            session: Some(self.session.to_string()),
            caller: self.caller.as_deref().map(str::to_string),
            client: self.client.as_deref().map(str::to_string),
            sessionless: self.sessionless,
            context: Some(context.into()),
            kind,
        });
    }
}

//! Counts of the audit events, for Prometheus: a subscriber to the event
//! stream that keeps calls, refusals by cause, searches, empty searches,
//! loads, per-server call latency, open sessions and reloads, and renders
//! them in the text exposition format (OpenMetrics) a scrape of `/metrics`
//! reads.
//!
//! It is a hook like the log's writer ([`Metrics::hook`]); both may be
//! subscribed at once ([`both`]). Counting takes a few atomic adds on the
//! session's thread; rendering is for the scrape.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use super::{AuditHook, Event, EventKind, Outcome};

/// The content type of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

type Labels1 = [(&'static str, String); 1];
type Labels2 = [(&'static str, String); 2];

/// Latency buckets in seconds: 1 ms to about 33 s, doubling.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// The counts. Share it ([`Arc`]) between the engine's hook and whatever
/// serves the scrape.
pub struct Metrics {
    registry: Registry,
    calls: Family<Labels1, Counter>,
    refusals: Family<Labels1, Counter>,
    searches: Counter,
    empty_searches: Counter,
    loads: Counter,
    activated: Counter,
    latency: Family<Labels1, Histogram, fn() -> Histogram>,
    call_errors: Family<Labels1, Counter>,
    sessions_open: Gauge,
    sessions: Counter,
    reloads: Family<Labels2, Counter>,
    drift: Counter,
    dropped: Counter<u64, AtomicU64>,
    write_failures: Counter<u64, AtomicU64>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("toolpolicy");
        let calls = Family::<Labels1, Counter>::default();
        let refusals = Family::<Labels1, Counter>::default();
        let searches = Counter::default();
        let empty_searches = Counter::default();
        let loads = Counter::default();
        let activated = Counter::default();
        let latency: Family<Labels1, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(latency_histogram);
        let call_errors = Family::<Labels1, Counter>::default();
        let sessions_open = Gauge::default();
        let sessions = Counter::default();
        let reloads = Family::<Labels2, Counter>::default();
        let drift = Counter::default();
        let dropped = Counter::<u64, AtomicU64>::default();
        let write_failures = Counter::<u64, AtomicU64>::default();
        registry.register(
            "calls",
            "Direct calls of tools, by outcome (allowed, not_found)",
            calls.clone(),
        );
        registry.register(
            "refusals",
            "Calls refused, by the cause that decided the tool's exposure (hide, defer, ...; unknown for a tool not in the registry)",
            refusals.clone(),
        );
        registry.register("searches", "Searches (the search tool)", searches.clone());
        registry.register(
            "empty_searches",
            "Searches that activated nothing",
            empty_searches.clone(),
        );
        registry.register("loads", "Loads of deferred tools by name", loads.clone());
        registry.register(
            "activations",
            "Tools activated by searches and loads",
            activated.clone(),
        );
        registry.register(
            "call_duration_seconds",
            "Time of forwarded calls, by server",
            latency.clone(),
        );
        registry.register(
            "call_errors",
            "Forwarded calls whose result was an error (isError), by server",
            call_errors.clone(),
        );
        registry.register("open_sessions", "Sessions open now", sessions_open.clone());
        registry.register("sessions", "Sessions opened", sessions.clone());
        registry.register(
            "reloads",
            "Reloads, by what was reloaded (policy, registry, skills) and whether it loaded",
            reloads.clone(),
        );
        registry.register(
            "drift",
            "Tools whose definition changed after start",
            drift.clone(),
        );
        registry.register(
            "dropped_events",
            "Audit events the log's writer dropped",
            dropped.clone(),
        );
        registry.register(
            "audit_write_failures",
            "Audit events lost because the log could not be written (a full disk)",
            write_failures.clone(),
        );
        Metrics {
            registry,
            calls,
            refusals,
            searches,
            empty_searches,
            loads,
            activated,
            latency,
            call_errors,
            sessions_open,
            sessions,
            reloads,
            drift,
            dropped,
            write_failures,
        }
    }

    /// A hook that counts every event it is given.
    pub fn hook(self: &Arc<Self>) -> AuditHook {
        let metrics = Arc::clone(self);
        Arc::new(move |event: &Event| metrics.record(event))
    }

    /// Counts one event.
    pub fn record(&self, event: &Event) {
        match &event.kind {
            EventKind::Call {
                outcome,
                cause,
                server,
                ms,
                is_error,
                ..
            } => {
                let outcome = match outcome {
                    Outcome::Allowed => "allowed",
                    Outcome::NotFound => "not_found",
                };
                self.calls
                    .get_or_create(&[("outcome", outcome.into())])
                    .inc();
                if outcome == "not_found" {
                    let cause = cause.as_ref().map_or("unknown", |c| c.kind.as_str());
                    self.refusals
                        .get_or_create(&[("cause", cause.into())])
                        .inc();
                }
                if let Some(server) = server {
                    let labels = [("server", server.clone())];
                    if let Some(ms) = ms.filter(|ms| ms.is_finite() && *ms >= 0.0) {
                        self.latency.get_or_create(&labels).observe(ms / 1000.0);
                    }
                    if *is_error == Some(true) {
                        self.call_errors.get_or_create(&labels).inc();
                    }
                }
            }
            EventKind::Search {
                activated, empty, ..
            } => {
                self.searches.inc();
                if *empty {
                    self.empty_searches.inc();
                }
                self.activated.inc_by(activated.len() as u64);
            }
            EventKind::Load { activated, .. } => {
                self.loads.inc();
                self.activated.inc_by(activated.len() as u64);
            }
            EventKind::Reload { what, ok, .. } => {
                let ok = if *ok { "true" } else { "false" };
                self.reloads
                    .get_or_create(&[("what", what.clone()), ("ok", ok.into())])
                    .inc();
            }
            EventKind::Drift { .. } => {
                self.drift.inc();
            }
            EventKind::Dropped { count } => {
                self.dropped.inc_by(*count);
            }
            EventKind::List { .. }
            | EventKind::Prompt
            | EventKind::Mode { .. }
            | EventKind::Restart
            | EventKind::Compact { .. } => {}
        }
    }

    /// A session opens: counted open until the guard is dropped.
    pub fn open_session(self: &Arc<Self>) -> OpenSession {
        self.sessions.inc();
        self.sessions_open.inc();
        OpenSession(Arc::clone(self))
    }

    /// Sets the open sessions from a front end's own count (a listener
    /// that knows its sessions), for one that opens no [`OpenSession`].
    pub fn set_open_sessions(&self, open: usize) {
        self.sessions_open
            .set(i64::try_from(open).unwrap_or(i64::MAX));
    }

    /// Events the log's writer dropped, as it counts them (the writer's
    /// own `dropped` line reaches only the file).
    pub fn set_dropped(&self, total: u64) {
        let now = self.dropped.get();
        if total > now {
            self.dropped.inc_by(total - now);
        }
    }

    /// Events the log's writer could not write, as it counts them.
    pub fn set_write_failures(&self, total: u64) {
        let now = self.write_failures.get();
        if total > now {
            self.write_failures.inc_by(total - now);
        }
    }

    /// The text exposition (OpenMetrics, which Prometheus reads), ending in
    /// `# EOF`.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}

/// An open session, for the `open_sessions` gauge; dropping it closes it.
pub struct OpenSession(Arc<Metrics>);

impl std::fmt::Debug for OpenSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OpenSession")
    }
}

impl Drop for OpenSession {
    fn drop(&mut self) {
        self.0.sessions_open.dec();
    }
}

/// One hook that hands each event to two (the log's writer and the
/// metrics), either of which may be absent.
pub fn both(a: Option<AuditHook>, b: Option<AuditHook>) -> Option<AuditHook> {
    match (a, b) {
        (Some(a), Some(b)) => Some(Arc::new(move |e: &Event| {
            a(e);
            b(e);
        })),
        (a, b) => a.or(b),
    }
}

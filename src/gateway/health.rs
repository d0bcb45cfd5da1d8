//! What a load balancer or an orchestrator asks a listening gateway:
//! `/healthz` (the process answers) and `/readyz` (it serves: the policy is
//! loaded and every server is running with its tools listed), and the drain
//! that SIGTERM starts: from then on `/readyz` fails and new requests are
//! refused, while the requests in flight are counted down to none.
//!
//! Both pages are answered before any other check, without a credential:
//! they say nothing of the policy, the tools or the callers, only whether
//! the gateway serves and, when it does not, why in a few words.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Method, Response, StatusCode};
use http_body_util::{BodyExt as _, Full};
use tokio::sync::Notify;

use super::Gateway;
use super::body::Body;

/// Where liveness is answered: 200 for as long as the process serves HTTP.
pub const HEALTHZ: &str = "/healthz";
/// Where readiness is answered: 200 when the gateway serves, else 503.
pub const READYZ: &str = "/readyz";

/// How long `/readyz` waits for a server's state, which a server being
/// started holds: past it, that server is not running yet.
const STATE_WAIT: Duration = Duration::from_millis(250);

/// The listener's health: whether it drains, and its requests in flight.
pub struct Health {
    gateway: Arc<Gateway>,
    draining: AtomicBool,
    in_flight: AtomicUsize,
    /// Woken each time the last request in flight ends.
    idle: Notify,
}

/// One request in flight, counted until it is dropped (with its answer's
/// body, once sent).
pub struct InFlight(Arc<Health>);

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

impl Health {
    pub fn new(gateway: Arc<Gateway>) -> Arc<Health> {
        Arc::new(Health {
            gateway,
            draining: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
            idle: Notify::new(),
        })
    }

    /// Counts a request in flight until the returned guard drops.
    pub fn enter(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(Arc::clone(self))
    }

    /// How many requests are in flight.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    /// Starts the drain: `/readyz` fails and new requests are refused from
    /// now on.
    pub fn drain(&self) {
        self.draining.store(true, Ordering::Release);
    }

    pub fn draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    /// Waits until no request is in flight, at most `bound`; returns how
    /// many still were when it gave up (0: all ended).
    pub async fn drained(&self, bound: Duration) -> usize {
        let wait = async {
            loop {
                let idle = self.idle.notified();
                if self.in_flight() == 0 {
                    return;
                }
                idle.await;
            }
        };
        let _ = tokio::time::timeout(bound, wait).await;
        self.in_flight()
    }

    /// Why the gateway does not serve now, if it does not: it drains, or a
    /// server is not running (then it is started again as its back-off
    /// allows). The policy is loaded before anything is served, and a
    /// reload that fails keeps the last good one, so it is always loaded.
    async fn unready(&self) -> Option<String> {
        if self.draining() {
            return Some("the gateway is shutting down".into());
        }
        let children = &self.gateway.children;
        let mut down = 0;
        for child in children {
            if !child.is_up(STATE_WAIT).await {
                down += 1;
            }
        }
        if down == 0 {
            return None;
        }
        self.gateway.poke();
        Some(format!(
            "{down} of {} servers {} not running",
            children.len(),
            if down == 1 { "is" } else { "are" }
        ))
    }

    /// The answer to a request for `/healthz` or `/readyz`; `None` for
    /// any other path.
    pub async fn answer(&self, method: &Method, path: &str) -> Option<Response<Body>> {
        if path != HEALTHZ && path != READYZ {
            return None;
        }
        if method != Method::GET && method != Method::HEAD {
            let mut response = page(
                StatusCode::METHOD_NOT_ALLOWED,
                &format!("method not allowed: `{path}` answers GET and HEAD"),
                method,
            );
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            return Some(response);
        }
        if path == HEALTHZ {
            return Some(page(StatusCode::OK, "ok", method));
        }
        Some(match self.unready().await {
            None => page(StatusCode::OK, "ready", method),
            Some(why) => page(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!("not ready: {why}"),
                method,
            ),
        })
    }
}

/// A plain-text page; the body left out for HEAD. Never cached.
fn page(status: StatusCode, text: &str, method: &Method) -> Response<Body> {
    let body = if method == Method::HEAD {
        Bytes::new()
    } else {
        Bytes::from(format!("{text}\n"))
    };
    let mut response = Response::new(Full::new(body).boxed());
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

//! The listener's checks of a request before it reaches a session: `Host`,
//! `Origin`, the caller's and the listener's shares of requests in flight,
//! the body and its count of JSON values.

use std::sync::Arc;

use bytes::Bytes;
use http::header::{self};
use http::{HeaderMap, HeaderValue, StatusCode};
use http_body_util::BodyExt as _;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::answer::{
    Refusal, busy, host_name, is_loopback_name, json_values, lock, normal_origin, seconds,
};
use super::listener::Listener;

impl Listener {
    /// `Host` names a loopback address where callers are not told apart by
    /// a credential (a DNS-rebinding page names its own host), or one of
    /// `--allow-host`.
    pub(super) fn check_host(&self, headers: &HeaderMap) -> Result<(), Refusal> {
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
    pub(super) fn check_origin(&self, headers: &HeaderMap) -> Result<(), Refusal> {
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
    pub(super) fn caller_share(
        &self,
        key: &str,
        stream: bool,
    ) -> Result<OwnedSemaphorePermit, Refusal> {
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
    pub(super) fn listener_share(&self) -> Result<OwnedSemaphorePermit, Refusal> {
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
    pub(super) async fn read_body<B>(
        &self,
        body: B,
        declared: Option<u64>,
    ) -> Result<Bytes, Refusal>
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
    pub(super) fn check_values(&self, body: &[u8]) -> Result<(), Refusal> {
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
}

//! The listener's HTTP answers and the small readings of a request they
//! rest on: a refusal with its status and headers, plain text, the `Host`
//! and `Origin` as the checks compare them, counted JSON values.

use std::net::SocketAddr;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderName};
use http::{HeaderMap, HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt as _, Full};

use super::super::body::Body;

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

    pub(super) fn into_response(self) -> Response<Body> {
        let mut response = plain(self.status, self.text);
        for (name, value) in self.headers {
            response.headers_mut().append(name, value);
        }
        response
    }
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(super) fn plain(status: StatusCode, text: impl Into<String>) -> Response<Body> {
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

/// A refusal for a share that is taken: the client retries in a second.
pub(super) fn busy(status: StatusCode, text: String) -> Refusal {
    let mut refusal = Refusal::new(status, text);
    refusal
        .headers
        .push((header::RETRY_AFTER, HeaderValue::from_static("1")));
    refusal
}

/// A duration as a number of seconds, as the flags take it (`30`, `0.5`).
pub(super) fn seconds(d: Duration) -> String {
    d.as_secs_f64().to_string()
}

/// How many JSON values `body` holds, object keys counted, as its bytes
/// show them without a parse: each string (skipped whole), array, object
/// and scalar counts one. Exact for JSON; what is not JSON is rmcp's to
/// refuse. The count stops past `max`.
pub(super) fn json_values(body: &[u8], max: usize) -> usize {
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
pub(super) fn declared_length(headers: &HeaderMap) -> Option<u64> {
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
pub(super) fn host_name(value: &str) -> String {
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

pub(super) fn is_loopback_name(host: &str) -> bool {
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

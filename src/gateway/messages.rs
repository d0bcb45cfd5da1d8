//! What rmcp's errors mean, for a person: without the Rust types rmcp's
//! messages name, with the cause the HTTP client leaves out, and, for a
//! certificate or an authorization refused, in the words of the servers
//! file. A URL is shown by its origin.

use rmcp::ServiceError;
use rmcp::service::ClientInitializeError;
use rmcp::transport::streamable_http_client::StreamableHttpError;

/// An rmcp error for a person: without the transport's Rust type, which
/// rmcp's messages name (`Transport [rmcp::transport::...] error`), and with
/// its deepest cause (`Connection refused`), which the HTTP client's own
/// message leaves out; or, for a certificate problem or a refused
/// authorization, what it means in plain words ([`plain_cause`]).
/// `headers_sent`: the server's entry has `headers`.
pub(super) fn error_text(e: &(dyn std::error::Error + 'static), headers_sent: bool) -> String {
    with_cause(e, e, headers_sent)
}

/// A handshake error's text: rmcp keeps the transport's error in a field
/// that is not its source, so the cause is looked for there.
pub(super) fn init_error_text(e: &ClientInitializeError, headers_sent: bool) -> String {
    match e {
        ClientInitializeError::TransportError { error, .. } => with_cause(e, error, headers_sent),
        _ => error_text(e, headers_sent),
    }
}

/// `e`'s text without Rust types, then the deepest cause under `causes`.
fn with_cause(
    e: &dyn std::error::Error,
    causes: &(dyn std::error::Error + 'static),
    headers_sent: bool,
) -> String {
    if let Some(plain) = plain_cause(causes, headers_sent) {
        return plain;
    }
    let mut text = e.to_string();
    while let Some(start) = text.find(" [rmcp::") {
        let mut depth = 0usize;
        let end = text[start + 1..].char_indices().find_map(|(i, c)| {
            match c {
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(start + 1 + i + 1);
                    }
                }
                _ => {}
            }
            None
        });
        match end {
            Some(end) => text.replace_range(start..end, ""),
            None => break,
        }
    }
    let mut cause = causes.source();
    let mut deepest = None;
    while let Some(c) = cause {
        deepest = Some(c.to_string());
        cause = next_cause(c);
    }
    match deepest {
        Some(d) if !d.is_empty() && !text.contains(&d) => format!("{text}: {d}"),
        _ => text,
    }
}

/// Whether `e` says the remote server no longer knows the session (HTTP
/// 404 on a request that carried it): it restarted, and did not see the
/// request.
pub(super) fn session_expired(e: &ServiceError) -> bool {
    let mut node: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = node {
        if matches!(
            c.downcast_ref::<StreamableHttpError<reqwest::Error>>(),
            Some(StreamableHttpError::SessionExpired)
        ) {
            return true;
        }
        node = next_cause(c);
    }
    false
}

/// The cause under `c`: rmcp's HTTP error holds reqwest's without making it
/// its source.
fn next_cause<'a>(
    c: &'a (dyn std::error::Error + 'static),
) -> Option<&'a (dyn std::error::Error + 'static)> {
    match c.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        Some(StreamableHttpError::Client(inner)) => Some(inner),
        _ => c.source(),
    }
}

/// What a failure means, in the words of the servers file, when its causes
/// hold a TLS error (the certificate refused, a handshake that failed) or an
/// HTTP 401 or 403 (with or without a `WWW-Authenticate` challenge).
fn plain_cause(causes: &(dyn std::error::Error + 'static), headers_sent: bool) -> Option<String> {
    let mut node = Some(causes);
    while let Some(c) = node {
        if let Some(tls) = tls_error(c) {
            return Some(tls_text(tls));
        }
        let status = match c.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            Some(StreamableHttpError::AuthRequired(_)) => Some(401),
            Some(StreamableHttpError::InsufficientScope(_)) => Some(403),
            Some(StreamableHttpError::UnexpectedServerResponse(r)) if r.starts_with("HTTP 401") => {
                Some(401)
            }
            Some(StreamableHttpError::UnexpectedServerResponse(r)) if r.starts_with("HTTP 403") => {
                Some(403)
            }
            _ => None,
        };
        if let Some(status) = status {
            return Some(auth_text(status, headers_sent));
        }
        node = next_cause(c);
    }
    None
}

/// The rustls error in `c`, directly or inside the I/O errors the TLS
/// stream and the connector wrap it in (whose `source` skips it).
fn tls_error<'a>(c: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut e = c;
    loop {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        e = e.downcast_ref::<std::io::Error>()?.get_ref()?;
    }
}

/// A TLS failure for a person: which check refused the certificate, and
/// how a private certificate authority is trusted.
fn tls_text(e: &rustls::Error) -> String {
    use rustls::CertificateError as C;
    let why = match e {
        rustls::Error::InvalidCertificate(c) => c,
        rustls::Error::InvalidMessage(_) => {
            return format!(
                "the TLS handshake failed ({e}): is the server serving plain HTTP on this port? \
                 Then its URL is `http://`"
            );
        }
        _ => return format!("the TLS handshake failed: {e}"),
    };
    let why = match why {
        C::UnknownIssuer => "it is not issued by a certificate authority this machine trusts \
             (for a private authority, point `SSL_CERT_FILE` or `SSL_CERT_DIR` at its certificate)"
            .to_string(),
        C::NotValidForNameContext {
            expected,
            presented,
        } => {
            let names = presented
                .iter()
                .map(|p| format!("`{}`", bare_name(p)))
                .collect::<Vec<_>>();
            let names = if names.is_empty() {
                "no name".to_string()
            } else {
                names.join(", ")
            };
            format!(
                "it is for another host: it names {names}, not `{}`",
                expected.to_str()
            )
        }
        C::NotValidForName => "it is for another host than the URL's".to_string(),
        C::Expired | C::ExpiredContext { .. } => "it has expired".to_string(),
        C::NotValidYet | C::NotValidYetContext { .. } => {
            "it is not valid yet (is this machine's clock right?)".to_string()
        }
        C::Revoked => "it has been revoked".to_string(),
        other => other.to_string(),
    };
    format!("the server's TLS certificate is not accepted: {why}")
}

/// `example.test` out of `DnsName("example.test")`, as rustls shows a name
/// a certificate presents; any other text as it is.
fn bare_name(presented: &str) -> &str {
    let inner = presented
        .split_once('(')
        .and_then(|(_, rest)| rest.strip_suffix(')'))
        .unwrap_or(presented);
    inner
        .strip_prefix('"')
        .and_then(|n| n.strip_suffix('"'))
        .unwrap_or(inner)
}

/// An HTTP 401 or 403 for a person: a token goes in the entry's `headers`.
fn auth_text(status: u16, headers_sent: bool) -> String {
    match (status, headers_sent) {
        (401, false) => "the server requires authorization (HTTP 401): give it a token in the \
             entry's `headers`, such as `\"Authorization\": \"Bearer ${TOKEN}\"` (OAuth \
             sign-in is not supported)"
            .to_string(),
        (401, true) => "the server refused the authorization in the entry's `headers` \
             (HTTP 401): check the token (OAuth sign-in is not supported)"
            .to_string(),
        (_, false) => "the server refused access (HTTP 403): it may need a token in the \
             entry's `headers`"
            .to_string(),
        (_, true) => "the server refused access (HTTP 403): the token in the entry's \
             `headers` does not allow it"
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Chain(&'static str, Option<Box<Chain>>);
    impl std::fmt::Display for Chain {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }
    impl std::error::Error for Chain {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|c| c as _)
        }
    }

    #[test]
    fn error_text_drops_rust_types_and_adds_the_root_cause() {
        let e = Chain(
            "Transport [rmcp::transport::worker::WorkerTransport<W<reqwest::Client>>] error: Client error: sending",
            Some(Box::new(Chain(
                "client error (Connect)",
                Some(Box::new(Chain("Connection refused (os error 111)", None))),
            ))),
        );
        assert_eq!(
            error_text(&e, false),
            "Transport error: Client error: sending: Connection refused (os error 111)"
        );
        assert_eq!(error_text(&Chain("plain", None), false), "plain");
        let open = Chain("Transport [rmcp::x<", None);
        assert_eq!(error_text(&open, false), "Transport [rmcp::x<");
    }

    #[test]
    fn a_certificate_s_names_are_shown_bare() {
        assert_eq!(bare_name("DnsName(\"example.test\")"), "example.test");
        assert_eq!(bare_name("IpAddress(127.0.0.1)"), "127.0.0.1");
        assert_eq!(bare_name("example.test"), "example.test");
        assert_eq!(bare_name("Odd(\"x"), "Odd(\"x");
    }

    #[test]
    fn a_tls_error_is_found_under_nested_io_errors() {
        use std::io::{Error, ErrorKind};
        let tls = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let nested = Error::other(Error::new(ErrorKind::InvalidData, tls));
        let text = error_text(&nested, false);
        assert!(text.starts_with("the server's TLS certificate is not accepted: it is not issued by a certificate authority this machine trusts"), "{text}");
        let expired = rustls::Error::InvalidCertificate(rustls::CertificateError::Expired);
        assert_eq!(
            error_text(&Error::other(expired), false),
            "the server's TLS certificate is not accepted: it has expired"
        );
        assert_eq!(error_text(&Error::other("plain"), false), "plain");
    }
}

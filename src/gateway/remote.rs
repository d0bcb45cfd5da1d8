//! A remote server's HTTP side: the configuration of rmcp's streamable HTTP
//! transport and the HTTP client under it, built by the gateway (rmcp's own
//! panics when TLS roots cannot be loaded, and keeps no idle connection).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

/// The configuration of MCP's streamable HTTP transport toward `url`, each
/// request carrying `headers` (checked when the servers file was read).
pub(super) fn http_config(
    url: &str,
    headers: &[(String, String)],
) -> StreamableHttpClientTransportConfig {
    let headers = headers
        .iter()
        .filter_map(|(k, v)| {
            Some((
                http::HeaderName::from_bytes(k.as_bytes()).ok()?,
                http::HeaderValue::from_str(v).ok()?,
            ))
        })
        .collect::<HashMap<_, _>>();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
    config.retry_config = Arc::new(sse_retry());
    // A server that no longer knows our session (it restarted, perhaps
    // with other tools) is reconnected by the gateway, which then lists its
    // tools again; the transport's own re-initialisation would keep the old
    // list. See `Child::call`.
    config.reinit_on_expired_session = false;
    config
}

/// How often a dropped event stream is resumed before the call on it fails:
/// a server that has gone is then restarted through the gateway's own
/// back-off, and the call answers at once rather than at its timeout (the
/// transport's default resumes for ever).
fn sse_retry() -> ExponentialBackoff {
    let mut retry = ExponentialBackoff::default();
    retry.max_times = Some(2);
    retry.base_duration = Duration::from_millis(250);
    retry.max_delay = Some(Duration::from_secs(1));
    retry
}

/// How long the HTTP client keeps an idle connection to a remote server:
/// under the 5 s after which Node's and uvicorn's HTTP servers (those of
/// MCP's TypeScript and Python SDKs) close one, so that a request never
/// goes out on a connection the server is closing.
pub const HTTP_IDLE: Duration = Duration::from_secs(4);

/// The HTTP client of one remote server: rmcp's redirect rule (same-origin
/// 307/308 only), built here so that a failure to set up TLS is an error
/// naming the server rather than a panic in rmcp, and keeping idle
/// connections for [`HTTP_IDLE`] (rmcp's own client keeps none, so every
/// call would open TCP and, for `https`, a TLS session: two network round
/// trips more per call). TLS roots (the system's, or those `SSL_CERT_FILE`
/// / `SSL_CERT_DIR` name) are loaded for `https` URLs only: an `http`
/// server does not depend on them (redirects keep the origin).
pub(super) fn http_client(url: &str) -> Result<reqwest::Client, String> {
    install_crypto_provider();
    let mut builder = reqwest::Client::builder()
        .pool_idle_timeout(HTTP_IDLE)
        .redirect(same_origin_redirects());
    if !url.starts_with("https:") {
        builder = builder.tls_certs_only([]);
    }
    builder.build().map_err(|e| {
        let mut cause: &dyn std::error::Error = &e;
        while let Some(c) = cause.source() {
            cause = c;
        }
        let set = ["SSL_CERT_FILE", "SSL_CERT_DIR"]
            .iter()
            .filter_map(|k| Some(format!("`{k}` is `{}`", std::env::var(k).ok()?)))
            .collect::<Vec<_>>();
        let roots = if set.is_empty() {
            "the system's certificate authorities".to_string()
        } else {
            set.join(", ")
        };
        format!("cannot check TLS certificates ({roots}): {cause}")
    })
}

/// rmcp's redirect policy for its own client: a 307 or 308 to the same
/// origin is followed (up to 10 hops), as those keep the method and body;
/// anything else is returned as it is, so that neither a POST becomes a GET
/// nor the session and headers go to another host.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_body || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > 10 {
            attempt.error("more than 10 redirects")
        } else {
            attempt.follow()
        }
    })
}

/// rustls' `ring` provider for `https` servers, installed once per process
/// (reqwest is built without a provider of its own).
fn install_crypto_provider() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

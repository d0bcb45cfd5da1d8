//! Who is calling: a caller, and how the listener names callers (nobody, a
//! clients file, tokens or JWTs).

use std::sync::Arc;

use http::header::{self};
use http::{HeaderMap, HeaderValue};

use crate::Context;

use super::super::clients::Clients;
use super::answer::Refusal;
use super::options::MCP_PATH;

/// Who is calling: a name for the audit log, a key for the limits and
/// the sessions, and the context the policy decides in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// `None` where callers are not named (no clients file).
    pub name: Option<Arc<str>>,
    /// What tells this caller apart from every other; `None` where
    /// callers are not named.
    pub key: Option<Arc<str>>,
    pub context: Context,
}

/// How the listener learns who is calling.
pub enum Callers {
    /// No clients file: every caller is served the command line's
    /// context, unnamed.
    CommandLine(Context),
    /// A clients file: the credential names the caller, whose context is
    /// the command line's with the fields its entry (or token) sets.
    Clients {
        clients: Arc<Clients>,
        base: Context,
        /// The URL clients reach `/mcp` at, as `--public-url` gives it;
        /// `None`: made from each request's `Host` (and a proxy's
        /// `X-Forwarded-Proto` and `X-Forwarded-Host`).
        public_url: Option<String>,
    },
}

impl Callers {
    /// The caller a request's headers name, or why it is refused: 401 with
    /// the challenge that points to the protected-resource metadata.
    pub async fn identify(&self, headers: &HeaderMap) -> Result<Caller, Refusal> {
        let (clients, base) = match self {
            Callers::CommandLine(context) => {
                return Ok(Caller {
                    name: None,
                    key: None,
                    context: context.clone(),
                });
            }
            Callers::Clients { clients, base, .. } => (clients, base),
        };
        match clients.authenticate(headers).await {
            Ok(caller) => Ok(Caller {
                name: Some(caller.name.as_str().into()),
                key: Some(caller.key().into()),
                context: caller.context(base),
            }),
            Err(denied) => {
                log!("note: refused a request with 401: {}", denied.reason());
                let resource = self.resource(headers);
                let challenge = denied.www_authenticate(
                    &super::super::clients::metadata_url(&resource).unwrap_or_default(),
                );
                let mut refusal = Refusal::new(
                    denied.status(),
                    "unauthorized: this gateway serves callers with a bearer token it accepts",
                );
                if let Ok(value) = HeaderValue::from_str(&challenge) {
                    refusal.headers.push((header::WWW_AUTHENTICATE, value));
                }
                Err(refusal)
            }
        }
    }

    /// Whether callers are told apart by a credential: then the listener
    /// may bind beyond loopback and takes any `Host`.
    pub fn authenticates(&self) -> bool {
        matches!(self, Callers::Clients { .. })
    }

    /// The URL of `/mcp` as the client reached it.
    pub(super) fn resource(&self, headers: &HeaderMap) -> String {
        if let Callers::Clients {
            public_url: Some(url),
            ..
        } = self
        {
            return url.clone();
        }
        let first = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.split(',').next())
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let scheme = first("x-forwarded-proto")
            .filter(|p| p == "http" || p == "https")
            .unwrap_or_else(|| "http".into());
        let host = first("x-forwarded-host")
            .or_else(|| first("host"))
            .unwrap_or_else(|| "localhost".into());
        format!("{scheme}://{host}{MCP_PATH}")
    }

    /// The protected-resource metadata (RFC 9728) for a request with these
    /// headers; `None` without a clients file (then 404).
    pub(super) fn metadata(&self, headers: &HeaderMap) -> Option<serde_json::Value> {
        match self {
            Callers::CommandLine(_) => None,
            Callers::Clients { clients, .. } => {
                Some(clients.protected_resource_metadata(&self.resource(headers)))
            }
        }
    }
}

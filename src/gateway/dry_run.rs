//! `policy gateway --dry-run`: what a client would be served, measured. The
//! children are started, each server's tool count (or failure) is reported,
//! and the first turn's list with its meter tokens is set against declaring
//! every tool the policy does not hide.

use serde::Serialize;

use crate::runtime::Delivery;

use super::servers::ServerSpec;
use super::{Exposure, Gateway, StartReport};

/// One server's start.
#[derive(Debug, Serialize)]
pub struct ServerReport {
    pub name: String,
    /// A remote server's origin (`https://host:port`); none for a local one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
    /// Its tools, when it started.
    pub tools: Option<usize>,
    pub error: Option<String>,
}

impl ServerReport {
    /// What the report says of `spec` after its start `result` (its tool
    /// count or why it failed): a remote server by its origin alone.
    pub fn new(spec: &ServerSpec, result: &Result<usize, String>) -> ServerReport {
        ServerReport {
            name: spec.name.clone(),
            remote: spec.origin(),
            tools: result.as_ref().ok().copied(),
            error: result.as_ref().err().cloned(),
        }
    }
}

/// The meter of the first turn's list.
#[derive(Debug, Serialize)]
pub struct ListTokens {
    /// The listed tools, the engine's own included.
    pub listed: u64,
    /// Every tool the policy does not hide, declared.
    pub all_declared: u64,
}

/// The whole report, also the `--format json` document.
#[derive(Debug, Serialize)]
pub struct Report {
    pub servers: Vec<ServerReport>,
    pub exposure: &'static str,
    /// The names `tools/list` gives on the first turn.
    pub listed: Vec<String>,
    pub deferred: usize,
    pub hidden: usize,
    pub catalog: String,
    pub tokens: ListTokens,
    /// Whether a server failed to start (exit code 1).
    pub failed: bool,
}

/// Builds the report of a started gateway.
pub fn report(gateway: &Gateway, started: &StartReport) -> Result<Report, String> {
    let servers: Vec<ServerReport> = gateway
        .children
        .iter()
        .zip(started)
        .map(|(c, r)| ServerReport::new(&c.spec, r))
        .collect();
    let engine = &gateway.engine;
    let session = engine
        .session(gateway.options.context.clone())
        .map_err(|e| e.to_string())?;
    let plan = session.plan(engine).map_err(|e| e.to_string())?;
    let (exposure, delivery) = match gateway.options.exposure {
        Exposure::Call => ("call", Delivery::CallThrough(&gateway.options.call_tool)),
        Exposure::ListChanged => ("list-changed", Delivery::Declared),
    };
    Ok(Report {
        failed: servers.iter().any(|s| s.error.is_some()),
        servers,
        exposure,
        listed: plan
            .tool_list(delivery)
            .iter()
            .map(|t| t.name.clone())
            .collect(),
        deferred: plan.deferred_len(),
        hidden: plan.hidden().count(),
        catalog: plan.catalog().to_string(),
        tokens: ListTokens {
            listed: plan.tool_list_tokens(delivery),
            all_declared: plan.tokens().all_declared,
        },
    })
}

/// The report for people.
pub fn human(r: &Report) -> String {
    let mut out = String::from("servers:\n");
    for s in &r.servers {
        let name = match &s.remote {
            Some(origin) => format!("{} (remote, {origin})", s.name),
            None => s.name.clone(),
        };
        match (&s.tools, &s.error) {
            (Some(n), _) => out += &format!("  {name}: {n} tools\n"),
            (None, Some(e)) => out += &format!("  {name}: failed: {e}\n"),
            (None, None) => out += &format!("  {name}: no answer\n"),
        }
    }
    out += &format!(
        "\nlisted ({} tools, `{}` exposure):\n  {}\n",
        r.listed.len(),
        r.exposure,
        if r.listed.is_empty() {
            "(none)".to_string()
        } else {
            r.listed.join(", ")
        }
    );
    out += &format!("deferred: {}\nhidden: {}\n", r.deferred, r.hidden);
    if !r.catalog.is_empty() {
        out += &format!("\n{}\n", r.catalog);
    }
    let saved = if r.tokens.all_declared == 0 {
        0.0
    } else {
        100.0 * (1.0 - r.tokens.listed as f64 / r.tokens.all_declared as f64)
    };
    out += &format!(
        "\ntokens: {} listed against {} with every tool declared ({saved:.1}% saved)\n",
        r.tokens.listed, r.tokens.all_declared
    );
    out
}

//! `policy gateway --dry-run`: what a client would be served, measured. The
//! context it ran in is said, the children are started, each server's tool
//! count (or failure) is reported, the hidden tools are named, and the first
//! turn's list with its meter tokens is set against declaring every tool
//! the policy does not hide and against no policy, as `policy measure`
//! counts them.

use serde::Serialize;

use crate::Context;
use crate::registry::Tool;
use crate::runtime::{Delivery, FirstTurn, TOKENS_NOTE};

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

/// The whole report, also the `--format json` document.
#[derive(Debug, Serialize)]
pub struct Report {
    pub servers: Vec<ServerReport>,
    pub exposure: &'static str,
    /// The context every connection runs in: mode, Bot, flags, grants.
    pub context: Context,
    /// The names `tools/list` gives on the first turn.
    pub listed: Vec<String>,
    pub deferred: usize,
    pub hidden: usize,
    /// The hidden tools' names, in registry order.
    pub hidden_tools: Vec<String>,
    /// Listed tools whose title or description says they are deprecated.
    pub deprecated: Vec<String>,
    pub catalog: String,
    /// The first turn's tokens, as `policy measure` counts them.
    pub tokens: FirstTurn,
    /// What the token figures are.
    pub note: &'static str,
    /// Whether a server failed to start (exit code 1).
    pub failed: bool,
    /// The servers' tools against the policy's lock, when it names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock: Option<LockReport>,
}

/// The servers' tools against the lock: how many it holds, and how many it
/// does not (changed since it was written, or new).
#[derive(Debug, Serialize)]
pub struct LockReport {
    /// The lock as the policy names it.
    pub file: String,
    /// Tools whose definition is the one the lock holds.
    pub locked: usize,
    /// Tools whose definition is not the one the lock holds.
    pub changed: usize,
    /// Tools the lock has no entry for.
    pub new: usize,
    /// Entries of the lock no server lists.
    pub removed: usize,
    /// What becomes of the changed and new tools in the gateway's context.
    pub unlocked: crate::settings::Unlocked,
}

/// The lock report of a snapshot, in context `ctx`.
fn lock_report(snap: &crate::runtime::Snapshot, ctx: &Context) -> Option<LockReport> {
    let setting = snap.policy().lock.as_ref()?;
    let registry = snap.registry();
    let unlocked = snap
        .table()
        .resolve(ctx)
        .map(|r| r.settings().unlocked)
        .unwrap_or_default();
    let file = setting.path.clone();
    let Some(lock) = &setting.file else {
        // Never read: every tool is unlocked.
        return Some(LockReport {
            file,
            locked: 0,
            changed: 0,
            new: registry.len(),
            removed: 0,
            unlocked,
        });
    };
    let c = crate::lock::compare(lock, registry);
    let unlocked_len = registry.tools().iter().filter(|t| t.unlocked).count();
    Some(LockReport {
        file,
        locked: registry.len() - unlocked_len,
        changed: unlocked_len - c.added.len(),
        new: c.added.len(),
        removed: c.removed.len(),
        unlocked,
    })
}

/// Whether a tool's title or description says it is deprecated.
pub fn says_deprecated(tool: &Tool) -> bool {
    let title = tool
        .extra
        .get("title")
        .and_then(|t| t.as_str())
        .unwrap_or("");
    [title, tool.description.as_str()]
        .iter()
        .any(|text| text.to_lowercase().contains("deprecated"))
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
    let plan = session.peek_plan(engine).map_err(|e| e.to_string())?;
    let (exposure, delivery) = match gateway.options.exposure {
        Exposure::Call => ("call", Delivery::CallThrough(&gateway.options.call_tool)),
        Exposure::ListChanged => ("list-changed", Delivery::Declared),
    };
    let list = plan.tool_list(delivery);
    Ok(Report {
        failed: servers.iter().any(|s| s.error.is_some()),
        servers,
        exposure,
        context: gateway.options.context.clone(),
        listed: list.iter().map(|t| t.name.clone()).collect(),
        deferred: plan.deferred_len(),
        hidden: plan.hidden().count(),
        hidden_tools: plan.hidden().map(|t| t.name.clone()).collect(),
        deprecated: plan
            .declared()
            .filter(|t| says_deprecated(t))
            .map(|t| t.name.clone())
            .collect(),
        catalog: plan.catalog().to_string(),
        tokens: plan.first_turn(Some(delivery)),
        note: TOKENS_NOTE,
        lock: lock_report(&engine.snapshot(), &gateway.options.context),
    })
}

/// `mode `work`, flags `readonly`, no grants`: the context in words.
fn context_words(c: &Context) -> String {
    let quoted = |v: &mut dyn Iterator<Item = &String>| {
        v.map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ")
    };
    let mut parts = vec![match &c.mode {
        Some(m) => format!("mode `{m}`"),
        None => "no mode".to_string(),
    }];
    if let Some(b) = &c.bot {
        parts.push(format!("bot `{b}`"));
    }
    parts.push(if c.flags.is_empty() {
        "no flags".to_string()
    } else {
        format!("flags {}", quoted(&mut c.flags.iter()))
    });
    parts.push(match &c.grants {
        None => "no runtime grants".to_string(),
        Some(g) if g.is_empty() => "runtime grants: none (nothing granted)".to_string(),
        Some(g) => format!("runtime grants {}", quoted(&mut g.iter())),
    });
    parts.join(", ")
}

/// The report for people.
pub fn human(r: &Report) -> String {
    let mut out = format!("context: {}\n\nservers:\n", context_words(&r.context));
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
    out += &format!("deferred: {}\n", r.deferred);
    out += &format!(
        "hidden ({}):\n  {}\n",
        r.hidden,
        if r.hidden_tools.is_empty() {
            "(none)".to_string()
        } else {
            r.hidden_tools.join(", ")
        }
    );
    if let Some(l) = &r.lock {
        out += &format!(
            "lock `{}`: {} locked, {} changed, {} new, {} removed (unlocked: {})\n",
            crate::chars::escape(&l.file),
            l.locked,
            l.changed,
            l.new,
            l.removed,
            l.unlocked.as_str()
        );
    }
    for name in &r.deprecated {
        out += &format!(
            "note: `{name}` is listed, and its title or description says it is deprecated\n"
        );
    }
    if !r.catalog.is_empty() {
        out += &format!("\n{}\n", r.catalog);
    }
    out += &format!("\ntokens: {}\n({})\n", r.tokens.human(), r.note);
    out
}

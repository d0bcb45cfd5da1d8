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
    /// What a connection in the command line's context is served.
    #[serde(flatten)]
    pub served: Served,
    /// What the token figures are.
    pub note: &'static str,
    /// Whether a server failed to start (exit code 1).
    pub failed: bool,
}

/// What one context is served on the first turn.
#[derive(Debug, Serialize)]
pub struct Served {
    /// The context: mode, Bot, flags, grants.
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
    /// The servers' tools against the policy's lock, when it names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock: Option<LockReport>,
}

/// The report of a gateway that serves the callers of a clients file: the
/// servers once, then what each caller is served. Also the `--format json`
/// document.
#[derive(Debug, Serialize)]
pub struct CallersReport {
    pub servers: Vec<ServerReport>,
    pub exposure: &'static str,
    pub callers: Vec<CallerServed>,
    /// What the token figures are.
    pub note: &'static str,
    /// Whether a server failed to start (exit code 1).
    pub failed: bool,
}

/// One caller of a clients file, and what it is served.
#[derive(Debug, Serialize)]
pub struct CallerServed {
    /// Its name in the file, or `jwt.defaults` for a JWT whose token has
    /// none of the claims the file maps.
    pub caller: String,
    /// Where the file names it (`clients.alice`, `jwt.defaults`).
    pub at: String,
    #[serde(flatten)]
    pub served: Served,
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

/// Each server's start, in servers-file order.
fn servers(gateway: &Gateway, started: &StartReport) -> Vec<ServerReport> {
    gateway
        .children
        .iter()
        .zip(started)
        .map(|(c, r)| ServerReport::new(&c.spec, r))
        .collect()
}

fn exposure_name(gateway: &Gateway) -> &'static str {
    match gateway.options.exposure {
        Exposure::Call => "call",
        Exposure::ListChanged => "list-changed",
    }
}

/// What a connection in context `ctx` is served on its first turn.
pub fn served(gateway: &Gateway, ctx: &Context) -> Result<Served, String> {
    let engine = &gateway.engine;
    let session = engine.session(ctx.clone()).map_err(|e| e.to_string())?;
    let plan = session.peek_plan(engine).map_err(|e| e.to_string())?;
    let delivery = match gateway.options.exposure {
        Exposure::Call => Delivery::CallThrough(&gateway.options.call_tool),
        Exposure::ListChanged => Delivery::Declared,
    };
    let list = plan.tool_list(delivery);
    Ok(Served {
        context: ctx.clone(),
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
        lock: lock_report(&engine.snapshot(), ctx),
    })
}

/// Builds the report of a started gateway.
pub fn report(gateway: &Gateway, started: &StartReport) -> Result<Report, String> {
    let servers = servers(gateway, started);
    Ok(Report {
        failed: servers.iter().any(|s| s.error.is_some()),
        servers,
        exposure: exposure_name(gateway),
        served: served(gateway, &gateway.options.context)?,
        note: TOKENS_NOTE,
    })
}

/// Builds the report of a started gateway for `callers`: each caller's
/// name, where the file names it and its context, in file order.
pub fn callers_report(
    gateway: &Gateway,
    started: &StartReport,
    callers: &[(String, String, Context)],
) -> Result<CallersReport, String> {
    let servers = servers(gateway, started);
    let callers = callers
        .iter()
        .map(|(caller, at, ctx)| {
            Ok(CallerServed {
                caller: caller.clone(),
                at: at.clone(),
                served: served(gateway, ctx).map_err(|e| format!("`{at}`: {e}"))?,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(CallersReport {
        failed: servers.iter().any(|s| s.error.is_some()),
        servers,
        exposure: exposure_name(gateway),
        callers,
        note: TOKENS_NOTE,
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

/// The servers' lines of a report for people.
fn servers_human(servers: &[ServerReport]) -> String {
    let mut out = String::from("servers:\n");
    for s in servers {
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
    out
}

fn names_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "(none)".to_string()
    } else {
        names.join(", ")
    }
}

/// What one context is served, for people, each line after `indent`; the
/// catalog, when there is one, in full.
fn served_human(r: &Served, exposure: &str, indent: &str) -> String {
    let mut out = format!(
        "{indent}listed ({} tools, `{exposure}` exposure):\n{indent}  {}\n",
        r.listed.len(),
        names_or_none(&r.listed)
    );
    out += &format!("{indent}deferred: {}\n", r.deferred);
    out += &format!(
        "{indent}hidden ({}):\n{indent}  {}\n",
        r.hidden,
        names_or_none(&r.hidden_tools)
    );
    if let Some(l) = &r.lock {
        out += &format!(
            "{indent}lock `{}`: {} locked, {} changed, {} new, {} removed (unlocked: {})\n",
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
            "{indent}note: `{name}` is listed, and its title or description says it is deprecated\n"
        );
    }
    if !r.catalog.is_empty() {
        out += "\n";
        for line in r.catalog.lines() {
            let indent = if line.is_empty() { "" } else { indent };
            out += &format!("{indent}{line}\n");
        }
    }
    out += &format!("\n{indent}tokens: {}\n", r.tokens.human());
    out
}

/// The report for people.
pub fn human(r: &Report) -> String {
    let mut out = format!("context: {}\n\n", context_words(&r.served.context));
    out += &servers_human(&r.servers);
    out += "\n";
    out += &served_human(&r.served, r.exposure, "");
    out += &format!("({})\n", r.note);
    out
}

/// The callers' report for people: the servers, then each caller.
pub fn callers_human(r: &CallersReport) -> String {
    let mut out = servers_human(&r.servers);
    for c in &r.callers {
        let who = if c.caller == c.at {
            format!("`{}`", c.at)
        } else {
            format!("`{}` (`{}`)", c.caller, c.at)
        };
        out += &format!("\ncaller {who}: {}\n", context_words(&c.served.context));
        out += &served_human(&c.served, r.exposure, "  ");
    }
    out += &format!("\n({})\n", r.note);
    out
}

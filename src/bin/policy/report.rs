//! `policy report LOG... [--policy F] [--registry F] [--caller NAME]
//! [--format human|json] [--since T]`
//!
//! Reads audit logs (JSON Lines, several, of several processes, in any
//! order) one line at a time and prints what a policy author tunes from:
//! sessions and their tokens, searches that activated nothing, search
//! misses, deferred tools loaded in most sessions, declared tools never
//! called, refusals by cause and per-server call latency. A line that is not
//! an event, or is longer than the library's line limit, is counted and
//! named by file and line, never a stop.
//!
//! The library reads the logs (`toolpolicy::audit::read`) and puts sessions
//! back together from the events (`toolpolicy::audit::sessions`: requests
//! without a session by their caller, client and context); [`Checker`] tries
//! each suggested line on the policy.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::process::ExitCode;

use serde::Serialize;
use toolpolicy::audit::read::{self, BadLine, Line, Logged};
use toolpolicy::audit::sessions::{Sessions, ToolId, Usage};
use toolpolicy::audit::{EventContext, EventKind, Outcome};
use toolpolicy::runtime::{DEFAULT_CALL_TOOL, DEFAULT_SEARCH_TOOL};
use toolpolicy::{CauseKind, Context, Exposure, ItemRef, Policy, Registry, Table};

use crate::common::{self, CliError, Format};
use crate::runtime_args::thousands;

#[derive(clap::Args)]
pub struct Args {
    /// Audit logs (JSON Lines), in any order
    #[arg(required = true)]
    logs: Vec<PathBuf>,
    /// The policy the logs were written under: suggested lines are checked
    /// against it, and one it cannot apply, or that would change nothing or
    /// another tool too, is not suggested
    #[arg(long)]
    policy: Option<PathBuf>,
    /// The tool registry: search misses then name the words of the query
    /// that a tool's name and description lack
    #[arg(long)]
    registry: Option<PathBuf>,
    /// Only the events of this caller (as the gateway's clients file names
    /// it), and the engine-wide ones
    #[arg(long)]
    caller: Option<String>,
    /// Only events at or after this time (UTC, as the log writes it, or a
    /// prefix of it: `2026-12-01`, `2026-12-01T12:00`)
    #[arg(long)]
    since: Option<String>,
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

/// Lines named by file and line in the report; past this only counted.
const BAD_LINES_SHOWN: usize = 20;
/// Queries, misses and refusals listed per section at most.
const LISTED: usize = 50;
/// Queries of empty searches counted one by one; past this many different
/// ones, a new query is only counted in the total.
const EMPTY_QUERIES_KEPT: usize = 10_000;
/// Other tools a suggestion would change, named at most.
const ALSO_NAMED: usize = 5;

#[derive(Serialize, Clone)]
struct Miss {
    query: Option<String>,
    tool: String,
    /// `None` without a registry (or for a tool it lacks).
    missing_words: Option<Vec<String>>,
}

#[derive(Serialize)]
struct Suggestion {
    tool: String,
    sessions: usize,
    line: String,
    /// With `--policy`: whether the line would change the decision, and
    /// nothing else.
    #[serde(skip_serializing_if = "Option::is_none")]
    checked: Option<bool>,
    /// With `--policy`: other tools whose decision the line would change
    /// too (some of them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    also_changes: Vec<String>,
}

#[derive(Serialize)]
struct Refusal {
    cause: String,
    rule: Option<String>,
    at: Option<String>,
    count: u64,
    tools: Vec<String>,
}

#[derive(Serialize)]
struct Latency {
    server: String,
    calls: usize,
    errors: usize,
    p50_ms: f64,
    p99_ms: f64,
}

#[derive(Serialize)]
struct Report {
    events: u64,
    sessions: usize,
    /// Of `sessions`, those gathered from requests without a session.
    sessions_from_requests: usize,
    turns: u64,
    tokens: u64,
    tokens_all_declared: u64,
    empty_searches: Vec<(String, u64)>,
    search_misses: Vec<Miss>,
    load_in_most_sessions: Vec<Suggestion>,
    never_called: Vec<Suggestion>,
    refusals: Vec<Refusal>,
    latency: Vec<Latency>,
    reloads: u64,
    failed_reloads: u64,
    drift: Vec<String>,
    dropped_events: u64,
    bad_lines: u64,
    bad_lines_shown: Vec<BadLine>,
}

/// A refusal's cause, rule text and `file:line`.
type RefusalKey = (String, Option<String>, Option<String>);

/// What the events say one by one; sessions are [`Sessions`]' business.
#[derive(Default)]
struct Reader {
    events: u64,
    chats: Sessions,
    empty: HashMap<String, u64>,
    /// Empty searches whose query was not kept (past [`EMPTY_QUERIES_KEPT`]).
    empty_other: u64,
    /// Tools called and allowed, by their number in `chats`.
    called: BTreeSet<ToolId>,
    /// By cause, rule text and place: how many, and some of the tools.
    refusals: BTreeMap<RefusalKey, (u64, BTreeSet<String>)>,
    latency: BTreeMap<String, (Vec<f64>, usize)>,
    reloads: u64,
    failed_reloads: u64,
    drift: BTreeSet<String>,
    dropped: u64,
    bad: u64,
    bad_shown: Vec<BadLine>,
}

impl Reader {
    fn read(&mut self, logged: Logged) {
        let event = logged.event;
        self.events += 1;
        self.chats
            .read(&event, logged.ts.as_deref().and_then(read::millis));
        match event.kind {
            EventKind::Reload { ok, .. } => {
                self.reloads += 1;
                self.failed_reloads += u64::from(!ok);
            }
            EventKind::Drift { tool, fields, .. } => {
                self.drift.insert(format!("{tool} ({})", fields.join(", ")));
            }
            EventKind::Dropped { count } => self.dropped += count,
            EventKind::Search {
                query,
                empty: true,
                status,
                ..
            } if event.session.is_some() && status.is_ok() => {
                let q = query.unwrap_or_else(|| "(query not logged)".into());
                if let Some(n) = self.empty.get_mut(&q) {
                    *n += 1;
                } else if self.empty.len() < EMPTY_QUERIES_KEPT {
                    self.empty.insert(q, 1);
                } else {
                    self.empty_other += 1;
                }
            }
            EventKind::Call {
                tool,
                outcome,
                cause,
                server,
                ms,
                is_error,
                ..
            } if event.session.is_some() => match outcome {
                Outcome::Allowed => {
                    self.called.insert(self.chats.tool_id(&tool));
                    if let (Some(server), Some(ms)) = (server, ms) {
                        let e = self.latency.entry(server).or_default();
                        e.0.push(ms);
                        e.1 += usize::from(is_error == Some(true));
                    }
                }
                Outcome::NotFound => {
                    let key = match cause {
                        Some(c) => (
                            c.kind.as_str().to_string(),
                            c.rule,
                            c.file.map(|f| match c.line {
                                Some(l) => format!("{f}:{l}"),
                                None => f,
                            }),
                        ),
                        None => ("unknown tool".to_string(), None, None),
                    };
                    let e = self.refusals.entry(key).or_default();
                    e.0 += 1;
                    if e.1.len() < 10 {
                        e.1.insert(tool);
                    }
                }
            },
            _ => {}
        }
    }

    fn bad_line(&mut self, bad: BadLine) {
        self.bad += 1;
        if self.bad_shown.len() < BAD_LINES_SHOWN {
            self.bad_shown.push(bad);
        }
    }
}

/// Words of `query` that neither the name nor the description holds.
fn lacking(query: &str, name: &str, description: &str) -> Vec<String> {
    const STOP: &[&str] = &[
        "the", "and", "for", "with", "from", "that", "this", "into", "some", "all", "any", "can",
        "you", "our", "are", "its", "how", "what", "get", "use",
    ];
    let hay = format!("{name} {description}").to_lowercase();
    let mut out: Vec<String> = Vec::new();
    for w in query
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
    {
        if w.chars().count() < 3 || STOP.contains(&w.as_str()) || out.contains(&w) {
            continue;
        }
        if !hay.contains(&w) {
            out.push(w);
        }
    }
    out
}

/// A tool name as a selector: bare where the language reads it as a tool
/// name, quoted otherwise (a name that starts as a `skill:`, `source:` or
/// `hint:` selector does, in any case); `None` for a name no selector can
/// name alone (one with `*`).
fn selector(name: &str) -> Option<String> {
    if name.contains('*') || name.is_empty() {
        return None;
    }
    let bare = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_-./:".contains(c));
    let lower = name.to_ascii_lowercase();
    let kind = ["skill:", "source:", "hint:"]
        .iter()
        .any(|k| lower.starts_with(k));
    if bare && !kind {
        Some(name.to_string())
    } else {
        Some(format!(
            "\"{}\"",
            name.replace('\\', "\\\\").replace('"', "\\\"")
        ))
    }
}

/// What trying a line on the policy found.
#[derive(Debug, PartialEq)]
enum Verdict {
    /// Nothing to suggest: the tool is a guard or a search tool, or is
    /// already what the line would make it.
    Nothing,
    /// A rule of the policy would overrule the line in a context the tool
    /// was seen in.
    Overruled,
    /// The line would change these tools' decisions too.
    AlsoChanges(Vec<String>),
    Applies,
}

/// Tries suggested lines on a copy of the policy: the line is added at its
/// end, and every tool the registry and the logs know is decided in every
/// context the logs saw, before and after.
struct Checker<'a> {
    policy: &'a Policy,
    registry: Option<&'a Registry>,
    /// The contexts the logs saw, by their number there; `None` where the
    /// policy cannot answer (a mode it no longer has).
    contexts: Vec<Option<Context>>,
    /// Every tool the registry or the logs name.
    tools: Vec<String>,
    index: HashMap<String, usize>,
    /// The policy's decisions, by context and tool.
    before: Vec<Option<Vec<(Exposure, CauseKind)>>>,
}

impl<'a> Checker<'a> {
    fn new<'t>(
        policy: &'a Policy,
        registry: Option<&'a Registry>,
        logged_tools: impl Iterator<Item = &'t str>,
        contexts: &[EventContext],
    ) -> Checker<'a> {
        let mut tools: Vec<String> = Vec::new();
        let mut index = HashMap::new();
        let mut add = |name: &str| {
            if !index.contains_key(name) {
                index.insert(name.to_string(), tools.len());
                tools.push(name.to_string());
            }
        };
        for t in registry.into_iter().flat_map(Registry::tools) {
            add(&t.name);
        }
        logged_tools.for_each(&mut add);
        let contexts: Vec<Option<Context>> =
            contexts.iter().map(|c| Some(c.to_context())).collect();
        let mut checker = Checker {
            policy,
            registry,
            contexts,
            tools,
            index,
            before: Vec::new(),
        };
        checker.before = checker.decide_all(&Table::compile(policy));
        for (c, before) in checker.contexts.iter_mut().zip(&checker.before) {
            if before.is_none() {
                *c = None;
            }
        }
        checker
    }

    fn decide_all(&self, table: &Table) -> Vec<Option<Vec<(Exposure, CauseKind)>>> {
        self.contexts
            .iter()
            .map(|ctx| {
                let resolved = table.resolve(ctx.as_ref()?).ok()?;
                Some(
                    self.tools
                        .iter()
                        .map(|t| {
                            let d = table.decide(&resolved, &self.item_of(t));
                            (d.exposure, d.cause)
                        })
                        .collect(),
                )
            })
            .collect()
    }

    fn item_of<'t>(&self, tool: &'t str) -> ItemRef<'t>
    where
        'a: 't,
    {
        self.registry
            .and_then(|r| r.get(tool))
            .map_or_else(|| ItemRef::tool(tool), ItemRef::from_tool)
    }

    /// Whether `line` gives `tool` the `want` exposure in every context of
    /// `seen` (by number), where it has another now, and changes nothing
    /// else anywhere.
    fn check(&self, line: &str, tool: &str, seen: &BTreeSet<u32>, want: Exposure) -> Verdict {
        let Some(&i) = self.index.get(tool) else {
            return Verdict::Overruled;
        };
        let seen: Vec<usize> = seen
            .iter()
            .map(|&c| c as usize)
            .filter(|&c| self.before.get(c).is_some_and(Option::is_some))
            .collect();
        let now: Vec<(Exposure, CauseKind)> = seen
            .iter()
            .filter_map(|&c| self.before[c].as_ref().map(|d| d[i]))
            .collect();
        if now.is_empty()
            || now
                .iter()
                .any(|(_, cause)| matches!(cause, CauseKind::Guard | CauseKind::Search))
            || now.iter().all(|(e, _)| *e == want)
        {
            return Verdict::Nothing;
        }
        let text = format!("{}\n{line}\n", self.policy.source.text);
        let Ok(changed) = Policy::parse(self.policy.source.name.clone(), &text) else {
            return Verdict::Overruled;
        };
        let after = self.decide_all(&Table::compile(&changed));
        let takes = seen
            .iter()
            .all(|&c| after[c].as_ref().is_some_and(|d| d[i].0 == want));
        if !takes {
            return Verdict::Overruled;
        }
        let mut also: Vec<String> = Vec::new();
        for (before, after) in self.before.iter().zip(&after) {
            let (Some(before), Some(after)) = (before, after) else {
                continue;
            };
            for (t, (b, a)) in before.iter().zip(after).enumerate() {
                if t != i && b.0 != a.0 && !also.contains(&self.tools[t]) {
                    also.push(self.tools[t].clone());
                }
            }
        }
        if also.is_empty() {
            Verdict::Applies
        } else {
            also.sort();
            Verdict::AlsoChanges(also)
        }
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let policy = match &args.policy {
        Some(p) => Some(common::load_policy(p, args.format)?),
        None => None,
    };
    let mut registry = common::load_registry(args.registry.as_deref())?;
    if let (Some(p), Some(r)) = (&policy, &mut registry) {
        toolpolicy::lock::mark(r, p);
    }
    let mut reader = Reader::default();
    read::read_logs(&args.logs, |line| match line {
        Line::Bad(bad) => reader.bad_line(bad),
        Line::Event(logged) => {
            if let (Some(since), Some(ts)) = (&args.since, &logged.ts)
                && ts.as_str() < since.as_str()
            {
                return;
            }
            if let Some(caller) = &args.caller
                && logged.event.session.is_some()
                && logged.event.caller.as_ref() != Some(caller)
            {
                return;
            }
            reader.read(*logged);
        }
    })
    .map_err(|e| CliError::Io(e.path, e.error))?;
    let report = summarize(reader, policy.as_ref(), registry.as_ref());
    match args.format {
        Format::Json => common::print_json(&report)?,
        Format::Human | Format::Plain => common::write_stdout(format_args!("{}", human(&report))),
    }
    Ok(ExitCode::SUCCESS)
}

/// Tools whose lines are never suggested: the engine's own, unless the
/// registry has a tool of that name.
fn own_tool(name: &str, registry: Option<&Registry>) -> bool {
    [DEFAULT_SEARCH_TOOL, DEFAULT_CALL_TOOL].contains(&name)
        && registry.is_none_or(|r| r.get(name).is_none())
}

/// The suggestions of one section: a line per tool, tried on the policy.
fn suggest<'u>(
    usage: impl Iterator<Item = (&'u str, &'u Usage)>,
    rule: &str,
    want: Exposure,
    checker: Option<&Checker<'_>>,
    registry: Option<&Registry>,
) -> Vec<Suggestion> {
    let mut out: Vec<Suggestion> = usage
        .filter(|(tool, _)| !own_tool(tool, registry))
        .filter_map(|(tool, u)| {
            let line = format!("{rule}({})", selector(tool)?);
            let (checked, also_changes) =
                match checker.map(|c| c.check(&line, tool, &u.contexts, want)) {
                    None => (None, Vec::new()),
                    Some(Verdict::Nothing) => return None,
                    Some(Verdict::Overruled) => (Some(false), Vec::new()),
                    Some(Verdict::AlsoChanges(mut also)) => {
                        also.truncate(ALSO_NAMED);
                        (Some(false), also)
                    }
                    Some(Verdict::Applies) => (Some(true), Vec::new()),
                };
            Some(Suggestion {
                tool: tool.to_string(),
                sessions: u.sessions,
                line,
                checked,
                also_changes,
            })
        })
        .collect();
    out.sort_by(|a, b| b.sessions.cmp(&a.sessions).then(a.tool.cmp(&b.tool)));
    out
}

fn summarize(r: Reader, policy: Option<&Policy>, registry: Option<&Registry>) -> Report {
    let chats = &r.chats;
    let totals = chats.totals();
    let sessions = totals.sessions;
    let checker = policy.map(|p| Checker::new(p, registry, chats.tools(), chats.contexts()));
    let loaded = totals
        .loaded
        .iter()
        .filter(|(_, u)| u.sessions * 2 > sessions)
        .map(|(&t, u)| (chats.tool(t), u));
    let load_in_most = suggest(
        loaded,
        "NoDefer",
        Exposure::Active,
        checker.as_ref(),
        registry,
    );
    let declared = totals
        .declared
        .iter()
        .filter(|(t, _)| !r.called.contains(t))
        .map(|(&t, u)| (chats.tool(t), u));
    let never_called = suggest(
        declared,
        "Defer",
        Exposure::Deferred,
        checker.as_ref(),
        registry,
    );
    let misses = totals
        .misses
        .iter()
        .map(|m| {
            let tool = chats.tool(m.tool);
            let missing_words = match (registry, &m.query) {
                (Some(r), Some(q)) => r.get(tool).map(|t| lacking(q, &t.name, &t.description)),
                _ => None,
            };
            Miss {
                query: m.query.as_deref().map(str::to_string),
                tool: tool.to_string(),
                missing_words,
            }
        })
        .collect();
    let mut empty: Vec<(String, u64)> = r.empty.into_iter().collect();
    empty.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    empty.truncate(LISTED);
    if r.empty_other > 0 {
        empty.push(("(other queries)".into(), r.empty_other));
    }
    let mut refusals: Vec<Refusal> = r
        .refusals
        .into_iter()
        .map(|((cause, rule, at), (count, tools))| Refusal {
            cause,
            rule,
            at,
            count,
            tools: tools.into_iter().collect(),
        })
        .collect();
    refusals.sort_by_key(|r| std::cmp::Reverse(r.count));
    let latency = r
        .latency
        .into_iter()
        .map(|(server, (mut ms, errors))| {
            ms.sort_by(f64::total_cmp);
            Latency {
                server,
                calls: ms.len(),
                errors,
                p50_ms: percentile(&ms, 50.0),
                p99_ms: percentile(&ms, 99.0),
            }
        })
        .collect();
    Report {
        events: r.events,
        sessions,
        sessions_from_requests: totals.from_requests,
        turns: totals.turns,
        tokens: totals.tokens,
        tokens_all_declared: totals.all_declared,
        empty_searches: empty,
        search_misses: misses,
        load_in_most_sessions: load_in_most,
        never_called,
        refusals,
        latency,
        reloads: r.reloads,
        failed_reloads: r.failed_reloads,
        drift: r.drift.into_iter().collect(),
        dropped_events: r.dropped,
        bad_lines: r.bad,
        bad_lines_shown: r.bad_shown,
    }
}

fn human(r: &Report) -> String {
    use std::fmt::Write as _;
    let esc = |s: &str| toolpolicy::chars::escape(s).into_owned();
    let mut o = String::new();
    let saved = if r.tokens_all_declared > 0 {
        100.0 - 100.0 * r.tokens as f64 / r.tokens_all_declared as f64
    } else {
        0.0
    };
    let gathered = match r.sessions_from_requests {
        0 => String::new(),
        n => format!(" ({n} of them gathered from requests without a session)"),
    };
    let _ = writeln!(
        o,
        "{} events, {} sessions{gathered}, {} turns listed: {} tokens declared, {} had every \
         tool been declared ({saved:.0}% saved)",
        thousands(r.events),
        r.sessions,
        r.turns,
        thousands(r.tokens),
        thousands(r.tokens_all_declared)
    );
    let section = |o: &mut String, title: &str, empty: bool| {
        let _ = writeln!(o, "\n{title}{}", if empty { ": none" } else { ":" });
    };
    section(
        &mut o,
        "searches that activated nothing",
        r.empty_searches.is_empty(),
    );
    for (q, n) in &r.empty_searches {
        let _ = writeln!(o, "  {n}× `{}`", esc(q));
    }
    section(
        &mut o,
        "search misses (a tool called or loaded that the search before did not return)",
        r.search_misses.is_empty(),
    );
    for m in &r.search_misses {
        let q = m
            .query
            .as_deref()
            .map_or("(query not logged)".into(), |q| format!("`{}`", esc(q)));
        let _ = write!(o, "  {q} then `{}`", esc(&m.tool));
        match &m.missing_words {
            Some(w) if w.is_empty() => o.push_str(": its name and description hold every word\n"),
            Some(w) => {
                let _ = writeln!(o, ": its name and description lack {}", esc(&w.join(", ")));
            }
            None => o.push('\n'),
        }
    }
    let suggestions = |o: &mut String, list: &[Suggestion], what: &str| {
        for s in list {
            let note = match (s.checked, s.also_changes.is_empty()) {
                (Some(false), true) => {
                    "  (not suggested: a rule of the policy would overrule it)".to_string()
                }
                (Some(false), false) => format!(
                    "  (not suggested: it would change {} too)",
                    s.also_changes
                        .iter()
                        .map(|t| format!("`{}`", esc(t)))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                _ => String::new(),
            };
            let _ = writeln!(
                o,
                "  {} ({} of {} sessions {what}){}{note}",
                esc(&s.tool),
                s.sessions,
                r.sessions,
                if s.checked == Some(false) {
                    format!(": `{}`", esc(&s.line))
                } else {
                    format!(": {}", esc(&s.line))
                },
            );
        }
    };
    section(
        &mut o,
        "deferred tools loaded in most sessions (declare them)",
        r.load_in_most_sessions.is_empty(),
    );
    suggestions(&mut o, &r.load_in_most_sessions, "loaded it");
    section(
        &mut o,
        "declared tools never called (defer them)",
        r.never_called.is_empty(),
    );
    suggestions(&mut o, &r.never_called, "declared it");
    section(&mut o, "refusals by cause", r.refusals.is_empty());
    for f in &r.refusals {
        let rule = match (&f.rule, &f.at) {
            (Some(rule), Some(at)) => format!(" `{}` at {}", esc(rule), esc(at)),
            (Some(rule), None) => format!(" `{}`", esc(rule)),
            _ => String::new(),
        };
        let _ = writeln!(
            o,
            "  {}× {}{rule}: {}",
            f.count,
            f.cause,
            esc(&f.tools.join(", "))
        );
    }
    section(&mut o, "call latency by server", r.latency.is_empty());
    for l in &r.latency {
        let _ = writeln!(
            o,
            "  {}: {} calls, {} errors, p50 {:.1} ms, p99 {:.1} ms",
            esc(&l.server),
            l.calls,
            l.errors,
            l.p50_ms,
            l.p99_ms
        );
    }
    if r.reloads > 0 {
        let _ = writeln!(o, "\n{} reloads, {} failed", r.reloads, r.failed_reloads);
    }
    if !r.drift.is_empty() {
        let _ = writeln!(
            o,
            "\ntools whose definition changed: {}",
            esc(&r.drift.join("; "))
        );
    }
    if r.dropped_events > 0 {
        let _ = writeln!(
            o,
            "\nwarning: the writers dropped {} events (their queue was full)",
            r.dropped_events
        );
    }
    if r.bad_lines > 0 {
        let _ = writeln!(
            o,
            "\nwarning: {} lines are not events and were skipped:",
            r.bad_lines
        );
        for b in &r.bad_lines_shown {
            let _ = writeln!(o, "  {}:{}: {}", esc(&b.file), b.line, esc(&b.message));
        }
    }
    o
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;

//! `policy report LOG... [--policy F] [--registry F] [--format human|json]
//! [--since T]`
//!
//! Reads audit logs (JSON Lines, several, of several processes, in any
//! order) one line at a time and prints what a policy author tunes from:
//! sessions and their tokens, searches that activated nothing, search
//! misses, deferred tools loaded in most sessions, declared tools never
//! called, refusals by cause and per-server call latency. A line that is not
//! an event is counted and named by file and line, never a stop.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::BufRead as _;
use std::path::PathBuf;
use std::process::ExitCode;

use serde::{Deserialize, Serialize};
use toolpolicy::audit::{Event, EventKind, Outcome};
use toolpolicy::{Context, Exposure, ItemRef, Policy, Registry, Table};

use crate::common::{self, CliError, Format};
use crate::runtime_args::thousands;

#[derive(clap::Args)]
pub struct Args {
    /// Audit logs (JSON Lines), in any order
    #[arg(required = true)]
    logs: Vec<PathBuf>,
    /// The policy the logs were written under: suggested lines are checked
    /// against it, and one its own rules would overrule is not suggested
    #[arg(long)]
    policy: Option<PathBuf>,
    /// The tool registry: search misses then name the words of the query
    /// that a tool's name and description lack
    #[arg(long)]
    registry: Option<PathBuf>,
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

#[derive(Deserialize)]
struct Logged {
    #[serde(default)]
    ts: Option<String>,
    #[serde(flatten)]
    event: Event,
}

/// A context as the log keeps it: mode, bot, flags (sorted).
type Ctx = (Option<String>, Option<String>, Vec<String>);

#[derive(Default)]
struct SessionAgg {
    /// The session's context at its last event.
    context: Ctx,
    turns: u64,
    tokens: u64,
    all_declared: u64,
    /// The tools declared on the first turn (the policy's own), and the
    /// context they were declared in.
    first_declared: Option<(Vec<String>, Ctx)>,
    /// The tools declared at the last list before now.
    declared_now: HashSet<String>,
    /// The tools activated in the session, by a search, a load or a miss,
    /// with the contexts they were activated in.
    activated: BTreeMap<String, BTreeSet<Ctx>>,
    /// The last search: its query, what it returned, what was declared.
    last_search: Option<LastSearch>,
}

struct LastSearch {
    query: Option<String>,
    returned: HashSet<String>,
    declared: HashSet<String>,
    /// Tools already reported as missed by this search.
    missed: HashSet<String>,
}

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
    /// With `--policy`: whether the line would change the decision.
    #[serde(skip_serializing_if = "Option::is_none")]
    checked: Option<bool>,
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
struct BadLine {
    file: String,
    line: usize,
    message: String,
}

#[derive(Serialize)]
struct Report {
    events: u64,
    sessions: usize,
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

#[derive(Default)]
struct Reader {
    events: u64,
    sessions: HashMap<String, SessionAgg>,
    empty: BTreeMap<String, u64>,
    misses: Vec<Miss>,
    miss_seen: HashSet<(Option<String>, String)>,
    called: HashSet<String>,
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
    fn read(&mut self, event: Event, registry: Option<&Registry>) {
        self.events += 1;
        match &event.kind {
            EventKind::Reload { ok, .. } => {
                self.reloads += 1;
                self.failed_reloads += u64::from(!ok);
                return;
            }
            EventKind::Drift { tool, fields, .. } => {
                self.drift.insert(format!("{tool} ({})", fields.join(", ")));
                return;
            }
            EventKind::Dropped { count } => {
                self.dropped += count;
                return;
            }
            _ => {}
        }
        let Some(id) = event.session.clone() else {
            return;
        };
        let s = self.sessions.entry(id).or_default();
        if let Some(c) = &event.context {
            let mut flags = c.flags.clone();
            flags.sort();
            s.context = (c.mode.clone(), c.bot.clone(), flags);
        }
        match event.kind {
            EventKind::List {
                names,
                tokens,
                all_declared,
                ..
            } => {
                s.turns += 1;
                s.tokens += tokens;
                s.all_declared += all_declared;
                if s.first_declared.is_none() {
                    s.first_declared = Some((names.clone(), s.context.clone()));
                }
                s.declared_now = names.into_iter().collect();
            }
            EventKind::Search {
                query,
                activated,
                already_active,
                matched,
                empty,
                status,
                names,
                ..
            } => {
                if !status.is_ok() {
                    return;
                }
                // A search by exact names alone asks nothing of the ranking.
                let asked = query.as_deref().is_none_or(|q| !q.trim().is_empty());
                if empty {
                    let q = query.clone().unwrap_or_else(|| "(query not logged)".into());
                    *self.empty.entry(q).or_default() += 1;
                }
                for t in &activated {
                    s.activated
                        .entry(t.clone())
                        .or_default()
                        .insert(s.context.clone());
                }
                let returned = activated
                    .into_iter()
                    .chain(already_active)
                    .chain(matched)
                    .chain(names)
                    .collect();
                s.last_search = asked.then(|| LastSearch {
                    query,
                    returned,
                    declared: s.declared_now.clone(),
                    missed: HashSet::new(),
                });
            }
            EventKind::Load {
                names, activated, ..
            } => {
                for t in activated {
                    s.activated.entry(t).or_default().insert(s.context.clone());
                }
                for name in names {
                    miss(s, &name, registry, &mut self.misses, &mut self.miss_seen);
                }
            }
            EventKind::Call {
                tool,
                outcome,
                cause,
                declared_next_step,
                server,
                ms,
                is_error,
                ..
            } => {
                miss(s, &tool, registry, &mut self.misses, &mut self.miss_seen);
                match outcome {
                    Outcome::Allowed => {
                        self.called.insert(tool.clone());
                        if let (Some(server), Some(ms)) = (server, ms) {
                            let e = self.latency.entry(server).or_default();
                            e.0.push(ms);
                            e.1 += usize::from(is_error == Some(true));
                        }
                    }
                    Outcome::NotFound => {
                        if declared_next_step {
                            s.activated
                                .entry(tool.clone())
                                .or_default()
                                .insert(s.context.clone());
                        }
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
                }
            }
            EventKind::Prompt
            | EventKind::Mode { .. }
            | EventKind::Restart
            | EventKind::Compact { .. }
            | EventKind::Reload { .. }
            | EventKind::Drift { .. }
            | EventKind::Dropped { .. } => {}
        }
    }
}

/// A call or load of `tool` after a search that did not return it, of a
/// tool that was not declared when the model searched.
fn miss(
    s: &mut SessionAgg,
    tool: &str,
    registry: Option<&Registry>,
    misses: &mut Vec<Miss>,
    seen: &mut HashSet<(Option<String>, String)>,
) {
    let Some(last) = &mut s.last_search else {
        return;
    };
    if last.returned.contains(tool)
        || last.declared.contains(tool)
        || !last.missed.insert(tool.into())
    {
        return;
    }
    if !seen.insert((last.query.clone(), tool.to_string())) || misses.len() >= LISTED {
        return;
    }
    let missing_words = match (registry, &last.query) {
        (Some(r), Some(q)) => r.get(tool).map(|t| lacking(q, &t.name, &t.description)),
        _ => None,
    };
    misses.push(Miss {
        query: last.query.clone(),
        tool: tool.to_string(),
        missing_words,
    });
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

/// A tool name as a selector: bare where the language reads it so, quoted
/// otherwise; `None` for a name no selector can name alone (one with `*`).
fn selector(name: &str) -> Option<String> {
    if name.contains('*') {
        return None;
    }
    let bare = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_-./:".contains(c));
    let lower = name.to_ascii_lowercase();
    if bare && !lower.starts_with("skill:") && !lower.starts_with("source:") {
        Some(name.to_string())
    } else {
        Some(format!(
            "\"{}\"",
            name.replace('\\', "\\\\").replace('"', "\\\"")
        ))
    }
}

/// Whether adding `line` to the policy gives `tool` the `want` exposure in
/// every context (mode, bot, flags) it was seen in: a `when` block of a
/// flag, or a bot's block, can overrule a line the mode alone would take.
fn changes(
    policy: &Policy,
    registry: Option<&Registry>,
    line: &str,
    tool: &str,
    contexts: &BTreeSet<Ctx>,
    want: Exposure,
) -> bool {
    let text = format!("{}\n{line}\n", policy.source.text);
    let Ok(changed) = Policy::parse(policy.source.name.clone(), &text) else {
        return false;
    };
    let table = Table::compile(&changed);
    let item = registry
        .and_then(|r| r.get(tool))
        .map_or_else(|| ItemRef::tool(tool), ItemRef::from_tool);
    contexts.iter().all(|(mode, bot, flags)| {
        let ctx = Context {
            mode: mode.clone(),
            bot: bot.clone(),
            flags: flags.iter().cloned().collect(),
            grants: None,
        };
        table
            .resolve(&ctx)
            .is_ok_and(|r| table.decide(&r, &item).exposure == want)
    })
}

/// One line as an event. The number `ms` is taken out before the rest is
/// read: with the arbitrary-precision numbers the registry needs, serde
/// cannot read a number inside a flattened enum.
fn parse(text: &str) -> Result<Logged, serde_json::Error> {
    let mut value: serde_json::Value = serde_json::from_str(text)?;
    let ms = value
        .as_object_mut()
        .and_then(|o| o.remove("ms"))
        .and_then(|ms| ms.as_f64());
    let mut logged: Logged = serde_json::from_value(value)?;
    if let EventKind::Call { ms: slot, .. } = &mut logged.event.kind {
        *slot = ms;
    }
    Ok(logged)
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
    for path in &args.logs {
        let file = std::fs::File::open(path).map_err(|e| CliError::Io(path.clone(), e))?;
        let mut lines = std::io::BufReader::new(file);
        let mut buf = Vec::new();
        let mut n = 0;
        loop {
            buf.clear();
            match lines.read_until(b'\n', &mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => return Err(CliError::Io(path.clone(), e)),
            }
            n += 1;
            let text = String::from_utf8_lossy(&buf);
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            match parse(text) {
                Ok(logged) => {
                    if let (Some(since), Some(ts)) = (&args.since, &logged.ts)
                        && ts.as_str() < since.as_str()
                    {
                        continue;
                    }
                    reader.read(logged.event, registry.as_ref());
                }
                Err(e) => {
                    reader.bad += 1;
                    if reader.bad_shown.len() < BAD_LINES_SHOWN {
                        reader.bad_shown.push(BadLine {
                            file: path.display().to_string(),
                            line: n,
                            message: e.to_string(),
                        });
                    }
                }
            }
        }
    }
    let report = summarize(reader, policy.as_ref(), registry.as_ref());
    match args.format {
        Format::Json => common::print_json(&report)?,
        Format::Human | Format::Plain => common::write_stdout(format_args!("{}", human(&report))),
    }
    Ok(ExitCode::SUCCESS)
}

fn summarize(r: Reader, policy: Option<&Policy>, registry: Option<&Registry>) -> Report {
    let sessions = r.sessions.len();
    let mut loads: BTreeMap<&str, (usize, BTreeSet<Ctx>)> = BTreeMap::new();
    let mut declared: BTreeMap<&str, BTreeSet<Ctx>> = BTreeMap::new();
    for s in r.sessions.values() {
        for (t, contexts) in &s.activated {
            let e = loads.entry(t).or_default();
            e.0 += 1;
            e.1.extend(contexts.iter().cloned());
        }
        if let Some((names, context)) = &s.first_declared {
            for t in names {
                declared.entry(t).or_default().insert(context.clone());
            }
        }
    }
    let check = |line: &str, tool: &str, contexts: &BTreeSet<Ctx>, want| {
        policy.map(|p| changes(p, registry, line, tool, contexts, want))
    };
    let mut load_in_most: Vec<Suggestion> = loads
        .into_iter()
        .filter(|(_, (n, _))| *n * 2 > sessions)
        .filter_map(|(tool, (n, contexts))| {
            let line = format!("NoDefer({})", selector(tool)?);
            Some(Suggestion {
                checked: check(&line, tool, &contexts, Exposure::Active),
                tool: tool.to_string(),
                sessions: n,
                line,
            })
        })
        .collect();
    load_in_most.sort_by(|a, b| b.sessions.cmp(&a.sessions).then(a.tool.cmp(&b.tool)));
    let never_called = declared
        .into_iter()
        .filter(|(t, _)| !r.called.contains(*t))
        .filter_map(|(tool, contexts)| {
            let line = format!("Defer({})", selector(tool)?);
            Some(Suggestion {
                checked: check(&line, tool, &contexts, Exposure::Deferred),
                tool: tool.to_string(),
                sessions: r
                    .sessions
                    .values()
                    .filter(|s| {
                        s.first_declared
                            .as_ref()
                            .is_some_and(|(names, _)| names.iter().any(|t| t == tool))
                    })
                    .count(),
                line,
            })
        })
        .collect();
    let mut empty: Vec<(String, u64)> = r.empty.into_iter().collect();
    empty.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    empty.truncate(LISTED);
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
        turns: r.sessions.values().map(|s| s.turns).sum(),
        tokens: r.sessions.values().map(|s| s.tokens).sum(),
        tokens_all_declared: r.sessions.values().map(|s| s.all_declared).sum(),
        empty_searches: empty,
        search_misses: r.misses,
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
    let _ = writeln!(
        o,
        "{} events, {} sessions, {} turns listed: {} tokens declared, {} had every tool been \
         declared ({saved:.0}% saved)",
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
            let note = match s.checked {
                Some(false) => "  (not suggested: a rule of the policy would overrule it)",
                _ => "",
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

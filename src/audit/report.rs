//! What a policy author tunes from, read off audit logs: sessions and their
//! tokens, searches that activated nothing, search misses, deferred tools
//! loaded in most sessions and declared tools never called (each with the
//! `NoDefer`/`Defer` line that would change it), refusals by cause,
//! per-server call latency, reloads, drift and dropped events. It is
//! `policy report`, whose `--format json` prints [`Report`] as it is, and
//! what the Node and Python modules return.
//!
//! Logs are read a line at a time ([`read`](super::read)), several of them,
//! in the order given; sessions are put back together by
//! [`sessions`](super::sessions) (requests without a session by their
//! caller, client and context). A line that is not an event is counted and
//! named by file and line, never a stop. With the policy the logs were
//! written under, each suggested line is tried on a copy of it: one the policy would overrule, or that would change another
//! tool too, is marked as not suggested, and one that changes nothing is
//! left out. With the registry, a search miss names the words of its query
//! that the tool's name and description lack.
//!
//! ```
//! use toolpolicy::audit::read::LogFile;
//! use toolpolicy::audit::report::{Options, Reader};
//!
//! let log = concat!(
//!     r#"{"version":1,"session":"s","event":"list","declared":1,"names":["Read"],"tokens":100,"all_declared":300}"#,
//!     "\nnot an event\n",
//! );
//! let mut reader = Reader::new(Options::default());
//! reader.read_log(&mut LogFile::new("audit.jsonl", log.as_bytes())).unwrap();
//! let report = reader.finish(None, None);
//! assert_eq!((report.sessions, report.tokens, report.bad_lines), (1, 100, 1));
//! assert_eq!(report.never_called[0].line, "Defer(Read)");
//! ```

mod check;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{self, BufRead};
use std::path::PathBuf;

use serde::Serialize;

use self::check::{Checker, Verdict, selector};
use super::EventKind;
use super::Outcome;
use super::read::{self, BadLine, BadLines, Line, LogError, LogFile, Logged};
use super::sessions::{Sessions, ToolId, Usage};
use crate::decision::Exposure;
use crate::policy::Policy;
use crate::registry::Registry;
use crate::runtime::{DEFAULT_CALL_TOOL, DEFAULT_SEARCH_TOOL};

/// Queries, misses and refusals listed per section at most.
pub const LISTED: usize = 50;
/// Queries of empty searches counted one by one; past this many different
/// ones, a new query is only counted in the total, as `(other queries)`.
pub const EMPTY_QUERIES_KEPT: usize = 10_000;
/// Other tools a suggestion would change, named at most.
pub const ALSO_NAMED: usize = 5;
/// Tools named per refusal at most.
pub const REFUSED_TOOLS_NAMED: usize = 10;

/// Which events are read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// Only the events of this caller (as the gateway's clients file names
    /// it), and the engine-wide ones (`reload`, `drift`, `dropped`).
    pub caller: Option<String>,
    /// Only events at or after this time, written as the log writes it or a
    /// prefix of it (`2026-12-01`, `2026-12-01T12:00`). An event without a
    /// time is kept.
    pub since: Option<String>,
}

/// The report: what `policy report --format json` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Events read (after `caller` and `since`).
    pub events: u64,
    pub sessions: usize,
    /// Of `sessions`, those gathered from requests without a session.
    pub sessions_from_requests: usize,
    /// Plans listed over all sessions.
    pub turns: u64,
    /// Tokens the plans declared.
    pub tokens: u64,
    /// Tokens they would have declared with every tool that is not hidden.
    pub tokens_all_declared: u64,
    /// Queries of searches that activated nothing, with how many times,
    /// most frequent first (at most [`LISTED`], and `(other queries)` past
    /// [`EMPTY_QUERIES_KEPT`] different ones).
    pub empty_searches: Vec<(String, u64)>,
    pub search_misses: Vec<SearchMiss>,
    /// Deferred tools loaded in more than half the sessions: `NoDefer`.
    pub load_in_most_sessions: Vec<Suggestion>,
    /// Tools a session's first list declared that no session called: `Defer`.
    pub never_called: Vec<Suggestion>,
    /// Most frequent first.
    pub refusals: Vec<Refusal>,
    /// By server, in name order.
    pub latency: Vec<Latency>,
    pub reloads: u64,
    pub failed_reloads: u64,
    /// `tool (field, field)` for each tool whose definition changed.
    pub drift: Vec<String>,
    /// Events the writers dropped (their queue was full).
    pub dropped_events: u64,
    /// Lines that are not events.
    pub bad_lines: u64,
    /// The first of them (at most [`read::BAD_LINES_SHOWN`]).
    pub bad_lines_shown: Vec<BadLine>,
}

/// A tool called or loaded that the search before it did not return.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchMiss {
    /// `None` where the log left the query out.
    pub query: Option<String>,
    pub tool: String,
    /// The words of the query the tool's name and description lack; `None`
    /// without a registry (or for a tool it lacks).
    pub missing_words: Option<Vec<String>>,
}

/// A line to add to the policy for one tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Suggestion {
    pub tool: String,
    /// The sessions that loaded it (or declared it).
    pub sessions: usize,
    /// `NoDefer(tool)` or `Defer(tool)`.
    pub line: String,
    /// With a policy: whether the line would change the decision, and
    /// nothing else.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checked: Option<bool>,
    /// With a policy: other tools whose decision the line would change too
    /// (at most [`ALSO_NAMED`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also_changes: Vec<String>,
}

/// Refused calls of one cause and rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    /// The cause's kind (`defer`, `hide`, ...), or `unknown tool`.
    pub cause: String,
    pub rule: Option<String>,
    /// `file:line` of the rule.
    pub at: Option<String>,
    pub count: u64,
    /// Some of the tools (at most [`REFUSED_TOOLS_NAMED`]), in name order.
    pub tools: Vec<String>,
}

/// Calls forwarded to one server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Latency {
    pub server: String,
    pub calls: usize,
    /// Calls whose result was an error (`isError`).
    pub errors: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

impl Report {
    /// The report of the logs at `paths`, read one after the other in the
    /// order given. Only a log that cannot be opened or read is an error.
    /// `registry` is best marked for `policy`'s lock
    /// ([`crate::lock::mark`]), as an engine marks it.
    pub fn from_logs(
        paths: &[PathBuf],
        policy: Option<&Policy>,
        registry: Option<&Registry>,
        options: Options,
    ) -> Result<Report, LogError> {
        let mut reader = Reader::new(options);
        read::read_logs(paths, |line| reader.line(line))?;
        Ok(reader.finish(policy, registry))
    }
}

/// A refusal's cause, rule text and `file:line`.
type RefusalKey = (String, Option<String>, Option<String>);

/// Reads events one at a time; [`Reader::finish`] makes the report. What
/// sessions add up to is [`Sessions`]' business; the reader keeps what the
/// events say one by one.
#[derive(Debug)]
pub struct Reader {
    options: Options,
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
    bad: BadLines,
}

impl Reader {
    pub fn new(options: Options) -> Reader {
        Reader {
            options,
            events: 0,
            chats: Sessions::new(),
            empty: HashMap::new(),
            empty_other: 0,
            called: BTreeSet::new(),
            refusals: BTreeMap::new(),
            latency: BTreeMap::new(),
            reloads: 0,
            failed_reloads: 0,
            drift: BTreeSet::new(),
            dropped: 0,
            bad: BadLines::new(),
        }
    }

    /// Every line of one log, to its end.
    pub fn read_log<R: BufRead>(&mut self, log: &mut LogFile<R>) -> io::Result<()> {
        while let Some(line) = log.next_line()? {
            self.line(line);
        }
        Ok(())
    }

    /// One line of a log: an event, read unless the options leave it out,
    /// or a bad line, counted.
    pub fn line(&mut self, line: Line) {
        match line {
            Line::Bad(bad) => self.bad.push(bad),
            Line::Event(logged) => {
                if let (Some(since), Some(ts)) = (&self.options.since, &logged.ts)
                    && ts.as_str() < since.as_str()
                {
                    return;
                }
                if let Some(caller) = &self.options.caller
                    && logged.event.session.is_some()
                    && logged.event.caller.as_ref() != Some(caller)
                {
                    return;
                }
                self.event(*logged);
            }
        }
    }

    fn event(&mut self, logged: Logged) {
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
                    if e.1.len() < REFUSED_TOOLS_NAMED {
                        e.1.insert(tool);
                    }
                }
            },
            _ => {}
        }
    }

    /// The report of what was read. With `policy` (the one the logs were
    /// written under) each suggested line is tried on it; with `registry`
    /// (best marked for that policy's lock, [`crate::lock::mark`]) misses
    /// name the words their tool lacks, and its tools are decided too.
    pub fn finish(self, policy: Option<&Policy>, registry: Option<&Registry>) -> Report {
        let chats = &self.chats;
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
            .filter(|(t, _)| !self.called.contains(t))
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
                SearchMiss {
                    query: m.query.as_deref().map(str::to_string),
                    tool: tool.to_string(),
                    missing_words,
                }
            })
            .collect();
        let mut empty: Vec<(String, u64)> = self.empty.into_iter().collect();
        empty.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        empty.truncate(LISTED);
        if self.empty_other > 0 {
            empty.push(("(other queries)".into(), self.empty_other));
        }
        let mut refusals: Vec<Refusal> = self
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
        let latency = self
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
            events: self.events,
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
            reloads: self.reloads,
            failed_reloads: self.failed_reloads,
            drift: self.drift.into_iter().collect(),
            dropped_events: self.dropped,
            bad_lines: self.bad.count(),
            bad_lines_shown: self.bad.into_shown(),
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

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
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

#[cfg(test)]
mod tests;

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
//! The report is the library's (`toolpolicy::audit::report`): this reads
//! the arguments and the policy and registry files, and writes the report
//! as text, or as its JSON.

use std::path::PathBuf;
use std::process::ExitCode;

use toolpolicy::audit::report::{Options, Report, Suggestion};

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

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let policy = match &args.policy {
        Some(p) => Some(common::load_policy(p, args.format)?),
        None => None,
    };
    let mut registry = common::load_registry(args.registry.as_deref())?;
    if let (Some(p), Some(r)) = (&policy, &mut registry) {
        toolpolicy::lock::mark(r, p);
    }
    let options = Options {
        caller: args.caller,
        since: args.since,
    };
    let report = Report::from_logs(&args.logs, policy.as_ref(), registry.as_ref(), options)
        .map_err(|e| CliError::Io(e.path, e.error))?;
    match args.format {
        Format::Json => common::print_json(&report)?,
        Format::Human | Format::Plain => common::write_stdout(format_args!("{}", human(&report))),
    }
    Ok(ExitCode::SUCCESS)
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

//! `policy diff OLD NEW --registry F [--skills F] [--format human|json]
//! [--fail-on-widening]`
//!
//! What a change of policy changes: every tool and skill decided under both
//! policies in every context they can be asked in, and only what differs
//! (`toolpolicy::diff`). Exit 0 whatever changed; 1 with
//! `--fail-on-widening` when anything is more exposed under NEW; 2 when a
//! policy does not load (its diagnostics printed as `check` prints them) or
//! on any other error.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use toolpolicy::chars::escape;
use toolpolicy::diff::audit::{Found, Replay, Replayer};
use toolpolicy::diff::{Change, Diff, describe};
use toolpolicy::explain::Cause;
use toolpolicy::{Policy, SkillList};

use crate::common::{self, CliError, Format};

#[derive(clap::Args)]
pub struct Args {
    /// The policy as it was
    old: PathBuf,
    /// The policy as it would be
    new: PathBuf,
    /// The tool registry (JSON) whose tools are decided
    #[arg(long)]
    registry: PathBuf,
    /// The skill list (JSON) whose skills are decided
    #[arg(long)]
    skills: Option<PathBuf>,
    /// Audit logs whose sessions are replayed against NEW: the calls it would
    /// refuse, and the first turns' tools it would defer, hide or declare
    #[arg(long, num_args = 1.., value_name = "LOG")]
    audit: Vec<PathBuf>,
    /// Exit 1 when anything is more exposed under NEW than under OLD (for a
    /// pull-request check)
    #[arg(long)]
    fail_on_widening: bool,
    /// Output format
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

/// How many contexts a change lists before it says how many more.
const CONTEXTS_SHOWN: usize = 6;

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let load = |path: &PathBuf| match common::load_policy(path, args.format) {
        // The diagnostics are printed; a policy that does not load is an
        // error of the diff, not a finding.
        Err(CliError::Reported) => Err(ExitCode::from(2)),
        Err(e) => {
            eprintln!("{}", escape(&e.to_string()));
            Err(ExitCode::from(2))
        }
        Ok(p) => Ok(p),
    };
    let (old, new) = match (load(&args.old), load(&args.new)) {
        (Ok(o), Ok(n)) => (o, n),
        (Err(code), _) | (_, Err(code)) => return Ok(code),
    };
    let registry = common::load_registry(Some(&args.registry))?.unwrap_or_default();
    let skills = common::load_skills(args.skills.as_deref())?.unwrap_or_else(SkillList::default);
    let d = toolpolicy::diff::diff(&old, &new, &registry, &skills);
    let replay = if args.audit.is_empty() {
        None
    } else {
        Some(replay(&args.audit, &new, &registry)?)
    };
    if args.format == Format::Json {
        let mut doc = serde_json::to_value(&d).map_err(|e| CliError::Usage(e.to_string()))?;
        if let (Some(obj), Some(r)) = (doc.as_object_mut(), &replay) {
            obj.insert(
                "audit".into(),
                serde_json::to_value(r).map_err(|e| CliError::Usage(e.to_string()))?,
            );
        }
        common::print_json(&doc)?;
    } else {
        let mut out = human(&d, &old, &new);
        if let Some(r) = &replay {
            replay_human(&mut out, r);
        }
        print!("{}", escape(&out));
    }
    Ok(if args.fail_on_widening && d.widening {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn contexts_line(c: &Change) -> String {
    let mut words: Vec<String> = c
        .contexts
        .iter()
        .take(CONTEXTS_SHOWN)
        .map(describe)
        .collect();
    if c.contexts.len() > CONTEXTS_SHOWN {
        words.push(format!("{} more", c.contexts.len() - CONTEXTS_SHOWN));
    }
    words.join("; ")
}

fn cause_lines(out: &mut String, label: &str, policy: &Policy, cause: &Cause) {
    match &cause.rule {
        Some(r) => {
            let _ = writeln!(out, "  {label}: {} (`{}`)", cause.kind, r.text);
            toolpolicy::explain::caret(out, policy, r, cause.selector.as_ref());
        }
        None => {
            let _ = writeln!(out, "  {label}: {} (no statement)", cause.kind);
        }
    }
}

/// The human form: the widening groups first, each change with its items,
/// contexts and both deciding statements; then settings, locks, contexts
/// only one policy accepts, and tokens.
pub fn human(d: &Diff, old: &Policy, new: &Policy) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{} → {}", d.old, d.new);
    let mut compared = format!("{} contexts compared", d.contexts.compared);
    if d.contexts.left_out > 0 {
        compared += &format!(
            ", {} left out (at most {} are compared)",
            d.contexts.left_out, d.contexts.bound
        );
    }
    let _ = writeln!(out, "{compared}\n");
    if d.unchanged {
        let _ = writeln!(
            out,
            "no change: every item is decided as before in every context"
        );
        return out;
    }
    if d.settings_only {
        let _ = writeln!(
            out,
            "settings only: no item changes exposure in any context\n"
        );
    }
    for g in &d.groups {
        let mark = if g.widening { "WIDENS " } else { "" };
        let n: usize = g.changes.iter().map(|c| c.items.len()).sum();
        let what = if g.kind == "skill" { "skill" } else { "tool" };
        let _ = writeln!(
            out,
            "{mark}{}: {n} {what}{}",
            g.change,
            if n == 1 { "" } else { "s" }
        );
        for c in &g.changes {
            let _ = writeln!(out, "- {}", c.items.join(", "));
            let _ = writeln!(out, "  in: {}", contexts_line(c));
            cause_lines(&mut out, "new", new, &c.new);
            cause_lines(&mut out, "old", old, &c.old);
        }
        out.push('\n');
    }
    if !d.locks.unlocked.is_empty() || !d.locks.locked.is_empty() {
        if !d.locks.unlocked.is_empty() {
            let _ = writeln!(
                out,
                "locked → unlocked (NEW's lock does not hold their definitions: they follow its `unlocked`): {}",
                d.locks.unlocked.join(", ")
            );
        }
        if !d.locks.locked.is_empty() {
            let _ = writeln!(
                out,
                "unlocked → locked (no longer held back: NEW's lock holds them, or NEW has none): {}",
                d.locks.locked.join(", ")
            );
        }
        out.push('\n');
    }
    for c in &d.one_sided {
        let (mark, only) = match c.accepted_by {
            "new" if c.declared + c.deferred > 0 => ("WIDENS ", "only NEW"),
            "new" => ("", "only NEW"),
            _ => ("", "only OLD"),
        };
        let _ = writeln!(
            out,
            "{mark}{only} accepts {}: {} declared, {} deferred, {} hidden there; the other says: {}",
            describe(&c.context),
            c.declared,
            c.deferred,
            c.hidden,
            c.error
        );
    }
    if !d.one_sided.is_empty() {
        out.push('\n');
    }
    for s in &d.settings {
        let at = |r: &Option<toolpolicy::explain::RuleRef>| {
            r.as_ref()
                .map_or("default".to_string(), |r| format!("{}:{}", r.file, r.line))
        };
        let contexts = if s.contexts.is_empty() {
            "every context".to_string()
        } else if s.contexts.len() > CONTEXTS_SHOWN {
            format!("{} contexts", s.contexts.len())
        } else {
            s.contexts
                .iter()
                .map(describe)
                .collect::<Vec<_>>()
                .join("; ")
        };
        let _ = writeln!(
            out,
            "setting {}: {} ({}) → {} ({}) in {contexts}",
            s.key,
            s.old,
            at(&s.old_from),
            s.new,
            at(&s.new_from)
        );
    }
    if !d.settings.is_empty() {
        out.push('\n');
    }
    let changed: Vec<_> = d.tokens.iter().filter(|t| t.changed).collect();
    if !changed.is_empty() {
        let _ = writeln!(out, "first-turn tokens (declared + catalog + skills):");
        for t in &changed {
            let delta = t.new.total as i64 - t.old.total as i64;
            let _ = writeln!(
                out,
                "  {}: {} → {} ({delta:+})",
                describe(&t.context),
                t.old.total,
                t.new.total
            );
        }
        let same = d.tokens.len() - changed.len();
        if same > 0 {
            let _ = writeln!(out, "  {same} other contexts: unchanged");
        }
    }
    out
}

/// The logs' sessions replayed against NEW, its registry held to its lock.
fn replay(
    logs: &[PathBuf],
    new: &Policy,
    registry: &toolpolicy::Registry,
) -> Result<Replay, CliError> {
    let mut registry = registry.clone();
    toolpolicy::lock::mark(&mut registry, new);
    let mut r = Replayer::new(new, &registry);
    let mut bad = 0usize;
    toolpolicy::audit::read::read_logs(logs, |line| match line {
        toolpolicy::audit::read::Line::Event(logged) => r.read(&logged.event),
        toolpolicy::audit::read::Line::Bad(_) => bad += 1,
    })
    .map_err(|e| CliError::Io(e.path, e.error))?;
    if bad > 0 {
        eprintln!("warning: {bad} log lines are not events and were skipped");
    }
    Ok(r.finish())
}

fn replay_human(out: &mut String, r: &Replay) {
    let _ = writeln!(
        out,
        "\nthe logs replayed against NEW: {} sessions, {} events",
        r.sessions, r.events
    );
    let kinds: [(&str, &Found); 5] = [
        ("calls NEW would refuse", &r.refused_calls),
        (
            "declared at a first turn, deferred under NEW",
            &r.declared_now_deferred,
        ),
        (
            "declared at a first turn, hidden under NEW",
            &r.declared_now_hidden,
        ),
        (
            "not declared at a first turn, declared under NEW",
            &r.now_declared,
        ),
        ("sessions in a context NEW refuses", &r.refused_contexts),
    ];
    let searches = &r.searches_differ;
    let _ = writeln!(
        out,
        "  searches whose activations NEW changes: {} of {} replayed",
        searches.count, searches.replayed
    );
    for e in &searches.examples {
        let asked = if e.query.is_empty() {
            format!("names {}", e.names.join(", "))
        } else {
            format!("`{}`", e.query)
        };
        let list = |v: &[String]| {
            if v.is_empty() {
                "nothing".to_string()
            } else {
                v.join(", ")
            }
        };
        let _ = writeln!(
            out,
            "    - {asked} (session {}): {} -> {}",
            e.session,
            list(&e.logged),
            list(&e.new)
        );
    }
    for (what, found) in kinds {
        let _ = writeln!(out, "  {what}: {}", found.count);
        for e in &found.examples {
            let ctx = e.context.to_context();
            let rule = e
                .cause
                .as_ref()
                .and_then(|c| c.rule.as_ref())
                .map(|r| format!(" by `{}` at {}:{}:{}", r.text, r.file, r.line, r.column))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "    - `{}` (session {}, {}){rule}",
                e.tool,
                e.session,
                describe(&ctx)
            );
        }
    }
}

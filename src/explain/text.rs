//! An explanation in words, as `policy explain` prints it and the editor's
//! hover shows it.

use std::fmt::Write as _;

use super::{Explanation, Located, RuleRef, Status};
use crate::decision::CauseKind;
use crate::policy::Policy;

fn cause_words(c: CauseKind) -> &'static str {
    match c {
        CauseKind::Guard => "a guard is always declared",
        CauseKind::Search => "a search tool is declared while anything is deferred",
        CauseKind::ModelInvocable => "the skill list marks it not model-invocable",
        CauseKind::Hide => "`Hide` beats every rule but guards",
        CauseKind::Grant => "a block with grants does not grant it",
        CauseKind::Lock => "its definition is not the one the policy's lock holds",
        CauseKind::NoDefer => "`NoDefer` beats `Defer`",
        CauseKind::Switch => "`defer_loading` is false, so nothing is deferred",
        CauseKind::Defer => "`Defer` holds it back",
        CauseKind::Hint => "its registry entry says `defer_loading: true`",
        CauseKind::Default => "no rule decides it",
    }
}

/// The human form: the context and decision, the deciding statement with its
/// source line and a caret under what matched, the other matching rules and
/// why each lost, the settings in effect and where each came from, and what
/// would change the decision.
pub fn render(out: &mut String, policy: &Policy, e: &Explanation) {
    // "in mode `m`, bot `b`"; a policy without modes has no mode to name,
    // and "in no mode" would read as "never".
    let context = match &e.context.mode {
        Some(_) => format!(" in {}", e.context.describe()),
        None => {
            let rest = e.context.describe();
            let rest = rest.trim_start_matches("no mode").trim_start_matches(", ");
            if rest.is_empty() {
                String::new()
            } else {
                format!(" for {rest}")
            }
        }
    };
    let _ = writeln!(out, "`{}` is {}{context}", e.item, e.exposure);
    let _ = writeln!(
        out,
        "  cause: {} ({})",
        e.cause.kind,
        cause_words(e.cause.kind)
    );
    if let Some(why) = &e.not_declared {
        let _ = writeln!(out, "  not declared: {why}");
    }
    if let Some(r) = &e.cause.rule {
        let gutter = caret(out, policy, r, e.cause.selector.as_ref());
        if let Some(a) = &e.cause.annotation {
            let _ = writeln!(out, "  {:gutter$} = {a}", "");
        }
    }
    if let Some(lock) = &e.lock {
        let differs = if !lock.entry {
            format!("has no entry of `{}`", e.item)
        } else if lock.changed.is_empty() {
            "holds another definition (it keeps only a digest to compare with)".to_string()
        } else {
            "holds another definition:".to_string()
        };
        let _ = writeln!(
            out,
            "  lock: `{}` (line {}) {differs}",
            lock.file, lock.rule.line
        );
        for c in &lock.changed {
            let _ = writeln!(out, "    - {c}");
        }
        if !lock.applies {
            let _ = writeln!(
                out,
                "    the lock does not apply to guards and search tools: it is declared whatever its definition says"
            );
        }
    }
    if !e.near_misses.is_empty() {
        let _ = writeln!(
            out,
            "  near misses (a letter or two off its name, matching nothing):"
        );
        for m in &e.near_misses {
            let _ = writeln!(
                out,
                "    line {:<3} `{}` in `{}` ({}): did you mean `{}`?",
                m.selector.line, m.selector.text, m.rule.text, m.scope, e.item
            );
        }
    }
    let others: Vec<_> = e
        .candidates
        .iter()
        .filter(|c| c.status != Status::Decides)
        .collect();
    if !others.is_empty() {
        let _ = writeln!(out, "  other rules that match:");
        let width = others
            .iter()
            .map(|c| c.rule.text.chars().count())
            .max()
            .unwrap_or(0)
            .min(40);
        for c in others {
            let _ = writeln!(
                out,
                "    line {:<3} {:width$}  {}",
                c.rule.line, c.rule.text, c.why
            );
            if let Some(a) = &c.annotation {
                let _ = writeln!(out, "    {:3}      {:width$}  ({a})", "", "");
            }
        }
    }
    let _ = writeln!(out, "  settings in effect:");
    let width = e
        .settings
        .iter()
        .map(|s| s.key.len() + 3 + s.value.len())
        .max()
        .unwrap_or(0);
    for s in &e.settings {
        let setting = format!("{} = {}", s.key, s.value);
        let from = match (&s.from, &s.place) {
            (Some(r), Some(p)) => format!("line {}, {p}", r.line),
            (Some(r), None) => format!("line {}", r.line),
            _ => "default".to_string(),
        };
        let _ = writeln!(out, "    {setting:width$}  {from}");
    }
    if !e.change.is_empty() {
        let _ = writeln!(out, "  to change it:");
        for c in &e.change {
            let _ = writeln!(out, "    - {c}");
        }
    }
    out.push('\n');
}

/// The statement's position and its source line with a caret under the
/// selector that matched (or the whole statement); returns the gutter width.
pub fn caret(out: &mut String, policy: &Policy, r: &RuleRef, selector: Option<&Located>) -> usize {
    // Point at the selector that matched, or at the whole statement.
    let (line, column, width) = match selector {
        Some(s) => (s.line, s.column, s.text.chars().count()),
        None => (r.line, r.column, r.text.chars().count()),
    };
    let src = policy.source.line_text(line);
    let width = width
        .min(src.chars().count().saturating_sub(column - 1))
        .max(1);
    let gutter = line.to_string().len();
    let _ = writeln!(out, "  {:gutter$}--> {}:{}:{}", "", r.file, line, column);
    let _ = writeln!(out, "  {:gutter$} |", "");
    let _ = writeln!(out, "  {line} | {src}");
    let _ = writeln!(
        out,
        "  {:gutter$} | {}{}",
        "",
        " ".repeat(column - 1),
        "^".repeat(width)
    );
    gutter
}

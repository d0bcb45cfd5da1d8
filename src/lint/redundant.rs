//! The same rule again in the same scope and condition (PL103).
//!
//! A selector is redundant when an earlier selector of the same kind, in a rule
//! of the same kind, scope and `when` condition (or earlier in the same rule),
//! already matches every name it does. Such a rule counts in exactly the same
//! contexts as the earlier one and, coming later in the same scope, never
//! decides anything (SPEC 2.3: the first in the file wins); a grant adds nothing
//! to what the block lets through. Selectors of different kinds are never
//! compared: `Grant(source:x)` after `Grant(*)` also restricts skills.

use crate::ast::Selector;
use crate::diag::{Code, Diagnostic};
use crate::policy::Policy;

use super::algebra::subsumes;

struct Earlier<'a> {
    rule: usize,
    sel: &'a Selector,
}

/// Reports redundant rules and selectors; returns, per rule, whether the whole
/// rule was reported.
pub fn check(policy: &Policy, out: &mut Vec<Diagnostic>) -> Vec<bool> {
    let mut whole = vec![false; policy.rules.len()];
    let line = |span: crate::ast::Span| policy.source.line_col(span.start).0;
    for (ri, rule) in policy.rules.iter().enumerate() {
        let mut found: Vec<(&Selector, Earlier<'_>)> = Vec::new();
        for (si, s) in rule.selectors.iter().enumerate() {
            let same_rule = rule.selectors[..si]
                .iter()
                .map(|t| Earlier { rule: ri, sel: t });
            let before = policy.rules[..ri]
                .iter()
                .enumerate()
                .filter(|(_, r)| {
                    r.kind == rule.kind && r.scope == rule.scope && r.when == rule.when
                })
                .flat_map(|(rj, r)| {
                    r.selectors
                        .iter()
                        .map(move |t| Earlier { rule: rj, sel: t })
                });
            if let Some(e) = before
                .chain(same_rule)
                .find(|e| e.sel.kind == s.kind && subsumes(&e.sel.pattern, &s.pattern))
            {
                found.push((s, e));
            }
        }
        if found.is_empty() {
            continue;
        }
        let text = policy.text_of(rule.span);
        if found.len() == rule.selectors.len() && found.iter().all(|(_, e)| e.rule != ri) {
            whole[ri] = true;
            let mut others: Vec<usize> = found.iter().map(|(_, e)| e.rule).collect();
            others.sort_unstable();
            others.dedup();
            let list: Vec<String> = others
                .iter()
                .map(|&o| {
                    let r = &policy.rules[o];
                    format!("`{}` at line {}", policy.text_of(r.span), line(r.span))
                })
                .collect();
            let verb = if found.iter().all(|(s, e)| s.pattern == e.sel.pattern) {
                "repeats"
            } else {
                "adds nothing to"
            };
            out.push(
                Diagnostic::new(
                    Code::Redundant,
                    rule.span,
                    format!(
                        "`{text}` {verb} {} in the same scope and condition",
                        list.join(" and ")
                    ),
                )
                .with_help("remove this rule"),
            );
            continue;
        }
        for (s, e) in found {
            let written = policy.source.slice(s.span);
            let by = policy.source.slice(e.sel.span);
            let place = if e.rule == ri {
                "earlier in this rule".to_string()
            } else {
                let r = &policy.rules[e.rule];
                format!(
                    "in `{}` at line {}, in the same scope and condition",
                    policy.text_of(r.span),
                    line(r.span)
                )
            };
            let message = if s.pattern == e.sel.pattern {
                format!("`{written}` is already listed {place}")
            } else {
                format!("`{written}` is already matched by `{by}` {place}")
            };
            out.push(
                Diagnostic::new(Code::Redundant, s.span, message)
                    .with_help(format!("remove `{written}` from `{text}`")),
            );
        }
    }
    whole
}

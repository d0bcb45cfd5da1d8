//! The same rule again in the same scope and condition (PL103).
//!
//! A selector is redundant when an earlier selector of the same kind, in a rule
//! of the same kind, scope and `when` condition (or earlier in the same rule),
//! already matches every name it does. Such a rule counts in exactly the same
//! contexts as the earlier one and, coming later in the same scope, never
//! decides anything (the decision order: the first in the file wins); a grant adds nothing
//! to what the block lets through. Selectors of different kinds are never
//! compared: `Grant(source:x)` after `Grant(*)` also restricts skills.

use std::collections::HashMap;

use crate::ast::{Selector, SelectorKind, Span};
use crate::diag::{Code, Diagnostic, Fix};
use crate::pattern::{Pattern, PatternSet};
use crate::policy::{Condition, Policy, Rule, RuleKind, Scope};

use super::algebra::subsumes;

#[derive(Clone, Copy)]
struct Earlier<'a> {
    rule: usize,
    sel: &'a Selector,
}

/// The selectors seen so far in one (rule kind, scope, condition), in file
/// order. The first of each pattern is found by a hash lookup (a pattern
/// without `*` subsumes only itself), and only distinct wildcard patterns are
/// compared one by one: a rule listing thousands of names, or a rule repeated
/// thousands of times, costs linear time, not quadratic.
#[derive(Default)]
struct Seen<'a> {
    exact: HashMap<(SelectorKind, &'a str), (usize, Earlier<'a>)>,
    wild: Vec<(usize, Earlier<'a>)>,
    /// The wildcard patterns, compiled: an earlier pattern that matches every
    /// name `s` does matches in particular `s` without its stars, so only the
    /// patterns matching that text need the exact comparison.
    wild_index: PatternSet<usize>,
    count: usize,
}

impl<'a> Seen<'a> {
    /// The first earlier selector that matches every name `s` does.
    fn first_covering(&self, s: &Selector) -> Option<Earlier<'a>> {
        let exact = self.exact.get(&(s.kind, s.pattern.as_str()));
        let limit = exact.map_or(usize::MAX, |(at, _)| *at);
        let witness: String = s.pattern.chars().filter(|&c| c != '*').collect();
        let mut candidates = Vec::new();
        self.wild_index.matches_into(&witness, &mut candidates);
        candidates.sort_unstable();
        candidates
            .into_iter()
            .map(|k| &self.wild[k])
            .take_while(|(at, _)| *at < limit)
            .find(|(_, e)| e.sel.kind == s.kind && subsumes(&e.sel.pattern, &s.pattern))
            .or(exact)
            .map(|(_, e)| *e)
    }

    fn push(&mut self, e: Earlier<'a>) {
        let at = self.count;
        self.count += 1;
        // The first selector of each (kind, pattern) is the one a later one
        // is reported against, so a repeat is recorded once: a thousand
        // copies of `a*` would otherwise each be a candidate for every later
        // selector, quadratic in the copies.
        let first = !self
            .exact
            .contains_key(&(e.sel.kind, e.sel.pattern.as_str()));
        if first && e.sel.pattern.contains('*') {
            self.wild_index
                .insert(&Pattern::new(&e.sel.pattern), self.wild.len());
            self.wild.push((at, e));
        }
        self.exact
            .entry((e.sel.kind, e.sel.pattern.as_str()))
            .or_insert((at, e));
    }
}

/// Reports redundant rules and selectors; returns, per rule, whether the whole
/// rule was reported.
pub fn check(policy: &Policy, out: &mut Vec<Diagnostic>) -> Vec<bool> {
    let mut whole = vec![false; policy.rules.len()];
    let line = |span: crate::ast::Span| policy.source.line_col(span.start).0;
    let mut groups: HashMap<(RuleKind, &Scope, Option<&Condition>), Seen<'_>> = HashMap::new();
    for (ri, rule) in policy.rules.iter().enumerate() {
        let seen = groups
            .entry((rule.kind, &rule.scope, rule.when.as_ref()))
            .or_default();
        let mut found: Vec<(&Selector, Earlier<'_>)> = Vec::new();
        for s in &rule.selectors {
            // Earlier rules of the group come first, then earlier selectors
            // of this rule: the order in which they were pushed.
            if let Some(e) = seen.first_covering(s) {
                found.push((s, e));
            }
            seen.push(Earlier { rule: ri, sel: s });
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
            let mut d = Diagnostic::new(
                Code::Redundant,
                rule.span,
                format!(
                    "`{text}` {verb} {} in the same scope and condition",
                    list.join(" and ")
                ),
            )
            .with_help("remove this rule")
            .with_fix(Fix::remove(rule.span, format!("remove `{text}`")));
            for &o in &others {
                d = d.with_related(policy.rules[o].span, "the earlier rule");
            }
            out.push(d);
            continue;
        }
        for (s, e) in found {
            let written = policy.source.slice(s.span);
            let cut = selector_cut(rule, s);
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
                    .with_help(format!("remove `{written}` from `{text}`"))
                    .with_fix(Fix::remove(
                        cut,
                        format!("remove `{written}` from `{text}`"),
                    ))
                    .with_related(e.sel.span, format!("`{by}` matches it already")),
            );
        }
    }
    whole
}

/// The text to remove to take selector `s` out of `rule`: the selector and
/// the comma before it (after it, for the first), so that the rest reads as
/// written.
fn selector_cut(rule: &Rule, s: &Selector) -> Span {
    let i = rule
        .selectors
        .iter()
        .position(|x| std::ptr::eq(x, s))
        .unwrap_or(0);
    match (i.checked_sub(1), rule.selectors.get(i + 1)) {
        (Some(prev), _) => Span::new(rule.selectors[prev].span.end, s.span.end),
        (None, Some(next)) => Span::new(s.span.start, next.span.start),
        (None, None) => s.span,
    }
}

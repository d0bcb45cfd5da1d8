//! `Hide`, `Defer` or `Grant` naming a guard or search tool (PL104): lines 1
//! and 2 of the decision order decide those before any of these rules is read.

use crate::ast::Selector;
use crate::decision::ItemKind;
use crate::diag::{Code, Diagnostic};
use crate::policy::RuleKind;

use super::algebra::{covers, picks};
use super::shadow::kinds_of;
use super::world::World;

/// Reports each such selector; returns, per rule, whether every selector of it
/// was reported (the rule then does nothing at all, and PL102 stays quiet).
pub fn check(w: &World<'_>, out: &mut Vec<Diagnostic>) -> Vec<bool> {
    let policy = w.policy;
    let always: Vec<(usize, &Selector)> = policy
        .rules
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r.kind, RuleKind::Guard | RuleKind::Search))
        .flat_map(|(i, r)| r.selectors.iter().map(move |s| (i, s)))
        .collect();
    // Per registry tool: whether it is a guard or search tool.
    let always_in_registry: Option<Vec<bool>> = w.registry.map(|reg| {
        let mut always = vec![false; reg.len()];
        for i in w
            .table
            .guard_order(reg)
            .into_iter()
            .chain(w.table.search_order(reg))
        {
            always[i] = true;
        }
        always
    });
    let mut whole = vec![false; policy.rules.len()];
    for (ri, rule) in policy.rules.iter().enumerate() {
        if !matches!(
            rule.kind,
            RuleKind::Hide | RuleKind::Defer | RuleKind::Grant
        ) {
            continue;
        }
        let mut all = true;
        for (si, s) in rule.selectors.iter().enumerate() {
            let kinds: Vec<ItemKind> = kinds_of(rule.kind)
                .iter()
                .copied()
                .filter(|&k| picks(s, k))
                .collect();
            let tools_only = kinds == [ItemKind::Tool];
            let written = policy.source.slice(s.span);
            let by_pattern = always
                .iter()
                .find(|(_, g)| tools_only && covers(g, s, ItemKind::Tool));
            let message = if let Some((gi, _)) = by_pattern {
                let g = &policy.rules[*gi];
                let what = if g.kind == RuleKind::Guard {
                    "a guard"
                } else {
                    "a search tool"
                };
                let at = format!(
                    "`{}` at line {}",
                    policy.text_of(g.span),
                    policy.source.line_col(g.span.start).0
                );
                if s.pattern.contains('*') {
                    format!(
                        "`{}` has no effect on `{written}`: it matches only what {at} makes {what}",
                        rule.kind.word()
                    )
                } else {
                    format!(
                        "`{}` has no effect on `{written}`: it is {what} ({at})",
                        rule.kind.word()
                    )
                }
            } else if tools_only
                && always_in_registry.as_ref().is_some_and(|always| {
                    let matched = w.matched(ri, si, ItemKind::Tool);
                    !matched.is_empty() && matched.iter().all(|&t| always[t as usize])
                })
            {
                format!(
                    "`{}` has no effect on `{written}`: every registry tool it matches is a guard or search tool",
                    rule.kind.word()
                )
            } else {
                all = false;
                continue;
            };
            let only_tool_grant = rule.kind == RuleKind::Grant
                && rule
                    .selectors
                    .iter()
                    .filter(|t| picks(t, ItemKind::Tool))
                    .count()
                    == 1;
            let help = if only_tool_grant {
                format!(
                    "guards and search tools pass every grant; as the only tool this `Grant` names, `{written}` makes it hide every other tool: `Hide(*)` says that plainly"
                )
            } else {
                format!(
                    "guards and search tools are always declared: never deferred or hidden, and they pass every grant; remove `{written}` from this rule"
                )
            };
            out.push(Diagnostic::new(Code::NoEffectOnGuard, s.span, message).with_help(help));
        }
        whole[ri] = all && !rule.selectors.is_empty();
    }
    whole
}

//! Selectors that match nothing in the registry or skill list (PL105), and
//! grants that grant nothing (PL106). Quiet unless the items are known.

use std::cell::OnceCell;
use std::collections::BTreeSet;

use crate::ast::{Selector, SelectorKind};
use crate::decision::ItemKind;
use crate::diag::{Code, Diagnostic, closest};
use crate::hint::Hint;
use crate::pattern::Pattern;
use crate::policy::{Condition, Policy, Rule, RuleKind, Scope};

use super::algebra::picks;
use super::world::World;

/// The kinds of item a selector is checked against: a `source:` selector in a
/// rule that only concerns tools is checked against the registry alone.
fn kinds(rule: &Rule, s: &Selector) -> Vec<ItemKind> {
    let rule_kinds: &[ItemKind] = match rule.kind {
        RuleKind::Guard | RuleKind::Search | RuleKind::Defer | RuleKind::NoDefer
            if s.kind == SelectorKind::Source =>
        {
            &[ItemKind::Tool]
        }
        _ => &[ItemKind::Tool, ItemKind::Skill],
    };
    rule_kinds
        .iter()
        .copied()
        .filter(|&k| picks(s, k))
        .collect()
}

/// `Some(true)` when every list the selector is checked against is known and it
/// matches nothing in them.
fn matches_nothing(w: &World<'_>, ri: usize, si: usize) -> Option<bool> {
    let rule = &w.policy.rules[ri];
    let s = &rule.selectors[si];
    if rule.kind == RuleKind::Search
        && s.kind == SelectorKind::Tool
        && w.engine_search.as_deref() == Some(s.pattern.as_str())
    {
        // The engine defines it where the registry does not.
        return Some(false);
    }
    let kinds = kinds(rule, s);
    if kinds.is_empty() || !kinds.iter().all(|&k| w.knows(k)) {
        return None;
    }
    Some(kinds.iter().all(|&k| w.matched(ri, si, k).is_empty()))
}

fn where_(kinds: &[ItemKind]) -> &'static str {
    match kinds {
        [ItemKind::Tool] => "no tool in the registry",
        [ItemKind::Skill] => "no skill in the skill list",
        _ => "no tool in the registry and no skill in the skill list",
    }
}

/// The names (or sources) suggestions draw from, per list: each list is
/// gathered, sorted and lowercased once, not again for every selector that
/// matches nothing (a policy can have thousands, a registry 10,000 tools).
#[derive(Default)]
struct Vocabulary<'w> {
    /// By `source` (0 or 1) * 3 + kinds (tools, skills, both).
    lists: [OnceCell<Vec<(&'w str, String)>>; 6],
}

impl<'w> Vocabulary<'w> {
    /// Sorted by name, each once, with its lowercase form.
    fn list(&self, w: &World<'w>, source: bool, kinds: &[ItemKind]) -> &[(&'w str, String)] {
        let k = match kinds {
            [ItemKind::Tool] => 0,
            [ItemKind::Skill] => 1,
            _ => 2,
        };
        self.lists[usize::from(source) * 3 + k].get_or_init(|| {
            let mut names: BTreeSet<&'w str> = BTreeSet::new();
            for &kind in kinds {
                match (source, kind) {
                    (true, ItemKind::Tool) => names.extend(
                        w.registry
                            .into_iter()
                            .flat_map(|r| r.tools())
                            .filter_map(|t| t.source.as_deref()),
                    ),
                    (true, ItemKind::Skill) => names.extend(
                        w.skills
                            .into_iter()
                            .flat_map(|l| l.skills())
                            .filter_map(|t| t.source.as_deref()),
                    ),
                    (false, ItemKind::Tool) => names.extend(
                        w.registry
                            .into_iter()
                            .flat_map(|r| r.tools())
                            .map(|t| t.name.as_str()),
                    ),
                    (false, ItemKind::Skill) => names.extend(
                        w.skills
                            .into_iter()
                            .flat_map(|l| l.skills())
                            .map(|t| t.name.as_str()),
                    ),
                }
            }
            names.into_iter().map(|n| (n, n.to_lowercase())).collect()
        })
    }
}

/// "did you mean" from the known names (or sources), or a case hint for a
/// pattern that would match if names were not case-sensitive.
fn suggestion<'w>(
    w: &World<'w>,
    vocabulary: &Vocabulary<'w>,
    s: &Selector,
    kinds: &[ItemKind],
) -> Option<String> {
    let prefix = match s.kind {
        SelectorKind::Tool => "",
        SelectorKind::Skill => "skill:",
        SelectorKind::Source => "source:",
        SelectorKind::Hint => return Hint::parse(&s.pattern).map(what_it_takes),
    };
    let names = vocabulary.list(w, s.kind == SelectorKind::Source, kinds);
    if !s.pattern.contains('*') {
        let close = closest(&s.pattern, names.iter().map(|(n, _)| *n));
        if close.is_empty() {
            return None;
        }
        let list: Vec<String> = close
            .iter()
            .take(3)
            .map(|c| format!("`{prefix}{c}`"))
            .collect();
        return Some(format!("did you mean {}", list.join(" or ")));
    }
    let lower = Pattern::new(&s.pattern.to_lowercase());
    let (hit, _) = names.iter().find(|(_, n)| lower.matches(n))?;
    Some(format!(
        "names are case-sensitive: `{prefix}{}` does not match `{prefix}{hit}`",
        s.pattern
    ))
}

fn lists(kinds: &[ItemKind]) -> &'static str {
    match kinds {
        [ItemKind::Tool] => "registry",
        [ItemKind::Skill] => "skill list",
        _ => "registry and skill list",
    }
}

fn place(scope: &Scope, when: Option<&Condition>) -> String {
    let mut s = match scope {
        Scope::Top => "everywhere".to_string(),
        Scope::Mode(m) => format!("in mode `{m}`"),
        Scope::AnyBot => "for every bot".to_string(),
        Scope::Bot(b) => format!("for bot `{b}`"),
    };
    if let Some(c) = when {
        let state = if c.negated { "not set" } else { "set" };
        s += &format!(" while `{}` is {state}", c.flag);
    }
    s
}

pub fn check<'w>(w: &World<'w>, out: &mut Vec<Diagnostic>) {
    let policy: &Policy = w.policy;
    let vocabulary: Vocabulary<'w> = Vocabulary::default();
    for (ri, rule) in policy.rules.iter().enumerate() {
        let nothing: Vec<Option<bool>> = (0..rule.selectors.len())
            .map(|si| matches_nothing(w, ri, si))
            .collect();
        if rule.kind == RuleKind::Grant && nothing.iter().all(|n| *n == Some(true)) {
            out.push(grants_nothing(w, &vocabulary, rule));
            continue;
        }
        for (s, n) in rule.selectors.iter().zip(nothing) {
            if n != Some(true) {
                continue;
            }
            if s.kind == SelectorKind::Hint {
                hint_matches_nothing(w, rule, s, out);
                continue;
            }
            let kinds = kinds(rule, s);
            let written = policy.source.slice(s.span);
            let mut help = suggestion(w, &vocabulary, s, &kinds).unwrap_or_else(|| {
                format!(
                    "check the spelling against the {}; names are case-sensitive",
                    lists(&kinds)
                )
            });
            if rule.kind == RuleKind::Search && s.kind == SelectorKind::Tool {
                help += "; a search tool the engine supplies needs no registry entry: \
                         `search tool_search` behind `policy gateway` or the Node module \
                         (`policy check --engine-tools` for another name)";
            }
            let fixes = replacements(w, &vocabulary, s, &kinds);
            out.push(
                Diagnostic::new(
                    Code::MatchesNothing,
                    s.span,
                    format!("`{written}` matches {}", where_(&kinds)),
                )
                .with_help(help)
                .with_suggestions(s.span, fixes.iter().map(String::as_str)),
            );
        }
    }
}

/// The selectors [`suggestion`]'s did-you-mean names, as the formatter
/// writes them: what a quick fix puts in place of `s`.
fn replacements<'w>(
    w: &World<'w>,
    vocabulary: &Vocabulary<'w>,
    s: &Selector,
    kinds: &[ItemKind],
) -> Vec<String> {
    if s.pattern.contains('*') || s.kind == SelectorKind::Hint {
        return Vec::new();
    }
    let names = vocabulary.list(w, s.kind == SelectorKind::Source, kinds);
    closest(&s.pattern, names.iter().map(|(n, _)| *n))
        .into_iter()
        .take(3)
        .map(|c| {
            crate::format::selector(&Selector {
                pattern: c.to_string(),
                quoted: false,
                ..s.clone()
            })
        })
        .collect()
}

/// What a tool's annotations must say for it to have the hint.
fn what_it_takes(h: Hint) -> String {
    let says = match h {
        Hint::ReadOnly => "`readOnlyHint: true`",
        Hint::Destructive => "neither `readOnlyHint: true` nor `destructiveHint: false`",
        Hint::Idempotent => "`idempotentHint: true` or `readOnlyHint: true`",
        Hint::OpenWorld => "anything but `openWorldHint: false`",
    };
    format!("`{h}` picks a tool whose annotations say {says}")
}

/// PL121: a hint no registry tool has. Without any annotations in the
/// registry, a `Hide` or `Defer` by hint is PL122's finding, said once.
fn hint_matches_nothing(w: &World<'_>, rule: &Rule, s: &Selector, out: &mut Vec<Diagnostic>) {
    let bare = w.registry.is_some_and(|r| !r.has_annotations());
    if bare && matches!(rule.kind, RuleKind::Hide | RuleKind::Defer) {
        return;
    }
    let Some(h) = Hint::parse(&s.pattern) else {
        return;
    };
    let why = if bare {
        "the registry carries no annotations, so every tool has the defaults".to_string()
    } else {
        what_it_takes(h)
    };
    out.push(
        Diagnostic::new(
            Code::HintMatchesNothing,
            s.span,
            format!("no tool in the registry has `{h}`"),
        )
        .with_help(format!(
            "{why}; a hint is what a tool's server says of it, read from its `annotations`"
        )),
    );
}

/// PL122: hiding or deferring by hint while no registry tool carries
/// annotations. Every tool then has MCP's defaults (destructive, open
/// world, neither read-only nor idempotent), so the rule picks all of them
/// or none; said once, at the first such selector.
pub fn no_annotations(w: &World<'_>, out: &mut Vec<Diagnostic>) {
    if !w
        .registry
        .is_some_and(|r| !r.is_empty() && !r.has_annotations())
    {
        return;
    }
    let first = w
        .policy
        .rules
        .iter()
        .filter(|r| matches!(r.kind, RuleKind::Hide | RuleKind::Defer))
        .flat_map(|r| r.selectors.iter().map(move |s| (r, s)))
        .find(|(_, s)| s.kind == SelectorKind::Hint);
    if let Some((rule, s)) = first {
        out.push(
            Diagnostic::new(
                Code::NoAnnotations,
                s.span,
                format!(
                    "`{}` goes by `{}`, but no tool in the registry carries annotations",
                    w.policy.text_of(rule.span),
                    w.policy.source.slice(s.span)
                ),
            )
            .with_help(
                "without `annotations` every tool counts as destructive and open-world and as neither read-only nor idempotent, so a hint picks every tool or none; pass a registry that carries the servers' annotations, or select by name",
            ),
        );
    }
}

fn grants_nothing<'w>(w: &World<'w>, vocabulary: &Vocabulary<'w>, rule: &Rule) -> Diagnostic {
    let policy = w.policy;
    let text = policy.text_of(rule.span);
    let mut restricted: Vec<ItemKind> = Vec::new();
    let mut helps = Vec::new();
    for s in &rule.selectors {
        let k = kinds(rule, s);
        for kind in &k {
            if !restricted.contains(kind) {
                restricted.push(*kind);
            }
        }
        if let Some(h) = suggestion(w, vocabulary, s, &k) {
            helps.push(h);
        }
    }
    restricted.sort_by_key(|k| *k == ItemKind::Skill);
    let mut message = format!(
        "`{text}` grants nothing: it matches {}",
        where_(&restricted)
    );
    // The consequence holds only when no other grant shares the block.
    let alone = policy
        .rules
        .iter()
        .filter(|r| r.kind == RuleKind::Grant && r.scope == rule.scope)
        .count()
        == 1;
    if alone {
        let hidden = match restricted.as_slice() {
            [ItemKind::Tool] => "every tool but the guards and search tools is hidden",
            [ItemKind::Skill] => "every skill is hidden",
            _ => "every skill, and every tool but the guards and search tools, is hidden",
        };
        message += &format!("; {hidden} {}", place(&rule.scope, rule.when.as_ref()));
    }
    let help = if helps.is_empty() {
        format!(
            "check the names against the {}; names are case-sensitive",
            lists(&restricted)
        )
    } else {
        helps.join("; ")
    };
    Diagnostic::new(Code::GrantsNothing, rule.span, message).with_help(help)
}

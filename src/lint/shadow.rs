//! Rules that never take effect (PL102), and deferred tools that nothing can
//! discover (PL101).
//!
//! A `Defer`, `NoDefer` or `Hide` rule is shadowed when, in every context where
//! it counts, every item it matches is decided by an earlier line of the
//! decision procedure (docs/language.md). With a registry or skill list the items are
//! those, and each decision is computed; without, a selector is covered in a
//! context only when one earlier mechanism decides every item it can match (a
//! selector that covers it, a grant filter it cannot pass, the global switch).
//! That is exact for selectors of one kind (see `algebra`) and errs towards
//! silence otherwise.

use std::collections::{BTreeSet, HashSet};

use crate::ast::{Selector, SelectorKind};
use crate::decision::{CauseKind, Decision, ItemKind, Origin};
use crate::diag::{Code, Diagnostic, Fix, Related};
use crate::pattern::{Pattern, PatternSet};
use crate::policy::{Policy, RuleKind, Scope};
use crate::reference::applies;
use crate::settings::Key;

use super::algebra::{covers, disjoint, picks};
use super::world::World;

/// What decides an item before a rule gets its turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Shadower {
    Rule(usize),
    Setting(usize),
    /// The grant filter of a block, named by its first restricting grant.
    GrantsOf(usize),
    NotInvocable,
}

pub enum Verdict {
    /// The rule matches no known item.
    Vacuous,
    /// Some item in some context reaches the rule's line.
    Effective,
    Shadowed {
        by: BTreeSet<Shadower>,
        /// Whether every item was a known one (registry or skill list).
        exact: bool,
    },
}

/// The line of the decision order a cause comes from, in the order lines are tried.
fn cause_rank(c: CauseKind) -> u8 {
    match c {
        CauseKind::Guard => 1,
        CauseKind::Search => 2,
        CauseKind::ModelInvocable => 3,
        CauseKind::Hide => 4,
        CauseKind::Grant => 5,
        // Lines 3 and 4: after the grants, before `NoDefer`.
        CauseKind::Lock => 5,
        CauseKind::NoDefer => 6,
        CauseKind::Switch => 7,
        CauseKind::Defer => 8,
        CauseKind::Hint => 9,
        CauseKind::Default => 10,
    }
}

fn rule_rank(k: RuleKind) -> u8 {
    match k {
        RuleKind::Guard => 1,
        RuleKind::Search => 2,
        RuleKind::Hide => 4,
        RuleKind::Grant => 5,
        RuleKind::NoDefer => 6,
        RuleKind::Defer => 8,
    }
}

/// The kinds of item a rule can change: `Defer` and `NoDefer` do nothing to skills.
pub fn kinds_of(kind: RuleKind) -> &'static [ItemKind] {
    match kind {
        RuleKind::Defer | RuleKind::NoDefer | RuleKind::Guard | RuleKind::Search => {
            &[ItemKind::Tool]
        }
        RuleKind::Hide | RuleKind::Grant => &[ItemKind::Tool, ItemKind::Skill],
    }
}

fn shadower(d: &Decision) -> Option<Shadower> {
    match (d.cause, d.origin) {
        (CauseKind::ModelInvocable, _) => Some(Shadower::NotInvocable),
        (CauseKind::Grant, Some(Origin::Rule(i))) => Some(Shadower::GrantsOf(i as usize)),
        (_, Some(Origin::Rule(i))) => Some(Shadower::Rule(i as usize)),
        (_, Some(Origin::Setting(i))) => Some(Shadower::Setting(i as usize)),
        _ => None,
    }
}

/// What is known about the items a selector can match.
enum Known<'w> {
    /// The registry's or skill list's items it matches.
    Items(&'w [u32]),
    /// No list: the rules that could cover the selector (`covering_candidates`).
    Candidates(Vec<u32>),
}

/// A selector of a rule with a kind of item it can change, and what is
/// known about the items it matches.
type Pair<'a> = (&'a Selector, ItemKind, Known<'a>);

/// Each selector of a `Defer`, `NoDefer` or `Hide` rule with each kind of item
/// it can change: the known items it matches, or the rules that could cover
/// it to reason about every possible item. `None` for other rules.
fn pairs<'a>(w: &'a World<'_>, deciders: &Deciders, ri: usize) -> Option<Vec<Pair<'a>>> {
    let rule = &w.policy.rules[ri];
    if !matches!(
        rule.kind,
        RuleKind::Defer | RuleKind::NoDefer | RuleKind::Hide
    ) {
        return None;
    }
    Some(
        rule.selectors
            .iter()
            .enumerate()
            .flat_map(|(si, s)| {
                kinds_of(rule.kind)
                    .iter()
                    .filter(|&&k| picks(s, k))
                    .map(move |&k| {
                        let known = if w.knows(k) {
                            Known::Items(w.matched(ri, si, k))
                        } else {
                            Known::Candidates(deciders.candidates(s, k))
                        };
                        (s, k, known)
                    })
            })
            .collect(),
    )
}

/// Decisions about known items in one context, each made when first asked.
struct Decisions {
    tools: Vec<Option<Decision>>,
    skills: Vec<Option<Decision>>,
    /// What to forget when the context changes.
    made: Vec<(ItemKind, u32)>,
}

impl Decisions {
    fn get(&mut self, w: &World<'_>, c: usize, kind: ItemKind, i: u32) -> Decision {
        let slot = match kind {
            ItemKind::Tool => &mut self.tools[i as usize],
            ItemKind::Skill => &mut self.skills[i as usize],
        };
        *slot.get_or_insert_with(|| {
            self.made.push((kind, i));
            w.decision(c, kind, i as usize)
        })
    }

    fn forget(&mut self) {
        for (kind, i) in self.made.drain(..) {
            match kind {
                ItemKind::Tool => self.tools[i as usize] = None,
                ItemKind::Skill => self.skills[i as usize] = None,
            }
        }
    }
}

/// Whether each rule ever decides anything (`Defer`, `NoDefer` and `Hide`
/// rules; every other rule is `Effective`).
///
/// The contexts are walked one at a time, and in each, every rule that counts
/// there is tried on its items; an item's decision is made once per context
/// and shared by all those rules. Walking rule by rule decided the same item
/// in the same context again for every rule that matches it, which made a
/// policy of 10,000 rules over 50 modes and 50 bots take a minute.
fn verdicts(w: &World<'_>) -> Vec<Verdict> {
    let rules = &w.policy.rules;
    let deciders = Deciders::new(w.policy);
    let pairs: Vec<Option<Vec<Pair<'_>>>> =
        (0..rules.len()).map(|ri| pairs(w, &deciders, ri)).collect();
    let mut in_context: Vec<Vec<u32>> = vec![Vec::new(); w.contexts.len()];
    for (ri, p) in pairs.iter().enumerate() {
        if p.is_some() {
            for c in w.contexts_of(&rules[ri]) {
                in_context[c].push(ri as u32);
            }
        }
    }
    // `None` once the rule is known to take effect.
    let mut shadowed: Vec<Option<(BTreeSet<Shadower>, bool)>> = pairs
        .iter()
        .map(|p| p.as_ref().map(|_| (BTreeSet::new(), true)))
        .collect();
    let mut decisions = Decisions {
        tools: vec![None; w.registry.map_or(0, |r| r.len())],
        skills: vec![None; w.skills.map_or(0, |l| l.len())],
        made: Vec::new(),
    };
    for (c, here) in in_context.iter().enumerate() {
        decisions.forget();
        for &ri in here {
            let ri = ri as usize;
            let (Some(pairs), Some((by, exact))) = (&pairs[ri], &mut shadowed[ri]) else {
                continue;
            };
            let rank = rule_rank(rules[ri].kind);
            let mut effective = false;
            'pairs: for (s, kind, items) in pairs {
                match items {
                    Known::Items(items) => {
                        let mut last = None;
                        for &i in *items {
                            let d = decisions.get(w, c, *kind, i);
                            match shadower(&d) {
                                // Neighbouring items are mostly decided by
                                // the same line: the set is searched once.
                                Some(sh) if Some(sh) == last => {}
                                Some(sh) if cause_rank(d.cause) < rank => {
                                    by.insert(sh);
                                    last = Some(sh);
                                }
                                _ => {
                                    effective = true;
                                    break 'pairs;
                                }
                            }
                        }
                    }
                    Known::Candidates(candidates) => {
                        match covered(w, c, ri, s, *kind, candidates) {
                            Some(sh) => {
                                *exact = false;
                                by.insert(sh);
                            }
                            None => {
                                effective = true;
                                break 'pairs;
                            }
                        }
                    }
                }
            }
            if effective {
                shadowed[ri] = None;
            }
        }
    }
    shadowed
        .into_iter()
        .map(|s| match s {
            None => Verdict::Effective,
            Some((by, _)) if by.is_empty() => Verdict::Vacuous,
            Some((by, exact)) => Verdict::Shadowed { by, exact },
        })
        .collect()
}

/// Without known items: what decides every item of `kind` that `s` can match,
/// before rule `ri` does, in context `c` — if one thing does.
fn covered(
    w: &World<'_>,
    c: usize,
    ri: usize,
    s: &Selector,
    kind: ItemKind,
    candidates: &[u32],
) -> Option<Shadower> {
    let policy = w.policy;
    let rule = &policy.rules[ri];
    let ctx = &w.contexts[c];
    let first_covering = |k: RuleKind| {
        candidates.iter().find_map(|&i| {
            let r = &policy.rules[i as usize];
            (r.kind == k
                && applies(&r.scope, r.when.as_ref(), ctx)
                && r.selectors.iter().any(|t| covers(t, s, kind)))
            .then_some(Shadower::Rule(i as usize))
        })
    };
    if kind == ItemKind::Tool
        && let Some(sh) =
            first_covering(RuleKind::Guard).or_else(|| first_covering(RuleKind::Search))
    {
        return Some(sh);
    }
    if rule.kind == RuleKind::Hide {
        return None;
    }
    if let Some(sh) = first_covering(RuleKind::Hide) {
        return Some(sh);
    }
    for block in w.filter_blocks(c) {
        let grants = w.grants_in(c, &block);
        let restricting = grants
            .iter()
            .copied()
            .find(|&g| policy.rules[g].selectors.iter().any(|t| picks(t, kind)));
        if let Some(first) = restricting
            && grants.iter().all(|&g| {
                policy.rules[g]
                    .selectors
                    .iter()
                    .all(|t| disjoint(t, s, kind))
            })
        {
            return Some(Shadower::GrantsOf(first));
        }
    }
    if rule.kind != RuleKind::Defer {
        return None;
    }
    if let Some(sh) = first_covering(RuleKind::NoDefer) {
        return Some(sh);
    }
    if !w.settings(c).defer_loading {
        return w.resolved[c]
            .setting_origin(Key::DeferLoading)
            .map(|i| Shadower::Setting(i as usize));
    }
    None
}

/// The rules that can decide an item before a `Defer`, `NoDefer` or `Hide`
/// does when nothing is known about the items (guards, search tools, `Hide`,
/// `NoDefer`), for finding the ones that could cover a selector.
///
/// A selector that covers `s` matches every name `s` matches, so in
/// particular the text of `s` without its stars: these patterns find those
/// with a few lookups instead of comparing every rule with every other, and
/// `covers` then decides exactly. Each distinct (selector, rule kind, scope,
/// condition) is recorded once, for its first rule in the file (the only one
/// a finding names), so a rule repeated ten thousand times costs what one
/// does rather than making every later lookup scan all the copies.
struct Deciders {
    tools: PatternSet<u32>,
    skills: PatternSet<u32>,
    sources: PatternSet<u32>,
    hints: PatternSet<u32>,
}

impl Deciders {
    fn new(policy: &Policy) -> Self {
        let mut d = Deciders {
            tools: PatternSet::default(),
            skills: PatternSet::default(),
            sources: PatternSet::default(),
            hints: PatternSet::default(),
        };
        let mut seen = HashSet::new();
        for (ri, r) in policy.rules.iter().enumerate() {
            if !matches!(
                r.kind,
                RuleKind::Guard | RuleKind::Search | RuleKind::Hide | RuleKind::NoDefer
            ) {
                continue;
            }
            for sel in &r.selectors {
                if !seen.insert((sel.kind, sel.pattern.as_str(), r.kind, &r.scope, &r.when)) {
                    continue;
                }
                let set = match sel.kind {
                    SelectorKind::Tool => &mut d.tools,
                    SelectorKind::Skill => &mut d.skills,
                    SelectorKind::Source => &mut d.sources,
                    // Only the same hint covers a hint (`algebra::covers`).
                    SelectorKind::Hint => &mut d.hints,
                };
                set.insert(&Pattern::new(&sel.pattern), ri as u32);
            }
        }
        d
    }

    /// The rules (in file order) that could have a selector covering `s`
    /// for items of `kind`.
    fn candidates(&self, s: &Selector, kind: ItemKind) -> Vec<u32> {
        let witness: String = s.pattern.chars().filter(|&c| c != '*').collect();
        let mut out = Vec::new();
        match kind {
            ItemKind::Tool => self.tools.matches_into(&witness, &mut out),
            ItemKind::Skill => self.skills.matches_into(&witness, &mut out),
        }
        if s.kind == SelectorKind::Source {
            self.sources.matches_into(&witness, &mut out);
        }
        if s.kind == SelectorKind::Hint {
            self.hints.matches_into(&witness, &mut out);
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// Where the statement that decides first stands, if it is one.
fn shadower_span(w: &World<'_>, sh: Shadower) -> Option<crate::ast::Span> {
    match sh {
        Shadower::Rule(i) | Shadower::GrantsOf(i) => Some(w.policy.rules[i].span),
        Shadower::Setting(i) => Some(w.policy.settings[i].span),
        Shadower::NotInvocable => None,
    }
}

fn describe(w: &World<'_>, sh: Shadower) -> String {
    let policy = w.policy;
    let at = |span: crate::ast::Span| {
        format!(
            "`{}` at line {}",
            policy.text_of(span),
            policy.source.line_col(span.start).0
        )
    };
    match sh {
        Shadower::Rule(i) => at(policy.rules[i].span),
        Shadower::Setting(i) => at(policy.settings[i].span),
        Shadower::GrantsOf(i) => {
            let r = &policy.rules[i];
            match &r.scope {
                Scope::Top => format!("the top-level grants ({})", at(r.span)),
                s => format!("the grants of {s} ({})", at(r.span)),
            }
        }
        Shadower::NotInvocable => "`model_invocable: false` in the skill list".to_string(),
    }
}

/// PL102 for each shadowed rule (except those `skip` says are already reported
/// as naming only guards), and PL101 for each effective `Defer` when the model
/// has no search tool to find what it defers.
pub fn check(w: &World<'_>, skip: &[bool], out: &mut Vec<Diagnostic>) {
    let policy = w.policy;
    // A search tool the engine supplies is declared, and found.
    let declared_search =
        w.engine_search.is_some() || policy.rules.iter().any(|r| r.kind == RuleKind::Search);
    let search_in_registry = w.engine_search.is_some()
        || w.registry
            .is_none_or(|reg| !w.table.search_order(reg).is_empty());
    for ((ri, rule), verdict) in policy.rules.iter().enumerate().zip(verdicts(w)) {
        match verdict {
            Verdict::Shadowed { by, exact } if !skip[ri] => {
                let what = match (rule.kind, exact) {
                    (RuleKind::Hide, true) => "every known item it matches",
                    (RuleKind::Hide, false) => "every item it can match",
                    (_, true) => "every registry tool it matches",
                    (_, false) => "every tool it can match",
                };
                let mut names: Vec<String> = by.iter().take(3).map(|&s| describe(w, s)).collect();
                if by.len() > 3 {
                    names.push(format!("{} more", by.len() - 3));
                }
                let help = match rule.kind {
                    RuleKind::Defer => {
                        "guards, search tools, `Hide`, grants, `NoDefer` and `defer_loading = false` all decide before `Defer`; remove this rule, or change the one that decides first"
                    }
                    RuleKind::NoDefer => {
                        "guards, search tools, `Hide` and grants decide before `NoDefer`; remove this rule, or change the one that decides first"
                    }
                    _ => {
                        "guards and search tools are never hidden; remove this rule, or change the one that decides first"
                    }
                };
                out.push(
                    Diagnostic::new(
                        Code::Shadowed,
                        rule.span,
                        format!(
                            "`{}` never takes effect: {what} is decided first, by {}",
                            policy.text_of(rule.span),
                            names.join(", ")
                        ),
                    )
                    .with_help(help)
                    .with_fix(Fix::remove(
                        rule.span,
                        format!("remove `{}`", policy.text_of(rule.span)),
                    )),
                );
                if let Some(d) = out.last_mut() {
                    for &sh in by.iter().take(3) {
                        if let Some(span) = shadower_span(w, sh) {
                            d.related.push(Related {
                                span,
                                message: "decides first".into(),
                            });
                        }
                    }
                }
            }
            Verdict::Effective if rule.kind == RuleKind::Defer => {
                let (message, help) = if !declared_search {
                    (
                        "no `search` tool is declared",
                        "declare the discovery tool at top level, e.g. `search ToolSearch`; behind `policy gateway` or the Node module, which supply their own search tool, `search tool_search`",
                    )
                } else if !search_in_registry {
                    (
                        "no `search` tool of the policy is in the registry",
                        "add the search tool to the registry, or correct its name in the `search` statement; a search tool the engine supplies (`search tool_search`, behind `policy gateway` or the Node module) needs no registry entry",
                    )
                } else {
                    continue;
                };
                out.push(
                    Diagnostic::new(
                        Code::Undiscoverable,
                        rule.span,
                        format!(
                            "`{}` defers tools, but {message}: the model can neither find nor load them",
                            policy.text_of(rule.span)
                        ),
                    )
                    .with_help(help),
                );
            }
            _ => {}
        }
    }
}

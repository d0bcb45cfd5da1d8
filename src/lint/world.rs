//! Every context a policy can be asked about, each resolved once, and — when
//! a registry or skill list is given — the items, each matched against the
//! policy's patterns once, so that any decision the lints ask for is a walk
//! over an item's matching rules. Decisions are not stored for every context
//! and item up front: with 50 modes and 50 bots that is 2,601 contexts, by
//! 10,000 tools.
//!
//! A context is a declared mode (or no mode, for a policy that declares
//! none), no bot, each bot with a block, or some other bot (only `bot *`
//! applies to it), and any subset of the flags the policy's `when` blocks
//! name. Those are all the contexts that can differ: a mode the policy does
//! not declare, or none on a policy that declares some, is an error (docs/language.md
//! 2.3), and flags the policy never names change nothing.

use std::collections::{BTreeSet, HashMap};

use crate::ast::{Selector, SelectorKind};
use crate::decision::{Context, Decision, ItemKind, ItemRef};
use crate::hint::Hint;
use crate::pattern::{Pattern, PatternSet};
use crate::policy::{Policy, Rule, RuleKind, Scope};
use crate::reference::applies;
use crate::registry::{Registry, SkillList};
use crate::settings::Settings;
use crate::table::{Resolved, Table};

use super::algebra::picks;

/// Beyond this many contexts the lints that walk all of them stay quiet.
const MAX_CONTEXTS: usize = 4096;

/// A bot name no policy can write (quoted names cannot hold a line break): a
/// bot without a block of its own.
pub const OTHER_BOT: &str = "\n";

pub struct World<'a> {
    pub policy: &'a Policy,
    pub table: Table,
    pub registry: Option<&'a Registry>,
    pub skills: Option<&'a SkillList>,
    /// Empty when the policy has too many flag combinations to walk.
    pub contexts: Vec<Context>,
    pub resolved: Vec<Resolved>,
    /// Per context of `contexts`, indexed by mode and by bot, so that the
    /// contexts a rule counts in are found without testing every one.
    by_mode: HashMap<Option<String>, Vec<usize>>,
    by_bot: HashMap<Option<String>, Vec<usize>>,
    /// Registry tools and listed skills, each with the rules matching it,
    /// matched once: a decision in any context is then a walk over those.
    tools: Vec<Known<'a>>,
    skill_items: Vec<Known<'a>>,
    /// Per selector of the policy (see `first_selector`): the registry tools
    /// and the listed skills it matches, matched once for every lint.
    tools_of: Vec<Matched>,
    skills_of: Vec<Matched>,
    /// Per rule: the index of its first selector in `tools_of` / `skills_of`.
    first_selector: Vec<usize>,
    /// `0, 1, ..` up to the longer list: what a `*` selector matches.
    every: Box<[u32]>,
    /// `grants[c][b]`: the grant rules of filter block `b` (top level, the
    /// mode, `bot *`, the named bot: a scope's specificity) that count in
    /// context `c`, computed once because the shadow lint asks per rule.
    grants: Vec<[Vec<usize>; 4]>,
    /// The search tool the engine's own definition stands for where the
    /// registry has none of its name (see `Options::engine_search`).
    pub engine_search: Option<String>,
}

/// A known item and the rules whose selectors match it.
struct Known<'a> {
    item: ItemRef<'a>,
    rules: Box<[u32]>,
}

/// The known items of one kind a selector matches.
enum Matched {
    /// `*`: every one, answered from `World::every` rather than a list of
    /// its own.
    All,
    Some(Vec<u32>),
}

impl<'a> World<'a> {
    pub fn new(
        policy: &'a Policy,
        registry: Option<&'a Registry>,
        skills: Option<&'a SkillList>,
    ) -> World<'a> {
        let table = Table::compile(policy);
        let (contexts, resolved): (Vec<Context>, Vec<Resolved>) = enumerate(policy)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|c| table.resolve(&c).ok().map(|r| (c, r)))
            .unzip();
        let mut by_mode: HashMap<Option<String>, Vec<usize>> = HashMap::new();
        let mut by_bot: HashMap<Option<String>, Vec<usize>> = HashMap::new();
        for (i, c) in contexts.iter().enumerate() {
            by_mode.entry(c.mode.clone()).or_default().push(i);
            by_bot.entry(c.bot.clone()).or_default().push(i);
        }
        let known = |item: ItemRef<'a>| Known {
            rules: table.matching_rules(&item).into_boxed_slice(),
            item,
        };
        let tools: Vec<Known<'a>> = registry
            .map(|r| {
                // Lints judge the policy's rules, not which tools a lock
                // holds today: an unlocked mark would make a rule look
                // shadowed by the lock (PL123 and PL124 say what is unlocked).
                r.tools()
                    .iter()
                    .map(|t| ItemRef {
                        unlocked: false,
                        ..ItemRef::from_tool(t)
                    })
                    .map(known)
                    .collect()
            })
            .unwrap_or_default();
        let skill_items: Vec<Known<'a>> = skills
            .map(|l| {
                l.skills()
                    .iter()
                    .map(ItemRef::from_skill)
                    .map(known)
                    .collect()
            })
            .unwrap_or_default();
        let mut first_selector = Vec::with_capacity(policy.rules.len());
        let mut selectors: Vec<&Selector> = Vec::new();
        for r in &policy.rules {
            first_selector.push(selectors.len());
            selectors.extend(&r.selectors);
        }
        let tools_of = matched_by(&selectors, &tools, ItemKind::Tool);
        let skills_of = matched_by(&selectors, &skill_items, ItemKind::Skill);
        let every = (0..tools.len().max(skill_items.len()) as u32).collect();
        let mut world = World {
            policy,
            table,
            registry,
            skills,
            contexts,
            resolved,
            by_mode,
            by_bot,
            tools,
            skill_items,
            tools_of,
            skills_of,
            first_selector,
            every,
            grants: Vec::new(),
            engine_search: None,
        };
        let mut grants: Vec<[Vec<usize>; 4]> = vec![Default::default(); world.contexts.len()];
        for (i, r) in policy.rules.iter().enumerate() {
            if r.kind == RuleKind::Grant {
                for c in world.contexts_of(r) {
                    grants[c][usize::from(r.scope.specificity())].push(i);
                }
            }
        }
        world.grants = grants;
        world
    }

    pub fn settings(&self, c: usize) -> &Settings {
        self.resolved[c].settings()
    }

    /// The contexts (by index) in which a rule counts, in order.
    pub fn contexts_of(&self, rule: &Rule) -> impl Iterator<Item = usize> + '_ {
        let (scope, when) = (rule.scope.clone(), rule.when.clone());
        let candidates: Box<dyn Iterator<Item = usize> + '_> = match &rule.scope {
            Scope::Top => Box::new(0..self.contexts.len()),
            Scope::Mode(m) => Box::new(self.listed(&self.by_mode, Some(m))),
            Scope::Bot(b) => Box::new(self.listed(&self.by_bot, Some(b))),
            Scope::AnyBot => Box::new(0..self.contexts.len()),
        };
        candidates.filter(move |&c| applies(&scope, when.as_ref(), &self.contexts[c]))
    }

    fn listed<'m>(
        &self,
        index: &'m HashMap<Option<String>, Vec<usize>>,
        key: Option<&String>,
    ) -> impl Iterator<Item = usize> + 'm {
        index
            .get(&key.cloned())
            .into_iter()
            .flat_map(|v| v.iter().copied())
    }

    /// Whether items of this kind are known (a registry for tools, a skill list
    /// for skills); otherwise lints reason about every possible item.
    pub fn knows(&self, kind: ItemKind) -> bool {
        match kind {
            ItemKind::Tool => self.registry.is_some(),
            ItemKind::Skill => self.skills.is_some(),
        }
    }

    /// Indices of the known items of `kind` that selector `sel` of rule
    /// `rule` matches, in order.
    pub fn matched(&self, rule: usize, sel: usize, kind: ItemKind) -> &[u32] {
        let (lists, n) = match kind {
            ItemKind::Tool => (&self.tools_of, self.tools.len()),
            ItemKind::Skill => (&self.skills_of, self.skill_items.len()),
        };
        match lists.get(self.first_selector[rule] + sel) {
            Some(Matched::All) => &self.every[..n],
            Some(Matched::Some(v)) => v,
            None => &[],
        }
    }

    /// The decision about known item `item` of `kind` in context `c`.
    pub fn decision(&self, c: usize, kind: ItemKind, item: usize) -> Decision {
        let k = match kind {
            ItemKind::Tool => &self.tools[item],
            ItemKind::Skill => &self.skill_items[item],
        };
        self.table.decide_with(&self.resolved[c], &k.item, &k.rules)
    }

    /// Grant rules of one filter block of context `c` (one of
    /// [`World::filter_blocks`]) that count in that context.
    pub fn grants_in(&self, c: usize, block: &Scope) -> &[usize] {
        // A context's filter blocks are one per specificity, and a rule in
        // scope `block` that applies in `c` is in exactly that block.
        &self.grants[c][usize::from(block.specificity())]
    }

    /// The grant filter blocks of context `c` (line 3 of the decision order, docs/language.md).
    pub fn filter_blocks(&self, c: usize) -> Vec<Scope> {
        let ctx = &self.contexts[c];
        let mut out = vec![Scope::Top];
        if let Some(m) = &ctx.mode {
            out.push(Scope::Mode(m.clone()));
        }
        if let Some(b) = &ctx.bot {
            out.push(Scope::AnyBot);
            out.push(Scope::Bot(b.clone()));
        }
        out
    }
}

/// For each selector, the known items of `kind` it matches: every pattern is
/// compiled into one set and each item looked up in it once, instead of each
/// selector tested against each item.
fn matched_by(selectors: &[&Selector], items: &[Known<'_>], kind: ItemKind) -> Vec<Matched> {
    let mut names: PatternSet<u32> = PatternSet::default();
    let mut sources: PatternSet<u32> = PatternSet::default();
    let mut hints: Vec<(u32, Hint)> = Vec::new();
    let mut out: Vec<Matched> = Vec::with_capacity(selectors.len());
    for (id, sel) in selectors.iter().enumerate() {
        let pattern = Pattern::new(&sel.pattern);
        let set = match sel.kind {
            SelectorKind::Hint => {
                if let Some(h) = Hint::parse(&sel.pattern).filter(|_| kind == ItemKind::Tool) {
                    hints.push((id as u32, h));
                }
                out.push(Matched::Some(Vec::new()));
                continue;
            }
            SelectorKind::Source => &mut sources,
            _ if picks(sel, kind) => &mut names,
            _ => {
                out.push(Matched::Some(Vec::new()));
                continue;
            }
        };
        // A `source:*` selector matches only the items that have a source.
        if pattern == Pattern::Any && sel.kind != SelectorKind::Source {
            out.push(Matched::All);
        } else {
            set.insert(&pattern, id as u32);
            out.push(Matched::Some(Vec::new()));
        }
    }
    let mut hits = Vec::new();
    for (i, k) in items.iter().enumerate() {
        hits.clear();
        names.matches_into(k.item.name, &mut hits);
        if let Some(src) = k.item.source {
            sources.matches_into(src, &mut hits);
        }
        hits.extend(
            hints
                .iter()
                .filter(|(_, h)| k.item.hints.contains(*h))
                .map(|(id, _)| *id),
        );
        hits.sort_unstable();
        hits.dedup();
        for &id in &hits {
            if let Matched::Some(list) = &mut out[id as usize] {
                list.push(i as u32);
            }
        }
    }
    out
}

/// Every context that can make a difference, or `None` when there are too many.
fn enumerate(policy: &Policy) -> Option<Vec<Context>> {
    let flags: BTreeSet<&str> = policy
        .rules
        .iter()
        .filter_map(|r| r.when.as_ref())
        .chain(policy.settings.iter().filter_map(|s| s.when.as_ref()))
        .map(|c| c.flag.as_str())
        .collect();
    // A policy with modes has no mode-less context (docs/language.md).
    let modes: Vec<Option<String>> = if policy.modes.is_empty() {
        vec![None]
    } else {
        policy.modes.iter().cloned().map(Some).collect()
    };
    let mut bots: Vec<Option<String>> = vec![None];
    bots.extend(policy.bots.iter().cloned().map(Some));
    if policy.has_any_bot {
        bots.push(Some(OTHER_BOT.to_string()));
    }
    let flags: Vec<&str> = flags.into_iter().collect();
    let subsets = 1usize.checked_shl(u32::try_from(flags.len()).ok()?)?;
    if subsets.saturating_mul(modes.len() * bots.len()) > MAX_CONTEXTS {
        return None;
    }
    let mut out = Vec::new();
    for mode in &modes {
        for bot in &bots {
            for set in 0..subsets {
                let flags = flags
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| set & (1 << i) != 0)
                    .map(|(_, f)| f.to_string())
                    .collect();
                out.push(Context {
                    mode: mode.clone(),
                    bot: bot.clone(),
                    flags,
                    grants: None,
                });
            }
        }
    }
    Some(out)
}

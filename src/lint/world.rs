//! Every context a policy can be asked about, and — when a registry or skill
//! list is given — every decision in each, computed once for the lints that
//! need them.
//!
//! A context is a declared mode (or no mode, for a policy that declares
//! none), no bot, each bot with a block, or some other bot (only `bot *`
//! applies to it), and any subset of the flags the policy's `when` blocks
//! name. Those are all the contexts that can differ: a mode the policy does
//! not declare, or none on a policy that declares some, is an error (SPEC
//! 2.3), and flags the policy never names change nothing.

use std::collections::BTreeSet;

use crate::ast::Selector;
use crate::decision::{Context, Decision, ItemKind, ItemRef};
use crate::policy::{Policy, Rule, RuleKind, Scope};
use crate::reference::{applies, glob};
use crate::registry::{Registry, SkillList};
use crate::settings::Settings;
use crate::table::{Resolved, Table};

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
    /// `tool_decisions[c][t]`: registry tool `t` in context `c`.
    pub tool_decisions: Vec<Vec<Decision>>,
    pub skill_decisions: Vec<Vec<Decision>>,
    /// `grants[c][b]`: the grant rules of filter block `b` (top level, the
    /// mode, `bot *`, the named bot: a scope's specificity) that count in
    /// context `c`, computed once because the shadow lint asks per rule.
    grants: Vec<[Vec<usize>; 4]>,
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
        let tool_decisions = resolved
            .iter()
            .map(|r| {
                registry.map_or_else(Vec::new, |reg| {
                    reg.tools()
                        .iter()
                        .map(|t| table.decide(r, &ItemRef::from_tool(t)))
                        .collect()
                })
            })
            .collect();
        let skill_decisions = resolved
            .iter()
            .map(|r| {
                skills.map_or_else(Vec::new, |list| {
                    list.skills()
                        .iter()
                        .map(|s| table.decide(r, &ItemRef::from_skill(s)))
                        .collect()
                })
            })
            .collect();
        let grants = contexts
            .iter()
            .map(|ctx| {
                let mut blocks: [Vec<usize>; 4] = Default::default();
                for (i, r) in policy.rules.iter().enumerate() {
                    if r.kind == RuleKind::Grant && applies(&r.scope, r.when.as_ref(), ctx) {
                        blocks[usize::from(r.scope.specificity())].push(i);
                    }
                }
                blocks
            })
            .collect();
        World {
            policy,
            table,
            registry,
            skills,
            contexts,
            resolved,
            tool_decisions,
            skill_decisions,
            grants,
        }
    }

    pub fn settings(&self, c: usize) -> &Settings {
        self.resolved[c].settings()
    }

    /// The contexts (by index) in which a rule counts.
    pub fn contexts_of(&self, rule: &Rule) -> impl Iterator<Item = usize> + '_ {
        let (scope, when) = (rule.scope.clone(), rule.when.clone());
        self.contexts
            .iter()
            .enumerate()
            .filter(move |(_, c)| applies(&scope, when.as_ref(), c))
            .map(|(i, _)| i)
    }

    /// Whether items of this kind are known (a registry for tools, a skill list
    /// for skills); otherwise lints reason about every possible item.
    pub fn knows(&self, kind: ItemKind) -> bool {
        match kind {
            ItemKind::Tool => self.registry.is_some(),
            ItemKind::Skill => self.skills.is_some(),
        }
    }

    /// Indices of the known items of `kind` that a selector matches.
    pub fn matched(&self, sel: &Selector, kind: ItemKind) -> Vec<usize> {
        let items: Vec<ItemRef<'_>> = match kind {
            ItemKind::Tool => self
                .registry
                .map(|r| r.tools().iter().map(ItemRef::from_tool).collect())
                .unwrap_or_default(),
            ItemKind::Skill => self
                .skills
                .map(|s| s.skills().iter().map(ItemRef::from_skill).collect())
                .unwrap_or_default(),
        };
        items
            .iter()
            .enumerate()
            .filter(|(_, it)| selector_matches(sel, it))
            .map(|(i, _)| i)
            .collect()
    }

    pub fn decision(&self, c: usize, kind: ItemKind, item: usize) -> Decision {
        match kind {
            ItemKind::Tool => self.tool_decisions[c][item],
            ItemKind::Skill => self.skill_decisions[c][item],
        }
    }

    /// Grant rules of one filter block of context `c` (one of
    /// [`World::filter_blocks`]) that count in that context.
    pub fn grants_in(&self, c: usize, block: &Scope) -> &[usize] {
        // A context's filter blocks are one per specificity, and a rule in
        // scope `block` that applies in `c` is in exactly that block.
        &self.grants[c][usize::from(block.specificity())]
    }

    /// The grant filter blocks of context `c` (SPEC 2.3 line 3).
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

pub fn selector_matches(sel: &Selector, item: &ItemRef<'_>) -> bool {
    use crate::ast::SelectorKind;
    match sel.kind {
        SelectorKind::Tool => item.kind == ItemKind::Tool && glob(&sel.pattern, item.name),
        SelectorKind::Skill => item.kind == ItemKind::Skill && glob(&sel.pattern, item.name),
        SelectorKind::Source => item.source.is_some_and(|s| glob(&sel.pattern, s)),
    }
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
    // A policy with modes has no mode-less context (SPEC 2.3).
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

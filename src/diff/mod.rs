//! What a change of policy changes: every registry tool and skill decided
//! under an OLD and a NEW policy in every context the two can be asked in
//! ([`contexts::enumerate`]), and only what differs, grouped by change.
//!
//! The result says, per group (`hidden → declared`, `declared → deferred`,
//! ...; widening groups first), which items changed in which contexts and
//! the statement that decides under NEW and under OLD; then the settings
//! that changed, the tools that became locked or unlocked, the contexts
//! only one policy accepts, and each context's first-turn tokens. It is
//! what `policy diff` prints; it reports and does not judge
//! ([`Diff::widening`] is for a caller that does).

pub mod audit;
pub mod contexts;

use std::collections::HashMap;

use serde::Serialize;

use crate::decision::{Context, Decision, Exposure, ItemKind, ItemRef};
use crate::explain::{Cause, RuleRef, rule_ref};
use crate::policy::Policy;
use crate::registry::{Registry, SkillList};
use crate::runtime::{Engine, Tokens};
use crate::settings::Key;
use crate::table::Table;

pub use contexts::{ANY_OTHER_BOT, MAX_CONTEXTS, describe};

/// How much an exposure shows: hidden < deferred < declared.
fn rank(e: Exposure) -> u8 {
    match e {
        Exposure::Hidden => 0,
        Exposure::Deferred => 1,
        Exposure::Active => 2,
    }
}

/// An exposure as a diff names it: a declared tool, a listed skill.
pub fn word(kind: ItemKind, e: Exposure) -> &'static str {
    match (kind, e) {
        (ItemKind::Tool, Exposure::Active) => "declared",
        (ItemKind::Skill, Exposure::Active) => "listed",
        (_, Exposure::Deferred) => "deferred",
        (_, Exposure::Hidden) => "hidden",
    }
}

/// The contexts compared, and the bound.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ContextCount {
    /// Contexts decided under both policies (or the one that accepts them).
    pub compared: usize,
    /// Contexts past the bound, not decided.
    pub left_out: usize,
    pub bound: usize,
}

/// One change: items that went from one exposure to another in the same
/// contexts, decided by the same statements.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Change {
    /// Tool names, and `skill:NAME` for skills.
    pub items: Vec<String>,
    pub contexts: Vec<Context>,
    /// Why NEW decides as it does, and why OLD did.
    pub new: Cause,
    pub old: Cause,
}

/// Every change from one exposure to another.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Group {
    /// `hidden → declared`.
    pub change: String,
    pub kind: &'static str,
    pub from: Exposure,
    pub to: Exposure,
    /// More exposure under NEW than under OLD.
    pub widening: bool,
    pub changes: Vec<Change>,
}

/// A setting whose value differs in some contexts.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SettingChange {
    pub key: &'static str,
    pub old: String,
    pub new: String,
    /// Empty for a file setting (`lock`, `terms`), which holds in every context.
    pub contexts: Vec<Context>,
    /// The statement that sets it, `None` for the default.
    pub new_from: Option<RuleRef>,
    pub old_from: Option<RuleRef>,
}

/// Tools whose definition a lock holds under one policy and not the other.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, Default)]
pub struct LockChanges {
    /// Unlocked under NEW and not under OLD: NEW's lock does not hold their
    /// definitions, so they follow NEW's `unlocked` setting.
    pub unlocked: Vec<String>,
    /// Unlocked under OLD and not under NEW: NEW's lock holds them, or NEW
    /// has no lock.
    pub locked: Vec<String>,
}

/// A context only one of the two policies accepts (a mode only one
/// declares): the other refuses it with `error`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct OneSided {
    pub context: Context,
    /// `old` or `new`: the policy that accepts it.
    pub accepted_by: &'static str,
    pub error: String,
    /// Under the policy that accepts it.
    pub declared: usize,
    pub deferred: usize,
    pub hidden: usize,
}

/// The first turn's tokens in one context, under both policies.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct TokenChange {
    pub context: Context,
    pub old: Tokens,
    pub new: Tokens,
    pub changed: bool,
}

/// The whole comparison.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Diff {
    pub old: String,
    pub new: String,
    pub contexts: ContextCount,
    pub groups: Vec<Group>,
    pub settings: Vec<SettingChange>,
    pub locks: LockChanges,
    pub one_sided: Vec<OneSided>,
    pub tokens: Vec<TokenChange>,
    /// Anything more exposed under NEW: a widening group, or a context only
    /// NEW accepts that shows anything.
    pub widening: bool,
    /// Settings changed and no decision did.
    pub settings_only: bool,
    /// Nothing changed at all: no decision, setting, lock, context or token count.
    pub unchanged: bool,
}

/// One side of the comparison: a policy with the registry marked for its lock.
struct Side {
    engine: Engine,
    matches: Vec<Box<[u32]>>,
}

impl Side {
    fn new(policy: &Policy, registry: &Registry, skills: &SkillList) -> Side {
        let engine = Engine::new(policy.clone(), registry.clone(), skills.clone());
        let snap = engine.snapshot();
        let matches = snap.table().registry_matches(snap.registry());
        Side { engine, matches }
    }
}

/// A setting's change: key, old and new value, and the statements.
type SettingKey = (Key, String, String, Option<u32>, Option<u32>);

/// An item decided in one context under both policies.
type Key2 = (ItemKind, Exposure, Exposure, Decision, Decision);

/// Compares `old` and `new` (each with its lock and terms already read, as
/// `Policy` loading leaves them) over `registry` and `skills`, in at most
/// [`MAX_CONTEXTS`] contexts.
pub fn diff(old: &Policy, new: &Policy, registry: &Registry, skills: &SkillList) -> Diff {
    diff_bounded(old, new, registry, skills, MAX_CONTEXTS)
}

/// [`diff`] with another bound on the number of contexts.
pub fn diff_bounded(
    old: &Policy,
    new: &Policy,
    registry: &Registry,
    skills: &SkillList,
    bound: usize,
) -> Diff {
    let sides = [
        Side::new(old, registry, skills),
        Side::new(new, registry, skills),
    ];
    let snaps = [sides[0].engine.snapshot(), sides[1].engine.snapshot()];
    let policies = [old, new];
    let ctxs = contexts::enumerate(old, new, bound);
    // Per (item index, key): the contexts, in order.
    let mut per_item: Vec<(usize, Key2, Vec<usize>)> = Vec::new();
    let mut index: HashMap<(usize, Key2), usize> = HashMap::new();
    let mut settings: Vec<SettingChange> = Vec::new();
    let mut settings_index: HashMap<SettingKey, usize> = HashMap::new();
    let mut one_sided = Vec::new();
    let mut tokens = Vec::new();
    let n_tools = registry.len();
    for (ci, ctx) in ctxs.list.iter().enumerate() {
        let asked = [
            contexts::for_policy(ctx, old),
            contexts::for_policy(ctx, new),
        ];
        let resolved = [
            snaps[0].table().resolve(&asked[0]),
            snaps[1].table().resolve(&asked[1]),
        ];
        let (ro, rn) = match (&resolved[0], &resolved[1]) {
            (Ok(o), Ok(n)) => (o, n),
            (Err(_), Err(_)) => continue,
            (Ok(_), Err(e)) | (Err(e), Ok(_)) => {
                let s = usize::from(resolved[0].is_err());
                let r = resolved[s].as_ref().ok();
                let mut counts = [0usize; 3];
                if let Some(r) = r {
                    for_each_item(&sides[s], r, |_, _, d| {
                        counts[rank(d.exposure) as usize] += 1
                    });
                }
                one_sided.push(OneSided {
                    context: ctx.clone(),
                    accepted_by: ["old", "new"][s],
                    error: e.to_string(),
                    declared: counts[2],
                    deferred: counts[1],
                    hidden: counts[0],
                });
                continue;
            }
        };
        // Decisions.
        let mut olds = Vec::with_capacity(n_tools);
        for_each_item(&sides[0], ro, |_, _, d| olds.push(d));
        let mut k = 0;
        for_each_item(&sides[1], rn, |kind, _, dn| {
            let dold = olds[k];
            if dold.exposure != dn.exposure {
                let key = (kind, dold.exposure, dn.exposure, dn, dold);
                let slot = *index.entry((k, key)).or_insert_with(|| {
                    per_item.push((k, key, Vec::new()));
                    per_item.len() - 1
                });
                per_item[slot].2.push(ci);
            }
            k += 1;
        });
        // Settings.
        for key in Key::ALL {
            let (vo, vn) = (ro.settings().value_of(key), rn.settings().value_of(key));
            if vo == vn {
                continue;
            }
            let (so, sn) = (ro.setting_origin(key), rn.setting_origin(key));
            let (vo, vn) = (vo.to_source(), vn.to_source());
            let id = (key, vo.clone(), vn.clone(), so, sn);
            let slot = *settings_index.entry(id).or_insert_with(|| {
                settings.push(SettingChange {
                    key: key.name(),
                    old: vo,
                    new: vn,
                    contexts: Vec::new(),
                    new_from: sn.and_then(|i| setting_ref(new, i)),
                    old_from: so.and_then(|i| setting_ref(old, i)),
                });
                settings.len() - 1
            });
            settings[slot].contexts.push(ctx.clone());
        }
        // Tokens.
        let t: Vec<Option<Tokens>> = (0..2)
            .map(|s| {
                let e = &sides[s].engine;
                e.session(asked[s].clone())
                    .and_then(|chat| chat.plan(e))
                    .ok()
                    .map(|p| p.tokens())
            })
            .collect();
        if let (Some(o), Some(n)) = (t[0], t[1]) {
            tokens.push(TokenChange {
                context: ctx.clone(),
                old: o,
                new: n,
                changed: o != n,
            });
        }
    }
    for (key, path_of) in [
        (
            "lock",
            (|p: &Policy| p.lock.as_ref().map(|l| (l.path.clone(), l.span))) as fn(&Policy) -> _,
        ),
        ("terms", |p: &Policy| {
            p.terms.as_ref().map(|t| (t.path.clone(), t.span))
        }),
    ] {
        let (o, n) = (path_of(old), path_of(new));
        let shown = |v: &Option<(String, crate::ast::Span)>| {
            v.as_ref()
                .map_or("none".to_string(), |(p, _)| format!("{p:?}"))
        };
        if o.as_ref().map(|v| &v.0) != n.as_ref().map(|v| &v.0) {
            settings.push(SettingChange {
                key,
                old: shown(&o),
                new: shown(&n),
                contexts: Vec::new(),
                new_from: n.map(|(_, s)| rule_ref(new, s)),
                old_from: o.map(|(_, s)| rule_ref(old, s)),
            });
        }
    }
    let groups = group(&per_item, &ctxs.list, policies, &sides, registry, skills);
    let locks = lock_changes(&snaps[0], &snaps[1]);
    // A lock change widens only through the decisions it changes, which
    // the groups hold.
    let widening = groups.iter().any(|g| g.widening)
        || one_sided
            .iter()
            .any(|c| c.accepted_by == "new" && c.declared + c.deferred > 0);
    let decisions_changed = !groups.is_empty() || !one_sided.is_empty();
    let unchanged = !decisions_changed
        && settings.is_empty()
        && locks == LockChanges::default()
        && tokens.iter().all(|t| !t.changed);
    Diff {
        old: old.source.name.clone(),
        new: new.source.name.clone(),
        contexts: ContextCount {
            compared: ctxs.list.len(),
            left_out: ctxs.left_out,
            bound,
        },
        settings_only: !decisions_changed && !settings.is_empty(),
        groups,
        settings,
        locks,
        one_sided,
        tokens,
        widening,
        unchanged,
    }
}

fn setting_ref(p: &Policy, i: u32) -> Option<RuleRef> {
    p.settings.get(i as usize).map(|s| rule_ref(p, s.span))
}

/// Decides every registry tool, then every skill, in one resolved context.
fn for_each_item(
    side: &Side,
    resolved: &crate::table::Resolved,
    mut f: impl FnMut(ItemKind, usize, Decision),
) {
    let snap = side.engine.snapshot();
    let table: &Table = snap.table();
    for (i, t) in snap.registry().tools().iter().enumerate() {
        f(
            ItemKind::Tool,
            i,
            table.decide_with(resolved, &ItemRef::from_tool(t), &side.matches[i]),
        );
    }
    for (i, s) in snap.skills().skills().iter().enumerate() {
        f(
            ItemKind::Skill,
            i,
            table.decide(resolved, &ItemRef::from_skill(s)),
        );
    }
}

/// Items with the same change, statements and contexts merged into one
/// [`Change`]; changes into groups by exposure, widening groups first.
fn group(
    per_item: &[(usize, Key2, Vec<usize>)],
    ctxs: &[Context],
    policies: [&Policy; 2],
    sides: &[Side; 2],
    registry: &Registry,
    skills: &SkillList,
) -> Vec<Group> {
    let n_tools = registry.len();
    let mut merged: Vec<(Key2, Vec<usize>, Vec<usize>)> = Vec::new();
    let mut at: HashMap<(Key2, &[usize]), usize> = HashMap::new();
    for (k, key, cs) in per_item {
        let slot = *at.entry((*key, cs.as_slice())).or_insert_with(|| {
            merged.push((*key, cs.clone(), Vec::new()));
            merged.len() - 1
        });
        merged[slot].2.push(*k);
    }
    let snaps = [sides[0].engine.snapshot(), sides[1].engine.snapshot()];
    let mut groups: Vec<Group> = Vec::new();
    for ((kind, from, to, dn, dold), cs, items) in merged {
        let first = items[0];
        let why = |s: usize, d: &Decision| -> Cause {
            let reg = snaps[s].registry();
            let item = if first < n_tools {
                ItemRef::from_tool(&reg.tools()[first])
            } else {
                ItemRef::from_skill(&skills.skills()[first - n_tools])
            };
            crate::explain::cause(policies[s], d, &item)
        };
        let change = Change {
            items: items
                .iter()
                .map(|&k| {
                    if k < n_tools {
                        registry.tools()[k].name.clone()
                    } else {
                        format!("skill:{}", skills.skills()[k - n_tools].name)
                    }
                })
                .collect(),
            contexts: cs.iter().map(|&c| ctxs[c].clone()).collect(),
            new: why(1, &dn),
            old: why(0, &dold),
        };
        match groups
            .iter_mut()
            .find(|g| g.from == from && g.to == to && g.kind == kind_word(kind))
        {
            Some(g) => g.changes.push(change),
            None => groups.push(Group {
                change: format!("{} → {}", word(kind, from), word(kind, to)),
                kind: kind_word(kind),
                from,
                to,
                widening: rank(to) > rank(from),
                changes: vec![change],
            }),
        }
    }
    groups.sort_by_key(|g| {
        (
            !g.widening,
            g.kind == "skill",
            std::cmp::Reverse(rank(g.to)),
            rank(g.from),
        )
    });
    groups
}

fn kind_word(kind: ItemKind) -> &'static str {
    match kind {
        ItemKind::Tool => "tool",
        ItemKind::Skill => "skill",
    }
}

fn lock_changes(old: &crate::runtime::Snapshot, new: &crate::runtime::Snapshot) -> LockChanges {
    let mut out = LockChanges::default();
    for (o, n) in old.registry().tools().iter().zip(new.registry().tools()) {
        match (o.unlocked, n.unlocked) {
            (false, true) => out.unlocked.push(n.name.clone()),
            (true, false) => out.locked.push(n.name.clone()),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests;

//! What would change a decision. Every edit proposed here is first made on a
//! copy of the policy and the item decided again, so a suggestion never says
//! "remove X to defer it" when something else would keep it declared; the
//! sentence reports what the edit would really do.

use crate::ast::{Selector, SelectorKind, Span};
use serde_json::Value;

use crate::decision::{CauseKind, Context, Decision, ItemKind, ItemRef, Origin};
use crate::hint::{Annotations, Hint};
use crate::policy::{Condition, Policy, Rule, RuleKind, Scope};
use crate::reference::applies;
use crate::table::Table;

use super::matching_selector;

fn decide(policy: &Policy, ctx: &Context, item: &ItemRef<'_>) -> Option<Decision> {
    let table = Table::compile(policy);
    let resolved = table.resolve(ctx).ok()?;
    Some(table.decide(&resolved, item))
}

fn line(policy: &Policy, span: Span) -> usize {
    policy.source.line_col(span.start).0
}

fn at(policy: &Policy, span: Span) -> String {
    format!("`{}` at line {}", policy.text_of(span), line(policy, span))
}

/// Where a rule counts, for a suggestion that edits it: "in `mode work`",
/// or "at top level: every mode".
fn scope_of(policy: &Policy, scope: &Scope, when: Option<&Condition>) -> String {
    let mut s = match scope {
        Scope::Top if policy.modes.is_empty() => "at top level".to_string(),
        Scope::Top => "at top level: every mode".to_string(),
        Scope::Mode(m) => format!("in `mode {m}`"),
        Scope::AnyBot => "in `bot *`".to_string(),
        Scope::Bot(b) => format!("in `bot {b}`"),
    };
    if let Some(c) = when {
        let state = if c.negated { "not set" } else { "set" };
        s += &format!(", while `{}` is {state}", c.flag);
    }
    s
}

/// `at line 3 (in `mode work`)`: a rule to edit, and where it counts.
fn at_scoped(policy: &Policy, rule: &Rule) -> String {
    format!(
        "{} ({})",
        at(policy, rule.span),
        scope_of(policy, &rule.scope, rule.when.as_ref())
    )
}

/// Where a rule to add could go: the context's mode alone, or every mode.
fn add_where(policy: &Policy, ctx: &Context) -> String {
    match &ctx.mode {
        Some(m) if !policy.modes.is_empty() => {
            format!("in `mode {m}` (this mode only) or at top level (every mode)")
        }
        _ => "at top level".to_string(),
    }
}

/// A selector that picks exactly this item by name.
fn selector_of(item: &ItemRef<'_>) -> Selector {
    Selector {
        kind: match item.kind {
            ItemKind::Tool => SelectorKind::Tool,
            ItemKind::Skill => SelectorKind::Skill,
        },
        pattern: item.name.to_string(),
        quoted: false,
        span: Span::default(),
    }
}

/// The item as a selector the formatter would write.
fn item_selector(item: &ItemRef<'_>) -> String {
    crate::format::selector(&selector_of(item))
}

/// Rules of `kinds` that count in `ctx` and match the item.
fn matching(policy: &Policy, ctx: &Context, item: &ItemRef<'_>, kinds: &[RuleKind]) -> Vec<usize> {
    policy
        .rules
        .iter()
        .enumerate()
        .filter(|(_, r)| kinds.contains(&r.kind))
        .filter(|(_, r)| applies(&r.scope, r.when.as_ref(), ctx))
        .filter(|(_, r)| matching_selector(r, item).is_some())
        .map(|(i, _)| i)
        .collect()
}

/// The policy without the selectors of `rules` that match the item (a rule
/// left empty goes), and the edit in words.
fn without(policy: &Policy, rules: &[usize], item: &ItemRef<'_>) -> (Policy, String) {
    let name = item_selector(item);
    let mut words = Vec::new();
    let mut copy = policy.clone();
    for &i in rules {
        let rule = &policy.rules[i];
        let hits: Vec<&Selector> = rule
            .selectors
            .iter()
            .filter(|s| matching_selector(&single(rule, s), item).is_some())
            .collect();
        let hints: Vec<String> = hits
            .iter()
            .filter(|s| s.kind == SelectorKind::Hint)
            .map(|s| format!("`{}`", policy.source.slice(s.span)))
            .collect();
        words.push(if !hints.is_empty() && hits.len() < rule.selectors.len() {
            format!(
                "remove {} from {} (a hint picks every tool that has it)",
                hints.join(", "),
                at_scoped(policy, rule)
            )
        } else if hits.len() == rule.selectors.len() {
            format!("remove {}", at_scoped(policy, rule))
        } else if hits.iter().all(|s| !s.pattern.contains('*')) {
            format!("remove `{name}` from {}", at_scoped(policy, rule))
        } else {
            let sel: Vec<String> = hits
                .iter()
                .map(|s| format!("`{}`", policy.source.slice(s.span)))
                .collect();
            format!(
                "narrow {} in {} so it leaves out `{name}`",
                sel.join(", "),
                at_scoped(policy, rule)
            )
        });
    }
    for &i in rules {
        let rule = &policy.rules[i];
        copy.rules[i]
            .selectors
            .retain(|s| matching_selector(&single(rule, s), item).is_none());
    }
    copy.rules.retain(|r| !r.selectors.is_empty());
    (copy, words.join(" and "))
}

/// A rule with one of its selectors, to ask whether that selector matches.
fn single(rule: &Rule, sel: &Selector) -> Rule {
    Rule {
        selectors: vec![sel.clone()],
        ..rule.clone()
    }
}

/// A new decision in words, naming what would make it (spans of the copy are
/// those of the original file).
fn outcome(policy: &Policy, d: &Decision, kind: ItemKind) -> String {
    let by = |o: Option<Origin>| match o {
        Some(Origin::Rule(i)) => policy.rules.get(i as usize).map(|r| at(policy, r.span)),
        Some(Origin::Setting(i)) => policy.settings.get(i as usize).map(|s| at(policy, s.span)),
        None => None,
    };
    let rule = by(d.origin).unwrap_or_default();
    match d.cause {
        CauseKind::Guard => format!("active, as a guard ({rule})"),
        CauseKind::Search => format!("active, as a search tool ({rule})"),
        CauseKind::ModelInvocable => "hidden, as the skill is not model-invocable".into(),
        CauseKind::Hide => format!("hidden, by {rule}"),
        CauseKind::Grant if d.origin.is_none() => "hidden by the runtime's grants".into(),
        CauseKind::Grant => {
            let scope = match d.origin {
                Some(Origin::Rule(i)) => policy.rules.get(i as usize).map(|r| r.scope.clone()),
                _ => None,
            };
            match scope {
                Some(Scope::Top) | None => format!("hidden by the top-level grants ({rule})"),
                Some(s) => format!("hidden by the grants of {s} ({rule})"),
            }
        }
        CauseKind::Lock if d.exposure == crate::decision::Exposure::Hidden => {
            "hidden, as its definition is not the one the lock holds".into()
        }
        CauseKind::Lock => "deferred, as its definition is not the one the lock holds".into(),
        CauseKind::NoDefer => format!("active, by {rule}"),
        CauseKind::Switch => format!("active, as {rule} defers nothing"),
        CauseKind::Defer => format!("deferred, by {rule}"),
        CauseKind::Hint => "deferred, by its registry entry (`defer_loading: true`)".into(),
        CauseKind::Default if kind == ItemKind::Skill => "active (listed)".into(),
        CauseKind::Default => "active, as no rule defers it".into(),
    }
}

/// "it would then be ..." or, when the exposure stays, "it would still be ...".
fn then(policy: &Policy, before: &Decision, after: &Decision, kind: ItemKind) -> String {
    let when = if before.exposure == after.exposure {
        "still"
    } else {
        "then"
    };
    format!("it would {when} be {}", outcome(policy, after, kind))
}

/// Adds the item to the first restricting grant of each block that does not
/// let it through, until none is left (or the runtime's grants are the last).
fn grant_everywhere(
    policy: &Policy,
    ctx: &Context,
    item: &ItemRef<'_>,
    before: &Decision,
) -> Option<String> {
    let mut copy = policy.clone();
    let mut words = Vec::new();
    let sel = selector_of(item);
    // One block per round; there are at most four filter blocks.
    for _ in 0..4 {
        let d = decide(&copy, ctx, item)?;
        match (d.cause, d.origin) {
            (CauseKind::Grant, Some(Origin::Rule(i))) => {
                let rule = copy.rules.get_mut(i as usize)?;
                words.push(format!(
                    "add `{}` to {}",
                    item_selector(item),
                    at_scoped(policy, rule)
                ));
                rule.selectors.push(sel.clone());
            }
            _ => {
                return Some(format!(
                    "{}: {}",
                    words.join(" and "),
                    then(&copy, before, &d, item.kind)
                ));
            }
        }
    }
    None
}

pub(super) fn suggestions(
    policy: &Policy,
    ctx: &Context,
    item: &ItemRef<'_>,
    d: &Decision,
) -> Vec<String> {
    let name = item_selector(item);
    let mut out = Vec::new();
    let removing = |kinds: &[RuleKind]| -> Option<String> {
        let rules = matching(policy, ctx, item, kinds);
        if rules.is_empty() {
            return None;
        }
        let (copy, words) = without(policy, &rules, item);
        let after = decide(&copy, ctx, item)?;
        Some(format!("{words}: {}", then(&copy, d, &after, item.kind)))
    };
    match d.cause {
        CauseKind::Guard => out.extend(removing(&[RuleKind::Guard, RuleKind::Search])),
        CauseKind::Search => out.extend(removing(&[RuleKind::Search])),
        CauseKind::Hide => out.extend(removing(&[RuleKind::Hide])),
        CauseKind::Grant if d.origin.is_none() => {
            out.push("the runtime's grants leave it out: grant it in the context".into());
        }
        CauseKind::Grant => out.extend(grant_everywhere(policy, ctx, item, d)),
        CauseKind::Lock => {
            out.push(
                "review what changed, then write the lock again with `policy lock` to approve it"
                    .into(),
            );
            let there = add_where(policy, ctx);
            out.push(if d.exposure == crate::decision::Exposure::Hidden {
                format!("set `unlocked = \"defer\"` {there} to let the model find it and read its new definition, or `unlocked = \"allow\"` to decide it as if there were no lock")
            } else {
                format!("set `unlocked = \"hide\"` {there} to hide it until it is locked again, or `unlocked = \"allow\"` to decide it as if there were no lock")
            });
        }
        CauseKind::NoDefer => out.extend(removing(&[RuleKind::NoDefer])),
        CauseKind::Switch => {
            if let Some(Origin::Setting(i)) = d.origin {
                let mut copy = policy.clone();
                copy.settings.remove(i as usize);
                if let Some(after) = decide(&copy, ctx, item) {
                    let setting = &policy.settings[i as usize];
                    out.push(format!(
                        "remove {} ({}): {}",
                        at(policy, setting.span),
                        scope_of(policy, &setting.scope, setting.when.as_ref()),
                        then(&copy, d, &after, item.kind)
                    ));
                }
            }
        }
        CauseKind::Defer | CauseKind::Hint => {
            let there = add_where(policy, ctx);
            out.push(format!(
                "add `NoDefer({name})` {there} to declare it from the start"
            ));
            out.push(format!("add `Hide({name})` {there} to hide it"));
        }
        CauseKind::Default if item.kind == ItemKind::Tool => {
            let there = add_where(policy, ctx);
            let search = policy.rules.iter().any(|r| r.kind == RuleKind::Search);
            out.push(if search {
                format!("add `Defer({name})` {there} to defer it")
            } else {
                format!(
                    "add `Defer({name})` {there} to defer it, and a `search` tool so the model can find it"
                )
            });
            out.push(format!("add `Hide({name})` {there} to hide it"));
        }
        CauseKind::Default => {
            let there = add_where(policy, ctx);
            out.push(format!("add `Hide({name})` {there} to hide it"))
        }
        CauseKind::ModelInvocable => {
            out.push("the skill list marks it `model_invocable: false`; no rule can list it".into())
        }
    }
    out.extend(flip_flag(policy, ctx, item, d));
    out.extend(other_claim(policy, ctx, item, d));
    out
}

/// When the deciding rule goes by a hint, the decision had the tool's server
/// said otherwise: a hint is the server's claim, and a changed claim is a
/// changed decision.
fn other_claim(policy: &Policy, ctx: &Context, item: &ItemRef<'_>, d: &Decision) -> Option<String> {
    let raw = item.annotations?;
    let Some(Origin::Rule(i)) = d.origin else {
        return None;
    };
    let rule = policy.rules.get(i as usize)?;
    let h = match matching_selector(rule, item) {
        Some(s) if s.kind == SelectorKind::Hint => Hint::parse(&s.pattern),
        Some(_) => None,
        None => rule
            .selectors
            .iter()
            .find(|s| s.kind == SelectorKind::Hint)
            .and_then(|s| Hint::parse(&s.pattern)),
    }?;
    let (had, _) = Annotations::read(Some(raw));
    let mut claims = raw.as_object().cloned().unwrap_or_default();
    let mut said = Vec::new();
    // The hint's own annotation first; read-only overrides destructive and
    // idempotent, so flip it too when that alone changes nothing.
    for key in [h, Hint::ReadOnly] {
        let value = Value::Object(claims.clone());
        let (now, _) = Annotations::read(Some(&value));
        if now.has(h) != had.has(h) {
            break;
        }
        let flipped = !now.value(key);
        claims.insert(key.annotation().into(), Value::Bool(flipped));
        said.push(format!("`{}: {flipped}`", key.annotation()));
    }
    let value = Value::Object(claims);
    let (now, _) = Annotations::read(Some(&value));
    if now.has(h) == had.has(h) {
        return None;
    }
    let other = ItemRef {
        hints: now.hints(),
        annotations: Some(&value),
        ..*item
    };
    let after = decide(policy, ctx, &other)?;
    Some(format!(
        "if its server said {}: {}",
        said.join(" and "),
        then(policy, d, &after, item.kind)
    ))
}

/// When what decided holds under a `when`, the decision with that flag flipped.
fn flip_flag(policy: &Policy, ctx: &Context, item: &ItemRef<'_>, d: &Decision) -> Option<String> {
    let when = match d.origin? {
        Origin::Rule(i) => policy.rules.get(i as usize)?.when.as_ref(),
        Origin::Setting(i) => policy.settings.get(i as usize)?.when.as_ref(),
    }?;
    let mut flipped = ctx.clone();
    let verb = if flipped.flags.remove(&when.flag) {
        "unset"
    } else {
        flipped.flags.insert(when.flag.clone());
        "set"
    };
    let after = decide(policy, &flipped, item)?;
    (after.exposure != d.exposure).then(|| {
        format!(
            "{verb} the flag `{}`: it would then be {}",
            when.flag,
            outcome(policy, &after, item.kind)
        )
    })
}

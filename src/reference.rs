//! The reference interpreter: the decision order read line by line, over the checked
//! policy, with no precomputation at all.
//!
//! It is deliberately slow and plain. It is the oracle the compiled table is
//! tested against, and the baseline the benchmarks compare with.

use crate::ast::{Selector, SelectorKind};
use crate::decision::{
    CauseKind, Context, ContextError, Decision, Exposure, ItemKind, ItemRef, Origin, check_flags,
    check_grants, check_mode,
};
use crate::policy::{Policy, Rule, RuleKind, Scope};
use crate::settings::{Key, Settings, Unlocked};

/// `*` matches any run of characters; everything else is literal.
pub fn glob(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let s: Vec<char> = name.chars().collect();
    // Classic dynamic programming over (pattern prefix, name prefix).
    let mut row = vec![false; s.len() + 1];
    row[0] = true;
    for &pc in &p {
        let mut next = vec![false; s.len() + 1];
        if pc == '*' {
            let mut any = false;
            for j in 0..=s.len() {
                any |= row[j];
                next[j] = any;
            }
        } else {
            for j in 0..s.len() {
                next[j + 1] = row[j] && s[j] == pc;
            }
        }
        row = next;
    }
    row[s.len()]
}

fn selector_matches(sel: &Selector, item: &ItemRef<'_>) -> bool {
    match sel.kind {
        SelectorKind::Tool => item.kind == ItemKind::Tool && glob(&sel.pattern, item.name),
        SelectorKind::Skill => item.kind == ItemKind::Skill && glob(&sel.pattern, item.name),
        SelectorKind::Source => item.source.is_some_and(|s| glob(&sel.pattern, s)),
        SelectorKind::Hint => item.annotations.is_some_and(|a| has_hint(&sel.pattern, a)),
    }
}

/// The hint table (docs/hints.md) read off the entry's `annotations` as written: a
/// value that is not a boolean is absent, and absent is MCP's default.
fn has_hint(name: &str, annotations: &serde_json::Value) -> bool {
    let says = |key: &str, default: bool| {
        annotations
            .get(key)
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(default)
    };
    let read_only = says("readOnlyHint", false);
    match name {
        "read_only" => read_only,
        "destructive" => !read_only && says("destructiveHint", true),
        "idempotent" => says("idempotentHint", false) || read_only,
        "open_world" => says("openWorldHint", true),
        _ => false,
    }
}

fn rule_matches(rule: &Rule, item: &ItemRef<'_>) -> bool {
    rule.selectors.iter().any(|s| selector_matches(s, item))
}

/// Whether a rule or setting in this scope, under this condition, counts in `ctx`.
pub fn applies(scope: &Scope, when: Option<&crate::policy::Condition>, ctx: &Context) -> bool {
    let in_scope = match scope {
        Scope::Top => true,
        Scope::Mode(m) => ctx.mode.as_deref() == Some(m.as_str()),
        Scope::AnyBot => ctx.bot.is_some(),
        Scope::Bot(b) => ctx.bot.as_deref() == Some(b.as_str()),
    };
    in_scope && when.is_none_or(|c| c.holds(&ctx.flags))
}

/// The winning rule of a kind: most specific scope, then first in the file.
fn best(policy: &Policy, ctx: &Context, item: &ItemRef<'_>, kind: RuleKind) -> Option<u32> {
    let mut found: Option<(u8, u32)> = None;
    for (i, r) in policy.rules.iter().enumerate() {
        if r.kind == kind && applies(&r.scope, r.when.as_ref(), ctx) && rule_matches(r, item) {
            let spec = r.scope.specificity();
            if found.is_none_or(|(s, _)| spec > s) {
                found = Some((spec, i as u32));
            }
        }
    }
    found.map(|(_, i)| i)
}

/// The settings in effect, and for each key the setting statement that set it.
pub fn settings(policy: &Policy, ctx: &Context) -> (Settings, Vec<(Key, Option<u32>)>) {
    let mut out = Settings::default();
    let mut origins = Vec::new();
    for key in Key::ALL {
        let mut found: Option<((u8, bool, usize), u32)> = None;
        for (i, s) in policy.settings.iter().enumerate() {
            if s.key != key || !applies(&s.scope, s.when.as_ref(), ctx) {
                continue;
            }
            let rank = (
                s.scope.specificity(),
                s.when.is_some(),
                if s.when.is_some() { i } else { 0 },
            );
            if found.is_none_or(|(r, _)| rank > r) {
                found = Some((rank, i as u32));
            }
        }
        if let Some((_, i)) = found {
            out.apply(key, policy.settings[i as usize].value);
        }
        origins.push((key, found.map(|(_, i)| i)));
    }
    (out, origins)
}

/// The grant filters the item fails, most specific block first; `None` origin is
/// the runtime's own grants.
fn failed_grant(policy: &Policy, ctx: &Context, item: &ItemRef<'_>) -> Option<Option<u32>> {
    let restricts = |sel: &Selector| {
        matches!(
            (sel.kind, item.kind),
            (SelectorKind::Source, _)
                | (SelectorKind::Tool | SelectorKind::Hint, ItemKind::Tool)
                | (SelectorKind::Skill, ItemKind::Skill)
        )
    };
    let mut blocks: Vec<Scope> = Vec::new();
    if let Some(b) = &ctx.bot {
        blocks.push(Scope::Bot(b.clone()));
        blocks.push(Scope::AnyBot);
    }
    if let Some(m) = &ctx.mode {
        blocks.push(Scope::Mode(m.clone()));
    }
    blocks.push(Scope::Top);
    for block in blocks {
        let grants: Vec<(usize, &Rule)> = policy
            .rules
            .iter()
            .enumerate()
            .filter(|(_, r)| r.kind == RuleKind::Grant && r.scope == block)
            .filter(|(_, r)| applies(&r.scope, r.when.as_ref(), ctx))
            .collect();
        let first_restricting = grants
            .iter()
            .find(|(_, r)| r.selectors.iter().any(restricts))
            .map(|(i, _)| *i as u32);
        if let Some(first) = first_restricting
            && !grants.iter().any(|(_, r)| rule_matches(r, item))
        {
            return Some(Some(first));
        }
    }
    if let Some(grants) = &ctx.grants {
        let sels: Vec<Selector> = grants
            .iter()
            .map(|g| {
                let (kind, pattern) = crate::decision::split_selector(g);
                Selector {
                    kind,
                    pattern: pattern.to_string(),
                    quoted: false,
                    span: Default::default(),
                }
            })
            .collect();
        let restricting = sels.is_empty() || sels.iter().any(restricts);
        if restricting && !sels.iter().any(|s| selector_matches(s, item)) {
            return Some(None);
        }
    }
    None
}

/// The decision order, one line after another.
pub fn decide(
    policy: &Policy,
    ctx: &Context,
    item: &ItemRef<'_>,
) -> Result<Decision, ContextError> {
    check_mode(&policy.modes, ctx.mode.as_deref())?;
    check_flags(&policy.flags(), &ctx.flags)?;
    check_grants(ctx.grants.as_deref())?;
    let decision = |exposure, cause, origin| Decision {
        exposure,
        cause,
        origin,
    };
    if item.kind == ItemKind::Tool {
        if let Some(r) = best(policy, ctx, item, RuleKind::Guard) {
            return Ok(decision(
                Exposure::Active,
                CauseKind::Guard,
                Some(Origin::Rule(r)),
            ));
        }
        if let Some(r) = best(policy, ctx, item, RuleKind::Search) {
            return Ok(decision(
                Exposure::Active,
                CauseKind::Search,
                Some(Origin::Rule(r)),
            ));
        }
    }
    if item.kind == ItemKind::Skill && !item.model_invocable {
        return Ok(decision(Exposure::Hidden, CauseKind::ModelInvocable, None));
    }
    if let Some(r) = best(policy, ctx, item, RuleKind::Hide) {
        return Ok(decision(
            Exposure::Hidden,
            CauseKind::Hide,
            Some(Origin::Rule(r)),
        ));
    }
    if let Some(origin) = failed_grant(policy, ctx, item) {
        return Ok(decision(
            Exposure::Hidden,
            CauseKind::Grant,
            origin.map(Origin::Rule),
        ));
    }
    if item.kind == ItemKind::Skill {
        return Ok(decision(Exposure::Active, CauseKind::Default, None));
    }
    let (settings, origins) = settings(policy, ctx);
    let origin_of = |key: Key| {
        origins
            .iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, o)| *o)
            .map(Origin::Setting)
    };
    // Line 3's last filter and line 4: an unlocked tool, hidden or deferred
    // by the effective `unlocked`, or decided on as if there were no lock.
    if item.unlocked {
        match settings.unlocked {
            Unlocked::Hide => {
                return Ok(decision(
                    Exposure::Hidden,
                    CauseKind::Lock,
                    origin_of(Key::Unlocked),
                ));
            }
            Unlocked::Defer => {
                return Ok(decision(
                    Exposure::Deferred,
                    CauseKind::Lock,
                    origin_of(Key::Unlocked),
                ));
            }
            Unlocked::Allow => {}
        }
    }
    if let Some(r) = best(policy, ctx, item, RuleKind::NoDefer) {
        return Ok(decision(
            Exposure::Active,
            CauseKind::NoDefer,
            Some(Origin::Rule(r)),
        ));
    }
    if !settings.defer_loading {
        return Ok(decision(
            Exposure::Active,
            CauseKind::Switch,
            origin_of(Key::DeferLoading),
        ));
    }
    if let Some(r) = best(policy, ctx, item, RuleKind::Defer) {
        return Ok(decision(
            Exposure::Deferred,
            CauseKind::Defer,
            Some(Origin::Rule(r)),
        ));
    }
    if item.defer_hint {
        return Ok(decision(Exposure::Deferred, CauseKind::Hint, None));
    }
    Ok(decision(Exposure::Active, CauseKind::Default, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_is_star_only() {
        assert!(glob("*", ""));
        assert!(glob("a*", "abc"));
        assert!(glob("*c", "abc"));
        assert!(glob("a*c", "ac"));
        assert!(!glob("a?c", "abc"));
        assert!(glob("a?c", "a?c"));
        assert!(!glob("abc", "abcd"));
    }
}

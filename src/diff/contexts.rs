//! The contexts two policies are compared in: each declared mode (or none),
//! no bot, each bot block and any other bot, no flags, each flag alone and
//! every flag together; at most a bound, the rest counted.

use std::collections::BTreeSet;

use crate::decision::Context;
use crate::policy::{Policy, Scope};

/// How many contexts a diff decides at most (see [`enumerate`]).
pub const MAX_CONTEXTS: usize = 512;

/// The bot name that stands for "a bot without a block of its own": only
/// `bot *` applies to it. A policy cannot name a bot `*` (`bot "*"` is an
/// error), so no block is ever mistaken for it.
pub const ANY_OTHER_BOT: &str = "*";

/// The contexts to compare in, and how many the bound left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contexts {
    pub list: Vec<Context>,
    pub left_out: usize,
}

fn push_unique<T: PartialEq>(list: &mut Vec<T>, v: T) {
    if !list.contains(&v) {
        list.push(v);
    }
}

/// Whether a policy has any `bot` block (named or `bot *`), by its rules and
/// settings.
fn has_bots(p: &Policy) -> bool {
    p.has_any_bot
        || !p.bots.is_empty()
        || p.rules
            .iter()
            .any(|r| matches!(r.scope, Scope::AnyBot | Scope::Bot(_)))
}

/// Every context the two policies can be asked in, up to `bound`, in the
/// order that keeps the plainest contexts: first without flags and without
/// a bot (each mode), then each bot, then each flag alone, then all flags
/// together. A policy without modes takes any mode, and a mode-less
/// context exists only where one of the policies declares no modes.
pub fn enumerate(old: &Policy, new: &Policy, bound: usize) -> Contexts {
    let mut modes: Vec<Option<String>> = Vec::new();
    if old.modes.is_empty() || new.modes.is_empty() {
        modes.push(None);
    }
    for m in old.modes.iter().chain(&new.modes) {
        push_unique(&mut modes, Some(m.clone()));
    }
    let mut bots: Vec<Option<String>> = vec![None];
    for b in old.bots.iter().chain(&new.bots) {
        push_unique(&mut bots, Some(b.clone()));
    }
    if has_bots(old) || has_bots(new) {
        bots.push(Some(ANY_OTHER_BOT.to_string()));
    }
    let flags: BTreeSet<String> = old.flags().into_iter().chain(new.flags()).collect();
    let mut flag_sets: Vec<BTreeSet<String>> = vec![BTreeSet::new()];
    for f in &flags {
        flag_sets.push(BTreeSet::from([f.clone()]));
    }
    if flags.len() > 1 {
        flag_sets.push(flags.clone());
    }
    let total = modes.len() * bots.len() * flag_sets.len();
    let mut list = Vec::with_capacity(total.min(bound));
    'all: for fs in &flag_sets {
        for b in &bots {
            for m in &modes {
                if list.len() == bound {
                    break 'all;
                }
                list.push(Context {
                    mode: m.clone(),
                    bot: b.clone(),
                    flags: fs.clone(),
                    grants: None,
                });
            }
        }
    }
    Contexts {
        left_out: total - list.len(),
        list,
    }
}

/// The context as one policy is asked in it: the flags no `when` block of
/// that policy names are left out, since they change nothing there (and
/// setting one is an error only so that a misspelling is caught).
pub fn for_policy(ctx: &Context, policy: &Policy) -> Context {
    let named = policy.flags();
    Context {
        flags: ctx
            .flags
            .iter()
            .filter(|f| named.contains(f))
            .cloned()
            .collect(),
        ..ctx.clone()
    }
}

/// A context in words: ``mode `agent`, bot `reviewer`, flags `fast` ``; the
/// stand-in bot is "any other bot".
pub fn describe(ctx: &Context) -> String {
    let mut parts = Vec::new();
    if let Some(m) = &ctx.mode {
        parts.push(format!("mode `{m}`"));
    }
    match ctx.bot.as_deref() {
        Some(ANY_OTHER_BOT) => parts.push("any other bot (`bot *`)".to_string()),
        Some(b) => parts.push(format!("bot `{b}`")),
        None => {}
    }
    if !ctx.flags.is_empty() {
        let f: Vec<String> = ctx.flags.iter().map(|f| format!("`{f}`")).collect();
        parts.push(format!(
            "flag{} {}",
            if f.len() > 1 { "s" } else { "" },
            f.join(", ")
        ));
    }
    if parts.is_empty() {
        "no mode, no bot, no flags".to_string()
    } else {
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_bots_and_flags_multiply_up_to_the_bound() {
        let old = Policy::parse(
            "o",
            "mode a {\n}\nbot r {\n  Hide(q)\n}\nwhen x {\n  Hide(q)\n}\n",
        )
        .unwrap();
        let new = Policy::parse("n", "mode a {\n}\nmode b {\n}\nwhen y {\n  Hide(q)\n}\n").unwrap();
        let c = enumerate(&old, &new, MAX_CONTEXTS);
        // 2 modes, 3 bots (none, r, any other), 4 flag sets.
        assert_eq!(c.list.len(), 24);
        assert_eq!(c.left_out, 0);
        assert_eq!(c.list[0], Context::mode("a"));
        assert_eq!(c.list[1], Context::mode("b"));
        assert_eq!(c.list[3].bot.as_deref(), Some("r"));
        assert_eq!(c.list[23].flags.len(), 2);
        let c = enumerate(&old, &new, 5);
        assert_eq!((c.list.len(), c.left_out), (5, 19));
        // A flag the policy does not name is left out of its context.
        let ctx = c.list[0].clone().with_flag("y").with_flag("x");
        assert_eq!(
            for_policy(&ctx, &old).flags,
            BTreeSet::from(["x".to_string()])
        );
    }

    #[test]
    fn without_modes_or_bots_one_context() {
        let p = Policy::parse("p", "Defer(*)\n").unwrap();
        let c = enumerate(&p, &p, MAX_CONTEXTS);
        assert_eq!(c.list, [Context::default()]);
        assert_eq!(describe(&c.list[0]), "no mode, no bot, no flags");
    }
}

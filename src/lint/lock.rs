//! PL123 and PL124: registry tools the policy's lock does not hold.
//!
//! With a registry and a policy whose lock was read, every tool the lock has
//! no entry for, or whose definition differs from its entry, is one warning
//! that says what differs: an unlocked tool is hidden, deferred or decided
//! as if there were no lock, as `unlocked` says, until the lock is written
//! again. A guard or search tool is never subject to the lock, so one that
//! differs gets its own warning at the statement that makes it so.

use crate::decision::ItemRef;
use crate::diag::{Code, Diagnostic};
use crate::lock::{Changed, Comparison};
use crate::policy::RuleKind;

use super::world::World;

pub(super) fn check(w: &World<'_>, out: &mut Vec<Diagnostic>) {
    let (Some(registry), Some(setting)) = (w.registry, &w.policy.lock) else {
        return;
    };
    let Some(lock) = &setting.file else {
        return;
    };
    let Comparison { added, changed, .. } = crate::lock::compare(lock, registry);
    let what = |c: Option<&Changed>| match c {
        None => "the lock has no entry of its name".to_string(),
        Some(c) if c.fields.is_empty() => {
            "its definition differs from the lock's digest".to_string()
        }
        Some(c) => {
            let parts: Vec<String> = c.fields.iter().map(ToString::to_string).collect();
            format!("changed since the lock was written: {}", parts.join("; "))
        }
    };
    let unlocked = added
        .iter()
        .map(|a| (a.name.as_str(), None))
        .chain(changed.iter().map(|c| (c.name.as_str(), Some(c))));
    let path = crate::chars::escape(&setting.path);
    for (name, change) in unlocked {
        let Some(tool) = registry.get(name) else {
            continue;
        };
        let shown = crate::chars::escape_name(name);
        let special = w
            .table
            .matching_rules(&ItemRef::from_tool(tool))
            .into_iter()
            .map(|i| &w.policy.rules[i as usize])
            .find(|r| matches!(r.kind, RuleKind::Guard | RuleKind::Search));
        let d = match special {
            Some(rule) => Diagnostic::new(
                Code::UnlockedGuard,
                rule.span,
                format!(
                    "`{shown}` is a {} tool and differs from the lock `{path}`, which does not apply to it: {}",
                    rule.kind.word(),
                    what(change)
                ),
            )
            .with_help(format!(
                "a {} tool is declared whatever its definition says; review the change, then write the lock again with `policy lock`",
                rule.kind.word()
            )),
            None => Diagnostic::new(
                Code::Unlocked,
                setting.span,
                format!("tool `{shown}` is unlocked: {}", what(change)),
            )
            .with_help(
                "`unlocked` decides it until the lock holds it (hidden by default); review the change, then write the lock again with `policy lock`",
            ),
        };
        out.push(d);
    }
}

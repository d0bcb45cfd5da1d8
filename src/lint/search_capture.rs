//! A `search` selector that makes several registry tools search tools
//! (PL120). A search tool is never deferred or hidden and is left out of the
//! plan while nothing is deferred, so an ordinary tool caught by a wildcard
//! such as `search *Search*` (a user's `WebSearch`) silently stops being
//! declared in every mode that defers nothing. Quiet without a registry.

use crate::ast::SelectorKind;
use crate::decision::ItemKind;
use crate::diag::{Code, Diagnostic};
use crate::policy::RuleKind;

use super::world::World;

/// Tools named in one message; the rest are counted.
const SHOWN: usize = 5;

/// Warns about each wildcard or `source:` selector of a `search` statement
/// that matches more than one registry tool, naming them: an exact name
/// always means one tool, and more than one discovery tool is rare enough to
/// be worth writing out.
pub fn check(w: &World<'_>, out: &mut Vec<Diagnostic>) {
    let Some(registry) = w.registry else { return };
    let searches = w
        .policy
        .rules
        .iter()
        .enumerate()
        .filter(|(_, r)| r.kind == RuleKind::Search);
    for (ri, si, s) in searches.flat_map(|(ri, r)| {
        r.selectors
            .iter()
            .enumerate()
            .map(move |(si, s)| (ri, si, s))
    }) {
        if s.kind == SelectorKind::Tool && !s.pattern.contains('*') {
            continue;
        }
        let matched = w.matched(ri, si, ItemKind::Tool);
        if matched.len() < 2 {
            continue;
        }
        let mut names: Vec<String> = matched
            .iter()
            .take(SHOWN)
            .map(|&i| format!("`{}`", registry.tools()[i as usize].name))
            .collect();
        if matched.len() > SHOWN {
            names.push(format!("and {} more", matched.len() - SHOWN));
        }
        let written = w.policy.source.slice(s.span);
        out.push(
            Diagnostic::new(
                Code::SearchCapturesTools,
                s.span,
                format!(
                    "`search {written}` makes {} registry tools search tools: {}",
                    matched.len(),
                    names.join(", ")
                ),
            )
            .with_help(
                "a search tool is never deferred and is left out of the plan while nothing is deferred; name each discovery tool exactly (`search ToolSearch`)",
            ),
        );
    }
}

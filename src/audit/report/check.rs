//! A suggested line tried on the policy the logs were written under: the
//! line is added at the policy's end, and every tool the registry and the
//! logs know is decided in every context the logs saw, before and after.

use std::collections::{BTreeSet, HashMap};

use crate::audit::EventContext;
use crate::decision::{CauseKind, Context, Exposure, ItemRef};
use crate::policy::Policy;
use crate::registry::Registry;
use crate::table::Table;

/// A tool name as a selector: bare where the language reads it as a tool
/// name, quoted otherwise (a name that starts as a `skill:`, `source:` or
/// `hint:` selector does, in any case); `None` for a name no selector can
/// name alone (one with `*`).
pub(super) fn selector(name: &str) -> Option<String> {
    if name.contains('*') || name.is_empty() {
        return None;
    }
    let bare = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_-./:".contains(c));
    let lower = name.to_ascii_lowercase();
    let kind = ["skill:", "source:", "hint:"]
        .iter()
        .any(|k| lower.starts_with(k));
    if bare && !kind {
        Some(name.to_string())
    } else {
        Some(format!(
            "\"{}\"",
            name.replace('\\', "\\\\").replace('"', "\\\"")
        ))
    }
}

/// What trying a line on the policy found.
#[derive(Debug, PartialEq)]
pub(super) enum Verdict {
    /// Nothing to suggest: the tool is a guard or a search tool, or is
    /// already what the line would make it.
    Nothing,
    /// A rule of the policy would overrule the line in a context the tool
    /// was seen in.
    Overruled,
    /// The line would change these tools' decisions too.
    AlsoChanges(Vec<String>),
    Applies,
}

/// Decisions by context (`None` where the policy cannot answer), then by
/// tool.
type Decisions = Vec<Option<Vec<(Exposure, CauseKind)>>>;

/// Tries suggested lines on a copy of the policy.
pub(super) struct Checker<'a> {
    policy: &'a Policy,
    registry: Option<&'a Registry>,
    /// The contexts the logs saw, by their number there; `None` where the
    /// policy cannot answer (a mode it no longer has).
    contexts: Vec<Option<Context>>,
    /// Every tool the registry or the logs name.
    tools: Vec<String>,
    index: HashMap<String, usize>,
    /// The policy's decisions, by context and tool.
    before: Decisions,
}

impl<'a> Checker<'a> {
    pub(super) fn new<'t>(
        policy: &'a Policy,
        registry: Option<&'a Registry>,
        logged_tools: impl Iterator<Item = &'t str>,
        contexts: &[EventContext],
    ) -> Checker<'a> {
        let mut tools: Vec<String> = Vec::new();
        let mut index = HashMap::new();
        let mut add = |name: &str| {
            if !index.contains_key(name) {
                index.insert(name.to_string(), tools.len());
                tools.push(name.to_string());
            }
        };
        for t in registry.into_iter().flat_map(Registry::tools) {
            add(&t.name);
        }
        logged_tools.for_each(&mut add);
        let contexts: Vec<Option<Context>> =
            contexts.iter().map(|c| Some(c.to_context())).collect();
        let mut checker = Checker {
            policy,
            registry,
            contexts,
            tools,
            index,
            before: Vec::new(),
        };
        checker.before = checker.decide_all(&Table::compile(policy));
        for (c, before) in checker.contexts.iter_mut().zip(&checker.before) {
            if before.is_none() {
                *c = None;
            }
        }
        checker
    }

    fn decide_all(&self, table: &Table) -> Decisions {
        self.contexts
            .iter()
            .map(|ctx| {
                let resolved = table.resolve(ctx.as_ref()?).ok()?;
                Some(
                    self.tools
                        .iter()
                        .map(|t| {
                            let d = table.decide(&resolved, &self.item_of(t));
                            (d.exposure, d.cause)
                        })
                        .collect(),
                )
            })
            .collect()
    }

    fn item_of<'t>(&self, tool: &'t str) -> ItemRef<'t>
    where
        'a: 't,
    {
        self.registry
            .and_then(|r| r.get(tool))
            .map_or_else(|| ItemRef::tool(tool), ItemRef::from_tool)
    }

    /// Whether `line` gives `tool` the `want` exposure in every context of
    /// `seen` (by number), where it has another now, and changes nothing
    /// else anywhere.
    pub(super) fn check(
        &self,
        line: &str,
        tool: &str,
        seen: &BTreeSet<u32>,
        want: Exposure,
    ) -> Verdict {
        let Some(&i) = self.index.get(tool) else {
            return Verdict::Overruled;
        };
        let seen: Vec<usize> = seen
            .iter()
            .map(|&c| c as usize)
            .filter(|&c| self.before.get(c).is_some_and(Option::is_some))
            .collect();
        let now: Vec<(Exposure, CauseKind)> = seen
            .iter()
            .filter_map(|&c| self.before[c].as_ref().map(|d| d[i]))
            .collect();
        if now.is_empty()
            || now
                .iter()
                .any(|(_, cause)| matches!(cause, CauseKind::Guard | CauseKind::Search))
            || now.iter().all(|(e, _)| *e == want)
        {
            return Verdict::Nothing;
        }
        let text = format!("{}\n{line}\n", self.policy.source.text);
        let Ok(changed) = Policy::parse(self.policy.source.name.clone(), &text) else {
            return Verdict::Overruled;
        };
        let after = self.decide_all(&Table::compile(&changed));
        let takes = seen
            .iter()
            .all(|&c| after[c].as_ref().is_some_and(|d| d[i].0 == want));
        if !takes {
            return Verdict::Overruled;
        }
        let mut also: Vec<String> = Vec::new();
        for (before, after) in self.before.iter().zip(&after) {
            let (Some(before), Some(after)) = (before, after) else {
                continue;
            };
            for (t, (b, a)) in before.iter().zip(after).enumerate() {
                if t != i && b.0 != a.0 && !also.contains(&self.tools[t]) {
                    also.push(self.tools[t].clone());
                }
            }
        }
        if also.is_empty() {
            Verdict::Applies
        } else {
            also.sort();
            Verdict::AlsoChanges(also)
        }
    }
}

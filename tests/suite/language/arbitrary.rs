//! Random policies, items and their rendering as source text, shared by the
//! property tests.

use proptest::prelude::*;
use toolpolicy::{Context, ItemKind, ItemRef};

pub const SCOPES: [&str; 6] = ["", "mode m1", "mode m2", "bot *", "bot r1", "bot r2"];
pub const WORDS: [&str; 4] = ["Defer", "NoDefer", "Hide", "Grant"];

/// `when [!]fN`: negated, flag number.
pub type Cond = Option<(bool, usize)>;

#[derive(Debug, Clone)]
pub struct GenRule {
    /// Index into [`WORDS`].
    pub word: usize,
    pub selectors: Vec<String>,
    /// Index into [`SCOPES`].
    pub scope: usize,
    pub when: Cond,
}

#[derive(Debug, Clone)]
pub struct GenPolicy {
    pub guards: Vec<String>,
    pub searches: Vec<String>,
    pub rules: Vec<GenRule>,
    /// (scope, condition, defer_loading); at most one per scope and condition.
    pub switches: Vec<(usize, Cond, bool)>,
}

pub fn pattern() -> impl Strategy<Value = String> {
    "[ab*]{1,3}"
}

/// The four `hint:` names.
pub const HINTS: [&str; 4] = ["read_only", "destructive", "idempotent", "open_world"];

pub fn selector() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => pattern(),
        1 => pattern().prop_map(|p| format!("skill:{p}")),
        1 => pattern().prop_map(|p| format!("source:{p}")),
        1 => prop::sample::select(&HINTS[..]).prop_map(|h| format!("hint:{h}")),
    ]
}

pub fn condition() -> impl Strategy<Value = Cond> {
    prop_oneof![3 => Just(None), 1 => (any::<bool>(), 0..2usize).prop_map(Some)]
}

pub fn rule() -> impl Strategy<Value = GenRule> {
    (
        0..4usize,
        prop::collection::vec(selector(), 1..3),
        0..6usize,
        condition(),
    )
        .prop_map(|(word, selectors, scope, when)| GenRule {
            word,
            selectors,
            scope,
            when,
        })
}

/// A policy with `rules` rules and up to three `defer_loading` switches.
pub fn policy(rules: std::ops::Range<usize>) -> impl Strategy<Value = GenPolicy> {
    (
        prop::collection::vec(pattern(), 0..2),
        prop::collection::vec(pattern(), 0..2),
        prop::collection::vec(rule(), rules),
        prop::collection::vec((0..6usize, condition(), any::<bool>()), 0..4),
    )
        .prop_map(|(guards, searches, rules, mut switches)| {
            let mut seen = std::collections::HashSet::new();
            switches.retain(|(s, c, _)| seen.insert((*s, *c)));
            GenPolicy {
                guards,
                searches,
                rules,
                switches,
            }
        })
}

/// Renders a generated policy as source text, each scope in one block and
/// each conditioned statement in a `when` block of its own.
pub fn render(p: &GenPolicy) -> String {
    let cond = |c: Cond| c.map(|(neg, f)| format!("when {}f{f}", if neg { "!" } else { "" }));
    let mut out = String::new();
    if !p.guards.is_empty() {
        out += &format!("guard {}\n", p.guards.join(", "));
    }
    if !p.searches.is_empty() {
        out += &format!("search {}\n", p.searches.join(", "));
    }
    for (scope, head) in SCOPES.iter().enumerate() {
        let rules = p.rules.iter().filter(|r| r.scope == scope);
        let stmts = rules
            .map(|r| {
                (
                    format!("{}({})", WORDS[r.word], r.selectors.join(", ")),
                    r.when,
                )
            })
            .chain(
                p.switches
                    .iter()
                    .filter(|s| s.0 == scope)
                    .map(|(_, c, v)| (format!("defer_loading = {v}"), *c)),
            );
        let mut body = String::new();
        for (stmt, when) in stmts {
            match cond(when) {
                Some(c) => body += &format!("{c} {{\n{stmt}\n}}\n"),
                None => body += &format!("{stmt}\n"),
            }
        }
        if head.is_empty() {
            out += &body;
        } else {
            out += &format!("{head} {{\n{body}}}\n");
        }
    }
    out
}

#[derive(Debug, Clone)]
pub struct GenItem {
    pub skill: bool,
    pub name: String,
    pub source: Option<String>,
    pub hint: bool,
    pub invocable: bool,
}

/// An item; `skills` is the share of skills, `names` the name's regex.
pub fn item(skills: f64, names: &'static str) -> impl Strategy<Value = GenItem> {
    (
        prop::bool::weighted(skills),
        names,
        prop::option::of("[ab]{0,2}"),
        any::<bool>(),
        prop::bool::weighted(0.8),
    )
        .prop_map(|(skill, name, source, hint, invocable)| GenItem {
            skill,
            name,
            source,
            hint,
            invocable,
        })
}

impl GenItem {
    pub fn as_ref(&self) -> ItemRef<'_> {
        ItemRef {
            kind: if self.skill {
                ItemKind::Skill
            } else {
                ItemKind::Tool
            },
            name: &self.name,
            source: self.source.as_deref(),
            defer_hint: self.hint,
            model_invocable: self.invocable,
            ..ItemRef::tool(&self.name)
        }
    }
}

/// A context for the rules on hints: modes, bots and flags of the generated
/// policies, and now and then runtime grants naming tools or hints.
pub fn hint_context() -> impl Strategy<Value = Context> {
    (
        prop_oneof![Just(None), Just(Some("m1")), Just(Some("m2"))],
        prop_oneof![Just(None), Just(Some("r1")), Just(Some("r3"))],
        prop::collection::btree_set(prop_oneof![Just("f0"), Just("f1")], 0..3),
        prop::option::weighted(
            0.2,
            prop::collection::vec(
                prop_oneof![
                    "[ab*]{1,2}",
                    prop::sample::select(&HINTS[..]).prop_map(|h| format!("hint:{h}"))
                ],
                0..3,
            ),
        ),
    )
        .prop_map(|(mode, bot, flags, grants)| Context {
            mode: mode.map(str::to_string),
            bot: bot.map(str::to_string),
            flags: flags.into_iter().map(str::to_string).collect(),
            grants,
        })
}

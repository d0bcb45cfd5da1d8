//! Why an item is active, deferred or hidden: the deciding rule, every other
//! rule that matched and why it lost, the settings in effect and where each
//! came from, and what would change the decision.

use serde::Serialize;

use crate::ast::{Selector, SelectorKind};
use crate::decision::{
    CauseKind, Context, ContextError, Decision, Exposure, ItemKind, ItemRef, Origin,
};
use crate::policy::{Policy, Rule, RuleKind, Scope};
use crate::reference::{applies, glob};
use crate::registry::Registry;
use crate::settings::Key;
use crate::table::Table;

/// A statement of the policy, located.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct RuleRef {
    pub text: String,
    pub file: String,
    pub line: usize,
    pub column: usize,
}

/// How a matching rule took part in the decision.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// It made the decision.
    Decides,
    /// It applies and matched but something of higher precedence decided.
    Lost,
    /// It applies and let the item through a grant filter.
    Granted,
    /// Its scope or `when` condition does not hold in this context.
    Inactive,
}

/// A selector of the policy, as written and where.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Located {
    pub text: String,
    pub line: usize,
    pub column: usize,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Candidate {
    #[serde(flatten)]
    pub rule: RuleRef,
    pub kind: &'static str,
    pub scope: String,
    /// The selector that matched, as written.
    pub selector: String,
    pub selector_line: usize,
    pub selector_column: usize,
    pub status: Status,
    pub why: String,
    /// For a `hint:` selector, the annotations that made it match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotation: Option<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SettingInEffect {
    pub key: &'static str,
    pub value: String,
    /// `None`: the default.
    pub from: Option<RuleRef>,
    /// The scope and condition of the statement it came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub place: Option<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Cause {
    pub kind: CauseKind,
    pub rule: Option<RuleRef>,
    /// The deciding rule's selector that matched the item.
    pub selector: Option<Located>,
    /// When a `hint:` selector decided (or a grant by hint left the item
    /// out), the annotations that made it so, saying where a value is MCP's
    /// default: ``hint:destructive` matches: `readOnlyHint` absent, so false
    /// (the default) and `destructiveHint: true``.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotation: Option<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Explanation {
    pub item: String,
    pub context: Context,
    pub exposure: Exposure,
    pub cause: Cause,
    pub candidates: Vec<Candidate>,
    pub settings: Vec<SettingInEffect>,
    /// What would change the decision, in words.
    pub change: Vec<String>,
    /// Why an item decided active is still not declared by the plan, when
    /// the registry shows it (see [`note_plan`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_declared: Option<String>,
    /// Rules whose pattern is a letter or two off the item's name: most
    /// likely meant for it, and matching nothing.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub near_misses: Vec<NearMiss>,
    /// For an unlocked tool, what differs from the policy's lock (see
    /// [`note_lock`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock: Option<LockNote>,
}

/// How an unlocked tool differs from the policy's lock.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct LockNote {
    /// The lock file, as the policy names it.
    pub file: String,
    /// The `lock = "..."` statement.
    pub rule: RuleRef,
    /// Whether the lock has an entry of the tool's name.
    pub entry: bool,
    /// Each field that differs from the entry, in words; empty when the
    /// entry keeps no definition to compare with (or has none).
    pub changed: Vec<crate::lock::FieldChange>,
    /// `false` for a guard or search tool: the lock does not apply to it.
    pub applies: bool,
}

/// Fills in [`Explanation::lock`] for a tool of the registry the policy's
/// lock does not hold: the lock file and what differs.
pub fn note_lock(e: &mut Explanation, policy: &Policy, registry: &Registry) {
    let (Some(setting), Some(tool)) = (&policy.lock, registry.get(&e.item)) else {
        return;
    };
    let rule = rule_ref(policy, setting.span);
    let (entry, changed) = match &setting.file {
        None => (false, Vec::new()),
        Some(lock) => match lock.get(&tool.name) {
            None => (false, Vec::new()),
            Some(entry) if entry.digest == crate::lock::digest(tool) => return,
            Some(entry) => (
                true,
                entry
                    .tool()
                    .map(|old| crate::lock::describe(&old, tool))
                    .unwrap_or_default(),
            ),
        },
    };
    e.lock = Some(LockNote {
        file: setting.path.clone(),
        rule,
        entry,
        changed,
        applies: !matches!(e.cause.kind, CauseKind::Guard | CauseKind::Search),
    });
}

/// A rule that names the item all but exactly.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct NearMiss {
    #[serde(flatten)]
    pub rule: RuleRef,
    /// The selector that is a letter or two off, as written and where.
    pub selector: Located,
    /// Its scope and condition, in words.
    pub scope: String,
    /// Edits between the pattern and the item's name (case counts as one).
    pub edits: usize,
}

/// How many edits apart a pattern may be from an item's name to count as
/// a near miss: a typo, a swapped pair, a letter of the wrong case.
const NEAR_MISS_EDITS: usize = 2;

/// Rules with a wildcard-free selector of the item's kind whose pattern is
/// within [`NEAR_MISS_EDITS`] of the item's name but not the name itself.
fn near_misses(policy: &Policy, item: &ItemRef<'_>) -> Vec<NearMiss> {
    let kind = match item.kind {
        ItemKind::Tool => SelectorKind::Tool,
        ItemKind::Skill => SelectorKind::Skill,
    };
    let mut out = Vec::new();
    for rule in &policy.rules {
        for sel in &rule.selectors {
            if sel.kind != kind || sel.pattern.contains('*') || sel.pattern == item.name {
                continue;
            }
            let len = |s: &str| s.chars().count();
            if len(&sel.pattern).abs_diff(len(item.name)) > NEAR_MISS_EDITS {
                continue;
            }
            let Some(edits) =
                crate::diag::distance_within(&sel.pattern, item.name, NEAR_MISS_EDITS)
            else {
                continue;
            };
            out.push(NearMiss {
                rule: rule_ref(policy, rule.span),
                selector: located(policy, sel),
                scope: place(&rule.scope, rule.when.as_ref()),
                edits,
            });
            break;
        }
    }
    out
}

/// Why a search tool decided active is not declared (docs/runtime.md).
pub const NOTHING_DEFERRED: &str = "nothing in the registry is deferred in this context, and a search tool is declared only while something is";

/// Fills in [`Explanation::not_declared`] from the registry, so that explain
/// and the plan agree. A search tool is decided active but declared only while
/// something is deferred (docs/runtime.md); whether anything is depends on the
/// registry, which the decision alone does not see.
pub fn note_plan(
    e: &mut Explanation,
    table: &Table,
    registry: &Registry,
) -> Result<(), ContextError> {
    if e.cause.kind != CauseKind::Search {
        return Ok(());
    }
    let resolved = table.resolve(&e.context)?;
    let deferring = registry
        .tools()
        .iter()
        .any(|t| table.decide(&resolved, &ItemRef::from_tool(t)).exposure == Exposure::Deferred);
    if !deferring {
        e.not_declared = Some(NOTHING_DEFERRED.into());
    }
    Ok(())
}

pub fn rule_ref(policy: &Policy, span: crate::ast::Span) -> RuleRef {
    let (line, column) = policy.source.line_col(span.start);
    RuleRef {
        text: policy.text_of(span),
        file: policy.source.name.clone(),
        line,
        column,
    }
}

pub(crate) fn origin_ref(policy: &Policy, origin: Option<Origin>) -> Option<RuleRef> {
    match origin? {
        Origin::Rule(i) => policy
            .rules
            .get(i as usize)
            .map(|r| rule_ref(policy, r.span)),
        Origin::Setting(i) => policy
            .settings
            .get(i as usize)
            .map(|s| rule_ref(policy, s.span)),
    }
}

fn located(policy: &Policy, sel: &Selector) -> Located {
    let (line, column) = policy.source.line_col(sel.span.start);
    Located {
        text: policy.source.slice(sel.span).to_string(),
        line,
        column,
    }
}

fn place(scope: &Scope, when: Option<&crate::policy::Condition>) -> String {
    scope.to_string() + &when.map(|c| format!(", {c}")).unwrap_or_default()
}

pub(crate) fn matching_selector<'a>(rule: &'a Rule, item: &ItemRef<'_>) -> Option<&'a Selector> {
    rule.selectors.iter().find(|s| match s.kind {
        SelectorKind::Tool => item.kind == ItemKind::Tool && glob(&s.pattern, item.name),
        SelectorKind::Skill => item.kind == ItemKind::Skill && glob(&s.pattern, item.name),
        SelectorKind::Source => item.source.is_some_and(|src| glob(&s.pattern, src)),
        SelectorKind::Hint => {
            crate::hint::Hint::parse(&s.pattern).is_some_and(|h| item.hints.contains(h))
        }
    })
}

/// The precedence line of a rule kind in the decision order (lower decides first).
fn line_of(kind: RuleKind) -> u8 {
    match kind {
        RuleKind::Guard => 1,
        RuleKind::Search => 2,
        RuleKind::Hide | RuleKind::Grant => 3,
        RuleKind::NoDefer => 4,
        RuleKind::Defer => 6,
    }
}

fn why_inactive(rule: &Rule, ctx: &Context) -> String {
    let scope_ok = applies(&rule.scope, None, ctx);
    if !scope_ok {
        return match &rule.scope {
            Scope::Mode(m) => match &ctx.mode {
                Some(cur) => format!("it is in mode `{m}`, and the mode is `{cur}`"),
                None => format!("it is in mode `{m}`, and no mode is given"),
            },
            Scope::AnyBot => "it is in `bot *`, and no bot is given".to_string(),
            Scope::Bot(b) => match &ctx.bot {
                Some(cur) => format!("it is in bot `{b}`, and the bot is `{cur}`"),
                None => format!("it is in bot `{b}`, and no bot is given"),
            },
            Scope::Top => String::new(),
        };
    }
    match &rule.when {
        Some(c) if c.negated => format!("it is under `{c}`, and `{}` is set", c.flag),
        Some(c) => format!("it is under `{c}`, and `{}` is not set", c.flag),
        None => String::new(),
    }
}

/// Explains one item in one context.
pub fn explain(
    policy: &Policy,
    table: &Table,
    ctx: &Context,
    item: &ItemRef<'_>,
) -> Result<Explanation, ContextError> {
    let resolved = table.resolve(ctx)?;
    let decision = table.decide(&resolved, item);
    let deciding = match decision.origin {
        Some(Origin::Rule(i)) => Some(i as usize),
        _ => None,
    };
    let deciding_rule = deciding.and_then(|i| policy.rules.get(i));
    let mut candidates = Vec::new();
    for (i, rule) in policy.rules.iter().enumerate() {
        if matches!(rule.kind, RuleKind::Guard | RuleKind::Search) && item.kind == ItemKind::Skill {
            continue;
        }
        let Some(sel) = matching_selector(rule, item) else {
            continue;
        };
        let r = rule_ref(policy, rule.span);
        let (status, why) = if Some(i) == deciding {
            (
                Status::Decides,
                format!("decides: {}", cause_words(decision.cause)),
            )
        } else if !applies(&rule.scope, rule.when.as_ref(), ctx) {
            (
                Status::Inactive,
                format!("does not apply: {}", why_inactive(rule, ctx)),
            )
        } else if rule.kind == RuleKind::Grant && decision.cause != CauseKind::Grant {
            (
                Status::Granted,
                format!("lets it through the grants of {}", rule.scope),
            )
        } else if rule.kind == RuleKind::Grant {
            (
                Status::Granted,
                format!("grants it in {}, but another filter does not", rule.scope),
            )
        } else {
            let why = match deciding_rule {
                Some(d) if d.kind != rule.kind || line_of(d.kind) != line_of(rule.kind) => format!(
                    "`{}` at line {} beats this `{}`",
                    policy.text_of(d.span),
                    policy.source.line_col(d.span.start).0,
                    r.text
                ),
                Some(d) if d.scope.specificity() > rule.scope.specificity() => format!(
                    "`{}` at line {} in {} is more specific",
                    policy.text_of(d.span),
                    policy.source.line_col(d.span.start).0,
                    d.scope
                ),
                Some(d) => format!(
                    "`{}` at line {} comes first in the same scope",
                    policy.text_of(d.span),
                    policy.source.line_col(d.span.start).0
                ),
                None => match decision.cause {
                    CauseKind::Switch => {
                        "`defer_loading` is false, so nothing is deferred".to_string()
                    }
                    CauseKind::Grant => {
                        "the item is not granted, and grants come first".to_string()
                    }
                    CauseKind::ModelInvocable => "the skill is not model-invocable".to_string(),
                    CauseKind::Lock => {
                        "the tool is unlocked, and the lock decides before `NoDefer` and `Defer`"
                            .to_string()
                    }
                    other => format!("{} decides first", cause_words(other)),
                },
            };
            (Status::Lost, why)
        };
        let at = located(policy, sel);
        candidates.push(Candidate {
            rule: r,
            kind: rule.kind.word(),
            scope: place(&rule.scope, rule.when.as_ref()),
            selector: at.text,
            selector_line: at.line,
            selector_column: at.column,
            status,
            why,
            annotation: hint_reason(sel, item, true),
        });
    }
    // `unlocked` means something only while the policy has a lock.
    let settings = Key::ALL
        .iter()
        .filter(|&&k| {
            k != Key::Unlocked || policy.lock.is_some() || resolved.setting_origin(k).is_some()
        })
        .map(|&k| {
            let from = resolved
                .setting_origin(k)
                .and_then(|i| policy.settings.get(i as usize));
            SettingInEffect {
                key: k.name(),
                value: resolved.settings().value_of(k).to_source(),
                from: from.map(|s| rule_ref(policy, s.span)),
                place: from.map(|s| place(&s.scope, s.when.as_ref())),
            }
        })
        .collect();
    let change = change::suggestions(policy, ctx, item, &decision);
    Ok(Explanation {
        item: match item.kind {
            ItemKind::Tool => item.name.to_string(),
            ItemKind::Skill => format!("skill:{}", item.name),
        },
        context: ctx.clone(),
        exposure: decision.exposure,
        cause: cause(policy, &decision, item),
        candidates,
        settings,
        change,
        not_declared: None,
        near_misses: near_misses(policy, item),
        lock: None,
    })
}

/// The cause of a decision, located in the policy: the deciding statement,
/// the selector that matched (for a grant that left the item out, its first
/// hint) and, for a hint, the annotations that made it so.
pub fn cause(policy: &Policy, decision: &Decision, item: &ItemRef<'_>) -> Cause {
    let deciding_rule = match decision.origin {
        Some(Origin::Rule(i)) => policy.rules.get(i as usize),
        _ => None,
    };
    // A grant that left the item out points at its first hint, if it has one.
    let deciding_selector = deciding_rule
        .and_then(|r| {
            matching_selector(r, item).or_else(|| {
                r.selectors
                    .iter()
                    .find(|s| decision.cause == CauseKind::Grant && s.kind == SelectorKind::Hint)
            })
        })
        .map(|s| located(policy, s));
    Cause {
        kind: decision.cause,
        // A lock decided without an `unlocked` setting: the `lock` statement.
        rule: origin_ref(policy, decision.origin).or_else(|| {
            let lock = policy.lock.as_ref()?;
            (decision.cause == CauseKind::Lock).then(|| rule_ref(policy, lock.span))
        }),
        selector: deciding_selector,
        annotation: deciding_rule.and_then(|r| match matching_selector(r, item) {
            Some(sel) => hint_reason(sel, item, true),
            // A grant that left the item out: why none of its hints match.
            None => {
                let missed: Vec<String> = r
                    .selectors
                    .iter()
                    .filter_map(|s| hint_reason(s, item, false))
                    .collect();
                (!missed.is_empty()).then(|| missed.join("; "))
            }
        }),
    }
}

/// For a `hint:` selector and an item with a registry entry, what its
/// annotations say about the hint.
fn hint_reason(sel: &Selector, item: &ItemRef<'_>, matched: bool) -> Option<String> {
    let h = crate::hint::Hint::parse(&sel.pattern).filter(|_| sel.kind == SelectorKind::Hint)?;
    let Some(raw) = item.annotations else {
        return Some(format!(
            "`{h}` does not match: no registry entry says what `{}` does",
            item.name
        ));
    };
    let (annotations, _) = crate::hint::Annotations::read(Some(raw));
    let verb = if matched { "matches" } else { "does not match" };
    Some(format!("`{h}` {verb}: {}", annotations.reason(h)))
}

fn cause_words(c: CauseKind) -> &'static str {
    match c {
        CauseKind::Guard => "a guard is always declared",
        CauseKind::Search => "a search tool is declared while anything is deferred",
        CauseKind::ModelInvocable => "the skill is marked not model-invocable",
        CauseKind::Hide => "Hide beats every other rule",
        CauseKind::Grant => "a block with grants does not grant it",
        CauseKind::Lock => "its definition is not the one the policy's lock holds",
        CauseKind::NoDefer => "NoDefer beats Defer",
        CauseKind::Switch => "`defer_loading` is false",
        CauseKind::Defer => "Defer holds it back",
        CauseKind::Hint => "the registry entry says `defer_loading: true`",
        CauseKind::Default => "no rule matched",
    }
}

mod change;
mod text;
pub use text::{caret, render};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_the_loser_and_why() {
        let p = Policy::parse(
            "t.policy",
            "mode agent {\n  Defer(*)\n  NoDefer(Bash)\n}\nmode chat {\n  Hide(Bash)\n}\n",
        )
        .unwrap();
        let t = Table::compile(&p);
        let e = explain(&p, &t, &Context::mode("agent"), &ItemRef::tool("Bash")).unwrap();
        assert_eq!(e.exposure, Exposure::Active);
        assert_eq!(e.cause.kind, CauseKind::NoDefer);
        assert_eq!(
            e.cause.rule.as_ref().map(|r| (r.line, r.column)),
            Some((3, 3))
        );
        let statuses: Vec<_> = e
            .candidates
            .iter()
            .map(|c| (c.rule.line, c.status))
            .collect();
        assert_eq!(
            statuses,
            [
                (2, Status::Lost),
                (3, Status::Decides),
                (6, Status::Inactive)
            ]
        );
        assert_eq!(
            e.candidates[0].why,
            "`NoDefer(Bash)` at line 3 beats this `Defer(*)`"
        );
        assert!(
            e.candidates[2].why.contains("mode `chat`"),
            "{}",
            e.candidates[2].why
        );
        assert_eq!(
            e.change,
            [
                "remove `NoDefer(Bash)` at line 3 (in `mode agent`): it would then be deferred, by `Defer(*)` at line 2"
            ]
        );
    }

    fn changes(src: &str, ctx: Context, item: ItemRef<'_>) -> Vec<String> {
        let p = Policy::parse("t.policy", src).unwrap();
        explain(&p, &Table::compile(&p), &ctx, &item)
            .unwrap()
            .change
    }

    #[test]
    fn suggestions_say_where_the_edit_goes() {
        let src = "search tool_search\nDefer(*)\nmode work {\n}\nmode review {\n}\n";
        assert_eq!(
            changes(src, Context::mode("work"), ItemRef::tool("x")),
            [
                "add `NoDefer(x)` in `mode work` (this mode only) or at top level (every mode) to declare it from the start",
                "add `Hide(x)` in `mode work` (this mode only) or at top level (every mode) to hide it"
            ]
        );
        let src = "NoDefer(x)\nDefer(*)\nmode work {\n}\n";
        assert_eq!(
            changes(src, Context::mode("work"), ItemRef::tool("x")),
            [
                "remove `NoDefer(x)` at line 1 (at top level: every mode): it would then be deferred, by `Defer(*)` at line 2"
            ]
        );
    }

    #[test]
    fn near_misses_are_rules_a_letter_or_two_off() {
        let src = "search tool_search\nNoDefer(fs__read, fs__list_directroy)\nmode work {\n  Hide(FS__list_directory)\n}\nDefer(*)\nHide(fs__write)\n";
        let p = Policy::parse("t.policy", src).unwrap();
        let e = explain(
            &p,
            &Table::compile(&p),
            &Context::mode("work"),
            &ItemRef::tool("fs__list_directory"),
        )
        .unwrap();
        assert_eq!(e.cause.kind, CauseKind::Defer);
        let got: Vec<(usize, &str, usize)> = e
            .near_misses
            .iter()
            .map(|m| (m.selector.line, m.selector.text.as_str(), m.edits))
            .collect();
        assert_eq!(
            got,
            [(2, "fs__list_directroy", 2), (4, "FS__list_directory", 2)]
        );
        assert_eq!(e.near_misses[1].scope, "mode work");
        // An exact name, a wildcard or a name further off is no near miss.
        let e = explain(
            &p,
            &Table::compile(&p),
            &Context::mode("work"),
            &ItemRef::tool("fs__read"),
        )
        .unwrap();
        assert!(e.near_misses.is_empty(), "{:?}", e.near_misses);
    }

    #[test]
    fn suggestions_say_what_the_edit_would_really_do() {
        // Removing the NoDefer leaves the switch: the tool stays declared.
        assert_eq!(
            changes(
                "Defer(*)\ndefer_loading = false\nNoDefer(x)\n",
                Context::default(),
                ItemRef::tool("x")
            ),
            [
                "remove `NoDefer(x)` at line 3 (at top level): it would still be active, as `defer_loading = false` at line 2 defers nothing"
            ]
        );
        assert_eq!(
            changes(
                "bot r {\n  Grant(y)\n}\n",
                Context::default().with_bot("r"),
                ItemRef::tool("x")
            ),
            [
                "add `x` to `Grant(y)` at line 2 (in `bot r`): it would then be active, as no rule defers it"
            ]
        );
        assert_eq!(
            changes(
                "when fast {\n  Hide(z)\n}\n",
                Context::default().with_flag("fast"),
                ItemRef::tool("z")
            ),
            [
                "remove `Hide(z)` at line 2 (at top level, while `fast` is set): it would then be active, as no rule defers it",
                "unset the flag `fast`: it would then be active, as no rule defers it"
            ]
        );
    }

    /// The caret goes under the hint, the annotation that made it match is
    /// named (MCP's default said as such), and a changed claim is a change.
    #[test]
    fn hints_say_which_annotation_decided() {
        let reg = Registry::from_json(
            r#"[{"name": "edit", "annotations": {"title": "Edit"}},
                {"name": "write", "annotations": {"readOnlyHint": false}}]"#,
        )
        .unwrap();
        let p = Policy::parse(
            "t.policy",
            "mode plan {\n  Grant(Read, hint:read_only)\n}\nmode agent {\n  Hide(hint:destructive)\n}\n",
        )
        .unwrap();
        let t = Table::compile(&p);
        let edit = ItemRef::from_tool(reg.get("edit").unwrap());
        let e = explain(&p, &t, &Context::mode("agent"), &edit).unwrap();
        let sel = e.cause.selector.as_ref().unwrap();
        assert_eq!(
            (sel.text.as_str(), sel.line, sel.column),
            ("hint:destructive", 5, 8)
        );
        assert_eq!(
            e.cause.annotation.as_deref(),
            Some(
                "`hint:destructive` matches: `readOnlyHint` absent, so false (the default) and `destructiveHint` absent, so true (the default)"
            )
        );
        assert!(
            e.change.contains(
                &"if its server said `destructiveHint: false`: it would then be active, as no rule defers it".to_string()
            ),
            "{:?}",
            e.change
        );
        let write = ItemRef::from_tool(reg.get("write").unwrap());
        let e = explain(&p, &t, &Context::mode("plan"), &write).unwrap();
        assert_eq!(e.cause.kind, CauseKind::Grant);
        assert_eq!(e.cause.selector.as_ref().unwrap().column, 15);
        assert_eq!(
            e.cause.annotation.as_deref(),
            Some("`hint:read_only` does not match: `readOnlyHint: false`")
        );
        assert!(
            e.change.iter().any(|c| c
                .starts_with("if its server said `readOnlyHint: true`: it would then be active")),
            "{:?}",
            e.change
        );
        // Without a registry entry a hint matches nothing, and says why.
        let e = explain(&p, &t, &Context::mode("plan"), &ItemRef::tool("write")).unwrap();
        assert_eq!(
            e.cause.annotation.as_deref(),
            Some("`hint:read_only` does not match: no registry entry says what `write` does")
        );
    }
}

//! The lints claim things about decisions; here the claims are checked against
//! the decisions themselves, over random policies. A rule reported as shadowed
//! (PL102) or repeated (PL103), a selector reported as naming only guards
//! (PL104), or a skill in `Defer`/`NoDefer` (PL110), can be removed without
//! changing any decision in any context the policy can be asked about — for
//! every possible item without a registry, for the registry's items with one.
//! A `Defer` reported as undiscoverable (PL101) with a registry does defer a
//! registry tool somewhere.

use proptest::prelude::*;
use toolpolicy::diag::Code;
use toolpolicy::lint::{Options, lint_with};
use toolpolicy::registry::{Skill, Tool};
use toolpolicy::{Context, Decision, Exposure, ItemRef, Policy, Registry, SkillList, Table};

use crate::language::arbitrary::{GenItem, policy, render};

/// Items of every kind, the empty name included.
fn item() -> impl Strategy<Value = GenItem> {
    crate::language::arbitrary::item(0.3, "[ab]{0,3}")
}

/// [`all_contexts`], each with only the flags `policy` names (a flag no
/// `when` names changes nothing, and a context that sets one is refused),
/// in the same order and number whatever the policy, so that two policies'
/// decisions line up context by context.
fn contexts_of(policy: &Policy) -> Vec<Context> {
    let named = policy.flags();
    all_contexts()
        .into_iter()
        .map(|mut ctx| {
            ctx.flags.retain(|f| named.contains(f));
            ctx
        })
        .collect()
}

/// Every context that can differ: each declared mode (generated policies
/// declare both, and a policy with modes has no mode-less context), no bot,
/// each bot with a block, a bot without one, and every subset of the flags.
fn all_contexts() -> Vec<Context> {
    let mut out = Vec::new();
    for mode in [Some("m1"), Some("m2")] {
        for bot in [None, Some("r1"), Some("r2"), Some("r3")] {
            for flags in [vec![], vec!["f0"], vec!["f1"], vec!["f0", "f1"]] {
                out.push(Context {
                    mode: mode.map(str::to_string),
                    bot: bot.map(str::to_string),
                    flags: flags.into_iter().map(str::to_string).collect(),
                    grants: None,
                });
            }
        }
    }
    out
}

fn load(text: &str) -> Policy {
    Policy::parse("gen.policy", text)
        .unwrap_or_else(|e| panic!("generated policy fails:\n{text}\n{e}"))
}

/// Exposure and cause of each item in each context.
fn decisions(text: &str, items: &[ItemRef<'_>]) -> Vec<(Exposure, toolpolicy::CauseKind)> {
    let policy = load(text);
    let table = Table::compile(&policy);
    let mut out = Vec::new();
    for ctx in contexts_of(&policy) {
        let r = table.resolve(&ctx).expect("declared mode");
        for it in items {
            let Decision {
                exposure, cause, ..
            } = table.decide(&r, it);
            out.push((exposure, cause));
        }
    }
    out
}

/// The text with a selector removed, with the separator next to it; `None`
/// when it is a rule's only selector.
fn without_selector(text: &str, start: usize, end: usize) -> Option<String> {
    if text[end..].starts_with(", ") {
        Some(format!("{}{}", &text[..start], &text[end + 2..]))
    } else if text[..start].ends_with(", ") {
        Some(format!("{}{}", &text[..start - 2], &text[end..]))
    } else {
        None
    }
}

fn registry_of(items: &[GenItem]) -> (Registry, SkillList) {
    let mut tools: Vec<Tool> = Vec::new();
    let mut skills: Vec<Skill> = Vec::new();
    for it in items {
        if it.skill {
            if skills.iter().all(|s| s.name != it.name) {
                skills.push(Skill {
                    name: it.name.clone(),
                    key: None,
                    description: String::new(),
                    source: it.source.clone(),
                    model_invocable: it.invocable,
                });
            }
        } else if tools.iter().all(|t| t.name != it.name) {
            tools.push(Tool {
                name: it.name.clone(),
                description: "A tool.".into(),
                parameters: serde_json::json!({}),
                source: it.source.clone(),
                defer_loading: it.hint,
                ..Default::default()
            });
        }
    }
    (
        Registry::new(tools).expect("unique names"),
        SkillList::new(skills).expect("unique names"),
    )
}

fn check_claims(text: &str, options: Options<'_>, items: &[ItemRef<'_>]) -> Result<(), String> {
    let policy = load(text);
    let before = decisions(text, items);
    for d in lint_with(&policy, &options) {
        let (s, e) = (d.span.start, d.span.end);
        let whole_rule = policy.rules.iter().position(|r| r.span == d.span);
        let edited = match (d.code, whole_rule) {
            (Code::Shadowed | Code::Redundant, Some(_)) => {
                Some(format!("{}{}", &text[..s], &text[e..]))
            }
            (Code::Redundant, None) => without_selector(text, s, e),
            // A skill in `Defer`/`NoDefer`: drop the selector, or the rule when
            // it is the only one.
            (Code::NoEffectOnSkill, _) => without_selector(text, s, e).or_else(|| {
                let rule = policy
                    .rules
                    .iter()
                    .find(|r| r.span.start <= s && e <= r.span.end)?;
                Some(format!(
                    "{}{}",
                    &text[..rule.span.start],
                    &text[rule.span.end..]
                ))
            }),
            (Code::NoEffectOnGuard, _) => {
                let rule = policy
                    .rules
                    .iter()
                    .find(|r| r.span.start <= s && e <= r.span.end)
                    .expect("in a rule");
                let tool_grants = rule
                    .selectors
                    .iter()
                    .filter(|t| t.kind != toolpolicy::ast::SelectorKind::Skill)
                    .count();
                // Removing a `Grant`'s only tool selector lifts its restriction.
                if rule.kind == toolpolicy::policy::RuleKind::Grant && tool_grants < 2 {
                    None
                } else {
                    without_selector(text, s, e).or_else(|| {
                        Some(format!(
                            "{}{}",
                            &text[..rule.span.start],
                            &text[rule.span.end..]
                        ))
                    })
                }
            }
            _ => None,
        };
        if let Some(edited) = edited
            && decisions(&edited, items) != before
        {
            return Err(format!(
                "{} {} is wrong: removing it changes decisions\n--- policy\n{text}--- edited\n{edited}",
                d.code, d.message
            ));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn lint_claims_hold_for_every_item(p in policy(1..9), items in prop::collection::vec(item(), 1..16)) {
        let text = render(&p);
        let refs: Vec<ItemRef<'_>> = items.iter().map(GenItem::as_ref).collect();
        if let Err(e) = check_claims(&text, Options::default(), &refs) {
            prop_assert!(false, "{}", e);
        }
    }

    #[test]
    fn lint_claims_hold_for_a_registry(p in policy(1..9), items in prop::collection::vec(item(), 1..12)) {
        let text = render(&p);
        let (registry, skills) = registry_of(&items);
        let refs: Vec<ItemRef<'_>> = registry
            .tools()
            .iter()
            .map(ItemRef::from_tool)
            .chain(skills.skills().iter().map(ItemRef::from_skill))
            .collect();
        let options = Options { registry: Some(&registry), skills: Some(&skills), max_tokens: None, ..Options::default() };
        if let Err(e) = check_claims(&text, options, &refs) {
            prop_assert!(false, "{}", e);
        }
        // An undiscoverable Defer does defer one of the registry's tools.
        let policy = load(&text);
        let table = Table::compile(&policy);
        for d in lint_with(&policy, &options).iter().filter(|d| d.code == Code::Undiscoverable) {
            let ri = policy.rules.iter().position(|r| r.span == d.span).expect("a rule") as u32;
            let defers = contexts_of(&policy).iter().any(|ctx| {
                let r = table.resolve(ctx).expect("declared mode");
                registry.tools().iter().any(|t| {
                    let it = ItemRef::from_tool(t);
                    table.decide(&r, &it).exposure == Exposure::Deferred
                        && table.matching_rules(&it).contains(&ri)
                })
            });
            prop_assert!(defers, "{} but it defers nothing\n{}", d.message, text);
        }
    }
}

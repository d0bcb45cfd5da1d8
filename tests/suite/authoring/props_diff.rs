//! The diff over random policies and registries: a policy against itself
//! changes nothing, every reported change is what the reference interpreter
//! decides under both policies, and the monotonic properties of the
//! language hold (adding `NoDefer` defers nothing, adding `Hide` widens
//! nothing).

use proptest::prelude::*;
use toolpolicy::diff::{Diff, diff};
use toolpolicy::{Context, Exposure, ItemRef, Policy, Registry, SkillList, reference};

use crate::language::arbitrary::{GenPolicy, GenRule, SCOPES, condition, policy, render, selector};

fn load(text: &str) -> Policy {
    Policy::parse("gen.policy", text)
        .unwrap_or_else(|e| panic!("generated policy fails:\n{text}\n{e}"))
}

/// A registry of tools named over `[ab]`, some with a source, hints and a
/// `defer_loading`, and a skill list.
fn items() -> impl Strategy<Value = (Registry, SkillList)> {
    (
        prop::collection::btree_map(
            "[ab]{1,3}",
            (prop::option::of("[ab]{0,2}"), any::<bool>(), any::<bool>()),
            1..6,
        ),
        prop::collection::btree_map("[ab]{1,2}", any::<bool>(), 0..3),
    )
        .prop_map(|(tools, skills)| {
            let tools: Vec<serde_json::Value> = tools
                .into_iter()
                .map(|(name, (source, defer, read_only))| {
                    serde_json::json!({
                        "name": name,
                        "description": format!("Tool {name}."),
                        "source": source,
                        "defer_loading": defer,
                        "annotations": {"readOnlyHint": read_only},
                    })
                })
                .collect();
            let skills: Vec<serde_json::Value> = skills
                .into_iter()
                .map(|(name, inv)| {
                    serde_json::json!({"name": name, "description": "A skill.", "model_invocable": inv})
                })
                .collect();
            (
                Registry::from_json(&serde_json::Value::from(tools).to_string()).expect("registry"),
                SkillList::from_json(&serde_json::Value::from(skills).to_string()).expect("skills"),
            )
        })
}

/// The item a change names, as the registry or skill list knows it.
fn item<'a>(name: &'a str, reg: &'a Registry, skills: &'a SkillList) -> ItemRef<'a> {
    match name.strip_prefix("skill:") {
        Some(s) => ItemRef::from_skill(skills.get(s).expect("listed skill")),
        None => ItemRef::from_tool(reg.get(name).expect("registry tool")),
    }
}

/// The context as one policy is asked in it: flags it does not name are dropped.
fn asked(ctx: &Context, p: &Policy) -> Context {
    let named = p.flags();
    let mut c = ctx.clone();
    c.flags.retain(|f| named.contains(f));
    c
}

fn check_against_reference(
    d: &Diff,
    old: &Policy,
    new: &Policy,
    reg: &Registry,
    skills: &SkillList,
) -> Result<(), TestCaseError> {
    for g in &d.groups {
        for c in &g.changes {
            for ctx in &c.contexts {
                for name in &c.items {
                    let it = item(name, reg, skills);
                    let o = reference::decide(old, &asked(ctx, old), &it).expect("old decides");
                    let n = reference::decide(new, &asked(ctx, new), &it).expect("new decides");
                    prop_assert_eq!(o.exposure, g.from, "{} in {:?}", name, ctx);
                    prop_assert_eq!(n.exposure, g.to, "{} in {:?}", name, ctx);
                    prop_assert_eq!(n.cause, c.new.kind);
                    prop_assert_eq!(o.cause, c.old.kind);
                }
            }
        }
    }
    Ok(())
}

/// `p` with `extra` rules added in scopes whose modes `p` already declares
/// (a new mode block is a new context, not a change of the old ones).
fn with_rules(p: &GenPolicy, extra: Vec<GenRule>) -> GenPolicy {
    let used: Vec<usize> = p.rules.iter().map(|r| r.scope).collect();
    let mut q = p.clone();
    for mut r in extra {
        if SCOPES[r.scope].starts_with("mode") && !used.contains(&r.scope) {
            r.scope = 0;
        }
        q.rules.push(r);
    }
    q
}

fn added(word: usize) -> impl Strategy<Value = Vec<GenRule>> {
    prop::collection::vec(
        (
            prop::collection::vec(selector(), 1..3),
            0..6usize,
            condition(),
        )
            .prop_map(move |(selectors, scope, when)| GenRule {
                word,
                selectors,
                scope,
                when,
            }),
        1..3,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn a_policy_against_itself_changes_nothing(p in policy(0..10), (reg, skills) in items()) {
        let text = render(&p);
        let pol = load(&text);
        let d = diff(&pol, &pol, &reg, &skills);
        prop_assert!(d.unchanged, "{}\n{:?}", text, d);
        prop_assert!(!d.widening);
    }

    #[test]
    fn changes_agree_with_the_reference(a in policy(0..8), b in policy(0..8), (reg, skills) in items()) {
        let (old, new) = (load(&render(&a)), load(&render(&b)));
        let d = diff(&old, &new, &reg, &skills);
        check_against_reference(&d, &old, &new, &reg, &skills)?;
        // Widening is exactly an exposure that grew.
        for g in &d.groups {
            let rank = |e: Exposure| match e { Exposure::Hidden => 0, Exposure::Deferred => 1, Exposure::Active => 2 };
            prop_assert_eq!(g.widening, rank(g.to) > rank(g.from));
        }
    }

    #[test]
    fn adding_nodefer_never_defers(p in policy(0..8), extra in added(1), (reg, skills) in items()) {
        let q = with_rules(&p, extra);
        let (old, new) = (load(&render(&p)), load(&render(&q)));
        let d = diff(&old, &new, &reg, &skills);
        prop_assert!(d.groups.iter().all(|g| g.to != Exposure::Deferred), "{}\n{}\n{:?}", render(&p), render(&q), d.groups);
        check_against_reference(&d, &old, &new, &reg, &skills)?;
    }

    #[test]
    fn adding_hide_never_widens(p in policy(0..8), extra in added(2), (reg, skills) in items()) {
        let q = with_rules(&p, extra);
        let (old, new) = (load(&render(&p)), load(&render(&q)));
        let d = diff(&old, &new, &reg, &skills);
        prop_assert!(d.groups.iter().all(|g| !g.widening), "{}\n{}\n{:?}", render(&p), render(&q), d.groups);
        prop_assert!(d.groups.iter().all(|g| g.to == Exposure::Hidden));
        check_against_reference(&d, &old, &new, &reg, &skills)?;
    }
}

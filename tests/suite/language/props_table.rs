//! The compiled table against the reference interpreter, and the invariants
//! the decision order states, over random policies, contexts and items.

use proptest::prelude::*;
use toolpolicy::{Context, Exposure, ItemRef, Policy, Table, reference};

use crate::language::arbitrary::{GenPolicy, GenRule, item, policy, render, rule, selector};

fn context() -> impl Strategy<Value = Context> {
    (
        prop_oneof![
            Just(None),
            Just(Some("m1")),
            Just(Some("m2")),
            Just(Some("m3"))
        ],
        prop_oneof![
            Just(None),
            Just(Some("r1")),
            Just(Some("r2")),
            Just(Some("r3"))
        ],
        prop::collection::btree_set(prop_oneof![Just("f0"), Just("f1")], 0..3),
        prop::option::weighted(0.2, prop::collection::vec(selector(), 0..3)),
    )
        .prop_map(|(mode, bot, flags, grants)| Context {
            mode: mode.map(str::to_string),
            bot: bot.map(str::to_string),
            flags: flags.into_iter().map(str::to_string).collect(),
            grants,
        })
}

/// The context, given a mode where the policy declares modes and the
/// context has none: a policy with modes has no mode-less context (docs/language.md).
fn in_mode(mut ctx: Context, policy: &Policy) -> Context {
    if ctx.mode.is_none() {
        ctx.mode = policy.modes.first().cloned();
    }
    ctx
}

fn load(text: &str) -> Policy {
    Policy::parse("gen.policy", text)
        .unwrap_or_else(|e| panic!("generated policy fails:\n{text}\n{e}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn table_agrees_with_reference(p in policy(0..10), ctx in context(), items in prop::collection::vec(item(0.5, "[ab]{1,3}"), 1..8)) {
        let text = render(&p);
        let policy = load(&text);
        let table = Table::compile(&policy);
        let resolved = table.resolve(&ctx);
        for it in &items {
            let r = reference::decide(&policy, &ctx, &it.as_ref());
            match (&resolved, r) {
                (Ok(res), Ok(want)) => {
                    let got = table.decide(res, &it.as_ref());
                    prop_assert_eq!(got, want, "policy:\n{}\ncontext {:?}\nitem {:?}", text, ctx, it);
                    // The precomputed path gives the same answer as the matching path.
                    let matches = table.matching_rules(&it.as_ref());
                    prop_assert_eq!(table.decide_with(res, &it.as_ref(), &matches), want);
                }
                (Err(a), Err(b)) => prop_assert_eq!(a, &b),
                (a, b) => prop_assert!(false, "table {:?} but reference {:?}", a.is_ok(), b.is_ok()),
            }
        }
    }

    #[test]
    fn guards_and_search_tools_are_never_held_back(p in policy(0..10), ctx in context(), name in "[ab]{1,3}") {
        let text = render(&p);
        let policy = load(&text);
        let table = Table::compile(&policy);
        let Ok(res) = table.resolve(&in_mode(ctx, &policy)) else { return Ok(()) };
        let is_guard = p.guards.iter().chain(&p.searches).any(|g| reference::glob(g, &name));
        if is_guard {
            prop_assert_eq!(table.decide(&res, &ItemRef::tool(&name)).exposure, Exposure::Active);
        }
    }

    #[test]
    fn adding_nodefer_never_defers_and_adding_defer_never_activates(
        p in policy(0..10), ctx in context(), it in item(0.5, "[ab]{1,3}"), extra in rule(), nodefer in any::<bool>()
    ) {
        let before_text = render(&p);
        let mut q = p.clone();
        let mut extra = extra;
        extra.word = if nodefer { 1 } else { 0 };
        q.rules.push(extra);
        let after_text = render(&q);
        let (before, after) = (load(&before_text), load(&after_text));
        let (tb, ta) = (Table::compile(&before), Table::compile(&after));
        let ctx = in_mode(ctx, &after);
        let (Ok(rb), Ok(ra)) = (tb.resolve(&ctx), ta.resolve(&ctx)) else { return Ok(()) };
        let b = tb.decide(&rb, &it.as_ref()).exposure;
        let a = ta.decide(&ra, &it.as_ref()).exposure;
        if nodefer {
            prop_assert!(!(b != Exposure::Deferred && a == Exposure::Deferred), "NoDefer deferred {:?}", it);
        } else {
            prop_assert!(!(b != Exposure::Active && a == Exposure::Active), "Defer activated {:?}", it);
        }
    }

    #[test]
    fn hide_beats_nodefer_beats_defer_in_every_scope(
        scopes in prop::array::uniform3(0..6usize), pattern in "[ab]{0,2}\\*", name in "[ab]{1,3}",
        switch_off in any::<bool>(),
    ) {
        let mode = Some("m1".to_string());
        let bot = Some("r1".to_string());
        let ctx = Context { mode, bot, ..Context::default() };
        // Scopes that apply in this context: top, mode m1, bot *, bot r1.
        let scopes = scopes.map(|s| [0, 1, 3, 4][s % 4]);
        let rule = |word: usize, scope: usize| GenRule { word, selectors: vec![pattern.clone()], scope, when: None };
        let base = GenPolicy {
            guards: vec![], searches: vec![], rules: vec![],
            switches: if switch_off { vec![(0, None, false)] } else { vec![] },
        };
        let decide = |rules: Vec<GenRule>| {
            let p = GenPolicy { rules, ..base.clone() };
            let policy = load(&render(&p));
            let t = Table::compile(&policy);
            let r = t.resolve(&ctx).expect("declared mode");
            t.decide(&r, &ItemRef::tool(&name)).exposure
        };
        if !reference::glob(&pattern, &name) { return Ok(()) }
        let all = vec![rule(0, scopes[0]), rule(1, scopes[1]), rule(2, scopes[2])];
        prop_assert_eq!(decide(all), Exposure::Hidden);
        prop_assert_eq!(decide(vec![rule(0, scopes[0]), rule(1, scopes[1])]), Exposure::Active);
        let defer_only = decide(vec![rule(0, scopes[0])]);
        prop_assert_eq!(defer_only, if switch_off { Exposure::Active } else { Exposure::Deferred });
    }

    #[test]
    fn same_input_same_answer(p in policy(0..10), ctx in context(), it in item(0.5, "[ab]{1,3}")) {
        let text = render(&p);
        let a = Table::compile(&load(&text));
        let b = Table::compile(&load(&text));
        match (a.resolve(&ctx), b.resolve(&ctx)) {
            (Ok(ra), Ok(rb)) => {
                let d = a.decide(&ra, &it.as_ref());
                prop_assert_eq!(d, b.decide(&rb, &it.as_ref()));
                prop_assert_eq!(d, a.decide(&ra, &it.as_ref()));
            }
            (Err(x), Err(y)) => prop_assert_eq!(x, y),
            _ => prop_assert!(false, "resolve differs"),
        }
    }
}

//! The compiled table against the reference interpreter, and the invariants
//! SPEC 2.3 states, over random policies, contexts and items.

use proptest::prelude::*;
use toolpolicy::{Context, Exposure, ItemKind, ItemRef, Policy, Table, reference};

const SCOPES: [&str; 6] = ["", "mode m1", "mode m2", "bot *", "bot r1", "bot r2"];
const WORDS: [&str; 4] = ["Defer", "NoDefer", "Hide", "Grant"];

#[derive(Debug, Clone)]
struct GenRule {
    word: usize,
    selectors: Vec<String>,
    scope: usize,
    when: Option<(bool, usize)>,
}

/// A `when` condition: negated, and which flag.
type Cond = Option<(bool, usize)>;

#[derive(Debug, Clone)]
struct GenPolicy {
    guards: Vec<String>,
    searches: Vec<String>,
    rules: Vec<GenRule>,
    /// (scope, condition, defer_loading); at most one per scope and condition.
    switches: Vec<(usize, Cond, bool)>,
}

fn pattern() -> impl Strategy<Value = String> {
    "[ab*]{1,3}"
}

fn selector() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => pattern(),
        1 => pattern().prop_map(|p| format!("skill:{p}")),
        1 => pattern().prop_map(|p| format!("source:{p}")),
    ]
}

fn condition() -> impl Strategy<Value = Option<(bool, usize)>> {
    prop_oneof![3 => Just(None), 1 => (any::<bool>(), 0..2usize).prop_map(Some)]
}

fn rule() -> impl Strategy<Value = GenRule> {
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

fn policy() -> impl Strategy<Value = GenPolicy> {
    (
        prop::collection::vec(pattern(), 0..2),
        prop::collection::vec(pattern(), 0..2),
        prop::collection::vec(rule(), 0..10),
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

fn cond_text(c: Option<(bool, usize)>) -> Option<String> {
    c.map(|(neg, f)| format!("when {}f{f}", if neg { "!" } else { "" }))
}

/// Renders the generated policy as source text, each scope in one block.
fn render(p: &GenPolicy) -> String {
    let mut out = String::new();
    if !p.guards.is_empty() {
        out += &format!("guard {}\n", p.guards.join(", "));
    }
    if !p.searches.is_empty() {
        out += &format!("search {}\n", p.searches.join(", "));
    }
    for (scope, head) in SCOPES.iter().enumerate() {
        let mut body = String::new();
        for r in p.rules.iter().filter(|r| r.scope == scope) {
            let stmt = format!("{}({})", WORDS[r.word], r.selectors.join(", "));
            match cond_text(r.when) {
                Some(c) => body += &format!("{c} {{\n{stmt}\n}}\n"),
                None => body += &format!("{stmt}\n"),
            }
        }
        for (s, c, v) in &p.switches {
            if *s == scope {
                let stmt = format!("defer_loading = {v}");
                match cond_text(*c) {
                    Some(c) => body += &format!("{c} {{\n{stmt}\n}}\n"),
                    None => body += &format!("{stmt}\n"),
                }
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
struct GenItem {
    skill: bool,
    name: String,
    source: Option<String>,
    hint: bool,
    invocable: bool,
}

fn item() -> impl Strategy<Value = GenItem> {
    (
        any::<bool>(),
        "[ab]{1,3}",
        prop::option::of("[ab]{1,2}"),
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
    fn as_ref(&self) -> ItemRef<'_> {
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
        }
    }
}

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

fn load(text: &str) -> Policy {
    Policy::parse("gen.policy", text)
        .unwrap_or_else(|e| panic!("generated policy fails:\n{text}\n{e}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn table_agrees_with_reference(p in policy(), ctx in context(), items in prop::collection::vec(item(), 1..8)) {
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
    fn guards_and_search_tools_are_never_held_back(p in policy(), ctx in context(), name in "[ab]{1,3}") {
        let text = render(&p);
        let policy = load(&text);
        let table = Table::compile(&policy);
        let Ok(res) = table.resolve(&ctx) else { return Ok(()) };
        let is_guard = p.guards.iter().chain(&p.searches).any(|g| reference::glob(g, &name));
        if is_guard {
            prop_assert_eq!(table.decide(&res, &ItemRef::tool(&name)).exposure, Exposure::Active);
        }
    }

    #[test]
    fn adding_nodefer_never_defers_and_adding_defer_never_activates(
        p in policy(), ctx in context(), it in item(), extra in rule(), nodefer in any::<bool>()
    ) {
        let before_text = render(&p);
        let mut q = p.clone();
        let mut extra = extra;
        extra.word = if nodefer { 1 } else { 0 };
        q.rules.push(extra);
        let after_text = render(&q);
        let (before, after) = (load(&before_text), load(&after_text));
        let (tb, ta) = (Table::compile(&before), Table::compile(&after));
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
    fn same_input_same_answer(p in policy(), ctx in context(), it in item()) {
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

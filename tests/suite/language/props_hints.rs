//! `hint:` selectors on generated registries: the compiled table against the
//! reference interpreter, which reads the annotations as written, with every
//! annotation present, absent or not a boolean; and MCP's safe defaults.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use toolpolicy::{
    CauseKind, Context, Exposure, ItemRef, Policy, Registry, Table, hint::Hint, reference,
};

use crate::language::arbitrary::{HINTS, hint_context as context, policy, render};

const KEYS: [&str; 4] = [
    "readOnlyHint",
    "destructiveHint",
    "idempotentHint",
    "openWorldHint",
];

/// One annotation: absent (`None`), a boolean, or something else.
fn value() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        2 => Just(None),
        2 => Just(Some(json!(true))),
        2 => Just(Some(json!(false))),
        1 => Just(Some(Value::Null)),
        1 => Just(Some(json!("true"))),
        1 => Just(Some(json!(1))),
        1 => Just(Some(json!({"value": true}))),
    ]
}

/// An entry's `annotations`: absent, not an object, or an object of
/// generated values (with a field hints do not read).
fn annotations() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        1 => Just(None),
        1 => Just(Some(json!("read only"))),
        6 => prop::collection::vec(value(), 4).prop_map(|vs| {
            let mut o = Map::new();
            o.insert("title".into(), json!("t"));
            for (k, v) in KEYS.iter().zip(vs) {
                if let Some(v) = v {
                    o.insert((*k).into(), v);
                }
            }
            Some(Value::Object(o))
        }),
    ]
}

/// A registry entry in one of the shapes annotations can arrive in.
fn entry(name: &str, source: Option<&str>, annotations: Option<Value>, shape: usize) -> Value {
    let mut o = Map::new();
    o.insert("name".into(), json!(name));
    let schema = ["parameters", "input_schema", "inputSchema", "parameters"][shape % 4];
    o.insert(schema.into(), json!({"type": "object"}));
    if let Some(s) = source {
        o.insert("source".into(), json!(s));
    }
    if let Some(a) = annotations {
        o.insert("annotations".into(), a);
    }
    if shape % 4 == 3 {
        json!({"type": "function", "function": o})
    } else {
        Value::Object(o)
    }
}

fn registry() -> impl Strategy<Value = Registry> {
    prop::collection::vec(
        (
            "[ab]{1,3}",
            prop::option::of("[ab]{0,2}"),
            annotations(),
            0..4usize,
        ),
        1..8,
    )
    .prop_map(|tools| {
        let mut seen = std::collections::HashSet::new();
        let entries: Vec<Value> = tools
            .into_iter()
            .filter(|(n, ..)| seen.insert(n.clone()))
            .map(|(n, s, a, shape)| entry(&n, s.as_deref(), a, shape))
            .collect();
        Registry::from_json(&Value::Array(entries).to_string()).expect("generated registry loads")
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Hints resolved once at load, matched once per registry, decide as the
    /// reference interpreter reading the raw annotations does.
    #[test]
    fn table_agrees_with_reference_on_annotated_registries(
        p in policy(1..10), reg in registry(), ctx in context(),
    ) {
        let text = render(&p);
        let policy = Policy::parse("gen.policy", &text)
            .unwrap_or_else(|e| panic!("generated policy fails:\n{text}\n{e}"));
        let table = Table::compile(&policy);
        let matches = table.registry_matches(&reg);
        let resolved = table.resolve(&ctx);
        for (t, m) in reg.tools().iter().zip(&matches) {
            let item = ItemRef::from_tool(t);
            let want = reference::decide(&policy, &ctx, &item);
            match (&resolved, want) {
                (Ok(res), Ok(want)) => {
                    prop_assert_eq!(table.decide_with(res, &item, m), want, "policy:\n{}\ntool {:?}", text, t);
                    prop_assert_eq!(table.decide(res, &item), want);
                }
                (Err(a), Err(b)) => prop_assert_eq!(a, &b),
                (a, b) => prop_assert!(false, "table {:?} but reference {:?}", a.is_ok(), b.is_ok()),
            }
        }
    }

    /// A tool that says nothing usable (no annotations, not an object, or
    /// only values that are not booleans) is never read-only and always
    /// destructive, whatever shape it came in.
    #[test]
    fn a_tool_that_says_nothing_is_destructive(
        name in "[a-z]{1,8}",
        source in prop::option::of("mcp:[a-z]{1,4}"),
        shape in 0..4usize,
        said in prop_oneof![
            Just(None),
            Just(Some(json!({}))),
            Just(Some(json!([true]))),
            Just(Some(json!({"readOnlyHint": "true", "destructiveHint": 0}))),
            Just(Some(json!({"readOnlyHint": null, "destructiveHint": "false", "title": "x"}))),
        ],
    ) {
        let reg = Registry::from_json(&json!([entry(&name, source.as_deref(), said, shape)]).to_string())
            .expect("loads");
        let tool = &reg.tools()[0];
        prop_assert!(!tool.hints.contains(Hint::ReadOnly));
        prop_assert!(tool.hints.contains(Hint::Destructive));
        let policy = Policy::parse("t", "mode plan {\n  Grant(hint:read_only)\n}\nmode agent {\n  Hide(hint:destructive)\n}\n").expect("loads");
        let table = Table::compile(&policy);
        for (mode, cause) in [("plan", CauseKind::Grant), ("agent", CauseKind::Hide)] {
            let res = table.resolve(&Context::mode(mode)).expect("declared");
            let d = table.decide(&res, &ItemRef::from_tool(tool));
            prop_assert_eq!((d.exposure, d.cause), (Exposure::Hidden, cause));
            let r = reference::decide(&policy, &Context::mode(mode), &ItemRef::from_tool(tool)).expect("declared");
            prop_assert_eq!(r, d);
        }
    }
}

/// Every combination of the four annotations, each absent, `true`, `false`
/// or not a boolean, under each hint: the table picks what the reference does.
#[test]
fn every_combination_of_annotations() {
    let choices = [
        None,
        Some(json!(true)),
        Some(json!(false)),
        Some(json!("yes")),
    ];
    let mut entries = Vec::new();
    for n in 0..4usize.pow(4) {
        let mut o = Map::new();
        for (k, key) in KEYS.iter().enumerate() {
            if let Some(v) = &choices[n / 4usize.pow(k as u32) % 4] {
                o.insert((*key).into(), v.clone());
            }
        }
        entries.push(entry(&format!("t{n}"), None, Some(Value::Object(o)), n));
    }
    entries.push(entry("bare", None, None, 0));
    let reg = Registry::from_json(&Value::Array(entries).to_string()).expect("loads");
    for h in HINTS {
        let policy = Policy::parse("t", format!("Hide(hint:{h})\n")).expect("loads");
        let table = Table::compile(&policy);
        let res = table.resolve(&Context::default()).expect("no modes");
        let mut picked = 0;
        for t in reg.tools() {
            let item = ItemRef::from_tool(t);
            let want = reference::decide(&policy, &Context::default(), &item).expect("no modes");
            assert_eq!(table.decide(&res, &item), want, "hint:{h} on {t:?}");
            picked += usize::from(want.exposure == Exposure::Hidden);
        }
        // Each hint tells some tools apart from others.
        assert!(picked > 0 && picked < reg.len(), "hint:{h} picked {picked}");
    }
}

//! Arbitrary bytes as a tool registry and as a skill list.
//!
//! A document that loads has unique, non-empty names; its tools, planned
//! under a small policy, come out in every provider's shape, and each shape
//! loads back to the same definitions (the loaders accept what the runtime
//! sends).
//! The catalog keeps its budget and one line per entry whatever the
//! descriptions hold, and tools the policy hides are neither declared nor
//! deferred. A document that does not load says where and what.

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolpolicy::registry::LoadError;
use toolpolicy::runtime::{Engine, Provider};
use toolpolicy::{Context, Policy, Registry, SkillList};

const POLICY: &str = "search ToolSearch\nHide(*secret*, skill:*secret*)\nDefer(*defer*)\n";

const PROVIDERS: [Provider; 4] = [
    Provider::Generic,
    Provider::OpenAiChat,
    Provider::OpenAiResponses,
    Provider::Anthropic {
        native_deferral: false,
    },
];

fn check_error(e: &LoadError) {
    assert!(!e.message.is_empty(), "{e:?}");
    assert!(!e.to_string().is_empty());
}

/// The plan of `registry` and `skills` under [`POLICY`], and the round trip
/// of its declared tools through each provider shape.
fn plan(registry: Registry, skills: SkillList) {
    let Ok(policy) = Policy::parse("loaders.policy", POLICY) else {
        panic!("the fixed policy does not load");
    };
    let engine = Engine::new(policy, registry, skills);
    let Ok(session) = engine.session(Context::default()) else {
        panic!("a policy without modes takes a context without one");
    };
    let Ok(plan) = session.plan(&engine) else {
        panic!("the default context has no plan");
    };
    let declared: Vec<_> = plan.declared().cloned().collect();
    for t in declared.iter().chain(plan.deferred()) {
        assert!(
            !t.name.contains("secret"),
            "hidden `{}` in the plan",
            t.name
        );
    }
    let catalog = plan.catalog();
    let budget = plan.settings().catalog_chars as usize;
    assert!(catalog.chars().count() <= budget);
    let lines = catalog.lines().count();
    assert!(
        lines <= plan.deferred_len() + 1,
        "{lines} lines:\n{catalog}"
    );
    for line in catalog.lines().skip(1) {
        assert!(line.starts_with("- "), "catalog line {line:?}");
    }
    for line in plan.skills_block().lines() {
        let tag = line == "<available_skills>" || line == "</available_skills>";
        assert!(tag || line.starts_with("- "), "skills line {line:?}");
    }
    for provider in PROVIDERS {
        let doc = Value::Array(plan.provider_tools(provider)).to_string();
        let back = match Registry::from_json(&doc) {
            Ok(r) => r,
            Err(e) => panic!("{provider:?} shape does not load back: {e}\n{doc}"),
        };
        // Names a provider would refuse are sent under an alias, so only the
        // definitions are compared; a shape may leave out a schema, which
        // loads back as the loader's default one.
        let default = serde_json::json!({"type": "object", "properties": {}});
        let same = back.tools().iter().zip(&declared).all(|(b, t)| {
            b.description == t.description
                && (b.parameters == t.parameters || b.parameters == default)
        });
        assert!(same && back.len() == declared.len(), "{provider:?}: {doc}");
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let registry = Registry::from_json(text);
    let skills = SkillList::from_json(text);
    if let Err(e) = &registry {
        check_error(e);
    }
    if let Err(e) = &skills {
        check_error(e);
    }
    let registry = registry.ok();
    if let Some(r) = &registry {
        let mut names: Vec<&str> = r.tools().iter().map(|t| t.name.as_str()).collect();
        assert!(names.iter().all(|n| !n.is_empty()));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), r.len(), "duplicate names accepted");
    }
    match (registry, skills) {
        (Some(r), Ok(s)) => plan(r, s),
        (Some(r), Err(_)) => plan(r, SkillList::default()),
        (None, Ok(s)) => plan(Registry::default(), s),
        (None, Err(_)) => {}
    }
});

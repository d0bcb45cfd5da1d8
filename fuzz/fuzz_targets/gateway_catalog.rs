//! Arbitrary JSON as the `tools/list` answers of the gateway's children:
//! servers nobody here controls.
//!
//! The document is an array of tool lists (one per server), or one list.
//! Whatever the entries hold, the gateway's registry builds without a
//! panic and without its last-resort "could not be built" branch; every
//! entry is either in it, once, under `SERVER__tool` with `source` =
//! `mcp:SERVER` and a route back to the child's own name, or named by one
//! warning. Each tool goes back to a client as an MCP entry with its name
//! and an object schema. Planned under a policy that hides `*secret*`,
//! hidden tools are neither declared, deferred, nor found or loaded by a
//! search.

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolpolicy::gateway::catalog::{build, full_name, to_mcp};
use toolpolicy::runtime::Engine;
use toolpolicy::{Context, Policy, SkillList};

const POLICY: &str = "search tool_search\nHide(*secret*)\nNoDefer(s0__*)\nDefer(*)\n";

/// The tool lists the document stands for.
fn lists(doc: Value) -> Vec<Vec<Value>> {
    match doc {
        Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_array) => items
            .into_iter()
            .map(|l| match l {
                Value::Array(tools) => tools,
                _ => Vec::new(),
            })
            .collect(),
        Value::Array(tools) => vec![tools],
        other => vec![vec![other]],
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(doc) = serde_json::from_str::<Value>(text) else {
        return;
    };
    let lists = lists(doc);
    let servers: Vec<String> = (0..lists.len()).map(|i| format!("s{i}")).collect();
    let catalog = build(
        servers
            .iter()
            .map(String::as_str)
            .zip(lists.iter().map(Vec::as_slice)),
    );
    assert!(
        !catalog
            .warnings
            .iter()
            .any(|w| w.contains("could not be built")),
        "{:?}",
        catalog.warnings
    );
    let listed: usize = lists.iter().map(Vec::len).sum();
    assert_eq!(
        catalog.registry.len() + catalog.warnings.len(),
        listed,
        "an entry neither served nor warned about: {:?}",
        catalog.warnings
    );
    assert_eq!(catalog.routes.len(), catalog.registry.len());
    for t in catalog.registry.tools() {
        let route = &catalog.routes[&t.name];
        let server = &servers[route.server];
        assert_eq!(t.name, full_name(server, &route.tool));
        assert_eq!(t.source.as_deref(), Some(format!("mcp:{server}").as_str()));
        let named = |e: &Value| e.get("name").and_then(Value::as_str) == Some(&route.tool);
        assert!(
            lists[route.server].iter().any(named),
            "{} not listed",
            t.name
        );
        let back = to_mcp(t);
        assert_eq!(back["name"].as_str(), Some(t.name.as_str()));
        assert!(back["inputSchema"].is_object(), "{back}");
    }

    let Ok(policy) = Policy::parse("gateway.policy", POLICY) else {
        panic!("the fixed policy does not load");
    };
    let engine = Engine::new(policy, catalog.registry.clone(), SkillList::default());
    let Ok(mut session) = engine.session(Context::default()) else {
        panic!("a policy without modes takes a context without one");
    };
    let Ok(plan) = session.plan(&engine) else {
        panic!("the default context has no plan");
    };
    for t in plan.declared().chain(plan.deferred()) {
        assert!(
            !t.name.contains("secret"),
            "hidden `{}` in the plan",
            t.name
        );
    }
    // A search for each tool's words, and every name asked for by name.
    let names: Vec<&str> = catalog
        .registry
        .tools()
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    for t in catalog.registry.tools().iter().take(8) {
        let query: String = t.description.chars().take(200).collect();
        let Ok(r) = session.search(&engine, &query, &names) else {
            panic!("search in the session's own context failed");
        };
        for n in r
            .activated
            .iter()
            .chain(&r.matches)
            .chain(&r.already_active)
        {
            assert!(!n.contains("secret"), "search reached hidden `{n}`");
        }
    }
});

//! Inputs that grow large stay linear: one test per shape that was quadratic
//! (or worse), each at a size the quadratic code took minutes on. The time
//! limits are for unoptimised test builds on a busy machine, many times what
//! the linear code needs; `benches/engine.rs` measures the same shapes.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolpolicy::runtime::Engine;
use toolpolicy::{Context, Policy, Registry, SkillList};

/// Runs `f` and fails when it took longer than `secs` seconds.
fn within<T>(secs: u64, what: &str, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    let took = start.elapsed();
    assert!(
        took < Duration::from_secs(secs),
        "{what} took {took:?}, over {secs} s: no longer linear?"
    );
    out
}

#[test]
fn a_tool_with_100000_required_parameters_loads() {
    let props: serde_json::Map<String, Value> = (0..100_000)
        .map(|i| (format!("p{i}"), json!({"type": "string"})))
        .collect();
    let required: Vec<&String> = props.keys().collect();
    let text = json!([
        {"name": "big", "description": "Big.", "parameters": {"type": "object", "properties": props, "required": required}},
        {"name": "find", "description": "Finds tools."}
    ])
    .to_string();
    within(30, "loading and planning", || {
        let registry = Registry::from_json(&text).expect("loads");
        let empty = Policy::parse("empty.policy", "").expect("valid");
        let engine = Engine::new(empty, registry, SkillList::default());
        for params in ["false", "true"] {
            let source = format!("search find\nDefer(*)\ncatalog_params = {params}\n");
            engine.set_policy(Policy::parse("p.policy", source).expect("valid"));
            let plan = engine
                .session(Context::default())
                .and_then(|s| s.plan(&engine))
                .expect("plans");
            assert_eq!(plan.deferred_len(), 1);
            // With parameters on, the line is cut to its budget like any other.
            let line = plan.catalog().lines().nth(1).unwrap_or_default();
            assert_eq!(line.starts_with("- big(p0, "), params == "true", "{line}");
        }
    });
}

//! The same calls as `bench.mjs`, in Rust: what the library costs without
//! the binding, so that the difference is what JavaScript adds. Same
//! registry (`bench/registry.json`, 100 tools) and policy.
//!
//! `cargo bench --bench native` prints each median.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use toolpolicy::runtime::{Engine, Provider};
use toolpolicy::{Context, Policy, Registry, SkillList};

const QUERY: &str = "open a page in the browser";

fn engine() -> Engine {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/bench/");
    let read = |f: &str| std::fs::read_to_string(format!("{dir}{f}")).unwrap_or_default();
    let policy =
        Policy::parse("bench.policy", read("bench.policy")).expect("the bench policy loads");
    let registry = Registry::from_json(&read("registry.json")).expect("the bench registry loads");
    Engine::new(policy, registry, SkillList::default())
}

fn benches(c: &mut Criterion) {
    let engine = engine();
    let chat = engine.session(Context::default()).expect("a session");
    // What `session.plan()` computes before it converts: the plan, its
    // declared definitions and its name lists.
    c.bench_function("node/plan/rust", |b| {
        b.iter(|| {
            let plan = chat.plan(&engine).expect("a plan");
            let defs = plan.provider_tools(Provider::Generic);
            let names: Vec<String> = plan.deferred().map(|t| t.name.clone()).collect();
            black_box((defs, names, plan.catalog().len()))
        })
    });
    // What `engine.session()` then `session.search(QUERY)` compute.
    c.bench_function("node/search/rust", |b| {
        b.iter(|| {
            let mut chat = engine.session(Context::default()).expect("a session");
            black_box(
                chat.search(&engine, QUERY, &[] as &[&str])
                    .expect("a search"),
            )
        })
    });
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! { name = group; config = config(); targets = benches }
criterion_main!(group);

//! Helpers for the runtime tests: engines over the bundled policies and
//! example registries, and short ways to read a plan.

use std::path::PathBuf;

use toolpolicy::runtime::{Engine, Session};
use toolpolicy::{Context, Policy, Registry, SkillList};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    let path = root().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `policies/NAME.policy`.
pub fn policy(name: &str) -> Policy {
    let rel = format!("policies/{name}.policy");
    Policy::parse(rel.clone(), read(&rel)).unwrap_or_else(|e| panic!("{e}"))
}

/// `examples/registries/NAME.json`.
pub fn example_registry(name: &str) -> Registry {
    Registry::from_json(&read(&format!("examples/registries/{name}.json")))
        .unwrap_or_else(|e| panic!("{e}"))
}

pub fn example_skills(name: &str) -> SkillList {
    SkillList::from_json(&read(&format!("examples/skills/{name}.json")))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// An engine over `policies/POLICY.policy` and `examples/registries/REGISTRY.json`.
pub fn engine(policy_name: &str, registry: &str) -> Engine {
    Engine::new(
        policy(policy_name),
        example_registry(registry),
        SkillList::default(),
    )
}

pub fn session(engine: &Engine, mode: &str) -> Session {
    engine
        .session(Context::mode(mode))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The declared names of the session's current plan.
pub fn declared(session: &Session, engine: &Engine) -> Vec<String> {
    let plan = session.plan(engine).unwrap_or_else(|e| panic!("{e}"));
    plan.declared().map(|t| t.name.clone()).collect()
}

pub const NONE: &[&str] = &[];

//! Arbitrary scenario files replayed over a small fixed policy, registry and
//! skill list. Whatever the steps, `Secret*` tools and `secret*` skills are
//! hidden in every context: no step may declare, activate, list or resolve
//! them.

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolpolicy::runtime::{Engine, Scenario, replay};
use toolpolicy::{Policy, Registry, SkillList};

const POLICY: &str = r#"
guard Guard
search ToolSearch
activation = "per_prompt"
Hide(Secret*, skill:secret*)
Defer(*)
mode agent {
  NoDefer(Read, Bash)
  max_activations = 2
}
mode chat {
  activation = "sticky"
  on_miss = "error"
  when offline {
    Hide(source:web)
  }
}
bot reviewer {
  Grant(Read, Web*, skill:*)
}
"#;

const REGISTRY: &str = r#"{"tools": [
  {"name": "Guard", "description": "Always there."},
  {"name": "ToolSearch", "description": "Find tools."},
  {"name": "Read", "description": "Read a file."},
  {"name": "Bash", "description": "Run a command."},
  {"name": "WebFetch", "description": "Fetch a web page.", "source": "web"},
  {"name": "WebSearch", "description": "Search the web.", "source": "web", "defer_loading": true},
  {"name": "SecretVault", "description": "Read a secret file."},
  {"type": "function", "function": {"name": "SecretKeys", "description": "Search secret keys."}},
  {"name": "Notes", "input_schema": {"type": "object", "properties": {"text": {}}}}
]}"#;

const SKILLS: &str = r#"[
  {"name": "review", "key": "code-review", "description": "Review code."},
  {"name": "secret-plan", "key": "plan", "description": "Plans."},
  {"name": "shy", "model_invocable": false}
]"#;

fn engine() -> Option<Engine> {
    Some(Engine::new(
        Policy::parse("replay.policy", POLICY).ok()?,
        Registry::from_json(REGISTRY).ok()?,
        SkillList::from_json(SKILLS).ok()?,
    ))
}

fn names(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn is_secret(name: &str) -> bool {
    name.starts_with("Secret") || name.starts_with("secret")
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(scenario) = Scenario::from_json(text) else {
        return;
    };
    let Some(engine) = engine() else {
        panic!("the fixed policy, registry or skill list does not load");
    };
    let Ok(reports) = replay(&engine, &scenario) else {
        return;
    };
    assert_eq!(reports.len(), scenario.steps.len());
    for r in &reports {
        assert!(!r.declared.iter().any(|n| is_secret(n)), "{r:?}");
        for key in ["activated", "already_active", "matches", "over_limit"] {
            let shown = names(r.result.get(key));
            assert!(!shown.iter().any(|n| is_secret(n)), "{key}: {r:?}");
        }
        if let Some(skill) = r.result.get("skill").and_then(Value::as_str) {
            assert!(!is_secret(skill) && skill != "shy", "{r:?}");
        }
    }
});

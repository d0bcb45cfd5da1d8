//! What JavaScript gets back: plain objects with camelCase keys, holding the
//! same fields as the command line's JSON contracts (docs/cli.md), and tool
//! definitions in the generic `{name, description, parameters}` shape with
//! every other field the registry entry carries.

use napi_derive::napi;
use serde_json::Value;
use toolpolicy::runtime::CallOutcome;

/// The meter (docs/runtime.md): a quarter token per character.
#[napi(object)]
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tokens {
    pub declared: i64,
    pub catalog: i64,
    pub skills: i64,
    pub total: i64,
    /// Had every tool that is not hidden been declared.
    pub all_declared: i64,
}

fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl From<toolpolicy::runtime::Tokens> for Tokens {
    fn from(t: toolpolicy::runtime::Tokens) -> Tokens {
        Tokens {
            declared: int(t.declared),
            catalog: int(t.catalog),
            skills: int(t.skills),
            total: int(t.total),
            all_declared: int(t.all_declared),
        }
    }
}

/// What a direct call of a tool gets (docs/runtime.md).
#[napi(object)]
pub struct CallResult {
    /// Whether the tool may run; report its result with `recordResult`.
    pub allowed: bool,
    /// For a deferred tool under `on_miss = "activate"`: declared from the
    /// next step, so a retry works.
    pub declared_next_step: bool,
    /// The not-found result to give the model; `null` when allowed.
    pub text: Option<String>,
}

impl CallResult {
    pub fn new(outcome: CallOutcome, tool: &str) -> CallResult {
        CallResult {
            allowed: outcome == CallOutcome::Allowed,
            declared_next_step: matches!(
                outcome,
                CallOutcome::NotFound {
                    declared_next_step: true
                }
            ),
            text: outcome.not_found_text(tool),
        }
    }
}

/// A skill the skill tool resolved.
#[napi(object)]
pub struct SkillResult {
    pub name: String,
    pub key: Option<String>,
    pub description: String,
    pub source: Option<String>,
}

/// A value with its object keys in camelCase, for contracts the library
/// writes in snake_case (`explain`, a session's state).
pub fn camel_case(v: Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (camel(&k), camel_case(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(camel_case).collect()),
        other => other,
    }
}

fn camel(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_become_camel_case_and_values_stay() {
        let v = serde_json::json!({"not_declared": "x_y", "a": [{"selector_line": 1}]});
        assert_eq!(
            camel_case(v),
            serde_json::json!({"notDeclared": "x_y", "a": [{"selectorLine": 1}]})
        );
    }
}

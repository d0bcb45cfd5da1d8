//! Replay files (docs/replay.md): a chat's steps in JSON, run against an engine, with
//! the declared list after each step and what the step returned. The command
//! line's `policy replay` and the scenario tests share this code.
//!
//! Besides the steps every replay file has (`prompt`, `search`, `call`, `load`,
//! `compact`, `restart`, `mode`), a step may change the context (`bot`,
//! `flags`, `grants`) or ask the skill tool (`skill`), and may carry an
//! `expect` object: each of its keys is compared with the same key of the
//! step's output (`declared`, or a field of the result), and a difference is
//! reported as a failure of that step. A scenario may name the files it is
//! meant for (`policy`, `registry`, `skills`, relative to the scenario file).

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::decision::{Context, ContextError};
use crate::registry::LoadError;

use super::engine::Engine;
use super::evidence::ResultStatus;

/// A scenario file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub policy: Option<String>,
    #[serde(default)]
    pub registry: Option<String>,
    #[serde(default)]
    pub skills: Option<String>,
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default)]
    pub bot: Option<String>,
    #[serde(default)]
    pub flags: Vec<String>,
    #[serde(default)]
    pub grants: Option<Vec<String>>,
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchStep {
    #[serde(default)]
    pub query: String,
    #[serde(default)]
    pub names: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallStep {
    pub tool: String,
    #[serde(default)]
    pub status: ResultStatus,
}

/// One step: exactly one action, maybe a status (for `search` and `load`)
/// and expectations.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    #[serde(default)]
    pub prompt: Option<String>,
    #[serde(default)]
    pub search: Option<SearchStep>,
    #[serde(default)]
    pub call: Option<CallStep>,
    #[serde(default)]
    pub load: Option<Vec<String>>,
    /// `{"compact": {}}`; `null` is taken too.
    #[serde(default, deserialize_with = "any_value")]
    pub compact: Option<Value>,
    #[serde(default, deserialize_with = "any_value")]
    pub restart: Option<Value>,
    /// `{"mode": "chat"}`; `null` leaves modes.
    #[serde(default, deserialize_with = "present")]
    pub mode: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub bot: Option<Option<String>>,
    #[serde(default)]
    pub flags: Option<Vec<String>>,
    #[serde(default, deserialize_with = "present")]
    pub grants: Option<Option<Vec<String>>>,
    #[serde(default)]
    pub skill: Option<String>,
    #[serde(default)]
    pub status: Option<ResultStatus>,
    #[serde(default)]
    pub expect: Option<Map<String, Value>>,
}

/// Tells a key given as `null` from a key left out.
fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// A field that is there, whatever its value (`null` included).
fn any_value<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

impl Step {
    fn action(&self) -> Result<&'static str, String> {
        let actions = [
            ("prompt", self.prompt.is_some()),
            ("search", self.search.is_some()),
            ("call", self.call.is_some()),
            ("load", self.load.is_some()),
            ("compact", self.compact.is_some()),
            ("restart", self.restart.is_some()),
            ("mode", self.mode.is_some()),
            ("bot", self.bot.is_some()),
            ("flags", self.flags.is_some()),
            ("grants", self.grants.is_some()),
            ("skill", self.skill.is_some()),
        ];
        let given: Vec<&str> = actions.iter().filter(|a| a.1).map(|a| a.0).collect();
        match given.as_slice() {
            [one] => {
                if self.status.is_some() && !matches!(*one, "search" | "load") {
                    return Err(format!(
                        "`status` belongs to a `search` or `load` step (a `call` carries its own), not to `{one}`"
                    ));
                }
                Ok(one)
            }
            [] => Err(format!(
                "a step needs one action: {}",
                actions.map(|a| format!("`{}`", a.0)).join(", ")
            )),
            many => Err(format!(
                "a step has one action, found {}",
                many.iter()
                    .map(|a| format!("`{a}`"))
                    .collect::<Vec<_>>()
                    .join(" and ")
            )),
        }
    }
}

impl Scenario {
    /// Reads a scenario, naming the step at fault (`steps[2]`) in errors.
    pub fn from_json(text: &str) -> Result<Scenario, LoadError> {
        let err = |path: String, message: String| LoadError { path, message };
        let doc: Value = serde_json::from_str(crate::input::strip_bom(text))
            .map_err(|e| err(String::new(), format!("not valid JSON: {e}")))?;
        let Value::Object(mut map) = doc else {
            return Err(err(String::new(), "expected a scenario object".into()));
        };
        let steps = match map.remove("steps") {
            Some(Value::Array(steps)) => steps,
            Some(_) => return Err(err("steps".into(), "expected an array of steps".into())),
            None => return Err(err(String::new(), "missing `steps`".into())),
        };
        map.insert("steps".into(), Value::Array(Vec::new()));
        let mut scenario: Scenario = serde_json::from_value(Value::Object(map))
            .map_err(|e| err(String::new(), e.to_string()))?;
        for (i, step) in steps.into_iter().enumerate() {
            let at = format!("steps[{i}]");
            let step: Step =
                serde_json::from_value(step).map_err(|e| err(at.clone(), e.to_string()))?;
            let action = step.action().map_err(|m| err(at.clone(), m))?;
            check_expect_keys(&step, action)
                .map_err(|(key, m)| err(format!("{at}.expect.{key}"), m))?;
            scenario.steps.push(step);
        }
        Ok(scenario)
    }

    /// The context the scenario starts in.
    pub fn context(&self) -> Context {
        Context {
            mode: self.mode.clone(),
            bot: self.bot.clone(),
            flags: self.flags.iter().cloned().collect(),
            grants: self.grants.clone(),
        }
    }
}

/// One step's output: `{"step", "action", "declared", "result"}`, plus the
/// expectations it failed, if any.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StepReport {
    /// The step's index in `steps`, from 0.
    pub step: usize,
    pub action: &'static str,
    /// The declared list after the step.
    pub declared: Vec<String>,
    pub result: Value,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
}

/// Why a replay stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayError {
    /// `steps[i]`, or empty for the starting context.
    pub path: String,
    pub error: ContextError,
}

impl std::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.error)
        } else {
            write!(f, "`{}`: {}", self.path, self.error)
        }
    }
}

impl std::error::Error for ReplayError {}

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// Runs a scenario on a fresh session of `engine`.
pub fn replay(engine: &Engine, scenario: &Scenario) -> Result<Vec<StepReport>, ReplayError> {
    let at = |path: String| {
        move |error: ContextError| ReplayError {
            path: path.clone(),
            error,
        }
    };
    let mut session = engine
        .session(scenario.context())
        .map_err(at(String::new()))?;
    let mut reports = Vec::with_capacity(scenario.steps.len());
    for (i, step) in scenario.steps.iter().enumerate() {
        let fail = at(format!("steps[{i}]"));
        let action = step.action().map_err(|m| ReplayError {
            path: format!("steps[{i}]"),
            error: ContextError {
                message: m,
                help: None,
            },
        })?;
        let status = step.status.unwrap_or_default();
        let activated = |s: &super::Session| -> Result<Value, ContextError> {
            let plan = s.peek_plan(engine)?;
            Ok(json!(
                plan.activated()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>()
            ))
        };
        let mut context = session.context().clone();
        let result = match action {
            "prompt" => {
                session.prompt(engine).map_err(&fail)?;
                json!({"activated": activated(&session).map_err(&fail)?})
            }
            "search" => {
                let s = step.search.clone().unwrap_or_default();
                let r = session
                    .search_with_status(engine, &s.query, &s.names, status)
                    .map_err(&fail)?;
                to_value(&r)
            }
            "load" => {
                let names = step.load.clone().unwrap_or_default();
                let r = session
                    .load_with_status(engine, &names, status)
                    .map_err(&fail)?;
                to_value(&r)
            }
            "call" => {
                let Some(c) = &step.call else { continue };
                let outcome = session.call(engine, &c.tool).map_err(&fail)?;
                if outcome == super::CallOutcome::Allowed {
                    session
                        .record_result(engine, &c.tool, c.status)
                        .map_err(&fail)?;
                }
                let mut v = to_value(&outcome);
                if let Value::Object(m) = &mut v {
                    m.insert("tool".into(), json!(c.tool));
                    m.insert("status".into(), to_value(&c.status));
                    if let Some(text) = outcome.not_found_text(&c.tool) {
                        m.insert("text".into(), json!(text));
                    }
                }
                v
            }
            "compact" => json!({"evidence_dropped": session.compact()}),
            "restart" => {
                session.restart(engine).map_err(&fail)?;
                json!({"activated": activated(&session).map_err(&fail)?})
            }
            "skill" => {
                let requested = step.skill.clone().unwrap_or_default();
                let skill = session.resolve_skill(engine, &requested).map_err(&fail)?;
                json!({"requested": requested, "skill": skill.map(|s| s.name)})
            }
            // `mode`, `bot`, `flags`, `grants`: a change of context.
            _ => {
                if let Some(mode) = &step.mode {
                    context.mode = mode.clone();
                }
                if let Some(bot) = &step.bot {
                    context.bot = bot.clone();
                }
                if let Some(flags) = &step.flags {
                    context.flags = flags.iter().cloned().collect();
                }
                if let Some(grants) = &step.grants {
                    context.grants = grants.clone();
                }
                session.set_context(engine, context).map_err(&fail)?;
                json!({"context": to_value(session.context()), "activated": activated(&session).map_err(&fail)?})
            }
        };
        let plan = session.plan(engine).map_err(&fail)?;
        let declared: Vec<String> = plan.declared().map(|t| t.name.clone()).collect();
        let failures = check(i, step, &declared, &result);
        reports.push(StepReport {
            step: i,
            action,
            declared,
            result,
            failures,
        });
    }
    Ok(reports)
}

/// What a step of each action reports besides `declared`: the keys its
/// `expect` may name. A key outside these would compare with nothing and
/// pass or fail by accident (`"activatd": null` always held).
fn output_keys(action: &str) -> &'static [&'static str] {
    match action {
        "prompt" | "restart" => &["activated"],
        "search" | "load" => &[
            "activated",
            "already_active",
            "unavailable",
            "matches",
            "over_limit",
            "remaining_deferred",
            "status",
            "text",
        ],
        "call" => &["outcome", "declared_next_step", "tool", "status", "text"],
        "compact" => &["evidence_dropped"],
        "skill" => &["requested", "skill"],
        // `mode`, `bot`, `flags`, `grants`: a change of context.
        _ => &["context", "activated"],
    }
}

/// Refuses an `expect` key the step's output does not have; the error is the
/// key and what is wrong with it.
fn check_expect_keys(step: &Step, action: &str) -> Result<(), (String, String)> {
    let keys = output_keys(action);
    let known = || std::iter::once("declared").chain(keys.iter().copied());
    for key in step.expect.iter().flat_map(|e| e.keys()) {
        if known().any(|k| k == key) {
            continue;
        }
        let hint = crate::diag::did_you_mean(key, known())
            .map(|d| format!(" ({d})"))
            .unwrap_or_default();
        let list: Vec<String> = known().map(|k| format!("`{k}`")).collect();
        return Err((
            key.clone(),
            format!(
                "a `{action}` step has no `{key}` to compare{hint}; it reports {}",
                list.join(", ")
            ),
        ));
    }
    Ok(())
}

/// Compares a step's `expect` with its output.
fn check(i: usize, step: &Step, declared: &[String], result: &Value) -> Vec<String> {
    let Some(expect) = &step.expect else {
        return Vec::new();
    };
    expect
        .iter()
        .filter_map(|(key, want)| {
            let got = if key == "declared" {
                json!(declared)
            } else {
                result.get(key).cloned().unwrap_or(Value::Null)
            };
            (got != *want).then(|| format!("steps[{i}].expect.{key}: expected {want}, got {got}"))
        })
        .collect()
}

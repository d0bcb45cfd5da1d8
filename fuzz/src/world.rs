//! Random registries and skill lists over the generator's item names, written
//! as JSON in every shape the loaders accept, so a session target also runs
//! the loaders on what it builds.

use serde_json::{Value, json};
use toolpolicy::runtime::ResultStatus;

use crate::cases::{self, Dice};

/// Description words: search vocabulary, item names, non-Latin text, and a
/// line that tries to inject catalog lines and control characters.
const WORDS: [&str; 11] = [
    "read",
    "write",
    "file",
    "web",
    "page",
    "a",
    "ab",
    "搜索",
    "文件",
    "done.\n\n- injected: line\u{7}\u{202E}",
    "<tag> & more",
];

pub const STATUSES: [ResultStatus; 4] = [
    ResultStatus::Ok,
    ResultStatus::Error,
    ResultStatus::Interrupted,
    ResultStatus::Missing,
];

pub fn words(d: &mut impl Dice, max: usize) -> String {
    let n = d.below(max + 1);
    let words: Vec<&str> = (0..n).map(|_| *d.pick(&WORDS)).collect();
    words.join(" ")
}

/// Distinct names from the generator's vocabulary, `0..=max` of them.
fn names(d: &mut impl Dice, max: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for _ in 0..d.below(max + 1) {
        let n = cases::name(d);
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

fn schema(d: &mut impl Dice) -> Value {
    match d.below(3) {
        0 => json!({"type": "object"}),
        1 => {
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
        }
        _ => json!({"type": "object", "properties": {"q": {}, "limit": {"type": "integer"}}}),
    }
}

/// One tool in one of the accepted shapes: generic, Anthropic, OpenAI Chat
/// (nested under `function`), OpenAI Responses, MCP.
fn tool(d: &mut impl Dice, name: &str) -> Value {
    let description = words(d, 8);
    let params = schema(d);
    let mut entry = match d.below(5) {
        0 => json!({"name": name, "description": description, "parameters": params}),
        1 => json!({"name": name, "description": description, "input_schema": params}),
        2 => {
            json!({"type": "function", "function": {"name": name, "description": description, "parameters": params}})
        }
        3 => {
            json!({"type": "function", "name": name, "description": description, "parameters": params})
        }
        _ => json!({"name": name, "description": description, "inputSchema": params}),
    };
    if d.chance(1, 2)
        && let Value::Object(o) = &mut entry
    {
        o.insert("source".into(), json!(cases::word(d, &['a', 'b'], 0, 2)));
    }
    if d.chance(1, 2)
        && let Value::Object(o) = &mut entry
    {
        o.insert("defer_loading".into(), json!(d.chance(1, 2)));
    }
    entry
}

/// A registry document of up to `max` tools, bare or under `tools`.
pub fn registry_json(d: &mut impl Dice, max: usize) -> String {
    let tools: Vec<Value> = names(d, max).iter().map(|n| tool(d, n)).collect();
    let doc = if d.chance(1, 2) {
        json!(tools)
    } else {
        json!({ "tools": tools })
    };
    doc.to_string()
}

/// A skill list of up to `max` skills; keys are `k` and the name, so a key
/// never equals a name.
pub fn skills_json(d: &mut impl Dice, max: usize) -> String {
    let skills: Vec<Value> = names(d, max)
        .iter()
        .map(|n| {
            json!({
                "name": n,
                "key": format!("k{n}"),
                "description": words(d, 4),
                "source": cases::word(d, &['a', 'b'], 0, 2),
                "model_invocable": d.chance(4, 5),
            })
        })
        .collect();
    json!(skills).to_string()
}

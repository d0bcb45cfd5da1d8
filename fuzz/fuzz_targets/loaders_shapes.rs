//! Structured registries and skill lists: every tool in one of the shapes the
//! loader accepts (generic, Anthropic, OpenAI Chat, OpenAI Responses, MCP),
//! with `source` and `defer_loading` on the entry or on its wrapper, the whole
//! bare or under `tools`. The loader must accept exactly the documents whose
//! names are non-empty, read as themselves and are unique, keep their order,
//! and read each field back; otherwise it must name the first bad entry.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};
use toolpolicy::{Registry, SkillList};

#[derive(Debug, Arbitrary)]
enum Shape {
    Generic,
    Anthropic,
    OpenAiChat,
    OpenAiResponses,
    Mcp,
}

#[derive(Debug, Arbitrary)]
struct GenTool {
    shape: Shape,
    name: String,
    description: Option<String>,
    /// Parameter names, each with whether it is required.
    params: Option<Vec<(String, bool)>>,
    source: Option<String>,
    defer_loading: Option<bool>,
    /// For OpenAI Chat: put `source` and `defer_loading` on the wrapper.
    on_wrapper: bool,
}

#[derive(Debug, Arbitrary)]
struct GenSkill {
    name: String,
    key: Option<String>,
    description: Option<String>,
    source: Option<String>,
    model_invocable: Option<bool>,
}

#[derive(Debug, Arbitrary)]
struct Input {
    tools: Vec<GenTool>,
    under_key: bool,
    skills: Vec<GenSkill>,
    skills_under_key: bool,
}

fn schema(params: &[(String, bool)]) -> Value {
    let properties: Map<String, Value> = params
        .iter()
        .map(|(p, _)| (p.clone(), json!({"type": "string"})))
        .collect();
    let required: Vec<&str> = params
        .iter()
        .filter(|p| p.1)
        .map(|p| p.0.as_str())
        .collect();
    json!({"type": "object", "properties": properties, "required": required})
}

fn insert_opt(o: &mut Map<String, Value>, key: &str, v: Option<Value>) {
    if let Some(v) = v {
        o.insert(key.into(), v);
    }
}

fn tool_json(t: &GenTool) -> Value {
    let mut inner = Map::new();
    inner.insert("name".into(), json!(t.name));
    insert_opt(
        &mut inner,
        "description",
        t.description.as_ref().map(|d| json!(d)),
    );
    if let Some(p) = &t.params {
        let key = match t.shape {
            Shape::Anthropic => "input_schema",
            Shape::Mcp => "inputSchema",
            _ => "parameters",
        };
        inner.insert(key.into(), schema(p));
    }
    let extras = [
        ("source", t.source.as_ref().map(|s| json!(s))),
        ("defer_loading", t.defer_loading.map(|b| json!(b))),
    ];
    match t.shape {
        Shape::OpenAiChat => {
            let mut outer = Map::new();
            outer.insert("type".into(), json!("function"));
            for (k, v) in extras {
                insert_opt(if t.on_wrapper { &mut outer } else { &mut inner }, k, v);
            }
            outer.insert("function".into(), Value::Object(inner));
            Value::Object(outer)
        }
        _ => {
            if matches!(t.shape, Shape::OpenAiResponses) {
                inner.insert("type".into(), json!("function"));
            }
            for (k, v) in extras {
                insert_opt(&mut inner, k, v);
            }
            Value::Object(inner)
        }
    }
}

/// A name the model would read as another (docs/registry.md): a control or
/// invisible character, white space at either end, or white space other
/// than single spaces.
fn unreadable(name: &str) -> bool {
    name.chars().any(toolpolicy::chars::is_hiding)
        || name.starts_with(char::is_whitespace)
        || name.ends_with(char::is_whitespace)
        || name.contains(|c: char| c.is_whitespace() && c != ' ')
        || name.contains("  ")
}

/// The entry the loader must name: the first with an empty name (entries are
/// read in order), else the first whose name is unreadable or repeats an
/// earlier one (checked in one pass once all are read).
fn first_bad<'a>(names: impl Iterator<Item = &'a str> + Clone) -> Option<usize> {
    let mut seen = std::collections::HashSet::new();
    let empty = names.clone().position(str::is_empty);
    empty.or_else(|| {
        names
            .enumerate()
            .find(|(_, n)| unreadable(n) || !seen.insert(*n))
            .map(|(i, _)| i)
    })
}

fn tools(input: &Input) {
    let entries: Vec<Value> = input.tools.iter().map(tool_json).collect();
    let doc = if input.under_key {
        json!({"tools": entries})
    } else {
        Value::Array(entries)
    };
    let loaded = Registry::from_json(&doc.to_string());
    match (
        first_bad(input.tools.iter().map(|t| t.name.as_str())),
        loaded,
    ) {
        (None, Ok(r)) => {
            assert_eq!(r.len(), input.tools.len());
            for (t, g) in r.tools().iter().zip(&input.tools) {
                assert_eq!(t.name, g.name);
                assert_eq!(t.description, g.description.clone().unwrap_or_default());
                assert_eq!(t.source, g.source);
                assert_eq!(t.defer_loading, g.defer_loading.unwrap_or(false));
                let want: Vec<(&str, bool)> = match &g.params {
                    Some(p) => p.iter().map(|(n, r)| (n.as_str(), *r)).collect(),
                    None => Vec::new(),
                };
                let mut got = t.parameter_names();
                let mut want_unique = want.clone();
                // A repeated parameter name is one property; keep the last.
                want_unique.reverse();
                let mut seen = std::collections::HashSet::new();
                want_unique.retain(|p| seen.insert(p.0));
                let required = |n: &str| want.iter().any(|p| p.0 == n && p.1);
                want_unique = want_unique
                    .into_iter()
                    .map(|(n, _)| (n, required(n)))
                    .collect();
                got.sort_unstable();
                want_unique.sort_unstable();
                assert_eq!(got, want_unique);
            }
        }
        (Some(i), Err(e)) => {
            let at = format!("tools[{i}]");
            assert!(
                e.path.starts_with(&at) && e.path.ends_with(".name"),
                "{e:?} for {at}"
            );
        }
        (bad, got) => panic!("first bad entry {bad:?}, loader {got:?}\n{doc}"),
    }
}

/// The first skill whose key is another skill's name or an earlier skill's
/// key: it would pick a different skill depending on what is listed.
fn first_bad_key(skills: &[GenSkill]) -> Option<usize> {
    let mut keys = std::collections::HashSet::new();
    skills.iter().enumerate().find_map(|(i, s)| {
        let key = s.key.as_deref()?;
        let other_name = skills
            .iter()
            .enumerate()
            .any(|(j, o)| j != i && o.name == key);
        (other_name || !keys.insert(key)).then_some(i)
    })
}

fn skills(input: &Input) {
    let entries: Vec<Value> = input
        .skills
        .iter()
        .map(|s| {
            let mut o = Map::new();
            o.insert("name".into(), json!(s.name));
            insert_opt(&mut o, "key", s.key.as_ref().map(|k| json!(k)));
            insert_opt(
                &mut o,
                "description",
                s.description.as_ref().map(|d| json!(d)),
            );
            insert_opt(&mut o, "source", s.source.as_ref().map(|d| json!(d)));
            insert_opt(
                &mut o,
                "model_invocable",
                s.model_invocable.map(|b| json!(b)),
            );
            Value::Object(o)
        })
        .collect();
    let doc = if input.skills_under_key {
        json!({"skills": entries})
    } else {
        Value::Array(entries)
    };
    let loaded = SkillList::from_json(&doc.to_string());
    let bad_name = first_bad(input.skills.iter().map(|s| s.name.as_str()));
    if let (None, Some(i)) = (bad_name, first_bad_key(&input.skills)) {
        match loaded {
            Err(e) => assert_eq!(e.path, format!("skills[{i}].key"), "{e:?}"),
            Ok(_) => panic!("skills[{i}].key picks two skills, and loaded:\n{doc}"),
        }
        return;
    }
    match (
        first_bad(input.skills.iter().map(|s| s.name.as_str())),
        loaded,
    ) {
        (None, Ok(list)) => {
            assert_eq!(list.len(), input.skills.len());
            for (s, g) in list.skills().iter().zip(&input.skills) {
                assert_eq!(s.name, g.name);
                assert_eq!(s.key, g.key);
                assert_eq!(s.description, g.description.clone().unwrap_or_default());
                assert_eq!(s.source, g.source);
                assert_eq!(s.model_invocable, g.model_invocable.unwrap_or(true));
            }
        }
        (Some(i), Err(e)) => assert_eq!(e.path, format!("skills[{i}].name"), "{e:?}"),
        (bad, got) => panic!("first bad entry {bad:?}, loader {got:?}\n{doc}"),
    }
}

fuzz_target!(|input: Input| {
    tools(&input);
    skills(&input);
});

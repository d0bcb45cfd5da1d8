//! The JSON Schemas under schemas/ (for editors to validate the gateway's
//! files, test files and replay scenarios) accept every bundled example and
//! refuse what the loaders refuse. Checked by a small validator of the
//! keywords the schemas use; a keyword it does not know fails the test, so
//! a schema cannot grow a rule that goes unchecked here.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn schema(name: &str) -> Value {
    let path = root().join("schemas").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The problems of `doc` against `s` (a part of the schema `top`), each
/// with its JSON path.
fn validate(top: &Value, s: &Value, doc: &Value, path: &str, out: &mut Vec<String>) {
    let Some(obj) = s.as_object() else {
        return;
    };
    for (key, rule) in obj {
        match key.as_str() {
            "$schema" | "$id" | "title" | "description" | "$defs" => {}
            "$ref" => {
                let name = rule
                    .as_str()
                    .unwrap()
                    .strip_prefix("#/$defs/")
                    .expect("a local $ref");
                validate(top, &top["$defs"][name], doc, path, out);
            }
            "type" => {
                let types: Vec<&str> = match rule {
                    Value::String(t) => vec![t.as_str()],
                    Value::Array(a) => a.iter().map(|t| t.as_str().unwrap()).collect(),
                    _ => panic!("bad type {rule}"),
                };
                let is = |t: &str| match t {
                    "object" => doc.is_object(),
                    "array" => doc.is_array(),
                    "string" => doc.is_string(),
                    "boolean" => doc.is_boolean(),
                    "null" => doc.is_null(),
                    "integer" => doc.is_i64() || doc.is_u64(),
                    "number" => doc.is_number(),
                    other => panic!("unknown type {other}"),
                };
                if !types.iter().any(|t| is(t)) {
                    out.push(format!(
                        "{path}: expected {}, got {doc}",
                        types.join(" or ")
                    ));
                }
            }
            "enum" => {
                if !rule.as_array().unwrap().contains(doc) {
                    out.push(format!("{path}: {doc} is not one of {rule}"));
                }
            }
            "required" => {
                if let Some(d) = doc.as_object() {
                    for k in rule.as_array().unwrap() {
                        if !d.contains_key(k.as_str().unwrap()) {
                            out.push(format!("{path}: missing {k}"));
                        }
                    }
                }
            }
            "properties" => {
                if let Some(d) = doc.as_object() {
                    for (k, sub) in rule.as_object().unwrap() {
                        if let Some(v) = d.get(k) {
                            validate(top, sub, v, &format!("{path}.{k}"), out);
                        }
                    }
                }
            }
            "additionalProperties" => {
                let known = obj.get("properties").and_then(Value::as_object);
                if let Some(d) = doc.as_object() {
                    for (k, v) in d {
                        if known.is_some_and(|p| p.contains_key(k)) {
                            continue;
                        }
                        match rule {
                            Value::Bool(false) => out.push(format!("{path}: unknown key `{k}`")),
                            Value::Bool(true) => {}
                            sub => validate(top, sub, v, &format!("{path}.{k}"), out),
                        }
                    }
                }
            }
            "items" => {
                if let Some(a) = doc.as_array() {
                    for (i, v) in a.iter().enumerate() {
                        validate(top, rule, v, &format!("{path}[{i}]"), out);
                    }
                }
            }
            "anyOf" | "oneOf" => {
                let passing = rule
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|sub| {
                        let mut p = Vec::new();
                        validate(top, sub, doc, path, &mut p);
                        p.is_empty()
                    })
                    .count();
                let ok = if key == "anyOf" {
                    passing > 0
                } else {
                    passing == 1
                };
                if !ok {
                    out.push(format!("{path}: {passing} of the `{key}` schemas match"));
                }
            }
            other => panic!("the validator does not know the keyword `{other}`"),
        }
    }
}

fn problems(schema_name: &str, doc: &Value) -> Vec<String> {
    let s = schema(schema_name);
    let mut out = Vec::new();
    validate(&s, &s, doc, "$", &mut out);
    out
}

fn files(dir: &Path, ends: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, ends, out);
        } else if p.to_string_lossy().ends_with(ends) {
            out.push(p);
        }
    }
}

fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    if path.extension().is_some_and(|e| e == "toml") {
        let v: toml::Value =
            toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_json::to_value(v).unwrap()
    } else {
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }
}

/// Every file of `ends` under `dirs`, each valid; at least `least` of them.
fn all_valid(schema_name: &str, dirs: &[&str], ends: &str, least: usize) {
    let mut found = Vec::new();
    for d in dirs {
        files(&root().join(d), ends, &mut found);
    }
    assert!(found.len() >= least, "only {found:?} for {schema_name}");
    for f in &found {
        let p = problems(schema_name, &read(f));
        assert!(
            p.is_empty(),
            "{} against {schema_name}: {p:#?}",
            f.display()
        );
    }
}

#[test]
fn every_bundled_servers_and_clients_file_validates() {
    all_valid("servers.schema.json", &["examples"], "servers.json", 2);
    all_valid("clients.schema.json", &["examples"], "clients.json", 1);
}

#[test]
fn every_bundled_test_file_validates() {
    all_valid(
        "test.schema.json",
        &["policies", "examples"],
        ".test.toml",
        5,
    );
}

#[test]
fn every_bundled_replay_scenario_validates() {
    all_valid("replay.schema.json", &["tests/scenarios"], ".json", 5);
    let p = problems(
        "replay.schema.json",
        &read(&root().join("examples/gateway/review-session.json")),
    );
    assert!(p.is_empty(), "{p:#?}");
}

#[test]
fn the_schemas_refuse_what_the_loaders_refuse() {
    let refused = [
        (
            "servers.schema.json",
            json!({"mcpServers": {"a": {"args": ["x"]}}}),
        ),
        (
            "servers.schema.json",
            json!({"mcpServers": {"a": {"type": "sse", "url": "http://x"}}}),
        ),
        ("servers.schema.json", json!({})),
        (
            "clients.schema.json",
            json!({"clients": {"a": {"token": "t", "mdoe": "x"}}}),
        ),
        (
            "clients.schema.json",
            json!({"clients": {"a": {"token": "t", "token_sha256": "d"}}}),
        ),
        (
            "clients.schema.json",
            json!({"jwt": {"issuer": "i", "audience": "a"}}),
        ),
        (
            "test.schema.json",
            json!({"case": [{"item": "Read", "expect": "declared"}]}),
        ),
        ("test.schema.json", json!({"case": [{"item": "Read"}]})),
        ("test.schema.json", json!({"cases": []})),
        (
            "replay.schema.json",
            json!({"steps": [{"call": {"tool": "x", "status": "fine"}}]}),
        ),
        ("replay.schema.json", json!({"steps": [{"promt": "hi"}]})),
        ("replay.schema.json", json!({"mode": "agent"})),
    ];
    for (s, doc) in refused {
        assert!(!problems(s, &doc).is_empty(), "{s} accepts {doc}");
    }
}

#[test]
fn the_test_schema_names_every_exposure_and_cause() {
    let s = schema("test.schema.json");
    let case = &s["$defs"]["case"]["properties"];
    for e in case["expect"]["enum"].as_array().unwrap() {
        serde_json::from_value::<toolpolicy::Exposure>(e.clone()).unwrap();
    }
    let causes = case["cause"]["enum"].as_array().unwrap();
    for c in causes {
        assert!(
            toolpolicy::CauseKind::parse(c.as_str().unwrap()).is_some(),
            "{c}"
        );
    }
    // And no cause is missing.
    assert_eq!(causes.len(), toolpolicy::CauseKind::ALL.len());
}

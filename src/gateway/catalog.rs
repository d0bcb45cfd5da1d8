//! The gateway's registry (docs/gateway.md): every child's tools under
//! `NAME__tool`, with `source = mcp:NAME`, in servers-file order and then
//! each server's own order, and the routes back to the child that owns each.
//! Descriptions and input schemas are kept verbatim; the rest of an MCP tool
//! (`title`, `annotations`, `outputSchema`, `_meta`...) rides in
//! [`Tool::extra`] and goes back to the client unchanged.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value, json};

use crate::registry::{Registry, Tool, name_problem};

/// Where a registry tool is served: the child's index in the servers file
/// and the tool's name as the child knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub server: usize,
    pub tool: String,
}

/// A registry built from the children's tool lists.
#[derive(Debug, Default)]
pub struct Catalog {
    pub registry: Registry,
    pub routes: HashMap<String, Route>,
    /// Tools left out, each naming its server and tool.
    pub warnings: Vec<String>,
}

/// The registry name of a child's tool.
pub fn full_name(server: &str, tool: &str) -> String {
    format!("{server}__{tool}")
}

/// Builds the registry from each server's name and its `tools/list` entries
/// (MCP tool objects), in the order given. A tool whose name the registry
/// would refuse is skipped with a warning; it never costs the other tools.
pub fn build<'a>(servers: impl IntoIterator<Item = (&'a str, &'a [Value])>) -> Catalog {
    let mut tools = Vec::new();
    let mut routes = HashMap::new();
    let mut warnings = Vec::new();
    for (server_index, (server, listed)) in servers.into_iter().enumerate() {
        let mut seen = HashSet::new();
        for (i, entry) in listed.iter().enumerate() {
            let Some(name) = entry.get("name").and_then(Value::as_str) else {
                warnings.push(format!("server `{server}`: tool {i} has no name, skipped"));
                continue;
            };
            let shown = crate::chars::escape(name);
            if !seen.insert(name) {
                warnings.push(format!(
                    "server `{server}`: tool `{shown}` is listed twice, the second skipped"
                ));
                continue;
            }
            let full = full_name(server, name);
            if name.is_empty() {
                warnings.push(format!(
                    "server `{server}`: a tool has an empty name, skipped"
                ));
                continue;
            }
            if let Some(why) = name_problem(&full) {
                warnings.push(format!("server `{server}`: tool `{shown}` skipped: {why}"));
                continue;
            }
            tools.push(tool(&full, server, entry));
            routes.insert(
                full,
                Route {
                    server: server_index,
                    tool: name.to_string(),
                },
            );
        }
    }
    match Registry::new(tools) {
        Ok(registry) => Catalog {
            // A server's annotation that is not a boolean counts as absent
            // for `hint:` selectors; the operator hears of it once per listing.
            warnings: warnings
                .into_iter()
                .chain(
                    registry
                        .warnings()
                        .iter()
                        .filter(|w| w.code == crate::diag::Code::BadAnnotation)
                        .map(|w| w.message.clone()),
                )
                .collect(),
            registry,
            routes,
        },
        // Unreachable by the checks above; an empty registry beats a panic.
        Err(e) => {
            warnings.push(format!("the gateway's registry could not be built: {e}"));
            Catalog {
                warnings,
                ..Catalog::default()
            }
        }
    }
}

fn tool(full: &str, server: &str, entry: &Value) -> Tool {
    let mut extra: Map<String, Value> = entry.as_object().cloned().unwrap_or_default();
    extra.remove("name");
    let description = match extra.remove("description") {
        Some(Value::String(s)) => s,
        _ => String::new(),
    };
    let parameters = extra
        .remove("inputSchema")
        .unwrap_or_else(|| json!({"type": "object"}));
    Tool {
        name: full.to_string(),
        description,
        parameters,
        source: Some(format!("mcp:{server}")),
        defer_loading: false,
        extra,
        ..Tool::default()
    }
}

/// A registry tool (or one of the engine's own) as an MCP `tools/list` entry.
pub fn to_mcp(tool: &Tool) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), Value::String(tool.name.clone()));
    if !tool.description.is_empty() {
        out.insert(
            "description".into(),
            Value::String(tool.description.clone()),
        );
    }
    let schema = if tool.parameters.is_object() {
        tool.parameters.clone()
    } else {
        json!({"type": "object"})
    };
    out.insert("inputSchema".into(), schema);
    for (k, v) in &tool.extra {
        out.entry(k.clone()).or_insert_with(|| v.clone());
    }
    Value::Object(out)
}

/// A registry as the file the other commands read with `--registry`: an
/// object with a `tools` array of MCP tool entries, each with its `source`,
/// in registry order. Reading it back gives the same registry.
pub fn to_document(registry: &Registry) -> Value {
    let tools: Vec<Value> = registry
        .tools()
        .iter()
        .map(|t| {
            let mut entry = to_mcp(t);
            if let (Value::Object(map), Some(source)) = (&mut entry, &t.source) {
                map.insert("source".into(), Value::String(source.clone()));
            }
            entry
        })
        .collect();
    json!({ "tools": tools })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sources_order_and_verbatim_fields() {
        let b: Value = serde_json::from_str(
            r#"{"name": "b", "description": "B.", "annotations": {"readOnlyHint": true},
                "inputSchema": {"type": "object", "properties": {"n": {"type": "number", "maximum": 1e400}}}}"#,
        )
        .unwrap();
        let a = [b, json!({"name": "a"})];
        let z = [
            json!({"name": "bad\u{202e}name"}),
            json!({"name": "ok"}),
            json!({"name": "ok"}),
        ];
        let c = build([("zeta", &z[..]), ("alpha", &a[..])]);
        let names: Vec<&str> = c.registry.tools().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["zeta__ok", "alpha__b", "alpha__a"]);
        assert_eq!(
            c.routes["alpha__b"],
            Route {
                server: 1,
                tool: "b".into()
            }
        );
        let b = c.registry.get("alpha__b").unwrap();
        assert_eq!(b.source.as_deref(), Some("mcp:alpha"));
        let back = to_mcp(b);
        assert_eq!(back["annotations"], json!({"readOnlyHint": true}));
        let max = back["inputSchema"]["properties"]["n"]["maximum"].to_string();
        assert!(max.starts_with("1e") && max.ends_with("400"), "{max}");
        assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
        assert!(c.warnings[0].starts_with("server `zeta`: tool `bad"));
        assert!(c.warnings[1].contains("listed twice"));
    }

    /// A server's annotations become the tool's hints; one that is not a
    /// boolean is a warning naming the tool and counts as absent.
    #[test]
    fn annotations_become_hints_and_bad_ones_are_said() {
        use crate::hint::Hint;
        let tools = [
            json!({"name": "read", "annotations": {"readOnlyHint": true}}),
            json!({"name": "odd", "annotations": {"readOnlyHint": "yes"}}),
        ];
        let c = build([("fs", &tools[..])]);
        assert!(
            c.registry
                .get("fs__read")
                .unwrap()
                .hints
                .contains(Hint::ReadOnly)
        );
        let odd = c.registry.get("fs__odd").unwrap();
        assert!(!odd.hints.contains(Hint::ReadOnly) && odd.hints.contains(Hint::Destructive));
        assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
        assert!(
            c.warnings[0].contains("`readOnlyHint` of tool `fs__odd`"),
            "{:?}",
            c.warnings
        );
    }

    #[test]
    fn the_written_registry_reads_back_the_same() {
        let listed = [
            json!({"name": "read", "title": "Read", "description": "Read a file.",
                   "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
                   "annotations": {"readOnlyHint": true}}),
            json!({"name": "bare"}),
        ];
        let c = build([("fs", &listed[..])]);
        let text = serde_json::to_string(&to_document(&c.registry)).unwrap();
        let back = Registry::from_json(&text).unwrap();
        assert_eq!(back.tools(), c.registry.tools());
    }
}

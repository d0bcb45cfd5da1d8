//! What changed in a tool's definition between two versions of it: the
//! comparison behind the gateway's report of tools that changed after start,
//! and one a lock file of pinned definitions can reuse.

use std::fmt;

use serde::Serialize;
use serde_json::Value;

use super::{Registry, Tool};

/// A part of a tool's definition the model reads or a client acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolField {
    Name,
    /// MCP's `title`.
    Title,
    Description,
    /// The parameters' JSON Schema.
    InputSchema,
    /// MCP's `outputSchema`.
    OutputSchema,
    /// MCP's `annotations` (`readOnlyHint`, `destructiveHint`...).
    Annotations,
}

impl ToolField {
    /// Every field, in the order reports name them.
    pub const ALL: [ToolField; 6] = [
        ToolField::Name,
        ToolField::Title,
        ToolField::Description,
        ToolField::InputSchema,
        ToolField::OutputSchema,
        ToolField::Annotations,
    ];

    /// The field in words: `input schema`.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolField::Name => "name",
            ToolField::Title => "title",
            ToolField::Description => "description",
            ToolField::InputSchema => "input schema",
            ToolField::OutputSchema => "output schema",
            ToolField::Annotations => "annotations",
        }
    }

    /// The field's value in `tool`; `None` for one it does not give.
    fn of(self, tool: &Tool) -> Option<Value> {
        match self {
            ToolField::Name => Some(Value::String(tool.name.clone())),
            ToolField::Description => Some(Value::String(tool.description.clone())),
            ToolField::InputSchema => Some(tool.parameters.clone()),
            ToolField::Title => tool.extra.get("title").cloned(),
            ToolField::OutputSchema => tool.extra.get("outputSchema").cloned(),
            ToolField::Annotations => tool.extra.get("annotations").cloned(),
        }
    }
}

impl fmt::Display for ToolField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The fields in which `new` differs from `old`, in [`ToolField::ALL`]'s
/// order; empty when the two definitions are the same in all of them. A
/// field one gives and the other does not has changed. Schemas compare as
/// JSON values: the order of an object's keys does not count.
pub fn changed_fields(old: &Tool, new: &Tool) -> Vec<ToolField> {
    ToolField::ALL
        .into_iter()
        .filter(|f| !same(f.of(old), f.of(new)))
        .collect()
}

fn same(a: Option<Value>, b: Option<Value>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => json_eq(&a, &b),
        (a, b) => a.is_none() && b.is_none(),
    }
}

/// JSON equality whatever the order of object keys (the registry keeps
/// the order it was given).
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(k, v)| b.get(k).is_some_and(|w| json_eq(v, w)))
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(v, w)| json_eq(v, w))
        }
        _ => a == b,
    }
}

/// Every tool of `new` that `old` has under the same name with another
/// definition, in `new`'s order, with the fields that changed. Tools added
/// or removed are not in it.
pub fn changed_tools<'a>(old: &Registry, new: &'a Registry) -> Vec<(&'a Tool, Vec<ToolField>)> {
    new.tools()
        .iter()
        .filter_map(|tool| {
            let before = old.get(&tool.name)?;
            let fields = changed_fields(before, tool);
            (!fields.is_empty()).then_some((tool, fields))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(entry: Value) -> Tool {
        Registry::from_json(&json!([entry]).to_string())
            .unwrap()
            .tools()[0]
            .clone()
    }

    #[test]
    fn each_field_that_changed_is_named() {
        let base = json!({"name": "t", "title": "T", "description": "Does it.",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "string"}}},
            "outputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}});
        let old = tool(base.clone());
        assert_eq!(changed_fields(&old, &old), []);
        // Key order is not a change.
        let reordered = tool(json!({"annotations": {"readOnlyHint": true}, "name": "t",
            "inputSchema": {"properties": {"a": {"type": "string"}}, "type": "object"},
            "description": "Does it.", "outputSchema": {"type": "object"}, "title": "T"}));
        assert_eq!(changed_fields(&old, &reordered), []);
        for (key, value, field) in [
            ("name", json!("u"), ToolField::Name),
            ("title", json!("U"), ToolField::Title),
            ("description", json!("Does more."), ToolField::Description),
            (
                "inputSchema",
                json!({"type": "object"}),
                ToolField::InputSchema,
            ),
            (
                "outputSchema",
                json!({"type": "object", "properties": {}}),
                ToolField::OutputSchema,
            ),
            (
                "annotations",
                json!({"readOnlyHint": false}),
                ToolField::Annotations,
            ),
        ] {
            let mut changed = base.clone();
            changed[key] = value;
            assert_eq!(changed_fields(&old, &tool(changed)), [field], "{key}");
            let mut removed = base.clone();
            if key != "name" {
                removed.as_object_mut().unwrap().remove(key);
                assert_eq!(
                    changed_fields(&old, &tool(removed)),
                    [field],
                    "{key} removed"
                );
            }
        }
        let mut all = base.clone();
        all["description"] = json!("Other.");
        all["annotations"] = json!({});
        all["inputSchema"] = json!({"type": "object", "required": []});
        let fields = changed_fields(&old, &tool(all));
        let shown: Vec<&str> = fields.iter().map(|f| f.as_str()).collect();
        assert_eq!(shown, ["description", "input schema", "annotations"]);
    }

    #[test]
    fn changed_tools_pairs_by_name_and_skips_added_and_removed() {
        let old = Registry::from_json(
            r#"[{"name": "a", "description": "A."}, {"name": "b"}, {"name": "gone"}]"#,
        )
        .unwrap();
        let new = Registry::from_json(
            r#"[{"name": "new"}, {"name": "b", "description": "B now."}, {"name": "a", "description": "A."}]"#,
        )
        .unwrap();
        let changed = changed_tools(&old, &new);
        assert_eq!(changed.len(), 1);
        assert_eq!(changed[0].0.name, "b");
        assert_eq!(changed[0].1, [ToolField::Description]);
    }
}

//! Edits of a TOML settings file through `toml_edit`, which keeps every
//! comment, key order and format the edits do not touch. A table the export
//! owns (`[mcp_servers.NAME]`) is replaced whole, keeping the comments above
//! its header; other tables and keys are left as they were.

use serde_json::Value;
use toml_edit::{DocumentMut, Item, Table};

use super::Edit;

fn value(v: &Value) -> Result<toml_edit::Value, String> {
    Ok(match v {
        Value::String(s) => s.as_str().into(),
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.into(),
            None => n
                .as_f64()
                .ok_or_else(|| format!("number {n} has no TOML form"))?
                .into(),
        },
        Value::Array(a) => {
            let mut arr = toml_edit::Array::new();
            for x in a {
                arr.push(value(x)?);
            }
            arr.into()
        }
        Value::Object(m) => {
            let mut t = toml_edit::InlineTable::new();
            for (k, x) in m {
                t.insert(k, value(x)?);
            }
            t.into()
        }
        Value::Null => return Err("null has no TOML form".into()),
    })
}

/// An object as a `[table]`, its own objects inline.
fn table(m: &serde_json::Map<String, Value>) -> Result<Table, String> {
    let mut t = Table::new();
    for (k, x) in m {
        t.insert(k, Item::Value(value(x)?));
    }
    Ok(t)
}

/// The table at `path`, made (implicit, so that no empty `[a]` header is
/// written) where missing.
fn parent<'a>(doc: &'a mut DocumentMut, path: &[String]) -> Result<&'a mut Table, String> {
    let mut t = doc.as_table_mut();
    for (i, k) in path.iter().enumerate() {
        if !t.contains_key(k) {
            let mut new = Table::new();
            new.set_implicit(true);
            t.insert(k, Item::Table(new));
        }
        let item = t.get_mut(k).expect("inserted above");
        t = item
            .as_table_mut()
            .ok_or_else(|| format!("`{}` is not a table", path[..=i].join(".")))?;
    }
    Ok(t)
}

fn set(doc: &mut DocumentMut, path: &[String], v: &Value) -> Result<(), String> {
    let (last, up) = path.split_last().ok_or("an empty key path")?;
    let t = parent(doc, up)?;
    let item = match v {
        Value::Object(m) => {
            let mut new = table(m)?;
            if let Some(old) = t.get(last).and_then(Item::as_table) {
                *new.decor_mut() = old.decor().clone();
            }
            Item::Table(new)
        }
        other => Item::Value(value(other)?),
    };
    t.insert(last, item);
    Ok(())
}

/// `edits` applied to `existing` (empty: a new file).
pub fn apply(existing: &str, edits: &[Edit]) -> Result<String, String> {
    let mut doc: DocumentMut = existing
        .parse()
        .map_err(|e: toml_edit::TomlError| format!("not TOML: {e}"))?;
    for edit in edits {
        match edit {
            Edit::Set(path, v) => set(&mut doc, path, v)?,
            Edit::List { path, items, owned } => {
                let (last, up) = path.split_last().ok_or("an empty key path")?;
                let t = parent(&mut doc, up)?;
                let mut kept: Vec<Value> = t
                    .get(last)
                    .and_then(Item::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|v| v.as_str())
                            .filter(|s| !owned.claims(s))
                            .map(|s| Value::String(s.to_string()))
                            .collect()
                    })
                    .unwrap_or_default();
                kept.extend(items.iter().cloned().map(Value::String));
                t.insert(last, Item::Value(value(&Value::Array(kept))?));
            }
            Edit::Entries { .. } => {
                return Err("a TOML export owns whole tables, not entries".into());
            }
        }
    }
    let mut out = doc.to_string();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn path(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn foreign_tables_and_comments_stay() {
        let text = "# my model\nmodel = \"o3\"\n\n# the files\n[mcp_servers.fs]\ncommand = \"old\"\n\n[other]\nx = 1 # kept\n";
        let out = apply(
            text,
            &[Edit::Set(
                path(&["mcp_servers", "fs"]),
                json!({"command": "npx", "env": {"A": "1"}}),
            )],
        )
        .unwrap();
        assert!(
            out.starts_with("# my model\nmodel = \"o3\"\n\n# the files\n[mcp_servers.fs]\n"),
            "{out}"
        );
        assert!(out.contains("command = \"npx\""), "{out}");
        assert!(!out.contains("old"), "{out}");
        assert!(out.contains("x = 1 # kept"), "{out}");
        let parsed: toml::Value = toml::from_str(&out).unwrap();
        assert_eq!(parsed["mcp_servers"]["fs"]["env"]["A"].as_str(), Some("1"));
    }

    #[test]
    fn bad_toml_is_an_error() {
        assert!(apply("a = ", &[]).unwrap_err().starts_with("not TOML"));
    }
}

//! A lock against a registry: which tools were added, removed or changed,
//! and each change in words.

use std::collections::HashMap;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

use super::file::Lock;
use crate::registry::{Registry, Tool, ToolField, changed_fields};

/// The most schema paths one change lists; past it, a count.
pub const MAX_PATHS: usize = 20;

/// A tool the registry has and the lock does not (or the other way round).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Added {
    pub name: String,
    pub source: Option<String>,
}

/// A tool whose `source` is not the one its entry records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Moved {
    pub name: String,
    pub from: Option<String>,
    pub to: Option<String>,
}

/// A tool whose digest is not its entry's, with what differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Changed {
    pub name: String,
    pub source: Option<String>,
    /// Empty when the entry keeps no definition to compare with.
    pub fields: Vec<FieldChange>,
}

/// One field that differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldChange {
    pub field: ToolField,
    #[serde(flatten)]
    pub detail: Detail,
}

/// What differs in a field, in the terms a reviewer reads it in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Detail {
    /// A description: the words added and removed, each as often as it was.
    Words {
        added: Vec<String>,
        removed: Vec<String>,
    },
    /// A schema: the JSON paths that differ (`$.properties.note`), at most
    /// [`MAX_PATHS`], and how many more there are.
    Paths { paths: Vec<String>, more: usize },
    /// Annotations: each that differs, old and new (`None` when absent).
    Hints { hints: Vec<HintChange> },
    /// A name or title: the old and new value.
    Value {
        old: Option<Value>,
        new: Option<Value>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HintChange {
    pub annotation: String,
    pub old: Option<Value>,
    pub new: Option<Value>,
}

/// A lock against a registry. Every list is in name order.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Comparison {
    /// Tools of the registry the lock has no entry for.
    pub added: Vec<Added>,
    /// Entries of the lock the registry has no tool for.
    pub removed: Vec<Added>,
    /// Tools whose digest differs from their entry's: the unlocked ones,
    /// with `added`.
    pub changed: Vec<Changed>,
    /// Tools whose definition is the locked one but whose source is not.
    pub moved: Vec<Moved>,
    /// Tools whose definition and source match their entry.
    pub locked: usize,
}

impl Comparison {
    /// Whether writing the lock again would change nothing.
    pub fn is_clean(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.changed.is_empty()
            && self.moved.is_empty()
    }
}

/// Compares a lock with a registry: what `policy lock --check` reports.
pub fn compare(lock: &Lock, registry: &Registry) -> Comparison {
    let mut out = Comparison::default();
    let mut tools: Vec<&Tool> = registry.tools().iter().collect();
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    for tool in tools {
        let Some(entry) = lock.get(&tool.name) else {
            out.added.push(Added {
                name: tool.name.clone(),
                source: tool.source.clone(),
            });
            continue;
        };
        if entry.digest != super::digest(tool) {
            let fields = entry
                .tool()
                .map(|old| describe(&old, tool))
                .unwrap_or_default();
            out.changed.push(Changed {
                name: tool.name.clone(),
                source: tool.source.clone(),
                fields,
            });
        } else if entry.source != tool.source {
            out.moved.push(Moved {
                name: tool.name.clone(),
                from: entry.source.clone(),
                to: tool.source.clone(),
            });
        } else {
            out.locked += 1;
        }
    }
    out.removed = lock
        .entries()
        .iter()
        .filter(|e| registry.get(&e.name).is_none())
        .map(|e| Added {
            name: e.name.clone(),
            source: e.source.clone(),
        })
        .collect();
    out
}

/// Each field in which `new` differs from `old`, in words: the fields
/// `registry::changed_fields` finds, each with its detail.
pub fn describe(old: &Tool, new: &Tool) -> Vec<FieldChange> {
    changed_fields(old, new)
        .into_iter()
        .map(|field| FieldChange {
            field,
            detail: detail(field, old, new),
        })
        .collect()
}

fn detail(field: ToolField, old: &Tool, new: &Tool) -> Detail {
    match field {
        ToolField::Description => {
            let (added, removed) = words(&old.description, &new.description);
            Detail::Words { added, removed }
        }
        ToolField::InputSchema => paths_detail(Some(&old.parameters), Some(&new.parameters)),
        ToolField::OutputSchema => {
            paths_detail(old.extra.get("outputSchema"), new.extra.get("outputSchema"))
        }
        ToolField::Annotations => Detail::Hints {
            hints: hints(old.extra.get("annotations"), new.extra.get("annotations")),
        },
        ToolField::Name => Detail::Value {
            old: Some(Value::String(old.name.clone())),
            new: Some(Value::String(new.name.clone())),
        },
        ToolField::Title => Detail::Value {
            old: old.extra.get("title").cloned(),
            new: new.extra.get("title").cloned(),
        },
    }
}

/// The words of `new` that `old` does not have and the other way round,
/// counted: a word written twice where it was once is added once. In the
/// order they stand.
pub fn words(old: &str, new: &str) -> (Vec<String>, Vec<String>) {
    fn minus<'a>(a: &'a str, b: &'a str) -> Vec<String> {
        let mut left: HashMap<&str, usize> = HashMap::new();
        for w in b.split_whitespace() {
            *left.entry(w).or_default() += 1;
        }
        a.split_whitespace()
            .filter(|w| match left.get_mut(w) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    false
                }
                _ => true,
            })
            .map(str::to_string)
            .collect()
    }
    (minus(new, old), minus(old, new))
}

fn paths_detail(old: Option<&Value>, new: Option<&Value>) -> Detail {
    let mut paths = Vec::new();
    let mut more = 0;
    match (old, new) {
        (Some(a), Some(b)) => diff_paths("$", a, b, &mut paths, &mut more),
        _ => paths.push("$".to_string()),
    }
    Detail::Paths { paths, more }
}

fn push(path: String, paths: &mut Vec<String>, more: &mut usize) {
    if paths.len() < MAX_PATHS {
        paths.push(path);
    } else {
        *more += 1;
    }
}

/// `$.properties.note`; a key that is not a plain word is bracketed and quoted.
fn child(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
        && !key.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        format!("{path}.{key}")
    } else {
        format!("{path}[{}]", Value::String(key.to_string()))
    }
}

fn diff_paths(path: &str, a: &Value, b: &Value, paths: &mut Vec<String>, more: &mut usize) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    Some(w) => diff_paths(&child(path, k), v, w, paths, more),
                    None => push(child(path, k), paths, more),
                }
            }
            for k in y.keys().filter(|k| !x.contains_key(*k)) {
                push(child(path, k), paths, more);
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            for i in 0..x.len().max(y.len()) {
                match (x.get(i), y.get(i)) {
                    (Some(v), Some(w)) => diff_paths(&format!("{path}[{i}]"), v, w, paths, more),
                    _ => push(format!("{path}[{i}]"), paths, more),
                }
            }
        }
        (Value::Number(x), Value::Number(y)) => {
            // `1` and `1.0` are one number to JSON and to the digest.
            let same = x == y || x.as_f64().is_some_and(|f| Some(f) == y.as_f64());
            if !same {
                push(path.to_string(), paths, more);
            }
        }
        _ if a == b => {}
        _ => push(path.to_string(), paths, more),
    }
}

fn hints(old: Option<&Value>, new: Option<&Value>) -> Vec<HintChange> {
    let empty = serde_json::Map::new();
    // When one is absent or not an object, every annotation of either differs.
    let both_objects = matches!((old, new), (Some(Value::Object(_)), Some(Value::Object(_))));
    let a = old.and_then(Value::as_object).unwrap_or(&empty);
    let b = new.and_then(Value::as_object).unwrap_or(&empty);
    let mut out: Vec<HintChange> = a
        .iter()
        .filter(|(k, v)| !both_objects || b.get(*k) != Some(*v))
        .map(|(k, v)| HintChange {
            annotation: k.clone(),
            old: Some(v.clone()),
            new: b.get(k).cloned(),
        })
        .collect();
    out.extend(
        b.iter()
            .filter(|(k, _)| !a.contains_key(*k))
            .map(|(k, v)| HintChange {
                annotation: k.clone(),
                old: None,
                new: Some(v.clone()),
            }),
    );
    out
}

fn shown(v: &Option<Value>) -> String {
    match v {
        None => "absent".to_string(),
        Some(v) => crate::chars::escape(&v.to_string()).into_owned(),
    }
}

fn quoted_words(words: &[String], sign: char) -> String {
    words
        .iter()
        .map(|w| format!("{sign}`{}`", crate::chars::escape(w)))
        .collect::<Vec<_>>()
        .join(" ")
}

impl fmt::Display for FieldChange {
    /// `description: +`IMPORTANT:` -`Reads``, `input schema: $.properties.note`,
    /// `annotations: readOnlyHint false -> true`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.field)?;
        match &self.detail {
            Detail::Words { added, removed } => {
                let mut parts = Vec::new();
                if !added.is_empty() {
                    parts.push(format!("words added {}", quoted_words(added, '+')));
                }
                if !removed.is_empty() {
                    parts.push(format!("words removed {}", quoted_words(removed, '-')));
                }
                if parts.is_empty() {
                    parts.push("white space only".to_string());
                }
                write!(f, ": {}", parts.join("; "))
            }
            Detail::Paths { paths, more } => {
                let list: Vec<String> = paths
                    .iter()
                    .map(|p| format!("`{}`", crate::chars::escape(p)))
                    .collect();
                write!(f, ": {}", list.join(", "))?;
                if *more > 0 {
                    write!(f, " and {more} more")?;
                }
                Ok(())
            }
            Detail::Hints { hints } => {
                let list: Vec<String> = hints
                    .iter()
                    .map(|h| {
                        format!(
                            "`{}` {} -> {}",
                            crate::chars::escape(&h.annotation),
                            shown(&h.old),
                            shown(&h.new)
                        )
                    })
                    .collect();
                write!(f, ": {}", list.join(", "))
            }
            Detail::Value { old, new } => write!(f, ": {} -> {}", shown(old), shown(new)),
        }
    }
}

impl fmt::Display for Comparison {
    /// One line per difference: `added `x` (mcp:fs)`, `removed `y``,
    /// `changed `z`: description: ...; annotations: ...`, `moved `w`: a -> b`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let src = |s: &Option<String>| match s {
            Some(s) => format!(" ({})", crate::chars::escape(s)),
            None => String::new(),
        };
        let name = |n: &str| crate::chars::escape_name(n).into_owned();
        for a in &self.added {
            writeln!(f, "added `{}`{}", name(&a.name), src(&a.source))?;
        }
        for r in &self.removed {
            writeln!(f, "removed `{}`{}", name(&r.name), src(&r.source))?;
        }
        for c in &self.changed {
            write!(f, "changed `{}`{}", name(&c.name), src(&c.source))?;
            if c.fields.is_empty() {
                writeln!(
                    f,
                    ": its definition (the lock keeps only a digest to compare with)"
                )?;
            } else {
                let parts: Vec<String> = c.fields.iter().map(ToString::to_string).collect();
                writeln!(f, ": {}", parts.join("; "))?;
            }
        }
        for m in &self.moved {
            writeln!(
                f,
                "moved `{}`: source {} -> {}",
                name(&m.name),
                shown(&m.from.clone().map(Value::String)),
                shown(&m.to.clone().map(Value::String))
            )?;
        }
        Ok(())
    }
}

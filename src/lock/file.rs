//! The lock file: read with positioned errors, written sorted, one entry a line.

use std::collections::HashMap;
use std::fmt;

use serde_json::Value;

use super::{Digest, canonical, definition};
use crate::registry::{Registry, Tool};

/// The first line of every lock, and the only version there is.
const HEADER: &str = r#"{"toolpolicy_lock":1}"#;
const VERSION: u64 = 1;

/// One tool as it was approved.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub name: String,
    pub source: Option<String>,
    pub digest: Digest,
    /// The canonical definition the digest was made from (see
    /// [`definition`](super::definition)); `None` in an entry written
    /// without one, which still locks but cannot say what changed.
    pub definition: Option<Value>,
}

impl Entry {
    /// The entry for a tool as it is now.
    pub fn of(tool: &Tool) -> Entry {
        let def = definition(tool);
        let text = canonical(&def);
        Entry {
            name: tool.name.clone(),
            source: tool.source.clone(),
            digest: Digest::of_canonical(&text),
            definition: Some(def),
        }
    }

    /// The approved definition as a tool, for field by field comparison.
    pub fn tool(&self) -> Option<Tool> {
        let def = self.definition.as_ref()?;
        let reg = Registry::from_json(&Value::Array(vec![def.clone()]).to_string()).ok()?;
        reg.tools().first().cloned()
    }

    fn line(&self) -> String {
        let mut out = String::from("{\"name\":");
        out += &Value::String(self.name.clone()).to_string();
        if let Some(source) = &self.source {
            out += ",\"source\":";
            out += &Value::String(source.clone()).to_string();
        }
        out += &format!(",\"digest\":\"{}\"", self.digest);
        if let Some(def) = &self.definition {
            out += ",\"definition\":";
            out += &canonical(def);
        }
        out.push('}');
        out
    }
}

/// A lock: entries sorted by name, each name once.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Lock {
    entries: Vec<Entry>,
    by_name: HashMap<String, usize>,
}

/// A file that is not a lock: what is wrong, and where (lines and columns
/// count from 1; columns count characters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for LockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

impl std::error::Error for LockError {}

fn at(line: usize, column: usize, message: impl Into<String>) -> LockError {
    LockError {
        line,
        column,
        message: message.into(),
    }
}

impl Lock {
    /// A lock of every tool of the registry as it is now.
    pub fn from_registry(registry: &Registry) -> Lock {
        Lock::from_entries(registry.tools().iter().map(Entry::of).collect())
    }

    /// A lock of these entries (sorted here); a later entry of a name
    /// replaces an earlier one.
    pub fn from_entries(mut entries: Vec<Entry>) -> Lock {
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        entries.dedup_by(|later, earlier| {
            if later.name == earlier.name {
                std::mem::swap(later, earlier);
                true
            } else {
                false
            }
        });
        let by_name = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.name.clone(), i))
            .collect();
        Lock { entries, by_name }
    }

    /// Entries in name order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.by_name.get(name).map(|&i| &self.entries[i])
    }

    /// Whether the tool is unlocked: no entry of its name, or one whose
    /// digest is not the tool's.
    pub fn is_unlocked(&self, tool: &Tool) -> bool {
        self.get(&tool.name)
            .is_none_or(|e| e.digest != super::digest(tool))
    }

    /// The file's text: the header line, then one entry a line in name order.
    pub fn to_text(&self) -> String {
        let mut out = String::with_capacity(64 + self.entries.len() * 256);
        out += HEADER;
        out.push('\n');
        for e in &self.entries {
            out += &e.line();
            out.push('\n');
        }
        out
    }

    /// Reads a lock from bytes (UTF-8, a byte order mark allowed).
    pub fn from_bytes(bytes: &[u8]) -> Result<Lock, LockError> {
        let bytes = crate::input::strip_bom_bytes(bytes);
        let text = std::str::from_utf8(bytes).map_err(|e| {
            let before = &bytes[..e.valid_up_to()];
            let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
            let start = before
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            let column = String::from_utf8_lossy(&before[start..]).chars().count() + 1;
            at(line, column, "the file is not UTF-8")
        })?;
        Lock::parse(text)
    }

    /// Reads a lock's text. Blank lines are skipped; every other line after
    /// the header is one entry. An entry whose digest does not match its
    /// definition is an error: it was edited by hand.
    pub fn parse(text: &str) -> Result<Lock, LockError> {
        let mut lines = text
            .split('\n')
            .enumerate()
            .map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)))
            .filter(|(_, l)| !l.trim().is_empty());
        let Some((n, first)) = lines.next() else {
            return Err(at(
                1,
                1,
                format!("the file is empty; a lock starts with `{HEADER}`"),
            ));
        };
        let header: Value = serde_json::from_str(first).map_err(|_| {
            at(
                n,
                1,
                format!("a lock starts with `{HEADER}`, not with this line"),
            )
        })?;
        match header.get("toolpolicy_lock") {
            Some(v) if v.as_u64() == Some(VERSION) => {}
            Some(v) => {
                return Err(at(
                    n,
                    1,
                    format!(
                        "lock version `{v}` is not one this version reads (it reads {VERSION})"
                    ),
                ));
            }
            None => {
                return Err(at(
                    n,
                    1,
                    format!("a lock starts with `{HEADER}`, not with this line"),
                ));
            }
        }
        let mut entries = Vec::new();
        let mut seen: HashMap<String, usize> = HashMap::new();
        for (n, line) in lines {
            let entry = parse_entry(n, line)?;
            if let Some(first) = seen.insert(entry.name.clone(), n) {
                return Err(at(
                    n,
                    1,
                    format!(
                        "`{}` is locked twice (first on line {first})",
                        crate::chars::escape_name(&entry.name)
                    ),
                ));
            }
            entries.push(entry);
        }
        Ok(Lock::from_entries(entries))
    }
}

fn parse_entry(n: usize, line: &str) -> Result<Entry, LockError> {
    let value: Value = serde_json::from_str(line).map_err(|e| {
        // serde_json counts columns in bytes; ours count characters.
        let byte = line
            .char_indices()
            .nth(e.column().saturating_sub(1))
            .map_or(line.len(), |(i, _)| i);
        let column = line[..byte.min(line.len())].chars().count() + 1;
        let why = e.to_string();
        let why = why.split(" at line ").next().unwrap_or(&why).to_string();
        at(n, column.max(1), format!("not a JSON object: {why}"))
    })?;
    let Value::Object(o) = value else {
        return Err(at(n, 1, "an entry is a JSON object on one line"));
    };
    let name = match o.get("name") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(_) => return Err(at(n, 1, "`name` must be a non-empty string")),
        None => return Err(at(n, 1, "the entry has no `name`")),
    };
    let shown = crate::chars::escape_name(&name).into_owned();
    let source = match o.get("source") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(at(n, 1, format!("`source` of `{shown}` must be a string"))),
    };
    let digest = match o.get("digest") {
        Some(Value::String(s)) => Digest::parse(s).ok_or_else(|| {
            at(
                n,
                1,
                format!("the digest of `{shown}` is not `sha256:` and 64 hex digits"),
            )
        })?,
        _ => return Err(at(n, 1, format!("the entry of `{shown}` has no `digest`"))),
    };
    let definition = match o.get("definition") {
        None | Some(Value::Null) => None,
        Some(def @ Value::Object(d)) => {
            if d.get("name").and_then(Value::as_str) != Some(name.as_str()) {
                return Err(at(
                    n,
                    1,
                    format!("the definition of `{shown}` names another tool"),
                ));
            }
            if Digest::of_canonical(&canonical(def)) != digest {
                return Err(at(
                    n,
                    1,
                    format!(
                        "the digest of `{shown}` does not match its definition: the line was changed by hand"
                    ),
                ));
            }
            Some(def.clone())
        }
        Some(_) => {
            return Err(at(
                n,
                1,
                format!("the definition of `{shown}` must be an object"),
            ));
        }
    };
    Ok(Entry {
        name,
        source,
        digest,
        definition,
    })
}

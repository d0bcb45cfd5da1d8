//! Lock files: holding servers to the tool definitions that were approved.
//!
//! A lock records, for every tool of a registry, its name, its `source` and
//! the [`digest`] of its definition: SHA-256 over the RFC 8785 (JCS)
//! canonical JSON of `name`, `title`, `description`, the input schema,
//! `outputSchema` and `annotations`. A tool is **unlocked** when the lock has
//! no entry of its name or one whose digest differs; a policy's `unlocked`
//! setting says what becomes of it (hidden, deferred or decided as if there
//! were no lock). Guards, search tools and skills are never subject to a lock.
//!
//! The file is one JSON object per line, sorted by name, after a header line,
//! so that a lock diffs well under version control:
//!
//! ```text
//! {"toolpolicy_lock":1}
//! {"name":"read_file","source":"mcp:fs","digest":"sha256:…","definition":{…}}
//! ```
//!
//! Each entry keeps the canonical definition its digest was made from, so
//! that a report can say what changed (the words of a description, the paths
//! of a schema, a hint's old and new value); the digest alone decides.
//!
//! # How a front end uses it
//!
//! - **Loading a policy.** `Policy::parse` only records the `lock = "..."`
//!   setting ([`Policy::lock`](crate::Policy::lock)). A front end that loads a
//!   policy from a file calls [`attach`] with the file's path right after
//!   parsing: it reads the lock (relative to the policy's folder and confined
//!   to it) and keeps it in the policy. A lock that cannot be read or is not
//!   a lock is a load error with its position, exactly like a policy error,
//!   and a reload that fails keeps the last good policy. A policy that names
//!   a lock that was never attached treats every tool as unlocked (fail
//!   closed), never as "no lock".
//! - **Deciding.** [`Engine`](crate::Engine) marks each registry tool
//!   ([`Tool::unlocked`](crate::Tool::unlocked)) whenever its policy or its
//!   registry is set (`Engine::new`, `set_policy`, `set_registry` and the
//!   `reload_*` calls), so unlocked-ness is resolved once per load and every
//!   path (plan, search, direct call) sees it; `Table::decide` reads the mark
//!   from [`ItemRef::unlocked`](crate::ItemRef::unlocked). Code that decides
//!   without an engine (a command's `explain`) calls [`mark`] on its registry
//!   after loading both.
//! - **After a registry reload** (a server relisted its tools), hand the new
//!   registry to `Engine::set_registry`: it is marked against the policy's
//!   lock there. To tell a user what changed, [`compare`] the policy's lock
//!   with the registry (added, removed and changed tools, each change in
//!   words), or `registry::changed_tools` the previous registry with the new
//!   one when there is no lock.
//! - **Writing a lock.** [`Lock::from_registry`] then [`Lock::to_text`].

mod attach;
mod compare;
mod file;
mod jcs;
mod marks;

use std::sync::Arc;

use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

use crate::ast::Span;
use crate::registry::Tool;

/// Why a path written in `lock = "..."` can never name a file inside the
/// policy's folder (see [`crate::policy::check_path`]).
pub use crate::policy::check_path;
pub use attach::{
    PolicyLoadError, attach, attach_at, attach_with, load_policy, resolve, resolve_terms,
    text_place,
};
pub use compare::{
    Added, Changed, Comparison, Detail, FieldChange, HintChange, MAX_PATHS, Moved, compare,
    describe, words,
};
pub use file::{Entry, Lock, LockError};
pub use marks::{mark, marks};

/// The `lock = "..."` setting of a policy: where it was written and, once
/// [`attach`]ed, the lock it names.
#[derive(Debug, Clone, PartialEq)]
pub struct LockSetting {
    /// The path as written, relative to the policy file's folder.
    pub path: String,
    /// The whole statement.
    pub span: Span,
    /// The quoted path.
    pub value_span: Span,
    /// The lock read by [`attach`]; `None` until then.
    pub file: Option<Arc<Lock>>,
}

/// A SHA-256 digest, written `sha256:` and 64 lowercase hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(pub [u8; 32]);

impl std::fmt::Display for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("sha256:")?;
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl Digest {
    /// Reads `sha256:` and 64 hex digits (either case).
    pub fn parse(s: &str) -> Option<Digest> {
        let hex = s.strip_prefix("sha256:")?;
        if hex.len() != 64 || !hex.is_ascii() {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, b) in out.iter_mut().enumerate() {
            *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(Digest(out))
    }

    /// The digest of canonical JSON text.
    fn of_canonical(text: &str) -> Digest {
        Digest(Sha256::digest(text.as_bytes()).into())
    }
}

/// The part of a tool's definition a lock holds it to, as an MCP tool object:
/// `name`, `title`, `description`, `inputSchema` (whatever the registry's
/// shape called it: `parameters`, `input_schema`), `outputSchema` and
/// `annotations`, each as given. Absent ones are left out; an empty
/// description is the registry's reading of an absent one, and a tool that
/// gives no input schema has the empty object schema the registry reads it as.
pub fn definition(tool: &Tool) -> Value {
    let mut map = Map::new();
    map.insert("name".into(), Value::String(tool.name.clone()));
    if let Some(title) = tool.extra.get("title") {
        map.insert("title".into(), title.clone());
    }
    if !tool.description.is_empty() {
        map.insert(
            "description".into(),
            Value::String(tool.description.clone()),
        );
    }
    map.insert("inputSchema".into(), tool.parameters.clone());
    for key in ["outputSchema", "annotations"] {
        if let Some(v) = tool.extra.get(key) {
            map.insert(key.into(), v.clone());
        }
    }
    Value::Object(map)
}

/// RFC 8785 canonical JSON of a value. A number JCS cannot write (one past
/// the range of a double, such as `1e400`, which the registry keeps
/// verbatim) is written as `{"$number": "1e400"}` instead, so that every
/// definition has a digest and a change of such a number still changes it.
pub fn canonical(value: &Value) -> String {
    jcs::to_string(value)
}

/// SHA-256 of the RFC 8785 canonical JSON of the tool's [`definition`],
/// written straight into the hash from the tool: no copy of the
/// definition, no text.
pub fn digest(tool: &Tool) -> Digest {
    use jcs::Member::{Json, Text};
    let mut hash = Sha256::new();
    // The members of `definition`, in the order JCS sorts their names.
    jcs::sorted_members(
        [
            ("annotations", tool.extra.get("annotations").map(Json)),
            (
                "description",
                (!tool.description.is_empty()).then_some(Text(&tool.description)),
            ),
            ("inputSchema", Some(Json(&tool.parameters))),
            ("name", Some(Text(&tool.name))),
            ("outputSchema", tool.extra.get("outputSchema").map(Json)),
            ("title", tool.extra.get("title").map(Json)),
        ],
        &mut hash,
    );
    Digest(hash.finalize().into())
}

#[cfg(test)]
mod tests;

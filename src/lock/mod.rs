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

mod compare;
mod file;
mod jcs;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

use crate::ast::Span;
use crate::diag::{Code, Diagnostic};
use crate::policy::{LoadErrors, Policy};
use crate::registry::{Registry, Tool};

pub use compare::{
    Added, Changed, Comparison, Detail, FieldChange, HintChange, MAX_PATHS, Moved, compare,
    describe, words,
};
pub use file::{Entry, Lock, LockError};

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

/// Sets [`Tool::unlocked`] on every tool of the registry for `policy`'s
/// lock: all false when the policy names none, all true when it names one
/// that was never [`attach`]ed (fail closed). Returns how many are unlocked.
pub fn mark(registry: &mut Registry, policy: &Policy) -> usize {
    registry.set_unlocked(|t| unlocked_for(policy, t))
}

/// What [`mark`] would set on each tool of `registry`, in registry order:
/// for a caller that first looks whether anything would change, without
/// digesting every tool twice.
pub fn marks(registry: &Registry, policy: &Policy) -> Vec<bool> {
    registry
        .tools()
        .iter()
        .map(|t| unlocked_for(policy, t))
        .collect()
}

fn unlocked_for(policy: &Policy, tool: &Tool) -> bool {
    match &policy.lock {
        None => false,
        Some(LockSetting { file: None, .. }) => true,
        Some(LockSetting {
            file: Some(lock), ..
        }) => lock.is_unlocked(tool),
    }
}

/// Why a path written in `lock = "..."` can never name a lock inside the
/// policy's folder (absolute, leaves the folder, names no file), if it
/// cannot: the part of the check that needs no file system.
pub fn check_path(named: &str) -> Result<(), &'static str> {
    use std::path::Component;
    let mut any = false;
    for c in Path::new(named).components() {
        match c {
            Component::Normal(_) => any = true,
            Component::CurDir => {}
            Component::ParentDir => return Err("leaves the policy's folder"),
            Component::RootDir | Component::Prefix(_) => return Err("is absolute"),
        }
    }
    if any { Ok(()) } else { Err("names no file") }
}

/// Where the lock a policy at `policy_path` names lies: relative to the
/// policy's folder and inside it, as the files a data file names are.
pub fn resolve(policy_path: &Path, named: &str) -> Result<PathBuf, String> {
    crate::runtime::data_path(policy_path, "lock", named).map_err(|e| {
        e.message
            .replace("a data file names files", "a policy names its lock")
    })
}

/// Where policy text given with a folder stands: a file in `dir` named
/// after `file`'s last part (`policy` without one), so that diagnostics and
/// the lock's path agree. For a host that takes policy text, not a path.
pub fn text_place(dir: &Path, file: &str) -> PathBuf {
    let name = Path::new(file)
        .file_name()
        .map_or_else(|| "policy".into(), |n| n.to_os_string());
    dir.join(name)
}

/// [`attach`] for a host that may hold policy text with no folder
/// (`place` is `None`): a policy that names a lock is then an error at the
/// `lock` setting whose help is `no_folder_help` (how that host gives the
/// folder), never a policy without its lock.
pub fn attach_at(
    policy: &mut Policy,
    place: Option<&Path>,
    no_folder_help: &str,
) -> Result<(), LoadErrors> {
    let Some(setting) = &policy.lock else {
        return Ok(());
    };
    let Some(place) = place else {
        let shown = crate::chars::escape(&setting.path);
        return Err(LoadErrors {
            diagnostics: vec![
                Diagnostic::new(
                    Code::BadLock,
                    setting.value_span,
                    format!(
                        "the policy names the lock `{shown}`, and policy text has no folder to read it from"
                    ),
                )
                .with_help(no_folder_help.to_string()),
            ],
            source: policy.source.clone(),
        });
    };
    attach(policy, place)
}

/// Reads the lock `policy` names (if any) from beside the policy file at
/// `policy_path` and keeps it in the policy. An error is a load error at
/// the `lock` setting (`PL015`) that says why, with the position in the lock
/// file when the file is not a lock.
pub fn attach(policy: &mut Policy, policy_path: &Path) -> Result<(), LoadErrors> {
    attach_with(policy, policy_path, crate::input::read)
}

/// [`attach`], the lock's bytes read by `read`: for a front end that must
/// not wait on the file (the gateway's reload refuses a FIFO rather than
/// wait for its writer, as it does for the policy itself).
pub fn attach_with(
    policy: &mut Policy,
    policy_path: &Path,
    read: impl FnOnce(&Path) -> std::io::Result<Vec<u8>>,
) -> Result<(), LoadErrors> {
    let Some(setting) = &policy.lock else {
        return Ok(());
    };
    let fail = |message: String, help: &str| LoadErrors {
        source: policy.source.clone(),
        diagnostics: vec![
            Diagnostic::new(Code::BadLock, setting.value_span, message).with_help(help.to_string()),
        ],
    };
    let shown = crate::chars::escape(&setting.path).into_owned();
    let path = resolve(policy_path, &setting.path).map_err(|why| {
        fail(
            format!("the lock cannot be read: {why}"),
            "write a path relative to the policy's folder, such as `lock = \"tools.lock\"`",
        )
    })?;
    let bytes = read(&path).map_err(|e| {
        fail(
            format!("the lock `{shown}` cannot be read: {e}"),
            "write it with `policy lock --policy POLICY --registry TOOLS.json`",
        )
    })?;
    let lock = Lock::from_bytes(&bytes).map_err(|e| {
        fail(
            format!("the lock `{shown}` is not a lock: {e}"),
            "write it again with `policy lock`, or restore it from version control",
        )
    })?;
    if let Some(setting) = &mut policy.lock {
        setting.file = Some(Arc::new(lock));
    }
    Ok(())
}

/// Reads, parses and attaches: a policy file with its lock.
pub fn load_policy(path: &Path) -> Result<Policy, PolicyLoadError> {
    let bytes = crate::input::read(path).map_err(|e| PolicyLoadError::Io(path.to_path_buf(), e))?;
    let mut policy =
        Policy::from_bytes(path.display().to_string(), &bytes).map_err(PolicyLoadError::Policy)?;
    attach(&mut policy, path).map_err(PolicyLoadError::Policy)?;
    Ok(policy)
}

/// Why [`load_policy`] failed.
#[derive(Debug)]
pub enum PolicyLoadError {
    /// The policy file itself could not be read.
    Io(PathBuf, std::io::Error),
    /// The policy, or its lock, does not load.
    Policy(LoadErrors),
}

impl std::fmt::Display for PolicyLoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PolicyLoadError::Io(p, e) => write!(f, "cannot read `{}`: {e}", p.display()),
            PolicyLoadError::Policy(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for PolicyLoadError {}

#[cfg(test)]
mod tests;

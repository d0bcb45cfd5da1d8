//! Reading the files a policy names, beside it: its lock (`lock = "..."`)
//! and its learned search terms (`terms = "..."`). One reader for both:
//! the path is resolved inside the policy's folder, the bytes read, the
//! contents parsed, and any failure is a load error at the setting that
//! named the file, saying why.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::ast::Span;
use crate::diag::Diagnostic;
use crate::policy::{FileKey, LoadErrors, Policy};
use crate::terms::TermsFile;

use super::file::Lock;

/// Where the file a policy at `policy_path` names lies: relative to the
/// policy's folder and inside it, as the files a data file names are.
fn named_path(policy_path: &Path, which: FileKey, named: &str) -> Result<PathBuf, String> {
    crate::runtime::data_path(policy_path, which.key(), named).map_err(|e| {
        e.message.replace(
            "a data file names files",
            &format!("a policy names its {}", which.noun()),
        )
    })
}

/// Where the lock a policy at `policy_path` names lies.
pub fn resolve(policy_path: &Path, named: &str) -> Result<PathBuf, String> {
    named_path(policy_path, FileKey::Lock, named)
}

/// Where the terms file a policy at `policy_path` names lies.
pub fn resolve_terms(policy_path: &Path, named: &str) -> Result<PathBuf, String> {
    named_path(policy_path, FileKey::Terms, named)
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

/// The files `policy` names, each with where it was written.
fn named(policy: &Policy) -> impl Iterator<Item = (FileKey, &str, Span)> {
    let lock = policy
        .lock
        .as_ref()
        .map(|s| (FileKey::Lock, s.path.as_str(), s.value_span));
    let terms = policy
        .terms
        .as_ref()
        .map(|s| (FileKey::Terms, s.path.as_str(), s.value_span));
    lock.into_iter().chain(terms)
}

/// [`attach`] for a host that may hold policy text with no folder
/// (`place` is `None`): a policy that names a lock or a terms file is then
/// an error at that setting whose help is `no_folder_help` (how that host
/// gives the folder), never a policy without its files.
pub fn attach_at(
    policy: &mut Policy,
    place: Option<&Path>,
    no_folder_help: &str,
) -> Result<(), LoadErrors> {
    if let Some(place) = place {
        return attach(policy, place);
    }
    let diagnostics: Vec<Diagnostic> = named(policy)
        .map(|(which, path, span)| {
            Diagnostic::new(
                which.code(),
                span,
                format!(
                    "the policy names the {} `{}`, and policy text has no folder to read it from",
                    which.noun(),
                    crate::chars::escape(path)
                ),
            )
            .with_help(no_folder_help.to_string())
        })
        .collect();
    if diagnostics.is_empty() {
        return Ok(());
    }
    Err(LoadErrors {
        diagnostics,
        source: policy.source.clone(),
    })
}

/// Reads the files `policy` names from beside the policy file at
/// `policy_path` and keeps them in the policy: its lock (an error is a load
/// error at the `lock` setting, `PL015`) and its terms file (`PL016`), each
/// error saying why, with the position in the file when it is not what it
/// should be.
pub fn attach(policy: &mut Policy, policy_path: &Path) -> Result<(), LoadErrors> {
    attach_with(policy, policy_path, crate::input::read)
}

/// [`attach`], the files' bytes read by `read`: for a front end that must
/// not wait on a file (the gateway's reload refuses a FIFO rather than
/// wait for its writer, as it does for the policy itself).
pub fn attach_with(
    policy: &mut Policy,
    policy_path: &Path,
    mut read: impl FnMut(&Path) -> std::io::Result<Vec<u8>>,
) -> Result<(), LoadErrors> {
    let files: Vec<(FileKey, String, Span)> = named(policy)
        .map(|(which, path, span)| (which, path.to_string(), span))
        .collect();
    for (which, path, span) in files {
        let fail = |message: String, help: String| LoadErrors {
            source: policy.source.clone(),
            diagnostics: vec![Diagnostic::new(which.code(), span, message).with_help(help)],
        };
        let noun = which.noun();
        let shown = crate::chars::escape(&path).into_owned();
        let at = named_path(policy_path, which, &path).map_err(|why| {
            fail(
                format!("the {noun} cannot be read: {why}"),
                format!(
                    "write a path relative to the policy's folder, such as `{} = \"{}\"`",
                    which.key(),
                    which.example()
                ),
            )
        })?;
        let bytes = read(&at).map_err(|e| {
            fail(
                format!("the {noun} `{shown}` cannot be read: {e}"),
                which.write_help().to_string(),
            )
        })?;
        let not_one = |e: &dyn std::fmt::Display| {
            fail(
                format!("the {noun} `{shown}` is not a {noun}: {e}"),
                which.damaged_help().to_string(),
            )
        };
        match which {
            FileKey::Lock => {
                let lock = Lock::from_bytes(&bytes).map_err(|e| not_one(&e))?;
                if let Some(s) = &mut policy.lock {
                    s.file = Some(Arc::new(lock));
                }
            }
            FileKey::Terms => {
                let text = String::from_utf8(bytes).map_err(|e| {
                    not_one(&format!(
                        "not UTF-8 (at byte {})",
                        e.utf8_error().valid_up_to()
                    ))
                })?;
                let terms = TermsFile::parse(&text).map_err(|e| not_one(&e))?;
                if let Some(s) = &mut policy.terms {
                    s.file = Some(Arc::new(terms));
                }
            }
        }
    }
    Ok(())
}

/// Reads, parses and attaches: a policy file with the files it names.
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
    /// The policy, or a file it names, does not load.
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

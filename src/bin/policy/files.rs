//! Paths on the command line to the files a command works on.

use std::path::{Path, PathBuf};

use crate::common::CliError;

/// Each file as given, and for each folder the files directly in it whose
/// name ends with `suffix` (not in its subfolders: `policies/` means the
/// bundled policies, not `policies/invalid/`), sorted so output is stable.
pub fn expand(paths: &[PathBuf], suffix: &str) -> Result<Vec<PathBuf>, CliError> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            out.extend(in_folder(p, suffix)?);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

fn in_folder(dir: &Path, suffix: &str) -> Result<Vec<PathBuf>, CliError> {
    let io = |e| CliError::Io(dir.to_path_buf(), e);
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        // Compared as bytes: a name that is not UTF-8 is still the user's
        // file, and skipping it would report a folder clean unchecked.
        let named = path
            .file_name()
            .is_some_and(|n| n.as_encoded_bytes().ends_with(suffix.as_bytes()));
        if named && path.is_file() {
            found.push(path);
        }
    }
    found.sort();
    Ok(found)
}

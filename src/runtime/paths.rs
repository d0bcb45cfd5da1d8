//! Paths that data files name: a replay scenario's or an expectation file's
//! `policy`, `registry` and `skills` (docs/replay.md).
//!
//! Such files come from contributors, and a command that reads them may run
//! in CI next to secrets. A path in one is relative to the file's folder and
//! may not leave it, and the policy it names must be a `.policy` file, since
//! policy diagnostics quote the lines of the file they are about: otherwise a
//! scenario naming `/proc/self/environ` would have its lines printed.

use std::path::{Component, Path, PathBuf};

use crate::registry::LoadError;

/// Where the path `named`, given under `key` in `data_file`, points; an error
/// that says why when it is absolute, leaves the folder (`..`, or a symbolic
/// link that leads out), or names a policy that is not a `.policy` file.
pub fn data_path(
    data_file: &Path,
    key: &str,
    named: impl AsRef<Path>,
) -> Result<PathBuf, LoadError> {
    let rel = named.as_ref();
    let refuse = |why: &str| LoadError {
        path: key.to_string(),
        message: format!(
            "`{}` {why}: a data file names files in its own folder or below it",
            crate::chars::escape(&rel.to_string_lossy())
        ),
    };
    let mut clean = PathBuf::new();
    for c in rel.components() {
        match c {
            Component::Normal(part) => clean.push(part),
            Component::CurDir => {}
            Component::ParentDir => return Err(refuse("leaves the folder")),
            Component::RootDir | Component::Prefix(_) => return Err(refuse("is absolute")),
        }
    }
    if clean.as_os_str().is_empty() {
        return Err(refuse("names no file"));
    }
    if key == "policy" && clean.extension().is_none_or(|e| e != "policy") {
        return Err(refuse("is not a `.policy` file"));
    }
    let folder = match data_file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let path = if folder == Path::new(".") {
        clean
    } else {
        folder.join(clean)
    };
    // A symbolic link inside the folder may still lead out of it.
    if let (Ok(real_folder), Ok(real)) = (folder.canonicalize(), path.canonicalize())
        && !real.starts_with(&real_folder)
    {
        return Err(refuse("leads out of the folder"));
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_in_the_folder() {
        let file = Path::new("scenarios/a.json");
        assert_eq!(
            data_path(file, "policy", "./p.policy").unwrap(),
            Path::new("scenarios/p.policy")
        );
        assert_eq!(
            data_path(file, "registry", "sub/r.json").unwrap(),
            Path::new("scenarios/sub/r.json")
        );
        assert_eq!(
            data_path(Path::new("a.json"), "registry", "r.json").unwrap(),
            Path::new("r.json")
        );
        for (key, named, why) in [
            ("policy", "/proc/self/environ", "is absolute"),
            ("registry", "../r.json", "leaves the folder"),
            ("skills", "sub/../../s.json", "leaves the folder"),
            ("policy", "secrets.env", "is not a `.policy` file"),
            ("policy", ".", "names no file"),
        ] {
            let e = data_path(file, key, named).unwrap_err();
            assert_eq!(e.path, key);
            assert!(e.message.contains(why), "{e}");
            assert!(e.message.contains(&format!("`{named}`")), "{e}");
        }
    }
}

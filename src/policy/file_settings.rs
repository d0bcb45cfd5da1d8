//! The settings that name a file beside the policy: `lock = "tools.lock"`
//! (the approved tool definitions) and `terms = "search-terms.toml"` (the
//! learned search terms). Each stands at top level only, once, and holds a
//! quoted path inside the policy's folder; the file itself is read when the
//! policy is loaded from its path (`lock::attach`), not here.

use crate::ast::{self, Span};
use crate::diag::{Code, Diagnostic};

/// The key of the `lock` setting, which is not a [`Key`](crate::settings::Key):
/// it holds a path, stands at top level only, and is read by `lock::attach`.
pub const LOCK: &str = "lock";

/// The key of the `terms` setting, likewise: a path, read with the lock.
pub const TERMS: &str = "terms";

/// One of the settings that name a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKey {
    Lock,
    Terms,
}

impl FileKey {
    /// The file setting `key` names, if any (case-insensitive, as every key).
    pub fn parse(key: &str) -> Option<FileKey> {
        if key.eq_ignore_ascii_case(LOCK) {
            Some(FileKey::Lock)
        } else if key.eq_ignore_ascii_case(TERMS) {
            Some(FileKey::Terms)
        } else {
            None
        }
    }

    pub fn key(self) -> &'static str {
        match self {
            FileKey::Lock => LOCK,
            FileKey::Terms => TERMS,
        }
    }

    /// What the file is called in messages.
    pub(crate) fn noun(self) -> &'static str {
        match self {
            FileKey::Lock => "lock",
            FileKey::Terms => "terms file",
        }
    }

    pub(crate) fn example(self) -> &'static str {
        match self {
            FileKey::Lock => "tools.lock",
            FileKey::Terms => "search-terms.toml",
        }
    }

    pub(crate) fn code(self) -> Code {
        match self {
            FileKey::Lock => Code::BadLock,
            FileKey::Terms => Code::BadTerms,
        }
    }

    /// How to write the file when it cannot be read.
    pub(crate) fn write_help(self) -> &'static str {
        match self {
            FileKey::Lock => "write it with `policy lock --policy POLICY --registry TOOLS.json`",
            FileKey::Terms => {
                "write it with `policy learn LOG --policy POLICY --registry TOOLS.json`"
            }
        }
    }

    /// What to do when the file is not what it should be.
    pub(crate) fn damaged_help(self) -> &'static str {
        match self {
            FileKey::Lock => {
                "write it again with `policy lock`, or restore it from version control"
            }
            FileKey::Terms => {
                "each table is a tool with `terms = [\"...\"]`; write it again with `policy learn`, or restore it from version control"
            }
        }
    }

    fn misplaced_help(self) -> &'static str {
        match self {
            FileKey::Lock => {
                "one lock holds every tool of the registry; move `lock = ...` out of the block, and use `unlocked` in blocks"
            }
            FileKey::Terms => {
                "one terms file serves every context; move `terms = ...` out of the block"
            }
        }
    }
}

/// Why a path written in a file setting can never name a file inside the
/// policy's folder (absolute, leaves the folder, names no file), if it
/// cannot: the part of the check that needs no file system.
pub fn check_path(named: &str) -> Result<(), &'static str> {
    use std::path::{Component, Path};
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

/// Where a file setting was written, as lowering found it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Named {
    pub path: String,
    pub span: Span,
    pub value_span: Span,
}

/// Checks a `lock = "..."` or `terms = "..."` statement: where it stands
/// (`at_top`: at top level, outside any `when`), what it holds, and that
/// it is the first (`first`: where the earlier one stands, if any). The
/// setting to keep, or the one diagnostic that says what is wrong.
pub(super) fn check(
    which: FileKey,
    span: Span,
    value: &ast::Value,
    value_span: Span,
    at_top: bool,
    first: Option<String>,
) -> Result<Named, Diagnostic> {
    let key = which.key();
    if !at_top {
        return Err(Diagnostic::new(
            Code::Misplaced,
            span,
            format!("`{key}` must stand at top level"),
        )
        .with_help(which.misplaced_help()));
    }
    let example = which.example();
    let ast::Value::Quoted(path) = value else {
        return Err(Diagnostic::new(
            Code::BadValue,
            value_span,
            format!("`{key}` takes a quoted path"),
        )
        .with_help(format!(
            "write `{key} = \"{example}\"`, a path relative to the policy's folder"
        )));
    };
    if let Some(at) = first {
        return Err(Diagnostic::new(
            Code::DuplicateSetting,
            span,
            format!("`{key}` is already set at top level (at {at})"),
        )
        .with_help("keep one of the two"));
    }
    let noun = which.noun();
    if let Err(why) = check_path(path) {
        return Err(Diagnostic::new(
            which.code(),
            value_span,
            format!("the {noun} `{}` {why}", crate::chars::escape(path)),
        )
        .with_help(format!(
            "a policy names a {noun} in its own folder or below it, such as `{key} = \"{example}\"`"
        )));
    }
    Ok(Named {
        path: path.clone(),
        span,
        value_span,
    })
}

#[cfg(test)]
mod tests {
    use crate::Policy;
    use crate::diag::Code;

    fn codes(text: &str) -> Vec<Code> {
        match Policy::parse("p.policy", text) {
            Ok(_) => Vec::new(),
            Err(e) => e.diagnostics.iter().map(|d| d.code).collect(),
        }
    }

    #[test]
    fn a_file_setting_stands_at_top_level_once_with_a_path_inside_the_folder() {
        let p = Policy::parse("p.policy", "terms = \"t.toml\"\nlock = \"tools.lock\"\n").unwrap();
        assert_eq!(p.terms.as_ref().map(|t| t.path.as_str()), Some("t.toml"));
        assert_eq!(p.lock.as_ref().map(|l| l.path.as_str()), Some("tools.lock"));
        assert_eq!(
            codes("mode m {\n  terms = \"t.toml\"\n}\n"),
            [Code::Misplaced]
        );
        assert_eq!(codes("when f {\n  lock = \"l\"\n}\n"), [Code::Misplaced]);
        assert_eq!(codes("terms = 3\n"), [Code::BadValue]);
        assert_eq!(
            codes("terms = \"a.toml\"\nterms = \"b.toml\"\n"),
            [Code::DuplicateSetting]
        );
        assert_eq!(codes("terms = \"../t.toml\"\n"), [Code::BadTerms]);
        assert_eq!(codes("lock = \"/etc/tools.lock\"\n"), [Code::BadLock]);
        assert_eq!(codes("terms = \".\"\n"), [Code::BadTerms]);
    }
}

//! Names the model reads must load what they show (docs/registry.md).
//!
//! The catalog and search results show a name with its invisible characters
//! removed and its white space folded, so a name those change would show as
//! another name, perhaps one that loads a different tool: such a name is an
//! error. Names that differ only by case or Unicode compatibility form
//! (`Read`, `read`, fullwidth `Ｒead`, `é` composed or not) load, but read
//! alike to a model and to people: a warning names both.

use std::collections::HashMap;

use unicode_normalization::UnicodeNormalization;

use crate::chars::{escape_name, is_hiding};
use crate::diag::Code;

use super::LoadWarning;

/// Why `name` would not read as itself, if it would not.
pub(super) fn unreadable(name: &str) -> Option<String> {
    let shown = escape_name(name);
    if let Some(c) = name.chars().find(|&c| is_hiding(c)) {
        return Some(format!(
            "the name `{shown}` holds an invisible or control character (U+{:04X}): the model would read another name",
            u32::from(c)
        ));
    }
    if name.starts_with(char::is_whitespace) || name.ends_with(char::is_whitespace) {
        return Some(format!(
            "the name `{shown}` starts or ends with white space: the model would read another name"
        ));
    }
    if name.contains(|c: char| c.is_whitespace() && c != ' ') || name.contains("  ") {
        return Some(format!(
            "the name `{shown}` holds white space other than single spaces: the model would read another name"
        ));
    }
    None
}

/// What two names share when they differ only by case or compatibility form.
fn skeleton(name: &str) -> String {
    // ASCII is its own compatibility form: the common case skips normalizing.
    if name.is_ascii() {
        return name.to_ascii_lowercase();
    }
    name.nfkc().flat_map(char::to_lowercase).nfkc().collect()
}

/// A warning for each name that reads like an earlier one, naming both.
pub(super) fn look_alikes<'a>(
    names: impl Iterator<Item = &'a str>,
    what: &str,
) -> Vec<LoadWarning> {
    let mut first: HashMap<String, (usize, &str)> = HashMap::new();
    let mut out = Vec::new();
    for (i, name) in names.enumerate() {
        match first.entry(skeleton(name)) {
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert((i, name));
            }
            std::collections::hash_map::Entry::Occupied(e) => {
                let (j, other) = *e.get();
                out.push(LoadWarning {
                    code: Code::LookAlikeName,
                    path: format!("{what}[{i}].name"),
                    message: format!(
                        "`{}` reads like `{}` (`{what}[{j}].name`): the names differ only by case or Unicode form",
                        escape_name(name),
                        escape_name(other)
                    ),
                    help: Some(
                        "a model may call one for the other; rename one of them".to_string(),
                    ),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_read_as_others_are_refused() {
        for bad in [
            "Read ",
            " Read",
            "Re\u{200b}ad",
            "Re\u{202e}ad",
            "Re\tad",
            "Re\u{1b}ad",
            "Re  ad",
            "Re\u{a0}ad",
        ] {
            assert!(unreadable(bad).is_some(), "{bad:?}");
        }
        for good in ["Read", "read file", "搜索", "café"] {
            assert_eq!(unreadable(good), None, "{good:?}");
        }
    }

    #[test]
    fn case_and_compatibility_forms_read_alike() {
        let names = ["Read", "read", "Ｒead", "café", "cafe\u{301}", "Write"];
        let w = look_alikes(names.into_iter(), "tools");
        let paths: Vec<&str> = w.iter().map(|w| w.path.as_str()).collect();
        assert_eq!(paths, ["tools[1].name", "tools[2].name", "tools[4].name"]);
        assert!(
            w[1].message
                .contains("`Ｒead` reads like `Read` (`tools[0].name`)")
        );
    }
}

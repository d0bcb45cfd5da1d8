//! The language's words, for hover and completion: rule words, statements,
//! block keywords, settings with their values, defaults and meanings.

/// A setting as the author reads about it.
pub struct SettingDoc {
    pub key: &'static str,
    /// The values as written, for completion (empty: a number or a path).
    pub values: &'static [&'static str],
    pub default: &'static str,
    pub meaning: &'static str,
}

pub const SETTINGS: [SettingDoc; 10] = [
    SettingDoc {
        key: "defer_loading",
        values: &["true", "false"],
        default: "true",
        meaning: "the global switch: `false` defers nothing",
    },
    SettingDoc {
        key: "activation",
        values: &["\"sticky\"", "\"per_prompt\""],
        default: "\"sticky\"",
        meaning: "how activations persist: for the rest of the session (`sticky`), or until the next prompt (`per_prompt`)",
    },
    SettingDoc {
        key: "max_activations",
        values: &[],
        default: "4",
        meaning: "how many tools one search may activate (1 to 64)",
    },
    SettingDoc {
        key: "on_miss",
        values: &["\"activate\"", "\"error\""],
        default: "\"activate\"",
        meaning: "a direct call to a deferred tool: fail as not found and declare it from the next step (`activate`), or only fail (`error`)",
    },
    SettingDoc {
        key: "catalog_chars",
        values: &[],
        default: "4000",
        meaning: "the whole catalog's budget in characters (0 to 1000000)",
    },
    SettingDoc {
        key: "catalog_line_chars",
        values: &[],
        default: "120",
        meaning: "one catalog line's budget in characters, name included (20 to 1000)",
    },
    SettingDoc {
        key: "catalog_params",
        values: &["true", "false"],
        default: "false",
        meaning: "show parameter names in catalog lines: `name(a, b?)`",
    },
    SettingDoc {
        key: "lock",
        values: &[],
        default: "none",
        meaning: "top level only: the lock file of approved tool definitions, a quoted path relative to the policy's folder and inside it",
    },
    SettingDoc {
        key: "unlocked",
        values: &["\"hide\"", "\"defer\"", "\"allow\""],
        default: "\"hide\"",
        meaning: "what becomes of a tool the lock does not hold: hidden, deferred, or decided as if there were no lock",
    },
    SettingDoc {
        key: "terms",
        values: &[],
        default: "none",
        meaning: "top level only: the learned search terms, a quoted path relative to the policy's folder and inside it",
    },
];

pub fn setting(key: &str) -> Option<&'static SettingDoc> {
    SETTINGS.iter().find(|s| s.key.eq_ignore_ascii_case(key))
}

/// Rule words and statements, each with what it does.
pub const RULES: [(&str, &str); 6] = [
    ("Defer", "matching tools are held back, found by search"),
    ("NoDefer", "matching tools are declared from the start"),
    (
        "Hide",
        "matching items are not exposed at all: not declared, listed, searchable or loadable",
    ),
    (
        "Grant",
        "an allow-list: in a scope with grants, every item it does not grant is hidden",
    ),
    (
        "guard",
        "top level only: always declared, in every mode, for every bot",
    ),
    (
        "search",
        "top level only: the discovery tools, declared while anything is deferred",
    ),
];

/// Block keywords.
pub const BLOCKS: [(&str, &str); 3] = [
    ("mode", "rules and settings for one mode"),
    (
        "bot",
        "rules and settings for one Bot, or every Bot (`bot *`)",
    ),
    (
        "when",
        "applies while the runtime's flag is set (`when !FLAG`: not set)",
    ),
];

/// The `hint:` selectors.
pub const HINTS: [&str; 4] = [
    "hint:read_only",
    "hint:destructive",
    "hint:idempotent",
    "hint:open_world",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_of_the_language_is_described() {
        for k in crate::settings::Key::ALL {
            assert!(
                setting(k.name()).is_some(),
                "{} has no description",
                k.name()
            );
        }
        for h in crate::hint::Hint::ALL {
            assert!(HINTS.contains(&h.to_string().as_str()), "{h}");
        }
        assert!(setting("lock").is_some() && setting("terms").is_some());
    }
}

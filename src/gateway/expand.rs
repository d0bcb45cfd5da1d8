//! `${NAME}` and `${NAME:-default}` in the servers file, expanded from the
//! environment as the clients whose files it takes (Claude Code's
//! `.mcp.json` among them) expand them: in a local server's `command`,
//! `args` and `env` values, and in a remote server's `url` and `headers`
//! values. A server never starts with the literal text as its credential.

/// Why a reference cannot be expanded: the message, and help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpandError {
    pub message: String,
    pub help: Option<String>,
}

fn error(message: String) -> ExpandError {
    ExpandError {
        message,
        help: None,
    }
}

fn is_name(var: &str) -> bool {
    var.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Expands every `${NAME}` (the variable's value; an error when it is not
/// set) and `${NAME:-default}` (the value, or `default` when the variable
/// is not set or is empty, as in a shell) in `raw`, left to right and once:
/// a value is not expanded again. `$` not followed by `{` is kept as it is.
pub fn expand(raw: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else {
            return Err(error("`${` is not closed by `}`".into()));
        };
        let inner = &after[..end];
        let (var, default) = match inner.split_once(":-") {
            Some((var, default)) => (var, Some(default)),
            None => (inner, None),
        };
        if !is_name(var) {
            return Err(ExpandError {
                message: format!(
                    "`${{{}}}` is not an environment variable reference",
                    crate::chars::escape_name(inner)
                ),
                help: Some(
                    "write `${NAME}`, or `${NAME:-default}`, with a name of letters, digits and `_`"
                        .into(),
                ),
            });
        }
        if default.is_some_and(|d| d.contains("${")) {
            return Err(error(format!(
                "the default of `${{{var}:-...}}` holds `${{`: a default is plain text"
            )));
        }
        match (env(var), default) {
            (Some(v), Some(d)) if v.is_empty() => out.push_str(d),
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => {
                return Err(ExpandError {
                    message: format!("environment variable `{var}` is not set"),
                    help: Some(format!("set it, or give a default: `${{{var}:-default}}`")),
                });
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(k: &str) -> Option<String> {
        match k {
            "TOKEN" => Some("s3cret".into()),
            "EMPTY" => Some(String::new()),
            "DOLLAR" => Some("${TOKEN}".into()),
            _ => None,
        }
    }

    #[test]
    fn references_and_defaults() {
        let x = |raw: &str| expand(raw, &env);
        assert_eq!(x("Bearer ${TOKEN}").unwrap(), "Bearer s3cret");
        assert_eq!(
            x("$5 ${TOKEN}${TOKEN} $x {y}").unwrap(),
            "$5 s3crets3cret $x {y}"
        );
        assert_eq!(x("${MISSING:-dflt}").unwrap(), "dflt");
        assert_eq!(x("${EMPTY:-dflt}").unwrap(), "dflt");
        assert_eq!(x("${EMPTY}").unwrap(), "");
        assert_eq!(x("${TOKEN:-dflt}").unwrap(), "s3cret");
        assert_eq!(x("${MISSING:-}").unwrap(), "");
        assert_eq!(x("${MISSING:-a:-b c}").unwrap(), "a:-b c");
        // A value is not expanded again.
        assert_eq!(x("${DOLLAR}").unwrap(), "${TOKEN}");
    }

    #[test]
    fn what_cannot_be_expanded_says_why() {
        let x = |raw: &str| expand(raw, &env).unwrap_err();
        let e = x("${MISSING}");
        assert_eq!(e.message, "environment variable `MISSING` is not set");
        assert_eq!(
            e.help.as_deref(),
            Some("set it, or give a default: `${MISSING:-default}`")
        );
        assert_eq!(x("${OPEN").message, "`${` is not closed by `}`");
        assert_eq!(
            x("${1X}").message,
            "`${1X}` is not an environment variable reference"
        );
        assert_eq!(
            x("${:-x}").message,
            "`${:-x}` is not an environment variable reference"
        );
        assert_eq!(
            x("${A:-${B}}").message,
            "the default of `${A:-...}` holds `${`: a default is plain text"
        );
        assert_eq!(
            x("${\u{7}}").message,
            "`${\\u{7}}` is not an environment variable reference"
        );
    }
}

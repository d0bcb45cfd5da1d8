//! What the clients file and its `jwt` section both read with: problems at a
//! JSON path, unknown keys with a did-you-mean, a context's `mode`, `bot`,
//! `flags` and `grants`, and the URLs and files they name.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::super::servers::Problem;
use super::Overrides;

pub fn problem(path: impl Into<String>, message: impl Into<String>) -> Problem {
    Problem {
        path: path.into(),
        message: message.into(),
        help: None,
    }
}

pub fn with_help(
    path: impl Into<String>,
    message: impl Into<String>,
    help: impl Into<String>,
) -> Problem {
    Problem {
        path: path.into(),
        message: message.into(),
        help: Some(help.into()),
    }
}

/// `parent.key`, with the key shown safely.
pub fn at(parent: &str, key: &str) -> String {
    let key = crate::chars::escape(key);
    if parent.is_empty() {
        key.into_owned()
    } else {
        format!("{parent}.{key}")
    }
}

/// An error for each key of `obj` not in `known`, with a did-you-mean.
pub fn unknown_keys(
    obj: &Map<String, Value>,
    known: &[&str],
    path: &str,
    errors: &mut Vec<Problem>,
) {
    for k in obj.keys().filter(|k| !known.contains(&k.as_str())) {
        let shown = crate::chars::escape(k);
        let help = crate::diag::did_you_mean(k, known.iter().copied())
            .unwrap_or_else(|| format!("known keys: {}", quoted(known)));
        errors.push(with_help(
            at(path, k),
            format!("unknown key `{shown}`"),
            help,
        ));
    }
}

fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A client's (or the JWT defaults') `mode`, `bot`, `flags` and `grants`.
pub fn overrides(obj: &Map<String, Value>, path: &str, errors: &mut Vec<Problem>) -> Overrides {
    Overrides {
        mode: name_field(obj, "mode", path, errors),
        bot: name_field(obj, "bot", path, errors),
        flags: list_field(obj, "flags", path, errors)
            .map(|v| v.into_iter().collect::<BTreeSet<_>>()),
        grants: list_field(obj, "grants", path, errors),
    }
}

fn name_field(
    obj: &Map<String, Value>,
    key: &str,
    path: &str,
    errors: &mut Vec<Problem>,
) -> Option<String> {
    match obj.get(key)? {
        Value::String(s) if !s.trim().is_empty() && !s.chars().any(char::is_control) => {
            Some(s.clone())
        }
        Value::String(_) => {
            errors.push(problem(
                at(path, key),
                format!("a {key} is printable text that is not blank"),
            ));
            None
        }
        _ => {
            errors.push(problem(at(path, key), "expected a string"));
            None
        }
    }
}

fn list_field(
    obj: &Map<String, Value>,
    key: &str,
    path: &str,
    errors: &mut Vec<Problem>,
) -> Option<Vec<String>> {
    let Value::Array(a) = obj.get(key)? else {
        errors.push(problem(at(path, key), "expected an array of strings"));
        return None;
    };
    let mut out = Vec::new();
    for (i, v) in a.iter().enumerate() {
        match v {
            Value::String(s) if !s.trim().is_empty() && !s.chars().any(char::is_control) => {
                out.push(s.clone())
            }
            _ => errors.push(problem(
                format!("{}[{i}]", at(path, key)),
                "expected printable text that is not blank",
            )),
        }
    }
    Some(out)
}

/// Why `url` cannot be fetched or named as an authorization server: it must
/// be `https`, or `http` to a loopback address when `loopback_http`.
pub fn url_problem(url: &str, loopback_http: bool) -> Option<String> {
    let shown = super::super::origin::shown(url);
    let Ok(parsed) = reqwest::Url::parse(url.trim()) else {
        return Some(format!("`{shown}` is not a URL"));
    };
    let Some(host) = parsed.host_str().filter(|h| !h.is_empty()) else {
        return Some(format!("`{shown}` has no host"));
    };
    match parsed.scheme() {
        "https" => None,
        "http" if loopback_http && is_loopback(host) => None,
        "http" if loopback_http => Some(format!(
            "`{shown}` is not `https`: keys are fetched over `http` only from a loopback address"
        )),
        "http" => Some(format!("`{shown}` is not `https`")),
        other => Some(format!(
            "`{shown}` is not an `https` URL (scheme `{other}`)"
        )),
    }
}

/// `localhost`, `127.0.0.0/8` or `::1`.
pub fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// `file` resolved against the clients file's folder.
pub fn resolve(dir: &Path, file: &str) -> PathBuf {
    dir.join(file)
}

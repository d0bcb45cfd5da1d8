//! The clients file, read strictly: every problem is reported with its JSON
//! path (`clients.alice.token`), all of them at once, before anything is
//! served. Unknown keys are errors, with a did-you-mean: a misspelt `flags`
//! would otherwise widen what a caller sees.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

use super::super::servers::Problem;
use super::Overrides;
use super::jwt::{self, JwtSpec};
use super::spec::{at, overrides, problem, unknown_keys, url_problem, with_help};

/// A SHA-256 digest.
pub type Digest = [u8; 32];

/// A clients file that loaded.
#[derive(Debug, Default)]
pub struct Parsed {
    /// Each client's name and context, in file order.
    pub clients: Vec<(String, Overrides)>,
    /// The digest of each client's token, with the client's index.
    pub tokens: Vec<(Digest, usize)>,
    pub jwt: Option<JwtSpec>,
    pub authorization_servers: Vec<String>,
    pub warnings: Vec<Problem>,
}

/// Reads the clients file's text; `dir` is its folder, against which a
/// relative `jwks_file` is resolved; `${NAME}` is read from `env`.
pub fn parse(
    text: &str,
    dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Parsed, Vec<Problem>> {
    let top: Value = serde_json::from_str(crate::input::strip_bom(text)).map_err(|e| {
        vec![with_help(
            "",
            format!("not a clients file: {e}"),
            "expected `{\"clients\": {\"NAME\": {\"token\": \"${ENV_VAR}\", \"mode\": ...}}}`",
        )]
    })?;
    let Some(top) = top.as_object() else {
        return Err(vec![with_help(
            "",
            "not a clients file: expected an object",
            "expected `{\"clients\": {\"NAME\": {\"token\": \"${ENV_VAR}\", \"mode\": ...}}}`",
        )]);
    };
    let mut errors = Vec::new();
    let mut out = Parsed::default();
    given_twice(text, &mut errors);
    unknown_keys(
        top,
        &["clients", "jwt", "authorization_servers"],
        "",
        &mut errors,
    );
    match top.get("clients") {
        None => {}
        Some(Value::Object(m)) => clients(m, env, &mut out, &mut errors),
        Some(_) => errors.push(problem("clients", "expected an object of clients by name")),
    }
    match top.get("jwt") {
        None => {}
        Some(Value::Object(m)) => out.jwt = jwt::parse_spec(m, dir, &mut out.warnings, &mut errors),
        Some(_) => errors.push(problem("jwt", "expected an object")),
    }
    match top.get("authorization_servers") {
        None => {}
        Some(Value::Array(a)) => {
            for (i, v) in a.iter().enumerate() {
                let path = format!("authorization_servers[{i}]");
                match v {
                    Value::String(s) => match url_problem(s, false) {
                        None => out.authorization_servers.push(s.clone()),
                        Some(why) => errors.push(problem(path, why)),
                    },
                    _ => errors.push(problem(path, "expected a URL")),
                }
            }
        }
        Some(_) => errors.push(problem(
            "authorization_servers",
            "expected an array of URLs",
        )),
    }
    if out.clients.is_empty() && out.jwt.is_none() && errors.is_empty() {
        errors.push(with_help(
            "",
            "no `clients` and no `jwt`: nobody could be let in",
            "name clients by token under `clients`, or accept JWT access tokens under `jwt`",
        ));
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// A client named twice: JSON keeps the last, and the first would be lost
/// without a word.
fn given_twice(text: &str, errors: &mut Vec<Problem>) {
    #[derive(serde::Deserialize)]
    struct Top {
        clients: Option<super::super::servers::Ordered>,
    }
    let Ok(Top {
        clients: Some(clients),
    }) = serde_json::from_str::<Top>(crate::input::strip_bom(text))
    else {
        return;
    };
    let mut seen = std::collections::HashSet::new();
    for (name, _) in &clients.0 {
        if !seen.insert(name) {
            let shown = crate::chars::escape(name);
            errors.push(problem(
                at("clients", name),
                format!("client `{shown}` is given twice"),
            ));
        }
    }
}

const CLIENT_KEYS: [&str; 6] = ["token", "token_sha256", "mode", "bot", "flags", "grants"];

fn clients(
    m: &Map<String, Value>,
    env: &dyn Fn(&str) -> Option<String>,
    out: &mut Parsed,
    errors: &mut Vec<Problem>,
) {
    // Where each digest was first given, to refuse a token given twice.
    let mut seen: HashMap<Digest, String> = HashMap::new();
    for (name, entry) in m {
        let path = at("clients", name);
        if name.trim().is_empty() || name.chars().any(char::is_control) {
            errors.push(problem(
                &path,
                "a client's name is printable text that is not blank",
            ));
            continue;
        }
        let Some(obj) = entry.as_object() else {
            errors.push(problem(
                &path,
                "expected an object with a `token` or a `token_sha256`",
            ));
            continue;
        };
        unknown_keys(obj, &CLIENT_KEYS, &path, errors);
        let digest = match (obj.get("token"), obj.get("token_sha256")) {
            (Some(_), Some(_)) => {
                errors.push(problem(
                    &path,
                    "both `token` and `token_sha256` are given: keep one",
                ));
                None
            }
            (None, None) => {
                errors.push(with_help(
                    &path,
                    "missing `token` (or `token_sha256`)",
                    "`\"token\": \"${ENV_VAR}\"` names the token by an environment variable; `\"token_sha256\": \"<64 hex digits>\"` by its digest",
                ));
                None
            }
            (Some(t), None) => token(t, &at(&path, "token"), env, errors, &mut out.warnings),
            (None, Some(d)) => digest(d, &at(&path, "token_sha256"), errors),
        };
        let overrides = overrides(obj, &path, errors);
        let index = out.clients.len();
        out.clients.push((name.clone(), overrides));
        if let Some(d) = digest {
            if let Some(first) = seen.get(&d) {
                errors.push(problem(
                    &path,
                    format!("the same token as `{first}`: each client needs a token of its own"),
                ));
            } else {
                seen.insert(d, path.clone());
                out.tokens.push((d, index));
            }
        }
    }
}

/// `${NAME}` and nothing else: the token itself never sits in the file.
fn token(
    v: &Value,
    path: &str,
    env: &dyn Fn(&str) -> Option<String>,
    errors: &mut Vec<Problem>,
    warnings: &mut Vec<Problem>,
) -> Option<Digest> {
    let Value::String(raw) = v else {
        errors.push(problem(path, "expected `${ENV_VAR}`, a string"));
        return None;
    };
    let var = raw
        .strip_prefix("${")
        .and_then(|r| r.strip_suffix('}'))
        .filter(|var| {
            var.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
    let Some(var) = var else {
        let message = if raw.contains("${") {
            "a token is named by one environment variable alone, `${NAME}`, with no default or other text"
        } else {
            "a token is never written in the file in clear"
        };
        errors.push(with_help(
            path,
            message,
            "put the token in an environment variable and write `\"token\": \"${NAME}\"`, or give its SHA-256 digest as `token_sha256`",
        ));
        return None;
    };
    match env(var) {
        None => {
            errors.push(with_help(
                path,
                format!("environment variable `{var}` is not set"),
                "set it before the gateway starts, or give the token's SHA-256 digest as `token_sha256`",
            ));
            None
        }
        Some(t) if t.trim().is_empty() => {
            errors.push(problem(
                path,
                format!("environment variable `{var}` is empty: a token cannot be"),
            ));
            None
        }
        Some(t) if !t.chars().all(is_token_char) => {
            errors.push(with_help(
                path,
                format!("the token in `{var}` has characters a bearer token cannot carry"),
                "a bearer token is letters, digits and `-._~+/=`: `openssl rand -hex 32` makes one",
            ));
            None
        }
        Some(t) => {
            if t.len() < MIN_TOKEN_CHARS {
                warnings.push(with_help(
                    path,
                    format!(
                        "the token in `{var}` is {} characters: a short token can be guessed",
                        t.len()
                    ),
                    "`openssl rand -hex 32` makes one of 64",
                ));
            }
            Some(Sha256::digest(t.as_bytes()).into())
        }
    }
}

/// Shorter tokens are a warning.
pub const MIN_TOKEN_CHARS: usize = 16;

/// A character of a bearer token (RFC 6750's `b64token`).
pub fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~+/=".contains(c)
}

/// 64 hexadecimal digits, in either case.
fn digest(v: &Value, path: &str, errors: &mut Vec<Problem>) -> Option<Digest> {
    let help =
        "the token's SHA-256 digest as 64 hexadecimal digits: `printf %s \"$TOKEN\" | sha256sum`";
    let Value::String(hex) = v else {
        errors.push(with_help(
            path,
            "expected a string of 64 hexadecimal digits",
            help,
        ));
        return None;
    };
    let hex = hex.trim();
    let parsed = (hex.len() == 64 && hex.is_ascii())
        .then(|| {
            let mut d = [0u8; 32];
            for (i, pair) in hex.as_bytes().chunks(2).enumerate() {
                let s = std::str::from_utf8(pair).ok()?;
                d[i] = u8::from_str_radix(s, 16).ok()?;
            }
            Some(d)
        })
        .flatten();
    if parsed.is_none() {
        let shown: String = hex.chars().take(80).collect();
        errors.push(with_help(
            path,
            format!(
                "`{}` is not a SHA-256 digest (64 hexadecimal digits)",
                crate::chars::escape(&shown)
            ),
            help,
        ));
    }
    parsed
}

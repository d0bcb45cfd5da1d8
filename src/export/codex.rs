//! Codex: each server a `[mcp_servers.NAME]` table of `.codex/config.toml`
//! (`command`, `args`, `env`, `cwd`; `url` and `http_headers` for a remote
//! one; a `${VAR}` Codex can take by name as `env_vars`, `env_http_headers`
//! or `bearer_token_env_var`, since Codex expands nothing), with `enabled_tools` (the tools the policy exposes, by name: a tool
//! a server adds later stays off) and `disabled_tools` (the hidden ones).
//! Codex has no per-tool deferral, so a deferred tool is hidden or declared
//! by the fidelity option.

use serde_json::{Map, Value};

use super::{Edit, FileOut, Format, Model, Report, allow_or_deny, array, keys, one_context};

const CLIENT: &str = "codex";

pub fn export(model: &Model) -> Result<(Vec<FileOut>, Report), String> {
    let ctx = one_context(model, CLIENT)?;
    let mut report = Report::new(CLIENT, model);
    let mut edits = Vec::new();
    let mut dollar = false;
    for s in &model.servers {
        let mut t = Map::new();
        if s.remote {
            if let Some(url) = s.str("url") {
                t.insert("url".into(), url.into());
            }
            if let Some(h) = s.map("headers") {
                let (mut plain, mut from_env) = (Map::new(), Map::new());
                for (name, value) in h {
                    let text = value.as_str().unwrap_or_default();
                    let bearer = text.strip_prefix("Bearer ").and_then(variable);
                    if name.eq_ignore_ascii_case("authorization")
                        && let Some(var) = bearer
                    {
                        t.insert("bearer_token_env_var".into(), var.into());
                    } else if let Some(var) = variable(text) {
                        from_env.insert(name.clone(), var.into());
                    } else {
                        plain.insert(name.clone(), value.clone());
                    }
                }
                if !plain.is_empty() {
                    t.insert("http_headers".into(), Value::Object(plain));
                }
                if !from_env.is_empty() {
                    t.insert("env_http_headers".into(), Value::Object(from_env));
                }
            }
        } else {
            if let Some(c) = s.str("command") {
                t.insert("command".into(), c.into());
            }
            let args = s.args();
            if !args.is_empty() {
                t.insert("args".into(), array(&args));
            }
            if let Some(env) = s.map("env") {
                // `KEY: "${KEY}"` passes the variable on: Codex's `env_vars`.
                let (mut plain, mut passed) = (Map::new(), Vec::new());
                for (key, value) in env {
                    match value.as_str().and_then(variable) {
                        Some(var) if var == key => passed.push(key.clone()),
                        _ => {
                            plain.insert(key.clone(), value.clone());
                        }
                    }
                }
                if !plain.is_empty() {
                    t.insert("env".into(), Value::Object(plain));
                }
                if !passed.is_empty() {
                    t.insert("env_vars".into(), array(&passed));
                }
            }
            if let Some(cwd) = s.str("cwd") {
                t.insert("cwd".into(), cwd.into());
            }
        }
        dollar |= Value::Object(s.entry.clone()).to_string().contains("${");
        let (mut on, mut off) = (Vec::new(), Vec::new());
        for r in ctx.of(&s.name) {
            if allow_or_deny(&mut report, model, ctx, r, "Codex") {
                on.push(r.tool.clone());
            } else {
                off.push(r.tool.clone());
            }
        }
        t.insert("enabled_tools".into(), array(&on));
        t.insert("disabled_tools".into(), array(&off));
        edits.push(Edit::Set(keys(&["mcp_servers", &s.name]), Value::Object(t)));
    }
    report.notes.push(
        "Codex reads a project's `.codex/config.toml` only when it trusts the project (`trust_level = \"trusted\"` under `[projects.\"PATH\"]` in `~/.codex/config.toml`); else write `~/.codex/config.toml` (`--out ~`)".into(),
    );
    if dollar {
        report.notes.push(
            "Codex does not expand `${VAR}` in its config: an `env` entry `KEY: \"${KEY}\"` became `env_vars`, a header `${VAR}` `env_http_headers` and `Authorization: Bearer ${VAR}` `bearer_token_env_var`; the other values with `${` are written as the servers file has them, for you to set in Codex".into(),
        );
    }
    Ok((
        vec![FileOut {
            path: ".codex/config.toml".into(),
            format: Format::Toml,
            edits,
        }],
        report,
    ))
}

/// `NAME` of a value that is exactly `${NAME}` (no default, nothing
/// around it): what Codex can take from the environment by name.
fn variable(text: &str) -> Option<&str> {
    let name = text.strip_prefix("${")?.strip_suffix('}')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    let fits = (first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    fits.then_some(name)
}

#[cfg(test)]
mod tests {
    use super::variable;

    #[test]
    fn only_a_whole_plain_variable_is_taken_by_name() {
        assert_eq!(variable("${TOKEN}"), Some("TOKEN"));
        assert_eq!(variable("${_A1}"), Some("_A1"));
        assert_eq!(variable("${TOKEN:-x}"), None);
        assert_eq!(variable("a${TOKEN}"), None);
        assert_eq!(variable("${TOKEN}b"), None);
        assert_eq!(variable("${1A}"), None);
        assert_eq!(variable("${}"), None);
        assert_eq!(variable("$TOKEN"), None);
    }
}

//! Codex: each server a `[mcp_servers.NAME]` table of `.codex/config.toml`
//! (`command`, `args`, `env`, `cwd`; `url` and `http_headers` for a remote
//! one), with `enabled_tools` (the tools the policy exposes, by name: a tool
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
                t.insert("http_headers".into(), Value::Object(h.clone()));
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
                t.insert("env".into(), Value::Object(env.clone()));
            }
            if let Some(cwd) = s.str("cwd") {
                t.insert("cwd".into(), cwd.into());
            }
        }
        dollar |= Value::Object(t.clone()).to_string().contains("${");
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
            "Codex does not expand `${VAR}` in its config: the values are written as the servers file has them; set them in Codex's own way (`env_vars`, `bearer_token_env_var`)".into(),
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

//! Gemini CLI, and Qwen Code (which reads the same settings): each server
//! an entry of `mcpServers` in `.gemini/settings.json` (`.qwen/` for Qwen
//! Code), with `includeTools` (the tools the policy exposes, by name) and
//! `excludeTools` (the hidden ones). Both expand `$VAR` and `${VAR}` in the
//! settings. A remote server's URL is `httpUrl`, their key for streamable
//! HTTP. No per-tool deferral: a deferred tool is hidden or declared by the
//! fidelity option.

use serde_json::{Map, Value};

use super::{Edit, FileOut, Format, Model, Report, allow_or_deny, array, keys, one_context};

pub fn export(model: &Model, client: &'static str) -> Result<(Vec<FileOut>, Report), String> {
    let (name, path) = match client {
        "qwen-code" => ("Qwen Code", ".qwen/settings.json"),
        _ => ("Gemini CLI", ".gemini/settings.json"),
    };
    let ctx = one_context(model, client)?;
    let mut report = Report::new(client, model);
    let mut edits = Vec::new();
    for s in &model.servers {
        let mut e = Map::new();
        if s.remote {
            if let Some(url) = s.str("url") {
                e.insert("httpUrl".into(), url.into());
            }
            if let Some(h) = s.map("headers") {
                e.insert("headers".into(), Value::Object(h.clone()));
            }
        } else {
            for k in ["command", "args", "env", "cwd"] {
                if let Some(v) = s.entry.get(k) {
                    e.insert(k.into(), v.clone());
                }
            }
        }
        let (mut on, mut off) = (Vec::new(), Vec::new());
        for r in ctx.of(&s.name) {
            if allow_or_deny(&mut report, model, ctx, r, name) {
                on.push(r.tool.clone());
            } else {
                off.push(r.tool.clone());
            }
        }
        e.insert("includeTools".into(), array(&on));
        e.insert("excludeTools".into(), array(&off));
        edits.push(Edit::Set(keys(&["mcpServers", &s.name]), Value::Object(e)));
    }
    if client == "qwen-code" {
        report.notes.push(
            "Qwen Code runs a project's servers only once approved (`qwen mcp approve NAME`), bound to the entry as written: approve again after an export that changes it; headless, an unapproved server is skipped. `~/.qwen/settings.json` (`--out ~`) needs no approval".into(),
        );
    }
    Ok((
        vec![FileOut {
            path: path.into(),
            format: Format::Json,
            edits,
        }],
        report,
    ))
}

//! Gemini CLI, and Qwen Code (which reads the same settings): each server
//! an entry of `mcpServers` in `.gemini/settings.json` (`.qwen/` for Qwen
//! Code), with `includeTools` (the tools the policy exposes, by name) and
//! `excludeTools` (the hidden ones). Both expand `$VAR` and `${VAR}` in the
//! settings. A remote server's URL is `httpUrl`, their key for streamable
//! HTTP. Gemini CLI has no per-tool deferral: a deferred tool is hidden or
//! declared by the fidelity option. Qwen Code's tool search (on by default)
//! defers every MCP tool, and `tools.visible` declares chosen ones from the
//! first turn: a deferred tool is included and left to the tool search, an
//! active one is included and made visible.

use serde_json::{Map, Value};

use super::{Edit, FileOut, Format, Model, Owned, Report, allow_or_deny, array, keys, one_context};
use crate::decision::Exposure;

pub fn export(model: &Model, client: &'static str) -> Result<(Vec<FileOut>, Report), String> {
    let (name, path) = match client {
        "qwen-code" => ("Qwen Code", ".qwen/settings.json"),
        _ => ("Gemini CLI", ".gemini/settings.json"),
    };
    let ctx = one_context(model, client)?;
    let mut report = Report::new(client, model);
    let qwen = client == "qwen-code";
    let mut edits = Vec::new();
    let mut visible = Vec::new();
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
            let exposed = match r.exposure {
                Exposure::Deferred if qwen => true,
                _ => allow_or_deny(&mut report, model, ctx, r, name),
            };
            if exposed {
                on.push(r.tool.clone());
            } else {
                off.push(r.tool.clone());
            }
            if qwen && r.exposure == Exposure::Active {
                // Qwen Code names an MCP tool `mcp__SERVER__TOOL`.
                visible.push(format!("mcp__{}__{}", s.name, r.tool));
            }
        }
        e.insert("includeTools".into(), array(&on));
        e.insert("excludeTools".into(), array(&off));
        edits.push(Edit::Set(keys(&["mcpServers", &s.name]), Value::Object(e)));
    }
    if qwen {
        // The user's own entries of `tools.visible` (built-in tools, other
        // servers) stay; those of the exported servers are the export's.
        edits.push(Edit::List {
            path: keys(&["tools", "visible"]),
            items: visible,
            owned: Owned::mcp_tools(model),
        });
        report.notes.push(
            "deferred tools are left to Qwen Code's tool search (`tools.toolSearch.enabled`, on by default), which defers MCP tools; the active ones are in `tools.visible`, declared from the first turn. With the tool search off every included tool is declared".into(),
        );
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

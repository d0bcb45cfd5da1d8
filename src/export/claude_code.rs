//! Claude Code: the servers in `.mcp.json` (`mcpServers`, which Claude Code
//! reads as the servers file is written, `${VAR}` and `${VAR:-default}`
//! expanded by Claude Code itself), and the hidden tools as
//! `permissions.deny` rules in `.claude/settings.json`: `mcp__SERVER__tool`,
//! or `mcp__SERVER` when every tool of the server is hidden (the rule Claude
//! Code's permissions give for "any tool of this server").

use serde_json::Value;

use super::{Edit, Exposure, FileOut, Format, Model, Owned, Report, keys, one_context};

const CLIENT: &str = "claude-code";

pub fn export(model: &Model) -> Result<(Vec<FileOut>, Report), String> {
    let ctx = one_context(model, CLIENT)?;
    let mut report = Report::new(CLIENT, model);
    let servers = model
        .servers
        .iter()
        .map(|s| {
            Edit::Set(
                keys(&["mcpServers", &s.name]),
                Value::Object(s.entry.clone()),
            )
        })
        .collect();
    let mut deny = Vec::new();
    for s in &model.servers {
        let rows: Vec<_> = ctx.of(&s.name).collect();
        // Claude Code defers MCP tools itself (its tool search): a deferred
        // tool is not denied.
        let denied: Vec<_> = rows
            .iter()
            .filter(|r| r.exposure == Exposure::Hidden)
            .collect();
        if !rows.is_empty() && denied.len() == rows.len() {
            deny.push(format!("mcp__{}", s.name));
        } else {
            deny.extend(
                denied
                    .iter()
                    .map(|r| format!("mcp__{}__{}", s.name, r.tool)),
            );
        }
        for r in &rows {
            if r.exposure == Exposure::Active {
                report.lose(
                    ctx,
                    r,
                    "declared or deferred, as Claude Code's tool search decides",
                    "Claude Code defers MCP tools as a whole when its tool search is on; it cannot keep one tool declared",
                );
            }
        }
    }
    report.notes.push(
        "deferred tools are left to Claude Code's tool search (`ENABLE_TOOL_SEARCH`), which defers MCP tools; with it off they are declared".into(),
    );
    report.notes.push(
        "`permissions.allow` is left as it is: an allow rule also skips Claude Code's prompt before a call, which a policy does not decide".into(),
    );
    let owned = Owned::mcp_tools(model);
    let files = vec![
        FileOut {
            path: ".mcp.json".into(),
            format: Format::Json,
            edits: servers,
        },
        FileOut {
            path: ".claude/settings.json".into(),
            format: Format::Json,
            edits: vec![Edit::List {
                path: keys(&["permissions", "deny"]),
                items: deny,
                owned,
            }],
        },
    ];
    Ok((files, report))
}

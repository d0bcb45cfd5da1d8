//! VS Code (Copilot Chat): the servers in `.vscode/mcp.json` (`servers`,
//! `type: stdio` or `http`), `${VAR}` written as VS Code's `${env:VAR}`.
//! Its `mcp.json` has no per-tool keys: each context becomes a custom agent
//! (`.github/agents/MODE.agent.md`) whose `tools:` names the tools the
//! policy exposes, as `SERVER/tool`. Outside those agents VS Code offers
//! every tool of the servers, which the report says. No per-tool deferral
//! it can be told: a deferred tool is hidden or declared by the fidelity
//! option.

use serde_json::{Map, Value};

use super::{Edit, FileOut, Format, Model, Report, Server, allow_or_deny, keys};

const CLIENT: &str = "vscode";

/// `${VAR}` (the environment, as the gateway reads it) as VS Code writes
/// it, `${env:VAR}`; a `${VAR:-default}`, which VS Code has no form for,
/// is left as written.
fn env_syntax(v: &Value) -> Value {
    match v {
        Value::String(s) => {
            let mut out = String::new();
            let mut rest = s.as_str();
            while let Some(i) = rest.find("${") {
                out += &rest[..i];
                let Some(end) = rest[i..].find('}').map(|e| e + i) else {
                    break;
                };
                let name = &rest[i + 2..end];
                if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    out += &format!("${{env:{name}}}");
                } else {
                    out += &rest[i..=end];
                }
                rest = &rest[end + 1..];
            }
            out += rest;
            Value::String(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(env_syntax).collect()),
        Value::Object(m) => {
            Value::Object(m.iter().map(|(k, x)| (k.clone(), env_syntax(x))).collect())
        }
        other => other.clone(),
    }
}

fn entry(s: &Server) -> Value {
    let mut e = Map::new();
    e.insert(
        "type".into(),
        if s.remote { "http" } else { "stdio" }.into(),
    );
    let fields: &[&str] = if s.remote {
        &["url", "headers"]
    } else {
        &["command", "args", "env", "cwd"]
    };
    for k in fields {
        if let Some(v) = s.entry.get(*k) {
            e.insert((*k).into(), v.clone());
        }
    }
    env_syntax(&Value::Object(e))
}

/// A YAML flow list of single-quoted strings.
fn yaml_list(items: &[String]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|i| format!("'{}'", i.replace('\'', "''")))
        .collect();
    format!("[{}]", quoted.join(", "))
}

pub fn export(model: &Model) -> Result<(Vec<FileOut>, Report), String> {
    let mut report = Report::new(CLIENT, model);
    let edits = model
        .servers
        .iter()
        .map(|s| Edit::Set(keys(&["servers", &s.name]), entry(s)))
        .collect();
    let mut files = vec![FileOut {
        path: ".vscode/mcp.json".into(),
        format: Format::Json,
        edits,
    }];
    for ctx in &model.contexts {
        let mut tools = Vec::new();
        for r in &ctx.rows {
            if allow_or_deny(&mut report, model, ctx, r, "VS Code") {
                tools.push(format!("{}/{}", r.server, r.tool));
            }
        }
        let text = format!(
            "---\ndescription: 'The tools the policy gives in {}'\ntools: {}\n---\nWritten by `policy export --to vscode`: the tools this agent may use are the policy's, in {}.\n",
            match &ctx.context.mode {
                Some(m) => format!("mode {m}"),
                None => "its default context".into(),
            },
            yaml_list(&tools),
            match &ctx.context.mode {
                Some(m) => format!("mode `{m}`"),
                None => "its default context".into(),
            },
        );
        files.push(FileOut {
            path: format!(".github/agents/{}.agent.md", ctx.label()),
            format: Format::Text,
            edits: vec![Edit::Set(Vec::new(), Value::String(text))],
        });
    }
    report.notes.push(
        "VS Code's mcp.json cannot hide a tool: the limits hold in the exported custom agents only; outside them every tool of the servers is offered".into(),
    );
    Ok((files, report))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_is_written_as_vscode_writes_it() {
        let v = env_syntax(&Value::String(
            "${HOME}/${A:-x}/${env:B}/${workspaceFolder}".into(),
        ));
        assert_eq!(v, "${env:HOME}/${A:-x}/${env:B}/${env:workspaceFolder}");
    }
}

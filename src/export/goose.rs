//! goose: each server an entry of `extensions` in goose's `config.yaml`
//! (`type: stdio` with `cmd`, `args` and `envs`, or `type:
//! streamable_http` with `uri` and `headers`), and `available_tools` the
//! tools the policy exposes, by name. A server with none exposed is
//! written `enabled: false`: an empty list is not relied on to mean none.
//! goose has no profiles, so one context; no deferral, so a deferred tool
//! is hidden or declared by the fidelity option. The file is written whole:
//! there is no YAML editor here that keeps a file's comments, so `--out`
//! does not merge into an existing config.yaml.

use serde_json::Value;

use super::{Edit, FileOut, Format, Model, Report, allow_or_deny, one_context};

const CLIENT: &str = "goose";

/// A YAML double-quoted scalar: JSON's string syntax is one.
fn q(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

fn map(out: &mut String, key: &str, m: Option<&serde_json::Map<String, Value>>) {
    let Some(m) = m.filter(|m| !m.is_empty()) else {
        return;
    };
    *out += &format!("    {key}:\n");
    for (k, v) in m {
        *out += &format!("      {}: {}\n", q(k), q(v.as_str().unwrap_or_default()));
    }
}

pub fn export(model: &Model) -> Result<(Vec<FileOut>, Report), String> {
    let ctx = one_context(model, CLIENT)?;
    let mut report = Report::new(CLIENT, model);
    let mut out = String::from("# Written by `policy export --to goose`.\nextensions:\n");
    for s in &model.servers {
        let mut on = Vec::new();
        for r in ctx.of(&s.name) {
            if allow_or_deny(&mut report, model, ctx, r, "goose") {
                on.push(r.tool.clone());
            }
        }
        out += &format!("  {}:\n    name: {}\n", q(&s.name), q(&s.name));
        if s.remote {
            out += "    type: streamable_http\n";
            out += &format!("    uri: {}\n", q(s.str("url").unwrap_or_default()));
            map(&mut out, "headers", s.map("headers"));
        } else {
            out += "    type: stdio\n";
            out += &format!("    cmd: {}\n", q(s.str("command").unwrap_or_default()));
            let args: Vec<String> = s.args().iter().map(|a| q(a)).collect();
            out += &format!("    args: [{}]\n", args.join(", "));
            map(&mut out, "envs", s.map("env"));
        }
        out += &format!("    enabled: {}\n", !on.is_empty());
        let tools: Vec<String> = on.iter().map(|t| q(t)).collect();
        out += &format!("    available_tools: [{}]\n", tools.join(", "));
    }
    report.notes.push(
        "goose's config.yaml is written whole: copy its `extensions` entries into yours".into(),
    );
    Ok((
        vec![FileOut {
            path: "config.yaml".into(),
            format: Format::Whole,
            edits: vec![Edit::Set(Vec::new(), Value::String(out))],
        }],
        report,
    ))
}

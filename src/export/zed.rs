//! Zed: each server an entry of `context_servers` in `.zed/settings.json`
//! (`source: custom`, with `command`, `args` and `env`, or `url` and
//! `headers`), and each context an agent profile (`agent.profiles.MODE`)
//! that turns on, by name, the tools the policy exposes
//! (`context_servers.SERVER.tools.TOOL: true`) and every other tool off
//! (`enable_all_context_servers: false`, hidden ones `false` too). No
//! per-tool deferral: a deferred tool is hidden or declared by the fidelity
//! option.

use serde_json::{Map, Value};

use super::{Edit, FileOut, Format, Model, Report, allow_or_deny, keys};

const CLIENT: &str = "zed";

pub fn export(model: &Model) -> Result<(Vec<FileOut>, Report), String> {
    let mut report = Report::new(CLIENT, model);
    let mut edits = Vec::new();
    for s in &model.servers {
        let mut e = Map::new();
        e.insert("source".into(), "custom".into());
        let fields: &[&str] = if s.remote {
            &["url", "headers"]
        } else {
            &["command", "args", "env"]
        };
        for k in fields {
            if let Some(v) = s.entry.get(*k) {
                e.insert((*k).into(), v.clone());
            }
        }
        edits.push(Edit::Set(
            keys(&["context_servers", &s.name]),
            Value::Object(e),
        ));
    }
    for ctx in &model.contexts {
        let mut servers = Map::new();
        for s in &model.servers {
            let mut tools = Map::new();
            for r in ctx.of(&s.name) {
                let on = allow_or_deny(&mut report, model, ctx, r, "Zed");
                tools.insert(r.tool.clone(), on.into());
            }
            let mut entry = Map::new();
            entry.insert("tools".into(), Value::Object(tools));
            servers.insert(s.name.clone(), Value::Object(entry));
        }
        let mut profile = Map::new();
        profile.insert("name".into(), format!("policy: {}", ctx.label()).into());
        profile.insert("enable_all_context_servers".into(), false.into());
        profile.insert("context_servers".into(), Value::Object(servers));
        edits.push(Edit::Set(
            keys(&["agent", "profiles", ctx.label()]),
            Value::Object(profile),
        ));
    }
    report.notes.push(
        "the limits hold in the exported agent profiles: choose one in Zed's agent panel".into(),
    );
    Ok((
        vec![FileOut {
            path: ".zed/settings.json".into(),
            format: Format::Json,
            edits,
        }],
        report,
    ))
}

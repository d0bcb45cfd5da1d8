//! opencode: each server an entry of `mcp` in `opencode.json` (`type:
//! local` with `command` as one array and `environment`, or `type: remote`
//! with `url` and `headers`), `${VAR}` written as opencode's `{env:VAR}`.
//! Tools are named `SERVER_tool` there, and the `tools` map turns them off
//! with `false`, globs allowed: `SERVER_*` where every tool of the server is
//! hidden and the glob matches no other tool. One context: the top-level
//! `tools`. Several (modes): every server's tools off at the top level, and
//! an agent per mode (`agent.MODE.tools`) that turns on, by name, what the
//! mode exposes. No per-tool deferral: a deferred tool is hidden or
//! declared by the fidelity option.

use serde_json::{Map, Value};

use super::{Ctx, Edit, FileOut, Format, Model, Owned, Report, Server, allow_or_deny, keys};
use crate::pattern::Pattern;

const CLIENT: &str = "opencode";

/// `${VAR}` as opencode writes it, `{env:VAR}`; `None` for a default
/// (`${VAR:-x}`), which opencode has no way to say.
fn env_syntax(s: &str) -> Option<String> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        out += &rest[..i];
        let end = rest[i..].find('}')? + i;
        let name = &rest[i + 2..end];
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        out += &format!("{{env:{name}}}");
        rest = &rest[end + 1..];
    }
    out += rest;
    Some(out)
}

fn converted(v: &Value, lost: &mut bool) -> Value {
    match v {
        Value::String(s) => match env_syntax(s) {
            Some(c) => Value::String(c),
            None => {
                *lost = true;
                v.clone()
            }
        },
        Value::Array(a) => Value::Array(a.iter().map(|x| converted(x, lost)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), converted(x, lost)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn entry(s: &Server, lost: &mut bool) -> Value {
    let mut e = Map::new();
    if s.remote {
        e.insert("type".into(), "remote".into());
        if let Some(url) = s.entry.get("url") {
            e.insert("url".into(), url.clone());
        }
        if let Some(h) = s.entry.get("headers") {
            e.insert("headers".into(), h.clone());
        }
    } else {
        e.insert("type".into(), "local".into());
        let mut command = vec![Value::String(s.str("command").unwrap_or("").into())];
        command.extend(s.args().into_iter().map(Value::String));
        e.insert("command".into(), Value::Array(command));
        if let Some(env) = s.entry.get("env") {
            e.insert("environment".into(), env.clone());
        }
    }
    e.insert("enabled".into(), true.into());
    converted(&Value::Object(e), lost)
}

/// `SERVER_*` when it matches exactly `names` among `all`.
fn glob_for(server: &str, names: &[String], all: &[String]) -> Option<String> {
    let glob = format!("{server}_*");
    let matched: Vec<&String> = all
        .iter()
        .filter(|n| Pattern::new(&glob).matches(n))
        .collect();
    (matched.len() == names.len() && matched.iter().all(|n| names.contains(n))).then_some(glob)
}

/// One context's `tools` map: hidden tools `false`; with `on`, exposed ones
/// `true` too (an agent's map over a top level that turns all off).
fn tools(
    model: &Model,
    ctx: &Ctx,
    report: &mut Report,
    all: &[String],
    on: bool,
) -> Map<String, Value> {
    let mut map = Map::new();
    for s in &model.servers {
        let rows: Vec<_> = ctx.of(&s.name).collect();
        let (mut shown, mut hidden) = (Vec::new(), Vec::new());
        for r in &rows {
            let name = format!("{}_{}", s.name, r.tool);
            if allow_or_deny(report, model, ctx, r, "opencode") {
                shown.push(name);
            } else {
                hidden.push(name);
            }
        }
        if shown.is_empty()
            && !rows.is_empty()
            && let Some(g) = glob_for(&s.name, &hidden, all)
        {
            map.insert(g, false.into());
            continue;
        }
        if on {
            for n in shown {
                map.insert(n, true.into());
            }
        }
        for n in hidden {
            map.insert(n, false.into());
        }
    }
    map
}

pub fn export(model: &Model) -> Result<(Vec<FileOut>, Report), String> {
    let mut report = Report::new(CLIENT, model);
    let mut lost = false;
    let mut edits = vec![Edit::set(
        &["$schema"],
        "https://opencode.ai/config.json".into(),
    )];
    for s in &model.servers {
        edits.push(Edit::Set(keys(&["mcp", &s.name]), entry(s, &mut lost)));
    }
    if lost {
        report.notes.push(
            "a `${VAR:-default}` has no opencode form (`{env:VAR}`): written as the servers file has it".into(),
        );
    }
    let all: Vec<String> = model.contexts[0]
        .rows
        .iter()
        .map(|r| format!("{}_{}", r.server, r.tool))
        .collect();
    let owned = Owned {
        prefixes: model.servers.iter().map(|s| s.name.clone()).collect(),
        sep: "_",
    };
    match model.contexts.as_slice() {
        [one] if one.context.mode.is_none() => {
            let entries = tools(model, one, &mut report, &all, false);
            edits.push(Edit::Entries {
                path: keys(&["tools"]),
                entries,
                owned,
            });
        }
        many => {
            let mut off = Map::new();
            for s in &model.servers {
                off.insert(format!("{}_*", s.name), false.into());
            }
            edits.push(Edit::Entries {
                path: keys(&["tools"]),
                entries: off,
                owned: owned.clone(),
            });
            for ctx in many {
                let entries = tools(model, ctx, &mut report, &all, true);
                edits.push(Edit::Entries {
                    path: keys(&["agent", ctx.label(), "tools"]),
                    entries,
                    owned: owned.clone(),
                });
            }
            report.notes.push(
                "each mode is an agent (`agent.MODE.tools`) over a top level that turns every server tool off: choose the agent in opencode".into(),
            );
        }
    }
    Ok((
        vec![FileOut {
            path: "opencode.json".into(),
            format: Format::Json,
            edits,
        }],
        report,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_is_written_as_opencode_writes_it() {
        assert_eq!(
            env_syntax("a ${HOME}/x${B_2}").unwrap(),
            "a {env:HOME}/x{env:B_2}"
        );
        assert_eq!(env_syntax("plain").unwrap(), "plain");
        assert!(env_syntax("${A:-x}").is_none());
        assert!(env_syntax("${A").is_none());
    }

    #[test]
    fn a_glob_only_when_it_names_exactly_the_set() {
        let all: Vec<String> = ["fs_a", "fs_b", "fs_x_c"].map(String::from).into();
        let two: Vec<String> = ["fs_a", "fs_b"].map(String::from).into();
        assert_eq!(glob_for("fs", &two, &all), None);
        assert_eq!(glob_for("fs", &all, &all).as_deref(), Some("fs_*"));
    }
}

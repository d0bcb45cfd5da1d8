//! The servers file (SPEC 5.2): the JSON clients already keep their MCP
//! servers in, `{"mcpServers": {NAME: {command, args?, env?, cwd?}}}`, or VS
//! Code's `{"servers": {...}}`. Read strictly: every problem is reported with
//! its JSON path (`mcpServers.github.command`), all of them at once, before
//! any child is started. Fields other clients keep beside ours (`type:
//! "stdio"`, `disabled`, `autoApprove`...) are warnings, not errors, so one
//! file can serve a client and the gateway.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::Value;

/// Longest server name: `NAME__tool` must leave room for the tool's own name
/// within the 64 characters providers accept.
pub const MAX_NAME_CHARS: usize = 32;

/// One child server, as the file describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    /// Added to the gateway's own environment, in file order.
    pub env: Vec<(String, String)>,
    /// Resolved against the servers file's folder when relative.
    pub cwd: Option<PathBuf>,
}

/// A problem at one place in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// A JSON path such as `mcpServers.github.command`; empty for the document.
    pub path: String,
    pub message: String,
    pub help: Option<String>,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)?;
        } else {
            write!(f, "`{}`: {}", self.path, self.message)?;
        }
        if let Some(help) = &self.help {
            write!(f, "\n  help: {help}")?;
        }
        Ok(())
    }
}

fn problem(path: impl Into<String>, message: impl Into<String>) -> Problem {
    Problem {
        path: path.into(),
        message: message.into(),
        help: None,
    }
}

/// A servers file that loaded: its servers in file order, and its warnings.
#[derive(Debug, Clone, Default)]
pub struct ServersFile {
    pub servers: Vec<ServerSpec>,
    pub warnings: Vec<Problem>,
}

/// An object's entries in document order: `serde_json`'s map sorts its keys
/// unless a crate-wide feature says otherwise, and the registry's order is
/// the file's order.
struct Ordered(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Ordered;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Value>()? {
                    out.push((k, v));
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// The top level, with the servers object kept in order.
#[derive(Deserialize)]
struct Top {
    #[serde(rename = "mcpServers")]
    mcp_servers: Option<Ordered>,
    servers: Option<Ordered>,
    #[serde(flatten)]
    rest: serde_json::Map<String, Value>,
}

/// Why `name` cannot prefix its tools' names, if it cannot.
pub fn name_problem(name: &str) -> Option<String> {
    let ok_chars = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if name.is_empty() {
        Some("a server name cannot be empty".into())
    } else if !ok_chars {
        Some(format!(
            "server name `{}` has characters a tool name cannot carry",
            crate::chars::escape(name)
        ))
    } else if name.chars().count() > MAX_NAME_CHARS {
        Some(format!(
            "server name `{name}` is longer than {MAX_NAME_CHARS} characters"
        ))
    } else if name.contains("__") || name.ends_with('_') || name.starts_with(['_', '-']) {
        Some(format!(
            "server name `{name}` would make `{name}__tool` names ambiguous"
        ))
    } else {
        None
    }
}

const NAME_HELP: &str = "server names are 1 to 32 ASCII letters, digits, `_` and `-`, start with a letter or digit, and neither contain `__` nor end with `_`: each tool is named `NAME__tool`";

/// Reads a servers file; `dir` is its folder, against which a relative `cwd`
/// is resolved. Every problem is returned, not only the first.
pub fn parse(text: &str, dir: &Path) -> Result<ServersFile, Vec<Problem>> {
    let top: Top = serde_json::from_str(crate::input::strip_bom(text)).map_err(|e| {
        vec![Problem {
            path: String::new(),
            message: format!("not a servers file: {e}"),
            help: Some(
                "expected `{\"mcpServers\": {\"NAME\": {\"command\": ..., \"args\": [...]}}}`"
                    .into(),
            ),
        }]
    })?;
    let mut out = ServersFile::default();
    let mut errors = Vec::new();
    let (key, entries) = match (top.mcp_servers, top.servers) {
        (Some(_), Some(_)) => {
            return Err(vec![problem(
                "",
                "both `mcpServers` and `servers` are given: keep one",
            )]);
        }
        (Some(m), None) => ("mcpServers", m.0),
        (None, Some(s)) => ("servers", s.0),
        (None, None) => {
            return Err(vec![Problem {
                path: String::new(),
                message: "no `mcpServers` (or `servers`) object".into(),
                help: Some("expected `{\"mcpServers\": {\"NAME\": {\"command\": ...}}}`".into()),
            }]);
        }
    };
    for k in top.rest.keys() {
        out.warnings.push(problem(
            k.as_str(),
            format!("unknown field `{}`, ignored", crate::chars::escape(k)),
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for (name, entry) in entries {
        let path = format!("{key}.{}", crate::chars::escape(&name));
        if !seen.insert(name.clone()) {
            errors.push(problem(&path, format!("server `{name}` is given twice")));
            continue;
        }
        if let Some(why) = name_problem(&name) {
            errors.push(Problem {
                path: path.clone(),
                message: why,
                help: Some(NAME_HELP.into()),
            });
            continue;
        }
        match server(&name, &path, &entry, dir, &mut out.warnings) {
            Ok(Some(spec)) => out.servers.push(spec),
            Ok(None) => {}
            Err(mut e) => errors.append(&mut e),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// One entry; `Ok(None)` for an entry the file disables.
fn server(
    name: &str,
    path: &str,
    entry: &Value,
    dir: &Path,
    warnings: &mut Vec<Problem>,
) -> Result<Option<ServerSpec>, Vec<Problem>> {
    let Some(obj) = entry.as_object() else {
        return Err(vec![problem(path, "expected an object with a `command`")]);
    };
    if obj.get("disabled") == Some(&Value::Bool(true)) {
        warnings.push(problem(
            path,
            format!("server `{name}` is disabled, skipped"),
        ));
        return Ok(None);
    }
    let remote = obj.contains_key("url")
        || obj
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| t != "stdio");
    if remote {
        return Err(vec![Problem {
            path: path.into(),
            message: format!("server `{name}` is a remote (HTTP) server: not supported yet"),
            help: Some(
                "the gateway starts local servers over standard input/output: give a `command`"
                    .into(),
            ),
        }]);
    }
    let mut errors = Vec::new();
    let command = match obj.get("command") {
        Some(Value::String(c)) if !c.trim().is_empty() => c.clone(),
        Some(Value::String(_)) => {
            errors.push(problem(format!("{path}.command"), "the command is empty"));
            String::new()
        }
        Some(_) => {
            errors.push(problem(format!("{path}.command"), "expected a string"));
            String::new()
        }
        None => {
            errors.push(problem(path, "missing `command`"));
            String::new()
        }
    };
    let args = match obj.get("args") {
        None => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .enumerate()
            .filter_map(|(i, v)| match v {
                Value::String(s) => Some(s.clone()),
                _ => {
                    errors.push(problem(format!("{path}.args[{i}]"), "expected a string"));
                    None
                }
            })
            .collect(),
        Some(_) => {
            errors.push(problem(
                format!("{path}.args"),
                "expected an array of strings",
            ));
            Vec::new()
        }
    };
    let env = match obj.get("env") {
        None => Vec::new(),
        Some(Value::Object(m)) => m
            .iter()
            .filter_map(|(k, v)| match v {
                Value::String(s) => Some((k.clone(), s.clone())),
                _ => {
                    errors.push(problem(
                        format!("{path}.env.{}", crate::chars::escape(k)),
                        "expected a string",
                    ));
                    None
                }
            })
            .collect(),
        Some(_) => {
            errors.push(problem(
                format!("{path}.env"),
                "expected an object of strings",
            ));
            Vec::new()
        }
    };
    let cwd = match obj.get("cwd") {
        None => None,
        Some(Value::String(c)) => Some(dir.join(c)),
        Some(_) => {
            errors.push(problem(format!("{path}.cwd"), "expected a string"));
            None
        }
    };
    const KNOWN: [&str; 6] = ["command", "args", "env", "cwd", "type", "disabled"];
    for k in obj.keys().filter(|k| !KNOWN.contains(&k.as_str())) {
        warnings.push(problem(
            format!("{path}.{}", crate::chars::escape(k)),
            format!("unknown field `{}`, ignored", crate::chars::escape(k)),
        ));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Some(ServerSpec {
        name: name.to_string(),
        command,
        args,
        env,
        cwd,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> ServersFile {
        parse(text, Path::new("/base")).unwrap()
    }

    fn errors(text: &str) -> Vec<String> {
        parse(text, Path::new("/base"))
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn reads_both_shapes_in_file_order() {
        let f = ok(
            r#"{"mcpServers": {"zeta": {"command": "z", "args": ["-y"], "env": {"K": "v"}, "cwd": "sub"},
                                     "alpha": {"command": "a"}}}"#,
        );
        let names: Vec<&str> = f.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["zeta", "alpha"]);
        assert_eq!(f.servers[0].args, ["-y"]);
        assert_eq!(f.servers[0].env, [("K".to_string(), "v".to_string())]);
        assert_eq!(f.servers[0].cwd.as_deref(), Some(Path::new("/base/sub")));
        let f = ok(r#"{"servers": {"git": {"type": "stdio", "command": "uvx"}}, "inputs": []}"#);
        assert_eq!(f.servers[0].command, "uvx");
        assert_eq!(
            f.warnings[0].to_string(),
            "`inputs`: unknown field `inputs`, ignored"
        );
    }

    #[test]
    fn every_problem_is_reported_with_its_path() {
        let e = errors(
            r#"{"mcpServers": {"a": {"args": [1]}, "b__c": {"command": "x"},
                               "web": {"url": "https://example.com/mcp"}, "d": {"command": 3}}}"#,
        );
        assert_eq!(e.len(), 5, "{e:?}");
        assert_eq!(e[0], "`mcpServers.a`: missing `command`");
        assert_eq!(e[1], "`mcpServers.a.args[0]`: expected a string");
        assert!(e[2].starts_with("`mcpServers.b__c`: server name `b__c` would make"));
        assert!(e[2].contains("help: server names are"));
        assert!(e[3].starts_with(
            "`mcpServers.web`: server `web` is a remote (HTTP) server: not supported yet"
        ));
        assert_eq!(e[4], "`mcpServers.d.command`: expected a string");
    }

    #[test]
    fn shapes_that_are_not_servers_files() {
        assert!(errors("[]")[0].starts_with("not a servers file"));
        assert!(errors("{}")[0].starts_with("no `mcpServers`"));
        assert!(errors(r#"{"mcpServers": {}, "servers": {}}"#)[0].contains("keep one"));
        assert!(errors(r#"{"mcpServers": {"a b": {"command": "x"}}}"#)[0].contains("characters"));
        let f = ok(r#"{"mcpServers": {"off": {"command": "x", "disabled": true, "timeout": 5}}}"#);
        assert!(f.servers.is_empty());
    }

    proptest::proptest! {
        /// Whatever a servers file holds, reading it answers, never panics.
        #[test]
        fn any_text_is_read_or_refused(text in "[{}\\[\\]\":, a-z_0-9.-]{0,80}") {
            let _ = parse(&text, Path::new("/base"));
            let doc = format!("{{\"mcpServers\": {{{text}}}}}");
            let _ = parse(&doc, Path::new("/base"));
        }
    }
}

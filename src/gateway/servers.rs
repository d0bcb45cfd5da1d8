//! The servers file (docs/gateway.md): the JSON clients already keep their MCP
//! servers in, `{"mcpServers": {NAME: {command, args?, env?, cwd?}}}`, or VS
//! Code's `{"servers": {...}}`. A remote server is `{url, headers?}`,
//! reached over MCP's streamable HTTP transport. Read strictly: every problem
//! is reported with its JSON path (`mcpServers.github.command`), all of them
//! at once, before any child is started. Fields other clients keep beside
//! ours (`disabled`, `autoApprove`...) are warnings, not errors, so one file
//! can serve a client and the gateway.

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
    pub transport: Transport,
}

/// How the gateway reaches a child.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A local process spoken to over its standard input/output.
    /// `command`, `args` and `env` values have `${VAR}` already expanded.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Added to the gateway's own environment, in file order.
        env: Vec<(String, String)>,
        /// Resolved against the servers file's folder when relative.
        cwd: Option<PathBuf>,
    },
    /// A remote server over MCP's streamable HTTP transport.
    Http {
        /// An `http` or `https` URL, `${VAR}` already expanded, checked when
        /// the file is read.
        url: String,
        /// Sent with every request, in file order, `${VAR}` already expanded;
        /// names and values are checked when the file is read.
        headers: Vec<(String, String)>,
    },
}

impl ServerSpec {
    /// A remote server's origin, `scheme://host[:port]`, which `--dry-run`
    /// shows: not its path or query, where some services put a key.
    pub fn origin(&self) -> Option<String> {
        let Transport::Http { url, .. } = &self.transport else {
            return None;
        };
        super::origin::origin(url)
    }
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
pub(crate) struct Ordered(pub(crate) Vec<(String, Value)>);

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
/// is resolved, and `${VAR}` (or `${VAR:-default}`) in a local server's
/// `command`, `args` and `env` values and a remote one's `url` and `headers`
/// values is read from the process's environment. Every problem is
/// returned, not only the first.
pub fn parse(text: &str, dir: &Path) -> Result<ServersFile, Vec<Problem>> {
    parse_with_env(text, dir, &|name| std::env::var(name).ok())
}

/// [`parse`] with the environment `${VAR}` is expanded from.
pub fn parse_with_env(
    text: &str,
    dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ServersFile, Vec<Problem>> {
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
        let k = crate::chars::escape(k);
        out.warnings
            .push(problem(k.as_ref(), format!("unknown field `{k}`, ignored")));
    }
    let mut seen = std::collections::HashSet::new();
    for (name, entry) in entries {
        let path = format!("{key}.{}", crate::chars::escape(&name));
        if !seen.insert(name.clone()) {
            let shown = crate::chars::escape(&name);
            errors.push(problem(&path, format!("server `{shown}` is given twice")));
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
        match server(&name, &path, &entry, dir, env, &mut out.warnings) {
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

/// The `type` values clients write for a streamable HTTP server.
const HTTP_TYPES: [&str; 3] = ["http", "streamable-http", "streamableHttp"];

/// Headers the MCP transport sets itself; a file cannot override them.
const RESERVED_HEADERS: [&str; 4] = [
    "accept",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// One entry; `Ok(None)` for an entry the file disables.
fn server(
    name: &str,
    path: &str,
    entry: &Value,
    dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    warnings: &mut Vec<Problem>,
) -> Result<Option<ServerSpec>, Vec<Problem>> {
    let Some(obj) = entry.as_object() else {
        return Err(vec![problem(
            path,
            "expected an object with a `command` or a `url`",
        )]);
    };
    if obj.get("disabled") == Some(&Value::Bool(true)) {
        warnings.push(problem(
            path,
            format!("server `{name}` is disabled, skipped"),
        ));
        return Ok(None);
    }
    let remote = match obj.get("type") {
        None => obj.contains_key("url") && !obj.contains_key("command"),
        Some(Value::String(t)) if t == "stdio" => false,
        Some(Value::String(t)) if HTTP_TYPES.contains(&t.as_str()) => true,
        Some(Value::String(t)) if t == "sse" => {
            return Err(vec![Problem {
                path: format!("{path}.type"),
                message: format!(
                    "server `{name}` uses the legacy SSE transport: not supported"
                ),
                help: Some(
                    "the gateway speaks MCP's streamable HTTP transport: if the server offers it (often at `/mcp` rather than `/sse`), give that URL with `\"type\": \"http\"`"
                        .into(),
                ),
            }]);
        }
        Some(Value::String(t)) => {
            return Err(vec![Problem {
                path: format!("{path}.type"),
                message: format!("unknown server type `{}`", crate::chars::escape(t)),
                help: Some(
                    "`stdio` (with a `command`) or `http` (with a `url`; also written `streamable-http` or `streamableHttp`)"
                        .into(),
                ),
            }]);
        }
        Some(_) => return Err(vec![problem(format!("{path}.type"), "expected a string")]),
    };
    if remote {
        return remote_server(name, path, obj, env, warnings).map(Some);
    }
    if obj.contains_key("url") {
        return Err(vec![problem(
            path,
            format!("server `{name}` gives both a `command` and a `url`: keep one"),
        )]);
    }
    let lookup = env;
    let mut errors = Vec::new();
    let command = match required_string(obj, "command", path, &mut errors) {
        Some(raw) => {
            let at = format!("{path}.command");
            match expanded(raw, &at, lookup, &mut errors) {
                Some(c) if c.contains('\0') => {
                    errors.push(problem(at, NUL));
                    String::new()
                }
                Some(c) if !c.trim().is_empty() => c,
                Some(_) => {
                    errors.push(problem(at, "the command is empty"));
                    String::new()
                }
                None => String::new(),
            }
        }
        None => String::new(),
    };
    let args = match obj.get("args") {
        None => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .enumerate()
            .filter_map(|(i, v)| match v {
                Value::String(s) => {
                    let at = format!("{path}.args[{i}]");
                    let arg = expanded(s, &at, lookup, &mut errors)?;
                    if arg.contains('\0') {
                        errors.push(problem(at, NUL));
                        return None;
                    }
                    Some(arg)
                }
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
                Value::String(s) => {
                    let at = format!("{path}.env.{}", crate::chars::escape(k));
                    let value = expanded(s, &at, lookup, &mut errors)?;
                    match env_problem(k, &value) {
                        None => Some((k.clone(), value)),
                        Some(why) => {
                            errors.push(problem(at, why));
                            None
                        }
                    }
                }
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
        Some(Value::String(c)) if c.contains('\0') => {
            errors.push(problem(format!("{path}.cwd"), NUL));
            None
        }
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
        transport: Transport::Stdio {
            command,
            args,
            env,
            cwd,
        },
    }))
}

/// `raw` with its `${NAME}` and `${NAME:-default}` expanded from `env`; `None`,
/// with the problem at `at` in `errors`, when one cannot be.
fn expanded(
    raw: &str,
    at: &str,
    env: &dyn Fn(&str) -> Option<String>,
    errors: &mut Vec<Problem>,
) -> Option<String> {
    match super::expand::expand(raw, env) {
        Ok(v) => Some(v),
        Err(e) => {
            errors.push(Problem {
                path: at.to_string(),
                message: e.message,
                help: e.help,
            });
            None
        }
    }
}

/// A command, argument, environment variable or folder with a NUL in it: a
/// process cannot be given one, so it is refused when the file is read, with
/// its path, not found when the server starts.
const NUL: &str = "holds a NUL character, which a process cannot be given";

/// Why `name=value` cannot be in a process's environment, if it cannot.
fn env_problem(name: &str, value: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("an environment variable's name cannot be empty")
    } else if name.contains('=') {
        Some("an environment variable's name cannot hold `=`")
    } else if name.contains('\0') || value.contains('\0') {
        Some(NUL)
    } else {
        None
    }
}

/// The string an entry must give as `field`; `None`, with the problem in
/// `errors`, when the field is missing or not a string.
fn required_string<'a>(
    obj: &'a serde_json::Map<String, Value>,
    field: &str,
    path: &str,
    errors: &mut Vec<Problem>,
) -> Option<&'a str> {
    match obj.get(field) {
        Some(Value::String(s)) => Some(s),
        Some(_) => {
            errors.push(problem(format!("{path}.{field}"), "expected a string"));
            None
        }
        None => {
            errors.push(problem(path, format!("missing `{field}`")));
            None
        }
    }
}

/// A remote entry: `{url, headers?}`.
fn remote_server(
    name: &str,
    path: &str,
    obj: &serde_json::Map<String, Value>,
    env: &dyn Fn(&str) -> Option<String>,
    warnings: &mut Vec<Problem>,
) -> Result<ServerSpec, Vec<Problem>> {
    let mut errors = Vec::new();
    let url = match required_string(obj, "url", path, &mut errors) {
        Some(raw) => {
            let at = format!("{path}.url");
            match expanded(raw, &at, env, &mut errors) {
                Some(u) => match url_problem(&u) {
                    None => u.trim().to_string(),
                    Some(why) => {
                        errors.push(problem(at, format!("server `{name}`: {why}")));
                        String::new()
                    }
                },
                None => String::new(),
            }
        }
        None => String::new(),
    };
    let mut headers = Vec::new();
    match obj.get("headers") {
        None => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                let at = format!("{path}.headers.{}", crate::chars::escape(k));
                let Value::String(raw) = v else {
                    errors.push(problem(at, "expected a string"));
                    continue;
                };
                if http::HeaderName::from_bytes(k.as_bytes()).is_err() {
                    errors.push(problem(
                        at,
                        format!("`{}` is not an HTTP header name", crate::chars::escape(k)),
                    ));
                    continue;
                }
                if RESERVED_HEADERS.contains(&k.to_ascii_lowercase().as_str()) {
                    errors.push(problem(
                        at,
                        format!("the transport sets `{k}` itself: leave it out"),
                    ));
                    continue;
                }
                // Header names ignore case: one of two would be lost.
                if let Some(first) = m.keys().find(|o| o.eq_ignore_ascii_case(k) && *o != k)
                    && m.keys().position(|o| o == first) < m.keys().position(|o| o == k)
                {
                    errors.push(problem(
                        at,
                        format!(
                            "`{k}` is the header `{first}` again (header names ignore case): \
                             keep one"
                        ),
                    ));
                    continue;
                }
                match expanded(raw, &at, env, &mut errors) {
                    Some(value) if http::HeaderValue::from_str(&value).is_ok() => {
                        headers.push((k.clone(), value));
                    }
                    Some(_) => errors.push(problem(
                        at,
                        "the value has characters an HTTP header cannot carry",
                    )),
                    None => {}
                }
            }
        }
        Some(_) => errors.push(problem(
            format!("{path}.headers"),
            "expected an object of strings",
        )),
    }
    for k in ["command", "args", "env", "cwd"] {
        if obj.contains_key(k) {
            errors.push(problem(
                format!("{path}.{k}"),
                format!("server `{name}` is remote (it has a `url`): `{k}` does not apply"),
            ));
        }
    }
    const KNOWN: [&str; 7] = [
        "url", "headers", "type", "disabled", "command", "args", "env",
    ];
    for k in obj
        .keys()
        .filter(|k| !KNOWN.contains(&k.as_str()) && k.as_str() != "cwd")
    {
        warnings.push(problem(
            format!("{path}.{}", crate::chars::escape(k)),
            format!("unknown field `{}`, ignored", crate::chars::escape(k)),
        ));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(ServerSpec {
        name: name.to_string(),
        transport: Transport::Http { url, headers },
    })
}

/// Why `url` cannot reach a streamable HTTP server, if it cannot.
fn url_problem(url: &str) -> Option<String> {
    let url = url.trim();
    if url.is_empty() {
        return Some("the URL is empty".into());
    }
    // Shown by its origin: the path, query or user info may hold a key.
    let shown = match super::origin::shown(url) {
        s if s.is_empty() => "the URL".to_string(),
        s => format!("`{s}`"),
    };
    let uri = match url.parse::<http::Uri>() {
        Ok(u) => u,
        Err(e) => return Some(format!("{shown} is not a URL: {e}")),
    };
    match uri.scheme_str() {
        Some("http" | "https") => {}
        Some(other) => {
            return Some(format!(
                "{shown} is not an `http` or `https` URL (scheme `{other}`)"
            ));
        }
        None => {
            return Some(format!(
                "{shown} has no scheme: write `http://` or `https://`"
            ));
        }
    }
    match uri.host() {
        Some(h) if !h.is_empty() => None,
        _ => Some(format!("{shown} has no host")),
    }
}

#[cfg(test)]
mod tests;

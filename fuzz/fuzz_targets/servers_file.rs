//! Arbitrary bytes as the servers file of `policy gateway --servers FILE`,
//! read with an environment the input also gives.
//!
//! The input is the file, then, after a NUL byte (which a JSON text cannot
//! hold), the environment `${NAME}` and `${NAME:-default}` are expanded
//! from: up to eight `NAME=VALUE` lines. With no NUL the environment is
//! empty.
//!
//! A refused file gets at least one problem, each with a message. An
//! accepted one has unique server names that follow the name rules; a local
//! server has a command, and nothing a process cannot be given (a NUL
//! character, an environment variable with an empty name or `=` in it), its
//! command, arguments and environment values exactly the file's, expanded;
//! a remote one an `http` or `https` URL with a host, the file's expanded,
//! and headers that are exactly the file's, each value expanded: every
//! `${NAME}` replaced by that variable once, every `${NAME:-default}` by the
//! variable or, unset or empty, the default (so no `${` is left when no
//! variable's value holds `$` or `{`). Warnings show no control character from the file. What `--dry-run`
//! prints of each server shows a remote one by its origin,
//! `scheme://host[:port]`, never its user, path or query.

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::collections::HashSet;
use std::path::Path;
use toolpolicy::gateway::dry_run::{self, Report, Served, ServerReport};
use toolpolicy::gateway::servers::{Problem, ServerSpec, Transport, name_problem, parse_with_env};
use toolpolicy::runtime::{FirstTurn, TOKENS_NOTE};

/// The most environment variables an input sets.
const MAX_VARS: usize = 8;

/// The servers file and the environment the input stands for.
fn split(data: &[u8]) -> Option<(&str, Vec<(String, String)>)> {
    let (file, env) = match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let file = std::str::from_utf8(file).ok()?;
    let env = String::from_utf8_lossy(env);
    let vars = env
        .split('\n')
        .filter_map(|line| line.split_once('='))
        .take(MAX_VARS)
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Some((file, vars))
}

fn lookup<'a>(env: &'a [(String, String)], name: &str) -> Option<&'a str> {
    env.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// `raw` with each `${NAME}` replaced by `NAME`'s value and each
/// `${NAME:-default}` by that value or, when it is unset or empty, the
/// default, read left to right once (a value is not expanded again); `None`
/// when a reference is not closed, not a variable name, names an unset
/// variable without a default, or has a default holding `${`.
fn expanded(raw: &str, env: &[(String, String)]) -> Option<String> {
    let mut out = String::new();
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '$' || chars.peek() != Some(&'{') {
            out.push(c);
            continue;
        }
        chars.next();
        let mut name = String::new();
        loop {
            match chars.next()? {
                '}' => break,
                c => name.push(c),
            }
        }
        let (name, default) = match name.split_once(":-") {
            Some((n, d)) => (n.to_string(), Some(d.to_string())),
            None => (name, None),
        };
        let mut name_chars = name.chars();
        let first_ok = name_chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if !first_ok || !name_chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        if default.as_deref().is_some_and(|d| d.contains("${")) {
            return None;
        }
        match (lookup(env, &name), default) {
            (Some(v), Some(d)) if v.is_empty() => out.push_str(&d),
            (Some(v), _) => out.push_str(v),
            (None, Some(d)) => out.push_str(&d),
            (None, None) => return None,
        }
    }
    Some(out)
}

/// A warning is printed as it is: nothing in it may act on a terminal.
fn check_warning(w: &Problem) {
    assert!(!w.message.is_empty(), "{w:?}");
    let shown = w.to_string();
    assert_eq!(
        toolpolicy::chars::escape(&shown),
        shown,
        "a warning passes a control character through"
    );
}

/// The entry the file gives for `name`, read as plain JSON.
fn entry<'a>(doc: &'a Value, name: &str) -> &'a Value {
    let servers = doc
        .get("mcpServers")
        .or_else(|| doc.get("servers"))
        .unwrap_or(&Value::Null);
    match servers.get(name) {
        Some(e) => e,
        None => panic!("accepted server `{name}` is not in the file"),
    }
}

fn check_remote(
    spec: &ServerSpec,
    url: &str,
    headers: &[(String, String)],
    doc: &Value,
    env: &[(String, String)],
) {
    let lower = url.to_ascii_lowercase();
    let (url_scheme, rest) = match lower.split_once("://") {
        Some((s @ ("http" | "https"), rest)) => (s, rest),
        _ => panic!("remote `{}` has URL `{url}`", spec.name),
    };
    let raw_url = entry(doc, &spec.name).get("url").and_then(Value::as_str);
    assert_eq!(
        raw_url
            .and_then(|u| expanded(u, env))
            .as_deref()
            .map(str::trim),
        Some(url),
        "`{}`: URL {raw_url:?} read as {url:?}",
        spec.name
    );
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_and_port = authority.rsplit('@').next().unwrap_or_default();
    assert!(!host_and_port.is_empty(), "`{url}` has no host");

    let raw = entry(doc, &spec.name).get("headers");
    let raw: Vec<(&String, &Value)> = match raw {
        Some(Value::Object(m)) => m.iter().collect(),
        None => Vec::new(),
        Some(other) => panic!("`{}` accepted with headers {other}", spec.name),
    };
    assert_eq!(raw.len(), headers.len(), "{}: {headers:?}", spec.name);
    // A value may end in `$` or start with `{` and make `${` with the text
    // beside it; with neither, every `${` left is one the file did not expand.
    let plain_env = env.iter().all(|(_, v)| !v.contains(['$', '{']));
    for ((name, value), (raw_name, raw_value)) in headers.iter().zip(raw) {
        assert_eq!(name, raw_name);
        let Some(raw_value) = raw_value.as_str() else {
            panic!("header `{name}` accepted from {raw_value}");
        };
        assert_eq!(
            Some(value),
            expanded(raw_value, env).as_ref(),
            "header `{name}`: {raw_value:?} read as {value:?}"
        );
        if plain_env {
            assert!(!value.contains("${"), "`{name}: {value}` left unexpanded");
        }
    }

    // What `--dry-run` shows of it.
    let Some(origin) = spec.origin() else {
        panic!("remote `{}` ({url}) has no origin to show", spec.name);
    };
    let Some((scheme, shown)) = origin.split_once("://") else {
        panic!("origin `{origin}` of `{url}`");
    };
    assert_eq!(scheme, url_scheme, "origin `{origin}` of `{url}`");
    assert!(
        !shown.is_empty() && !shown.contains(['/', '?', '#', '@']),
        "origin `{origin}` of `{url}` shows more than scheme, host and port"
    );
    let host = match shown.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => shown.split(':').next().unwrap_or_default(),
    };
    assert!(
        host_and_port.contains(&host.to_ascii_lowercase()),
        "origin `{origin}` is not `{url}`'s host"
    );
}

/// A local server's command, arguments and environment values are the
/// file's, expanded.
fn check_local(
    name: &str,
    (command, args, vars): (&str, &[String], &[(String, String)]),
    doc: &Value,
    env: &[(String, String)],
) {
    let raw = entry(doc, name);
    let raw_command = raw.get("command").and_then(Value::as_str);
    assert_eq!(
        raw_command.and_then(|c| expanded(c, env)).as_deref(),
        Some(command),
        "`{name}`: command {raw_command:?} read as {command:?}"
    );
    let raw_args: Vec<Option<String>> = match raw.get("args") {
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| v.as_str().and_then(|s| expanded(s, env)))
            .collect(),
        _ => Vec::new(),
    };
    let args: Vec<Option<String>> = args.iter().cloned().map(Some).collect();
    assert_eq!(args, raw_args, "`{name}`: arguments");
    let raw_vars: Vec<(String, Option<String>)> = match raw.get("env") {
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().and_then(|s| expanded(s, env))))
            .collect(),
        _ => Vec::new(),
    };
    let vars: Vec<(String, Option<String>)> = vars
        .iter()
        .map(|(k, v)| (k.clone(), Some(v.clone())))
        .collect();
    assert_eq!(vars, raw_vars, "`{name}`: environment");
}

fuzz_target!(|data: &[u8]| {
    let Some((text, vars)) = split(data) else {
        return;
    };
    let read = parse_with_env(text, Path::new("/base"), &|name| {
        lookup(&vars, name).map(str::to_string)
    });
    let file = match read {
        Err(problems) => {
            assert!(!problems.is_empty(), "refused without a problem");
            for p in &problems {
                assert!(!p.message.is_empty(), "{p:?}");
                assert!(!p.to_string().is_empty());
            }
            return;
        }
        Ok(file) => file,
    };
    for w in &file.warnings {
        check_warning(w);
    }
    let Ok(doc) = serde_json::from_str::<Value>(toolpolicy::input::strip_bom(text)) else {
        panic!("an accepted servers file is not JSON");
    };
    let mut names = HashSet::new();
    for spec in &file.servers {
        assert!(names.insert(spec.name.as_str()), "`{}` twice", spec.name);
        assert_eq!(name_problem(&spec.name), None);
        match &spec.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                assert!(!command.trim().is_empty(), "`{}` has no command", spec.name);
                check_local(&spec.name, (command, args, env), &doc, &vars);
                assert_eq!(spec.origin(), None);
                // What a process cannot be given is refused in the file,
                // not found when the server is started.
                let texts = std::iter::once(command.as_str())
                    .chain(args.iter().map(String::as_str))
                    .chain(env.iter().flat_map(|(k, v)| [k.as_str(), v.as_str()]))
                    .chain(cwd.iter().filter_map(|c| c.to_str()));
                for t in texts {
                    assert!(
                        !t.contains('\0'),
                        "`{}` passes {t:?} to a process",
                        spec.name
                    );
                }
                for (k, _) in env {
                    assert!(
                        !k.is_empty() && !k.contains('='),
                        "`{}` sets the environment variable {k:?}",
                        spec.name
                    );
                }
            }
            Transport::Http { url, headers } => check_remote(spec, url, headers, &doc, &vars),
        }
    }

    // The dry run's report of these servers, each started with no tools or
    // failed, shows a remote one by its origin alone.
    let started: Vec<Result<usize, String>> = (0..file.servers.len())
        .map(|i| {
            if i.is_multiple_of(2) {
                Ok(i)
            } else {
                Err("did not start".to_string())
            }
        })
        .collect();
    let report = Report {
        servers: file
            .servers
            .iter()
            .zip(&started)
            .map(|(s, r)| ServerReport::new(s, r))
            .collect(),
        exposure: "call",
        served: Served {
            context: Default::default(),
            listed: Vec::new(),
            deferred: 0,
            hidden: 0,
            hidden_tools: Vec::new(),
            deprecated: Vec::new(),
            catalog: String::new(),
            tokens: FirstTurn {
                listed: 0,
                own: 0,
                all_visible: 0,
                hidden: 0,
                no_policy: 0,
            },
            lock: None,
        },
        note: TOKENS_NOTE,
        failed: false,
    };
    let human = dry_run::human(&report);
    // The servers, one a line, under `servers:` (after the context line).
    let lines: Vec<&str> = human
        .lines()
        .skip_while(|l| *l != "servers:")
        .skip(1)
        .take(file.servers.len())
        .collect();
    assert_eq!(lines.len(), file.servers.len(), "{human}");
    let Ok(json) = serde_json::to_value(&report) else {
        panic!("the report does not serialize");
    };
    for (i, (spec, line)) in file.servers.iter().zip(lines).enumerate() {
        let shown = match spec.origin() {
            Some(origin) => format!("{} (remote, {origin})", spec.name),
            None => spec.name.clone(),
        };
        let result = match &started[i] {
            Ok(n) => format!("{n} tools"),
            Err(e) => format!("failed: {e}"),
        };
        assert_eq!(line, format!("  {shown}: {result}"));
        assert_eq!(
            json["servers"][i]["remote"].as_str(),
            spec.origin().as_deref()
        );
    }
});

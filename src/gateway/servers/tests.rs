//! The servers file's tests: shapes, problems with their paths, remote
//! entries and the expansion of environment variables.

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
    let Transport::Stdio {
        command,
        args,
        env,
        cwd,
    } = &f.servers[0].transport
    else {
        panic!("not stdio: {:?}", f.servers[0]);
    };
    assert_eq!(command, "z");
    assert_eq!(args, &["-y"]);
    assert_eq!(env, &[("K".to_string(), "v".to_string())]);
    assert_eq!(cwd.as_deref(), Some(Path::new("/base/sub")));
    let f = ok(r#"{"servers": {"git": {"type": "stdio", "command": "uvx"}}, "inputs": []}"#);
    assert_eq!(f.servers[0].origin(), None);
    assert_eq!(
        f.warnings[0].to_string(),
        "`inputs`: unknown field `inputs`, ignored"
    );
}

#[test]
fn every_problem_is_reported_with_its_path() {
    let e = errors(
        r#"{"mcpServers": {"a": {"args": [1]}, "b__c": {"command": "x"},
                           "web": {"url": "ftp://example.com/mcp"}, "d": {"command": 3}}}"#,
    );
    assert_eq!(e.len(), 5, "{e:?}");
    assert_eq!(e[0], "`mcpServers.a`: missing `command`");
    assert_eq!(e[1], "`mcpServers.a.args[0]`: expected a string");
    assert!(e[2].starts_with("`mcpServers.b__c`: server name `b__c` would make"));
    assert!(e[2].contains("help: server names are"));
    assert_eq!(
        e[3],
        "`mcpServers.web.url`: server `web`: `ftp://example.com` is not an `http` or `https` URL (scheme `ftp`)"
    );
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

#[test]
fn warnings_show_control_characters_escaped() {
    // Warnings are printed as they are: a key's escape sequence must show,
    // not act, at the top level as in an entry.
    let f = ok(r#"{"mcpServers": {"a": {"command": "x", "\u001b[2J": 1}}, "\u001b]0;t\u0007": 1}"#);
    let shown: Vec<String> = f.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            "`\\u{1b}]0;t\\u{7}`: unknown field `\\u{1b}]0;t\\u{7}`, ignored",
            "`mcpServers.a.\\u{1b}[2J`: unknown field `\\u{1b}[2J`, ignored",
        ]
    );
}

#[test]
fn a_name_given_twice_is_shown_escaped() {
    let e = errors(
        r#"{"mcpServers": {"a\u001b[2J": {"command": "x"}, "a\u001b[2J": {"command": "y"}}}"#,
    );
    assert_eq!(
        e.last().map(String::as_str),
        Some("`mcpServers.a\\u{1b}[2J`: server `a\\u{1b}[2J` is given twice"),
        "{e:?}"
    );
}

#[test]
fn what_a_process_cannot_be_given_is_refused_with_its_path() {
    let e = errors(
        r#"{"mcpServers": {"a": {"command": "x\u0000y", "args": ["ok", "b\u0000", 3],
            "env": {"": "v", "A=B": "v", "C": "\u0000", "OK": "fine"}, "cwd": "sub\u0000"}}}"#,
    );
    assert_eq!(
        e,
        [
            "`mcpServers.a.command`: holds a NUL character, which a process cannot be given",
            "`mcpServers.a.args[1]`: holds a NUL character, which a process cannot be given",
            "`mcpServers.a.args[2]`: expected a string",
            "`mcpServers.a.env.`: an environment variable's name cannot be empty",
            "`mcpServers.a.env.A=B`: an environment variable's name cannot hold `=`",
            "`mcpServers.a.env.C`: holds a NUL character, which a process cannot be given",
            "`mcpServers.a.cwd`: holds a NUL character, which a process cannot be given",
        ]
    );
    let f = ok(r#"{"mcpServers": {"a": {"command": "x", "env": {"K": "a=b", "_": ""}}}}"#);
    let Transport::Stdio { env, .. } = &f.servers[0].transport else {
        panic!("not stdio: {:?}", f.servers[0]);
    };
    assert_eq!(env.len(), 2);
}

fn http(f: &ServersFile, i: usize) -> (&str, &[(String, String)]) {
    match &f.servers[i].transport {
        Transport::Http { url, headers } => (url, headers),
        other => panic!("not http: {other:?}"),
    }
}

#[test]
fn remote_servers_in_every_spelling_clients_write() {
    let f = ok(r#"{"mcpServers": {
        "a": {"url": "http://127.0.0.1:8080/mcp"},
        "b": {"type": "http", "url": "https://u:pw@example.com/mcp?key=k", "headers": {"X-Key": "k"}},
        "c": {"type": "streamable-http", "url": "http://localhost/mcp"},
        "d": {"type": "streamableHttp", "url": " http://[::1]:9/mcp ", "note": 1}}}"#);
    assert_eq!(f.servers.len(), 4);
    assert_eq!(http(&f, 0), ("http://127.0.0.1:8080/mcp", &[][..]));
    assert_eq!(http(&f, 1).1, [("X-Key".to_string(), "k".to_string())]);
    assert_eq!(http(&f, 2).0, "http://localhost/mcp");
    assert_eq!(http(&f, 3).0, "http://[::1]:9/mcp");
    assert_eq!(
        f.servers[1].origin().as_deref(),
        Some("https://example.com")
    );
    assert_eq!(f.servers[3].origin().as_deref(), Some("http://[::1]:9"));
    assert_eq!(
        f.warnings[0].to_string(),
        "`mcpServers.d.note`: unknown field `note`, ignored"
    );
}

#[test]
fn remote_server_problems_name_their_entry() {
    let e = errors(
        r#"{"mcpServers": {
        "old": {"type": "sse", "url": "http://localhost/sse"},
        "nourl": {"type": "http"},
        "bad": {"url": "not a url"},
        "rel": {"url": "/mcp"},
        "both": {"url": "http://h/mcp", "command": "x"},
        "odd": {"type": "websocket", "url": "ws://h"},
        "hdr": {"url": "http://h/mcp", "headers": {"bad name": "v", "Accept": "x", "X-N": 1,
            "X-Key": "a", "x-key": "b"}}}}"#,
    );
    assert_eq!(e.len(), 10, "{e:?}");
    assert!(e[0].starts_with(
        "`mcpServers.old.type`: server `old` uses the legacy SSE transport: not supported"
    ));
    assert_eq!(e[1], "`mcpServers.nourl`: missing `url`");
    assert!(e[2].starts_with("`mcpServers.bad.url`: server `bad`: `not a url` is not a URL"));
    assert_eq!(
        e[3],
        "`mcpServers.rel.url`: server `rel`: the URL has no scheme: write `http://` or `https://`"
    );
    assert_eq!(
        e[4],
        "`mcpServers.both`: server `both` gives both a `command` and a `url`: keep one"
    );
    assert!(e[5].starts_with("`mcpServers.odd.type`: unknown server type `websocket`"));
    assert_eq!(
        e[6],
        "`mcpServers.hdr.headers.bad name`: `bad name` is not an HTTP header name"
    );
    assert_eq!(
        e[7],
        "`mcpServers.hdr.headers.Accept`: the transport sets `Accept` itself: leave it out"
    );
    assert_eq!(e[8], "`mcpServers.hdr.headers.X-N`: expected a string");
    assert_eq!(
        e[9],
        "`mcpServers.hdr.headers.x-key`: `x-key` is the header `X-Key` again (header names \
         ignore case): keep one"
    );
}

#[test]
fn header_values_expand_environment_variables() {
    let env = |k: &str| (k == "TOKEN").then(|| "s3cret".to_string());
    let read = |text: &str| parse_with_env(text, Path::new("/base"), &env);
    let f = read(
        r#"{"mcpServers": {"w": {"url": "http://h/mcp",
            "headers": {"Authorization": "Bearer ${TOKEN}", "X-Price": "$5 ${TOKEN}${TOKEN}"}}}}"#,
    )
    .unwrap();
    assert_eq!(
        http(&f, 0).1,
        [
            ("Authorization".to_string(), "Bearer s3cret".to_string()),
            ("X-Price".to_string(), "$5 s3crets3cret".to_string())
        ]
    );
    let e: Vec<String> = read(
        r#"{"mcpServers": {"w": {"url": "http://h/mcp",
            "headers": {"A": "${MISSING}", "B": "${1X}", "C": "${OPEN", "D": "${TOKEN}\n"}}}}"#,
    )
    .unwrap_err()
    .iter()
    .map(ToString::to_string)
    .collect();
    assert_eq!(
        e,
        [
            "`mcpServers.w.headers.A`: environment variable `MISSING` is not set\n  help: set it, or give a default: `${MISSING:-default}`",
            "`mcpServers.w.headers.B`: `${1X}` is not an environment variable reference\n  help: write `${NAME}`, or `${NAME:-default}`, with a name of letters, digits and `_`",
            "`mcpServers.w.headers.C`: `${` is not closed by `}`",
            "`mcpServers.w.headers.D`: the value has characters an HTTP header cannot carry",
        ]
    );
}

#[test]
fn local_servers_and_urls_expand_environment_variables_as_clients_do() {
    let env = |k: &str| match k {
        "GITHUB_PAT" => Some("ghp_s3cret".to_string()),
        "HOME" => Some("/home/u".to_string()),
        "EMPTY" => Some(String::new()),
        _ => None,
    };
    let read = |text: &str| parse_with_env(text, Path::new("/base"), &env);
    let f = read(
        r#"{"mcpServers": {
            "gh": {"command": "${HOME}/bin/github-mcp", "args": ["--token=${GITHUB_PAT}", "${MODE:-stdio}", "${EMPTY:-x}", "$5"],
                   "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_PAT}", "LOG": "${LOG_LEVEL:-info}"}},
            "web": {"url": "${BASE:-http://127.0.0.1:9}/mcp?key=${GITHUB_PAT}"}}}"#,
    )
    .unwrap();
    assert_eq!(
        f.servers[0].transport,
        Transport::Stdio {
            command: "/home/u/bin/github-mcp".into(),
            args: vec![
                "--token=ghp_s3cret".into(),
                "stdio".into(),
                "x".into(),
                "$5".into()
            ],
            env: vec![
                ("GITHUB_PERSONAL_ACCESS_TOKEN".into(), "ghp_s3cret".into()),
                ("LOG".into(), "info".into())
            ],
            cwd: None,
        }
    );
    assert_eq!(http(&f, 1).0, "http://127.0.0.1:9/mcp?key=ghp_s3cret");
    let e: Vec<String> = read(
        r#"{"mcpServers": {
            "gh": {"command": "${NO_CMD}", "args": ["ok", "${NO_ARG}"], "env": {"T": "${NO_ENV}"}},
            "web": {"url": "${NO_URL}/mcp"}}}"#,
    )
    .unwrap_err()
    .iter()
    .map(|p| p.to_string().lines().next().unwrap_or_default().to_string())
    .collect();
    assert_eq!(
        e,
        [
            "`mcpServers.gh.command`: environment variable `NO_CMD` is not set",
            "`mcpServers.gh.args[1]`: environment variable `NO_ARG` is not set",
            "`mcpServers.gh.env.T`: environment variable `NO_ENV` is not set",
            "`mcpServers.web.url`: environment variable `NO_URL` is not set",
        ]
    );
    // An empty command after expansion is still refused.
    let e = read(r#"{"mcpServers": {"gh": {"command": "${EMPTY}"}}}"#).unwrap_err();
    assert_eq!(
        e[0].to_string(),
        "`mcpServers.gh.command`: the command is empty"
    );
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

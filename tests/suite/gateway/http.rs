//! `policy gateway` in front of remote servers: the MCP fixture serving
//! streamable HTTP on 127.0.0.1 (`FIXTURE_HTTP=1`), beside stdio children.
//! The same policy paths and the same faults as `stdio.rs`, over HTTP.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::gateway::support::*;

const POLICY: &str = "\
guard web__echo
Hide(web__secret)
Defer(*)
";

const TOOLS: &str = "echo,secret,slow,crash,change";

/// A URL on 127.0.0.1 where nothing listens (a port just released).
fn closed_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}/mcp")
}

#[test]
fn an_http_child_is_listed_searched_and_called_under_the_policy() {
    let web = HttpFixture::start(TOOLS, &[]);
    let dir = temp_dir("http");
    let (p, s) = files(&dir, POLICY, &[("web", json!({"url": web.url}))]);
    let mut g = Gateway::connect_files(&p, &s, "2025-11-25").holding(dir);
    assert_eq!(g.list(), ["web__echo", "tool_search", "call_tool"]);
    assert_web_echoes_and_calls_through(&mut g);
    // The hidden tool is refused on every path, the server never asked.
    for (name, arguments) in [
        ("web__secret", json!({})),
        ("call_tool", json!({"name": "web__secret"})),
    ] {
        let r = g.call(name, arguments);
        assert!(is_error(&r), "{r}");
        assert!(text(&r).ends_with("not found."), "{r}");
    }
    let r = g.call(
        "tool_search",
        json!({"query": "", "names": ["web__secret"]}),
    );
    assert!(
        text(&r).contains("Not available in this chat: `web__secret`."),
        "{r}"
    );
    let err = g.stderr();
    assert!(
        err.contains("note: server `web` started with 5 tools"),
        "{err}"
    );
}

#[test]
fn an_http_child_s_tools_list_changed_reloads_the_registry() {
    let web = HttpFixture::start(TOOLS, &[]);
    let dir = temp_dir("http-relist");
    let (p, s) = files(
        &dir,
        "NoDefer(*)\n",
        &[("web", json!({"type": "http", "url": web.url}))],
    );
    let mut g = Gateway::connect_files(&p, &s, "2025-11-25").holding(dir);
    assert!(!g.list().contains(&"web__added".to_string()));
    let r = g.call("web__change", json!({}));
    assert!(!is_error(&r), "{r}");
    assert!(g.wait_list_changed(DEADLINE), "{}", g.stderr());
    assert!(g.list().contains(&"web__added".to_string()));
    assert_eq!(text(&g.call("web__added", json!({}))), "added: {}");
}

#[test]
fn headers_are_sent_with_environment_variables_expanded() {
    let web = HttpFixture::start("echo", &[("FIXTURE_REQUIRE_HEADER", "x-token=s3cret")]);
    let dir = temp_dir("http-headers");
    let entry = json!({"url": web.url, "headers": {"X-Token": "${TOOLPOLICY_TEST_TOKEN}"}});
    let (p, s) = files(&dir, "NoDefer(*)\n", &[("web", entry)]);
    let mut g = Gateway::connect_env(
        &file_args(&p, &s, &[]),
        &[("TOOLPOLICY_TEST_TOKEN", "s3cret")],
        "2025-11-25",
    );
    assert_eq!(g.list(), ["web__echo"]);
    assert_eq!(text(&g.call("web__echo", json!({}))), "echo: {}");
    drop(g);

    // A wrong token: the server refuses, the gateway names it and serves on.
    let mut g = Gateway::connect_env(
        &file_args(&p, &s, &[]),
        &[("TOOLPOLICY_TEST_TOKEN", "wrong")],
        "2025-11-25",
    );
    assert!(g.list().is_empty());
    assert!(
        g.wait_stderr(
            "error: server `web` did not start: the server refused the authorization in the \
             entry's `headers` (HTTP 401): check the token (OAuth sign-in is not supported)\n",
            1
        ),
        "{}",
        g.stderr()
    );
    drop(g);

    // An unset variable is an error in the servers file, before serving.
    let (code, out, err) = run_to_end(&file_args(&p, &s, &[]));
    assert_eq!(code, Some(2), "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains(
            "`mcpServers.web.headers.X-Token`: environment variable `TOOLPOLICY_TEST_TOKEN` is not set"
        ),
        "{err}"
    );
}

#[test]
fn an_http_server_down_at_start_leaves_the_others_served_and_is_reached_later() {
    let url = closed_url();
    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .to_string();
    let dir = temp_dir("http-down");
    let (p, s) = files(
        &dir,
        "NoDefer(*)\n",
        &[
            ("web", json!({"url": url})),
            ("local", fixture("echo", &[])),
        ],
    );
    let mut g = Gateway::connect_files(&p, &s, "2025-11-25").holding(dir);
    assert_eq!(g.list(), ["local__echo"]);
    assert_eq!(text(&g.call("local__echo", json!({}))), "echo: {}");
    let err = g.stderr();
    assert!(err.contains("error: server `web` did not start"), "{err}");
    // The cause under rmcp's message, without its Rust types.
    assert!(err.contains("refused"), "{err}");
    assert!(!err.contains("rmcp::"), "{err}");
    // The server comes up: the gateway reconnects on demand, with back-off.
    let _web = HttpFixture::start("echo", &[("FIXTURE_PORT", &port)]);
    let until = Instant::now() + DEADLINE;
    while Instant::now() < until && !g.list().contains(&"web__echo".to_string()) {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(g.list(), ["web__echo", "local__echo"], "{}", g.stderr());
    assert_eq!(text(&g.call("web__echo", json!({}))), "echo: {}");
}

#[test]
fn an_http_server_that_goes_away_is_named_and_reconnected_on_demand() {
    let mut web = HttpFixture::start("echo,crash", &[]);
    let port = web.port();
    let dir = temp_dir("http-crash");
    let (p, s) = files(&dir, "NoDefer(*)\n", &[("web", json!({"url": web.url}))]);
    let mut g = Gateway::connect_files(&p, &s, "2025-11-25").holding(dir);
    let r = g.call("web__crash", json!({}));
    assert!(is_error(&r), "{r}");
    assert!(text(&r).contains("server `web`"), "{r}");
    assert!(web.wait_gone());
    let r = g.call("web__echo", json!({}));
    assert!(is_error(&r), "{r}");
    assert!(text(&r).contains("server `web`"), "{r}");
    let _web = HttpFixture::start("echo,crash", &[("FIXTURE_PORT", &port)]);
    let last = g.call_until_answered("web__echo", json!({}), "web", DEADLINE);
    assert_eq!(text(&last), "echo: {}", "{}", g.stderr());
    let err = g.stderr();
    assert!(err.contains("warning: server `web` went away"), "{err}");
    assert!(err.contains("note: server `web` reconnected"), "{err}");
}

#[test]
fn dry_run_shows_remote_servers_by_their_origin() {
    let web = HttpFixture::start(TOOLS, &[]);
    let dir = temp_dir("http-dry");
    let down = closed_url();
    let (p, s) = files(
        &dir,
        POLICY,
        &[
            (
                "web",
                json!({"type": "streamableHttp", "url": format!("{}?key=k", web.url)}),
            ),
            ("gone", json!({"url": format!("{down}?key=k")})),
        ],
    );
    let (code, out, err) = run_to_end(&file_args(&p, &s, &["--dry-run"]));
    assert_eq!(code, Some(1), "{err}");
    // Nor in the failure, whose cause quotes the URL.
    assert!(!err.contains("key=k") && !err.contains("/mcp"), "{err}");
    let origin = web.url.trim_end_matches("/mcp");
    assert!(
        out.contains(&format!("  web (remote, {origin}): 5 tools\n")),
        "{out}"
    );
    assert!(!out.contains("key=k"), "{out}");
    let gone = down.trim_end_matches("/mcp");
    assert!(
        out.contains(&format!(
            "  gone (remote, {gone}): failed: server `gone` did not start"
        )),
        "{out}"
    );
    let (_, out, _) = run_to_end(&file_args(&p, &s, &["--dry-run", "--format", "json"]));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["servers"][0],
        json!({"name": "web", "remote": origin, "tools": 5, "error": null})
    );
}

#[test]
fn bad_remote_entries_exit_before_serving_naming_the_entry() {
    let dir = temp_dir("http-bad");
    for (entry, expected) in [
        (
            json!({"url": "htp:/nowhere"}),
            "`mcpServers.web.url`: server `web`: `htp:`",
        ),
        (
            json!({"url": "localhost:8080/mcp"}),
            "`mcpServers.web.url`: server `web`:",
        ),
        (
            json!({"type": "sse", "url": "http://127.0.0.1:1/sse"}),
            "`mcpServers.web.type`: server `web` uses the legacy SSE transport: not supported",
        ),
    ] {
        let (p, s) = files(&dir, POLICY, &[("web", entry.clone())]);
        let (code, out, err) = run_to_end(&file_args(&p, &s, &[]));
        assert_eq!(code, Some(2), "{entry}: {err}");
        assert!(out.is_empty(), "{out}");
        assert!(err.contains(expected), "{entry}: {err}");
    }
}

#[test]
fn an_http_server_that_hangs_is_cut_off_by_both_timeouts() {
    // A port that takes connections (into its backlog) and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://{}/mcp", silent.local_addr().unwrap());
    let web = HttpFixture::start("echo,hang", &[]);
    let dir = temp_dir("http-hang");
    let (p, s) = files(
        &dir,
        "NoDefer(*)\n",
        &[
            ("silent", json!({"url": silent_url})),
            ("web", json!({"url": web.url})),
        ],
    );
    let a = file_args(&p, &s, &["--start-timeout", "0.5", "--call-timeout", "0.5"]);
    let t0 = Instant::now();
    let mut g = Gateway::connect(&a, "2025-11-25").holding(dir);
    assert!(t0.elapsed() < Duration::from_secs(10));
    assert!(
        g.wait_stderr("error: server `silent` did not start within 0.5 s", 1),
        "{}",
        g.stderr()
    );
    assert_eq!(g.list(), ["web__echo", "web__hang"]);
    let t0 = Instant::now();
    let r = g.call("web__hang", json!({}));
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert_eq!(
        text(&r),
        "server `web` did not answer `hang` within 0.5 s",
        "{r}"
    );
    assert_eq!(text(&g.call("web__echo", json!({}))), "echo: {}");
}

#[test]
fn an_http_server_restarted_between_calls_is_reached_in_the_next_call_and_listed_again() {
    let mut web = HttpFixture::start("echo", &[]);
    let port = web.port();
    let dir = temp_dir("http-restart");
    let (p, s) = files(
        &dir,
        "guard web__echo\nDefer(*)\n",
        &[("web", json!({"url": web.url}))],
    );
    let mut g = Gateway::connect_files(&p, &s, "2025-11-25").holding(dir);
    assert_eq!(text(&g.call("web__echo", json!({}))), "echo: {}");
    let found = |g: &mut Gateway| text(&g.call("tool_search", json!({"query": "added"})));
    assert!(!found(&mut g).contains("web__added"));
    // Killed from outside and started again, with a tool more: the old
    // session is gone.
    let _ = web.child.kill();
    assert!(web.wait_gone());
    let _web = HttpFixture::start("echo,added", &[("FIXTURE_PORT", &port)]);
    // The call reaches the new process: the gateway reconnects and sends it
    // again (the server had not seen it), and lists the server's tools again.
    let r = g.call("web__echo", json!({}));
    assert_eq!(text(&r), "echo: {}", "{r}\n{}", g.stderr());
    assert!(!is_error(&r), "{r}");
    let until = Instant::now() + Duration::from_secs(10);
    while !found(&mut g).contains("web__added") {
        assert!(
            Instant::now() < until,
            "the restarted server's new tool was never listed\n{}",
            g.stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let r = g.call("call_tool", json!({"name": "web__added", "arguments": {}}));
    assert_eq!(text(&r), "added: {}", "{r}");
    let err = g.stderr();
    assert!(
        err.contains("warning: server `web` no longer knows the gateway's session (it restarted, or ended the session)"),
        "{err}"
    );
    assert!(err.contains("note: server `web` reconnected"), "{err}");
}

#[test]
fn a_server_that_wants_authorization_says_a_token_goes_in_headers() {
    // Answered 401 without a challenge, and with the `WWW-Authenticate`
    // challenge of an OAuth server: the same advice either way.
    for challenge in [
        None,
        Some("Bearer resource_metadata=\"http://127.0.0.1:1/.well-known\""),
    ] {
        let mut env = vec![("FIXTURE_REQUIRE_HEADER", "authorization=Bearer t")];
        env.extend(challenge.map(|c| ("FIXTURE_WWW_AUTHENTICATE", c)));
        let web = HttpFixture::start("echo", &env);
        let dir = temp_dir("http-401");
        let (p, s) = files(&dir, "NoDefer(*)\n", &[("web", json!({"url": web.url}))]);
        let (code, out, err) = run_to_end(&file_args(&p, &s, &["--dry-run"]));
        assert_eq!(code, Some(1), "{err}");
        let expected = "server `web` did not start: the server requires authorization (HTTP 401): \
             give it a token in the entry's `headers`, such as \
             `\"Authorization\": \"Bearer ${TOKEN}\"` (OAuth sign-in is not supported)\n";
        assert!(out.contains(expected), "{challenge:?}: {out}");
        assert!(err.contains(expected), "{challenge:?}: {err}");
    }
}

/// An answer over the HTTP client's limit for one message (16 MiB) is an
/// error for that call, not a buffer the size of what the server sent, and
/// the server's other calls go on.
#[test]
fn an_http_answer_over_the_size_limit_fails_that_call() {
    let web = HttpFixture::start("echo,huge", &[("FIXTURE_FLOOD_MIB", "24")]);
    let dir = temp_dir("http-huge");
    let (p, s) = files(&dir, "NoDefer(*)\n", &[("web", json!({"url": web.url}))]);
    let a = file_args(&p, &s, &["--call-timeout", "10"]);
    let mut g = Gateway::connect(&a, "2025-11-25").holding(dir);
    let t0 = Instant::now();
    let r = g.call("web__huge", json!({}));
    eprintln!("huge over http: {r} after {:?}", t0.elapsed());
    assert!(is_error(&r), "{r}");
    // Refused when it arrives, not waited out: rmcp closes the session, and
    // the server is reconnected for the next call.
    assert_eq!(
        text(&r),
        "server `web` ended the connection during `huge` (it went away, or sent a message over \
         the 16 MiB limit for one MCP message); it is reconnected for the next call"
    );
    assert_eq!(text(&g.call("web__echo", json!({}))), "echo: {}");
}

/// A remote server's calls share connections: twenty calls in a row open
/// a handful at most (the first, and the event stream a session may hold
/// open), not one each, so that a call to a server across a network does
/// not pay a TCP (and TLS) handshake; and an idle one is let go in time.
#[test]
fn calls_to_an_http_server_reuse_its_connections() {
    let web = HttpFixture::start("echo,connections", &[]);
    let dir = temp_dir("http-reuse");
    let (p, s) = files(&dir, "NoDefer(*)\n", &[("web", json!({"url": web.url}))]);
    let mut g = Gateway::connect_files(&p, &s, "2025-11-25").holding(dir);
    let before = g.call_count("web__connections");
    for i in 0..20 {
        let r = g.call("web__echo", json!({"text": i.to_string()}));
        assert!(!is_error(&r), "{r}");
    }
    let opened = g.call_count("web__connections") - before;
    assert!(opened <= 2, "twenty calls opened {opened} connections");
    // An idle connection is let go after 4 s, before a server's own idle
    // limit (5 s for Node's and uvicorn's) can close it under a request:
    // a call after a longer pause opens a new one, and is answered.
    let before = g.call_count("web__connections");
    std::thread::sleep(Duration::from_millis(4500));
    let r = g.call("web__echo", json!({"text": "after a pause"}));
    assert!(!is_error(&r), "{r}");
    let opened = g.call_count("web__connections") - before;
    assert!(
        opened >= 1,
        "a call after 4.5 s idle reused an old connection"
    );
}

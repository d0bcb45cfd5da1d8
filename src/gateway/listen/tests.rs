use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use http::{Request, StatusCode, header};
use http_body_util::BodyExt as _;

use crate::Context;

use super::super::Gateway;
use super::answer::{host_name, is_loopback_name, json_values, plain};
use super::listener::Open;
use super::session::to_end;
use super::*;

#[test]
fn origins_compare_by_scheme_host_and_port() {
    assert_eq!(
        normal_origin("HTTPS://App.Example.com"),
        Some("https://app.example.com:443".into())
    );
    assert_eq!(
        normal_origin("http://localhost:5173"),
        Some("http://localhost:5173".into())
    );
    assert_eq!(
        normal_origin("https://a.example:443/"),
        normal_origin("https://a.example")
    );
    assert_ne!(
        normal_origin("http://a.example"),
        normal_origin("https://a.example")
    );
    for not_an_origin in [
        "null",
        "a.example",
        "https://a.example/path",
        "https://u@a.example",
        "",
    ] {
        assert_eq!(normal_origin(not_an_origin), None, "{not_an_origin}");
    }
}

/// A route added beside `/mcp` (where a `/metrics` page goes) answers
/// its path; other paths stay 404, and `/mcp` stays MCP's.
#[tokio::test]
async fn a_route_added_beside_mcp_answers_its_path() {
    let policy = crate::Policy::parse("test.policy", "Defer(*)\n").unwrap();
    let options = super::super::Options {
        policy_path: "test.policy".into(),
        context: Context::default(),
        exposure: super::super::Exposure::Call,
        call_tool: "call_tool".into(),
        call_timeout: Duration::from_secs(1),
        start_timeout: Duration::from_secs(1),
    };
    let (gateway, _, _) = Gateway::start(options, policy, Vec::new()).await;
    let listener = Listener::new(
        gateway,
        ListenOptions::default(),
        Callers::CommandLine(Context::default()),
    );
    listener.route(Arc::new(|parts: &http::request::Parts| {
        (parts.uri.path() == "/metrics").then(|| plain(StatusCode::OK, "requests 0"))
    }));
    let remote: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let get = |path: &str| {
        Request::get(path)
            .header(header::HOST, "127.0.0.1")
            .body(http_body_util::Empty::<Bytes>::new())
            .unwrap()
    };
    let metrics = listener.handle(get("/metrics"), remote).await;
    assert_eq!(metrics.status(), StatusCode::OK);
    let body = metrics.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], b"requests 0\n");
    assert_eq!(
        listener.handle(get("/other"), remote).await.status(),
        StatusCode::NOT_FOUND
    );
    // A GET of `/mcp` without a session is MCP's to refuse, not the route's.
    let mcp = listener.handle(get("/mcp"), remote).await;
    assert_ne!(mcp.status(), StatusCode::OK);
    assert_ne!(mcp.status(), StatusCode::NOT_FOUND);
}

#[test]
fn json_values_are_counted_without_a_parse() {
    let count = |text: &str| json_values(text.as_bytes(), 1000);
    assert_eq!(count(r#"{"a": [0, -1.5e3, true, null, "x"]}"#), 8);
    // Brackets, commas and quotes inside strings are the string's.
    assert_eq!(count(r#"["a\"b,[{", "\\", "c:}"]"#), 4);
    assert_eq!(count(" [ 1 ,\n2\t]\r\n"), 3);
    assert_eq!(count("{}"), 1);
    assert_eq!(count(""), 0);
    // Not JSON: a count all the same, and no panic.
    for broken in [r#"["abc"#, "\"\\", "[1 2", "\\", "]]]"] {
        assert!(count(broken) <= broken.len(), "{broken}");
    }
    // Counting stops past the bound.
    assert_eq!(json_values(b"[0,0,0,0,0,0]", 2), 3);
}

fn open(share: &str, idle_ms: u64, busy: u32) -> Open {
    Open {
        owner: Some(share.into()),
        share: share.into(),
        last: Instant::now() - Duration::from_millis(idle_ms),
        busy,
        expires: SystemTime::now() + Duration::from_secs(60),
    }
}

/// Past the bound, a caller over its share loses its own longest idle
/// session, and one within it ends the longest idle of whoever holds
/// the most; a busy session is never ended, and a caller over its
/// share never ends another's.
#[test]
fn past_the_bound_the_session_to_end_is_of_a_caller_over_its_share() {
    let sessions = |list: &[(&str, &str, u64, u32)]| -> HashMap<Arc<str>, Open> {
        list.iter()
            .map(|&(id, who, idle, busy)| (Arc::from(id), open(who, idle, busy)))
            .collect()
    };
    // Bob holds three of four, Alice opens her first: Bob's longest idle.
    let s = sessions(&[
        ("b1", "bob", 300, 0),
        ("b2", "bob", 200, 0),
        ("b3", "bob", 100, 0),
        ("b4", "bob", 900, 1),
        ("a1", "alice", 0, 0),
    ]);
    assert_eq!(to_end(&s, "a1", "alice", 4).as_deref(), Some("b1"));
    // Alice within her share, though her session is the longest idle.
    let s = sessions(&[
        ("a1", "alice", 900, 0),
        ("b1", "bob", 100, 0),
        ("b2", "bob", 200, 0),
        ("b3", "bob", 0, 0),
    ]);
    assert_eq!(to_end(&s, "b3", "bob", 3).as_deref(), Some("b2"));
    // Bob over his share with only busy sessions: none of Alice's ends.
    let s = sessions(&[
        ("a1", "alice", 900, 0),
        ("b1", "bob", 100, 1),
        ("b2", "bob", 200, 1),
        ("b3", "bob", 0, 0),
    ]);
    assert_eq!(to_end(&s, "b3", "bob", 3), None);
    // One caller alone: its own longest idle, as before there were shares.
    let s = sessions(&[("x1", "x", 500, 0), ("x2", "x", 900, 0), ("x3", "x", 0, 0)]);
    assert_eq!(to_end(&s, "x3", "x", 2).as_deref(), Some("x2"));
}

#[test]
fn host_names_drop_port_and_brackets() {
    assert_eq!(host_name("LocalHost:8080"), "localhost");
    assert_eq!(host_name("[::1]:8080"), "::1");
    assert_eq!(host_name("127.0.0.1"), "127.0.0.1");
    assert_eq!(host_name("::1"), "::1");
    assert!(is_loopback_name("::1"));
    assert!(is_loopback_name("127.0.0.2"));
    assert!(is_loopback_name("localhost"));
    assert!(!is_loopback_name("localhost.example.com"));
    assert!(!is_loopback_name("192.168.1.2"));
}

//! The audit events counted for Prometheus (`toolpolicy::audit::metrics`):
//! a session's calls, refusals, searches, loads, forwarded latency and
//! reloads, rendered in the text exposition format and read back by a real
//! parser of it (`prometheus-parse`).

use std::sync::Arc;

use prometheus_parse::{Scrape, Value};
use toolpolicy::audit::Forwarded;
use toolpolicy::audit::metrics::{Metrics, both};
use toolpolicy::runtime::{Engine, ResultStatus};
use toolpolicy::{Context, Policy, Registry, SkillList};

const POLICY: &str = "search ToolSearch\nDefer(*)\nNoDefer(Read, Bash)\nHide(Secret)\n";
const REGISTRY: &str = r#"[
    {"name": "Read", "description": "Read a file."},
    {"name": "Bash", "description": "Run a shell command."},
    {"name": "ToolSearch", "description": "Find tools."},
    {"name": "WebFetch", "description": "Fetch a web page. Returns markdown."},
    {"name": "Secret", "description": "Hidden."}
]"#;

fn scrape(text: &str) -> Scrape {
    Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).expect("the exposition parses")
}

/// The value of the sample `name` whose labels include `labels`.
fn value(s: &Scrape, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    s.samples
        .iter()
        .find(|x| x.metric == name && labels.iter().all(|(k, v)| x.labels.get(k) == Some(*v)))
        .map(|x| match &x.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
            other => panic!("{name}: not a single value: {other:?}"),
        })
}

#[test]
fn a_sessions_events_are_counted_and_parse_as_prometheus_text() {
    let engine = Engine::new(
        Policy::parse("p.policy", POLICY).unwrap(),
        Registry::from_json(REGISTRY).unwrap(),
        SkillList::default(),
    );
    let metrics = Arc::new(Metrics::new());
    let (collected, seen) = {
        let seen = Arc::new(std::sync::Mutex::new(0usize));
        let into = Arc::clone(&seen);
        let hook: toolpolicy::audit::AuditHook = Arc::new(move |_: &toolpolicy::audit::Event| {
            *into.lock().unwrap() += 1;
        });
        (hook, seen)
    };
    // The metrics and another subscriber (the log's writer) side by side.
    engine.set_audit(both(Some(metrics.hook()), Some(collected)));

    let open = metrics.open_session();
    let second = metrics.open_session();
    let mut s = engine.session(Context::default()).unwrap();
    s.plan(&engine).unwrap();
    s.search(&engine, "fetch a web page", &[] as &[&str])
        .unwrap();
    s.search(&engine, "play some jazz", &[] as &[&str]).unwrap();
    s.load(&engine, &["WebFetch", "Nope"]).unwrap();
    for (tool, server, ms, is_error) in [
        ("Read", "files", 3.0, false),
        ("Read", "files", 250.0, false),
        ("WebFetch", "web eu", 1200.0, true),
    ] {
        s.call(&engine, tool).unwrap();
        s.record_forwarded(
            &engine,
            tool,
            ResultStatus::Ok,
            Some(Forwarded {
                server: Some(server.into()),
                ms: Some(ms),
                is_error: Some(is_error),
            }),
        )
        .unwrap();
    }
    s.call(&engine, "Secret").unwrap();
    s.call(&engine, "Unknown").unwrap();
    engine.reload_policy("p.policy", POLICY).unwrap();
    engine.reload_policy("p.policy", "Defer(\n").unwrap_err();
    drop(second);
    metrics.set_dropped(7);

    let text = metrics.render();
    assert!(text.ends_with("# EOF\n"), "{text}");
    let s = scrape(&text);
    assert!(
        *seen.lock().unwrap() > 0,
        "the other subscriber was called too"
    );
    let v = |name: &str, labels: &[(&str, &str)]| {
        value(&s, name, labels).unwrap_or_else(|| panic!("no {name} {labels:?} in\n{text}"))
    };
    assert_eq!(v("toolpolicy_calls_total", &[("outcome", "allowed")]), 3.0);
    assert_eq!(
        v("toolpolicy_calls_total", &[("outcome", "not_found")]),
        2.0
    );
    assert_eq!(v("toolpolicy_refusals_total", &[("cause", "hide")]), 1.0);
    assert_eq!(v("toolpolicy_refusals_total", &[("cause", "unknown")]), 1.0);
    assert_eq!(v("toolpolicy_searches_total", &[]), 2.0);
    assert_eq!(v("toolpolicy_empty_searches_total", &[]), 1.0);
    assert_eq!(v("toolpolicy_loads_total", &[]), 1.0);
    assert_eq!(v("toolpolicy_activations_total", &[]), 1.0);
    assert_eq!(v("toolpolicy_open_sessions", &[]), 1.0);
    assert_eq!(v("toolpolicy_sessions_total", &[]), 2.0);
    assert_eq!(
        v(
            "toolpolicy_reloads_total",
            &[("what", "policy"), ("ok", "true")]
        ),
        1.0
    );
    assert_eq!(
        v(
            "toolpolicy_reloads_total",
            &[("what", "policy"), ("ok", "false")]
        ),
        1.0
    );
    assert_eq!(v("toolpolicy_dropped_events_total", &[]), 7.0);
    assert_eq!(
        v("toolpolicy_call_errors_total", &[("server", "web eu")]),
        1.0
    );
    // The latency histogram of each server: cumulative buckets, in seconds.
    let histogram = |server: &str| {
        s.samples
            .iter()
            .find(|x| {
                x.metric == "toolpolicy_call_duration_seconds"
                    && x.labels.get("server") == Some(server)
            })
            .map(|x| match &x.value {
                Value::Histogram(b) => b.clone(),
                other => panic!("not a histogram: {other:?}"),
            })
            .unwrap_or_else(|| panic!("no histogram for {server} in\n{text}"))
    };
    let files = histogram("files");
    let under = |b: &[prometheus_parse::HistogramCount], le: f64| {
        b.iter()
            .find(|c| c.less_than >= le)
            .map(|c| c.count)
            .unwrap()
    };
    assert_eq!(under(&files, 0.004), 1.0, "{files:?}");
    assert_eq!(under(&files, 0.256), 2.0, "{files:?}");
    assert_eq!(files.last().unwrap().count, 2.0);
    assert!(files.last().unwrap().less_than.is_infinite());
    let web = histogram("web eu");
    assert_eq!(under(&web, 1.0), 0.0, "{web:?}");
    assert_eq!(under(&web, 2.048), 1.0, "{web:?}");
    assert_eq!(
        v(
            "toolpolicy_call_duration_seconds_count",
            &[("server", "files")]
        ),
        2.0
    );
    let sum = v(
        "toolpolicy_call_duration_seconds_sum",
        &[("server", "files")],
    );
    assert!((sum - 0.253).abs() < 1e-9, "{sum}");
    // Every family says what it counts.
    for name in [
        "toolpolicy_calls",
        "toolpolicy_refusals",
        "toolpolicy_call_duration_seconds",
        "toolpolicy_open_sessions",
    ] {
        assert!(s.docs.contains_key(name), "no HELP for {name} in\n{text}");
    }
    drop(open);
    assert_eq!(
        value(&scrape(&metrics.render()), "toolpolicy_open_sessions", &[]),
        Some(0.0)
    );
}

// ---------------------------------------------------------------------------
// `/metrics` on the gateway's listener, scraped during a run against the
// MCP fixture

use std::io::{Read, Write};
use std::net::TcpStream;

use serde_json::json;

use crate::gateway::listen::{Listening, Session};
use crate::gateway::support::{is_error, text};

/// `METHOD /metrics` over raw HTTP/1.1: the status, the content type and
/// the body. Every read has a deadline.
fn scrape_http(addr: &str, method: &str, headers: &[(&str, &str)]) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    let mut head = format!("{method} /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let raw = String::from_utf8(raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let content_type = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_default();
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        let mut out = String::new();
        let mut rest = body;
        while let Some((size, after)) = rest.split_once("\r\n") {
            let n = usize::from_str_radix(size.trim(), 16).unwrap();
            if n == 0 {
                break;
            }
            out.push_str(&after[..n]);
            rest = &after[n + 2..];
        }
        out
    } else {
        body.to_string()
    };
    (status, content_type, body)
}

const LISTEN_POLICY: &str = "\
guard fx__echo
Hide(fx__secret)
Defer(*)
";

#[test]
fn the_listener_serves_metrics_that_a_scrape_reads() {
    let l = Listening::start(LISTEN_POLICY, "echo,secret,pid,slow", &[], &[]);
    let mut a = Session::open(&l.addr);
    let _b = Session::open(&l.addr);
    let found = a.call("tool_search", json!({"query": "", "names": ["fx__pid"]}));
    assert!(text(&found).contains("fx__pid"), "{found}");
    let found = a.call("tool_search", json!({"query": "play some jazz on spotify"}));
    assert!(!is_error(&found), "{found}");
    for _ in 0..2 {
        let pid = a.call("call_tool", json!({"name": "fx__pid"}));
        assert!(!is_error(&pid), "{pid}");
    }
    let refused = a.call("call_tool", json!({"name": "fx__secret"}));
    assert!(is_error(&refused), "{refused}");

    let (status, content_type, body) = scrape_http(&l.addr, "GET", &[]);
    assert_eq!(status, 200, "{body}");
    assert!(
        content_type.starts_with("application/openmetrics-text"),
        "{content_type}"
    );
    assert!(body.ends_with("# EOF\n"), "{body}");
    let s = scrape(&body);
    let v = |name: &str, labels: &[(&str, &str)]| {
        value(&s, name, labels).unwrap_or_else(|| panic!("no {name} {labels:?} in\n{body}"))
    };
    assert_eq!(v("toolpolicy_calls_total", &[("outcome", "allowed")]), 2.0);
    assert_eq!(
        v("toolpolicy_calls_total", &[("outcome", "not_found")]),
        1.0
    );
    assert_eq!(v("toolpolicy_refusals_total", &[("cause", "hide")]), 1.0);
    assert_eq!(v("toolpolicy_searches_total", &[]), 2.0);
    assert_eq!(v("toolpolicy_empty_searches_total", &[]), 1.0);
    assert_eq!(v("toolpolicy_open_sessions", &[]), 2.0);
    assert_eq!(
        v(
            "toolpolicy_call_duration_seconds_count",
            &[("server", "fx")]
        ),
        2.0
    );
    // Another method is refused; another path is not this page.
    assert_eq!(scrape_http(&l.addr, "POST", &[]).0, 405);
}

#[test]
fn with_a_clients_file_metrics_ask_for_a_credential_as_mcp_does() {
    let clients = json!({"clients": {"ops": {"token": "${OPS_TOKEN}"}}});
    let token = "ops-token-0123456789abcdef";
    let l = Listening::with_clients(LISTEN_POLICY, &clients, &[("OPS_TOKEN", token)], &[]);
    let (status, _, body) = scrape_http(&l.addr, "GET", &[]);
    assert_eq!(status, 401, "{body}");
    let auth = format!("Bearer {token}");
    let (status, _, body) = scrape_http(&l.addr, "GET", &[("Authorization", &auth)]);
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        value(&scrape(&body), "toolpolicy_searches_total", &[]),
        Some(0.0),
        "{body}"
    );
}

/// A log on a full disk (`/dev/full`): `/metrics` counts the events that
/// could not be written, and standard error says so once, not per event.
#[cfg(target_os = "linux")]
#[test]
fn failed_log_writes_are_counted_and_said_once() {
    let l = Listening::start(
        LISTEN_POLICY,
        "echo,secret,pid,slow",
        &[],
        &["--audit", "/dev/full"],
    );
    let mut a = Session::open(&l.addr);
    let mut failed = 0.0;
    for _ in 0..100 {
        let echo = a.call("fx__echo", json!({"text": "x"}));
        assert!(!is_error(&echo), "{echo}");
        let (_, _, body) = scrape_http(&l.addr, "GET", &[]);
        failed = value(&scrape(&body), "toolpolicy_audit_write_failures_total", &[])
            .unwrap_or_else(|| panic!("no write failures counted in\n{body}"));
        if failed >= 3.0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(failed >= 3.0, "only {failed} failed writes counted");
    let err = l.gw.stderr();
    assert_eq!(
        err.matches("warning: cannot write the audit log `/dev/full`")
            .count(),
        1,
        "{err}"
    );
    assert!(err.contains("no space left on device"), "{err}");
}

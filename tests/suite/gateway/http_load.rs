//! The load driver of `tests/e2e/load.py` (`examples/http_load.rs`), run
//! briefly with tiny counts against the fixture served over HTTP and through
//! `policy gateway --listen`, so that it cannot rot: every call counted, none
//! failed, failures and timeouts reported as such, and no address beyond
//! loopback driven.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::gateway::listen::Listening;
use crate::gateway::support::*;

fn driver_bin() -> PathBuf {
    let bin = fixture_bin().with_file_name(if cfg!(windows) {
        "http_load.exe"
    } else {
        "http_load"
    });
    assert!(
        bin.exists(),
        "{} is missing: `cargo test` builds it, or run `cargo build --example http_load`",
        bin.display()
    );
    bin
}

/// The driver run to its end with these arguments, within the deadline:
/// exit code, standard output, standard error.
fn drive(args: &[&str]) -> (Option<i32>, String, String) {
    let mut cmd = Command::new(driver_bin());
    cmd.args(args);
    command_to_end(cmd)
}

/// `CLIENTS` clients making `CALLS` calls each of `tool` at `url`, with a
/// JSON report and these further arguments.
fn calls(url: &str, tool: &str, clients: u32, calls: u32, more: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "--url",
        url,
        "--tool",
        tool,
        "--clients",
        &clients.to_string(),
        "--calls",
        &calls.to_string(),
        "--json",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    args.extend(more.iter().map(|a| a.to_string()));
    args
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// The driver's JSON report of a run that succeeded.
fn report(args: &[&str]) -> Value {
    let (code, out, err) = drive(args);
    assert_eq!(code, Some(0), "{out}\n{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn assert_all_answered(report: &Value, calls: u64) {
    assert_eq!(report["answered"], calls, "{report}");
    assert_eq!(report["failed"], 0, "{report}");
    assert_eq!(report["cut_off"], false, "{report}");
    let p50 = report["p50_ms"].as_f64().unwrap();
    let p99 = report["p99_ms"].as_f64().unwrap();
    assert!(0.0 < p50 && p50 <= p99, "{report}");
    assert!(report["throughput"].as_f64().unwrap() > 0.0, "{report}");
}

#[test]
fn every_call_is_answered_directly_and_through_the_gateway() {
    let fixture = HttpFixture::start("echo", &[]);
    let direct = report(&strs(&calls(&fixture.url, "echo", 3, 5, &[])));
    assert_all_answered(&direct, 15);
    assert_eq!(direct["rate"], Value::Null);

    let listening = Listening::start("NoDefer(*)\n", "echo", &[], &[]);
    let url = format!("http://{}/mcp", listening.addr);
    let through = report(&strs(&calls(&url, "fx__echo", 3, 5, &[])));
    assert_all_answered(&through, 15);
}

#[test]
fn sessions_of_the_2025_era_are_opened_once_per_client_and_every_call_is_answered_in_them() {
    let listening = Listening::start("NoDefer(*)\n", "echo", &[], &[]);
    let url = format!("http://{}/mcp", listening.addr);
    let through = report(&strs(&calls(
        &url,
        "fx__echo",
        3,
        5,
        &["--era", "2025-11-25"],
    )));
    assert_all_answered(&through, 15);
    assert_eq!(through["era"], "2025-11-25");
    assert_eq!(through["sessions_opened"], 3, "{through}");

    // Without a session, none is opened.
    let stateless = report(&strs(&calls(&url, "fx__echo", 2, 2, &[])));
    assert_all_answered(&stateless, 4);
    assert_eq!(stateless["sessions_opened"], 0, "{stateless}");
}

#[test]
fn a_session_the_server_does_not_know_is_a_failed_call_and_a_new_one_is_opened() {
    // Sessions end after 0.3 s idle: a client that calls every 2 s finds
    // its session gone, fails that call, and opens a new session for the
    // next.
    let listening = Listening::start("NoDefer(*)\n", "echo", &[], &["--session-idle", "0.3"]);
    let url = format!("http://{}/mcp", listening.addr);
    let (code, out, err) = drive(&strs(&calls(
        &url,
        "fx__echo",
        1,
        3,
        &["--era", "2025-11-25", "--warmup", "0", "--rate", "0.5"],
    )));
    assert_eq!(code, Some(1), "{out}{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert!(report["failed"].as_u64().unwrap() >= 1, "{report}");
    assert!(report["sessions_opened"].as_u64().unwrap() >= 2, "{report}");
    assert!(
        report["errors"][0]
            .as_str()
            .unwrap()
            .contains("status 404, the session is gone"),
        "{report}"
    );
}

#[test]
fn each_client_sends_its_own_token() {
    let clients = serde_json::json!({"clients": {
        "alice": {"token": "${ALICE_TOKEN}"},
        "bob": {"token": "${BOB_TOKEN}"},
    }});
    let listening = Listening::with_clients(
        "NoDefer(*)\n",
        &clients,
        &[("ALICE_TOKEN", "alice-secret"), ("BOB_TOKEN", "bob-secret")],
        &[],
    );
    let url = format!("http://{}/mcp", listening.addr);
    for era in ["2026-07-28", "2025-11-25"] {
        let both = report(&strs(&calls(
            &url,
            "fx__echo",
            2,
            2,
            &[
                "--era",
                era,
                "--token",
                "alice-secret",
                "--token",
                "bob-secret",
            ],
        )));
        assert_all_answered(&both, 4);
        // A token the file does not accept fails every call (401).
        let (code, out, _) = drive(&strs(&calls(
            &url,
            "fx__echo",
            1,
            1,
            &["--era", era, "--token", "mallory", "--warmup", "0"],
        )));
        assert_eq!(code, Some(1), "{out}");
        assert!(out.contains("401"), "{era}: {out}");
    }
}

#[test]
fn paced_calls_are_spread_over_time_at_the_rate_asked() {
    let fixture = HttpFixture::start("echo", &[]);
    // 15 calls at 50 a second: the last is sent 0.28 s after the first.
    let paced = report(&strs(&calls(&fixture.url, "echo", 3, 5, &["--rate", "50"])));
    assert_all_answered(&paced, 15);
    assert_eq!(paced["rate"], 50.0);
    assert!(paced["wall_s"].as_f64().unwrap() >= 0.28, "{paced}");
    assert!(paced["lag_p50_ms"].as_f64().is_some(), "{paced}");
}

#[test]
fn failed_calls_are_counted_and_the_run_exits_1() {
    let fixture = HttpFixture::start("echo", &[]);
    let (code, out, _) = drive(&strs(&calls(
        &fixture.url,
        "absent",
        2,
        3,
        &["--warmup", "0"],
    )));
    assert_eq!(code, Some(1), "{out}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["answered"], 0, "{report}");
    assert_eq!(report["failed"], 6, "{report}");
    assert!(
        report["errors"][0].as_str().unwrap().contains("absent"),
        "{report}"
    );
}

#[test]
fn a_call_past_the_request_timeout_fails_and_the_run_is_bounded() {
    let fixture = HttpFixture::start("slow", &[("FIXTURE_SLOW_MS", "5000")]);
    let started = Instant::now();
    let (code, out, _) = drive(&strs(&calls(
        &fixture.url,
        "slow",
        2,
        1,
        &["--warmup", "0", "--request-timeout", "0.2"],
    )));
    assert_eq!(code, Some(1), "{out}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["failed"], 2, "{report}");
    assert!(
        report["errors"][0]
            .as_str()
            .unwrap()
            .contains("no answer within 0.2 s"),
        "{report}"
    );

    // The whole run is cut off at `--timeout`, whatever each request's bound.
    let (code, out, _) = drive(&strs(&calls(
        &fixture.url,
        "slow",
        2,
        3,
        &["--warmup", "0", "--timeout", "0.5"],
    )));
    assert_eq!(code, Some(1), "{out}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["cut_off"], true, "{report}");
    assert!(started.elapsed() < Duration::from_secs(4));
}

#[test]
fn only_loopback_addresses_are_driven() {
    for (url, says) in [
        (
            "http://192.0.2.1:80/mcp",
            "`192.0.2.1` is not a loopback address",
        ),
        (
            "http://example.com:80/mcp",
            "must be a loopback address, not `example.com`",
        ),
        (
            "https://127.0.0.1:1/mcp",
            "only plain `http://` URLs on loopback",
        ),
    ] {
        let (code, out, err) = drive(&["--url", url, "--tool", "echo"]);
        assert_eq!(code, Some(2), "{url}: {out}{err}");
        assert!(err.contains(says), "{url}: {err}");
    }
    let (code, _, err) = drive(&[
        "--url",
        "http://127.0.0.1:1/mcp",
        "--tool",
        "echo",
        "--clients",
        "0",
    ]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("`--clients` must be a whole number from 1 to 1000, not `0`"),
        "{err}"
    );
    let (code, _, err) = drive(&[
        "--url",
        "http://127.0.0.1:1/mcp",
        "--tool",
        "echo",
        "--era",
        "2024-11-05",
    ]);
    assert_eq!(code, Some(2));
    assert!(err.contains("not `2024-11-05`"), "{err}");
}

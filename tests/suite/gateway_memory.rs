//! The gateway does not grow per call: after a warm-up, two thousand more
//! calls (forwarded, refused, searched) leave its resident set where it was.
//! With `--nocapture` it prints the figures the README quotes.

use serde_json::json;

use super::gateway_support::*;

/// The gateway's resident set in KiB (Linux only).
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn calls(g: &mut Gateway, n: usize) {
    for i in 0..n {
        match i % 4 {
            0 => assert!(!is_error(&g.call("fx__echo", json!({"text": i})))),
            1 => assert!(is_error(&g.call("fx__secret", json!({})))),
            2 => assert!(!is_error(&g.call("call_tool", json!({"name": "fx__slow"})))),
            _ => assert!(!is_error(&g.call("tool_search", json!({"query": "fail"})))),
        }
    }
}

#[test]
fn memory_stays_flat_across_calls() {
    let dir = temp_dir("memory");
    let (p, s) = files(
        &dir,
        "guard fx__echo\nHide(fx__secret)\nDefer(*)\n",
        &[(
            "fx",
            fixture("echo,secret,slow,fail", &[("FIXTURE_SLOW_MS", "0")]),
        )],
    );
    let mut g = Gateway::connect_files(&p, &s, "2025-11-25");
    let Some(pid) = g.pid().filter(|&pid| rss_kib(pid).is_some()) else {
        eprintln!("skipped: no /proc to read the gateway's resident set from");
        return;
    };
    g.list();
    g.call("tool_search", json!({"query": "", "names": ["fx__slow"]}));
    let idle = rss_kib(pid).unwrap_or(0);
    calls(&mut g, 400);
    let warm = rss_kib(pid).unwrap_or(0);
    calls(&mut g, 2000);
    let after = rss_kib(pid).unwrap_or(0);
    eprintln!(
        "gateway resident set: {idle} KiB connected and idle, {warm} KiB after 400 calls, \
         {after} KiB after 2,400"
    );
    assert!(
        after <= warm + 512,
        "the gateway grew by {} KiB over 2,000 calls",
        after.saturating_sub(warm)
    );
}

//! The gateway does not grow per call: after a warm-up, two thousand more
//! calls (forwarded, refused, searched) leave its resident set where it was.
//! With `--nocapture` it prints the figures docs/gateway.md quotes. A server that
//! floods its output costs it a bounded buffer.

use serde_json::json;

use crate::gateway::support::*;

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

/// The gateway's peak resident set in KiB (Linux only).
fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A server nobody here controls may write a line that never seems to end,
/// or answer with more than anyone should hold: the gateway reads a message
/// of at most 16 MiB (rmcp's line limit) and drops a longer one unbuffered,
/// so neither costs it the size of what the server wrote. An answer over
/// the limit ends its call at once, saying so, and the server's other calls
/// go on.
#[test]
fn a_server_that_floods_its_output_costs_the_gateway_a_bounded_buffer() {
    const FLOOD_MIB: u64 = 96;
    let dir = temp_dir("flood");
    let (p, s) = files(
        &dir,
        "NoDefer(*)\n",
        &[(
            "fx",
            fixture(
                "echo,flood,huge",
                &[("FIXTURE_FLOOD_MIB", &FLOOD_MIB.to_string())],
            ),
        )],
    );
    // Far longer than the calls below take, so that an answer that only
    // ends at its timeout fails the test.
    let args = file_args(&p, &s, &["--call-timeout", "300"]);
    let mut g = Gateway::connect(&args, "2025-11-25").holding(dir);
    let Some(pid) = g.pid().filter(|&pid| peak_kib(pid).is_some()) else {
        eprintln!("skipped: no /proc to read the gateway's peak resident set from");
        return;
    };
    // A line of garbage, then the answer: the garbage is dropped, the
    // answer arrives.
    let r = g.call("fx__flood", json!({}));
    assert!(!is_error(&r), "{r}");
    assert_eq!(text(&r), "flood: done");
    // An answer over the limit is dropped too, and its call told why.
    let t0 = std::time::Instant::now();
    let r = g.call("fx__huge", json!({}));
    eprintln!(
        "an answer of {FLOOD_MIB} MiB ended its call in {:?}",
        t0.elapsed()
    );
    assert!(is_error(&r), "{r}");
    assert_eq!(
        text(&r),
        format!(
            "server `fx` failed on `huge`: the answer was {FLOOD_MIB}.0 MiB, over the 16 MiB \
             limit for one MCP message; the gateway dropped it (JSON-RPC error -32603)"
        ),
        "{}",
        g.stderr()
    );
    // The server wrote all of it before the call ended, so its next call
    // is answered at once.
    let r = g.call("fx__echo", json!({"text": "after"}));
    assert_eq!(text(&r), "echo: {\"text\":\"after\"}", "{}", g.stderr());
    let peak = peak_kib(pid).unwrap_or(0);
    eprintln!(
        "gateway peak resident set after a {FLOOD_MIB} MiB line and a {FLOOD_MIB} MiB answer: {peak} KiB"
    );
    assert!(
        peak < 64 * 1024,
        "the gateway peaked at {peak} KiB reading {FLOOD_MIB} MiB lines"
    );
}

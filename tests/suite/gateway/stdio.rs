//! `policy gateway` (docs/gateway.md) driven over stdio against the fixture server:
//! both exposures, search and call-through, the policy on every path, the
//! children's faults, reloads, bad inputs and the dry run.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::gateway::support::*;

const POLICY: &str = "\
guard fx__echo
Hide(fx__secret)
Defer(*)
";

const TOOLS: &str = "echo,secret,slow,fail,structured,crash,hang,change";

fn gateway(tag: &str, policy: &str, extra: &[&str], version: &str) -> Gateway {
    let dir = temp_dir(tag);
    let (p, s) = files(&dir, policy, &[("fx", fixture(TOOLS, &[]))]);
    Gateway::connect(&file_args(&p, &s, extra), version).holding(dir)
}

#[test]
fn call_exposure_lists_a_fixed_list_and_reaches_tools_through_call_tool() {
    let mut g = gateway("call", POLICY, &[], "2025-11-25");
    let listed = g.list();
    assert_eq!(listed, ["fx__echo", "tool_search", "call_tool"]);
    let r = g.call("tool_search", json!({"query": "slow"}));
    assert!(!is_error(&r), "{r}");
    let t = text(&r);
    assert!(t.contains("`fx__slow`"), "{t}");
    assert!(t.contains("through `call_tool`"), "{t}");
    assert!(t.contains("parameters: {"), "{t}");
    assert!(t.contains("\"properties\":{\"text\""), "{t}");
    // The list stays as it was: activated tools are called through call_tool.
    assert_eq!(g.list(), listed);
    assert!(!g.wait_list_changed(Duration::from_millis(300)));
    let r = g.call(
        "call_tool",
        json!({"name": "fx__slow", "arguments": {"text": "hi"}}),
    );
    assert!(!is_error(&r), "{r}");
    assert_eq!(text(&r), "slow: {\"text\":\"hi\"}");
    // A direct call of the activated tool passes the same check.
    let r = g.call("fx__slow", json!({}));
    assert!(!is_error(&r), "{r}");
    let r = g.call("fx__echo", json!({"text": "x"}));
    assert_eq!(text(&r), "echo: {\"text\":\"x\"}");
}

#[test]
fn hidden_and_unknown_tools_are_not_found_on_every_path() {
    let mut g = gateway("hidden", POLICY, &[], "2025-11-25");
    for (name, args) in [
        ("fx__secret", json!({})),
        ("secret", json!({})),
        ("call_tool", json!({"name": "fx__secret"})),
        ("call_tool", json!({"name": "secret"})),
        ("nope", json!({})),
        ("echo", json!({})),
    ] {
        let r = g.call(name, args.clone());
        assert!(is_error(&r), "{name} {args}: {r}");
        assert!(text(&r).ends_with("not found."), "{name} {args}: {r}");
    }
    let r = g.call(
        "tool_search",
        json!({"query": "secret", "names": ["fx__secret"]}),
    );
    let t = text(&r);
    assert!(
        t.contains("Not available in this chat: `fx__secret`."),
        "{t}"
    );
    assert!(!g.list().iter().any(|n| n.contains("secret")));
    let r = g.call("tool_search", json!({"query": "", "names": ["fx__secret"]}));
    assert!(!text(&r).contains("Loaded"), "{r}");
}

/// `--grant` is the runtime's allow-list, as for `plan`: what it does not
/// grant is hidden on every path; guards and the search tool stay.
#[test]
fn runtime_grants_restrict_what_the_client_reaches() {
    let mut g = gateway("grant", POLICY, &["--grant", "fx__slow"], "2025-11-25");
    assert_eq!(g.list(), ["fx__echo", "tool_search", "call_tool"]);
    let r = g.call("tool_search", json!({"query": "", "names": ["fx__fail"]}));
    assert!(
        text(&r).contains("Not available in this chat: `fx__fail`."),
        "{r}"
    );
    let r = g.call("call_tool", json!({"name": "fx__fail"}));
    assert!(text(&r).ends_with("not found."), "{r}");
    let r = g.call("tool_search", json!({"query": "", "names": ["fx__slow"]}));
    assert!(text(&r).contains("`fx__slow`"), "{r}");
    assert!(!text(&r).contains("Not available"), "{r}");
}

#[test]
fn a_deferred_tool_called_first_is_not_found_then_follows_on_miss() {
    let mut g = gateway("miss", POLICY, &[], "2025-11-25");
    let r = g.call("call_tool", json!({"name": "fx__fail"}));
    assert!(is_error(&r));
    assert!(text(&r).contains("It has been loaded now"), "{r}");
    // Now activated: the child answers, with its own error result.
    let r = g.call("call_tool", json!({"name": "fx__fail"}));
    assert_eq!(text(&r), "fail: as asked");
    assert!(is_error(&r));

    let strict = format!("on_miss = \"error\"\n{POLICY}");
    let mut g = gateway("miss-error", &strict, &[], "2025-11-25");
    for _ in 0..2 {
        let r = g.call("fx__fail", json!({}));
        assert_eq!(text(&r), "Tool `fx__fail` not found.");
    }
}

#[test]
fn list_changed_exposure_appends_activated_tools_and_tells_the_client() {
    let mut g = gateway("lc", POLICY, &["--exposure", "list-changed"], "2025-11-25");
    assert_eq!(g.list(), ["fx__echo", "tool_search"]);
    let r = g.call("tool_search", json!({"query": "", "names": ["fx__slow"]}));
    assert!(text(&r).contains("callable from your next step"), "{r}");
    assert!(g.wait_list_changed(DEADLINE));
    assert_eq!(g.list(), ["fx__echo", "tool_search", "fx__slow"]);
    assert!(!is_error(&g.call("fx__slow", json!({}))));
}

#[test]
fn list_changed_falls_back_to_call_through_where_the_protocol_forbids_it() {
    // A 2026-07-28 client opens with `server/discover` and sends its version
    // with every request.
    let dir = temp_dir("lc2026");
    let (p, s) = files(&dir, POLICY, &[("fx", fixture(TOOLS, &[]))]);
    let mut g = Gateway::spawn(&file_args(&p, &s, &["--exposure", "list-changed"]));
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "suite", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let d = g.request("server/discover", json!({"_meta": meta}));
    assert!(d.get("result").is_some(), "{d}\n{}", g.stderr());
    let r = g.request("tools/list", json!({"_meta": meta}));
    let names: Vec<&str> = r["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}\n{}", g.stderr()))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["fx__echo", "tool_search", "call_tool"]);
    assert!(
        g.wait_stderr("serving `call` exposure", 1),
        "{}",
        g.stderr()
    );
    // The child speaks 2025-11-25 and sends no `resultType`; this client
    // requires one on every result.
    let r = g.request(
        "tools/call",
        json!({"name": "fx__echo", "arguments": {}, "_meta": meta}),
    );
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    assert_eq!(text(&r["result"]), "echo: {}");
}

#[test]
fn results_are_bridged_to_the_client_protocol_version() {
    let mut g = gateway("bridge", "NoDefer(*)\n", &[], "2025-11-25");
    let r = g.call("fx__structured", json!({}));
    assert_eq!(r["structuredContent"], json!({"n": 1}), "{r}");
    let mut g = gateway("bridge-old", "NoDefer(*)\n", &[], "2025-03-26");
    let r = g.call("fx__structured", json!({}));
    assert!(r.get("structuredContent").is_none(), "{r}");
    assert_eq!(text(&r), "{\"n\":1}");
}

#[test]
fn children_of_both_protocol_eras_are_served_side_by_side() {
    let dir = temp_dir("eras");
    let (p, s) = files(
        &dir,
        "NoDefer(*)\n",
        &[
            (
                "old",
                fixture("echo", &[("FIXTURE_VERSIONS", "2025-11-25")]),
            ),
            (
                "new",
                fixture("echo", &[("FIXTURE_VERSIONS", "2026-07-28")]),
            ),
        ],
    );
    let mut g = Gateway::connect_files(&p, &s, "2025-11-25");
    assert_eq!(g.list(), ["old__echo", "new__echo"]);
    assert_eq!(text(&g.call("old__echo", json!({}))), "echo: {}");
    assert_eq!(text(&g.call("new__echo", json!({}))), "echo: {}");
}

#[test]
fn a_child_that_crashes_is_named_and_restarted_on_demand() {
    let mut g = gateway("crash", "NoDefer(*)\n", &[], "2025-11-25");
    assert!(g.wait_stderr("[fx] fixture up", 1));
    let r = g.call("fx__crash", json!({}));
    assert!(is_error(&r), "{r}");
    assert_eq!(
        text(&r),
        "server `fx` exited or closed its output during `crash`; it is started again for the \
         next call"
    );
    let last = g.call_until_answered("fx__echo", json!({}), "fx", DEADLINE);
    assert_eq!(text(&last), "echo: {}", "{}", g.stderr());
    assert!(g.wait_stderr("[fx] fixture up", 2));
    let err = g.stderr();
    assert!(err.contains("warning: server `fx` exited"), "{err}");
    assert!(err.contains("note: server `fx` restarted"), "{err}");
}

#[test]
fn a_child_that_hangs_is_cut_off_and_the_others_served() {
    let mut g = gateway(
        "hang",
        "NoDefer(*)\n",
        &["--call-timeout", "0.5"],
        "2025-11-25",
    );
    let t0 = Instant::now();
    let r = g.call("fx__hang", json!({}));
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert!(is_error(&r));
    assert_eq!(
        text(&r),
        "server `fx` did not answer `hang` within 0.5 s",
        "{r}"
    );
    assert_eq!(text(&g.call("fx__echo", json!({}))), "echo: {}");
}

#[test]
fn a_child_that_fails_to_start_leaves_the_others_served() {
    let dir = temp_dir("nostart");
    let (p, s) = files(
        &dir,
        "NoDefer(*)\n",
        &[
            ("down", fixture("echo", &[("FIXTURE_EXIT_AT_START", "1")])),
            ("up", fixture("echo", &[])),
        ],
    );
    let mut g = Gateway::connect_files(&p, &s, "2025-11-25");
    assert_eq!(g.list(), ["up__echo"]);
    assert_eq!(text(&g.call("up__echo", json!({}))), "echo: {}");
    let err = g.stderr();
    assert!(
        err.contains("[down] fixture: exiting at start, as asked"),
        "{err}"
    );
    assert!(err.contains("error: server `down` did not start"), "{err}");
}

#[test]
fn a_child_s_tools_list_changed_reloads_the_registry() {
    let mut g = gateway("relist", "NoDefer(*)\n", &[], "2025-11-25");
    assert!(!g.list().contains(&"fx__added".to_string()));
    let r = g.call("fx__change", json!({}));
    assert!(!is_error(&r), "{r}");
    assert!(g.wait_list_changed(DEADLINE), "{}", g.stderr());
    assert!(g.list().contains(&"fx__added".to_string()));
    assert_eq!(text(&g.call("fx__added", json!({}))), "added: {}");
}

#[test]
fn activations_survive_a_child_s_registry_reload() {
    let mut g = gateway("keep", "guard fx__change\nDefer(*)\n", &[], "2025-11-25");
    g.call("tool_search", json!({"query": "", "names": ["fx__slow"]}));
    g.call("fx__change", json!({}));
    assert!(g.wait_list_changed(DEADLINE));
    let r = g.call("call_tool", json!({"name": "fx__slow"}));
    assert!(!is_error(&r), "{r}");
}

#[test]
fn policy_reloads_good_and_bad() {
    let dir = temp_dir("reload");
    let (p, s) = files(&dir, POLICY, &[("fx", fixture(TOOLS, &[]))]);
    let mut g = Gateway::connect_files(&p, &s, "2025-11-25");
    assert_eq!(g.list(), ["fx__echo", "tool_search", "call_tool"]);
    std::fs::write(&p, format!("NoDefer(fx__slow)\n{POLICY}")).unwrap();
    assert!(g.wait_list_changed(DEADLINE), "{}", g.stderr());
    assert_eq!(
        g.list(),
        ["fx__echo", "tool_search", "call_tool", "fx__slow"]
    );
    std::fs::write(&p, "Defer(\n").unwrap();
    assert!(
        g.wait_stderr("keeping the last good policy", 1),
        "{}",
        g.stderr()
    );
    assert!(
        g.stderr().contains("gateway.policy:2:1: error[PL001]"),
        "{}",
        g.stderr()
    );
    assert_eq!(
        g.list(),
        ["fx__echo", "tool_search", "call_tool", "fx__slow"]
    );
    assert!(!is_error(&g.call("fx__slow", json!({}))));
    assert_eq!(g.finish(), Some(0));
}

#[test]
fn bad_servers_files_and_policies_exit_before_serving() {
    let dir = temp_dir("bad");
    let (p, s) = files(&dir, POLICY, &[("fx", json!({"args": ["x"]}))]);
    let (code, out, err) = run_to_end(&file_args(&p, &s, &[]));
    assert_eq!(code, Some(2), "{err}");
    assert!(out.is_empty());
    assert!(err.contains("`mcpServers.fx`: missing `command`"), "{err}");

    let (p, s) = files(&dir, "Defer(\n", &[("fx", fixture("echo", &[]))]);
    let (code, out, err) = run_to_end(&file_args(&p, &s, &[]));
    assert_eq!(code, Some(1), "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("gateway.policy:"), "{err}");

    let (p, s) = files(&dir, "mode agent {\n}\n", &[("fx", fixture("echo", &[]))]);
    let (code, _, err) = run_to_end(&file_args(&p, &s, &[]));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("`--mode` is required"), "{err}");
}

#[test]
fn dry_run_reports_servers_the_list_and_its_tokens() {
    let dir = temp_dir("dry");
    let (p, s) = files(
        &dir,
        POLICY,
        &[
            ("fx", fixture(TOOLS, &[])),
            ("down", fixture("echo", &[("FIXTURE_EXIT_AT_START", "1")])),
        ],
    );
    let (code, out, err) = run_to_end(&file_args(&p, &s, &["--dry-run"]));
    assert_eq!(code, Some(1), "{err}");
    assert!(out.contains("  fx: 8 tools\n"), "{out}");
    assert!(
        out.contains("  down: failed: server `down` did not start"),
        "{out}"
    );
    assert!(
        out.contains("listed (3 tools, `call` exposure):\n  fx__echo, tool_search, call_tool\n"),
        "{out}"
    );
    assert!(
        out.contains("- fx__slow: Tool slow of the fixture."),
        "{out}"
    );
    assert!(out.contains("tokens: "), "{out}");

    let (p, s) = files(&dir, POLICY, &[("fx", fixture(TOOLS, &[]))]);
    let (code, out, err) = run_to_end(&file_args(&p, &s, &["--dry-run", "--format", "json"]));
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["servers"][0],
        json!({"name": "fx", "tools": 8, "error": null})
    );
    assert_eq!(v["listed"], json!(["fx__echo", "tool_search", "call_tool"]));
    assert_eq!(v["deferred"], json!(6));
    assert_eq!(v["hidden"], json!(1));
    assert!(v["tokens"]["listed"].as_u64().unwrap() > 0);
    assert!(v["tokens"]["all_visible"].as_u64().unwrap() > 0);
}

#[test]
fn a_child_that_does_not_start_in_time_is_reported_and_the_others_served() {
    let dir = temp_dir("slowstart");
    let (p, s) = files(
        &dir,
        "NoDefer(*)\n",
        &[
            ("stuck", fixture("echo", &[("FIXTURE_HANG_AT_START", "1")])),
            ("up", fixture("echo", &[])),
        ],
    );
    let t0 = Instant::now();
    let (code, out, err) = run_to_end(&file_args(&p, &s, &["--start-timeout", "0.5", "--dry-run"]));
    assert!(t0.elapsed() < Duration::from_secs(10));
    assert_eq!(code, Some(1), "{err}");
    assert!(
        out.contains("  stuck: failed: server `stuck` did not start within 0.5 s\n  up: 1 tools\n"),
        "{out}"
    );
}

#[cfg(unix)]
#[test]
fn sighup_rereads_the_policy() {
    let dir = temp_dir("hup");
    let (p, s) = files(&dir, POLICY, &[("fx", fixture(TOOLS, &[]))]);
    let mut g = Gateway::connect_files(&p, &s, "2025-11-25");
    g.list();
    g.signal("HUP");
    assert!(g.wait_stderr("note: reloaded", 1), "{}", g.stderr());
    assert!(g.wait_list_changed(DEADLINE));
}

#[cfg(unix)]
#[test]
fn a_child_killed_from_outside_is_restarted_on_the_next_call() {
    let mut g = one_fixture("killed", "echo,pid", &[]);
    let pid = text(&g.call("fx__pid", json!({})));
    kill(&pid, "KILL");
    let last = g.call_until_answered("fx__pid", json!({}), "fx", DEADLINE);
    assert!(!is_error(&last), "{last}\n{}", g.stderr());
    assert_ne!(text(&last), pid);
}

#[test]
fn clients_of_2026_hear_of_reloads_on_their_subscription_stream() {
    let dir = temp_dir("listen");
    let (p, s) = files(&dir, POLICY, &[("fx", fixture(TOOLS, &[]))]);
    let mut g = Gateway::spawn(&file_args(&p, &s, &[]));
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "suite", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let d = g.request("server/discover", json!({"_meta": meta}));
    assert!(d.get("result").is_some(), "{d}");
    g.send(
        &json!({"jsonrpc": "2.0", "id": 99, "method": "subscriptions/listen",
                   "params": {"_meta": meta, "notifications": {"toolsListChanged": true}}}),
    );
    // A search activates a tool: a side effect of a request, never announced.
    let r = g.request(
        "tools/call",
        json!({"name": "tool_search", "arguments": {"query": "", "names": ["fx__slow"]}, "_meta": meta}),
    );
    assert!(text(&r["result"]).contains("fx__slow"), "{r}");
    assert!(!g.wait_list_changed(Duration::from_millis(500)));
    std::fs::write(&p, format!("NoDefer(fx__slow)\n{POLICY}")).unwrap();
    assert!(
        g.wait_list_changed(DEADLINE),
        "{:?}\n{}",
        g.notifications,
        g.stderr()
    );
}

/// Whether a process runs (a zombie, exited but not waited for, does not).
#[cfg(target_os = "linux")]
fn running(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .map(str::trim_start)
            .is_some_and(|s| !s.starts_with('Z'))
    })
}

/// A gateway in front of three local servers: one that exits when its
/// input closes, one that stays up until `SIGTERM`, one that ignores
/// `SIGTERM` too; with their process ids.
#[cfg(target_os = "linux")]
fn lingering_servers(tag: &str) -> (Gateway, Vec<String>) {
    let dir = temp_dir(tag);
    let (p, s) = files(
        &dir,
        "NoDefer(*)\n",
        &[
            ("quits", fixture("pid", &[])),
            ("term", fixture("pid", &[("FIXTURE_LINGER", "term")])),
            ("kill", fixture("pid", &[("FIXTURE_LINGER", "kill")])),
        ],
    );
    let mut g = Gateway::connect_files(&p, &s, "2025-11-25").holding(dir);
    let pids: Vec<String> = ["quits", "term", "kill"]
        .iter()
        .map(|server| text(&g.call(&format!("{server}__pid"), json!({}))))
        .collect();
    assert!(pids.iter().all(|pid| running(pid)), "{pids:?}");
    (g, pids)
}

/// Once the gateway has exited: none of [`lingering_servers`] runs.
#[cfg(target_os = "linux")]
fn assert_none_outlived(pids: &[String]) {
    for (server, pid) in ["quits", "term", "kill"].iter().zip(pids) {
        assert!(
            !running(pid),
            "server `{server}` ({pid}) outlived the gateway"
        );
    }
}

/// Stops the gateway with `stop`, then checks that it stopped each server
/// as MCP asks: its input closed, then `SIGTERM` for one that stays up,
/// then `SIGKILL` for one that ignores that too; no server outlives it.
#[cfg(target_os = "linux")]
fn assert_servers_shut_down(tag: &str, stop: impl FnOnce(&mut Gateway)) -> String {
    let (mut g, pids) = lingering_servers(tag);
    let t0 = std::time::Instant::now();
    stop(&mut g);
    assert_eq!(g.wait_exit(), Some(0), "{}", g.stderr());
    eprintln!(
        "the gateway stopped its three servers in {:?}",
        t0.elapsed()
    );
    assert_none_outlived(&pids);
    let stderr = g.stderr();
    assert!(
        stderr.contains("[term] fixture: stopping on SIGTERM"),
        "{stderr}"
    );
    assert!(
        stderr.contains("[kill] fixture: ignoring SIGTERM"),
        "{stderr}"
    );
    stderr
}

#[cfg(target_os = "linux")]
#[test]
fn children_are_shut_down_when_the_client_goes() {
    assert_servers_shut_down("shutdown-eof", Gateway::close_input);
}

/// A client that stops the gateway with `SIGTERM` (as MCP's shutdown asks
/// of it after closing its input) or a user's Ctrl-C (`SIGINT`) has it
/// stop its servers the same way before it exits.
#[cfg(target_os = "linux")]
#[test]
fn children_are_shut_down_when_the_gateway_is_terminated() {
    for signal in ["TERM", "INT"] {
        let stderr = assert_servers_shut_down("shutdown-signal", |g| g.signal(signal));
        assert!(
            stderr.contains(&format!(
                "note: SIG{signal}: stopping the servers (a second signal kills them)"
            )),
            "{stderr}"
        );
    }
}

/// A second signal while the servers are being stopped kills those still
/// running at once: a user who presses Ctrl-C twice does not wait.
#[cfg(target_os = "linux")]
#[test]
fn a_second_signal_kills_the_servers_still_running() {
    let (mut g, pids) = lingering_servers("shutdown-twice");
    g.signal("INT");
    assert!(
        g.wait_stderr("[kill] fixture: input closed, staying up", 1),
        "{}",
        g.stderr()
    );
    g.signal("INT");
    assert_eq!(g.wait_exit(), Some(0), "{}", g.stderr());
    let stderr = g.stderr();
    assert!(
        stderr.contains("note: SIGINT: killing the servers"),
        "{stderr}"
    );
    // Killed before their three seconds to exit had run out.
    assert!(!stderr.contains("fixture: stopping on SIGTERM"), "{stderr}");
    assert_none_outlived(&pids);
}

/// A server that announces `tools/list_changed` a thousand times in a row
/// (a bug, or a server nobody here controls) is listed again a few times,
/// not a thousand: the announcements that arrive while one listing runs
/// are answered by the next one.
#[test]
fn a_storm_of_list_changes_is_answered_by_a_few_listings() {
    let mut g = one_fixture("storm", "echo,storm,lists", &[]);
    let before = g.call_count("fx__lists");
    assert_eq!(text(&g.call("fx__storm", json!({}))), "storm: sent 1000");
    // Settled: no listing for half a second.
    let until = Instant::now() + DEADLINE;
    let mut last = g.call_count("fx__lists");
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let now = g.call_count("fx__lists");
        if now == last || Instant::now() > until {
            break;
        }
        last = now;
    }
    let listings = last - before;
    eprintln!("1,000 announcements, {listings} listings");
    assert!((1..=20).contains(&listings), "{listings} listings");
    assert_eq!(text(&g.call("fx__echo", json!({}))), "echo: {}");
}

/// A server's tools are listed page by page, and a listing that cannot end
/// is cut short with a message that says why: pages that go round in a
/// circle, or more tools, or more bytes of them, than the gateway takes
/// from one server. Each fails that server's start at once, not at the
/// start timeout, and leaves the other servers served.
#[test]
fn pages_of_tools_are_followed_and_endless_listings_refused() {
    let dir = temp_dir("pages");
    let (p, s) = files(
        &dir,
        "NoDefer(*)\n",
        &[
            (
                "paged",
                fixture(
                    "echo",
                    &[("FIXTURE_EXTRA_TOOLS", "4"), ("FIXTURE_PAGE_SIZE", "2")],
                ),
            ),
            (
                "circle",
                fixture(
                    "echo",
                    &[("FIXTURE_PAGE_SIZE", "1"), ("FIXTURE_PAGES_CIRCLE", "1")],
                ),
            ),
            ("many", fixture("echo", &[("FIXTURE_EXTRA_TOOLS", "10000")])),
            // 150 tools of 256 KiB, in pages of 40 (10 MiB each).
            (
                "large",
                fixture(
                    "echo",
                    &[
                        ("FIXTURE_EXTRA_TOOLS", "149"),
                        ("FIXTURE_PAGE_SIZE", "40"),
                        ("FIXTURE_DESCRIPTION_KIB", "256"),
                    ],
                ),
            ),
        ],
    );
    let t0 = Instant::now();
    let mut g = Gateway::connect_files(&p, &s, "2025-11-25").holding(dir);
    let listed = g.list();
    assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
    let paged: Vec<_> = listed.iter().filter(|n| n.starts_with("paged__")).collect();
    assert_eq!(
        paged,
        [
            "paged__echo",
            "paged__extra_0",
            "paged__extra_1",
            "paged__extra_2",
            "paged__extra_3"
        ]
    );
    let refused = ["circle__", "many__", "large__"];
    assert!(
        !listed
            .iter()
            .any(|n| refused.iter().any(|r| n.starts_with(r)))
    );
    let err = g.stderr();
    assert!(
        err.contains(
            "error: server `circle` did not list its tools: it sent the cursor \"0\" a second \
             time, so its pages go round in a circle"
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "error: server `many` did not list its tools: it has more than 10000 tools, the \
             most the gateway takes from one server"
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "error: server `large` did not list its tools: its tools take more than 32 MiB, \
             the most the gateway takes from one server"
        ),
        "{err}"
    );
}

/// A client that pipes the gateway's standard error and stops reading it
/// does not stop the gateway: while the pipe is full, what its servers
/// write there is dropped and counted, calls are answered, and once the
/// client reads again it is told how many lines it missed.
#[test]
fn a_standard_error_nobody_reads_does_not_stop_the_gateway() {
    let mut g = one_fixture("stderr-full", "echo,chatter", &[]);
    assert!(g.wait_stderr("note: server `fx` started", 1));
    g.pause_stderr(true);
    // 4 MiB for a pipe of 64 KiB, twice, and calls answered meanwhile.
    for _ in 0..2 {
        assert_eq!(text(&g.call("fx__chatter", json!({}))), "chatter: done");
        assert_eq!(text(&g.call("fx__echo", json!({}))), "echo: {}");
    }
    g.pause_stderr(false);
    assert!(
        g.wait_stderr(
            "lines of standard error were dropped: nobody read them in time",
            1
        ),
        "{}",
        g.stderr()
            .lines()
            .filter(|l| !l.starts_with("[fx] ccc"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert_eq!(
        text(&g.call("fx__echo", json!({"n": 1}))),
        "echo: {\"n\":1}"
    );
}

/// A call the client cancels (`notifications/cancelled`) is cancelled at
/// the server it was forwarded to, at once, rather than left running until
/// it answers or the call timeout ends it.
#[test]
fn a_call_the_client_cancels_is_cancelled_at_the_server() {
    let mut g = gateway(
        "cancel",
        "NoDefer(*)\n",
        &["--call-timeout", "300"],
        "2025-11-25",
    );
    let id = 9001;
    g.send(&json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "fx__hang", "arguments": {}},
    }));
    // The call has reached the server when another call is answered after it.
    assert_eq!(text(&g.call("fx__echo", json!({}))), "echo: {}");
    g.notify(
        "notifications/cancelled",
        json!({"requestId": id, "reason": "the user pressed stop"}),
    );
    assert!(
        g.wait_stderr("[fx] fixture: the client cancelled `hang`", 1),
        "{}",
        g.stderr()
    );
    assert_eq!(
        text(&g.call("fx__echo", json!({"after": true}))),
        "echo: {\"after\":true}"
    );
}

/// A signal while the servers are still starting stops the gateway at
/// once, not at the start timeout, and the servers already running with it.
#[cfg(target_os = "linux")]
#[test]
fn a_signal_while_servers_start_stops_them_and_the_gateway() {
    let dir = temp_dir("signal-at-start");
    let (p, s) = files(
        &dir,
        "NoDefer(*)\n",
        &[("slow", fixture("echo", &[("FIXTURE_HANG_AT_START", "1")]))],
    );
    let mut g = Gateway::spawn(&file_args(&p, &s, &["--start-timeout", "300"]));
    assert!(
        g.wait_stderr("fixture: hanging at start", 1),
        "{}",
        g.stderr()
    );
    let stderr = g.stderr();
    let pid = stderr
        .split("(pid ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .expect("the fixture's pid")
        .to_string();
    assert!(running(&pid));
    g.signal("TERM");
    assert_eq!(g.wait_exit(), Some(0), "{}", g.stderr());
    assert!(
        g.stderr()
            .contains("note: SIGTERM: stopping the servers that were starting"),
        "{}",
        g.stderr()
    );
    // Killed as the gateway dropped it; reaped by whoever adopts it.
    let until = Instant::now() + DEADLINE;
    while running(&pid) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!running(&pid), "the starting server outlived the gateway");
}

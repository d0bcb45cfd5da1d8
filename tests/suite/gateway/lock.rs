//! The gateway and lock files: a server that changes its tools while the
//! gateway runs (the fixture's `rugpull`) has each change named on standard
//! error, locked or not; with a lock, each unlocked tool follows the
//! effective `unlocked` from the next request on, on every path.

use serde_json::{Value, json};

use crate::gateway::support::*;

/// The fixture's tools for these tests: `rugpull` changes `note`'s
/// description, `write`'s schema and `delete`'s hints, and adds `pulled`.
const TOOLS: &str = "echo,note,write,delete,rugpull,restore";

/// Without a lock, every change is named with its fields, and a tool added
/// after start is named too; the tools stay as the policy decides them.
#[test]
fn without_a_lock_each_change_is_named_with_its_fields() {
    let mut g = one_fixture("rug-nolock", TOOLS, &[]);
    assert_eq!(text(&g.call("fx__rugpull", json!({}))), "rugpull: changed");
    assert!(g.wait_list_changed(DEADLINE), "{}", g.stderr());
    for line in [
        "warning: server `fx`: tool `fx__note` changed after start: description",
        "warning: server `fx`: tool `fx__write` changed after start: input schema",
        "warning: server `fx`: tool `fx__delete` changed after start: annotations",
        "note: server `fx`: tool `fx__pulled` added after start",
    ] {
        assert!(g.wait_stderr(line, 1), "no `{line}` in:\n{}", g.stderr());
    }
    let err = g.stderr();
    for quiet in [
        "`fx__echo` changed",
        "`fx__rugpull` changed",
        "`fx__echo` added",
    ] {
        assert!(!err.contains(quiet), "{err}");
    }
    // No lock: all five are still served, the new one too.
    let listed = g.list();
    for name in ["fx__note", "fx__write", "fx__delete", "fx__pulled"] {
        assert!(listed.iter().any(|n| n == name), "{name}: {listed:?}");
    }
    let r = g.call("fx__note", json!({"text": "hi"}));
    assert!(!is_error(&r), "{r}");
}

/// Writes the lock the policy names from the servers as they list their
/// tools now, as a user would: `policy lock --servers`.
fn lock_servers(policy: &std::path::Path, servers: &std::path::Path) {
    let (code, out, err) = policy_to_end(&[
        "lock",
        "--policy",
        policy.to_str().unwrap(),
        "--servers",
        servers.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "policy lock: {out}{err}");
}

/// A gateway on a locked policy (`policy` after the `lock` line) in front of
/// the fixture with [`TOOLS`], the lock written first; `extra` are more
/// arguments.
fn locked(tag: &str, policy: &str, extra: &[&str]) -> Gateway {
    let dir = temp_dir(tag);
    let text = format!("lock = \"tools.lock\"\n{policy}");
    let (p, s) = files(&dir, &text, &[("fx", fixture(TOOLS, &[]))]);
    lock_servers(&p, &s);
    let args = file_args(&p, &s, extra);
    Gateway::connect(&args, "2025-11-25").holding(dir)
}

/// Calls `rugpull` and waits until the gateway has listed the changes.
fn pull(g: &mut Gateway) {
    assert_eq!(text(&g.call("fx__rugpull", json!({}))), "rugpull: changed");
    assert!(g.wait_list_changed(DEADLINE), "{}", g.stderr());
    assert!(
        g.wait_stderr("tool `fx__pulled` added after start", 1),
        "{}",
        g.stderr()
    );
}

/// A call through `call_tool`.
fn through(g: &mut Gateway, name: &str) -> Value {
    g.call(
        "call_tool",
        json!({"name": name, "arguments": {"text": "x"}}),
    )
}

/// A search that loads these tools by name.
fn load(g: &mut Gateway, names: &[&str]) -> Value {
    g.call("tool_search", json!({"query": "", "names": names}))
}

fn assert_not_found(r: &Value, name: &str) {
    assert!(is_error(r), "`{name}` was reached: {r}");
    assert!(text(r).contains("not found"), "{name}: {r}");
}

const CHANGED: [&str; 4] = ["fx__note", "fx__write", "fx__delete", "fx__pulled"];

/// Under the default `unlocked = "hide"`, every tool that changes, and the
/// one added, is named with what becomes of it and is hidden from the next
/// request on: not listed, not found by a direct call, through `call_tool`
/// or by a search; the tools that did not change are served as before.
#[test]
fn a_locked_gateway_hides_each_tool_that_changes_on_every_path() {
    let mut g = locked(
        "lock-hide",
        "NoDefer(fx__note, fx__write, fx__delete, fx__rugpull)\nDefer(*)\n",
        &[],
    );
    let before = g.list();
    for name in [
        "fx__note",
        "fx__write",
        "fx__delete",
        "call_tool",
        "tool_search",
    ] {
        assert!(before.iter().any(|n| n == name), "{name}: {before:?}");
    }
    assert!(!is_error(&g.call("fx__note", json!({"text": "x"}))));
    assert!(!g.stderr().contains("lock does not hold"), "{}", g.stderr());
    pull(&mut g);
    for line in [
        "warning: server `fx`: tool `fx__note` changed after start: description; the lock does not hold it: hidden from the next request on",
        "warning: server `fx`: tool `fx__write` changed after start: input schema; the lock does not hold it: hidden from the next request on",
        "warning: server `fx`: tool `fx__delete` changed after start: annotations; the lock does not hold it: hidden from the next request on",
        "note: server `fx`: tool `fx__pulled` added after start; the lock does not hold it: hidden from the next request on",
    ] {
        assert!(g.wait_stderr(line, 1), "no `{line}` in:\n{}", g.stderr());
    }
    let after = g.list();
    for name in CHANGED {
        assert!(!after.iter().any(|n| n == name), "{name} listed: {after:?}");
        assert_not_found(&g.call(name, json!({"text": "x"})), name);
        assert_not_found(&through(&mut g, name), name);
    }
    let r = g.call(
        "tool_search",
        json!({"query": "note ssh id_rsa write delete pulled"}),
    );
    for name in CHANGED {
        assert!(!text(&r).contains(name), "a search found {name}: {r}");
    }
    // What did not change is served as before.
    assert!(after.iter().any(|n| n == "fx__rugpull"), "{after:?}");
    let r = through(&mut g, "fx__echo");
    assert!(
        text(&r).contains("not found"),
        "echo is deferred, not yet loaded: {r}"
    );
    let r = load(&mut g, &["fx__echo"]);
    assert!(text(&r).contains("fx__echo"), "{r}");
    assert!(!is_error(&through(&mut g, "fx__echo")));
}

/// A tool the model had loaded by a search, and called, is refused once it
/// changes: loading it earlier does not keep it past the lock.
#[test]
fn a_loaded_tool_that_changes_cannot_be_called_any_more() {
    let mut g = locked("lock-loaded", "NoDefer(fx__rugpull)\nDefer(*)\n", &[]);
    let r = load(&mut g, &["fx__note", "fx__echo"]);
    assert!(text(&r).contains("fx__note"), "{r}");
    assert!(!is_error(&through(&mut g, "fx__note")));
    pull(&mut g);
    assert_not_found(&through(&mut g, "fx__note"), "fx__note");
    assert_not_found(&g.call("fx__note", json!({"text": "x"})), "fx__note");
    // A search cannot bring it back.
    let r = load(&mut g, &["fx__note"]);
    assert!(!text(&r).contains("IMPORTANT"), "{r}");
    assert_not_found(&through(&mut g, "fx__note"), "fx__note");
    // The loaded tool that did not change is still loaded.
    assert!(!is_error(&through(&mut g, "fx__echo")));
}

/// Under `unlocked = "defer"`, a changed tool, declared or loaded before,
/// is deferred: not listed, not reached until a search loads it again, and
/// the search shows its new definition, which the model reads before use.
#[test]
fn with_unlocked_defer_a_changed_tool_is_read_again_before_use() {
    let mut g = locked(
        "lock-defer",
        "unlocked = \"defer\"\non_miss = \"error\"\nNoDefer(fx__note, fx__rugpull)\nDefer(*)\n",
        &[],
    );
    assert!(g.list().iter().any(|n| n == "fx__note"));
    let r = load(&mut g, &["fx__write"]);
    assert!(text(&r).contains("fx__write"), "{r}");
    assert!(!is_error(&through(&mut g, "fx__write")));
    pull(&mut g);
    assert!(
        g.wait_stderr(
            "tool `fx__note` changed after start: description; the lock does not hold it: deferred from the next request on",
            1
        ),
        "{}",
        g.stderr()
    );
    let listed = g.list();
    assert!(!listed.iter().any(|n| n == "fx__note"), "{listed:?}");
    for name in ["fx__note", "fx__write", "fx__pulled"] {
        assert_not_found(&g.call(name, json!({"text": "x"})), name);
        assert_not_found(&through(&mut g, name), name);
    }
    // Found again by a search, with the definition as it is now: the
    // schema with its new parameter (a description shows its summary).
    let r = load(&mut g, &["fx__note", "fx__write"]);
    let shown = text(&r);
    assert!(
        shown.contains(
            r#"{"type":"object","properties":{"text":{"type":"string"},"note":{"type":"string"}}}"#
        ),
        "the new parameter is shown: {shown}"
    );
    assert!(!is_error(&through(&mut g, "fx__note")));
    assert!(!is_error(&through(&mut g, "fx__write")));
}

/// With `--exposure list-changed`, a loaded tool that changes under
/// `unlocked = "defer"` leaves the list until a search loads it again.
#[test]
fn with_list_changed_exposure_a_changed_loaded_tool_leaves_the_list() {
    let mut g = locked(
        "lock-list-changed",
        "unlocked = \"defer\"\nNoDefer(fx__rugpull)\nDefer(*)\n",
        &["--exposure", "list-changed"],
    );
    let r = load(&mut g, &["fx__note", "fx__echo"]);
    assert!(text(&r).contains("fx__note"), "{r}");
    let listed = g.list();
    assert!(listed.iter().any(|n| n == "fx__note"), "{listed:?}");
    pull(&mut g);
    let listed = g.list();
    assert!(!listed.iter().any(|n| n == "fx__note"), "{listed:?}");
    assert!(listed.iter().any(|n| n == "fx__echo"), "{listed:?}");
    load(&mut g, &["fx__note"]);
    let listed = g.list();
    assert!(listed.iter().any(|n| n == "fx__note"), "{listed:?}");
}

/// `unlocked` is scoped like every setting: a mode that allows unlocked
/// tools serves them as before, and the change is still named.
#[test]
fn unlocked_allow_in_the_gateways_mode_serves_changed_tools() {
    let mut g = locked(
        "lock-allow",
        "mode work {\n}\nmode trusted {\n  unlocked = \"allow\"\n}\nNoDefer(*)\n",
        &["--mode", "trusted"],
    );
    pull(&mut g);
    assert!(
        g.wait_stderr(
            "tool `fx__note` changed after start: description; the lock does not hold it: served anyway (`unlocked = \"allow\"`)",
            1
        ),
        "{}",
        g.stderr()
    );
    let listed = g.list();
    for name in CHANGED {
        assert!(listed.iter().any(|n| n == name), "{name}: {listed:?}");
        assert!(!is_error(&g.call(name, json!({"text": "x"}))), "{name}");
    }
}

/// The `drift` event says whether the lock held the tool that changed.
#[test]
#[cfg(unix)]
fn a_drift_event_says_whether_the_lock_held_the_tool() {
    let dir = temp_dir("lock-drift");
    let (p, s) = files(
        &dir,
        "lock = \"tools.lock\"\nNoDefer(*)\n",
        &[("fx", fixture(TOOLS, &[]))],
    );
    lock_servers(&p, &s);
    // `fx__write` is not in the lock: it was unlocked before it changed.
    let lock_path = dir.join("tools.lock");
    let text_before = std::fs::read_to_string(&lock_path).unwrap();
    let kept: Vec<&str> = text_before
        .lines()
        .filter(|l| !l.contains("\"fx__write\""))
        .collect();
    std::fs::write(&lock_path, kept.join("\n") + "\n").unwrap();
    let log = dir.join("audit.jsonl");
    let log_arg = log.to_str().unwrap().to_string();
    let mut g = Gateway::connect(&file_args(&p, &s, &["--audit", &log_arg]), "2025-11-25");
    pull(&mut g);
    assert_eq!(g.finish(), Some(0), "{}", g.stderr());
    let drift: std::collections::BTreeMap<String, Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "drift")
        .map(|e| (e["tool"].as_str().unwrap_or_default().to_string(), e))
        .collect();
    assert_eq!(drift["fx__note"]["locked"], true, "{drift:?}");
    assert_eq!(drift["fx__delete"]["locked"], true, "{drift:?}");
    assert_eq!(drift["fx__write"]["locked"], false, "{drift:?}");
    assert_eq!(drift["fx__write"]["fields"], json!(["input schema"]));
}

/// `--dry-run` counts the tools the lock holds, those that changed since it
/// was written and those it has no entry for.
#[test]
fn dry_run_counts_locked_changed_and_new_tools() {
    let dir = temp_dir("lock-dry-run");
    let policy = "lock = \"tools.lock\"\nNoDefer(*)\n";
    let (p, s) = files(&dir, policy, &[("fx", fixture(TOOLS, &[]))]);
    lock_servers(&p, &s);
    let args = file_args(&p, &s, &["--dry-run", "--format", "json"]);
    let (code, out, err) = run_to_end(&args);
    assert_eq!(code, Some(0), "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["lock"]["locked"], 6, "{report}");
    assert_eq!(report["lock"]["changed"], 0, "{report}");
    assert_eq!(report["lock"]["new"], 0, "{report}");
    // The same servers, as after `rugpull`.
    let (p, s) = files(
        &dir,
        policy,
        &[("fx", fixture(TOOLS, &[("FIXTURE_PULLED", "1")]))],
    );
    let (code, out, err) = run_to_end(&file_args(&p, &s, &["--dry-run", "--format", "json"]));
    assert_eq!(code, Some(0), "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["lock"]["locked"], 3, "{report}");
    assert_eq!(report["lock"]["changed"], 3, "{report}");
    assert_eq!(report["lock"]["new"], 1, "{report}");
    let hidden: Vec<&str> = report["hidden_tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        hidden,
        ["fx__note", "fx__write", "fx__delete", "fx__pulled"]
    );
    let (code, out, err) = run_to_end(&file_args(&p, &s, &["--dry-run"]));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("lock `tools.lock`: 3 locked, 3 changed, 1 new, 0 removed (unlocked: hide)"),
        "{out}"
    );
}

/// The lock file is watched as the policy is: a new lock is in force from
/// the next request on, and one that does not load keeps the last good
/// policy and says why.
#[test]
fn a_lock_reload_is_a_policy_reload() {
    let dir = temp_dir("lock-reload");
    let (p, s) = files(
        &dir,
        "lock = \"tools.lock\"\nNoDefer(*)\n",
        &[("fx", fixture(TOOLS, &[]))],
    );
    lock_servers(&p, &s);
    let lock_path = dir.join("tools.lock");
    let good = std::fs::read_to_string(&lock_path).unwrap();
    let mut g = Gateway::connect(&file_args(&p, &s, &[]), "2025-11-25");
    assert!(!is_error(&g.call("fx__note", json!({"text": "x"}))));
    // The lock loses `fx__note`'s entry: it is hidden from then on.
    let without: Vec<&str> = good
        .lines()
        .filter(|l| !l.contains("\"fx__note\""))
        .collect();
    std::fs::write(&lock_path, without.join("\n") + "\n").unwrap();
    assert!(
        g.wait_stderr("gateway.policy` and its lock `tools.lock`", 1),
        "{}",
        g.stderr()
    );
    assert_not_found(&g.call("fx__note", json!({"text": "x"})), "fx__note");
    // A lock that is not one: the last good policy stays.
    std::fs::write(&lock_path, "{\"toolpolicy_lock\":1}\nnot json\n").unwrap();
    assert!(
        g.wait_stderr("keeping the last good policy", 1),
        "{}",
        g.stderr()
    );
    assert!(g.stderr().contains("tools.lock"), "{}", g.stderr());
    assert_not_found(&g.call("fx__note", json!({"text": "x"})), "fx__note");
    assert!(!is_error(&g.call("fx__echo", json!({"text": "x"}))));
    // The good lock again: `fx__note` is back.
    std::fs::write(&lock_path, &good).unwrap();
    assert!(
        g.wait_stderr("gateway.policy` and its lock `tools.lock`", 2),
        "{}",
        g.stderr()
    );
    assert!(!is_error(&g.call("fx__note", json!({"text": "x"}))));
    drop(g);
    drop(dir);
}

/// A tool that changes back to the definition the lock holds is served
/// again, and the line says so.
#[test]
fn a_tool_changed_back_to_its_locked_definition_is_served_again() {
    let mut g = locked("lock-restore", "NoDefer(*)\n", &[]);
    pull(&mut g);
    assert_not_found(&g.call("fx__note", json!({"text": "x"})), "fx__note");
    assert_eq!(text(&g.call("fx__restore", json!({}))), "restore: restored");
    assert!(
        g.wait_stderr(
            "warning: server `fx`: tool `fx__note` changed after start: description; the lock holds it",
            1
        ),
        "{}",
        g.stderr()
    );
    assert!(!is_error(&g.call("fx__note", json!({"text": "x"}))));
    // The tool the lock never had stays hidden.
    assert_not_found(&g.call("fx__pulled", json!({})), "fx__pulled");
}

/// Under `unlocked = "defer"` and the default `on_miss = "activate"`, a
/// changed tool is not loaded by a direct call: however often it is called,
/// directly or through `call_tool`, it is not reached until a search or a
/// load has shown its new definition, and the refusal says so.
#[test]
fn with_unlocked_defer_a_direct_call_does_not_load_a_changed_tool() {
    let mut g = locked(
        "lock-defer-miss",
        "unlocked = \"defer\"\nNoDefer(fx__note, fx__rugpull)\nDefer(*)\n",
        &[],
    );
    pull(&mut g);
    for _ in 0..2 {
        for name in ["fx__note", "fx__write"] {
            let r = g.call(name, json!({"text": "x"}));
            assert_not_found(&r, name);
            assert!(text(&r).contains("load it by name"), "{r}");
            assert_not_found(&through(&mut g, name), name);
        }
    }
    // A tool deferred by policy alone still follows `on_miss`.
    let r = g.call("fx__echo", json!({"text": "x"}));
    assert!(text(&r).contains("loaded now"), "{r}");
    assert!(!is_error(&through(&mut g, "fx__echo")));
    let r = load(&mut g, &["fx__note"]);
    assert!(text(&r).contains("fx__note"), "{r}");
    assert!(!is_error(&through(&mut g, "fx__note")));
}

/// A locked gateway listening on a free loopback port.
fn locked_listening(tag: &str, policy: &str) -> crate::gateway::listen::Listening {
    let dir = temp_dir(tag);
    let text = format!("lock = \"tools.lock\"\n{policy}");
    let (p, s) = files(&dir, &text, &[("fx", fixture(TOOLS, &[]))]);
    lock_servers(&p, &s);
    let path = dir.to_path_buf();
    let gw = Gateway::spawn(&file_args(&p, &s, &["--listen", "127.0.0.1:0"])).holding(dir);
    let addr = crate::gateway::listen::serving_at(&gw);
    crate::gateway::listen::Listening {
        gw,
        addr,
        dir: path,
    }
}

/// Over HTTP, a request without a session has no memory of a search, so it
/// never reaches a tool `unlocked = "defer"` holds back, by any path, and
/// the refusal says to use a session; a session reaches it once a search
/// of its own has shown the new definition, never by `on_miss`.
#[test]
fn over_http_a_changed_deferred_tool_is_called_only_in_a_session_that_read_it() {
    use crate::gateway::listen::{Session, stateless_call};
    let l = locked_listening(
        "lock-defer-http",
        "unlocked = \"defer\"\nNoDefer(fx__note, fx__rugpull)\nDefer(*)\n",
    );
    let r = stateless_call(&l.addr, &[], "fx__note", json!({"text": "x"}));
    assert!(!is_error(&r), "locked, so served: {r}");
    let mut a = Session::open(&l.addr);
    assert_eq!(text(&a.call("fx__rugpull", json!({}))), "rugpull: changed");
    assert!(
        l.gw.wait_stderr("tool `fx__pulled` added after start", 1),
        "{}",
        l.gw.stderr()
    );
    for _ in 0..2 {
        for (name, arguments) in [
            ("fx__note", json!({"text": "x"})),
            (
                "call_tool",
                json!({"name": "fx__note", "arguments": {"text": "x"}}),
            ),
            ("fx__write", json!({"text": "x"})),
        ] {
            let r = stateless_call(&l.addr, &[], name, arguments.clone());
            assert!(is_error(&r), "{name} reached without a session: {r}");
            assert!(text(&r).contains("not found"), "{r}");
            assert!(text(&r).contains("session"), "{r}");
            let r = a.call(name, arguments);
            assert!(is_error(&r), "{name} reached before a search: {r}");
        }
    }
    // A search without a session shows the new definition, and still no
    // later request without one reaches the tool.
    let found = stateless_call(
        &l.addr,
        &[],
        "tool_search",
        json!({"query": "", "names": ["fx__note"]}),
    );
    assert!(text(&found).contains("fx__note"), "{found}");
    let r = stateless_call(&l.addr, &[], "fx__note", json!({"text": "x"}));
    assert!(is_error(&r), "{r}");
    // A tool the lock holds is reached without a session as before.
    let r = stateless_call(&l.addr, &[], "fx__echo", json!({"text": "x"}));
    assert!(!is_error(&r), "{r}");
    // The session's own search: from then on it calls the tool.
    let found = a.call("tool_search", json!({"query": "", "names": ["fx__note"]}));
    assert!(text(&found).contains("fx__note"), "{found}");
    let r = a.call(
        "call_tool",
        json!({"name": "fx__note", "arguments": {"text": "x"}}),
    );
    assert!(!is_error(&r), "{r}");
}

/// The tools of the restart tests: [`TOOLS`] and `crash`, which makes the
/// fixture exit.
const RESTART_TOOLS: &str = "echo,note,write,delete,rugpull,restore,crash";

/// A locked gateway whose server comes back changed: the fixture runs
/// through a shell that starts it as after `rugpull` once the file
/// `changed` exists in the gateway's folder.
#[cfg(unix)]
fn locked_restarting(tag: &str, policy: &str) -> (Gateway, std::path::PathBuf) {
    let dir = temp_dir(tag);
    let marker = dir.join("changed");
    let mut entry = fixture(RESTART_TOOLS, &[]);
    entry["env"]["FIXTURE_BIN"] = json!(fixture_bin());
    entry["env"]["MARKER"] = json!(marker);
    entry["command"] = json!("sh");
    entry["args"] = json!([
        "-c",
        "if [ -e \"$MARKER\" ]; then export FIXTURE_PULLED=1; fi; exec \"$FIXTURE_BIN\""
    ]);
    let text = format!("lock = \"tools.lock\"\n{policy}");
    let (p, s) = files(&dir, &text, &[("fx", entry)]);
    lock_servers(&p, &s);
    let log = dir.join("audit.jsonl");
    let log = log.to_str().unwrap();
    let g = Gateway::connect(&file_args(&p, &s, &["--audit", log]), "2025-11-25").holding(dir);
    (g, marker)
}

/// Makes the fixture exit, to come back changed at the next call.
#[cfg(unix)]
fn crash_changed(g: &mut Gateway, marker: &std::path::Path) {
    std::fs::write(marker, "").unwrap();
    let r = g.call("fx__crash", json!({}));
    assert!(is_error(&r), "{r}");
}

/// A server restarted by a call comes back with other definitions: it is
/// listed and held to the lock before that call is forwarded, so the call
/// that brought it back is refused as not found (under `hide`), the change
/// is named first, and a tool that did not change is called as before.
#[test]
#[cfg(unix)]
fn the_call_that_restarts_a_changed_server_is_held_to_the_lock() {
    let (mut g, marker) = locked_restarting("lock-restart-hide", "NoDefer(*)\n");
    assert!(!is_error(&g.call("fx__note", json!({"text": "x"}))));
    crash_changed(&mut g, &marker);
    let r = g.call("fx__note", json!({"text": "x"}));
    assert_not_found(&r, "fx__note");
    assert!(
        g.wait_stderr(
            "tool `fx__note` changed after start: description; the lock does not hold it: hidden",
            1
        ),
        "{}",
        g.stderr()
    );
    let err = g.stderr();
    assert!(err.contains("restarted"), "{err}");
    assert_not_found(&g.call("fx__write", json!({"text": "x"})), "fx__write");
    assert!(!is_error(&g.call("fx__echo", json!({"text": "x"}))));
    // The audit log has the call refused, by the lock, not forwarded.
    assert_eq!(g.finish(), Some(0), "{}", g.stderr());
    let log = std::fs::read_to_string(marker.with_file_name("audit.jsonl")).unwrap();
    let calls: Vec<Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "call" && e["tool"] == "fx__note")
        .collect();
    assert_eq!(calls.len(), 2, "{log}");
    assert_eq!(calls[0]["outcome"], "allowed", "{log}");
    assert_eq!(calls[1]["outcome"], "not_found", "{log}");
    assert_eq!(calls[1]["cause"]["kind"], "lock", "{log}");
    assert!(calls[1].get("server").is_none(), "{log}");
}

/// Under `unlocked = "defer"`, a tool the model loaded and called is
/// refused by the call that restarts its server changed, through
/// `call_tool` as directly, until a search shows the new definition.
#[test]
#[cfg(unix)]
fn a_loaded_tool_whose_server_restarts_changed_is_read_again_first() {
    let (mut g, marker) = locked_restarting(
        "lock-restart-defer",
        "unlocked = \"defer\"\nNoDefer(fx__crash)\nDefer(*)\n",
    );
    let r = load(&mut g, &["fx__write", "fx__echo"]);
    assert!(text(&r).contains("fx__write"), "{r}");
    assert!(!is_error(&through(&mut g, "fx__write")));
    crash_changed(&mut g, &marker);
    let r = through(&mut g, "fx__write");
    assert_not_found(&r, "fx__write");
    assert!(
        g.wait_stderr("tool `fx__write` changed after start: input schema", 1),
        "{}",
        g.stderr()
    );
    assert!(!is_error(&through(&mut g, "fx__echo")));
    let r = load(&mut g, &["fx__write"]);
    assert!(
        text(&r).contains("\"note\""),
        "the new parameter is shown: {r}"
    );
    assert!(!is_error(&through(&mut g, "fx__write")));
}

/// A server's standard error reaches the gateway's escaped: a rug-pulling
/// server cannot erase the lock's warning above its line, retitle the
/// terminal or write the clipboard; its text stays readable.
#[test]
#[cfg(unix)]
fn a_servers_standard_error_cannot_rewrite_the_terminal() {
    let dir = temp_dir("lock-stderr");
    let mut entry = fixture(TOOLS, &[]);
    entry["env"]["FIXTURE_BIN"] = json!(fixture_bin());
    entry["command"] = json!("sh");
    entry["args"] = json!([
        "-c",
        "printf 'tab\\there\\033]0;owned\\007\\033[1A\\033[2K\\rall fine\\b\\b\\033]52;c;aGk=\\007 end\\r\\n' >&2; exec \"$FIXTURE_BIN\""
    ]);
    let (p, s) = files(&dir, "NoDefer(*)\n", &[("fx", entry)]);
    let g = Gateway::connect_files(&p, &s, "2025-11-25").holding(dir);
    assert!(g.wait_stderr("fixture up", 1), "{}", g.stderr());
    let err = g.stderr();
    assert!(
        !err.contains(['\u{1b}', '\u{7}', '\u{8}', '\r']),
        "raw control characters copied: {err:?}"
    );
    assert!(
        err.contains(
            "[fx] tab\there\\u{1b}]0;owned\\u{7}\\u{1b}[1A\\u{1b}[2K\\u{d}all fine\\u{8}\\u{8}\\u{1b}]52;c;aGk=\\u{7} end\n"
        ),
        "{err:?}"
    );
}

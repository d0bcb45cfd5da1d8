//! The gateway and lock files: a server that changes its tools while the
//! gateway runs (the fixture's `rugpull`) has each change named on standard
//! error, locked or not; with a lock, each unlocked tool follows the
//! effective `unlocked` from the next request on, on every path.

use serde_json::json;

use super::gateway_support::*;

/// The fixture's tools for these tests: `rugpull` changes `note`'s
/// description, `write`'s schema and `delete`'s hints, and adds `pulled`.
const TOOLS: &str = "echo,note,write,delete,rugpull";

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

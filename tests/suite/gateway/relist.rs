//! A server's `tools/list_changed` is followed by a listing: one that changes
//! nothing tells no client, and a tool whose definition changed is named on
//! standard error with the fields that changed.

use std::time::Duration;

use serde_json::json;

use crate::gateway::support::*;

/// Twenty announcements of an unchanged list, each listed on its own: no
/// client hears of any.
#[test]
fn relists_that_change_nothing_tell_nobody() {
    let mut g = one_fixture("noop-relist", "echo,announce,lists", &[]);
    let before = g.call_count("fx__lists");
    assert_eq!(
        text(&g.call("fx__announce", json!({}))),
        "announce: sent 20"
    );
    // The last announcements' listings are done: nothing lists any more.
    let mut last = g.call_count("fx__lists");
    for _ in 0..40 {
        std::thread::sleep(Duration::from_millis(250));
        let now = g.call_count("fx__lists");
        if now == last {
            break;
        }
        last = now;
    }
    assert!(last - before >= 5, "{} listings", last - before);
    assert!(!g.wait_list_changed(Duration::from_millis(300)));
    let told = g
        .notifications
        .iter()
        .filter(|n| n["method"] == "notifications/tools/list_changed")
        .count();
    assert_eq!(told, 0, "{:?}", g.notifications);
    assert!(
        !g.stderr().contains("changed after start"),
        "{}",
        g.stderr()
    );
    // A listing that does change still reaches the client.
    let dir = temp_dir("noop-relist-change");
    let (p, s) = files(&dir, "NoDefer(*)\n", &[("fx", fixture("echo,change", &[]))]);
    let mut g = Gateway::connect_files(&p, &s, "2025-11-25").holding(dir);
    g.call("fx__change", json!({}));
    assert!(g.wait_list_changed(DEADLINE), "{}", g.stderr());
}

/// A tool whose description, schema and annotations change after start is
/// named on standard error with those fields; the client is told, and the
/// model gets the new definition.
#[test]
fn a_tool_that_changes_after_start_is_reported_with_its_fields() {
    let mut g = one_fixture("mutate", "echo,mutate", &[]);
    let before = g.request("tools/list", json!({}));
    let old = &before["result"]["tools"][1];
    assert_eq!(old["name"], "fx__mutate");
    assert_eq!(text(&g.call("fx__mutate", json!({}))), "mutate: changed");
    assert!(g.wait_list_changed(DEADLINE), "{}", g.stderr());
    assert!(
        g.wait_stderr(
            "warning: server `fx`: tool `fx__mutate` changed after start: description, input schema, annotations",
            1
        ),
        "{}",
        g.stderr()
    );
    let after = g.request("tools/list", json!({}));
    let new = &after["result"]["tools"][1];
    assert_eq!(new["annotations"]["destructiveHint"], true, "{new}");
    assert!(
        new["inputSchema"]["properties"]["path"].is_object(),
        "{new}"
    );
    // Only the tool that changed is named.
    assert!(!g.stderr().contains("`fx__echo` changed"), "{}", g.stderr());
}

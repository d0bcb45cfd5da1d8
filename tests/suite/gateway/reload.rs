//! `policy gateway`'s policy reload fails closed: an empty text, a pipe or
//! a FIFO at the policy path never replaces the policy in force, and never
//! stops the gateway from answering or from stopping.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::gateway::support::*;

const POLICY: &str = "NoDefer(*)\nHide(fx__secret)\n";

/// The hidden tool stays hidden and uncallable, and nothing told the
/// client that the list changed.
fn assert_still_hidden(g: &mut Gateway) {
    assert_eq!(g.list(), ["fx__echo"], "{}", g.stderr());
    let r = g.call("fx__secret", json!({}));
    assert!(is_error(&r), "{r}");
    assert!(text(&r).ends_with("not found."), "{r}");
    assert!(!g.wait_list_changed(Duration::from_millis(200)));
}

/// After a reload that could not read a file: calls are answered, the
/// last good policy holds, and SIGTERM still ends the gateway at once.
fn assert_serves_and_stops(g: &mut Gateway) {
    for _ in 0..3 {
        let r = g.call("fx__echo", json!({"text": "still here"}));
        assert_eq!(text(&r), "echo: {\"text\":\"still here\"}");
    }
    assert_still_hidden(g);
    let t0 = Instant::now();
    g.signal("TERM");
    assert_eq!(g.wait_exit(), Some(0), "{}", g.stderr());
    assert!(t0.elapsed() < Duration::from_secs(8), "{:?}", t0.elapsed());
}

/// An editor's truncate before its write (`: > p.policy`), seen by the poll
/// and by SIGHUP, is an empty text: the last good policy stays. The next
/// real version is read once its stamp holds still.
#[test]
fn an_empty_policy_file_keeps_the_last_good_policy() {
    let dir = temp_dir("reload-empty");
    let (p, s) = files(&dir, POLICY, &[("fx", fixture("echo,secret", &[]))]);
    let mut g = Gateway::connect_files(&p, &s, "2025-11-25");
    assert_eq!(g.list(), ["fx__echo"]);
    std::fs::write(&p, "").unwrap();
    assert!(
        g.wait_stderr("is empty (a file caught between a truncate and its write?); keeping the last good policy", 1),
        "{}",
        g.stderr()
    );
    assert_still_hidden(&mut g);
    std::fs::write(&p, " \n\t\n").unwrap();
    assert!(g.wait_stderr("is empty", 2), "{}", g.stderr());
    #[cfg(unix)]
    {
        g.signal("HUP");
        assert!(g.wait_stderr("is empty", 3), "{}", g.stderr());
    }
    assert_still_hidden(&mut g);
    assert!(!g.stderr().contains("note: reloaded"), "{}", g.stderr());
    std::fs::write(&p, "NoDefer(*)\nHide(fx__echo)\n").unwrap();
    assert!(g.wait_list_changed(DEADLINE), "{}", g.stderr());
    assert_eq!(g.list(), ["fx__secret"]);
}

/// `--policy <(cat p.policy)`: the pipe is read at start; on SIGHUP it has
/// nothing left to give, and is not re-read at all.
#[cfg(unix)]
#[test]
fn sighup_on_a_pipe_keeps_the_policy_read_at_start() {
    let dir = temp_dir("reload-pipe");
    let (p, s) = files(&dir, POLICY, &[("fx", fixture("echo,secret", &[]))]);
    let mut cmd = std::process::Command::new("bash");
    cmd.args([
        "-c",
        r#"exec "$0" gateway --policy <(cat "$1") --servers "$2""#,
        policy_bin().to_str().unwrap(),
        p.to_str().unwrap(),
        s.to_str().unwrap(),
    ]);
    let mut g = Gateway::spawn_command(cmd)
        .initialized("2025-11-25")
        .holding(dir);
    assert_eq!(g.list(), ["fx__echo"], "{}", g.stderr());
    g.signal("HUP");
    assert!(g.wait_stderr("is not a regular file", 1), "{}", g.stderr());
    assert!(
        g.stderr()
            .contains("and is not re-read; keeping the last good policy"),
        "{}",
        g.stderr()
    );
    assert_still_hidden(&mut g);
}

/// A FIFO put at the policy path is refused without waiting for a writer,
/// on the poll and on SIGHUP: calls are answered meanwhile, and SIGTERM
/// stops the gateway as usual.
#[cfg(unix)]
#[test]
fn a_fifo_at_the_policy_path_never_freezes_the_gateway() {
    let dir = temp_dir("reload-fifo");
    let (p, s) = files(&dir, POLICY, &[("fx", fixture("echo,secret", &[]))]);
    let mut g = Gateway::connect_files(&p, &s, "2025-11-25").holding(dir);
    assert_eq!(g.list(), ["fx__echo"]);
    std::fs::remove_file(&p).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&p)
        .status()
        .unwrap();
    assert!(made.success());
    assert!(g.wait_stderr("is not a regular file", 1), "{}", g.stderr());
    g.signal("HUP");
    assert!(g.wait_stderr("is not a regular file", 2), "{}", g.stderr());
    assert_serves_and_stops(&mut g);
}

/// The lock the policy names, swapped for a FIFO: the reload it starts
/// reads the lock as it reads the policy, without waiting for a writer, and
/// refuses it. The policy in force stays, calls are answered meanwhile, and
/// SIGTERM stops the gateway as usual.
#[cfg(unix)]
#[test]
fn a_fifo_at_the_lock_path_never_freezes_the_gateway() {
    let dir = temp_dir("reload-lock-fifo");
    let locked = format!("lock = \"tools.lock\"\n{POLICY}");
    let (p, s) = files(&dir, &locked, &[("fx", fixture("echo,secret", &[]))]);
    let (code, out, err) = policy_to_end(&[
        "lock",
        "--policy",
        p.to_str().unwrap(),
        "--servers",
        s.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "policy lock: {out}{err}");
    let lock = dir.join("tools.lock");
    let mut g = Gateway::connect_files(&p, &s, "2025-11-25").holding(dir);
    assert_eq!(g.list(), ["fx__echo"]);
    std::fs::remove_file(&lock).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&lock)
        .status()
        .unwrap();
    assert!(made.success());
    assert!(
        g.wait_stderr(
            "the lock `tools.lock` cannot be read: it is not a regular file",
            1
        ),
        "{}",
        g.stderr()
    );
    g.signal("HUP");
    assert!(
        g.wait_stderr(
            "the lock `tools.lock` cannot be read: it is not a regular file",
            2
        ),
        "{}",
        g.stderr()
    );
    assert!(
        g.stderr()
            .contains("the lock it names does not load; keeping the last good policy"),
        "{}",
        g.stderr()
    );
    assert_serves_and_stops(&mut g);
}

/// The terms file a policy names is watched with it: a term written while
/// the gateway runs finds its tool from the next search on; a file that is
/// not a terms file keeps the last good terms; a hidden tool's terms find
/// nothing.
#[test]
fn the_terms_file_is_reloaded_with_the_policy() {
    let dir = temp_dir("reload-terms");
    let policy = "terms = \"search-terms.toml\"\nsearch tool_search\nDefer(*)\nHide(fx__secret)\n";
    let (p, s) = files(&dir, policy, &[("fx", fixture("echo,secret", &[]))]);
    let terms = p.parent().unwrap().join("search-terms.toml");
    std::fs::write(&terms, "").unwrap();
    let mut g = Gateway::connect_files(&p, &s, "2025-11-25");
    let search = |g: &mut Gateway, query: &str| {
        let r = g.call("tool_search", json!({ "query": query }));
        assert!(!is_error(&r), "{r}");
        text(&r)
    };
    let query = "parrot my sentence back to me";
    assert!(
        !search(&mut g, query).contains("`fx__echo`"),
        "{}",
        g.stderr()
    );
    std::fs::write(
        &terms,
        "[fx__echo]\nterms = [\"parrot my sentence back\"]\n[fx__secret]\nterms = [\"open the safe\"]\n",
    )
    .unwrap();
    assert!(
        g.wait_stderr("and its terms file `search-terms.toml`", 1),
        "{}",
        g.stderr()
    );
    assert!(
        search(&mut g, query).contains("`fx__echo`"),
        "{}",
        g.stderr()
    );
    assert!(!search(&mut g, "open the safe").contains("fx__secret"));
    std::fs::write(&terms, "[fx__echo]\nterms = \"not a list\"\n").unwrap();
    assert!(g.wait_stderr("PL016", 1), "{}", g.stderr());
    // The last good policy and terms hold: the hidden tool stays hidden.
    let r = g.call("fx__secret", json!({}));
    assert!(is_error(&r), "{r}");
    assert!(!search(&mut g, "open the safe").contains("`fx__secret`"));
}

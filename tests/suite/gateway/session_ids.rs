//! Session ids any gateway process sharing the key can serve
//! (`policy gateway --listen --session-key-file F`): a session opened on
//! one process is served by another, also once the first is killed, in the
//! caller's context; an id shown by another caller, altered, expired, made
//! under another key or made before the caller's context changed is 404,
//! alike; a hidden tool stays out of reach on every path. Every wait has a
//! deadline.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::gateway::listen::{Listening, Session, stateless_list};
use crate::gateway::support::*;

const POLICY: &str = "\
guard fx__echo
Hide(fx__secret)
Defer(*)
";
const TOOLS: &str = "echo,secret,pid,slow";

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789ab";
const CAROL: &str = "carol-token-0123456789";
const TOKENS: &[(&str, &str)] = &[
    ("ALICE_TOKEN", ALICE),
    ("BOB_TOKEN", BOB),
    ("CAROL_TOKEN", CAROL),
];
/// Every list a caller of [`clients`] sees on its first turn.
const FIRST: [&str; 3] = ["fx__echo", "tool_search", "call_tool"];

/// Alice and Carol may reach every tool the policy does not hide (the
/// same context: only the caller tells their sessions apart); Bob is
/// granted `fx__echo` alone.
fn clients() -> Value {
    json!({"clients": {
        "alice": {"token": "${ALICE_TOKEN}"},
        "bob": {"token": "${BOB_TOKEN}", "grants": ["fx__echo"]},
        "carol": {"token": "${CAROL_TOKEN}"}}})
}

fn auth(token: &str) -> Vec<(&'static str, String)> {
    vec![("Authorization", format!("Bearer {token}"))]
}

fn headers<'a>(auth: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    auth.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// A key file of 32 random-looking bytes in hex, readable by its owner
/// alone, in `dir`.
fn key_file(dir: &TempDir, name: &str, seed: u8) -> String {
    let path = dir.join(name);
    let key: String = (0..32u8)
        .map(|i| format!("{:02x}", i.wrapping_mul(29) ^ seed))
        .collect();
    std::fs::write(&path, format!("{key}\n")).unwrap();
    set_mode(&path, 0o600);
    path.to_str().unwrap().to_string()
}

#[cfg(unix)]
fn set_mode(path: &std::path::Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A gateway on [`POLICY`] with [`clients`] and `extra` arguments.
fn gateway(extra: &[&str]) -> Listening {
    Listening::start_at(
        "127.0.0.1:0",
        POLICY,
        TOOLS,
        &[],
        extra,
        Some((&clients(), TOKENS)),
    )
}

/// `session` as another process sees it: the same id and headers, sent to
/// `addr`.
fn at(session: &Session, addr: &str) -> Session {
    Session::with_id(addr, &session.id, session.extra.clone())
}

/// `session`'s id shown with `token` instead.
fn as_caller(session: &Session, addr: &str, token: &str) -> Session {
    let extra = auth(token)
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    Session::with_id(addr, &session.id, extra)
}

/// The answer to a request in `s`, as JSON text (whatever its kind).
fn reply(s: &mut Session, method: &str, params: Value) -> String {
    let answer = s.request(method, params);
    assert_eq!(answer.status, 200, "{answer:?}");
    answer
        .messages()
        .iter()
        .find(|m| m.get("result").is_some() || m.get("error").is_some())
        .unwrap_or_else(|| panic!("no answer in {answer:?}"))
        .to_string()
}

/// The fixture's process id a session reaches through the call-through
/// tool, after a search for it: which process serves the session.
fn pid_through(s: &mut Session) -> String {
    let found = s.call("tool_search", json!({"query": "", "names": ["fx__pid"]}));
    assert!(text(&found).contains("fx__pid"), "{found}");
    let pid = s.call("call_tool", json!({"name": "fx__pid"}));
    assert!(!is_error(&pid), "{pid}");
    text(&pid)
}

/// The hidden tool is out of reach in `s`, by every way a session has.
fn hidden_is_unreachable(s: &mut Session) {
    let listed = reply(s, "tools/list", json!({}));
    assert!(!listed.contains("fx__secret"), "{listed}");
    let found = reply(
        s,
        "tools/call",
        json!({"name": "tool_search", "arguments": {"query": "secret", "names": ["fx__secret"]}}),
    );
    assert!(
        !found.contains("inputSchema"),
        "the search shows the hidden tool: {found}"
    );
    for (name, arguments) in [
        ("fx__secret", json!({})),
        ("call_tool", json!({"name": "fx__secret"})),
    ] {
        let answer = reply(
            s,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        );
        let answer: Value = serde_json::from_str(&answer).unwrap();
        let refused = answer.get("error").is_some() || is_error(&answer["result"]);
        assert!(refused, "{name} reached the hidden tool: {answer}");
    }
}

#[test]
fn a_session_opened_on_one_process_is_served_by_another_sharing_the_key() {
    let keys = temp_dir("ids-keys");
    let key = key_file(&keys, "key", 1);
    let a = gateway(&["--session-key-file", &key]);
    let b = gateway(&["--session-key-file", &key]);
    let alice = auth(ALICE);
    let mut on_a = Session::open_with(&a.addr, &headers(&alice));
    assert_eq!(on_a.list(), FIRST);
    let pid_a = pid_through(&mut on_a);

    // The same id at B: served, no 404, in Alice's context, by B's own
    // server (activations start empty there: the search comes first).
    let mut on_b = at(&on_a, &b.addr);
    assert_eq!(on_b.list(), FIRST);
    let pid_b = pid_through(&mut on_b);
    assert_ne!(pid_a, pid_b, "B served the call with its own server");
    hidden_is_unreachable(&mut on_b);
    // A goes on serving it too.
    assert_eq!(on_a.list(), FIRST);

    // Bob's session, at B: his grants, not Alice's.
    let bob = auth(BOB);
    let bob_on_a = Session::open_with(&a.addr, &headers(&bob));
    let mut bob_on_b = at(&bob_on_a, &b.addr);
    let found = reply(
        &mut bob_on_b,
        "tools/call",
        json!({"name": "tool_search", "arguments": {"query": "", "names": ["fx__pid"]}}),
    );
    assert!(!found.contains("inputSchema"), "{found}");
    let refused = reply(
        &mut bob_on_b,
        "tools/call",
        json!({"name": "call_tool", "arguments": {"name": "fx__pid"}}),
    );
    assert!(
        refused.contains("\"error\"") || refused.contains("\"isError\":true"),
        "{refused}"
    );
    hidden_is_unreachable(&mut bob_on_b);

    // Without a session, B serves both as before.
    assert_eq!(stateless_list(&b.addr, &headers(&alice)), FIRST);
}

#[test]
fn a_search_served_by_one_process_and_the_call_after_it_by_another_both_work() {
    // Behind a load balancer with no stickiness, a session's search and the
    // call that follows it land on different processes: the call reaches
    // what the caller's context does not hide, without a search there.
    let keys = temp_dir("ids-split-keys");
    let key = key_file(&keys, "key", 4);
    let a = gateway(&["--session-key-file", &key]);
    let b = gateway(&["--session-key-file", &key]);
    let alice = auth(ALICE);
    let mut on_a = Session::open_with(&a.addr, &headers(&alice));
    let found = on_a.call("tool_search", json!({"query": "", "names": ["fx__pid"]}));
    assert!(text(&found).contains("fx__pid"), "{found}");
    let mut on_b = at(&on_a, &b.addr);
    let pid = on_b.call("call_tool", json!({"name": "fx__pid"}));
    assert!(!is_error(&pid), "{pid}");
    let direct = on_b.call("fx__pid", json!({}));
    assert!(!is_error(&direct), "{direct}");
    hidden_is_unreachable(&mut on_b);
    // Bob's grants hold the same way: what his context hides stays out.
    let bob = auth(BOB);
    let bob_on_a = Session::open_with(&a.addr, &headers(&bob));
    let mut bob_on_b = at(&bob_on_a, &b.addr);
    let refused = bob_on_b.call("call_tool", json!({"name": "fx__pid"}));
    assert!(is_error(&refused), "{refused}");

    // Without a shared key a session is one process's: a deferred tool is
    // called after a search in that session only.
    let c = gateway(&[]);
    let mut alone = Session::open_with(&c.addr, &headers(&alice));
    let refused = alone.call("call_tool", json!({"name": "fx__pid"}));
    assert!(is_error(&refused), "{refused}");
}

#[test]
fn a_session_survives_the_process_that_opened_it_being_killed() {
    let keys = temp_dir("ids-kill-keys");
    let key = key_file(&keys, "key", 2);
    // Without a clients file: every caller is the one anonymous caller.
    let mut a = Listening::start(POLICY, TOOLS, &[], &["--session-key-file", &key]);
    let b = Listening::start(POLICY, TOOLS, &[], &["--session-key-file", &key]);
    let mut s = Session::open(&a.addr);
    let found = s.call("tool_search", json!({"query": "", "names": ["fx__pid"]}));
    assert!(text(&found).contains("fx__pid"), "{found}");
    a.gw.signal("KILL");
    a.gw.wait_exit();
    s.addr = b.addr.clone();
    // Several requests at once, the first B sees of the session: one
    // recreates it, the others wait for it; none is 404.
    let at_once: Vec<_> = (0..4)
        .map(|i| {
            let mut moved = at(&s, &b.addr);
            // Each its own request ids, as one client's requests have.
            moved.next = 1000 * (i + 1);
            std::thread::spawn(move || moved.list())
        })
        .collect();
    for lists in at_once {
        assert_eq!(lists.join().unwrap(), FIRST);
    }
    assert_eq!(s.list(), FIRST);
    let pid = pid_through(&mut s);
    assert!(!pid.is_empty());
    hidden_is_unreachable(&mut s);
    // The client goes on in it: later requests are served from the
    // session B now holds.
    assert_eq!(s.list(), FIRST);
    let called = s.call("fx__echo", json!({"text": "still here"}));
    assert!(!is_error(&called), "{called}");
}

/// Every refusal is the one an unknown session gets: 404, same body.
#[test]
fn ids_of_another_caller_altered_expired_or_under_another_key_are_404_alike() {
    let keys = temp_dir("ids-refused-keys");
    let key = key_file(&keys, "key", 3);
    let other_key = key_file(&keys, "other", 4);
    let a = gateway(&["--session-key-file", &key]);
    let b = gateway(&["--session-key-file", &key, "--session-max-age", "1"]);
    let c = gateway(&["--session-key-file", &other_key]);
    let d = gateway(&["--session-key-file", &key]);
    let alice = auth(ALICE);
    let on_a = Session::open_with(&a.addr, &headers(&alice));
    let unknown = {
        let mut s = at(&on_a, &a.addr);
        s.id = "0f8fad5b-d9cb-469f-a165-70867728950e".into();
        s.request("tools/list", json!({}))
    };
    assert_eq!(unknown.status, 404, "{unknown:?}");
    let refused = |s: &mut Session, what: &str| {
        let answer = s.request("tools/list", json!({}));
        assert_eq!(answer.status, 404, "{what}: {answer:?}");
        assert_eq!(answer.body, unknown.body, "{what}");
        let call = s.request(
            "tools/call",
            json!({"name": "call_tool", "arguments": {"name": "fx__secret"}}),
        );
        assert_eq!(call.status, 404, "{what}: {call:?}");
    };

    // Another caller's credential, on the process that holds the session
    // and on one that does not.
    for addr in [&a.addr, &d.addr] {
        refused(&mut as_caller(&on_a, addr, BOB), "Bob with Alice's id");
        refused(&mut as_caller(&on_a, addr, CAROL), "Carol with Alice's id");
    }
    // ... and the owner is still served, there too.
    assert_eq!(at(&on_a, &a.addr).list(), FIRST);
    assert_eq!(at(&on_a, &d.addr).list(), FIRST);
    // Nor may Bob or Carol use it once D holds it.
    refused(
        &mut as_caller(&on_a, &d.addr, BOB),
        "Bob with Alice's id, held",
    );
    refused(
        &mut as_caller(&on_a, &d.addr, CAROL),
        "Carol with Alice's id, held",
    );

    // Altered: each of a few characters changed.
    for at_char in [0, on_a.id.len() / 2, on_a.id.len() - 1] {
        let mut altered = at(&on_a, &d.addr);
        let mut chars: Vec<char> = altered.id.chars().collect();
        chars[at_char] = if chars[at_char] == 'A' { 'B' } else { 'A' };
        altered.id = chars.into_iter().collect();
        refused(&mut altered, &format!("altered at {at_char}"));
        altered.addr = a.addr.clone();
        refused(
            &mut altered,
            &format!("altered at {at_char}, at its own process"),
        );
    }
    // Garbage, too long, empty-ish.
    for garbage in ["x", "not-a-session", &"A".repeat(300)] {
        let mut s = at(&on_a, &a.addr);
        s.id = garbage.into();
        refused(&mut s, garbage);
    }
    // Signed under another key.
    refused(&mut at(&on_a, &c.addr), "another key");
    // Expired: B takes ids for a second after they were made.
    let fresh = Session::open_with(&a.addr, &headers(&alice));
    std::thread::sleep(Duration::from_millis(2200));
    refused(&mut at(&fresh, &b.addr), "expired");
    // Its own sessions end at the same age.
    let own = Session::open_with(&b.addr, &headers(&alice));
    std::thread::sleep(Duration::from_millis(2200));
    refused(
        &mut at(&own, &b.addr),
        "expired, at the process that opened it",
    );
    // A process with the key and a long bound still serves it.
    assert_eq!(at(&fresh, &a.addr).list(), FIRST);
    let log = c.gw.stderr();
    assert!(
        log.contains("refused a request with 404: its session id is not signed"),
        "{log}"
    );
}

#[test]
fn a_caller_whose_context_changed_is_refused_the_session_made_in_the_old_one() {
    let keys = temp_dir("ids-context-keys");
    let key = key_file(&keys, "key", 5);
    let a = gateway(&["--session-key-file", &key]);
    let b = gateway(&["--session-key-file", &key]);
    let alice = auth(ALICE);
    let on_a = Session::open_with(&a.addr, &headers(&alice));
    // B's clients file now grants Alice `fx__echo` alone.
    let mut changed = clients();
    changed["clients"]["alice"]["grants"] = json!(["fx__echo"]);
    std::fs::write(b.dir.join("clients.json"), changed.to_string()).unwrap();
    b.gw.signal("HUP");
    let until = Instant::now() + DEADLINE;
    loop {
        let answer = crate::gateway::listen::stateless(
            &b.addr,
            &headers(&alice),
            "tools/call",
            json!({"name": "call_tool", "arguments": {"name": "fx__pid"}}),
        );
        if is_error(&answer.result()) {
            break;
        }
        assert!(Instant::now() < until, "B did not reload its clients file");
        std::thread::sleep(Duration::from_millis(100));
    }
    let answer = at(&on_a, &b.addr).request("tools/list", json!({}));
    assert_eq!(answer.status, 404, "{answer:?}");
    // A new session on B is in the new context.
    let mut fresh = Session::open_with(&b.addr, &headers(&alice));
    let refused = fresh.call("call_tool", json!({"name": "fx__pid"}));
    assert!(is_error(&refused), "{refused}");
}

#[test]
fn without_a_shared_key_another_process_answers_404() {
    let a = gateway(&[]);
    let b = gateway(&[]);
    let alice = auth(ALICE);
    let on_a = Session::open_with(&a.addr, &headers(&alice));
    let answer = at(&on_a, &b.addr).request("tools/list", json!({}));
    assert_eq!(answer.status, 404, "{answer:?}");
    assert_eq!(at(&on_a, &a.addr).list(), FIRST);
}

#[test]
fn a_bad_session_key_file_is_refused_at_start_saying_why() {
    let dir = temp_dir("ids-bad-keys");
    let (p, s) = files(&dir, POLICY, &[("fx", fixture(TOOLS, &[]))]);
    let start = |key: &str| {
        let (code, _, err) = run_to_end(&file_args(
            &p,
            &s,
            &["--listen", "127.0.0.1:0", "--session-key-file", key],
        ));
        assert_eq!(code, Some(2), "{err}");
        assert!(!err.contains("started with"), "no server starts: {err}");
        err
    };
    let short = dir.join("short");
    std::fs::write(&short, "ab".repeat(16)).unwrap();
    set_mode(&short, 0o600);
    let err = start(short.to_str().unwrap());
    assert!(
        err.contains("16 bytes") && err.contains("at least 32"),
        "{err}"
    );

    let open = dir.join("open");
    std::fs::write(&open, "ab".repeat(32)).unwrap();
    set_mode(&open, 0o644);
    let err = start(open.to_str().unwrap());
    assert!(err.contains("readable by every user"), "{err}");
    assert!(err.contains("chmod 600"), "{err}");

    let text = dir.join("text");
    std::fs::write(&text, "correct horse battery staple, and more").unwrap();
    set_mode(&text, 0o600);
    let err = start(text.to_str().unwrap());
    assert!(err.contains("neither hex nor base64"), "{err}");

    let missing = dir.join("missing");
    let err = start(missing.to_str().unwrap());
    assert!(err.contains("cannot read the session key file"), "{err}");

    let fifo = dir.join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        set_mode(&fifo, 0o600);
        let started = Instant::now();
        let err = start(fifo.to_str().unwrap());
        assert!(err.contains("not a regular file"), "{err}");
        assert!(started.elapsed() < DEADLINE);
    } else {
        eprintln!("skipped the FIFO: mkfifo is not available");
    }
}

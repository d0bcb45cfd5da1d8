//! The audit log: the events a session hands its subscriber, the JSON Lines
//! writer, `replay --audit` and `policy report`.

use std::sync::{Arc, Mutex};

use toolpolicy::audit::{AuditHook, Event, EventKind, Forwarded, Outcome};
use toolpolicy::runtime::{Engine, ResultStatus};
use toolpolicy::{CauseKind, Context, Policy, Registry, SkillList};

const POLICY: &str = "search ToolSearch\nDefer(*)\nNoDefer(Read)\nHide(Secret)\n";
const REGISTRY: &str = r#"[
    {"name": "Read", "description": "Read a file."},
    {"name": "ToolSearch", "description": "Find tools."},
    {"name": "WebFetch", "description": "Fetch a web page. Returns markdown."},
    {"name": "Secret", "description": "Hidden."}
]"#;

fn engine() -> Engine {
    Engine::new(
        Policy::parse("p.policy", POLICY).unwrap(),
        Registry::from_json(REGISTRY).unwrap(),
        SkillList::default(),
    )
}

fn collector() -> (AuditHook, Arc<Mutex<Vec<Event>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let into = Arc::clone(&seen);
    let hook: AuditHook = Arc::new(move |e: &Event| into.lock().unwrap().push(e.clone()));
    (hook, seen)
}

#[test]
fn a_session_tells_its_subscriber_every_operation() {
    let engine = engine();
    let (hook, seen) = collector();
    engine.set_audit(Some(hook));
    let mut s = engine.session(Context::default()).unwrap();
    s.plan(&engine).unwrap();
    s.search(&engine, "fetch a web page", &[] as &[&str])
        .unwrap();
    s.load(&engine, &["Secret", "Nope"]).unwrap();
    s.call(&engine, "Secret").unwrap();
    s.call(&engine, "WebFetch").unwrap();
    s.record_forwarded(
        &engine,
        "WebFetch",
        ResultStatus::Ok,
        Some(Forwarded {
            server: Some("web".into()),
            ms: Some(12.5),
            is_error: Some(false),
        }),
    )
    .unwrap();
    s.prompt(&engine).unwrap();
    s.compact();
    s.restart(&engine).unwrap();
    s.set_mode(&engine, None).unwrap();

    let events = seen.lock().unwrap();
    let names: Vec<&str> = events.iter().map(Event::name).collect();
    assert_eq!(
        names,
        [
            "list", "search", "load", "call", "call", "prompt", "compact", "restart", "mode"
        ]
    );
    let session = events[0].session.clone().unwrap();
    assert!(
        events
            .iter()
            .all(|e| e.session.as_deref() == Some(&*session))
    );
    assert!(
        events
            .iter()
            .all(|e| e.version == toolpolicy::audit::VERSION)
    );
    let EventKind::List {
        declared,
        names,
        tokens,
        all_declared,
    } = &events[0].kind
    else {
        panic!("{:?}", events[0]);
    };
    assert_eq!(
        (*declared, names.as_slice()),
        (2, ["Read".to_string()].as_slice())
    );
    assert!(tokens < all_declared, "{tokens} {all_declared}");
    let EventKind::Search {
        query,
        activated,
        empty,
        ..
    } = &events[1].kind
    else {
        panic!("{:?}", events[1]);
    };
    assert_eq!(query.as_deref(), Some("fetch a web page"));
    assert_eq!(activated, &["WebFetch"]);
    assert!(!empty);
    let EventKind::Load { unavailable, .. } = &events[2].kind else {
        panic!("{:?}", events[2]);
    };
    assert_eq!(unavailable, &["Secret", "Nope"]);
    // A refused call is written at once, with the rule that hid the tool.
    let EventKind::Call {
        tool,
        outcome,
        cause,
        status,
        ..
    } = &events[3].kind
    else {
        panic!("{:?}", events[3]);
    };
    assert_eq!(
        (tool.as_str(), *outcome, *status),
        ("Secret", Outcome::NotFound, None)
    );
    let cause = cause.as_ref().unwrap();
    assert_eq!(cause.kind, CauseKind::Hide);
    assert_eq!(cause.rule.as_deref(), Some("Hide(Secret)"));
    assert_eq!(
        (cause.file.as_deref(), cause.line),
        (Some("p.policy"), Some(4))
    );
    // An allowed one when its result is known, with what the front end learnt.
    let EventKind::Call {
        tool,
        outcome,
        status,
        server,
        ms,
        is_error,
        ..
    } = &events[4].kind
    else {
        panic!("{:?}", events[4]);
    };
    assert_eq!((tool.as_str(), *outcome), ("WebFetch", Outcome::Allowed));
    assert_eq!(*status, Some(ResultStatus::Ok));
    assert_eq!(
        (server.as_deref(), *ms, *is_error),
        (Some("web"), Some(12.5), Some(false))
    );
}

#[test]
fn an_allowed_call_without_a_result_is_written_at_the_next_prompt() {
    let engine = engine();
    let (hook, seen) = collector();
    engine.set_audit(Some(hook));
    let mut s = engine.session(Context::default()).unwrap();
    s.call(&engine, "Read").unwrap();
    assert!(seen.lock().unwrap().is_empty());
    s.prompt(&engine).unwrap();
    let events = seen.lock().unwrap();
    let EventKind::Call {
        tool,
        status,
        cause,
        ..
    } = &events[0].kind
    else {
        panic!("{:?}", events[0]);
    };
    assert_eq!((tool.as_str(), *status), ("Read", None));
    assert_eq!(cause.as_ref().unwrap().kind, CauseKind::NoDefer);
    assert_eq!(events[1].name(), "prompt");
}

#[test]
fn sessions_have_names_of_their_own_and_a_caller_when_told() {
    let engine = engine();
    let (hook, seen) = collector();
    engine.set_audit(Some(Arc::clone(&hook)));
    let a = engine.session(Context::default()).unwrap();
    let mut b = engine.session(Context::default()).unwrap();
    assert_ne!(a.audit_session(), b.audit_session());
    b.set_audit(Some(hook), "chat-7");
    b.set_audit_caller(Some("alice"));
    b.plan(&engine).unwrap();
    let events = seen.lock().unwrap();
    assert_eq!(events[0].session.as_deref(), Some("chat-7"));
    assert_eq!(events[0].caller.as_deref(), Some("alice"));
}

#[test]
fn reloads_are_events_with_the_codes_of_a_failure() {
    let engine = engine();
    let (hook, seen) = collector();
    engine.set_audit(Some(hook));
    engine.reload_policy("p.policy", "Defer(*)\n").unwrap();
    engine.reload_policy("p.policy", "Defer(\n").unwrap_err();
    let events = seen.lock().unwrap();
    let EventKind::Reload { what, ok, codes } = &events[0].kind else {
        panic!()
    };
    assert_eq!(
        (what.as_str(), *ok, codes.is_empty()),
        ("policy", true, true)
    );
    let EventKind::Reload { ok, codes, .. } = &events[1].kind else {
        panic!()
    };
    assert!(!ok);
    assert_eq!(codes, &["PL001"]);
    assert!(events.iter().all(|e| e.session.is_none()));
}

#[test]
fn a_session_without_a_subscriber_builds_no_event() {
    // Nothing to observe but that it works and nothing is called.
    let engine = engine();
    let mut s = engine.session(Context::default()).unwrap();
    assert_eq!(s.audit_session(), None);
    s.call(&engine, "Read").unwrap();
    s.record_result(&engine, "Read", ResultStatus::Ok).unwrap();
    assert_eq!(s.evidence(), ["Read"]);
}

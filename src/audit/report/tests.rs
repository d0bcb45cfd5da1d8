use super::check::{Checker, Verdict, selector};
use super::*;
use crate::audit::EventContext;

#[test]
fn names_that_read_as_other_selectors_are_quoted() {
    assert_eq!(selector("Read").as_deref(), Some("Read"));
    assert_eq!(selector("mcp:git/x").as_deref(), Some("mcp:git/x"));
    for name in ["hint:destructive", "HINT:x", "skill:a", "Source:b", "a b"] {
        assert_eq!(selector(name), Some(format!("\"{name}\"")));
    }
    assert_eq!(selector("a*"), None);
}

/// A line that would decide other tools too is not suggested as is,
/// and those tools are named.
#[test]
fn a_line_that_changes_other_tools_is_named_with_them() {
    let policy = Policy::parse("p.policy", "Defer(*)\n").unwrap();
    let registry = Registry::from_json(
        r#"[{"name": "hint:destructive", "description": "A."},
            {"name": "Rm", "description": "B.", "annotations": {"destructiveHint": true}},
            {"name": "Ls", "description": "C.", "annotations": {"readOnlyHint": true}}]"#,
    )
    .unwrap();
    let contexts = [EventContext::default()];
    let checker = Checker::new(&policy, Some(&registry), std::iter::empty(), &contexts);
    let seen = BTreeSet::from([0]);
    let tool = "hint:destructive";
    assert_eq!(
        checker.check("NoDefer(hint:destructive)", tool, &seen, Exposure::Active),
        Verdict::AlsoChanges(vec!["Rm".into()])
    );
    assert_eq!(
        checker.check(
            "NoDefer(\"hint:destructive\")",
            tool,
            &seen,
            Exposure::Active
        ),
        Verdict::Applies
    );
    // Already deferred: nothing to suggest.
    assert_eq!(
        checker.check("Defer(Rm)", "Rm", &seen, Exposure::Deferred),
        Verdict::Nothing
    );
}

/// Log lines of one session: `(minute, caller, event fields)`.
fn log(lines: &[(u32, &str, &str)]) -> String {
    lines
        .iter()
        .map(|(m, caller, event)| {
            format!(
                r#"{{"ts":"2026-12-01T00:{m:02}:00.000Z","version":1,"session":"s-{caller}","caller":"{caller}","context":{{"mode":null,"bot":null,"flags":[]}},{event}}}"#
            ) + "\n"
        })
        .collect()
}

fn report_of(text: &str, options: Options, policy: Option<&Policy>) -> Report {
    let mut reader = Reader::new(options);
    reader
        .read_log(&mut LogFile::new("audit.jsonl", text.as_bytes()))
        .unwrap();
    reader.finish(policy, None)
}

const LIST: &str =
    r#""event":"list","declared":2,"names":["Read","Grep"],"tokens":100,"all_declared":400"#;
const EMPTY: &str = r#""event":"search","query":"play jazz","names":[],"activated":[],"matches":0,"empty":true,"status":"ok""#;

fn call(tool: &str, server: &str, ms: f64, is_error: bool) -> String {
    format!(
        r#""event":"call","tool":"{tool}","outcome":"allowed","status":"ok","server":"{server}","ms":{ms},"is_error":{is_error}"#
    )
}

#[test]
fn a_log_adds_up_to_sessions_tokens_refusals_and_latency() {
    let refused = r#""event":"call","tool":"Bash","outcome":"not_found","cause":{"kind":"hide","rule":"Hide(Bash)","file":"p.policy","line":2}"#;
    let (a, b, c) = (
        call("Read", "fs", 10.0, false),
        call("Read", "fs", 30.0, true),
        call("Read", "fs", 20.0, false),
    );
    let text = log(&[
        (0, "alice", LIST),
        (1, "alice", EMPTY),
        (2, "alice", EMPTY),
        (3, "alice", &a),
        (4, "alice", refused),
        (5, "bob", LIST),
        (6, "bob", &b),
        (7, "bob", &c),
        (8, "bob", refused),
    ]) + "not json\n";
    let r = report_of(&text, Options::default(), None);
    assert_eq!((r.events, r.sessions, r.turns), (9, 2, 2));
    assert_eq!((r.tokens, r.tokens_all_declared), (200, 800));
    assert_eq!(r.empty_searches, [("play jazz".to_string(), 2)]);
    // Grep was declared in both sessions and never called.
    let never: Vec<&str> = r.never_called.iter().map(|s| s.line.as_str()).collect();
    assert_eq!(never, ["Defer(Grep)"]);
    assert_eq!(r.never_called[0].sessions, 2);
    assert_eq!(r.never_called[0].checked, None);
    assert_eq!(r.refusals.len(), 1);
    let f = &r.refusals[0];
    assert_eq!(
        (f.cause.as_str(), f.at.as_deref(), f.count),
        ("hide", Some("p.policy:2"), 2)
    );
    assert_eq!(r.latency.len(), 1);
    let l = &r.latency[0];
    assert_eq!((l.calls, l.errors, l.p50_ms, l.p99_ms), (3, 1, 20.0, 30.0));
    assert_eq!(r.bad_lines, 1);
    assert_eq!(r.bad_lines_shown[0].line, 10);

    // One caller, from minute 5 on: bob's session alone.
    let bob = Options {
        caller: Some("bob".into()),
        since: None,
    };
    let later = Options {
        caller: None,
        since: Some("2026-12-01T00:05".into()),
    };
    for options in [bob, later] {
        let r = report_of(&text, options, None);
        assert_eq!((r.events, r.sessions, r.empty_searches.len()), (4, 1, 0));
    }
}

/// With the policy, a line it would overrule is marked, and one that would
/// change nothing is left out.
#[test]
fn suggested_lines_are_tried_on_the_policy() {
    let list = r#""event":"list","declared":3,"names":["Read","Grep","Glob"],"tokens":100,"all_declared":400"#;
    let text = log(&[(0, "alice", list)]);
    let policy = Policy::parse("p.policy", "NoDefer(Grep)\nDefer(Glob)\n").unwrap();
    let r = report_of(&text, Options::default(), Some(&policy));
    let got: Vec<(&str, Option<bool>)> = r
        .never_called
        .iter()
        .map(|s| (s.line.as_str(), s.checked))
        .collect();
    // `Defer(Glob)` would change nothing; `NoDefer(Grep)` overrules a
    // `Defer(Grep)` wherever it is written.
    assert_eq!(
        got,
        [("Defer(Grep)", Some(false)), ("Defer(Read)", Some(true))]
    );
    assert!(r.never_called[0].also_changes.is_empty());
}

#[test]
fn bad_lines_by_place_keep_the_first_by_file_and_line() {
    let bad = |file: &str, line: usize| BadLine {
        file: file.into(),
        line,
        message: String::new(),
    };
    let mut met = BadLines::new();
    let mut placed = BadLines::by_place();
    for i in (1..=30).rev() {
        met.push(bad("b.jsonl", i));
        placed.push(bad("b.jsonl", i));
    }
    placed.push(bad("a.jsonl", 99));
    assert_eq!((met.count(), placed.count()), (30, 31));
    assert_eq!(met.shown().len(), read::BAD_LINES_SHOWN);
    assert_eq!(met.shown()[0].line, 30);
    let shown: Vec<(&str, usize)> = placed
        .shown()
        .iter()
        .map(|b| (b.file.as_str(), b.line))
        .collect();
    assert_eq!(shown.len(), read::BAD_LINES_SHOWN);
    assert_eq!(shown[0], ("a.jsonl", 99));
    assert_eq!(shown[1], ("b.jsonl", 1));
    assert_eq!(shown[19], ("b.jsonl", 19));
}

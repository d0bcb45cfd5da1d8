use toolpolicy::audit::read::LogFile;
use toolpolicy::audit::report::Reader;

use super::*;

fn report_of(log: &str) -> Report {
    let mut reader = Reader::new(Options::default());
    reader
        .read_log(&mut LogFile::new("a.jsonl", log.as_bytes()))
        .unwrap();
    reader.finish(None, None)
}

/// The text names what the JSON has: the first line's figures, each
/// section (or `none`), a suggestion's line, and a bad line by place.
#[test]
fn the_text_says_what_the_report_holds() {
    let log = concat!(
        r#"{"version":1,"session":"s","event":"list","declared":1,"names":["Read"],"tokens":1500,"all_declared":3000}"#,
        "\n",
        r#"{"version":1,"session":"s","event":"search","query":"play jazz","names":[],"activated":[],"matches":0,"empty":true,"status":"ok"}"#,
        "\nnot an event\n",
    );
    let text = human(&report_of(log));
    assert!(
        text.starts_with(
            "2 events, 1 sessions, 1 turns listed: 1,500 tokens declared, 3,000 had every \
             tool been declared (50% saved)\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("searches that activated nothing:\n  1× `play jazz`\n"),
        "{text}"
    );
    assert!(text.contains("refusals by cause: none\n"), "{text}");
    assert!(
        text.contains("  Read (1 of 1 sessions declared it): Defer(Read)\n"),
        "{text}"
    );
    assert!(text.contains("  a.jsonl:3: "), "{text}");
}

/// A line not suggested is quoted, with the tools it would change named.
#[test]
fn a_line_not_suggested_is_quoted_with_what_it_would_change() {
    let mut report = report_of("");
    report.sessions = 2;
    report.never_called.push(Suggestion {
        tool: "hint:x".into(),
        sessions: 2,
        line: "Defer(hint:x)".into(),
        checked: Some(false),
        also_changes: vec!["Rm".into()],
    });
    let text = human(&report);
    assert!(
        text.contains(
            "  hint:x (2 of 2 sessions declared it): `Defer(hint:x)`  (not suggested: it would \
             change `Rm` too)\n"
        ),
        "{text}"
    );
}

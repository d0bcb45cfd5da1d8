//! Any byte sequence ends in diagnostics, never a panic or a hang.

use proptest::prelude::*;
use toolpolicy::Policy;

/// Fragments of the language, so that random input gets deep into the grammar.
const PIECES: &[&str] = &[
    "Defer(",
    "NoDefer(",
    "Hide(",
    "Grant(",
    ")",
    "(",
    ",",
    "*",
    "a",
    "b*",
    "skill:",
    "source:",
    "\"",
    "\\",
    "mode ",
    "bot ",
    "when ",
    "!",
    "{",
    "}",
    "\n",
    " ",
    "guard ",
    "search ",
    "=",
    "defer_loading",
    "true",
    "7",
    "#",
    "é",
    "文件",
    "\t",
    "\r\n",
    "?",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// The two-part reading (hand-written reader, pest for what it cannot
    /// read) gives the tree and diagnostics pest gives reading the whole file.
    #[test]
    fn reader_agrees_with_pest(parts in proptest::collection::vec(0..PIECES.len(), 0..80)) {
        let text: String = parts.iter().map(|&i| PIECES[i]).collect();
        prop_assert_eq!(toolpolicy::parse(&text), toolpolicy::parse_with_pest(&text));
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = Policy::from_bytes("fuzz", &bytes);
    }

    #[test]
    fn random_token_soup_never_panics(parts in proptest::collection::vec(0..PIECES.len(), 0..60)) {
        let text: String = parts.iter().map(|&i| PIECES[i]).collect();
        match Policy::parse("fuzz", text.as_str()) {
            Ok(_) => {}
            Err(e) => {
                prop_assert!(!e.diagnostics.is_empty());
                for d in &e.diagnostics {
                    prop_assert!(d.span.start <= d.span.end && d.span.end <= text.len());
                    // Rendering must not panic either, whatever the span.
                    let _ = toolpolicy::render::human(&e.source, std::slice::from_ref(d), false);
                }
            }
        }
    }
}

#[test]
fn large_files_parse() {
    let mut text = String::new();
    for i in 0..20_000 {
        text.push_str(&format!("Defer(tool_{i}, \"x {i}\")\n"));
    }
    let p = Policy::parse("big", text).expect("valid");
    assert_eq!(p.rules.len(), 20_000);
    // A big file with an error in every line still ends.
    let bad: String = (0..5_000).map(|i| format!("Defer(a{i}\n")).collect();
    let e = Policy::parse("bad", bad).expect_err("invalid");
    assert!(!e.diagnostics.is_empty());
}

#[path = "../../../benches/data/hostile.rs"]
mod hostile;

/// Every hostile shape (the same ones `check/pathological/*` times) is
/// checked to the end, with its errors counted and its output small. Timing is
/// the bench's business; a quadratic step here would take minutes.
#[test]
fn hostile_shapes_are_checked_with_bounded_output() {
    for (name, text) in hostile::shapes(5_000) {
        let out = hostile::check(name, &text);
        assert!(
            out.len() < 64 * 1024,
            "{name}: {} bytes of output",
            out.len()
        );
        let malformed = !matches!(name, "duplicate-rules" | "long-line");
        if malformed {
            assert!(out.contains("error["), "{name}: no error reported");
        }
    }
}

/// A megabyte of one character, for each character that opens or closes
/// something, is read and reported.
#[test]
fn a_megabyte_of_one_character() {
    for c in [
        "(", ")", "{", "}", "\"", "a", "#", "\r", "\n", ",", "*", "\\", "é",
    ] {
        let text = c.repeat((1 << 20) / c.len());
        let (_, diags) = toolpolicy::parse(&text);
        if !matches!(c, "a" | "#" | "\r" | "\n") {
            assert!(!diags.is_empty(), "{c:?}: no diagnostic");
        }
    }
}

/// Twenty half-typed lines, as an editor saves them while a rule is typed:
/// once exponential in the parser's recovery.
#[test]
fn half_typed_rules_are_each_reported() {
    let text: String = (0..40).map(|i| format!("Defer(a{i}\n")).collect();
    let e = Policy::parse("bad", text).expect_err("invalid");
    let messages: Vec<&str> = e.diagnostics.iter().map(|d| d.message.as_ref()).collect();
    assert_eq!(messages.len(), 40);
    // Each line's `(` is reported where it is; the last runs into the end.
    assert!(
        messages[..39]
            .iter()
            .all(|m| *m == "this `(` is never closed")
    );
    assert_eq!(messages[39], "unclosed `(`: the file ends inside a rule");
}

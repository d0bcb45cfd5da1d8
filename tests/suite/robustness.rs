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

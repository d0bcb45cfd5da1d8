//! Hostile policy files: what an editor saves while someone types, what a fuzzer
//! finds, what an attacker writes. Each shape is a function of a line count, so
//! that checking it can be timed at two sizes and the ratio shows whether the
//! cost is linear (about 10x for 10x the lines).
//!
//! Shared by `benches/engine.rs` (`check/pathological/*`) and the test suite
//! (`robustness`), through `#[path]`, so both exercise the same inputs.
#![allow(dead_code)]

use std::fmt::Write as _;

/// Every shape's name and its text of `lines` lines. Deterministic.
pub fn shapes(lines: usize) -> Vec<(&'static str, Vec<u8>)> {
    let each = |f: &dyn Fn(usize, &mut String)| -> Vec<u8> {
        let mut s = String::new();
        for i in 0..lines {
            f(i, &mut s);
        }
        s.into_bytes()
    };
    vec![
        // A rule opened on every line and never closed.
        (
            "unclosed-paren",
            each(&|i, s| {
                let _ = writeln!(s, "Defer(a{i}");
            }),
        ),
        // The same with old Mac line breaks.
        (
            "unclosed-paren-cr",
            each(&|i, s| {
                let _ = write!(s, "Defer(a{i}\r");
            }),
        ),
        // A quoted pattern opened on every line and never closed.
        (
            "unclosed-quote",
            each(&|i, s| {
                let _ = writeln!(s, "Defer(\"a{i}");
            }),
        ),
        // A block opened on every line: the nesting limit stops it.
        (
            "unclosed-brace",
            each(&|i, s| {
                let _ = writeln!(s, "mode m{i} {{ Defer(a{i})");
            }),
        ),
        // One rule spread over every line, never closed.
        (
            "unclosed-multiline",
            each(&|i, s| {
                let _ = writeln!(s, "{}a{i},", if i == 0 { "Defer(" } else { "  " });
            }),
        ),
        // A rule inside a rule, and an empty rule, on alternate lines.
        (
            "nested-rules",
            each(&|i, s| {
                if i % 2 == 0 {
                    let _ = writeln!(s, "Defer(NoDefer(a{i}))");
                } else {
                    s.push_str("Hide()\n");
                }
            }),
        ),
        // Text after a block's `}`, inside a block whose line is also bad.
        (
            "after-block",
            each(&|i, s| {
                let _ = writeln!(s, "mode m{i} {{ when f {{ }} x }} y");
            }),
        ),
        // A `}` that closes nothing, twenty to a line.
        (
            "stray-close",
            each(&|_, s| s.push_str("} } } } } } } } } } } } } } } } } } } }\n")),
        ),
        // `(` forty to a line.
        (
            "open-parens",
            each(&|_, s| {
                s.push_str(&"(".repeat(40));
                s.push('\n');
            }),
        ),
        // Unknown rules, unknown settings and bad values: errors found after
        // parsing, each with a did-you-mean.
        (
            "unknown-words",
            each(&|i, s| {
                let _ = writeln!(
                    s,
                    "Defr(a{i})\nmax_activation = {i}\nactivation = sticky{i}"
                );
            }),
        ),
        // Every keyword and punctuation mark in a pseudo-random order.
        ("keyword-soup", keyword_soup(lines)),
        // Bytes that are not UTF-8 on every line.
        (
            "invalid-utf8",
            (0..lines)
                .flat_map(|i| {
                    let mut l = format!("Defer(a{i}").into_bytes();
                    l.extend_from_slice(&[0xff, 0xfe, b')', b'\n']);
                    l
                })
                .collect(),
        ),
        // Well formed, but every rule the same: the lints compare rules.
        (
            "duplicate-rules",
            each(&|_, s| s.push_str("Defer(a*, b*)\n")),
        ),
        // One line holding every selector, well formed.
        ("long-line", long_line(lines)),
    ]
}

/// One `Defer(...)` with a selector per "line" of the shape, on one line.
fn long_line(lines: usize) -> Vec<u8> {
    let mut s = String::from("Defer(");
    for i in 0..lines {
        let _ = write!(s, "t{i}*, ");
    }
    s.push_str(")\n");
    s.into_bytes()
}

/// Keywords, rule words and punctuation in an order fixed by a simple
/// generator: about eight tokens to a line. `{` is left out: it would only
/// meet the nesting limit (the `unclosed-brace` shape has that).
fn keyword_soup(lines: usize) -> Vec<u8> {
    const TOKENS: [&str; 24] = [
        "mode", "bot", "when", "guard", "search", "Defer", "NoDefer", "Hide", "Grant", "(", ")",
        "}", ",", "=", "!", "*", "\"", "#", "skill:", "source:", "x", "true", "42", "Skill:",
    ];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut s = String::new();
    for _ in 0..lines {
        for _ in 0..8 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            s.push_str(TOKENS[(state >> 33) as usize % TOKENS.len()]);
            s.push(' ');
        }
        s.push('\n');
    }
    s.into_bytes()
}

/// What `policy check FILE` does with a file: read, lint when it loads, and
/// render every diagnostic for a person. Returns the rendered text.
pub fn check(name: &str, bytes: &[u8]) -> String {
    use toolpolicy::Policy;
    use toolpolicy::diag::{Severity, SourceFile};
    let (source, diags) = match std::str::from_utf8(bytes) {
        Ok(text) => {
            let source = SourceFile::new(name, text);
            let (policy, mut diags) = Policy::parse_with_diagnostics(source.clone());
            if !diags.iter().any(|d| d.severity == Severity::Error) {
                diags.extend(toolpolicy::lint::lint(&policy, None, None));
            }
            (source, diags)
        }
        Err(_) => match Policy::from_bytes(name, bytes) {
            Err(e) => (e.source, e.diagnostics),
            Ok(_) => return String::new(),
        },
    };
    toolpolicy::render::human(&source, &diags, false)
}

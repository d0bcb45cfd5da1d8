//! Arbitrary bytes as a policy file: parsing, checking, linting, rendering
//! the diagnostics, compiling, deciding, and formatting.
//!
//! - the hand-written reader gives the tree and diagnostics of pest reading
//!   the whole file;
//! - a file that loads is UTF-8, its lints point into it, the table agrees
//!   with the reference interpreter on items named after its own selectors,
//!   and it formats: formatting twice changes nothing and the result parses
//!   to the same policy (`policy fmt`);
//! - a file that does not load has at least one error, every diagnostic
//!   points into the text, rendering them works, and the formatter refuses
//!   it.

#![no_main]

use libfuzzer_sys::fuzz_target;
use toolpolicy::ast::SelectorKind;
use toolpolicy::diag::{Diagnostic, Severity, SourceFile};
use toolpolicy::format::{self, FormatError};
use toolpolicy::{Context, ItemKind, ItemRef, Policy, Table, lint, reference, render};

const NAME: &str = "fuzz.policy";

fn check_diagnostics(source: &SourceFile, diags: &[Diagnostic]) {
    let text = &source.text;
    for d in diags {
        let (s, e) = (d.span.start, d.span.end);
        assert!(
            s <= e && e <= text.len(),
            "{d:?} outside {} bytes",
            text.len()
        );
        assert!(
            text.is_char_boundary(s) && text.is_char_boundary(e),
            "{d:?}"
        );
        assert!(!d.message.is_empty(), "{d:?}");
    }
    let _ = render::human(source, diags, true);
    let _ = render::plain(source, diags);
    for d in diags {
        let _ = render::to_json(source, d);
    }
}

/// Items named after the policy's own selectors (the pattern with its `*`
/// dropped, and with each `*` as `x`), so rules match, nearly match, and
/// collide.
fn items(policy: &Policy) -> Vec<(ItemKind, String, Option<String>)> {
    let mut out = vec![(ItemKind::Tool, "x".to_string(), None)];
    let selectors = policy.rules.iter().flat_map(|r| &r.selectors).take(12);
    for sel in selectors {
        for name in [sel.pattern.replace('*', ""), sel.pattern.replace('*', "x")] {
            out.push(match sel.kind {
                SelectorKind::Tool => (ItemKind::Tool, name, None),
                SelectorKind::Skill => (ItemKind::Skill, name, None),
                SelectorKind::Source => (ItemKind::Tool, "x".into(), Some(name)),
                // Decided by name, without a registry, a hint matches nothing:
                // a plain tool is the item that would be picked by one.
                SelectorKind::Hint => (ItemKind::Tool, "x".into(), None),
            });
        }
    }
    out
}

/// Contexts over the policy's own modes, bots and flags, each one the
/// policy accepts.
fn contexts(policy: &Policy) -> Vec<Context> {
    let mut flags = std::collections::BTreeSet::new();
    for when in policy.rules.iter().filter_map(|r| r.when.as_ref()) {
        flags.insert(when.flag.clone());
    }
    // A policy that declares modes needs one in every context.
    let mut out = Vec::new();
    if policy.modes.is_empty() {
        out.push(Context::default());
    }
    for mode in policy.modes.iter().take(2) {
        out.push(Context::mode(mode.as_str()));
    }
    let bot = policy.bots.first().map_or("somebot", String::as_str);
    out.push(Context {
        mode: policy.modes.first().cloned(),
        bot: Some(bot.to_string()),
        flags,
        grants: None,
    });
    out
}

fn differential(policy: &Policy) {
    let table = Table::compile(policy);
    let items = items(policy);
    for ctx in contexts(policy) {
        let Ok(resolved) = table.resolve(&ctx) else {
            panic!("a declared mode is rejected: {ctx:?}");
        };
        for (kind, name, source) in &items {
            for hint in [false, true] {
                let item = ItemRef {
                    kind: *kind,
                    name,
                    source: source.as_deref(),
                    defer_hint: hint,
                    model_invocable: true,
                    ..ItemRef::tool(name)
                };
                let want = reference::decide(policy, &ctx, &item);
                assert_eq!(
                    Ok(table.decide(&resolved, &item)),
                    want,
                    "{item:?} in {ctx:?}"
                );
            }
        }
    }
}

fn formatting(text: &str, policy: &Policy) {
    let formatted = match format::format(NAME, text) {
        Ok(f) => f,
        Err(FormatError::Invalid(e)) => panic!("loads, but the formatter says:\n{e}"),
        Err(e @ FormatError::Unfaithful { .. }) => panic!("{e}"),
    };
    match format::format(NAME, &formatted) {
        Ok(again) => assert_eq!(again, formatted, "formatting twice changed the text"),
        Err(e) => panic!("the formatted text does not format: {e}\n{formatted}"),
    }
    match Policy::parse(NAME, formatted.as_str()) {
        Ok(back) => {
            if let Err(why) = format::same_meaning(policy, &back) {
                panic!("{why}:\n{formatted}");
            }
        }
        Err(e) => panic!("the formatted text does not load: {e}\n{formatted}"),
    }
}

fuzz_target!(|data: &[u8]| {
    // The hand-written reader, with pest behind it for what it cannot read,
    // reads every file exactly as pest reading the whole file does.
    if let Ok(text) = std::str::from_utf8(data) {
        assert_eq!(
            toolpolicy::parse(text),
            toolpolicy::parse_with_pest(text),
            "the reader and pest differ"
        );
    }
    match Policy::from_bytes(NAME, data) {
        Ok(policy) => {
            let Ok(text) = std::str::from_utf8(data) else {
                panic!("a policy that is not UTF-8 loaded");
            };
            check_diagnostics(&policy.source, &lint::lint(&policy, None, None));
            differential(&policy);
            formatting(text, &policy);
        }
        Err(errors) => {
            let has_error = errors
                .diagnostics
                .iter()
                .any(|d| d.severity == Severity::Error);
            assert!(
                has_error,
                "rejected without an error: {:?}",
                errors.diagnostics
            );
            check_diagnostics(&errors.source, &errors.diagnostics);
            if let Ok(text) = std::str::from_utf8(data) {
                let refused = matches!(format::format(NAME, text), Err(FormatError::Invalid(_)));
                assert!(refused, "the formatter took a policy that does not load");
            }
        }
    }
});

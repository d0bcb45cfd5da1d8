use super::*;

/// The codes and messages of a policy text's errors; none when it loads.
pub(crate) fn errors(src: &str) -> Vec<(Code, String)> {
    match Policy::parse("t.policy", src) {
        Ok(_) => Vec::new(),
        Err(e) => e
            .diagnostics
            .into_iter()
            .map(|d| (d.code, d.message.into_owned()))
            .collect(),
    }
}

#[test]
fn lowers_scopes_and_conditions() {
    let p = Policy::parse(
        "t",
        "Defer(*)\nmode a { when x { NoDefer(b) } }\nbot * { Hide(c) }\nbot r { Grant(d) }\n",
    )
    .unwrap();
    let got: Vec<_> = p
        .rules
        .iter()
        .map(|r| (r.kind, r.scope.clone(), r.when.clone()))
        .collect();
    assert_eq!(
        got,
        [
            (RuleKind::Defer, Scope::Top, None),
            (
                RuleKind::NoDefer,
                Scope::Mode("a".into()),
                Some(Condition {
                    flag: "x".into(),
                    negated: false
                })
            ),
            (RuleKind::Hide, Scope::AnyBot, None),
            (RuleKind::Grant, Scope::Bot("r".into()), None),
        ]
    );
    assert_eq!(p.modes, ["a"]);
    assert_eq!(p.bots, ["r"]);
    assert!(p.has_any_bot);
}

#[test]
fn semantic_errors() {
    let e = errors("defer_loadin = true\n");
    assert_eq!(e[0].0, Code::UnknownSetting);
    let e = errors("max_activations = 65\n");
    assert_eq!(e[0].0, Code::BadValue);
    let e = errors("activation = sticky\n");
    assert_eq!(e[0].0, Code::BadValue);
    let e = errors("mode a { guard x }\n");
    assert_eq!(e[0].0, Code::Misplaced);
    let e = errors("mode a { }\nmode a { }\n");
    assert_eq!(e[0].0, Code::DuplicateBlock);
    let e = errors("Defr(x)\n");
    assert_eq!(e[0].0, Code::UnknownRule);
    let e = errors("when a { when b { } }\n");
    assert_eq!(e[0].0, Code::Misplaced);
    let e = errors("mode a { mode b { } }\n");
    assert_eq!(e[0].0, Code::Misplaced);
    let e = errors("Defer(\"\")\n");
    assert_eq!(e[0].0, Code::EmptyPattern);
    let e = errors("Defer(skill:)\n");
    assert_eq!(e[0].0, Code::EmptyPattern);
    assert!(errors("Defer(\"skill:\")\n").is_empty());
}

#[test]
fn duplicate_settings_only_in_same_scope_and_condition() {
    assert!(errors("on_miss = \"error\"\nmode a { on_miss = \"error\" }\nwhen f { on_miss = \"activate\" }\n").is_empty());
    let e = errors("when f { on_miss = \"error\" }\nwhen f { on_miss = \"activate\" }\n");
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].0, Code::DuplicateSetting);
    assert!(e[0].1.contains("line 1"), "{}", e[0].1);
}

#[test]
fn every_error_is_reported() {
    let e = errors("Defr(x)\nfoo = 1\nDefer()\nmax_activations = 0\n");
    let codes: Vec<Code> = e.iter().map(|(c, _)| *c).collect();
    assert_eq!(
        codes,
        [
            Code::UnknownRule,
            Code::UnknownSetting,
            Code::EmptyRule,
            Code::BadValue
        ]
    );
}

#[test]
fn not_utf8_says_so() {
    let e = Policy::from_bytes("x", b"Defer(a)\n\xff\n").unwrap_err();
    assert_eq!(e.diagnostics[0].code, Code::NotUtf8);
}

#[test]
fn statement_text_is_folded() {
    let p = Policy::parse("t", "NoDefer(a,   # the first\n   b\n)\n").unwrap();
    assert_eq!(p.text_of(p.rules[0].span), "NoDefer(a, b)");
}

/// Each hint mistake is an error that says why, and the four hints in
/// any prefix case load in every rule.
#[test]
fn hints_are_checked() {
    let e = errors(
        "guard hint:read_only\nsearch hint:idempotent\nGrant(hint:readonly, hint:*, hint:\"destructive\", Hint:)\n",
    );
    let got: Vec<(Code, &str)> = e.iter().map(|(c, m)| (*c, m.as_str())).collect();
    assert_eq!(
        got,
        [
            (Code::BadHint, "a hint cannot choose `guard` tools"),
            (Code::BadHint, "a hint cannot choose `search` tools"),
            (Code::BadHint, "unknown hint `hint:readonly`"),
            (
                Code::BadHint,
                "`hint:*` is not a hint: hint names take no `*`"
            ),
            (
                Code::BadHint,
                "a hint name is never quoted: `hint:\"destructive\"`"
            ),
            (Code::BadHint, "`Hint:` needs a hint name after it"),
        ]
    );
    let d = Policy::parse("t", "Grant(hint:readonly)").unwrap_err();
    assert_eq!(
        d.diagnostics[0].help.as_deref(),
        Some("did you mean `hint:read_only`")
    );
    let p = Policy::parse(
        "t",
        "Defer(HINT:open_world)\nNoDefer(hint:read_only)\nHide(hint:destructive)\nGrant(Hint:idempotent)\n",
    )
    .unwrap();
    assert!(
        p.rules
            .iter()
            .all(|r| r.selectors[0].kind == SelectorKind::Hint)
    );
}

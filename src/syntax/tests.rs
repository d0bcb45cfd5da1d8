use super::*;

fn codes(src: &str) -> Vec<(Code, usize)> {
    parse(src)
        .1
        .iter()
        .map(|d| (d.code, d.span.start))
        .collect()
}

#[test]
fn parses_every_construct() {
    let src = r#"# comment
guard new_context
search ToolSearch, "load tools"
activation = "per_prompt"
mode agent {
  NoDefer(Read, Bash,
      Edit, Write)   # trailing comment
  defer(*)
  when !codemode {
defer_loading = false
  }
}
bot * { NoDefer(computer*) }
bot reviewer {
  Grant(Read, skill:code-review, source:"mcp:git*")
}
"#;
    let (ast, diags) = parse(src);
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(ast.items.len(), 6);
    let Item::Block(agent) = &ast.items[3] else {
        panic!("not a block")
    };
    assert_eq!(agent.head, BlockHead::Mode("agent".into()));
    assert_eq!(agent.items.len(), 3);
    let Item::Block(when) = &agent.items[2] else {
        panic!("not a block")
    };
    assert_eq!(
        when.head,
        BlockHead::When {
            flag: "codemode".into(),
            negated: true
        }
    );
    let Item::Block(reviewer) = &ast.items[5] else {
        panic!("not a block")
    };
    let Item::Statement(Statement {
        kind: StatementKind::Rule { selectors, .. },
        ..
    }) = &reviewer.items[0]
    else {
        panic!("not a rule")
    };
    let kinds: Vec<_> = selectors
        .iter()
        .map(|s| (s.kind, s.pattern.as_str(), s.quoted))
        .collect();
    assert_eq!(
        kinds,
        [
            (SelectorKind::Tool, "Read", false),
            (SelectorKind::Skill, "code-review", false),
            (SelectorKind::Source, "mcp:git*", true)
        ]
    );
}

/// `hint:` in any case is a hint selector whatever follows; the checker
/// says what is wrong with a quoted or wildcard name. A quoted
/// `"hint:x"` and a lone `hint:` are tool patterns, as for `skill:`.
#[test]
fn hint_selectors() {
    for parse in [parse, parse_with_pest] {
        let (ast, d) =
            parse(r#"Grant(hint:read_only, HINT:"x", hint:*, "hint:idempotent", hint:)"#);
        assert!(d.is_empty(), "{d:?}");
        let Item::Statement(Statement {
            kind: StatementKind::Rule { selectors, .. },
            ..
        }) = &ast.items[0]
        else {
            panic!("not a rule")
        };
        let kinds: Vec<_> = selectors
            .iter()
            .map(|s| (s.kind, s.pattern.as_str(), s.quoted))
            .collect();
        assert_eq!(
            kinds,
            [
                (SelectorKind::Hint, "read_only", false),
                (SelectorKind::Hint, "x", true),
                (SelectorKind::Hint, "*", false),
                (SelectorKind::Tool, "hint:idempotent", true),
                (SelectorKind::Tool, "hint:", false),
            ]
        );
    }
}

#[test]
fn quoted_escapes() {
    let (ast, d) = parse(r#"Hide("a \"b\" \\ c", "skill:x")"#);
    assert!(d.is_empty());
    let Item::Statement(Statement {
        kind: StatementKind::Rule { selectors, .. },
        ..
    }) = &ast.items[0]
    else {
        panic!()
    };
    assert_eq!(selectors[0].pattern, r#"a "b" \ c"#);
    assert_eq!(selectors[1].kind, SelectorKind::Tool);
}

#[test]
fn reports_every_error_and_keeps_the_rest() {
    let src = "Defer()\nNoDefer(a)\nDefer(NoDefer(x))\nHide(b\nGrant(c)\n}\n";
    let (ast, diags) = parse(src);
    let c: Vec<Code> = diags.iter().map(|d| d.code).collect();
    assert_eq!(
        c,
        [
            Code::EmptyRule,
            Code::NestedRule,
            Code::Syntax,
            Code::StrayClose
        ]
    );
    // NoDefer(a) and Grant(c) survive.
    assert_eq!(ast.items.len(), 2);
}

#[test]
fn unclosed_block_and_bad_header() {
    assert_eq!(codes("mode a {\n Defer(x)\n"), [(Code::UnclosedBlock, 0)]);
    // A bad header still has its body checked.
    let c = codes("mode {\n Defer()\n}\n");
    assert_eq!(c.len(), 2);
    assert_eq!(c[1].0, Code::EmptyRule);
}

#[test]
fn two_statements_on_a_line() {
    let d = parse("Defer(a) Defer(b)\n").1;
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].span.start, 9);
}

#[test]
fn wildcard_lookalikes_get_help() {
    let d = parse("Defer(read?)\n").1;
    assert_eq!(d.len(), 1);
    assert!(d[0].help.as_deref().unwrap_or("").contains("only wildcard"));
}

#[test]
fn a_misspelled_block_keyword_gets_did_you_mean() {
    for (src, word, meant) in [
        ("mdoe review {\n  Defer(*)\n}\n", "mdoe", "mode"),
        ("Defer(x)\nwehn readonly {\n  Hide(x)\n}\n", "wehn", "when"),
        ("bto x {\n}\n", "bto", "bot"),
    ] {
        let (_, d) = parse(src);
        assert_eq!(d.len(), 1, "{src:?}: {d:?}");
        assert_eq!(d[0].message, format!("unknown block `{word}`"), "{src:?}");
        assert_eq!(&src[d[0].span.start..d[0].span.end], word);
        let help = d[0].help.as_deref().unwrap_or("");
        assert!(
            help.starts_with(&format!("did you mean `{meant}`")),
            "{help}"
        );
    }
    // A word far from every keyword keeps the parser's own message.
    let (_, d) = parse("review x {\n}\n");
    assert!(d[0].message.starts_with("expected"), "{:?}", d[0]);
}

#[test]
fn no_rule_names_leak_into_messages() {
    for src in [
        "Defer(",
        "mode",
        "x = ",
        "guard",
        "bot {",
        "when ! {",
        "Defer(a,,b)",
        "\"",
        "{",
    ] {
        for d in parse(src).1 {
            assert!(!d.message.contains('_'), "{src:?}: {}", d.message);
        }
    }
}

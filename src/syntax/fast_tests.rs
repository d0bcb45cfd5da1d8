use super::*;
use proptest::prelude::*;

/// The reader with pest behind it reads a file exactly as pest alone
/// does: the same tree, the same diagnostics. Returns whether the file is
/// free of errors.
fn agrees(text: &str) -> bool {
    let (tree, diags) = crate::syntax::parse(text);
    let (slow, slow_diags) = crate::syntax::parse_with_pest(text);
    assert_eq!(tree, slow, "trees differ for {text:?}");
    assert_eq!(diags, slow_diags, "diagnostics differ for {text:?}");
    diags.is_empty()
}

/// Whether the reader read a file without asking pest about any item.
fn read_alone(text: &str) -> bool {
    let mut lower = Lower::new(text);
    let _ = read(text, &mut lower);
    lower.diags.is_empty() && lower.asked == 0
}

#[test]
fn accepts_every_construct() {
    let src = r#"# comment
guard new_context, "odd name"   # trailing
SEARCH ToolSearch   # the span takes this comment
guard a , b 
activation = "per_prompt"
max_activations = -4
catalog_params = TRUE
odd = sticky
mode agent {
  NoDefer(Read, Bash,
# inside
Edit ,Write,
  )
  defer(skill:"my \"skill\"", source:mcp:*, skill:x*, "skill:literal")
  Grant(hint:read_only, HINT:"destructive", hint:*, "hint:idempotent", hint:)
  when ! codemode { Defer(*) }
}
bot * {
}
bot "two words" { Grant(a) }
Mode chat {}
"#;
    assert!(agrees(src));
    assert!(agrees(""));
    // Every line break of the grammar: `\n`, `\r\n` and a lone `\r`.
    assert!(agrees(
        "Defer(a) # c\rNoDefer(y)\r\nmode m {\r  Hide(z)\r}\n"
    ));
    assert!(read_alone(
        "Defer(a) # c\rNoDefer(y)\r\nmode m {\r  Hide(z)\r}\n"
    ));
    assert!(agrees("\n\n# only a comment"));
}

#[test]
fn every_bundled_policy_reads_fast_and_the_same() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/policies");
    let Ok(dir) = std::fs::read_dir(root) else {
        return;
    };
    for entry in dir.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "policy") {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(agrees(&text), "{} has errors", path.display());
            assert!(read_alone(&text), "{} fell back to pest", path.display());
        }
    }
}

#[test]
fn pest_reads_and_reports_malformed_items() {
    for src in [
        "Defer()",
        "Defer(a",
        "Defer(a,,b)",
        "Defer(NoDefer(x))",
        "mode a {",
        "}",
        "Defer(a) Defer(b)",
        "Defer(a) }",
        "x =",
        "mode a:b { }",
        "guard(x)",
        "guard a,",
        "Defer(a?b)",
        "Defer(\"a\\x\")",
        "Defer(skill: x)",
        "mode a\n{ }",
        "_x(a)",
        "max-x = 3",
        "1=x",
        "Defer(a\nDefer(b\n",
        "Defer(a,\nguard\n\nHide(x)",
        "mode a { when b { } x } y\n",
        "mode a { } mode b { Defer() }",
        "((((\n))))",
    ] {
        agrees(src);
        assert!(!read_alone(src), "read {src:?} without pest");
    }
}

/// A rule left open at the end of its line is diagnosed by hand; every
/// variant around that shape must say what pest says.
#[test]
fn unclosed_rules_read_by_hand_agree_with_pest() {
    for src in [
        "Defer(a\nDefer(b\n",
        "Defer(a\n",
        "Defer(a",
        "Defer(a\r\n\r\n  \n",
        "Defer(a\rHide(b\r",
        "Defer( a , b\t\n  x",
        "Defer(a\n  , b)",
        "Defer(a\n)",
        "Defer(a\n# c\nx",
        "Defer(a # (\nx",
        "Defer(a,\nb\nc",
        "Defer(\"a\"\nx",
        "Defer (a\n}",
        "Defer(a\n{",
        "Defer(a\né",
        "mode(a\nx",
        "Defer(skill:\nx",
        "Defer(a\n\n\nmode m {\n}\n",
        "Defer(NoDefer(a))",
        "Defer(a, NoDefer(b))",
        "Defer( (",
        "Defer(a,(",
        "Hide()",
        "Hide( )\n",
        "Hide(a,)",
        "Hide(a))",
        "Hide(a)(",
        "Defer(a b)",
        "Defer(a(b",
    ] {
        agrees(src);
    }
}

/// Tokens that policies are made of, well and badly placed.
fn token() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "mode",
        "MODE",
        "bot",
        "when",
        "guard",
        "search",
        "Defer",
        "nodefer",
        "Hide",
        "Grant",
        "a",
        "b*",
        "*",
        "x.y/z",
        "skill:",
        "source:",
        "skill:s",
        "source:mcp:*",
        "Skill:",
        "SOURCE:",
        "hint:",
        "Hint:",
        "hint:read_only",
        "HINT:destructive",
        "hint:*",
        "\"q\"",
        "\"a\\\"b\"",
        "\"\\\\\"",
        "!",
        "{",
        "}",
        "(",
        ")",
        ",",
        "=",
        " ",
        "  ",
        "\t",
        "\n",
        "\n\n",
        "\r",
        "\r\n",
        "# c\n",
        "#c",
        "1",
        "-2",
        "true",
        "False",
        "sticky",
        "\"per_prompt\"",
        "_k",
        "k_1",
        "?",
        "\"",
        "\\",
        "é",
        "文件",
        ":",
        "-",
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5000))]
    #[test]
    fn agrees_with_pest_on_token_soup(tokens in prop::collection::vec(token(), 0..60)) {
        agrees(&tokens.concat());
    }

    /// Half-typed lines: where recovery, read by hand or by pest, ends.
    #[test]
    fn agrees_with_pest_on_half_typed_lines(
        lines in prop::collection::vec(
            prop::sample::select(vec![
                "Defer(a", "  b,", "c) d", "Hide(", "NoDefer (x", "x = 1", "_k =", "k=",
                "guard g", "guardx(", "search", "bot", "mode m {", "when(", "}", "{",
                "# c", "", "  ", "a b", "Defer(a) }", "x ( y", "Grant(\"q", "1(",
                "Defer(a, b", "Hide( a ,b\t", "Defer(a,", ",", ")", ", c)", "Defer(a #",
                "Hide(s:x*", "Defer(a\t", "\t)", "Grant(a) # (", "Hide()", "Hide( ) x",
                "Defer(NoDefer(a))", "Defer(a, (", "x(y(", "Defer(a)(",
            ]),
            0..30,
        ),
        breaks in prop::collection::vec(prop::sample::select(vec!["\n", "\r\n", "\r"]), 30),
    ) {
        let text: String = lines
            .iter()
            .zip(&breaks)
            .map(|(l, b)| format!("{l}{b}"))
            .collect();
        agrees(&text);
    }

    #[test]
    fn agrees_with_pest_on_policies(
        lines in prop::collection::vec(
            prop::sample::select(vec![
                "Defer(a, b*)", "NoDefer(\n  x,\n  skill:y, # c\n)", "Hide(source:mcp:*)",
                "Hide(Skill:x, SOURCE:mcp:*)", "guard g, h", "search s", "activation = \"sticky\"", "max_activations = 3",
                "mode m {", "bot * {", "bot r {", "when f {", "when !f {", "}", "",
                "# comment", "  Grant(z)  # why", "mode n { Defer(q) }",
                "Grant(hint:read_only)", "Hide(HINT:destructive, hint:\"x\")", "guard hint:idempotent",
                "NoDefer(hint:, \"hint:open_world\")",
            ]),
            0..25,
        )
    ) {
        agrees(&lines.join("\n"));
    }
}

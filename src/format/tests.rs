//! The canonical form, comments kept, and formatting twice changes nothing.

use super::*;

fn fmt(src: &str) -> String {
    let out = format("t.policy", src).unwrap_or_else(|e| panic!("{e}"));
    let again = format("t.policy", &out).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again, out, "formatting twice changed it");
    out
}

#[test]
fn canonical_case_spacing_and_indentation() {
    let src = "GUARD  new_context\nSearch ToolSearch,load_tools\nACTIVATION = \"per_prompt\"\nDefer_loading=TRUE\nMode agent{\n    nodefer( Read ,Bash )\n\tDEFER(*)\n  WHEN !codemode {\n defer_loading = false }\n}\nbot * { hide(x) }\n";
    assert_eq!(
        fmt(src),
        "guard new_context\nsearch ToolSearch, load_tools\nactivation = \"per_prompt\"\ndefer_loading = true\nmode agent {\n  NoDefer(Read, Bash)\n  Defer(*)\n  when !codemode {\n    defer_loading = false\n  }\n}\nbot * {\n  Hide(x)\n}\n"
    );
}

#[test]
fn quotes_only_where_needed() {
    let src = "Defer(\"plain\", \"has space\", \"a\\\"b\", skill:\"x\", \"skill:tool\", source:\"mcp:git*\")\nmode \"my mode\" {\n}\n";
    assert_eq!(
        fmt(src),
        "Defer(plain, \"has space\", \"a\\\"b\", skill:x, \"skill:tool\", source:mcp:git*)\nmode \"my mode\" {\n}\n"
    );
}

#[test]
fn comments_stay_where_they_were() {
    let src = "# head\n\n\n# before guard\nguard g # why\n\nmode a {  # the mode\n  # inside\n  Defer(*)   # all\n  NoDefer(Read) # some\n  # last\n} # end\n# tail\n";
    assert_eq!(
        fmt(src),
        "# head\n\n# before guard\nguard g  # why\n\nmode a {  # the mode\n  # inside\n  Defer(*)       # all\n  NoDefer(Read)  # some\n  # last\n}  # end\n# tail\n"
    );
}

#[test]
fn comments_inside_a_rule_keep_one_selector_per_line() {
    let src = "NoDefer(Read,   # the first\n   # then\n   Bash\n   # done\n) # after\n";
    assert_eq!(
        fmt(src),
        "NoDefer(\n  Read,  # the first\n  # then\n  Bash,\n  # done\n)  # after\n"
    );
    let src = "NoDefer( # open\n a, b)\n";
    assert_eq!(fmt(src), "NoDefer(  # open\n  a,\n  b,\n)\n");
}

#[test]
fn a_comment_after_a_one_line_block_stays_after_it() {
    assert_eq!(
        fmt("mode a { Defer(x) } # c\n"),
        "mode a {\n  Defer(x)\n}  # c\n"
    );
    assert_eq!(
        fmt("mode a { Defer(x)  # c\n}\n"),
        "mode a {\n  Defer(x)  # c\n}\n"
    );
}

#[test]
fn hash_inside_quotes_is_not_a_comment() {
    assert_eq!(fmt("Hide(\"a#b\")  # c\n"), "Hide(\"a#b\")  # c\n");
}

#[test]
fn blank_lines_collapse_and_trim() {
    assert_eq!(
        fmt("\n\nDefer(a)\n\n\n\nDefer(b)\nmode m {\n\n  Defer(c)\n\n}\n\n\n"),
        "Defer(a)\n\nDefer(b)\nmode m {\n  Defer(c)\n}\n"
    );
    assert_eq!(fmt(""), "");
    assert_eq!(fmt("# only\n"), "# only\n");
}

#[test]
fn refuses_a_policy_with_errors() {
    match format("t.policy", "Defr(x)\n") {
        Err(FormatError::Invalid(e)) => assert_eq!(e.diagnostics[0].code.as_str(), "PL004"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn every_bundled_policy_is_canonical() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("policies");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "policy") {
            let text = std::fs::read_to_string(&path).unwrap();
            assert_eq!(fmt(&text), text, "{} is not canonical", path.display());
        }
    }
}

#[test]
fn every_line_break_of_the_grammar_is_a_line_break() {
    // A lone `\r` ends a line for the parser, so it does for the formatter:
    // the comment stays on `Defer(x)`'s line and `NoDefer(y)` gets its own.
    for src in [
        "Defer(x) # c\rNoDefer(y)\n",
        "Defer(x) # c\r\nNoDefer(y)\r\n",
        "Defer(x) # c\nNoDefer(y)",
    ] {
        assert_eq!(fmt(src), "Defer(x)  # c\nNoDefer(y)\n", "{src:?}");
    }
}

/// A hint's prefix is written lowercase; a tool named like a hint stays quoted.
#[test]
fn hints_are_written_canonically() {
    let src = "mode plan { grant( HINT:read_only,Hint:idempotent ) }\nHide(\"hint:x\", hint:destructive)\n";
    assert_eq!(
        fmt(src),
        "mode plan {\n  Grant(hint:read_only, hint:idempotent)\n}\nHide(\"hint:x\", hint:destructive)\n"
    );
}

/// `lock` keeps its path (quotes and escapes as the language writes them)
/// and `unlocked` its word, in the canonical case.
#[test]
fn lock_and_unlocked_settings() {
    let src = "LOCK   =  \"pins/tools \\\"a\\\".lock\"\nmode m {\n  UNLOCKED=\"defer\"\n}\nbot * {\n unlocked = \"allow\"\n}\n";
    assert_eq!(
        fmt(src),
        "lock = \"pins/tools \\\"a\\\".lock\"\nmode m {\n  unlocked = \"defer\"\n}\nbot * {\n  unlocked = \"allow\"\n}\n"
    );
}

/// `terms` keeps its path, in the canonical case, as `lock` does.
#[test]
fn terms_setting() {
    assert_eq!(
        fmt("Terms   =\"learned/search terms.toml\"\nDefer(*)\n"),
        "terms = \"learned/search terms.toml\"\nDefer(*)\n"
    );
}

//! Source text to spanned syntax tree: the only module that touches pest.
//!
//! Parsing never stops at the first mistake: the grammar's `recovery` rule
//! captures a bad item, the parser carries on, and each captured item is parsed
//! again on its own to say what was expected there.

use pest::Parser;
use pest::error::{ErrorVariant, InputLocation};
use pest::iterators::Pair;

use crate::ast::{
    Ast, Block, BlockHead, Item, Selector, SelectorKind, Span, Statement, StatementKind, Value,
};
use crate::diag::{Code, Diagnostic};

#[derive(pest_derive::Parser)]
#[grammar = "../grammar/policy.pest"]
struct PolicyParser;

mod fast;

/// Parses a whole file; the tree holds every item that parsed, the diagnostics
/// every one that did not.
pub fn parse(text: &str) -> (Ast, Vec<Diagnostic>) {
    // Both parsers and every pass over the tree recurse once per block level:
    // a file of thousands of `{` would overflow the stack, so it is refused
    // before parsing.
    if let Some(at) = too_deep(text) {
        let d = Diagnostic::new(
            Code::Syntax,
            Span::new(at, at + 1),
            format!("blocks are nested more than {MAX_DEPTH} deep"),
        )
        .with_help("blocks nest at most two deep: a `when` block inside a `mode` or `bot` block");
        return (Ast::default(), vec![d]);
    }
    // Well-formed files take the hand-written fast path (see `fast`); pest
    // reads everything else and says what is wrong.
    if let Some(ast) = fast::parse(text) {
        return (ast, Vec::new());
    }
    parse_with_pest(text)
}

/// Far beyond any legal nesting (two), well within the stack.
const MAX_DEPTH: usize = 32;

/// The offset of the first `{` that opens a block deeper than [`MAX_DEPTH`],
/// braces in comments and quoted patterns aside.
fn too_deep(text: &str) -> Option<usize> {
    // Counting braces vectorises; most files have far fewer than the limit.
    if text.bytes().filter(|&b| b == b'{').count() <= MAX_DEPTH {
        return None;
    }
    let (mut depth, mut quoted, mut escaped, mut comment) = (0usize, false, false, false);
    for (i, b) in text.bytes().enumerate() {
        match b {
            b'\n' => (quoted, escaped, comment) = (false, false, false),
            _ if comment => {}
            _ if escaped => escaped = false,
            b'\\' if quoted => escaped = true,
            b'"' => quoted = !quoted,
            _ if quoted => {}
            b'#' => comment = true,
            b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Some(i);
                }
            }
            b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

fn parse_with_pest(text: &str) -> (Ast, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let ast = match PolicyParser::parse(Rule::file, text) {
        Ok(mut pairs) => {
            let file = pairs.next().map(|p| p.into_inner());
            let items = file
                .into_iter()
                .flatten()
                .filter_map(|p| lower_item(p, text, &mut diags))
                .collect();
            Ast { items }
        }
        Err(e) => {
            // The recovery rules make this rare; report the parser's own finding.
            diags.push(from_pest_error(&e, 0, text));
            Ast::default()
        }
    };
    (ast, diags)
}

fn span(p: &Pair<'_, Rule>) -> Span {
    let s = p.as_span();
    Span::new(s.start(), s.end())
}

fn lower_item(p: Pair<'_, Rule>, text: &str, diags: &mut Vec<Diagnostic>) -> Option<Item> {
    match p.as_rule() {
        Rule::block => lower_block(p, text, diags).map(Item::Block),
        Rule::guard | Rule::search | Rule::setting | Rule::rule => {
            Some(Item::Statement(lower_statement(p)))
        }
        Rule::stray_close => {
            diags.push(
                Diagnostic::new(
                    Code::StrayClose,
                    span(&p),
                    "unexpected `}`: no block is open",
                )
                .with_help("remove it, or open a block before it (`mode NAME {`)"),
            );
            None
        }
        Rule::recovery => {
            diags.push(recovered_error(&p, text));
            // Report errors inside the body of a block whose header was bad.
            for inner in p.into_inner() {
                if inner.as_rule() == Rule::recovered_body {
                    for item in inner.into_inner() {
                        let _ = lower_item(item, text, diags);
                    }
                }
            }
            None
        }
        Rule::unclosed | Rule::EOI => None,
        _ => None,
    }
}

fn lower_block(p: Pair<'_, Rule>, text: &str, diags: &mut Vec<Diagnostic>) -> Option<Block> {
    let block_span = span(&p);
    let mut inner = p.into_inner();
    let head_pair = inner.next()?;
    let head_span = span(&head_pair);
    let head = match head_pair.as_rule() {
        Rule::mode_head => BlockHead::Mode(name_of(head_pair.into_inner().nth(1)?)),
        Rule::bot_head => {
            let name = head_pair.into_inner().nth(1)?;
            if name.as_rule() == Rule::any_bot {
                BlockHead::Bot(None)
            } else {
                BlockHead::Bot(Some(name_of(name)))
            }
        }
        Rule::when_head => {
            let mut parts = head_pair.into_inner().skip(1).peekable();
            let negated = parts.next_if(|p| p.as_rule() == Rule::negation).is_some();
            BlockHead::When {
                flag: name_of(parts.next()?),
                negated,
            }
        }
        _ => return None,
    };
    let mut items = Vec::new();
    for child in inner {
        if child.as_rule() == Rule::lbrace {
            continue;
        }
        if child.as_rule() == Rule::unclosed {
            diags.push(
                Diagnostic::new(Code::UnclosedBlock, head_span, "this block is never closed")
                    .with_help("add a `}` after the block's last line"),
            );
        } else if let Some(item) = lower_item(child, text, diags) {
            items.push(item);
        }
    }
    Some(Block {
        head,
        head_span,
        items,
        span: block_span,
    })
}

fn lower_statement(p: Pair<'_, Rule>) -> Statement {
    let stmt_span = span(&p);
    let kind = match p.as_rule() {
        Rule::guard => StatementKind::Guard(selectors_in(p)),
        Rule::search => StatementKind::Search(selectors_in(p)),
        Rule::rule => {
            let mut inner = p.into_inner();
            let (word, word_span) = match inner.next() {
                Some(w) => (w.as_str().to_string(), span(&w)),
                None => (String::new(), stmt_span),
            };
            StatementKind::Rule {
                word,
                word_span,
                selectors: inner.filter(is_selector).map(lower_selector).collect(),
            }
        }
        _ => {
            // Rule::setting: key, then one value.
            let mut inner = p.into_inner().filter(|p| p.as_rule() != Rule::equals);
            let key = inner.next();
            let value = inner.next();
            let (key, key_span) = key.map_or((String::new(), stmt_span), |k| {
                (k.as_str().to_string(), span(&k))
            });
            let (value, value_span) = match value {
                Some(v) => {
                    let vs = span(&v);
                    let val = match v.as_rule() {
                        Rule::integer => Value::Integer(v.as_str().to_string()),
                        Rule::boolean => Value::Bool(v.as_str().eq_ignore_ascii_case("true")),
                        Rule::quoted => Value::Quoted(unquote(v.as_str())),
                        _ => Value::Bare(v.as_str().to_string()),
                    };
                    (val, vs)
                }
                None => (Value::Bare(String::new()), stmt_span),
            };
            StatementKind::Setting {
                key,
                key_span,
                value,
                value_span,
            }
        }
    };
    Statement {
        kind,
        span: stmt_span,
    }
}

fn is_selector(p: &Pair<'_, Rule>) -> bool {
    matches!(
        p.as_rule(),
        Rule::skill_selector | Rule::source_selector | Rule::tool_selector
    )
}

fn selectors_in(p: Pair<'_, Rule>) -> Vec<Selector> {
    p.into_inner()
        .filter(is_selector)
        .map(lower_selector)
        .collect()
}

fn lower_selector(p: Pair<'_, Rule>) -> Selector {
    let sel_span = span(&p);
    let kind = match p.as_rule() {
        Rule::skill_selector => SelectorKind::Skill,
        Rule::source_selector => SelectorKind::Source,
        _ => SelectorKind::Tool,
    };
    let pat = p.into_inner().next();
    let (pattern, quoted) = match pat {
        Some(pat) if pat.as_rule() == Rule::quoted => (unquote(pat.as_str()), true),
        Some(pat) => (pat.as_str().to_string(), false),
        None => (String::new(), false),
    };
    Selector {
        kind,
        pattern,
        quoted,
        span: sel_span,
    }
}

fn name_of(p: Pair<'_, Rule>) -> String {
    if p.as_rule() == Rule::quoted {
        unquote(p.as_str())
    } else {
        p.as_str().to_string()
    }
}

/// Removes the quotes and resolves `\"` and `\\`.
fn unquote(s: &str) -> String {
    let inner = s
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(s);
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Re-parses a recovered item on its own to say what was expected where.
fn recovered_error(p: &Pair<'_, Rule>, text: &str) -> Diagnostic {
    let start = p.as_span().start();
    let rest = &text[start..];
    match PolicyParser::parse(Rule::lone_item, rest) {
        Err(e) => from_pest_error(&e, start, text),
        // Cannot happen (the same rules failed on the same input in the file
        // parse), but a wrong diagnostic is better than none.
        Ok(_) => Diagnostic::new(Code::Syntax, span(p), "this line could not be read"),
    }
}

fn from_pest_error(e: &pest::error::Error<Rule>, base: usize, text: &str) -> Diagnostic {
    let pos = base
        + match e.location {
            InputLocation::Pos(p) => p,
            InputLocation::Span((s, _)) => s,
        };
    let pos = pos.min(text.len());
    let here = text[pos..].chars().next();
    let end = pos + here.map_or(0, char::len_utf8);
    let at = Span::new(pos, end);
    let positives = match &e.variant {
        ErrorVariant::ParsingError { positives, .. } => positives.clone(),
        ErrorVariant::CustomError { .. } => Vec::new(),
    };
    let found = match here {
        None => "the end of the file".to_string(),
        Some('\n') | Some('\r') => "the end of the line".to_string(),
        Some(c) => format!("`{c}`"),
    };
    // The statement this error sits in, for the special cases below.
    let line_start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    let before = text[line_start..pos].trim_end();
    let open_paren = open_paren_before(text, pos);
    let in_rule_args = open_paren.is_some();
    if let Some(open) = open_paren
        && text[open..pos].contains('\n')
        && here.is_some_and(|c| c != ',' && c != ')')
    {
        // Newlines may stand inside `( )`, so a missing `)` shows up lines later.
        let (line, _) = crate::diag::SourceFile::new("", text).line_col(pos);
        return Diagnostic::new(
            Code::Syntax,
            Span::new(open, open + 1),
            "this `(` is never closed",
        )
        .with_help(format!(
            "close the rule with `)`; the parser was still inside it at {found} on line {line}"
        ));
    }

    if here == Some('(') && in_rule_args {
        return Diagnostic::new(
            Code::NestedRule,
            at,
            "a rule cannot stand inside another rule",
        )
        .with_help("write each rule on its own line: `Defer(x)` then `NoDefer(y)`");
    }
    if here == Some(')') && before.ends_with('(') {
        return Diagnostic::new(Code::EmptyRule, at, "this rule selects nothing")
            .with_help("name at least one tool, `skill:` or `source:` pattern: `Defer(name*)`");
    }
    if let Some(c @ ('?' | '[' | ']' | '{' | '}')) = here
        && in_rule_args
    {
        return Diagnostic::new(
            Code::Syntax,
            at,
            format!("`{c}` is not allowed in a bare pattern"),
        )
        .with_help(
            "`*` is the only wildcard; quote the pattern to match the character literally: `\"a?b\"`",
        );
    }
    if here.is_none() && in_rule_args {
        return Diagnostic::new(
            Code::Syntax,
            at,
            "unclosed `(`: the file ends inside a rule",
        )
        .with_help("close the rule with `)`");
    }
    let expected = describe_expected(&positives);
    let message = if expected.is_empty() {
        format!("unexpected {found}")
    } else {
        format!("expected {expected}, found {found}")
    };
    let mut d = Diagnostic::new(Code::Syntax, at, message);
    if in_rule_args && matches!(here, Some('\n' | '\r')) {
        d = d.with_help("separate selectors with `,` and close the rule with `)`");
    } else if positives.contains(&Rule::EOI) || positives.is_empty() {
        d = d.with_help("each statement goes on its own line");
    }
    d
}

/// The innermost `(` still open at `pos` (on this or an earlier line), if any.
fn open_paren_before(text: &str, pos: usize) -> Option<usize> {
    let mut open: Vec<usize> = Vec::new();
    let mut in_quote = false;
    let mut escaped = false;
    let mut in_comment = false;
    for (i, c) in text[..pos].char_indices() {
        if in_comment {
            in_comment = c != '\n';
            continue;
        }
        if in_quote {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_quote = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_quote = true,
            '#' => in_comment = true,
            '(' => open.push(i),
            ')' => {
                open.pop();
            }
            '{' | '}' => open.clear(),
            _ => {}
        }
    }
    open.pop()
}

/// The parser's expectations in a user's words, never a grammar rule's name.
fn describe_expected(rules: &[Rule]) -> String {
    let mut words: Vec<&str> = Vec::new();
    for r in rules {
        let w = match r {
            Rule::EOI => "the end of the line",
            Rule::kw_guard
            | Rule::kw_search
            | Rule::kw_mode
            | Rule::kw_bot
            | Rule::kw_when
            | Rule::key
            | Rule::rule_word
            | Rule::block
            | Rule::guard
            | Rule::search
            | Rule::setting
            | Rule::rule
            | Rule::mode_head
            | Rule::bot_head
            | Rule::when_head => "a rule, a setting or a block",
            Rule::word | Rule::quoted => "a name",
            Rule::any_bot => "`*`",
            Rule::negation => "`!`",
            Rule::integer | Rule::boolean | Rule::bare_value => "a value",
            Rule::skill_selector | Rule::source_selector | Rule::tool_selector | Rule::bare => {
                "a tool pattern, `skill:` or `source:` selector"
            }
            Rule::stray_close | Rule::unclosed => "`}`",
            Rule::lparen => "`(`",
            Rule::rparen => "`)`",
            Rule::comma => "`,`",
            Rule::equals => "`=`",
            Rule::lbrace => "`{`",
            _ => continue,
        };
        if !words.contains(&w) {
            words.push(w);
        }
    }
    match words.len() {
        0 => String::new(),
        1 => words[0].to_string(),
        n => format!("{} or {}", words[..n - 1].join(", "), words[n - 1]),
    }
}

#[cfg(test)]
mod tests {
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
}

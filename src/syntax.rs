//! Source text to spanned syntax tree: the only module that touches pest.
//!
//! Parsing never stops at the first mistake: the grammar's `recovery` rule
//! captures a bad item, the parser carries on, and each captured item is parsed
//! again on its own to say what was expected there.
//!
//! Every input is read in time linear in its length. The hand-written reader
//! (`fast`) reads the well-formed items, which are almost all of any file, and
//! asks pest about each item it cannot read, so that pest's cost per rule call
//! is paid only where something is wrong, and the grammar still decides what
//! is wrong. [`parse_with_pest`] reads a whole file with pest alone: the
//! reference that the two-part reading is tested against.

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
    if let Some(refused) = refuse_deep(text) {
        return refused;
    }
    let mut lower = Lower::new(text);
    let items = fast::read(text, &mut lower);
    (Ast { items }, lower.diags)
}

/// Both parsers and every pass over the tree recurse once per block level: a
/// file of thousands of `{` would overflow the stack, so it is refused before
/// parsing.
fn refuse_deep(text: &str) -> Option<(Ast, Vec<Diagnostic>)> {
    let at = too_deep(text)?;
    let d = Diagnostic::new(
        Code::Syntax,
        Span::new(at, at + 1),
        format!("blocks are nested more than {MAX_DEPTH} deep"),
    )
    .with_help("blocks nest at most two deep: a `when` block inside a `mode` or `bot` block");
    Some((Ast::default(), vec![d]))
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

/// Reads a whole file with pest alone. The same tree and diagnostics as
/// [`parse`], more slowly: the reference for tests and fuzzing.
#[doc(hidden)]
pub fn parse_with_pest(text: &str) -> (Ast, Vec<Diagnostic>) {
    if let Some(refused) = refuse_deep(text) {
        return refused;
    }
    let mut lower = Lower::new(text);
    let ast = match PolicyParser::parse(Rule::file, text) {
        Ok(mut pairs) => {
            let file = pairs.next().map(|p| p.into_inner());
            let items = file
                .into_iter()
                .flatten()
                .filter_map(|p| lower.item(p))
                .collect();
            Ast { items }
        }
        Err(e) => {
            // The recovery rules make this rare; report the parser's own finding.
            let d = lower.pest_error(&e, 0);
            lower.diags.push(d);
            Ast::default()
        }
    };
    (ast, lower.diags)
}

/// Where a pest error is, in its input.
fn error_offset(e: &pest::error::Error<Rule>) -> usize {
    match e.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((s, _)) => s,
    }
}

/// Lowers pest's pairs to the tree and turns recovered items into diagnostics.
pub(super) struct Lower<'t> {
    text: &'t str,
    /// Where the input of the pairs being lowered starts in `text`.
    base: usize,
    /// Line starts, built at most once and only for a message that names a line.
    lines: std::cell::OnceCell<Vec<usize>>,
    diags: Vec<Diagnostic>,
    /// How many items the reader asked pest about (for tests).
    asked: usize,
}

impl<'t> Lower<'t> {
    fn new(text: &'t str) -> Self {
        Lower {
            text,
            base: 0,
            lines: std::cell::OnceCell::new(),
            diags: Vec::new(),
            asked: 0,
        }
    }

    fn span(&self, p: &Pair<'_, Rule>) -> Span {
        let s = p.as_span();
        Span::new(self.base + s.start(), self.base + s.end())
    }

    /// The item at `start` that the reader could not read: what pest makes of
    /// it (an item, or an error and what recovery takes), and where it ends.
    fn item_at(&mut self, start: usize) -> (Option<Item>, usize) {
        self.asked += 1;
        let text = self.text;
        // Where the item ends if it is bad: read by hand where that is plain
        // (`fast::recovered_end`), else by the grammar's recovery, which reads
        // without failing wherever an item can start.
        let mut recovered = None;
        let item_span = match fast::recovered_end(text, start) {
            Some(end) => {
                // A rule left open at the end of its line, the commonest
                // half-typed line: where the reading fails is plain, and so
                // is the error there.
                if let Some(d) =
                    fast::rule_fails_at(text, start).and_then(|pos| self.place_error(start, pos))
                {
                    self.diags.push(d);
                    return (None, end.max(start + 1).min(text.len()));
                }
                Span::new(start, end)
            }
            None => {
                let found = PolicyParser::parse(Rule::recovery_here, &text[start..])
                    .ok()
                    .and_then(|mut pairs| pairs.next())
                    .and_then(|entry| entry.into_inner().next());
                let Some(pair) = found else {
                    // Cannot happen; skip the rest of the line rather than stop.
                    return (None, next_line_end(text, start).max(start + 1));
                };
                let s = pair.as_span();
                recovered = Some(pair);
                Span::new(start + s.start(), start + s.end())
            }
        };
        let outer = std::mem::replace(&mut self.base, start);
        let result = match self.read_lone(item_span) {
            Ok(pairs) => {
                let mut item = None;
                let mut end = item_span.end;
                for p in pairs {
                    end = start + p.as_span().end();
                    for inner in p.into_inner() {
                        end = end.max(start + inner.as_span().end());
                        item = self.item(inner).or(item);
                    }
                }
                (item, end)
            }
            Err(d) => {
                self.diags.push(d);
                if let Some(pair) = recovered {
                    self.recovered_bodies(pair);
                }
                (None, item_span.end)
            }
        };
        self.base = outer;
        (result.0, result.1.max(start + 1).min(text.len()))
    }

    /// The text after a block's `}` on its line, at `start`: an error; returns
    /// where it ends.
    fn after_block_at(&mut self, start: usize) -> usize {
        self.asked += 1;
        // The same `recovered` rule as a bad item: plain text is read by hand.
        if let Some(end) = fast::recovered_end(self.text, start) {
            self.after_block_error(start);
            return end.max(start + 1);
        }
        let Ok(mut pairs) = PolicyParser::parse(Rule::after_block_here, &self.text[start..]) else {
            return next_line_end(self.text, start).max(start + 1);
        };
        let Some(entry) = pairs.next() else {
            return self.text.len();
        };
        let end = start + entry.as_span().end();
        let outer = std::mem::replace(&mut self.base, start);
        for p in entry.into_inner() {
            let _ = self.item(p);
        }
        self.base = outer;
        end.max(start + 1).min(self.text.len())
    }

    fn after_block_error(&mut self, at: usize) {
        let d = Diagnostic::new(
            Code::Syntax,
            Span::new(
                at,
                at + self.text[at..].chars().next().map_or(0, char::len_utf8),
            ),
            format!("expected the end of the line, found {}", self.found(at)),
        )
        .with_help("a block ends at its `}`; each statement goes on its own line");
        self.diags.push(d);
    }

    fn stray_close(&mut self, at: Span) {
        self.diags.push(
            Diagnostic::new(Code::StrayClose, at, "unexpected `}`: no block is open")
                .with_help("remove it, or open a block before it (`mode NAME {`)"),
        );
    }

    fn unclosed(&mut self, head: Span) {
        self.diags.push(
            Diagnostic::new(Code::UnclosedBlock, head, "this block is never closed")
                .with_help("add a `}` after the block's last line"),
        );
    }

    fn item(&mut self, p: Pair<'_, Rule>) -> Option<Item> {
        match p.as_rule() {
            Rule::block => self.block(p).map(Item::Block),
            Rule::guard | Rule::search | Rule::setting | Rule::rule => {
                Some(Item::Statement(self.statement(p)))
            }
            Rule::stray_close => {
                let at = self.span(&p);
                self.stray_close(at);
                None
            }
            Rule::recovery => {
                let d = self.recovered_error(self.span(&p));
                self.diags.push(d);
                self.recovered_bodies(p);
                None
            }
            Rule::after_block => {
                self.after_block_error(self.span(&p).start);
                self.recovered_bodies(p);
                None
            }
            _ => None,
        }
    }

    /// Reports errors inside the body of a block whose header was bad.
    fn recovered_bodies(&mut self, p: Pair<'_, Rule>) {
        for inner in p.into_inner() {
            if inner.as_rule() == Rule::recovered_body {
                for item in inner.into_inner() {
                    let _ = self.item(item);
                }
            }
        }
    }

    fn block(&mut self, p: Pair<'_, Rule>) -> Option<Block> {
        let block_span = self.span(&p);
        let mut inner = p.into_inner();
        let head_pair = inner.next()?;
        let head_span = self.span(&head_pair);
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
                self.unclosed(head_span);
            } else if let Some(item) = self.item(child) {
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

    /// Re-parses a recovered item on its own to say what was expected where.
    fn recovered_error(&self, item: Span) -> Diagnostic {
        match self.read_lone(item) {
            Err(d) => d,
            // Cannot happen (the same rules failed on the same input in the
            // file parse), but a wrong diagnostic is better than none.
            Ok(_) => Diagnostic::new(Code::Syntax, item, "this line could not be read"),
        }
    }

    /// Reads one item with pest, starting where `item` (what recovery would
    /// take) starts: its pairs, or the diagnostic for why it is not an item.
    ///
    /// pest's error looks for the line of the failure from the end of its
    /// input backwards, so the input given ends near the failure: the item,
    /// and the next line that holds anything (a rule's reading stops at most
    /// one token into it). Where the reading did run into that end, the input
    /// grows by doubling, so each item still costs time linear in its reach.
    fn read_lone(&self, item: Span) -> Result<pest::iterators::Pairs<'t, Rule>, Diagnostic> {
        let text: &'t str = self.text;
        let (start, len) = (item.start, text.len());
        let mut end = next_line_end(text, item.end);
        loop {
            match PolicyParser::parse(Rule::lone_item, &text[start..end]) {
                Err(e) if start + error_offset(&e) < end || end == len => {
                    return Err(self.pest_error(&e, start));
                }
                Ok(pairs) if end == len || pairs.as_str().len() < end - start => {
                    return Ok(pairs);
                }
                // The input ended where the reading stopped: read further.
                _ => end = next_line_end(text, (start + 2 * (end - start)).min(len)),
            }
        }
    }

    /// What stands at `pos`, in a message's words.
    fn found(&self, pos: usize) -> String {
        match self.text[pos..].chars().next() {
            None => "the end of the file".to_string(),
            Some('\n') | Some('\r') => "the end of the line".to_string(),
            Some(c) => format!("`{}`", c.escape_debug()),
        }
    }

    /// The 1-based line of a byte offset.
    fn line_of(&self, pos: usize) -> usize {
        let starts = self
            .lines
            .get_or_init(|| crate::diag::line_starts(self.text));
        starts.partition_point(|&s| s <= pos)
    }

    /// The errors that depend on the failure's place alone, not on what pest
    /// expected there, when the reading of the item at `base` fails at
    /// `pos`, so that the reader can say them without asking pest: a rule
    /// whose `)` is missing (newlines may stand inside `( )`, so that shows
    /// up lines later, or at the end of the file), a rule inside a rule, and
    /// `()`. `None` for any other error.
    fn place_error(&self, base: usize, pos: usize) -> Option<Diagnostic> {
        let text = self.text;
        let here = text[pos..].chars().next();
        if here == Some(')') {
            let line_start = text[base..pos]
                .rfind(['\n', '\r'])
                .map_or(base, |i| base + i + 1);
            if text[line_start..pos].trim_end().ends_with('(') {
                return Some(
                    Diagnostic::new(
                        Code::EmptyRule,
                        Span::new(pos, pos + 1),
                        "this rule selects nothing",
                    )
                    .with_help(
                        "name at least one tool, `skill:`, `source:` or `hint:` pattern: `Defer(name*)`",
                    ),
                );
            }
        }
        let open = base + open_paren_before(&text[base..pos])?;
        match here {
            None => Some(
                Diagnostic::new(
                    Code::Syntax,
                    Span::new(pos, pos),
                    "unclosed `(`: the file ends inside a rule",
                )
                .with_help("close the rule with `)`"),
            ),
            Some(c) if c != ',' && c != ')' && text[open..pos].contains(['\n', '\r']) => {
                let (found, line) = (self.found(pos), self.line_of(pos));
                Some(
                    Diagnostic::new(
                        Code::Syntax,
                        Span::new(open, open + 1),
                        "this `(` is never closed",
                    )
                    .with_help(format!(
                        "close the rule with `)`; the parser was still inside it at {found} on line {line}"
                    )),
                )
            }
            // Not after a line break: a `(` where a selector or the rule's
            // end was due.
            Some('(') => Some(
                Diagnostic::new(
                    Code::NestedRule,
                    Span::new(pos, pos + 1),
                    "a rule cannot stand inside another rule",
                )
                .with_help("write each rule on its own line: `Defer(x)` then `NoDefer(y)`"),
            ),
            Some(_) => None,
        }
    }

    /// A diagnostic from pest's error for an input that starts at `base`.
    fn pest_error(&self, e: &pest::error::Error<Rule>, base: usize) -> Diagnostic {
        let text = self.text;
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
        if let Some(d) = self.place_error(base, pos) {
            return d;
        }
        let found = self.found(pos);
        // Only the item's own text is looked at, never the file before it.
        let in_rule_args = open_paren_before(&text[base..pos]).is_some();
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
        if let Some(d) = misspelled_block(&text[base..], base) {
            return d;
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
}

/// `mdoe review {`: an item that starts with a word close to a block
/// keyword (`mode`, `bot`, `when`), another word and a `{` on its line gets
/// the did-you-mean misspelled rule words get, where the parser would only
/// say that it expected `(` or `=`.
fn misspelled_block(item: &str, base: usize) -> Option<Diagnostic> {
    let line = item.lines().next()?;
    let word_len = line
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(line.len());
    let word = &line[..word_len];
    let rest = line[word_len..].trim_end();
    if word.is_empty() || !rest.starts_with(char::is_whitespace) || !rest.ends_with('{') {
        return None;
    }
    let keywords = ["mode", "bot", "when"];
    if keywords.contains(&word) {
        return None;
    }
    let help = crate::diag::did_you_mean(word, keywords)?;
    let span = Span::new(base, base + word_len);
    Some(
        Diagnostic::new(Code::Syntax, span, format!("unknown block `{word}`"))
            .with_help(format!(
                "{help}; blocks are `mode NAME {{`, `bot NAME {{` and `when FLAG {{`"
            ))
            .with_suggestions(span, crate::diag::closest(word, keywords)),
    )
}

impl Lower<'_> {
    fn statement(&self, p: Pair<'_, Rule>) -> Statement {
        let stmt_span = self.span(&p);
        let kind = match p.as_rule() {
            Rule::guard => StatementKind::Guard(self.selectors_in(p)),
            Rule::search => StatementKind::Search(self.selectors_in(p)),
            Rule::rule => {
                let mut inner = p.into_inner();
                let (word, word_span) = match inner.next() {
                    Some(w) => (w.as_str().to_string(), self.span(&w)),
                    None => (String::new(), stmt_span),
                };
                StatementKind::Rule {
                    word,
                    word_span,
                    selectors: inner
                        .filter(is_selector)
                        .map(|s| self.selector(s))
                        .collect(),
                }
            }
            _ => {
                // Rule::setting: key, then one value.
                let mut inner = p.into_inner().filter(|p| p.as_rule() != Rule::equals);
                let key = inner.next();
                let value = inner.next();
                let (key, key_span) = key.map_or((String::new(), stmt_span), |k| {
                    (k.as_str().to_string(), self.span(&k))
                });
                let (value, value_span) = match value {
                    Some(v) => {
                        let vs = self.span(&v);
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

    fn selectors_in(&self, p: Pair<'_, Rule>) -> Vec<Selector> {
        p.into_inner()
            .filter(is_selector)
            .map(|s| self.selector(s))
            .collect()
    }

    fn selector(&self, p: Pair<'_, Rule>) -> Selector {
        let sel_span = self.span(&p);
        let kind = match p.as_rule() {
            Rule::skill_selector => SelectorKind::Skill,
            Rule::source_selector => SelectorKind::Source,
            Rule::hint_selector => SelectorKind::Hint,
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
}

fn is_selector(p: &Pair<'_, Rule>) -> bool {
    matches!(
        p.as_rule(),
        Rule::skill_selector | Rule::source_selector | Rule::hint_selector | Rule::tool_selector
    )
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

/// The end (after its line break) of the first line at or after `from` that
/// holds more than white space and a comment.
fn next_line_end(text: &str, from: usize) -> usize {
    let bytes = text.as_bytes();
    let line_end = |i: usize| {
        bytes[i..]
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
            .map_or(bytes.len(), |n| i + n)
    };
    let mut i = from;
    loop {
        let mut j = i;
        while matches!(bytes.get(j), Some(b' ' | b'\t')) {
            j += 1;
        }
        if bytes.get(j) == Some(&b'#') {
            j = line_end(j);
        }
        match crate::diag::line_break_len(bytes, j) {
            // Nothing but white space and a comment: on to the next line.
            Some(n) => i = j + n,
            None if j >= bytes.len() => return bytes.len(),
            None => break,
        }
    }
    let end = line_end(i);
    end + crate::diag::line_break_len(bytes, end).unwrap_or(0)
}

/// The offset of the innermost `(` still open at the end of an item's text.
fn open_paren_before(text: &str) -> Option<usize> {
    let mut open: Vec<usize> = Vec::new();
    let mut in_quote = false;
    let mut escaped = false;
    let mut in_comment = false;
    for (i, c) in text.char_indices() {
        if in_comment {
            in_comment = !matches!(c, '\n' | '\r');
            continue;
        }
        if in_quote {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_quote = false,
                (false, '\n' | '\r') => in_quote = false,
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
            Rule::skill_selector
            | Rule::source_selector
            | Rule::hint_selector
            | Rule::tool_selector
            | Rule::bare => "a tool pattern, `skill:`, `source:` or `hint:` selector",
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
mod tests;

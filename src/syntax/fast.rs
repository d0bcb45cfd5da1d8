//! A hand-written reader of the grammar (`grammar/policy.pest`), in front of
//! pest.
//!
//! pest pays per rule call (stack probing, error-attempt tracking, a token
//! queue), which made a 10,000-line policy take ~50 ms to read, and a file of
//! half-typed lines far more. Almost every item of almost every file is well
//! formed, so this reader walks the same grammar directly over the bytes and
//! builds the identical tree, spans included. It reads only what it is sure
//! of: at an item that is malformed, unusual or ambiguous it asks pest about
//! that item alone ([`Lower::item_at`]), which reads it or recovers from it
//! and says what is wrong, and carries on after it. So the grammar stays the
//! single source of truth for what is wrong, and every byte is read a bounded
//! number of times. A differential test checks that the tree and diagnostics
//! are those of pest reading the whole file.

use super::Lower;
use crate::ast::{
    Block, BlockHead, Item, Selector, SelectorKind, Span, Statement, StatementKind, Value,
};

/// The items of a file, with diagnostics for the rest pushed to `lower`.
pub(super) fn read<'a>(text: &'a str, lower: &mut Lower<'a>) -> Vec<Item> {
    let mut r = Reader {
        s: text.as_bytes(),
        text,
        pos: 0,
        lower,
    };
    r.items(None)
}

/// Where the grammar's `recovered` rule, at `start`, would end, in the plain
/// case of text without `#` and without a body in `{ }` (recovery reads
/// quotes as any other character): the rest of the line (up to a `}`), and
/// when it opens a `(`, the following lines until one that starts an item
/// (after blank and comment lines). `None` where the rule's finer points (a
/// body in braces, a comment that hides a brace) could matter: pest reads
/// those.
///
/// The extent of every bad item is needed, and asking pest for it costs about
/// a quarter of what reading a bad item costs. The differential tests hold
/// this to the grammar.
pub(super) fn recovered_end(text: &str, start: usize) -> Option<usize> {
    let s = text.as_bytes();
    // `line_rest`: up to a line break or a brace; `None` where a `#` stands
    // in it (a comment may hide a brace), or where a `{` opens a body after it.
    let part_end = |from: usize| -> Option<usize> {
        let n = s[from..]
            .iter()
            .position(|&b| is_break(b) || matches!(b, b'{' | b'}' | b'#'))
            .map_or(s.len(), |n| from + n);
        match s.get(n) {
            Some(b'#' | b'{') => None,
            _ => Some(n),
        }
    };
    if start >= s.len() || matches!(s[start], b'{' | b'}') || is_break(s[start]) {
        return None;
    }
    let mut end = part_end(start)?;
    if !s[start..end].contains(&b'(') || s.get(end) == Some(&b'}') {
        return Some(end);
    }
    loop {
        // `NEWLINE+`, with white space and comments between the breaks.
        let mut k = end;
        while let Some(n) = crate::diag::line_break_len(s, k) {
            k += n;
            while matches!(s.get(k), Some(b' ' | b'\t')) {
                k += 1;
            }
            if s.get(k) == Some(&b'#') {
                while s.get(k).is_some_and(|&b| !is_break(b)) {
                    k += 1;
                }
            }
        }
        if k == end || k >= s.len() || s[k] == b'{' || starts_item(s, k) {
            return Some(end);
        }
        end = part_end(k)?;
        if s.get(end) == Some(&b'}') {
            return Some(end);
        }
    }
}

/// Where reading the item at `start` fails, in the plain cases of a rule
/// whose error depends on that place alone: a `(` among its selectors (a
/// rule inside a rule), `()` (a rule that selects nothing), or a line that
/// ends inside its `( )` (`word(a, b` and a line break, then blank lines,
/// then anything but `,` or `)`, or the end of the file: the grammar lets
/// the rule go on over line breaks, so pest fails at that first character
/// after them). `None` for any other shape (quotes, comments, a trailing
/// comma at the end of a line, a selector on the next line): pest reads
/// those.
pub(super) fn rule_fails_at(text: &str, start: usize) -> Option<usize> {
    let s = text.as_bytes();
    let blanks = |mut i: usize| {
        while matches!(s.get(i), Some(b' ' | b'\t')) {
            i += 1;
        }
        i
    };
    let run = |mut i: usize, f: fn(u8) -> bool| {
        while s.get(i).copied().is_some_and(f) {
            i += 1;
        }
        i
    };
    // `rule_word`, then `(`.
    if !s.get(start)?.is_ascii_alphabetic() {
        return None;
    }
    let mut i = blanks(run(start, |b| b.is_ascii_alphanumeric() || b == b'_'));
    if s.get(i) != Some(&b'(') {
        return None;
    }
    // Bare selectors separated by commas, all on the rule's line.
    let mut first = true;
    loop {
        let from = blanks(i + 1);
        match s.get(from) {
            // Where a selector may start, a `(` fails at once.
            Some(b'(') => return Some(from),
            Some(b')') if first => return Some(from),
            _ => {}
        }
        let end = run(from, is_name_char);
        if end == from {
            return None;
        }
        first = false;
        i = blanks(end);
        if s.get(i) != Some(&b',') {
            break;
        }
    }
    match s.get(i) {
        None | Some(b'(') => return Some(i),
        _ => {}
    }
    // The line ends there; blank lines after it are read as the rule's.
    crate::diag::line_break_len(s, i)?;
    while let Some(n) = crate::diag::line_break_len(s, i) {
        i = blanks(i + n);
    }
    match s.get(i) {
        Some(b',' | b')' | b'#') => None,
        _ => Some(i),
    }
}

/// The grammar's `item_start` at `i`: `}`, a keyword, `word(` or `key =`.
fn starts_item(s: &[u8], i: usize) -> bool {
    if s[i] == b'}' {
        return true;
    }
    let word_end = |from: usize, first: fn(u8) -> bool| {
        if !s.get(from).copied().is_some_and(first) {
            return None;
        }
        let mut j = from + 1;
        while s
            .get(j)
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
        {
            j += 1;
        }
        Some(j)
    };
    let keyword = ["guard", "search", "mode", "bot", "when"].iter().any(|kw| {
        s.len() >= i + kw.len()
            && s[i..i + kw.len()].eq_ignore_ascii_case(kw.as_bytes())
            && !s.get(i + kw.len()).copied().is_some_and(is_name_char)
    });
    let followed_by = |j: usize, c: u8| {
        let mut j = j;
        while matches!(s.get(j), Some(b' ' | b'\t')) {
            j += 1;
        }
        s.get(j) == Some(&c)
    };
    keyword
        || word_end(i, |b| b.is_ascii_alphabetic()).is_some_and(|j| followed_by(j, b'('))
        || word_end(i, |b| b.is_ascii_alphabetic() || b == b'_')
            .is_some_and(|j| followed_by(j, b'='))
}

fn is_name_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/' | b':' | b'*')
}

fn is_word_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')
}

/// The first byte of the grammar's `NEWLINE` (`\n`, `\r\n` or `\r`).
fn is_break(b: u8) -> bool {
    b == b'\n' || b == b'\r'
}

struct Reader<'a, 'l> {
    s: &'a [u8],
    text: &'a str,
    pos: usize,
    lower: &'l mut Lower<'a>,
}

impl<'a> Reader<'a, '_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    /// pest's implicit `(WHITESPACE | COMMENT)*`.
    fn skip(&mut self) {
        while let Some(b) = self.peek() {
            match b {
                b' ' | b'\t' => self.pos += 1,
                b'#' => {
                    while self.peek().is_some_and(|b| !is_break(b)) {
                        self.pos += 1;
                    }
                }
                _ => break,
            }
        }
    }

    /// `skip` with line breaks as well, as between the tokens of a rule's
    /// `( )` and between items.
    fn skip_lines(&mut self) {
        loop {
            self.skip();
            match crate::diag::line_break_len(self.s, self.pos) {
                Some(n) => self.pos += n,
                None => break,
            }
        }
    }

    /// The grammar's `end_of_item`: `&(NEWLINE | "}" | EOI)`.
    fn at_end_of_item(&self) -> bool {
        self.peek().is_none_or(|b| is_break(b) || b == b'}')
    }

    fn run(&mut self, f: impl Fn(u8) -> bool) -> Span {
        let start = self.pos;
        while self.peek().is_some_and(&f) {
            self.pos += 1;
        }
        Span::new(start, self.pos)
    }

    fn str(&self, span: Span) -> &'a str {
        &self.text[span.start..span.end]
    }

    /// Items up to the end of the file (top level, `block` is `None`) or to
    /// the `}` that closes the block whose header is `block` (consumed).
    fn items(&mut self, block: Option<Span>) -> Vec<Item> {
        let mut items = Vec::new();
        loop {
            self.skip_lines();
            let start = self.pos;
            match (self.peek(), block) {
                (None, Some(head)) => {
                    self.lower.unclosed(head);
                    return items;
                }
                (None, None) => return items,
                (Some(b'}'), Some(_)) => {
                    self.pos += 1;
                    return items;
                }
                (Some(b'}'), None) => {
                    self.lower.stray_close(Span::new(start, start + 1));
                    self.pos += 1;
                    continue;
                }
                _ => {}
            }
            match self.item() {
                Some(block @ Item::Block(_)) => {
                    items.push(block);
                    self.skip();
                    if !self.at_end_of_item() {
                        self.pos = self.lower.after_block_at(self.pos);
                    }
                    continue;
                }
                Some(statement) => {
                    self.skip();
                    if self.at_end_of_item() {
                        items.push(statement);
                        continue;
                    }
                }
                None => {}
            }
            // Not read here: pest reads it, or recovers and says why not.
            let (item, end) = self.lower.item_at(start);
            items.extend(item);
            self.pos = end;
        }
    }

    fn item(&mut self) -> Option<Item> {
        let start = self.pos;
        let word = self.run(is_name_char);
        let w = self.str(word);
        let is = |kw: &str| w.eq_ignore_ascii_case(kw);
        if is("mode") || is("bot") || is("when") {
            return self.block(start, word).map(Item::Block);
        }
        if is("guard") || is("search") {
            let (selectors, end) = self.selector_list()?;
            let kind = if is("guard") {
                StatementKind::Guard(selectors)
            } else {
                StatementKind::Search(selectors)
            };
            return Some(Item::Statement(Statement {
                kind,
                span: Span::new(start, end),
            }));
        }
        // A setting's key or a rule's word: letters, digits and `_` only.
        self.pos = start;
        let word = self.run(|b| b.is_ascii_alphanumeric() || b == b'_');
        let first = self.s.get(word.start).copied().unwrap_or(b'0');
        if word.start == word.end || first.is_ascii_digit() || self.peek().is_some_and(is_name_char)
        {
            return None;
        }
        self.skip();
        match self.peek() {
            Some(b'=') => self.setting(word).map(Item::Statement),
            Some(b'(') if self.s[word.start].is_ascii_alphabetic() => {
                self.rule(word).map(Item::Statement)
            }
            _ => None,
        }
    }

    fn block(&mut self, start: usize, keyword: Span) -> Option<Block> {
        let kw = self.str(keyword).to_ascii_lowercase();
        self.skip();
        let head = match kw.as_str() {
            "mode" => BlockHead::Mode(self.block_name()?),
            "bot" if self.peek() == Some(b'*') => {
                self.pos += 1;
                BlockHead::Bot(None)
            }
            "bot" => BlockHead::Bot(Some(self.block_name()?)),
            _ => {
                let negated = self.peek() == Some(b'!');
                if negated {
                    self.pos += 1;
                    self.skip();
                }
                BlockHead::When {
                    flag: self.block_name()?,
                    negated,
                }
            }
        };
        let head_span = Span::new(start, self.pos);
        self.skip();
        if self.peek() != Some(b'{') {
            return None;
        }
        self.pos += 1;
        let items = self.items(Some(head_span));
        Some(Block {
            head,
            head_span,
            items,
            span: Span::new(start, self.pos),
        })
    }

    /// `quoted | word`, unquoted.
    fn block_name(&mut self) -> Option<String> {
        if self.peek() == Some(b'"') {
            return self.quoted().map(|(s, _)| s);
        }
        let name = self.run(is_word_char);
        if name.start == name.end || self.peek().is_some_and(is_name_char) {
            // `mode a:b {` is not a block header; let pest say so.
            return None;
        }
        Some(self.str(name).to_string())
    }

    /// A double-quoted string: its value and its span.
    fn quoted(&mut self) -> Option<(String, Span)> {
        let start = self.pos;
        self.pos += 1;
        let mut out = String::new();
        let mut from = self.pos;
        loop {
            match self.peek()? {
                b'"' => break,
                b'\n' | b'\r' => return None,
                b'\\' => match self.s.get(self.pos + 1) {
                    Some(&c @ (b'"' | b'\\')) => {
                        out.push_str(&self.text[from..self.pos]);
                        out.push(c as char);
                        self.pos += 2;
                        from = self.pos;
                    }
                    _ => return None,
                },
                _ => self.pos += 1,
            }
        }
        out.push_str(&self.text[from..self.pos]);
        self.pos += 1;
        Some((out, Span::new(start, self.pos)))
    }

    fn selector(&mut self) -> Option<Selector> {
        let start = self.pos;
        let rest = &self.s[start..];
        let starts = |p: &[u8]| {
            rest.get(..p.len())
                .is_some_and(|r| r.eq_ignore_ascii_case(p))
        };
        let (kind, prefix) = if starts(b"skill:") {
            (SelectorKind::Skill, 6)
        } else if starts(b"source:") {
            (SelectorKind::Source, 7)
        } else if starts(b"hint:") {
            (SelectorKind::Hint, 5)
        } else {
            (SelectorKind::Tool, 0)
        };
        self.pos += prefix;
        let (pattern, quoted) = match self.peek()? {
            b'"' => (self.quoted()?.0, true),
            b if is_name_char(b) => {
                let bare = self.run(is_name_char);
                (self.str(bare).to_string(), false)
            }
            // `skill:` with no pattern after it is a tool pattern to pest.
            _ => return None,
        };
        Some(Selector {
            kind,
            pattern,
            quoted,
            span: Span::new(start, self.pos),
        })
    }

    /// `selector ~ ("," ~ selector)*` on one line, after `guard` or `search`,
    /// and where the statement ends. As in pest, the white space and comment
    /// after a lone selector belong to the statement (the skip before the
    /// repetition is kept when it repeats zero times); after a second
    /// selector they do not.
    fn selector_list(&mut self) -> Option<(Vec<Selector>, usize)> {
        self.skip();
        let mut out = vec![self.selector()?];
        self.skip();
        if self.peek() != Some(b',') {
            return Some((out, self.pos));
        }
        loop {
            self.pos += 1;
            self.skip();
            out.push(self.selector()?);
            let end = self.pos;
            self.skip();
            if self.peek() != Some(b',') {
                self.pos = end;
                return Some((out, end));
            }
        }
    }

    /// `Word(sel, ...)`: newlines and comments may stand between the tokens,
    /// and one trailing comma before the `)`.
    fn rule(&mut self, word: Span) -> Option<Statement> {
        self.pos += 1; // `(`
        self.skip_lines();
        let mut selectors = vec![self.selector()?];
        loop {
            self.skip_lines();
            match self.peek()? {
                b')' => break,
                b',' => {
                    self.pos += 1;
                    self.skip_lines();
                    if self.peek()? == b')' {
                        break;
                    }
                    selectors.push(self.selector()?);
                }
                _ => return None,
            }
        }
        self.pos += 1; // `)`
        Some(Statement {
            kind: StatementKind::Rule {
                word: self.str(word).to_string(),
                word_span: word,
                selectors,
            },
            span: Span::new(word.start, self.pos),
        })
    }

    /// `key = value`.
    fn setting(&mut self, key: Span) -> Option<Statement> {
        self.pos += 1; // `=`
        self.skip();
        let (value, value_span) = if self.peek()? == b'"' {
            let (s, span) = self.quoted()?;
            (Value::Quoted(s), span)
        } else {
            let v = self.run(is_name_char);
            if v.start == v.end {
                return None;
            }
            let text = self.str(v);
            let digits = text.strip_prefix('-').unwrap_or(text);
            let value = if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                Value::Integer(text.to_string())
            } else if text.eq_ignore_ascii_case("true") || text.eq_ignore_ascii_case("false") {
                Value::Bool(text.eq_ignore_ascii_case("true"))
            } else {
                Value::Bare(text.to_string())
            };
            (value, v)
        };
        Some(Statement {
            kind: StatementKind::Setting {
                key: self.str(key).to_string(),
                key_span: key,
                value,
                value_span,
            },
            span: Span::new(key.start, value_span.end),
        })
    }
}

#[cfg(test)]
#[path = "fast_tests.rs"]
mod tests;

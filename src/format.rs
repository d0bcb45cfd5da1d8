//! The canonical form of a policy file, as `policy fmt` writes it.
//!
//! Keywords and rule words in canonical case (`Defer`, `NoDefer`, `Hide`,
//! `Grant`; `guard`, `search`, `mode`, `bot`, `when` and setting keys in lower
//! case), one statement per line, two spaces of indentation per block, `, `
//! between selectors, quotes only where a pattern or name needs them, word
//! values quoted and numbers and booleans bare. Comments stay where they were:
//! a comment on a line of its own before the item it precedes, a comment at the
//! end of a line after that line's item (consecutive ones aligned). Runs of
//! blank lines between items become one; blank lines at the start and end of a
//! block go. A rule that holds comments between its selectors keeps one
//! selector per line, so the comments keep their places.
//!
//! Formatting works from the syntax tree and the comments found beside it, and
//! the result is checked before it is returned: it must parse to the same rules
//! and settings, with the same comments. Formatting twice changes nothing.

use std::fmt;

use crate::ast::{Ast, Block, BlockHead, Item, Selector, SelectorKind, Statement, StatementKind};
use crate::diag::{Severity, SourceFile};
use crate::policy::{LoadErrors, Policy, RuleKind};
use crate::settings::Key;

/// Why a file was not formatted.
#[derive(Debug, Clone)]
pub enum FormatError {
    /// The policy has errors: it is not formatted until they are fixed.
    Invalid(LoadErrors),
    /// The formatted text would not mean the same: a bug in the formatter.
    /// Nothing should be written.
    Unfaithful { formatted: String, reason: String },
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FormatError::Invalid(e) => write!(f, "{e}"),
            FormatError::Unfaithful { reason, .. } => write!(
                f,
                "the formatted policy would differ from the original ({reason}); nothing was changed. This is a bug in the formatter"
            ),
        }
    }
}

impl std::error::Error for FormatError {}

/// The canonical text of a policy; `name` is used in diagnostics only. A
/// leading byte-order mark is kept: it is the file's encoding, not its form.
pub fn format(name: &str, text: &str) -> Result<String, FormatError> {
    let (bom, text) = crate::input::split_bom(text);
    format_text(name, text).map(|formatted| format!("{bom}{formatted}"))
}

fn format_text(name: &str, text: &str) -> Result<String, FormatError> {
    let source = SourceFile::new(name, text);
    let (original, diagnostics) = Policy::parse_with_diagnostics(source.clone());
    if diagnostics.iter().any(|d| d.severity == Severity::Error) {
        return Err(FormatError::Invalid(LoadErrors {
            source,
            diagnostics,
        }));
    }
    // The formatter reads lines, so it reads them with every line break the
    // grammar knows (`\r\n` and a lone `\r` too) written as `\n`; the
    // canonical form ends lines with `\n`.
    let text = &*crate::diag::normalize_line_breaks(text);
    let (ast, _) = crate::syntax::parse(text);
    let formatted = Formatter::new(text).file(&ast);
    let unfaithful = |reason: String| FormatError::Unfaithful {
        formatted: formatted.clone(),
        reason,
    };
    let again = Policy::parse(name, formatted.as_str())
        .map_err(|e| unfaithful(format!("it does not parse: {e}")))?;
    same_meaning(&original, &again).map_err(unfaithful)?;
    let before: Vec<String> = comments(text).into_iter().map(|c| c.text).collect();
    let after: Vec<String> = comments(&formatted).into_iter().map(|c| c.text).collect();
    if before != after {
        return Err(unfaithful(
            "comments were lost or moved out of order".into(),
        ));
    }
    Ok(formatted)
}

/// Whether two policies have the same rules, settings and blocks (spans and
/// spelling aside).
pub fn same_meaning(a: &Policy, b: &Policy) -> Result<(), String> {
    let rules = |p: &Policy| -> Vec<String> {
        p.rules
            .iter()
            .map(|r| {
                let sels: Vec<String> = r
                    .selectors
                    .iter()
                    .map(|s| format!("{:?}:{:?}", s.kind, s.pattern))
                    .collect();
                format!("{:?} {:?} {:?} {}", r.kind, r.scope, r.when, sels.join(","))
            })
            .collect()
    };
    let settings = |p: &Policy| -> Vec<String> {
        p.settings
            .iter()
            .map(|s| format!("{:?} {:?} {:?} {:?}", s.key, s.value, s.scope, s.when))
            .collect()
    };
    let (ra, rb) = (rules(a), rules(b));
    if let Some(i) = (0..ra.len().max(rb.len())).find(|&i| ra.get(i) != rb.get(i)) {
        return Err(format!("rule {} differs", i + 1));
    }
    let (sa, sb) = (settings(a), settings(b));
    if let Some(i) = (0..sa.len().max(sb.len())).find(|&i| sa.get(i) != sb.get(i)) {
        return Err(format!("setting {} differs", i + 1));
    }
    if a.modes != b.modes || a.bots != b.bots || a.has_any_bot != b.has_any_bot {
        return Err("the blocks differ".into());
    }
    Ok(())
}

/// A `#` comment: where it starts and ends (before the line break), and its
/// text with trailing white space removed.
#[derive(Debug, Clone)]
struct Comment {
    start: usize,
    end: usize,
    text: String,
}

/// Every comment in the text, skipping `#` inside quoted strings.
fn comments(text: &str) -> Vec<Comment> {
    let mut out = Vec::new();
    let mut in_quote = false;
    let mut escaped = false;
    let mut iter = text.char_indices();
    while let Some((i, c)) = iter.next() {
        if in_quote {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_quote = false,
                (false, '\n') => in_quote = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_quote = true,
            '#' => {
                let end = text[i..].find('\n').map_or(text.len(), |n| i + n);
                let body = text[i..end].trim_end();
                out.push(Comment {
                    start: i,
                    end: i + body.len(),
                    text: body.to_string(),
                });
                // Skip to the end of the line.
                for (j, _) in iter.by_ref() {
                    if j + 1 >= end {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// One output line: indentation depth, code and an end-of-line comment, or a
/// comment alone, or a blank line.
enum Line {
    Blank,
    Code {
        depth: usize,
        code: String,
        comment: Option<String>,
    },
}

struct Formatter<'a> {
    text: &'a str,
    comments: Vec<Comment>,
    /// The first comment not yet placed.
    next: usize,
    lines: Vec<Line>,
}

impl<'a> Formatter<'a> {
    fn new(text: &'a str) -> Self {
        Formatter {
            text,
            comments: comments(text),
            next: 0,
            lines: Vec::new(),
        }
    }

    fn file(mut self, ast: &Ast) -> String {
        self.items(&ast.items, 0, self.text.len());
        render(&self.lines)
    }

    /// The next comment if it starts before `limit`.
    fn take_before(&mut self, limit: usize) -> Option<Comment> {
        let c = self.comments.get(self.next).filter(|c| c.start < limit)?;
        self.next += 1;
        Some(c.clone())
    }

    /// The next comment if only spaces stand between `from` and it.
    fn take_trailing(&mut self, from: usize) -> Option<Comment> {
        let c = self.comments.get(self.next)?;
        if c.start >= from
            && self.text[from..c.start]
                .chars()
                .all(|ch| ch == ' ' || ch == '\t')
        {
            self.next += 1;
            return Some(c.clone());
        }
        None
    }

    /// One blank line where the source has at least one between two elements.
    fn gap(&mut self, prev_end: Option<usize>, next_start: usize) {
        if let Some(p) = prev_end
            && self.text[p..next_start].matches('\n').count() >= 2
        {
            self.lines.push(Line::Blank);
        }
    }

    fn own_line_comment(&mut self, depth: usize, c: &Comment) {
        self.lines.push(Line::Code {
            depth,
            code: String::new(),
            comment: Some(c.text.clone()),
        });
    }

    /// A list of items (the file, or a block's body) that ends at `limit`.
    fn items(&mut self, items: &[Item], depth: usize, limit: usize) {
        let mut prev_end: Option<usize> = None;
        for item in items {
            let start = match item {
                Item::Statement(s) => s.span.start,
                Item::Block(b) => b.span.start,
            };
            while let Some(c) = self.take_before(start) {
                self.gap(prev_end, c.start);
                self.own_line_comment(depth, &c);
                prev_end = Some(c.end);
            }
            self.gap(prev_end, start);
            prev_end = Some(match item {
                Item::Statement(s) => self.statement(s, depth),
                Item::Block(b) => self.block(b, depth),
            });
        }
        while let Some(c) = self.take_before(limit) {
            self.gap(prev_end, c.start);
            self.own_line_comment(depth, &c);
            prev_end = Some(c.end);
        }
    }

    /// Writes a block; returns where it ends in the source.
    fn block(&mut self, b: &Block, depth: usize) -> usize {
        let head = match &b.head {
            BlockHead::Mode(m) => format!("mode {}", name(m)),
            BlockHead::Bot(None) => "bot *".to_string(),
            BlockHead::Bot(Some(n)) => format!("bot {}", name(n)),
            BlockHead::When { flag, negated } => {
                format!("when {}{}", if *negated { "!" } else { "" }, name(flag))
            }
        };
        let brace = self.text[b.head_span.end..]
            .find('{')
            .map_or(b.head_span.end, |i| b.head_span.end + i);
        let first_inner = b.items.first().map_or(b.span.end, |i| match i {
            Item::Statement(s) => s.span.start,
            Item::Block(b) => b.span.start,
        });
        // A comment after `{` on the header line, before any item on it.
        let comment = match self.comments.get(self.next) {
            Some(c)
                if c.start > brace
                    && c.start < first_inner
                    && !self.text[brace..c.start].contains('\n') =>
            {
                self.next += 1;
                Some(c.text.clone())
            }
            _ => None,
        };
        self.lines.push(Line::Code {
            depth,
            code: format!("{head} {{"),
            comment,
        });
        let close = b.span.end.saturating_sub(1);
        self.items(&b.items, depth + 1, close);
        let trailing = self.take_trailing(b.span.end);
        let end = trailing.as_ref().map_or(b.span.end, |c| c.end);
        self.lines.push(Line::Code {
            depth,
            code: "}".to_string(),
            comment: trailing.map(|c| c.text),
        });
        end
    }

    /// Writes a statement; returns where it ends in the source.
    fn statement(&mut self, s: &Statement, depth: usize) -> usize {
        // Where the statement's last token ends: the parser's span may run on
        // over the white space and comment after a `guard` or `search` list.
        let code_end = match &s.kind {
            StatementKind::Guard(sels) | StatementKind::Search(sels) => {
                sels.last().map_or(s.span.end, |l| l.span.end)
            }
            StatementKind::Setting { value_span, .. } => value_span.end,
            StatementKind::Rule { .. } => s.span.end,
        };
        let mut inner = Vec::new();
        while let Some(c) = self.take_before(code_end) {
            inner.push(c);
        }
        match &s.kind {
            StatementKind::Rule {
                word, selectors, ..
            } if !inner.is_empty() => {
                self.commented_rule(&rule_word(word), selectors, &inner, s.span.start, depth);
            }
            kind => {
                let code = statement_code(kind);
                self.lines.push(Line::Code {
                    depth,
                    code,
                    comment: None,
                });
            }
        }
        let trailing = self.take_trailing(code_end);
        let end = trailing.as_ref().map_or(code_end, |c| c.end);
        if let Some(c) = trailing
            && let Some(Line::Code { comment, .. }) = self.lines.last_mut()
        {
            *comment = Some(c.text);
        }
        end
    }

    /// A rule with comments among its selectors: one selector per line.
    fn commented_rule(
        &mut self,
        word: &str,
        selectors: &[Selector],
        comments: &[Comment],
        start: usize,
        depth: usize,
    ) {
        let same_line = |a: usize, b: usize| !self.text[a.min(b)..a.max(b)].contains('\n');
        // Each comment: after a selector on its line, on the line of `(`, or
        // on a line of its own before the next selector (or the `)`).
        let mut open_comment = None;
        let mut trailing: Vec<Option<String>> = vec![None; selectors.len()];
        let mut leading: Vec<Vec<String>> = vec![Vec::new(); selectors.len() + 1];
        for c in comments {
            match selectors.iter().rposition(|s| s.span.end <= c.start) {
                Some(i) if same_line(selectors[i].span.end, c.start) => {
                    trailing[i] = Some(c.text.clone());
                }
                Some(i) => leading[i + 1].push(c.text.clone()),
                None if same_line(start, c.start) => open_comment = Some(c.text.clone()),
                None => leading[0].push(c.text.clone()),
            }
        }
        self.lines.push(Line::Code {
            depth,
            code: format!("{word}("),
            comment: open_comment,
        });
        for (i, s) in selectors.iter().enumerate() {
            for c in &leading[i] {
                self.lines.push(Line::Code {
                    depth: depth + 1,
                    code: String::new(),
                    comment: Some(c.clone()),
                });
            }
            self.lines.push(Line::Code {
                depth: depth + 1,
                code: format!("{},", selector(s)),
                comment: trailing[i].take(),
            });
        }
        for c in &leading[selectors.len()] {
            self.lines.push(Line::Code {
                depth: depth + 1,
                code: String::new(),
                comment: Some(c.clone()),
            });
        }
        self.lines.push(Line::Code {
            depth,
            code: ")".to_string(),
            comment: None,
        });
    }
}

/// Lines to text: two spaces per depth, and end-of-line comments of
/// consecutive lines aligned two spaces after the longest code among them.
fn render(lines: &[Line]) -> String {
    let width = |l: &Line| match l {
        Line::Code {
            depth,
            code,
            comment: Some(_),
        } if !code.is_empty() => Some(depth * 2 + code.chars().count()),
        _ => None,
    };
    let mut column = vec![0; lines.len()];
    let mut i = 0;
    while i < lines.len() {
        let mut j = i;
        let mut max = 0;
        while let Some(w) = lines.get(j).and_then(width) {
            max = max.max(w);
            j += 1;
        }
        for c in &mut column[i..j] {
            *c = max + 2;
        }
        i = j.max(i + 1);
    }
    let mut out = String::new();
    for (k, l) in lines.iter().enumerate() {
        match l {
            Line::Blank => {}
            Line::Code {
                depth,
                code,
                comment,
            } => {
                let mut line = "  ".repeat(*depth);
                line.push_str(code);
                if let Some(c) = comment {
                    if code.is_empty() {
                        line.push_str(c);
                    } else {
                        let pad = column[k].saturating_sub(line.chars().count());
                        line.push_str(&" ".repeat(pad.max(2)));
                        line.push_str(c);
                    }
                }
                out.push_str(&line);
            }
        }
        out.push('\n');
    }
    out
}

fn rule_word(word: &str) -> String {
    RuleKind::from_word(word).map_or_else(|| word.to_string(), |k| k.word().to_string())
}

fn statement_code(kind: &StatementKind) -> String {
    let list = |sels: &[Selector]| sels.iter().map(selector).collect::<Vec<_>>().join(", ");
    match kind {
        StatementKind::Guard(sels) => format!("guard {}", list(sels)),
        StatementKind::Search(sels) => format!("search {}", list(sels)),
        StatementKind::Rule {
            word, selectors, ..
        } => format!("{}({})", rule_word(word), list(selectors)),
        StatementKind::Setting {
            key,
            value: crate::ast::Value::Quoted(path),
            ..
        } if crate::policy::FileKey::parse(key).is_some() => {
            let key = crate::policy::FileKey::parse(key).map_or("", |k| k.key());
            format!("{key} = {}", quote(path))
        }
        StatementKind::Setting { key, value, .. } => match Key::parse(key) {
            Some(k) => {
                let v = k
                    .check(value)
                    .map_or_else(|_| String::new(), |v| v.to_source());
                format!("{} = {v}", k.name())
            }
            None => format!("{key} = ?"),
        },
    }
}

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// A mode, bot or flag name: bare when it is a word.
fn name(n: &str) -> String {
    let bare = !n.is_empty()
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
    if bare { n.to_string() } else { quote(n) }
}

/// A selector as the formatter writes it: quotes only where needed.
pub fn selector(s: &Selector) -> String {
    let bare_chars = !s.pattern.is_empty()
        && s.pattern
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:*".contains(c));
    let looks_prefixed = s.kind == SelectorKind::Tool
        && crate::decision::split_selector(&s.pattern).0 != SelectorKind::Tool;
    let pattern = if bare_chars && !looks_prefixed {
        s.pattern.clone()
    } else {
        quote(&s.pattern)
    };
    match s.kind {
        SelectorKind::Tool => pattern,
        SelectorKind::Skill => format!("skill:{pattern}"),
        SelectorKind::Source => format!("source:{pattern}"),
        SelectorKind::Hint => format!("hint:{pattern}"),
    }
}

#[cfg(test)]
mod tests;

//! Positions: the protocol counts lines from 0 and columns in UTF-16 code
//! units; the engine counts bytes. One line table per document converts
//! both ways, with the grammar's line breaks (`\n`, `\r\n`, a lone `\r`),
//! which are the protocol's too.

use crate::ast::Span;
use lsp_types::{Position, Range};

/// A document's text with its line table.
#[derive(Debug, Clone)]
pub struct Text {
    pub text: String,
    starts: Vec<usize>,
}

impl Text {
    pub fn new(text: String) -> Self {
        let starts = crate::diag::line_starts(&text);
        Text { text, starts }
    }

    /// The protocol position of a byte offset (clamped to the text, and to
    /// a character boundary).
    pub fn position(&self, offset: usize) -> Position {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = match self.starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.starts[line];
        let character: usize = self.text[start..offset].chars().map(char::len_utf16).sum();
        Position::new(line as u32, character as u32)
    }

    pub fn range(&self, span: Span) -> Range {
        Range::new(self.position(span.start), self.position(span.end))
    }

    /// The byte offset of a protocol position: past the end of a line means
    /// its end, past the last line the end of the text.
    pub fn offset(&self, pos: Position) -> usize {
        let Some(&start) = self.starts.get(pos.line as usize) else {
            return self.text.len();
        };
        let end = self.line_end(pos.line as usize);
        let mut units = 0usize;
        for (i, c) in self.text[start..end].char_indices() {
            if units >= pos.character as usize {
                return start + i;
            }
            units += c.len_utf16();
        }
        end
    }

    /// Where line `line` (from 0) ends, before its line break.
    fn line_end(&self, line: usize) -> usize {
        let next = self
            .starts
            .get(line + 1)
            .copied()
            .unwrap_or(self.text.len());
        let body = &self.text[self.starts[line]..next];
        let body = body.strip_suffix('\n').unwrap_or(body);
        let body = body.strip_suffix('\r').unwrap_or(body);
        self.starts[line] + body.len()
    }

    /// The start of the line holding `offset`.
    pub fn line_start(&self, offset: usize) -> usize {
        match self.starts.binary_search(&offset) {
            Ok(i) => self.starts[i],
            Err(i) => self.starts[i - 1],
        }
    }

    /// `span` grown to its whole lines, line break included, when nothing
    /// but blanks stands beside it on them: what removing a statement
    /// should take away.
    pub fn whole_lines(&self, span: Span) -> Span {
        let start = self.line_start(span.start);
        let line = match self.starts.binary_search(&span.end) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let end = self.line_end(line);
        let before = &self.text[start..span.start];
        let after = &self.text[span.end.min(end)..end];
        if !before.trim().is_empty() || !(after.trim().is_empty()) {
            return span;
        }
        let next = self
            .starts
            .get(line + 1)
            .copied()
            .unwrap_or(self.text.len());
        Span::new(start, next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_utf16_units_both_ways() {
        let t = Text::new("ab\r\n😀x\ry".to_string());
        // `x` is after a 4-byte character that is two UTF-16 units.
        let x = t.text.find('x').unwrap();
        assert_eq!(t.position(x), Position::new(1, 2));
        assert_eq!(t.offset(Position::new(1, 2)), x);
        assert_eq!(t.offset(Position::new(2, 0)), t.text.find('y').unwrap());
        // Past a line's end: its end, before the break.
        assert_eq!(t.offset(Position::new(0, 99)), 2);
        assert_eq!(t.offset(Position::new(9, 0)), t.text.len());
    }

    #[test]
    fn a_statement_alone_on_its_line_goes_with_its_line() {
        let t = Text::new("a\n  Defer(x)  \nb".to_string());
        let s = t.text.find("Defer").unwrap();
        let span = Span::new(s, s + "Defer(x)".len());
        assert_eq!(t.slice_of(t.whole_lines(span)), "  Defer(x)  \n");
        let t = Text::new("Defer(x) # why\n".to_string());
        assert_eq!(t.whole_lines(Span::new(0, 8)), Span::new(0, 8));
    }

    impl Text {
        fn slice_of(&self, s: Span) -> &str {
            &self.text[s.start..s.end]
        }
    }
}

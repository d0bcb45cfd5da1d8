//! Characters that hide or rewrite text, and one way to show them.
//!
//! Names, descriptions, patterns and comments come from people and servers the
//! project does not control. Control characters (ESC starts the sequences that
//! clear a screen, set a window title or write the clipboard; CR overwrites a
//! line) and invisible format characters (zero-width spaces, bidirectional
//! overrides) can make text read differently from what it is. The catalog
//! removes them before the model reads them, registries refuse them in names,
//! and everything printed for people passes through [`escape`].

use std::borrow::Cow;
use std::fmt::Write as _;

/// Format characters that render as nothing or reorder what follows:
/// zero-width spaces and joiners, bidirectional marks and overrides, the
/// byte-order mark, invisible operators and interlinear annotations.
pub fn is_invisible_format(c: char) -> bool {
    matches!(c,
        '\u{00AD}'
        | '\u{061C}'
        | '\u{180E}'
        | '\u{200B}'..='\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{206F}'
        | '\u{FEFF}'
        | '\u{FFF9}'..='\u{FFFB}')
}

/// A character that does not show as itself: a control or an invisible format
/// character.
pub fn is_hiding(c: char) -> bool {
    c.is_control() || is_invisible_format(c)
}

/// Text made safe to print on a terminal: every control character but line
/// feed and tab, and every invisible format character, is written as
/// `\u{1b}`, so escape sequences from the input show instead of acting.
/// Borrowed when there is nothing to escape, which is almost always.
pub fn escape(text: &str) -> Cow<'_, str> {
    escape_where(text, |c| c != '\n' && c != '\t' && is_hiding(c))
}

/// A name quoted for a message: like [`escape`], and line breaks and tabs too,
/// so the message stays one line whatever the name holds.
pub fn escape_name(name: &str) -> Cow<'_, str> {
    escape_where(name, is_hiding)
}

fn escape_where(text: &str, hide: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(&hide) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if hide(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The system's `No such file or directory` as a message goes on:
/// lowercase, with the rest (the library's `64 MiB`) left as it is.
pub(crate) fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map_or_else(String::new, |c| c.to_lowercase().chain(chars).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_shows_sequences_and_keeps_plain_text() {
        assert!(matches!(escape("plain text\n\tok"), Cow::Borrowed(_)));
        assert_eq!(
            escape("a\x1b]52;c;aGk=\x07b\x1b[2J\rc\u{202e}d\u{200b}e\u{9b}"),
            "a\\u{1b}]52;c;aGk=\\u{7}b\\u{1b}[2J\\u{d}c\\u{202e}d\\u{200b}e\\u{9b}"
        );
        assert_eq!(escape_name("Re\u{200b}ad\n"), "Re\\u{200b}ad\\u{a}");
    }
}

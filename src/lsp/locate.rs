//! What stands at a position of a policy: a selector, a setting, a block's
//! name. Read from the syntax tree, which a half-typed file still has
//! (the parser recovers at each statement).

use crate::ast::{Ast, BlockHead, Item, Selector, Span, StatementKind};

/// The thing under the cursor.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    Selector(Selector),
    SettingKey {
        key: String,
        span: Span,
    },
    /// A block's name: `mode NAME`, `bot NAME`, `when FLAG`.
    BlockName {
        head: BlockHead,
        span: Span,
    },
}

/// One block of the file: its head and where its name is written.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockRef {
    pub head: BlockHead,
    pub name_span: Span,
}

/// The name a block head declares (`*` for `bot *`).
pub fn head_name(head: &BlockHead) -> &str {
    match head {
        BlockHead::Mode(m) => m,
        BlockHead::Bot(Some(b)) => b,
        BlockHead::Bot(None) => "*",
        BlockHead::When { flag, .. } => flag,
    }
}

/// Every block of the file, nested ones included, in file order.
pub fn blocks(ast: &Ast, text: &str) -> Vec<BlockRef> {
    let mut out = Vec::new();
    walk_blocks(&ast.items, text, &mut out);
    out
}

fn walk_blocks(items: &[Item], text: &str, out: &mut Vec<BlockRef>) {
    for item in items {
        if let Item::Block(b) = item {
            let head_text = text.get(b.head_span.start..b.head_span.end).unwrap_or("");
            let name = head_name(&b.head);
            // The name is the head's last word (quotes aside).
            let at = head_text.rfind(name).unwrap_or(0);
            let start = b.head_span.start + at;
            out.push(BlockRef {
                head: b.head.clone(),
                name_span: Span::new(start, start + name.len()),
            });
            walk_blocks(&b.items, text, out);
        }
    }
}

/// What stands at byte `offset` (a position just after a word counts).
pub fn at(ast: &Ast, text: &str, offset: usize) -> Option<Target> {
    let inside = |s: Span| s.start <= offset && offset <= s.end;
    if let Some(b) = blocks(ast, text).into_iter().find(|b| inside(b.name_span)) {
        return Some(Target::BlockName {
            head: b.head,
            span: b.name_span,
        });
    }
    find_statement(&ast.items, &inside)
}

fn find_statement(items: &[Item], inside: &dyn Fn(Span) -> bool) -> Option<Target> {
    for item in items {
        match item {
            Item::Block(b) if inside(b.span) => return find_statement(&b.items, inside),
            Item::Block(_) => {}
            Item::Statement(s) if inside(s.span) => {
                return match &s.kind {
                    StatementKind::Guard(sels)
                    | StatementKind::Search(sels)
                    | StatementKind::Rule {
                        selectors: sels, ..
                    } => sels
                        .iter()
                        .find(|sel| inside(sel.span))
                        .cloned()
                        .map(Target::Selector),
                    StatementKind::Setting { key, key_span, .. } => Some(Target::SettingKey {
                        key: key.clone(),
                        span: *key_span,
                    }),
                };
            }
            Item::Statement(_) => {}
        }
    }
    None
}

/// The word (letters, digits, `_ - . / : * !`) around byte `offset`.
pub fn word_at(text: &str, offset: usize) -> Option<(Span, &str)> {
    let is_word = |c: char| c.is_alphanumeric() || "_-./:*".contains(c);
    let offset = offset.min(text.len());
    if !text.is_char_boundary(offset) {
        return None;
    }
    let start = text[..offset]
        .char_indices()
        .rev()
        .take_while(|&(_, c)| is_word(c))
        .last()
        .map_or(offset, |(i, _)| i);
    let end = offset
        + text[offset..]
            .char_indices()
            .find(|&(_, c)| !is_word(c))
            .map_or(text.len() - offset, |(i, _)| i);
    (start < end).then(|| (Span::new(start, end), &text[start..end]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_selectors_settings_and_block_names() {
        let text = "mode agent {\n  Defer(Bash, skill:x)\n  when codemode {\n    max_activations = 2\n  }\n}\n";
        let (ast, _) = crate::parse(text);
        let at_text = |needle: &str| at(&ast, text, text.find(needle).unwrap() + 1);
        match at_text("Bash") {
            Some(Target::Selector(s)) => assert_eq!(s.pattern, "Bash"),
            other => panic!("{other:?}"),
        }
        match at_text("skill:x") {
            Some(Target::Selector(s)) => assert_eq!(s.pattern, "x"),
            other => panic!("{other:?}"),
        }
        match at_text("max_act") {
            Some(Target::SettingKey { key, .. }) => assert_eq!(key, "max_activations"),
            other => panic!("{other:?}"),
        }
        match at_text("codemode") {
            Some(Target::BlockName { head, span }) => {
                assert_eq!(head_name(&head), "codemode");
                assert_eq!(&text[span.start..span.end], "codemode");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(at_text("Defer"), None);
        assert_eq!(word_at(text, 3).map(|(_, w)| w), Some("mode"));
    }
}

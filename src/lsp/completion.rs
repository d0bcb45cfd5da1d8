//! Completion from the text before the cursor: inside a rule's parentheses
//! (or after `guard` and `search`) the registry's tools, skills, sources
//! and the hints; after `key =` the setting's values; after `when` the
//! flags; at the start of a statement the rule words, statements, blocks
//! and settings.

use std::collections::BTreeSet;

use crate::ast::Span;
use lsp_types::{
    CompletionItem, CompletionItemKind, CompletionTextEdit, InsertTextFormat, TextEdit,
};

use super::config::Config;
use super::text::Text;
use super::words;

/// Where the cursor stands.
#[derive(Debug, PartialEq)]
enum Place<'a> {
    /// Inside a rule's parentheses or a `guard`/`search` list, with the
    /// word typed so far.
    Selector(&'a str),
    Value(&'a str),
    Flag,
    BlockName(&'a str),
    Statement,
}

fn place(before: &str) -> Place<'_> {
    // The current line, without a comment.
    let line = before.rsplit(['\n', '\r']).next().unwrap_or("");
    if line.contains('#') {
        return Place::Statement;
    }
    let trimmed = line.trim_start();
    // An unclosed `(` anywhere before: newlines may stand inside one.
    let open = before.rfind('(');
    let close = before.rfind(')');
    let word_start = line
        .rfind(|c: char| c == '(' || c == ',' || c.is_whitespace())
        .map_or(0, |i| i + 1);
    let word = &line[word_start..];
    if let Some((key, _)) = trimmed.split_once('=')
        && !key.contains(['(', '"'])
    {
        return Place::Value(key.trim());
    }
    if let Some(open) = open.filter(|&o| Some(o) > close) {
        // A `(` left open on an earlier line still holds the cursor when
        // each line since ends in `(` or `,`: a list broken over lines, not
        // a rule not closed yet.
        let since = before.get(open..before.len() - line.len()).unwrap_or("");
        let continued = since
            .lines()
            .map(|l| l.split('#').next().unwrap_or("").trim_end())
            .all(|l| l.ends_with('(') || l.ends_with(','));
        if continued || since.is_empty() {
            return Place::Selector(word);
        }
    }
    let lower = trimmed.to_ascii_lowercase();
    if lower.starts_with("guard ") || lower.starts_with("search ") {
        return Place::Selector(word);
    }
    if lower.starts_with("when ") {
        return Place::Flag;
    }
    for kw in ["mode ", "bot "] {
        if lower.starts_with(kw) {
            return Place::BlockName(kw.trim());
        }
    }
    Place::Statement
}

/// The completions at byte `offset` of `text`.
pub fn complete(doc: &Text, offset: usize, config: &Config) -> Vec<CompletionItem> {
    let text = doc.text.as_str();
    let offset = (0..=offset.min(text.len()))
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    let before = &text[..offset];
    let (ast, _) = crate::parse(text);
    let blocks = super::locate::blocks(&ast, text);
    let declared = |kind: fn(&crate::ast::BlockHead) -> bool| -> BTreeSet<String> {
        blocks
            .iter()
            .filter(|b| kind(&b.head))
            .map(|b| super::locate::head_name(&b.head).to_string())
            .collect()
    };
    use crate::ast::BlockHead;
    match place(before) {
        Place::Selector(word) => {
            // Each item replaces what is typed of the selector, prefix and
            // quote included, whatever the editor counts as a word.
            let range = doc.range(Span::new(offset - word.len(), offset));
            selectors(word.trim_start_matches('"'), config)
                .into_iter()
                .map(|item| CompletionItem {
                    filter_text: Some(item.label.clone()),
                    text_edit: Some(CompletionTextEdit::Edit(TextEdit::new(
                        range,
                        item.label.clone(),
                    ))),
                    ..item
                })
                .collect()
        }
        Place::Value(key) => words::setting(key)
            .map(|d| {
                d.values
                    .iter()
                    .map(|v| item(v, CompletionItemKind::VALUE, d.key))
                    .collect()
            })
            .unwrap_or_default(),
        Place::Flag => {
            let mut flags = declared(|h| matches!(h, BlockHead::When { .. }));
            flags.extend(config.settings.flags.iter().flatten().cloned());
            flags
                .into_iter()
                .map(|f| item(&f, CompletionItemKind::VARIABLE, "flag"))
                .collect()
        }
        Place::BlockName(kw) => {
            let mut names = BTreeSet::new();
            if kw == "bot" {
                names.insert("*".to_string());
                names.extend(config.settings.bot.clone());
            } else {
                names.extend(config.settings.mode.clone());
            }
            let taken = if kw == "bot" {
                declared(|h| matches!(h, BlockHead::Bot(_)))
            } else {
                declared(|h| matches!(h, BlockHead::Mode(_)))
            };
            names
                .difference(&taken)
                .map(|n| item(n, CompletionItemKind::MODULE, kw))
                .collect()
        }
        Place::Statement => statements(),
    }
}

fn item(label: &str, kind: CompletionItemKind, detail: &str) -> CompletionItem {
    CompletionItem {
        label: label.to_string(),
        kind: Some(kind),
        detail: (!detail.is_empty()).then(|| detail.to_string()),
        ..CompletionItem::default()
    }
}

fn statements() -> Vec<CompletionItem> {
    let mut out = Vec::new();
    for (word, what) in words::RULES {
        let (text, format) = if word.starts_with(char::is_uppercase) {
            (format!("{word}($1)"), InsertTextFormat::SNIPPET)
        } else {
            (format!("{word} "), InsertTextFormat::PLAIN_TEXT)
        };
        out.push(CompletionItem {
            insert_text: Some(text),
            insert_text_format: Some(format),
            ..item(word, CompletionItemKind::KEYWORD, what)
        });
    }
    for (word, what) in words::BLOCKS {
        out.push(CompletionItem {
            insert_text: Some(format!("{word} ")),
            ..item(word, CompletionItemKind::KEYWORD, what)
        });
    }
    for s in &words::SETTINGS {
        out.push(CompletionItem {
            insert_text: Some(format!("{} = ", s.key)),
            documentation: Some(lsp_types::Documentation::String(format!(
                "{} (default {})",
                s.meaning, s.default
            ))),
            ..item(s.key, CompletionItemKind::PROPERTY, "setting")
        });
    }
    out
}

fn selectors(word: &str, config: &Config) -> Vec<CompletionItem> {
    let lower = word.to_ascii_lowercase();
    let mut out = Vec::new();
    if lower.starts_with("hint:") || "hint:".starts_with(&lower) && !lower.is_empty() {
        out.extend(
            words::HINTS
                .iter()
                .map(|h| item(h, CompletionItemKind::ENUM_MEMBER, "hint")),
        );
    }
    let mut sources = BTreeSet::new();
    if let Some(r) = &config.registry {
        for t in r.tools() {
            sources.extend(t.source.clone());
            if !lower.starts_with("skill:")
                && !lower.starts_with("source:")
                && !lower.starts_with("hint:")
            {
                let label = quoted_if_needed(&t.name);
                let detail = t.source.clone().unwrap_or_else(|| "tool".into());
                out.push(CompletionItem {
                    documentation: (!t.description.is_empty())
                        .then(|| lsp_types::Documentation::String(t.description.clone())),
                    ..item(&label, CompletionItemKind::FUNCTION, &detail)
                });
            }
        }
    }
    if let Some(s) = &config.skills {
        for k in s.skills() {
            sources.extend(k.source.clone());
            out.push(item(
                &format!("skill:{}", quoted_if_needed(&k.name)),
                CompletionItemKind::MODULE,
                "skill",
            ));
        }
    }
    out.extend(sources.iter().map(|s| {
        item(
            &format!("source:{}", quoted_if_needed(s)),
            CompletionItemKind::FOLDER,
            "source",
        )
    }));
    if word.is_empty() {
        out.extend(
            words::HINTS
                .iter()
                .map(|h| item(h, CompletionItemKind::ENUM_MEMBER, "hint")),
        );
    }
    out
}

/// A name as a selector writes it: bare when it is a bare word.
fn quoted_if_needed(name: &str) -> String {
    let bare = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:*".contains(c))
        && !name.starts_with("skill:")
        && !name.starts_with("source:")
        && !name.starts_with("hint:");
    if bare {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('\\', "\\\\").replace('"', "\\\""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_place_follows_the_text_before_the_cursor() {
        assert_eq!(place("mode a {\n  Defer(Ba"), Place::Selector("Ba"));
        assert_eq!(place("Defer(a,\n  hint:r"), Place::Selector("hint:r"));
        assert_eq!(place("Defer(a)\n"), Place::Statement);
        assert_eq!(place("guard Re"), Place::Selector("Re"));
        assert_eq!(place("  activation = "), Place::Value("activation"));
        assert_eq!(place("when !"), Place::Flag);
        assert_eq!(place("bot "), Place::BlockName("bot"));
        assert_eq!(place("# Defer("), Place::Statement);
        // A rule left open does not hold the lines that follow it.
        assert_eq!(place("Defer(\n  activation = "), Place::Value("activation"));
        assert_eq!(place("Defer(\n  x = 1\n  "), Place::Statement);
    }

    #[test]
    fn odd_names_are_quoted() {
        assert_eq!(quoted_if_needed("mcp__gh__x"), "mcp__gh__x");
        assert_eq!(quoted_if_needed("a b"), "\"a b\"");
        assert_eq!(quoted_if_needed("skill:x"), "\"skill:x\"");
    }
}

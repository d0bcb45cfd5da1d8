//! Edits: formatting (`policy fmt`), quick fixes from the diagnostics'
//! fixes, and go to definition from a mode, bot or flag name to its block.

use std::collections::HashMap;

use lsp_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, Diagnostic, Location, Range, TextEdit, Uri,
    WorkspaceEdit,
};

use super::locate;
use super::text::Text;

/// The whole document in canonical form, or why it cannot be formatted.
pub fn format(name: &str, text: &Text) -> Result<Vec<TextEdit>, String> {
    let formatted = crate::format::format(name, &text.text).map_err(|e| match e {
        crate::format::FormatError::Invalid(errors) => {
            format!("the policy has errors, fix them first:\n{errors}")
        }
        other => other.to_string(),
    })?;
    if formatted == text.text {
        return Ok(Vec::new());
    }
    let all = crate::ast::Span::new(0, text.text.len());
    Ok(vec![TextEdit::new(text.range(all), formatted)])
}

/// The quick fixes of the diagnostics that touch `range`.
pub fn code_actions(uri: &Uri, range: Range, diags: &[Diagnostic]) -> Vec<CodeActionOrCommand> {
    let touches = |d: &Diagnostic| d.range.start <= range.end && range.start <= d.range.end;
    let mut out = Vec::new();
    for d in diags.iter().filter(|d| touches(d)) {
        let Some(fixes) = d
            .data
            .as_ref()
            .and_then(|v| v.get("fixes"))
            .and_then(|f| f.as_array())
        else {
            continue;
        };
        for (i, fix) in fixes.iter().enumerate() {
            let (Some(title), Some(range), Some(text)) = (
                fix.get("title").and_then(|t| t.as_str()),
                fix.get("range")
                    .and_then(|r| serde_json::from_value::<Range>(r.clone()).ok()),
                fix.get("text").and_then(|t| t.as_str()),
            ) else {
                continue;
            };
            let changes = HashMap::from([(uri.clone(), vec![TextEdit::new(range, text.into())])]);
            out.push(CodeActionOrCommand::CodeAction(CodeAction {
                title: title.to_string(),
                kind: Some(CodeActionKind::QUICKFIX),
                diagnostics: Some(vec![d.clone()]),
                edit: Some(WorkspaceEdit::new(changes)),
                is_preferred: Some(i == 0),
                ..CodeAction::default()
            }));
        }
    }
    out
}

/// The blocks a mode, bot or flag name at `offset` refers to.
pub fn definition(uri: &Uri, text: &Text, offset: usize) -> Vec<Location> {
    let Some((_, word)) = locate::word_at(&text.text, offset) else {
        return Vec::new();
    };
    let word = word.trim_start_matches('!');
    let (ast, _) = crate::parse(&text.text);
    locate::blocks(&ast, &text.text)
        .into_iter()
        .filter(|b| locate::head_name(&b.head) == word)
        .map(|b| Location::new(uri.clone(), text.range(b.name_span)))
        .collect()
}

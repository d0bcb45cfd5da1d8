//! Diagnostics as `policy check` finds them, in the protocol's shape: code,
//! severity, message with its help, related positions, and the fixes that
//! code actions offer (kept in `data`).

use std::path::Path;

use crate::diag::{self, Severity, SourceFile};
use lsp_types::{
    Diagnostic, DiagnosticRelatedInformation, DiagnosticSeverity, Location, NumberOrString, Uri,
};

use super::config::Config;
use super::text::Text;

/// Every finding about a document.
pub fn compute(uri: &Uri, path: &Path, text: &Text, config: &Config) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = config
        .problems
        .iter()
        .map(|p| Diagnostic {
            range: text.range(crate::ast::Span::new(0, 0)),
            severity: Some(DiagnosticSeverity::WARNING),
            source: Some("policy".into()),
            message: format!("{p}; {} goes on without it", super::NAME),
            ..Diagnostic::default()
        })
        .collect();
    let source = SourceFile::new(path.display().to_string(), text.text.as_str());
    let options = crate::lint::Options {
        registry: config.registry.as_deref(),
        skills: config.skills.as_deref(),
        max_tokens: config.settings.max_tokens,
        engine_search: config.settings.engine_tools.unwrap_or(false),
    };
    let found = crate::lint::diagnose(&source, path, &options);
    // A file of a million errors would be a message too large to send: the
    // first ones, as `check` shows them.
    let shown = crate::render::shown(&found);
    out.extend(shown.iter().map(|d| to_lsp(uri, text, d)));
    out
}

pub fn to_lsp(uri: &Uri, text: &Text, d: &diag::Diagnostic) -> Diagnostic {
    let mut message = d.message.to_string();
    if let Some(help) = &d.help {
        message.push_str("\nhelp: ");
        message.push_str(help);
    }
    let related: Vec<DiagnosticRelatedInformation> = d
        .related
        .iter()
        .map(|r| DiagnosticRelatedInformation {
            location: Location::new(uri.clone(), text.range(r.span)),
            message: r.message.clone(),
        })
        .collect();
    let fixes: Vec<serde_json::Value> = d
        .fixes
        .iter()
        .map(|f| {
            // Removing a statement takes its line with it.
            let span = if f.text.is_empty() {
                text.whole_lines(f.span)
            } else {
                f.span
            };
            serde_json::json!({
                "title": f.title,
                "range": text.range(span),
                "text": f.text,
            })
        })
        .collect();
    Diagnostic {
        range: text.range(d.span),
        severity: Some(match d.severity {
            Severity::Error => DiagnosticSeverity::ERROR,
            Severity::Warning => DiagnosticSeverity::WARNING,
        }),
        code: Some(NumberOrString::String(d.code.as_str().into())),
        source: Some("policy".into()),
        message,
        related_information: (!related.is_empty()).then_some(related),
        data: (!fixes.is_empty()).then(|| serde_json::json!({ "fixes": fixes })),
        ..Diagnostic::default()
    }
}

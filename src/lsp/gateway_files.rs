//! The gateway's own files in the editor: a servers file and a clients file
//! are read as the gateway reads them, and each problem is shown at the key
//! its JSON path names (`mcpServers.github.command`).

use std::path::Path;

use crate::ast::Span;
use crate::gateway::servers::Problem;
use lsp_types::{Diagnostic, DiagnosticSeverity};

use super::text::Text;

/// Which of the gateway's files a document is, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Servers,
    Clients,
}

pub fn kind(path: &Path) -> Option<Kind> {
    let name = path.file_name()?.to_str()?.to_ascii_lowercase();
    if !name.ends_with(".json") {
        return None;
    }
    if name.contains("servers") || name == "mcp.json" {
        Some(Kind::Servers)
    } else if name.contains("clients") {
        Some(Kind::Clients)
    } else {
        None
    }
}

pub fn diagnostics(kind: Kind, path: &Path, text: &Text) -> Vec<Diagnostic> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let env = |name: &str| std::env::var(name).ok();
    let found: Vec<(bool, Problem)> = match kind {
        Kind::Servers => match crate::gateway::servers::parse_with_env(&text.text, dir, &env) {
            Ok(file) => file.warnings.into_iter().map(|w| (false, w)).collect(),
            Err(errors) => errors.into_iter().map(|e| (true, e)).collect(),
        },
        Kind::Clients => crate::gateway::clients::check_text(&text.text, dir, &env),
    };
    found
        .into_iter()
        .map(|(error, p)| {
            let mut message = if p.path.is_empty() {
                p.message.clone()
            } else {
                format!("`{}`: {}", p.path, p.message)
            };
            if let Some(help) = &p.help {
                message.push_str("\nhelp: ");
                message.push_str(help);
            }
            Diagnostic {
                range: text.range(locate(&text.text, &p.path)),
                severity: Some(if error {
                    DiagnosticSeverity::ERROR
                } else {
                    DiagnosticSeverity::WARNING
                }),
                source: Some("policy".into()),
                message,
                ..Diagnostic::default()
            }
        })
        .collect()
}

/// The key a JSON path such as `mcpServers.github.command` ends at, found
/// one segment after another in the text (an index, `args[2]`, stays at its
/// key); as far as the path can be followed.
pub fn locate(text: &str, path: &str) -> Span {
    let mut from = 0;
    let mut found = Span::new(0, 0);
    for segment in path.split('.').filter(|s| !s.is_empty()) {
        let key = segment.split('[').next().unwrap_or(segment);
        let quoted = format!("\"{key}\"");
        let Some(at) = text[from..].find(&quoted).map(|i| from + i) else {
            break;
        };
        found = Span::new(at, at + quoted.len());
        from = found.end;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_path_leads_to_its_key() {
        let text =
            r#"{"mcpServers": {"a": {"command": "x"}, "github": {"args": [1], "command": 2}}}"#;
        let s = locate(text, "mcpServers.github.command");
        assert_eq!(&text[s.start..s.end], "\"command\"");
        assert!(s.start > text.find("github").unwrap());
        let s = locate(text, "mcpServers.github.args[0]");
        assert_eq!(&text[s.start..s.end], "\"args\"");
        assert_eq!(locate(text, ""), Span::new(0, 0));
        assert_eq!(kind(Path::new("/x/servers.json")), Some(Kind::Servers));
        assert_eq!(kind(Path::new("/x/team-clients.json")), Some(Kind::Clients));
        assert_eq!(kind(Path::new("/x/registry.json")), None);
    }
}

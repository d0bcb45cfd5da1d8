//! Diagnostics rendered for people and programs: rustc-like (optionally in
//! colour), plain one-line-per-diagnostic (screen readers, editors), and JSON.

use std::fmt::Write as _;

use serde::Serialize;

use crate::diag::{Diagnostic, Severity, SourceFile};

/// The JSON shape of one diagnostic (SPEC 4).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct JsonDiagnostic {
    pub code: String,
    pub severity: &'static str,
    pub message: String,
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub end_line: usize,
    pub end_column: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
}

pub fn to_json(file: &SourceFile, d: &Diagnostic) -> JsonDiagnostic {
    let (line, column) = file.line_col(d.span.start);
    let (end_line, end_column) = file.line_col(d.span.end);
    JsonDiagnostic {
        code: d.code.as_str().to_string(),
        severity: d.severity.as_str(),
        message: d.message.clone(),
        file: file.name.clone(),
        line,
        column,
        end_line,
        end_column,
        help: d.help.clone(),
    }
}

/// `file:line:col: severity[code]: message`, one line each.
pub fn plain(file: &SourceFile, diags: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in diags {
        let (line, col) = file.line_col(d.span.start);
        let _ = write!(
            out,
            "{}:{line}:{col}: {}[{}]: {}",
            shown(&file.name),
            d.severity.as_str(),
            d.code,
            shown(&d.message)
        );
        if let Some(h) = &d.help {
            let _ = write!(out, " (help: {})", shown(h));
        }
        out.push('\n');
    }
    out
}

struct Paint {
    on: bool,
}

impl Paint {
    fn wrap(&self, code: &str, s: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
}

/// rustc-like: the message, the location, the source line with a caret under the
/// span, and the help line.
pub fn human(file: &SourceFile, diags: &[Diagnostic], color: bool) -> String {
    let paint = Paint { on: color };
    let mut out = String::new();
    for d in diags {
        let (line, col) = file.line_col(d.span.start);
        let sev_color = match d.severity {
            Severity::Error => "1;31",
            Severity::Warning => "1;33",
        };
        let head = paint.wrap(sev_color, &format!("{}[{}]", d.severity.as_str(), d.code));
        let _ = writeln!(out, "{head}: {}", paint.wrap("1", &shown(&d.message)));
        let gutter = line.to_string().len();
        let pad = " ".repeat(gutter);
        let bar = paint.wrap("1;34", "|");
        let _ = writeln!(
            out,
            "{pad}{} {}:{line}:{col}",
            paint.wrap("1;34", "-->"),
            shown(&file.name)
        );
        let text = file.line_text(line).replace('\t', " ");
        let _ = writeln!(out, "{pad} {bar}");
        let _ = writeln!(
            out,
            "{} {bar} {}",
            paint.wrap("1;34", &line.to_string()),
            shown(&text)
        );
        // The caret covers the span on its first line (at least one column).
        let (end_line, end_col) = file.line_col(d.span.end);
        let width = if end_line == line && end_col > col {
            end_col - col
        } else if end_line == line {
            1
        } else {
            (text.chars().count() + 1).saturating_sub(col).max(1)
        };
        // Columns of the line as shown, where escapes take more than one.
        let (indent, width) = shown_columns(&text, col - 1, width);
        let _ = writeln!(
            out,
            "{pad} {bar} {}{}",
            " ".repeat(indent),
            paint.wrap(sev_color, &"^".repeat(width))
        );
        if let Some(h) = &d.help {
            let _ = writeln!(
                out,
                "{pad} {} {}: {}",
                paint.wrap("1;34", "="),
                paint.wrap("1", "help"),
                shown(h)
            );
        }
        out.push('\n');
    }
    out
}

/// Text from the file or about it, with control characters escaped: a
/// policy's comment or pattern must not drive the reader's terminal.
fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    crate::chars::escape(text)
}

/// The caret's indent and width: `skip` and then `width` characters of
/// `line` (the width may run past its end), counted as [`shown`] prints them.
fn shown_columns(line: &str, skip: usize, width: usize) -> (usize, usize) {
    let count = |s: &str| shown(s).chars().count();
    let before: String = line.chars().take(skip).collect();
    let covered: String = line.chars().skip(skip).take(width).collect();
    let beyond = width - covered.chars().count();
    (count(&before), count(&covered) + beyond)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::Span;
    use crate::diag::Code;

    #[test]
    fn human_puts_a_caret_under_the_span() {
        let f = SourceFile::new("a.policy", "guard x\n  Defr(y)\n");
        let d = Diagnostic::new(Code::UnknownRule, Span::new(10, 14), "unknown rule `Defr`")
            .with_help("did you mean `Defer`");
        let s = human(&f, std::slice::from_ref(&d), false);
        assert_eq!(
            s,
            "error[PL004]: unknown rule `Defr`\n --> a.policy:2:3\n  |\n2 |   Defr(y)\n  |   ^^^^\n  = help: did you mean `Defer`\n\n"
        );
        assert_eq!(
            plain(&f, &[d]),
            "a.policy:2:3: error[PL004]: unknown rule `Defr` (help: did you mean `Defer`)\n"
        );
    }
}

//! Diagnostics rendered for people and programs: rustc-like (optionally in
//! colour), plain one-line-per-diagnostic (screen readers, editors), and JSON.

use std::fmt::Write as _;

use serde::Serialize;

use crate::diag::{Diagnostic, Severity, SourceFile};

/// The JSON shape of one diagnostic (docs/cli.md).
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
        message: d.message.to_string(),
        file: file.name.clone(),
        line,
        column,
        end_line,
        end_column,
        help: d.help.as_deref().map(str::to_string),
    }
}

/// How many diagnostics of one file are rendered, in every format; the rest
/// are counted in one closing line, so that a file with thousands of errors
/// still gives output a person can read (and a small one).
pub const MAX_RENDERED: usize = 100;

/// The diagnostics that are rendered, at most [`MAX_RENDERED`].
pub fn shown(diags: &[Diagnostic]) -> &[Diagnostic] {
    &diags[..diags.len().min(MAX_RENDERED)]
}

/// The JSON of the diagnostics that are rendered.
pub fn to_json_shown(file: &SourceFile, diags: &[Diagnostic]) -> Vec<JsonDiagnostic> {
    shown(diags).iter().map(|d| to_json(file, d)).collect()
}

/// "and 4,812 more errors and 3 more warnings", for the diagnostics past
/// [`MAX_RENDERED`], or `None` when every one was rendered.
pub fn not_shown(diags: &[Diagnostic]) -> Option<String> {
    let rest = diags.get(MAX_RENDERED..).filter(|r| !r.is_empty())?;
    let errors = rest
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    let warnings = rest.len() - errors;
    let part = |n: usize, word: &str| {
        format!(
            "{} more {word}{}",
            thousands(n),
            if n == 1 { "" } else { "s" }
        )
    };
    let parts: Vec<String> = [(errors, "error"), (warnings, "warning")]
        .into_iter()
        .filter(|&(n, _)| n > 0)
        .map(|(n, w)| part(n, w))
        .collect();
    Some(format!("and {} not shown", parts.join(" and ")))
}

/// `4812` as `4,812`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `file:line:col: severity[code]: message`, one line each.
pub fn plain(file: &SourceFile, diags: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in shown(diags) {
        let (line, col) = file.line_col(d.span.start);
        let _ = write!(
            out,
            "{}:{line}:{col}: {}[{}]: {}",
            escaped(&file.name),
            d.severity.as_str(),
            d.code,
            escaped(&d.message)
        );
        if let Some(h) = &d.help {
            let _ = write!(out, " (help: {})", escaped(h));
        }
        out.push('\n');
    }
    if let Some(rest) = not_shown(diags) {
        let _ = writeln!(out, "{}: {rest}", escaped(&file.name));
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

/// The most characters of a source line shown under a diagnostic; a longer
/// line is cut to a window around the caret.
const LINE_WINDOW: usize = 120;

/// The part of a line shown, as (text, columns cut from its start, whether
/// its end was cut). `col` and `width` are the caret's, in characters.
fn window(text: &str, col: usize, width: usize) -> (String, usize, bool) {
    let len = text.chars().count();
    if len <= LINE_WINDOW {
        return (text.to_string(), 0, false);
    }
    let keep = LINE_WINDOW.saturating_sub(width.min(LINE_WINDOW / 2)) / 2;
    let start = col.saturating_sub(1 + keep);
    let shown: String = text.chars().skip(start).take(LINE_WINDOW).collect();
    (shown, start, start + LINE_WINDOW < len)
}

/// rustc-like: the message, the location, the source line with a caret under the
/// span, and the help line.
pub fn human(file: &SourceFile, diags: &[Diagnostic], color: bool) -> String {
    let paint = Paint { on: color };
    let mut out = String::new();
    for d in shown(diags) {
        let (line, col) = file.line_col(d.span.start);
        let sev_color = match d.severity {
            Severity::Error => "1;31",
            Severity::Warning => "1;33",
        };
        let head = paint.wrap(sev_color, &format!("{}[{}]", d.severity.as_str(), d.code));
        let _ = writeln!(out, "{head}: {}", paint.wrap("1", &escaped(&d.message)));
        let gutter = line.to_string().len();
        let pad = " ".repeat(gutter);
        let bar = paint.wrap("1;34", "|");
        let _ = writeln!(
            out,
            "{pad}{} {}:{line}:{col}",
            paint.wrap("1;34", "-->"),
            escaped(&file.name)
        );
        let text = file.line_text(line);
        // The caret covers the span on its first line (at least one column).
        let (end_line, end_col) = file.line_col(d.span.end);
        let width = if end_line == line && end_col > col {
            end_col - col
        } else if end_line == line {
            1
        } else {
            (text.chars().count() + 1).saturating_sub(col).max(1)
        };
        let (text, cut, cut_end) = window(text, col, width);
        let text = text.replace('\t', " ");
        let (lead, tail) = (
            if cut > 0 { "…" } else { "" },
            if cut_end { "…" } else { "" },
        );
        let _ = writeln!(out, "{pad} {bar}");
        let _ = writeln!(
            out,
            "{} {bar} {lead}{}{tail}",
            paint.wrap("1;34", &line.to_string()),
            escaped(&text)
        );
        // Columns of the line as shown, where escapes take more than one.
        let (indent, width) = escaped_columns(&text, col - 1 - cut, width.min(LINE_WINDOW));
        let _ = writeln!(
            out,
            "{pad} {bar} {}{}",
            " ".repeat(indent + lead.chars().count()),
            paint.wrap(sev_color, &"^".repeat(width))
        );
        if let Some(h) = &d.help {
            let _ = writeln!(
                out,
                "{pad} {} {}: {}",
                paint.wrap("1;34", "="),
                paint.wrap("1", "help"),
                escaped(h)
            );
        }
        out.push('\n');
    }
    if let Some(rest) = not_shown(diags) {
        let _ = writeln!(
            out,
            "{}\n",
            paint.wrap("1", &format!("{}: {rest}", escaped(&file.name)))
        );
    }
    out
}

/// Text from the file or about it, with control characters escaped: a
/// policy's comment or pattern must not drive the reader's terminal.
fn escaped(text: &str) -> std::borrow::Cow<'_, str> {
    crate::chars::escape(text)
}

/// The caret's indent and width: `skip` and then `width` characters of
/// `line` (the width may run past its end), counted as [`escaped`] prints them.
fn escaped_columns(line: &str, skip: usize, width: usize) -> (usize, usize) {
    let count = |s: &str| escaped(s).chars().count();
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

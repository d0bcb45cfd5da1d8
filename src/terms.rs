//! The terms file: words learnt from use that make a tool findable by the
//! requests that once led to it.
//!
//! TOML, one table per tool, its terms sorted, each with a comment saying
//! how many sessions taught it:
//!
//! ```toml
//! # written by `policy learn`, reviewed like any change of the policy
//! [filesystem__list_directory]
//! terms = [
//!     "folder contents", # 3 sessions
//!     "what is in this dir", # 2 sessions
//! ]
//! ```
//!
//! [`TermsFile::parse`] reads one (a file that is not TOML, or not this
//! shape, is a [`TermsError`] with its line and column);
//! [`TermsFile::to_toml_with_counts`] writes one, the same text for the
//! same terms; [`TermsFile::teach`] merges what a log taught into it.
//! [`normalize`] is the one form a query takes before it is a term;
//! `audit::learn` says what the sessions of audit logs teach.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use toml::Spanned;
use unicode_normalization::UnicodeNormalization;

/// The `terms = "..."` setting of a policy: where it was written and, once
/// [`attach`](crate::lock::attach)ed with the policy's lock, the file it
/// names.
#[derive(Debug, Clone, PartialEq)]
pub struct TermsSetting {
    /// The path as written, relative to the policy file's folder.
    pub path: String,
    /// The whole statement.
    pub span: crate::ast::Span,
    /// The quoted path.
    pub value_span: crate::ast::Span,
    /// The file read by `attach`; `None` until then (a search then has no
    /// learned terms: terms never decide anything).
    pub file: Option<std::sync::Arc<TermsFile>>,
}

/// The first line of every file `policy learn` writes.
pub const HEADER: &str = "# written by `policy learn`, reviewed like any change of the policy";

/// The longest term, in characters: a longer query is a pasted text, not a
/// way of asking for a tool.
pub const MAX_TERM_CHARS: usize = 200;

/// A query in the one form terms take: compatibility forms folded (NFKC:
/// full-width letters and digits, ligatures), lowercased, runs of white
/// space made one space, trimmed. `None` for a query with no words left or
/// longer than [`MAX_TERM_CHARS`].
pub fn normalize(query: &str) -> Option<String> {
    let folded: String = query.nfkc().collect::<String>().to_lowercase();
    let mut out = String::with_capacity(folded.len());
    for word in folded.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    (!out.is_empty() && out.chars().count() <= MAX_TERM_CHARS).then_some(out)
}

/// A terms file: by tool name, its terms (sorted, each once), and for a
/// term the number of sessions that taught it where the file says so.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TermsFile {
    tools: BTreeMap<String, Vec<String>>,
    counts: HashMap<(String, String), u64>,
}

/// A file that is not a terms file: what is wrong, and where (lines and
/// columns count from 1; columns count characters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TermsError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for TermsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

impl std::error::Error for TermsError {}

/// What [`TermsFile::teach`] did with one term.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taught {
    /// The file did not have it.
    New,
    /// The file had it; its count is now the larger of the two.
    Again,
}

impl TermsFile {
    pub fn new() -> Self {
        TermsFile::default()
    }

    /// Reads a terms file. Every top-level key is a tool's table with one
    /// key, `terms`, a list of strings; the counts are read back from the
    /// comments `policy learn` writes (`# 3 sessions`), and a term without
    /// one has no count.
    pub fn parse(text: &str) -> Result<TermsFile, TermsError> {
        let text = crate::input::strip_bom(text);
        let at = |span: Option<std::ops::Range<usize>>, message: String| {
            let (line, column) = line_col(text, span.map_or(0, |s| s.start));
            TermsError {
                line,
                column,
                message,
            }
        };
        let top: BTreeMap<Spanned<String>, Spanned<toml::Value>> =
            toml::from_str(text).map_err(|e| at(e.span(), e.message().to_string()))?;
        for (name, value) in top {
            if !value.get_ref().is_table() {
                return Err(at(
                    Some(name.span()),
                    format!(
                        "`{}` is not a table of terms (`[{}]` with `terms = [...]`)",
                        name.get_ref(),
                        name.get_ref()
                    ),
                ));
            }
        }
        // Again with the spans of each table's keys and values.
        let tables: BTreeMap<String, BTreeMap<Spanned<String>, Spanned<toml::Value>>> =
            toml::from_str(text).map_err(|e| at(e.span(), e.message().to_string()))?;
        let mut file = TermsFile::new();
        for (tool, table) in tables {
            let mut terms: Vec<String> = Vec::new();
            for (key, value) in table {
                if key.get_ref() != "terms" {
                    return Err(at(
                        Some(key.span()),
                        format!(
                            "unknown key `{}` in `[{tool}]`: a tool's table holds `terms` only",
                            key.get_ref()
                        ),
                    ));
                }
                let list = value.get_ref().as_array().ok_or_else(|| {
                    at(
                        Some(value.span()),
                        format!("`terms` of `[{tool}]` is not a list of strings"),
                    )
                })?;
                for item in list {
                    let Some(term) = item.as_str() else {
                        return Err(at(
                            Some(value.span()),
                            format!("`terms` of `[{tool}]` holds `{item}`, not a string"),
                        ));
                    };
                    terms.push(term.to_string());
                }
            }
            terms.sort();
            terms.dedup();
            file.tools.insert(tool, terms);
        }
        file.read_counts(text);
        Ok(file)
    }

    /// The counts of the comments `policy learn` writes: a line holding one
    /// term and `# N session(s)`, under its tool's table header.
    fn read_counts(&mut self, text: &str) {
        let mut tool: Option<String> = None;
        for line in text.lines() {
            let line = line.trim();
            if line.starts_with('[') {
                tool = toml::from_str::<toml::Table>(line)
                    .ok()
                    .and_then(|t| t.keys().next().cloned());
                continue;
            }
            let Some(tool) = &tool else { continue };
            let Some((value, comment)) = line.rsplit_once('#') else {
                continue;
            };
            let Some(count) = comment
                .trim()
                .strip_suffix("sessions")
                .or_else(|| comment.trim().strip_suffix("session"))
                .and_then(|n| n.trim().parse::<u64>().ok())
            else {
                continue;
            };
            let value = value.trim().trim_start_matches("terms = [").trim();
            let value = value.trim_end_matches(']').trim().trim_end_matches(',');
            let Ok(parsed) = toml::from_str::<toml::Table>(&format!("t = {value}")) else {
                continue;
            };
            let Some(term) = parsed.get("t").and_then(|t| t.as_str()) else {
                continue;
            };
            if self.has(tool, term) {
                self.counts.insert((tool.clone(), term.to_string()), count);
            }
        }
    }

    /// Tools by name, each with its terms (sorted).
    pub fn tools(&self) -> &BTreeMap<String, Vec<String>> {
        &self.tools
    }

    /// A tool's terms (sorted); `None` for a tool the file does not name.
    pub fn terms(&self, tool: &str) -> Option<&[String]> {
        self.tools.get(tool).map(Vec::as_slice)
    }

    /// Whether the file has this term for this tool.
    pub fn has(&self, tool: &str, term: &str) -> bool {
        self.tools
            .get(tool)
            .is_some_and(|t| t.binary_search_by(|x| x.as_str().cmp(term)).is_ok())
    }

    /// How many sessions taught a term, where the file says.
    pub fn sessions(&self, tool: &str, term: &str) -> Option<u64> {
        self.counts
            .get(&(tool.to_string(), term.to_string()))
            .copied()
    }

    /// How many terms, over every tool.
    pub fn len(&self) -> usize {
        self.tools.values().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds a term `sessions` sessions taught, or raises its count to that
    /// (a count never goes down: logs that were rotated away taught it too).
    pub fn teach(&mut self, tool: &str, term: &str, sessions: u64) -> Taught {
        let terms = self.tools.entry(tool.to_string()).or_default();
        let taught = match terms.binary_search_by(|x| x.as_str().cmp(term)) {
            Ok(_) => Taught::Again,
            Err(i) => {
                terms.insert(i, term.to_string());
                Taught::New
            }
        };
        let count = self
            .counts
            .entry((tool.to_string(), term.to_string()))
            .or_insert(0);
        *count = (*count).max(sessions);
        taught
    }

    /// The file as text: the header, then a table per tool in name order,
    /// one term a line in order, each with its count where known. The same
    /// terms and counts always give the same bytes.
    pub fn to_toml_with_counts(&self) -> String {
        let mut out = String::from(HEADER);
        out.push('\n');
        for (tool, terms) in &self.tools {
            out.push('[');
            out.push_str(&key(tool));
            out.push_str("]\n");
            if terms.is_empty() {
                out.push_str("terms = []\n");
                continue;
            }
            out.push_str("terms = [\n");
            for term in terms {
                out.push_str("    ");
                out.push_str(&toml::Value::String(term.clone()).to_string());
                out.push(',');
                match self.sessions(tool, term) {
                    Some(1) => out.push_str(" # 1 session"),
                    Some(n) => out.push_str(&format!(" # {n} sessions")),
                    None => {}
                }
                out.push('\n');
            }
            out.push_str("]\n");
        }
        out
    }
}

/// A table's name as TOML writes it: bare where it may be, quoted
/// otherwise.
fn key(name: &str) -> String {
    let bare = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        name.to_string()
    } else {
        toml::Value::String(name.to_string()).to_string()
    }
}

/// 1-based line and column (in characters) of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(start..).map_or(1, |s| s.chars().count() + 1);
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_folded_to_one_form() {
        assert_eq!(
            normalize("  Jot   MEMOS\tdown ").as_deref(),
            Some("jot memos down")
        );
        // Full-width letters and an ideographic space are compatibility forms.
        assert_eq!(
            normalize("ＪＯＴ\u{3000}memos").as_deref(),
            Some("jot memos")
        );
        assert_eq!(normalize("目录里 有什么").as_deref(), Some("目录里 有什么"));
        assert_eq!(normalize(" \t "), None);
        assert_eq!(normalize(&"a".repeat(MAX_TERM_CHARS + 1)), None);
    }

    #[test]
    fn a_written_file_reads_back_the_same() {
        let mut file = TermsFile::new();
        file.teach("svc__notes", "jot memos down", 3);
        file.teach("svc__notes", "a note", 1);
        file.teach("odd name.with \"quotes\"", "目录里有什么", 2);
        let text = file.to_toml_with_counts();
        assert!(text.starts_with(HEADER), "{text}");
        assert!(
            text.contains("    \"jot memos down\", # 3 sessions\n"),
            "{text}"
        );
        assert!(text.contains("    \"a note\", # 1 session\n"), "{text}");
        assert!(text.contains("['odd name.with \"quotes\"']\n"), "{text}");
        let back = TermsFile::parse(&text).unwrap();
        assert_eq!(back, file);
        assert_eq!(back.to_toml_with_counts(), text);
    }

    #[test]
    fn teaching_keeps_what_the_file_had_and_its_order() {
        let mut file = TermsFile::parse(
            "[b]\nterms = [\"zeta\", \"alpha\"] # hand written\n[a]\nterms = [\"one\"]\n",
        )
        .unwrap();
        assert_eq!(file.terms("b").unwrap(), ["alpha", "zeta"]);
        assert_eq!(file.teach("b", "middle", 2), Taught::New);
        assert_eq!(file.teach("a", "one", 4), Taught::Again);
        let text = file.to_toml_with_counts();
        let a = text.find("[a]").unwrap();
        let b = text.find("[b]").unwrap();
        assert!(a < b, "{text}");
        assert!(
            text.contains("\"alpha\",\n    \"middle\", # 2 sessions\n    \"zeta\",\n"),
            "{text}"
        );
        assert!(text.contains("\"one\", # 4 sessions"), "{text}");
        // A count is never lowered.
        let mut again = TermsFile::parse(&text).unwrap();
        assert_eq!(again.sessions("a", "one"), Some(4));
        again.teach("a", "one", 2);
        assert_eq!(again.sessions("a", "one"), Some(4));
    }

    #[test]
    fn a_file_of_another_shape_is_named_by_line_and_column() {
        let err = TermsFile::parse("[a]\nterms = [\"x\"\n").unwrap_err();
        assert_eq!(err.line, 3, "{err}");
        assert!(err.message.contains("`]`"), "{err}");
        let err = TermsFile::parse("[a]\nterms = [\"x\"]\nwords = [\"y\"]\n").unwrap_err();
        assert_eq!((err.line, err.column), (3, 1), "{err}");
        assert!(err.message.contains("`words`"), "{err}");
        let err = TermsFile::parse("[a]\nterms = [\"x\", 3]\n").unwrap_err();
        assert_eq!(err.line, 2, "{err}");
        assert!(err.message.contains("not a string"), "{err}");
        let err = TermsFile::parse("\nloose = 1\n").unwrap_err();
        assert_eq!((err.line, err.column), (2, 1), "{err}");
        assert!(err.message.contains("not a table"), "{err}");
        let err = TermsFile::parse("[a]\nterms = \"x\"\n").unwrap_err();
        assert_eq!(err.line, 2, "{err}");
    }
}

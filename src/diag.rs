//! Diagnostics as data: a stable code, a severity, a span, a message and help.
//!
//! Rendering lives in `render`; nothing here decides how a diagnostic looks.

use std::borrow::Cow;
use std::fmt;

use crate::ast::Span;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// Every diagnostic the project emits, with its stable code.
///
/// Codes never change meaning once published; `PL0xx` are errors that stop a
/// policy from loading, `PL1xx` are lints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Code {
    /// The text does not follow the grammar.
    Syntax,
    /// A block is not closed before the end of the file.
    UnclosedBlock,
    /// A `}` closes no block.
    StrayClose,
    /// A rule word other than `Defer`, `NoDefer`, `Hide`, `Grant`.
    UnknownRule,
    /// A setting key the language does not know.
    UnknownSetting,
    /// A setting value of the wrong type or out of range.
    BadValue,
    /// The same setting twice in one scope and condition.
    DuplicateSetting,
    /// A statement or block where it may not stand.
    Misplaced,
    /// A second block for the same mode or bot.
    DuplicateBlock,
    /// The file is not UTF-8.
    NotUtf8,
    /// A rule inside a rule: `Defer(NoDefer(x))`.
    NestedRule,
    /// A rule with nothing in it: `Defer()`.
    EmptyRule,
    /// An empty pattern: `Defer("")`.
    EmptyPattern,
    /// `bot "*"`: a bot named `*`, indistinguishable from `bot *`.
    QuotedAnyBot,
    /// A `hint:` that is not one of the four hints, or stands where hints may not.
    BadHint,
    /// Deferred tools with no search tool to find them.
    Undiscoverable,
    /// Every item the rule matches is decided by a rule of higher precedence.
    Shadowed,
    /// The same rule again in the same scope and condition.
    Redundant,
    /// `Hide`, `Defer` or `Grant` naming a guard or search tool.
    NoEffectOnGuard,
    /// A selector that matches nothing in the registry or skill list.
    MatchesNothing,
    /// A `Grant` that grants nothing in the registry or skill list.
    GrantsNothing,
    /// `?`, `[`, `]`, `{` or `}` in a pattern, where they are literal.
    LiteralGlobChar,
    /// Deferred tools that do not fit in the catalog budget.
    CatalogOverflow,
    /// A mode whose first turn declares more tokens than `--max-tokens`.
    TokenBudget,
    /// `Defer` or `NoDefer` naming skills, which are never deferred.
    NoEffectOnSkill,
    /// Registry or skill names that differ only by case or Unicode form.
    LookAlikeName,
    /// A tool name OpenAI and Anthropic reject, sent to them under another.
    ProviderName,
    /// A `search` wildcard that makes ordinary registry tools search tools.
    SearchCapturesTools,
    /// A registry annotation that is not a boolean, read as absent.
    BadAnnotation,
    /// A `hint:` selector that no tool of the registry has.
    HintMatchesNothing,
    /// Hiding or deferring by `hint:` while the registry carries no annotations.
    NoAnnotations,
    /// The `lock` a policy names cannot be read, or is not a lock.
    BadLock,
    /// The `terms` file a policy names cannot be read, or is not a terms file.
    BadTerms,
    /// A learned term for a tool the registry lacks.
    TermsForUnknownTool,
    /// A registry tool the policy's lock does not hold: added, or changed.
    Unlocked,
    /// A guard or search tool that differs from the lock, which does not apply to it.
    UnlockedGuard,
}

impl Code {
    pub const ALL: [Code; 36] = [
        Code::Syntax,
        Code::UnclosedBlock,
        Code::StrayClose,
        Code::UnknownRule,
        Code::UnknownSetting,
        Code::BadValue,
        Code::DuplicateSetting,
        Code::Misplaced,
        Code::DuplicateBlock,
        Code::NotUtf8,
        Code::NestedRule,
        Code::EmptyRule,
        Code::EmptyPattern,
        Code::QuotedAnyBot,
        Code::BadHint,
        Code::Undiscoverable,
        Code::Shadowed,
        Code::Redundant,
        Code::NoEffectOnGuard,
        Code::MatchesNothing,
        Code::GrantsNothing,
        Code::LiteralGlobChar,
        Code::CatalogOverflow,
        Code::TokenBudget,
        Code::NoEffectOnSkill,
        Code::LookAlikeName,
        Code::ProviderName,
        Code::SearchCapturesTools,
        Code::BadAnnotation,
        Code::HintMatchesNothing,
        Code::NoAnnotations,
        Code::BadLock,
        Code::BadTerms,
        Code::TermsForUnknownTool,
        Code::Unlocked,
        Code::UnlockedGuard,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Code::Syntax => "PL001",
            Code::UnclosedBlock => "PL002",
            Code::StrayClose => "PL003",
            Code::UnknownRule => "PL004",
            Code::UnknownSetting => "PL005",
            Code::BadValue => "PL006",
            Code::DuplicateSetting => "PL007",
            Code::Misplaced => "PL008",
            Code::DuplicateBlock => "PL009",
            Code::NotUtf8 => "PL010",
            Code::NestedRule => "PL011",
            Code::EmptyRule => "PL012",
            Code::EmptyPattern => "PL013",
            Code::QuotedAnyBot => "PL020",
            Code::BadHint => "PL014",
            Code::Undiscoverable => "PL101",
            Code::Shadowed => "PL102",
            Code::Redundant => "PL103",
            Code::NoEffectOnGuard => "PL104",
            Code::MatchesNothing => "PL105",
            Code::GrantsNothing => "PL106",
            Code::LiteralGlobChar => "PL107",
            Code::CatalogOverflow => "PL108",
            Code::TokenBudget => "PL109",
            Code::NoEffectOnSkill => "PL110",
            Code::LookAlikeName => "PL115",
            Code::ProviderName => "PL116",
            Code::SearchCapturesTools => "PL120",
            Code::BadAnnotation => "PL117",
            Code::HintMatchesNothing => "PL121",
            Code::NoAnnotations => "PL122",
            Code::BadLock => "PL015",
            Code::BadTerms => "PL016",
            Code::TermsForUnknownTool => "PL125",
            Code::Unlocked => "PL123",
            Code::UnlockedGuard => "PL124",
        }
    }

    pub fn severity(self) -> Severity {
        if self.as_str().starts_with("PL0") {
            Severity::Error
        } else {
            Severity::Warning
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One finding about a policy file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    /// Lowercase, no trailing period, the user's input in backticks.
    /// Borrowed where the text is fixed: a file can hold a million errors,
    /// and two allocations each were most of the cost of reading it.
    pub message: Cow<'static, str>,
    pub span: Span,
    pub help: Option<Cow<'static, str>>,
    /// Edits that resolve the finding, for an editor to offer (the help
    /// says the same in words): a did-you-mean, the removal of a rule.
    pub fixes: Vec<Fix>,
    /// Other places the message speaks of (the earlier rule a rule repeats).
    pub related: Vec<Related>,
}

/// One edit that resolves a diagnostic: the text of `span` becomes `text`
/// (an empty `text` removes it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fix {
    /// What the edit does, in words: ``replace with `Defer` ``.
    pub title: String,
    pub span: Span,
    pub text: String,
}

impl Fix {
    /// Replaces `span` with a suggested name.
    pub fn replace(span: Span, text: impl Into<String>) -> Self {
        let text = text.into();
        Fix {
            title: format!("replace with `{text}`"),
            span,
            text,
        }
    }

    /// Removes `span`.
    pub fn remove(span: Span, title: impl Into<String>) -> Self {
        Fix {
            title: title.into(),
            span,
            text: String::new(),
        }
    }
}

/// Another place of the same file that a diagnostic speaks of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Related {
    pub span: Span,
    pub message: String,
}

impl Diagnostic {
    pub fn new(code: Code, span: Span, message: impl Into<Cow<'static, str>>) -> Self {
        Diagnostic {
            code,
            severity: code.severity(),
            message: message.into(),
            span,
            help: None,
            fixes: Vec::new(),
            related: Vec::new(),
        }
    }

    pub fn with_help(mut self, help: impl Into<Cow<'static, str>>) -> Self {
        self.help = Some(help.into());
        self
    }

    pub fn with_fix(mut self, fix: Fix) -> Self {
        self.fixes.push(fix);
        self
    }

    /// One fix per suggested name, each replacing `span`.
    pub fn with_suggestions<'a>(
        mut self,
        span: Span,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        self.fixes
            .extend(names.into_iter().take(3).map(|n| Fix::replace(span, n)));
        self
    }

    pub fn with_related(mut self, span: Span, message: impl Into<String>) -> Self {
        self.related.push(Related {
            span,
            message: message.into(),
        });
        self
    }
}

/// A policy's source text with its name, for locating spans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    pub name: String,
    pub text: String,
    line_starts: Vec<usize>,
}

impl SourceFile {
    /// A leading byte-order mark is dropped here, where policy text becomes a
    /// source, so that every position counts from the first visible character.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        let mut text = text.into();
        let bom = text.len() - crate::input::strip_bom(&text).len();
        text.drain(..bom);
        let line_starts = line_starts(&text);
        SourceFile {
            name: name.into(),
            text,
            line_starts,
        }
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.line_starts[line];
        let col = self
            .text
            .get(start..offset)
            .map_or(offset - start, |s| s.chars().count());
        (line + 1, col + 1)
    }

    /// The text of a 1-based line, without its line break.
    pub fn line_text(&self, line: usize) -> &str {
        let Some(&start) = self.line_starts.get(line.wrapping_sub(1)) else {
            return "";
        };
        let end = self
            .line_starts
            .get(line)
            .copied()
            .unwrap_or(self.text.len());
        let text = self.text.get(start..end).unwrap_or("");
        let text = text.strip_suffix('\n').unwrap_or(text);
        text.strip_suffix('\r').unwrap_or(text)
    }

    pub fn slice(&self, span: Span) -> &str {
        self.text.get(span.start..span.end).unwrap_or("")
    }
}

/// The length of the line break at byte `i`, if one starts there.
///
/// This is the one definition of a line break, the grammar's `NEWLINE`: `\n`,
/// `\r\n`, or a lone `\r` (old Mac files, and what some editors still write).
/// The line table and the formatter use it too, so that a position means the
/// same line everywhere.
pub fn line_break_len(bytes: &[u8], i: usize) -> Option<usize> {
    match bytes.get(i)? {
        b'\n' => Some(1),
        b'\r' if bytes.get(i + 1) == Some(&b'\n') => Some(2),
        b'\r' => Some(1),
        _ => None,
    }
}

/// The byte offset where each line starts, the first at 0.
pub fn line_starts(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut starts = vec![0];
    let mut i = 0;
    // Line breaks are ASCII, so a byte search finds them all.
    while let Some(n) = bytes[i..].iter().position(|&b| b == b'\n' || b == b'\r') {
        let at = i + n;
        let len = line_break_len(bytes, at).unwrap_or(1);
        i = at + len;
        starts.push(i);
    }
    starts
}

/// The text with every line break written as `\n`, for code that reads lines.
pub fn normalize_line_breaks(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('\r') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\r') {
        out.push_str(&rest[..at]);
        out.push('\n');
        let skip = line_break_len(rest.as_bytes(), at).unwrap_or(1);
        rest = &rest[at + skip..];
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

/// Levenshtein distance, for "did you mean" suggestions.
pub fn edit_distance(a: &str, b: &str) -> usize {
    // Names are short and mostly ASCII: compare bytes without collecting
    // characters, since a file with thousands of unknown words asks this for
    // each against every candidate.
    distance_within(a, b, usize::MAX).unwrap_or(usize::MAX)
}

/// [`edit_distance`], or `None` as soon as it is known to exceed `limit`.
pub(crate) fn distance_within(a: &str, b: &str, limit: usize) -> Option<usize> {
    if a.is_ascii() && b.is_ascii() {
        // Characters one has and the other lacks each need an edit: a cheap
        // lower bound that rules most candidates out before the table.
        if bag_distance(a.as_bytes(), b.as_bytes()) > limit {
            return None;
        }
        return levenshtein(a.as_bytes(), b.as_bytes(), limit);
    }
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    levenshtein(&a, &b, limit)
}

/// The larger of the counts of characters of `a` not in `b` and of `b` not
/// in `a` (as multisets): never more than the edit distance.
fn bag_distance(a: &[u8], b: &[u8]) -> usize {
    let mut count = [0i32; 128];
    for &c in a {
        count[usize::from(c & 0x7f)] += 1;
    }
    for &c in b {
        count[usize::from(c & 0x7f)] -= 1;
    }
    let (more, fewer) = count.iter().fold((0, 0), |(m, f), &c| {
        (m + c.max(0) as usize, f + (-c).max(0) as usize)
    });
    more.max(fewer)
}

fn levenshtein<T: PartialEq>(a: &[T], b: &[T], limit: usize) -> Option<usize> {
    const SHORT: usize = 64;
    let (mut prev_buf, mut cur_buf) = ([0usize; SHORT + 1], [0usize; SHORT + 1]);
    let (mut prev_vec, mut cur_vec);
    let (mut prev, mut cur): (&mut [usize], &mut [usize]) = if b.len() <= SHORT {
        (&mut prev_buf[..=b.len()], &mut cur_buf[..=b.len()])
    } else {
        prev_vec = vec![0; b.len() + 1];
        cur_vec = vec![0; b.len() + 1];
        (&mut prev_vec, &mut cur_vec)
    };
    for (j, p) in prev.iter_mut().enumerate() {
        *p = j;
    }
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        let mut least = cur[0];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
            least = least.min(cur[j + 1]);
        }
        // A row's smallest entry never decreases in later rows.
        if least > limit {
            return None;
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    Some(prev[b.len()]).filter(|&d| d <= limit)
}

/// The candidates closest to `input` (case-insensitively), best first, if any is close.
pub fn closest<'a>(input: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let lower = lowercase(input);
    let len = lower.chars().count();
    let limit = (input.chars().count() / 3).max(2);
    // Lengths further apart than the limit are further apart in edits too:
    // most candidates are ruled out without the quadratic distance.
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter_map(|c| {
            let c_lower = lowercase(c);
            if c_lower.chars().count().abs_diff(len) > limit {
                return None;
            }
            distance_within(&lower, &c_lower, limit).map(|d| (d, c))
        })
        .collect();
    scored.sort_by_key(|&(d, c)| (d, c));
    let best = scored.first().map(|&(d, _)| d);
    scored
        .into_iter()
        .take_while(|&(d, _)| Some(d) == best)
        .map(|(_, c)| c)
        .collect()
}

/// The text in lowercase, borrowed where it is ASCII without an uppercase
/// letter: the candidates of a suggestion (keywords, setting keys) mostly
/// are, and a file of unknown words asks for thousands of suggestions.
fn lowercase(text: &str) -> Cow<'_, str> {
    if text.is_ascii() && !text.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(text.to_lowercase())
    }
}

/// "did you mean `a`" / "did you mean `a` or `b`", or `None` when nothing is close.
pub fn did_you_mean<'a>(
    input: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let close = closest(input, candidates);
    if close.is_empty() {
        return None;
    }
    let list: Vec<String> = close.iter().take(3).map(|c| format!("`{c}`")).collect();
    Some(format!("did you mean {}", list.join(" or ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_count_characters() {
        let f = SourceFile::new("p", "ab\nçé x\n");
        assert_eq!(f.line_col(0), (1, 1));
        assert_eq!(f.line_col(3), (2, 1));
        // `x` is after two 2-byte characters and a space.
        assert_eq!(f.line_col(8), (2, 4));
        assert_eq!(f.line_text(2), "çé x");
        assert_eq!(f.line_text(9), "");
    }

    #[test]
    fn every_line_break_counts_once() {
        // `\n`, `\r\n` and a lone `\r`: the grammar's NEWLINE.
        let f = SourceFile::new("p", "a\rb\r\nc\nd");
        assert_eq!(f.line_col(2), (2, 1));
        assert_eq!(f.line_col(5), (3, 1));
        assert_eq!(f.line_col(7), (4, 1));
        assert_eq!(
            (1..=4).map(|l| f.line_text(l)).collect::<Vec<_>>(),
            ["a", "b", "c", "d"]
        );
        assert_eq!(normalize_line_breaks("a\rb\r\nc\nd"), "a\nb\nc\nd");
    }

    #[test]
    fn distances_stop_past_their_limit() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("été", "ete"), 2);
        assert_eq!(distance_within("kitten", "sitting", 3), Some(3));
        assert_eq!(distance_within("kitten", "sitting", 2), None);
        // Same letters, other order: the lower bound lets it through.
        assert_eq!(distance_within("ab", "ba", 2), Some(2));
        assert_eq!(bag_distance(b"ab", b"ba"), 0);
        assert_eq!(bag_distance(b"abc", b"x"), 3);
    }

    #[test]
    fn suggestions_are_close_names_only() {
        assert_eq!(
            did_you_mean("defer_loadin", ["defer_loading", "activation"]).as_deref(),
            Some("did you mean `defer_loading`")
        );
        assert_eq!(did_you_mean("zzzzzz", ["defer_loading"]), None);
    }

    #[test]
    fn codes_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for c in Code::ALL {
            assert!(seen.insert(c.as_str()), "{c} twice");
        }
    }
}

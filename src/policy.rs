//! The checked policy: the syntax tree lowered into rules and settings, each
//! knowing its scope, its `when` condition and where it was written.
//!
//! Everything that makes a policy invalid is found here (and in `syntax`); the
//! lints that only warn live in `lint`.

use std::collections::{BTreeSet, HashMap};
use std::fmt;

use crate::ast::{self, Ast, BlockHead, Item, Selector, SelectorKind, Span, StatementKind};
use crate::diag::{Code, Diagnostic, SourceFile, did_you_mean};
use crate::hint::Hint;
use crate::settings::{Key, SettingValue};

/// Where a rule or setting applies.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    Top,
    Mode(String),
    /// `bot * { }`
    AnyBot,
    Bot(String),
}

impl Scope {
    /// Higher is more specific: a named bot, then `bot *`, then a mode, then top level.
    pub fn specificity(&self) -> u8 {
        match self {
            Scope::Top => 0,
            Scope::Mode(_) => 1,
            Scope::AnyBot => 2,
            Scope::Bot(_) => 3,
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Top => f.write_str("top level"),
            Scope::Mode(m) => write!(f, "mode {m}"),
            Scope::AnyBot => f.write_str("bot *"),
            Scope::Bot(b) => write!(f, "bot {b}"),
        }
    }
}

/// A `when FLAG { }` or `when !FLAG { }` condition.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Condition {
    pub flag: String,
    pub negated: bool,
}

impl Condition {
    pub fn holds(&self, flags: &BTreeSet<String>) -> bool {
        flags.contains(&self.flag) != self.negated
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "when {}{}",
            if self.negated { "!" } else { "" },
            self.flag
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RuleKind {
    Guard,
    Search,
    Hide,
    Grant,
    NoDefer,
    Defer,
}

impl RuleKind {
    /// The canonical spelling, as the formatter writes it.
    pub fn word(self) -> &'static str {
        match self {
            RuleKind::Guard => "guard",
            RuleKind::Search => "search",
            RuleKind::Hide => "Hide",
            RuleKind::Grant => "Grant",
            RuleKind::NoDefer => "NoDefer",
            RuleKind::Defer => "Defer",
        }
    }

    /// The rule a word names, in any case (`defer` is `Defer`).
    pub fn from_word(word: &str) -> Option<RuleKind> {
        [
            RuleKind::Defer,
            RuleKind::NoDefer,
            RuleKind::Hide,
            RuleKind::Grant,
        ]
        .into_iter()
        .find(|k| k.word().eq_ignore_ascii_case(word))
    }
}

/// One rule statement: `guard`, `search`, `Defer`, `NoDefer`, `Hide` or `Grant`.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub kind: RuleKind,
    pub selectors: Vec<Selector>,
    pub scope: Scope,
    pub when: Option<Condition>,
    pub span: Span,
}

/// One `key = value` statement.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    pub key: Key,
    pub value: SettingValue,
    pub scope: Scope,
    pub when: Option<Condition>,
    pub span: Span,
}

/// A checked policy file. Rules and settings are in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub source: SourceFile,
    pub rules: Vec<Rule>,
    pub settings: Vec<Setting>,
    /// Declared modes, in file order.
    pub modes: Vec<String>,
    /// Bots with a block of their own, in file order (`bot *` is not one of them).
    pub bots: Vec<String>,
    pub has_any_bot: bool,
    /// The `lock = "..."` setting, if any; the lock itself is read by
    /// [`crate::lock::attach`], which needs the policy file's path.
    pub lock: Option<crate::lock::LockSetting>,
    /// The `terms = "..."` setting, if any: the learned search terms, read
    /// with the lock by [`crate::lock::attach`].
    pub terms: Option<crate::terms::TermsSetting>,
}

/// A policy that failed to load: every error found, and the source to show them against.
#[derive(Debug, Clone)]
pub struct LoadErrors {
    pub source: SourceFile,
    pub diagnostics: Vec<Diagnostic>,
}

impl fmt::Display for LoadErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for d in &self.diagnostics {
            let (line, col) = self.source.line_col(d.span.start);
            writeln!(
                f,
                "{}:{line}:{col}: {}[{}]: {}",
                self.source.name,
                d.severity.as_str(),
                d.code,
                d.message
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for LoadErrors {}

impl Policy {
    /// The flags its `when` blocks name, sorted: the flags a context may set.
    pub fn flags(&self) -> Vec<String> {
        let named: BTreeSet<&str> = self
            .rules
            .iter()
            .filter_map(|r| r.when.as_ref())
            .chain(self.settings.iter().filter_map(|s| s.when.as_ref()))
            .map(|c| c.flag.as_str())
            .collect();
        named.into_iter().map(str::to_string).collect()
    }

    /// Parses and checks a policy; every error in the file is reported at once.
    pub fn parse(name: impl Into<String>, text: impl Into<String>) -> Result<Policy, LoadErrors> {
        let source = SourceFile::new(name, text);
        let (policy, diagnostics) = Self::parse_with_diagnostics(source);
        if diagnostics
            .iter()
            .any(|d| d.severity == crate::diag::Severity::Error)
        {
            return Err(LoadErrors {
                source: policy.source,
                diagnostics,
            });
        }
        Ok(policy)
    }

    /// Reads a policy from bytes, saying so when they are not UTF-8.
    pub fn from_bytes(name: impl Into<String>, bytes: &[u8]) -> Result<Policy, LoadErrors> {
        let name = name.into();
        let bytes = crate::input::strip_bom_bytes(bytes);
        match std::str::from_utf8(bytes) {
            Ok(text) => Self::parse(name, text),
            Err(e) => {
                let text = String::from_utf8_lossy(bytes).into_owned();
                let at = e.valid_up_to();
                Err(LoadErrors {
                    diagnostics: vec![
                        Diagnostic::new(
                            Code::NotUtf8,
                            Span::new(at, at),
                            format!("the file is not UTF-8 (invalid byte at offset {at})"),
                        )
                        .with_help("save the policy as UTF-8"),
                    ],
                    source: SourceFile::new(name, text),
                })
            }
        }
    }

    /// The best-effort policy (everything that could be read) and all diagnostics.
    pub fn parse_with_diagnostics(source: SourceFile) -> (Policy, Vec<Diagnostic>) {
        let (ast, mut diags) = crate::syntax::parse(&source.text);
        let mut lower = Lower {
            source: &source,
            rules: Vec::new(),
            settings: Vec::new(),
            blocks: Vec::new(),
            block_at: HashMap::new(),
            seen_settings: HashMap::new(),
            lock: None,
            terms: None,
            diags: &mut diags,
        };
        lower.items(&ast, &Scope::Top, None);
        let mut modes = Vec::new();
        let mut bots = Vec::new();
        let mut has_any_bot = false;
        for (scope, _) in lower.blocks {
            match scope {
                Scope::Mode(m) => modes.push(m),
                Scope::Bot(b) => bots.push(b),
                Scope::AnyBot => has_any_bot = true,
                Scope::Top => {}
            }
        }
        let lock = lower.lock.take().map(|n| crate::lock::LockSetting {
            path: n.path,
            span: n.span,
            value_span: n.value_span,
            file: None,
        });
        let terms = lower.terms.take().map(|n| crate::terms::TermsSetting {
            path: n.path,
            span: n.span,
            value_span: n.value_span,
            file: None,
        });
        let policy = Policy {
            lock,
            terms,
            rules: lower.rules,
            settings: lower.settings,
            modes,
            bots,
            has_any_bot,
            source: source.clone(),
        };
        diags.sort_by_key(|d| (d.span.start, d.code));
        (policy, diags)
    }

    /// The statement's source text with runs of white space folded to one
    /// space, cut after [`TEXT_OF_CHARS`] characters with `…`: messages quote
    /// statements, and a rule of thousands of selectors must cost no more to
    /// quote than a short one.
    pub fn text_of(&self, span: Span) -> String {
        let text = self.source.slice(span);
        // Folding never lengthens text, so this much of it is enough.
        let mut cut = text.len().min(TEXT_OF_CHARS * 8);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let folded = fold_whitespace(&text[..cut]);
        match folded.char_indices().nth(TEXT_OF_CHARS) {
            Some((at, _)) => format!("{}…", &folded[..at]),
            None if cut < text.len() => format!("{folded}…"),
            None => folded,
        }
    }
}

mod file_settings;

pub use file_settings::{FileKey, LOCK, TERMS, check_path};

/// The most characters [`Policy::text_of`] quotes of a statement.
pub const TEXT_OF_CHARS: usize = 200;

/// One line of a statement: comments dropped (a `#` outside quotes runs to
/// the end of its line), runs of white space and line breaks as one space,
/// none just inside `( )` or before `,`. One pass: messages quote statements
/// by the thousand.
pub(crate) fn fold_whitespace(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let (mut quoted, mut escaped, mut comment, mut space) = (false, false, false, false);
    for c in s.chars() {
        if matches!(c, '\n' | '\r') {
            (quoted, escaped, comment, space) = (false, false, false, true);
            continue;
        }
        if comment {
            continue;
        }
        if c.is_whitespace() {
            space = true;
            continue;
        }
        if escaped {
            escaped = false;
        } else if c == '\\' && quoted {
            escaped = true;
        } else if c == '"' {
            quoted = !quoted;
        } else if c == '#' && !quoted {
            comment = true;
            continue;
        }
        if space && !out.is_empty() && !out.ends_with('(') && c != ')' && c != ',' {
            out.push(' ');
        }
        space = false;
        out.push(c);
    }
    out
}

struct Lower<'a> {
    source: &'a SourceFile,
    rules: Vec<Rule>,
    settings: Vec<Setting>,
    /// Mode and bot blocks seen so far, with their headers.
    blocks: Vec<(Scope, Span)>,
    /// Each of `blocks` by scope, so that a duplicate is found in one lookup.
    block_at: HashMap<Scope, Span>,
    seen_settings: HashMap<(Scope, Option<Condition>, Key), Span>,
    lock: Option<file_settings::Named>,
    terms: Option<file_settings::Named>,
    diags: &'a mut Vec<Diagnostic>,
}

impl Lower<'_> {
    fn items(&mut self, ast: &Ast, scope: &Scope, when: Option<&Condition>) {
        self.item_list(&ast.items, scope, when);
    }

    fn item_list(&mut self, items: &[Item], scope: &Scope, when: Option<&Condition>) {
        for item in items {
            match item {
                Item::Statement(s) => self.statement(s, scope, when),
                Item::Block(b) => self.block(b, scope, when),
            }
        }
    }

    fn location(&self, span: Span) -> String {
        let (line, col) = self.source.line_col(span.start);
        format!("line {line}, column {col}")
    }

    fn block(&mut self, b: &ast::Block, outer: &Scope, when: Option<&Condition>) {
        // `bot "*"` would name a bot called `*`, shown exactly like `bot *`:
        // whichever the author meant, the two read the same, so it is refused.
        if let BlockHead::Bot(Some(name)) = &b.head
            && name == "*"
        {
            self.diags.push(
                Diagnostic::new(
                    Code::QuotedAnyBot,
                    b.head_span,
                    "a bot cannot be named `*`: `bot \"*\"` would read as `bot *`, every bot",
                )
                .with_help("for rules that apply to every bot, write `bot *` without quotes"),
            );
            return;
        }
        let scope = match &b.head {
            BlockHead::Mode(name) => Scope::Mode(name.clone()),
            BlockHead::Bot(Some(name)) => Scope::Bot(name.clone()),
            BlockHead::Bot(None) => Scope::AnyBot,
            BlockHead::When { .. } => outer.clone(),
        };
        match &b.head {
            BlockHead::Mode(_) | BlockHead::Bot(_) if *outer != Scope::Top || when.is_some() => {
                self.diags.push(
                    Diagnostic::new(
                        Code::Misplaced,
                        b.head_span,
                        format!("`{scope}` must stand at top level, not inside another block"),
                    )
                    .with_help("move the block out to the top level of the file"),
                );
            }
            BlockHead::Mode(_) | BlockHead::Bot(_) => {
                if let Some(first) = self.block_at.get(&scope) {
                    let at = self.location(*first);
                    self.diags.push(
                        Diagnostic::new(
                            Code::DuplicateBlock,
                            b.head_span,
                            format!("`{scope}` already has a block (at {at})"),
                        )
                        .with_help("merge the two blocks into one"),
                    );
                } else {
                    self.blocks.push((scope.clone(), b.head_span));
                    self.block_at.insert(scope.clone(), b.head_span);
                    self.item_list(&b.items, &scope, None);
                }
            }
            BlockHead::When { flag, negated } => {
                if when.is_some() {
                    self.diags.push(
                        Diagnostic::new(
                            Code::Misplaced,
                            b.head_span,
                            "`when` blocks cannot be nested",
                        )
                        .with_help("a `when` block may stand at top level or directly in a mode or bot block"),
                    );
                    return;
                }
                let cond = Condition {
                    flag: flag.clone(),
                    negated: *negated,
                };
                self.item_list(&b.items, outer, Some(&cond));
            }
        }
    }

    fn statement(&mut self, s: &ast::Statement, scope: &Scope, when: Option<&Condition>) {
        match &s.kind {
            StatementKind::Guard(sels) | StatementKind::Search(sels) => {
                let kind = if matches!(s.kind, StatementKind::Guard(_)) {
                    RuleKind::Guard
                } else {
                    RuleKind::Search
                };
                if *scope != Scope::Top || when.is_some() {
                    self.diags.push(
                        Diagnostic::new(
                            Code::Misplaced,
                            s.span,
                            format!("`{}` must stand at top level", kind.word()),
                        )
                        .with_help(format!(
                            "`{}` applies in every mode and for every bot; move it out of the block",
                            kind.word()
                        )),
                    );
                    return;
                }
                for sel in sels {
                    if sel.kind == SelectorKind::Hint {
                        self.diags.push(
                            Diagnostic::new(
                                Code::BadHint,
                                sel.span,
                                format!("a hint cannot choose `{}` tools", kind.word()),
                            )
                            .with_help(format!(
                                "`{}` names its tools: a hint is what a server says of its own tools, so any server could make its tools `{}` tools by saying so",
                                kind.word(), kind.word()
                            )),
                        );
                        continue;
                    }
                    if sel.kind == SelectorKind::Skill {
                        self.diags.push(
                            Diagnostic::new(
                                Code::Misplaced,
                                sel.span,
                                format!("`{}` selects tools only, not skills", kind.word()),
                            )
                            .with_help(
                                "skills are never deferred; use `NoDefer` or `Grant` for them",
                            ),
                        );
                    }
                }
                self.check_patterns(sels);
                self.rules.push(Rule {
                    kind,
                    selectors: sels.clone(),
                    scope: scope.clone(),
                    when: None,
                    span: s.span,
                });
            }
            StatementKind::Rule {
                word,
                word_span,
                selectors,
            } => {
                let Some(kind) = RuleKind::from_word(word) else {
                    let lower = word.to_ascii_lowercase();
                    let help = if lower == "guard" || lower == "search" {
                        format!("`{lower}` is a statement, not a rule: write `{lower} name`")
                    } else {
                        did_you_mean(word, ["Defer", "NoDefer", "Hide", "Grant"]).unwrap_or_else(
                            || "the rules are `Defer`, `NoDefer`, `Hide` and `Grant`".to_string(),
                        )
                    };
                    self.diags.push(
                        Diagnostic::new(
                            Code::UnknownRule,
                            *word_span,
                            format!("unknown rule `{word}`"),
                        )
                        .with_help(help)
                        .with_suggestions(
                            *word_span,
                            crate::diag::closest(word, ["Defer", "NoDefer", "Hide", "Grant"]),
                        ),
                    );
                    return;
                };
                self.check_patterns(selectors);
                self.rules.push(Rule {
                    kind,
                    selectors: selectors.clone(),
                    scope: scope.clone(),
                    when: when.cloned(),
                    span: s.span,
                });
            }
            StatementKind::Setting {
                key,
                key_span,
                value,
                value_span,
            } => {
                if let Some(which) = FileKey::parse(key) {
                    let first = match which {
                        FileKey::Lock => self.lock.as_ref(),
                        FileKey::Terms => self.terms.as_ref(),
                    }
                    .map(|n| self.location(n.span));
                    let at_top = *scope == Scope::Top && when.is_none();
                    match file_settings::check(which, s.span, value, *value_span, at_top, first) {
                        Ok(named) => match which {
                            FileKey::Lock => self.lock = Some(named),
                            FileKey::Terms => self.terms = Some(named),
                        },
                        Err(d) => self.diags.push(d),
                    }
                    return;
                }
                let Some(k) = Key::parse(key) else {
                    let names = || Key::ALL.iter().map(|k| k.name()).chain([LOCK, TERMS]);
                    let help = did_you_mean(key, names()).unwrap_or_else(|| {
                        let all: Vec<String> = names().map(|k| format!("`{k}`")).collect();
                        format!("the settings are {}", all.join(", "))
                    });
                    self.diags.push(
                        Diagnostic::new(
                            Code::UnknownSetting,
                            *key_span,
                            format!("unknown setting `{key}`"),
                        )
                        .with_help(help)
                        .with_suggestions(*key_span, crate::diag::closest(key, names())),
                    );
                    return;
                };
                let v = match k.check(value) {
                    Ok(v) => v,
                    Err((message, help)) => {
                        self.diags.push(
                            Diagnostic::new(Code::BadValue, *value_span, message).with_help(help),
                        );
                        return;
                    }
                };
                let slot = (scope.clone(), when.cloned(), k);
                if let Some(first) = self.seen_settings.get(&slot) {
                    let at = self.location(*first);
                    let place = match (scope, when) {
                        (Scope::Top, None) => "at top level".to_string(),
                        (Scope::Top, Some(c)) => format!("under `{c}`"),
                        (s, None) => format!("in {s}"),
                        (s, Some(c)) => format!("in {s} under `{c}`"),
                    };
                    self.diags.push(
                        Diagnostic::new(
                            Code::DuplicateSetting,
                            s.span,
                            format!("`{}` is already set {place} (at {at})", k.name()),
                        )
                        .with_help("keep one of the two"),
                    );
                    return;
                }
                self.seen_settings.insert(slot, s.span);
                self.settings.push(Setting {
                    key: k,
                    value: v,
                    scope: scope.clone(),
                    when: when.cloned(),
                    span: s.span,
                });
            }
        }
    }

    fn check_patterns(&mut self, sels: &[Selector]) {
        for sel in sels {
            if sel.kind == SelectorKind::Hint {
                if let Some(d) = check_hint(sel) {
                    self.diags.push(d);
                }
            } else if sel.kind == SelectorKind::Tool
                && !sel.quoted
                && sel.pattern.eq_ignore_ascii_case("hint:")
            {
                self.diags.push(
                    Diagnostic::new(
                        Code::BadHint,
                        sel.span,
                        format!("`{}` needs a hint name after it", sel.pattern),
                    )
                    .with_help(hint_names()),
                );
            } else if sel.pattern.is_empty() {
                self.diags.push(
                    Diagnostic::new(
                        Code::EmptyPattern,
                        sel.span,
                        "an empty pattern matches nothing",
                    )
                    .with_help("write a name, or `*` to match everything"),
                );
            } else if sel.kind == SelectorKind::Tool
                && !sel.quoted
                && (sel.pattern == "skill:" || sel.pattern == "source:")
            {
                self.diags.push(
                    Diagnostic::new(
                        Code::EmptyPattern,
                        sel.span,
                        format!("`{}` needs a pattern after it", sel.pattern),
                    )
                    .with_help(format!("write `{0}name`, or `{0}*` for all", sel.pattern)),
                );
            }
        }
    }
}

fn hint_names() -> String {
    let all: Vec<String> = Hint::ALL.iter().map(|h| format!("`{h}`")).collect();
    format!("the hints are {}", all.join(", "))
}

/// A hint is one of four exact names, written bare: a pattern, a quoted or
/// an empty name would read as a choice the language does not offer.
fn check_hint(sel: &Selector) -> Option<Diagnostic> {
    let (message, help) = if sel.quoted {
        (
            format!("a hint name is never quoted: `hint:\"{}\"`", sel.pattern),
            match Hint::parse(&sel.pattern) {
                Some(h) => format!("write `{h}`"),
                None => hint_names(),
            },
        )
    } else if sel.pattern.contains('*') {
        (
            format!(
                "`hint:{}` is not a hint: hint names take no `*`",
                sel.pattern
            ),
            format!(
                "{}; a rule may name several, `Grant(hint:read_only, hint:idempotent)`",
                hint_names()
            ),
        )
    } else if Hint::parse(&sel.pattern).is_none() {
        (
            format!("unknown hint `hint:{}`", sel.pattern),
            crate::hint::unknown_help(&sel.pattern),
        )
    } else {
        return None;
    };
    let mut d = Diagnostic::new(Code::BadHint, sel.span, message).with_help(help);
    if !sel.pattern.contains('*') {
        let all: Vec<String> = Hint::ALL.iter().map(ToString::to_string).collect();
        let close = crate::diag::closest(
            &format!("hint:{}", sel.pattern),
            all.iter().map(String::as_str),
        );
        d = d.with_suggestions(sel.span, close);
    }
    Some(d)
}

#[cfg(test)]
pub(crate) mod tests;

//! The spanned syntax tree of one policy file, as written.
//!
//! Spans are kept here because people read diagnostics against them; the
//! compiled table drops them (see `table`).

/// A byte range in the policy source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Self {
        Span { start, end }
    }
}

/// A parsed file: its items in source order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Ast {
    pub items: Vec<Item>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Statement(Statement),
    Block(Block),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    pub head: BlockHead,
    /// The header, from the keyword to the name.
    pub head_span: Span,
    pub items: Vec<Item>,
    /// From the keyword to the closing `}`.
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockHead {
    Mode(String),
    /// `None` is `bot *`.
    Bot(Option<String>),
    When {
        flag: String,
        negated: bool,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    pub kind: StatementKind,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum StatementKind {
    Guard(Vec<Selector>),
    Search(Vec<Selector>),
    Rule {
        /// The rule word as written (`defer`, `NoDefer`, ...).
        word: String,
        word_span: Span,
        selectors: Vec<Selector>,
    },
    Setting {
        key: String,
        key_span: Span,
        value: Value,
        value_span: Span,
    },
}

/// A setting's value as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Integer(String),
    Bool(bool),
    Quoted(String),
    /// A word left unquoted; always an error, kept to say so precisely.
    Bare(String),
}

/// What a selector's pattern is matched against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SelectorKind {
    Tool,
    Skill,
    Source,
    /// `hint:NAME`: the pattern is one of the four hint names (checked).
    Hint,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    pub kind: SelectorKind,
    /// The pattern with quotes and escapes removed.
    pub pattern: String,
    /// Whether the pattern was written in quotes.
    pub quoted: bool,
    pub span: Span,
}

//! The question a runtime asks (an item in a context) and the answer it gets.

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::hint::HintSet;
use crate::registry::{Skill, Tool};

/// Where a question is asked: a mode, maybe a bot, the runtime's flags, and maybe
/// the runtime's own grants (an allow-list on top of the policy's).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Context {
    pub mode: Option<String>,
    pub bot: Option<String>,
    #[serde(default)]
    pub flags: BTreeSet<String>,
    /// Selectors in the policy's syntax without quotes: `Read`, `skill:review`,
    /// `source:mcp:*`, `hint:read_only`.
    #[serde(default)]
    pub grants: Option<Vec<String>>,
}

impl Context {
    /// The context in words, for messages: ``mode `work`, bot `ci`, flags
    /// `readonly` `` (``no mode`` for the default context).
    pub fn describe(&self) -> String {
        let mut parts = vec![match &self.mode {
            Some(m) => format!("mode `{m}`"),
            None => "no mode".to_string(),
        }];
        if let Some(b) = &self.bot {
            parts.push(format!("bot `{b}`"));
        }
        if !self.flags.is_empty() {
            let flags: Vec<String> = self.flags.iter().map(|f| format!("`{f}`")).collect();
            parts.push(format!("flags {}", flags.join(", ")));
        }
        parts.join(", ")
    }

    pub fn mode(mode: impl Into<String>) -> Self {
        Context {
            mode: Some(mode.into()),
            ..Context::default()
        }
    }

    pub fn with_bot(mut self, bot: impl Into<String>) -> Self {
        self.bot = Some(bot.into());
        self
    }

    pub fn with_flag(mut self, flag: impl Into<String>) -> Self {
        self.flags.insert(flag.into());
        self
    }

    pub fn with_grants<S: Into<String>>(mut self, grants: impl IntoIterator<Item = S>) -> Self {
        self.grants = Some(grants.into_iter().map(Into::into).collect());
        self
    }
}

/// Tools are deferred, declared or hidden; skills are listed or hidden.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ItemKind {
    Tool,
    Skill,
}

/// The facts about one item that a decision depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemRef<'a> {
    pub kind: ItemKind,
    pub name: &'a str,
    pub source: Option<&'a str>,
    /// The registry's `defer_loading` hint.
    pub defer_hint: bool,
    /// `false` for a skill whose entry says `"model_invocable": false`.
    pub model_invocable: bool,
    /// The tool's hints, resolved when its registry loaded: what `hint:`
    /// selectors match. Empty without a registry entry.
    pub hints: HintSet,
    /// The registry entry's `annotations` as written (`Null` when it has
    /// none), `None` without a registry entry: what the reference
    /// interpreter reads hints from, and explain quotes.
    pub annotations: Option<&'a serde_json::Value>,
    /// The tool's definition is not the one the policy's lock holds
    /// ([`Tool::unlocked`], resolved when the registry loaded). Always
    /// false for a skill and without a registry entry.
    pub unlocked: bool,
}

static NO_ANNOTATIONS: serde_json::Value = serde_json::Value::Null;

impl<'a> ItemRef<'a> {
    /// A tool known only by name (no registry entry).
    pub fn tool(name: &'a str) -> Self {
        ItemRef {
            kind: ItemKind::Tool,
            name,
            source: None,
            defer_hint: false,
            model_invocable: true,
            hints: HintSet::EMPTY,
            annotations: None,
            unlocked: false,
        }
    }

    /// A skill known only by name.
    pub fn skill(name: &'a str) -> Self {
        ItemRef {
            kind: ItemKind::Skill,
            ..ItemRef::tool(name)
        }
    }

    pub fn from_tool(t: &'a Tool) -> Self {
        ItemRef {
            kind: ItemKind::Tool,
            name: &t.name,
            source: t.source.as_deref(),
            defer_hint: t.defer_loading,
            model_invocable: true,
            hints: t.hints,
            annotations: Some(t.extra.get("annotations").unwrap_or(&NO_ANNOTATIONS)),
            unlocked: t.unlocked,
        }
    }

    pub fn from_skill(s: &'a Skill) -> Self {
        ItemRef {
            kind: ItemKind::Skill,
            name: &s.name,
            source: s.source.as_deref(),
            defer_hint: false,
            model_invocable: s.model_invocable,
            hints: HintSet::EMPTY,
            annotations: None,
            unlocked: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Exposure {
    Active,
    Deferred,
    Hidden,
}

impl fmt::Display for Exposure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Exposure::Active => "active",
            Exposure::Deferred => "deferred",
            Exposure::Hidden => "hidden",
        })
    }
}

/// Which line of the decision procedure (docs/language.md) decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CauseKind {
    Guard,
    Search,
    ModelInvocable,
    Hide,
    Grant,
    /// An unlocked tool (its definition is not the lock's), hidden or
    /// deferred by the effective `unlocked` setting.
    Lock,
    /// `nodefer`, as the command line spells it (not serde's `no_defer`).
    #[serde(rename = "nodefer")]
    NoDefer,
    Switch,
    Defer,
    Hint,
    Default,
}

impl CauseKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CauseKind::Guard => "guard",
            CauseKind::Search => "search",
            CauseKind::ModelInvocable => "model_invocable",
            CauseKind::Hide => "hide",
            CauseKind::Grant => "grant",
            CauseKind::Lock => "lock",
            CauseKind::NoDefer => "nodefer",
            CauseKind::Switch => "switch",
            CauseKind::Defer => "defer",
            CauseKind::Hint => "hint",
            CauseKind::Default => "default",
        }
    }

    /// Every cause, in the order of the decision procedure.
    pub const ALL: [CauseKind; 11] = [
        CauseKind::Guard,
        CauseKind::Search,
        CauseKind::ModelInvocable,
        CauseKind::Hide,
        CauseKind::Grant,
        CauseKind::Lock,
        CauseKind::NoDefer,
        CauseKind::Switch,
        CauseKind::Defer,
        CauseKind::Hint,
        CauseKind::Default,
    ];

    pub fn parse(s: &str) -> Option<CauseKind> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

impl fmt::Display for CauseKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What made a decision: a rule or setting statement of the policy (by its
/// index in the policy's statement list), or the runtime's own grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Origin {
    /// Index into `Policy::rules`.
    Rule(u32),
    /// Index into `Policy::settings`.
    Setting(u32),
}

/// The answer: exposure, the procedure line that decided, and the statement
/// that made it so (none for defaults, hints and the runtime's grants).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Decision {
    pub exposure: Exposure,
    pub cause: CauseKind,
    pub origin: Option<Origin>,
}

/// A context the policy cannot answer for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextError {
    pub message: String,
    pub help: Option<String>,
}

impl fmt::Display for ContextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(h) = &self.help {
            write!(f, " ({h})")?;
        }
        Ok(())
    }
}

impl std::error::Error for ContextError {}

/// The check every context goes through: a mode the policy does not declare is
/// an error naming the closest declared modes (unless it declares none). A
/// missing mode is the same error: rules inside mode blocks may hide what the
/// top level exposes, so "the top level only" would fail open (docs/language.md).
pub fn check_mode(modes: &[String], mode: Option<&str>) -> Result<(), ContextError> {
    if modes.is_empty() || mode.is_some_and(|mode| modes.iter().any(|m| m == mode)) {
        return Ok(());
    }
    let declared: Vec<String> = modes.iter().map(|m| format!("`{m}`")).collect();
    let declared = format!("the policy declares {}", declared.join(", "));
    let Some(mode) = mode else {
        return Err(ContextError {
            message: "the context names no mode".into(),
            help: Some(format!("{declared}; every context needs one of them")),
        });
    };
    let help =
        crate::diag::did_you_mean(mode, modes.iter().map(String::as_str)).unwrap_or(declared);
    Err(ContextError {
        message: format!("the policy declares no mode `{mode}`"),
        help: Some(help),
    })
}

/// The check of a context's flags: a flag no `when` block of the policy
/// names changes nothing, so setting one is most likely a misspelling that
/// would leave exposed what the intended flag hides. It is an error naming
/// the closest flags the policy names, as an unknown mode is, unless the
/// policy names no flag at all (as a policy without modes takes any mode).
pub fn check_flags(named: &[String], flags: &BTreeSet<String>) -> Result<(), ContextError> {
    if named.is_empty() {
        return Ok(());
    }
    let Some(flag) = flags.iter().find(|f| !named.contains(f)) else {
        return Ok(());
    };
    let list: Vec<String> = named.iter().map(|f| format!("`{f}`")).collect();
    let help = crate::diag::did_you_mean(flag, named.iter().map(String::as_str))
        .unwrap_or_else(|| format!("the policy's `when` blocks name {}", list.join(", ")));
    Err(ContextError {
        message: format!("no `when` block of the policy names the flag `{flag}`"),
        help: Some(help),
    })
}

/// The check of a context's runtime grants: each is a selector as a policy
/// writes one, so a grant that could only be a slip (empty, white space at an
/// end, `skill:` or `source:` with no pattern) is an error naming it, where
/// it would otherwise match nothing without a word. An empty list is fine:
/// it lets nothing through (docs/language.md).
pub fn check_grants(grants: Option<&[String]>) -> Result<(), ContextError> {
    for grant in grants.unwrap_or_default() {
        let (kind, pattern) = split_selector(grant);
        let prefix = grant[..grant.len() - pattern.len()].to_ascii_lowercase();
        let problem = if grant.trim().is_empty() {
            Some((
                "a runtime grant is empty".to_string(),
                "write a tool name, `skill:NAME`, `source:NAME` or a pattern with `*`".to_string(),
            ))
        } else if kind != crate::ast::SelectorKind::Tool && pattern.trim().is_empty() {
            Some((
                format!("the runtime grant `{grant}` has no pattern after `{prefix}`"),
                format!("write `{prefix}NAME`, or `{prefix}*` for all"),
            ))
        } else if kind == crate::ast::SelectorKind::Hint
            && crate::hint::Hint::parse(pattern).is_none()
        {
            Some((
                format!("the runtime grant `{grant}` names no hint"),
                crate::hint::unknown_help(pattern),
            ))
        } else if grant.trim() != grant {
            Some((
                format!("the runtime grant {grant:?} has white space at an end"),
                format!("write `{}`", grant.trim()),
            ))
        } else {
            None
        };
        if let Some((message, help)) = problem {
            return Err(ContextError {
                message,
                help: Some(help),
            });
        }
    }
    Ok(())
}

/// Runtime grants split into selector kind and pattern text. The prefixes
/// are read in any case, as the policy language reads them.
pub(crate) fn split_selector(s: &str) -> (crate::ast::SelectorKind, &str) {
    use crate::ast::SelectorKind;
    let strip = |prefix: &str| {
        s.get(..prefix.len())
            .filter(|p| p.eq_ignore_ascii_case(prefix))
            .map(|_| &s[prefix.len()..])
    };
    if let Some(p) = strip("skill:") {
        (SelectorKind::Skill, p)
    } else if let Some(p) = strip("source:") {
        (SelectorKind::Source, p)
    } else if let Some(p) = strip("hint:") {
        (SelectorKind::Hint, p)
    } else {
        (SelectorKind::Tool, s)
    }
}

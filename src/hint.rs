//! `hint:` selectors: what a tool says it does, from its MCP `annotations`.
//!
//! A registry entry's `annotations` object is read once, when the registry
//! loads, into a [`HintSet`]: the hints the tool has under MCP's meanings and
//! defaults. Deciding then only tests bits. The defaults err on the safe side:
//! a tool that says nothing is not read-only, is destructive and reaches the
//! open world.

use std::fmt;

use serde_json::Value;

/// One `hint:` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Hint {
    ReadOnly,
    Destructive,
    Idempotent,
    OpenWorld,
}

impl Hint {
    pub const ALL: [Hint; 4] = [
        Hint::ReadOnly,
        Hint::Destructive,
        Hint::Idempotent,
        Hint::OpenWorld,
    ];

    /// The name a policy writes after `hint:`.
    pub fn name(self) -> &'static str {
        match self {
            Hint::ReadOnly => "read_only",
            Hint::Destructive => "destructive",
            Hint::Idempotent => "idempotent",
            Hint::OpenWorld => "open_world",
        }
    }

    /// The MCP annotation that carries it.
    pub fn annotation(self) -> &'static str {
        match self {
            Hint::ReadOnly => "readOnlyHint",
            Hint::Destructive => "destructiveHint",
            Hint::Idempotent => "idempotentHint",
            Hint::OpenWorld => "openWorldHint",
        }
    }

    /// MCP's value for the annotation when a tool leaves it out.
    pub fn default_value(self) -> bool {
        matches!(self, Hint::Destructive | Hint::OpenWorld)
    }

    /// The hint a policy names; exact, as names are.
    pub fn parse(name: &str) -> Option<Hint> {
        Hint::ALL.into_iter().find(|h| h.name() == name)
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

impl fmt::Display for Hint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "hint:{}", self.name())
    }
}

/// The help for a hint name that is none of the four: the closest by edit
/// distance, or all of them.
pub fn unknown_help(name: &str) -> String {
    let all: Vec<String> = Hint::ALL.iter().map(ToString::to_string).collect();
    crate::diag::did_you_mean(&format!("hint:{name}"), all.iter().map(String::as_str))
        .unwrap_or_else(|| format!("the hints are `{}`", all.join("`, `")))
}

/// The four annotations as a tool gave them: `None` where it left one out
/// (or gave something other than a boolean, which counts as left out).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Annotations([Option<bool>; 4]);

impl Annotations {
    /// Reads an entry's `annotations` value; the second part names each
    /// annotation that was present but not a boolean (`None` inside it:
    /// the whole value is not an object).
    pub fn read(v: Option<&Value>) -> (Annotations, Vec<Option<Hint>>) {
        let mut out = Annotations::default();
        let mut bad = Vec::new();
        match v {
            None | Some(Value::Null) => {}
            Some(Value::Object(o)) => {
                for h in Hint::ALL {
                    match o.get(h.annotation()) {
                        None | Some(Value::Null) => {}
                        Some(Value::Bool(b)) => out.0[h as usize] = Some(*b),
                        Some(_) => bad.push(Some(h)),
                    }
                }
            }
            Some(_) => bad.push(None),
        }
        (out, bad)
    }

    /// The annotation as given, `None` when absent.
    pub fn given(&self, h: Hint) -> Option<bool> {
        self.0[h as usize]
    }

    /// The annotation with MCP's default filled in.
    pub fn value(&self, h: Hint) -> bool {
        self.given(h).unwrap_or(h.default_value())
    }

    /// Whether the tool has the hint: MCP's meanings, where a read-only tool
    /// is idempotent and never destructive.
    pub fn has(&self, h: Hint) -> bool {
        let read_only = self.value(Hint::ReadOnly);
        match h {
            Hint::ReadOnly => read_only,
            Hint::Destructive => !read_only && self.value(Hint::Destructive),
            Hint::Idempotent => read_only || self.value(Hint::Idempotent),
            Hint::OpenWorld => self.value(Hint::OpenWorld),
        }
    }

    pub fn hints(&self) -> HintSet {
        let mut set = HintSet::EMPTY;
        for h in Hint::ALL {
            if self.has(h) {
                set.0 |= h.bit();
            }
        }
        set
    }

    /// Why the tool has the hint or not, annotation by annotation, saying
    /// where a value is MCP's default: ``destructiveHint` absent, so true`.
    pub fn reason(&self, h: Hint) -> String {
        let say = |a: Hint| match self.given(a) {
            Some(v) => format!("`{}: {v}`", a.annotation()),
            None => format!(
                "`{}` absent, so {} (the default)",
                a.annotation(),
                a.default_value()
            ),
        };
        match h {
            Hint::ReadOnly | Hint::OpenWorld => say(h),
            Hint::Destructive if self.value(Hint::ReadOnly) => say(Hint::ReadOnly),
            Hint::Idempotent if self.value(Hint::ReadOnly) => say(Hint::ReadOnly),
            Hint::Destructive | Hint::Idempotent => {
                format!("{} and {}", say(Hint::ReadOnly), say(h))
            }
        }
    }
}

/// The hints one tool has: a bit per [`Hint`]. Empty for an item with no
/// registry entry, which no hint matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct HintSet(u8);

impl HintSet {
    pub const EMPTY: HintSet = HintSet(0);

    pub fn with(self, h: Hint) -> HintSet {
        HintSet(self.0 | h.bit())
    }

    pub fn contains(self, h: Hint) -> bool {
        self.0 & h.bit() != 0
    }

    pub fn iter(self) -> impl Iterator<Item = Hint> {
        Hint::ALL.into_iter().filter(move |&h| self.contains(h))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hints(v: Value) -> Vec<&'static str> {
        Annotations::read(Some(&v))
            .0
            .hints()
            .iter()
            .map(Hint::name)
            .collect()
    }

    #[test]
    fn mcp_defaults_err_on_the_safe_side() {
        assert_eq!(hints(json!({})), ["destructive", "open_world"]);
        assert_eq!(hints(Value::Null), ["destructive", "open_world"]);
        assert_eq!(
            hints(json!({"readOnlyHint": true, "destructiveHint": true})),
            ["read_only", "idempotent", "open_world"]
        );
        assert_eq!(
            hints(
                json!({"destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
            ),
            ["idempotent"]
        );
    }

    #[test]
    fn a_value_that_is_not_a_boolean_counts_as_absent() {
        let (a, bad) = Annotations::read(Some(&json!({"readOnlyHint": "yes", "openWorldHint": 0})));
        assert_eq!(a, Annotations::default());
        assert_eq!(bad, [Some(Hint::ReadOnly), Some(Hint::OpenWorld)]);
        let (a, bad) = Annotations::read(Some(&json!(["readOnlyHint"])));
        assert_eq!(a, Annotations::default());
        assert_eq!(bad, [None]);
    }

    #[test]
    fn reasons_say_when_a_value_is_the_default() {
        let (a, _) = Annotations::read(Some(&json!({"readOnlyHint": false})));
        assert_eq!(
            a.reason(Hint::Destructive),
            "`readOnlyHint: false` and `destructiveHint` absent, so true (the default)"
        );
        let (a, _) = Annotations::read(Some(&json!({"readOnlyHint": true})));
        assert_eq!(a.reason(Hint::Idempotent), "`readOnlyHint: true`");
    }
}

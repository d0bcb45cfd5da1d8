//! Settings (docs/language.md): their keys, the values each takes, and their defaults.

use serde::{Deserialize, Serialize};

use crate::ast::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Key {
    DeferLoading,
    Activation,
    MaxActivations,
    OnMiss,
    CatalogChars,
    CatalogLineChars,
    CatalogParams,
    Unlocked,
}

/// How activations persist (docs/runtime.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Activation {
    Sticky,
    PerPrompt,
}

/// What a direct call to a deferred tool does besides failing. `Activate`
/// declares it from the next step, at most `max_activations` tools between two
/// prompts (`Session::call`), as one search or load would.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnMiss {
    Activate,
    Error,
}

/// What becomes of an unlocked tool while the policy has a `lock`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unlocked {
    /// Hidden (cause `lock`), before any `NoDefer` or `Defer`.
    #[default]
    Hide,
    /// Deferred (cause `lock`): found by search, read before it is used.
    Defer,
    /// Decided as if there were no lock.
    Allow,
}

impl Unlocked {
    pub fn as_str(self) -> &'static str {
        match self {
            Unlocked::Hide => "hide",
            Unlocked::Defer => "defer",
            Unlocked::Allow => "allow",
        }
    }
}

/// A checked setting value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingValue {
    Bool(bool),
    Int(u32),
    Activation(Activation),
    OnMiss(OnMiss),
    Unlocked(Unlocked),
}

impl SettingValue {
    /// As the formatter writes it.
    pub fn to_source(self) -> String {
        match self {
            SettingValue::Bool(b) => b.to_string(),
            SettingValue::Int(i) => i.to_string(),
            SettingValue::Activation(Activation::Sticky) => "\"sticky\"".into(),
            SettingValue::Activation(Activation::PerPrompt) => "\"per_prompt\"".into(),
            SettingValue::OnMiss(OnMiss::Activate) => "\"activate\"".into(),
            SettingValue::OnMiss(OnMiss::Error) => "\"error\"".into(),
            SettingValue::Unlocked(u) => format!("\"{}\"", u.as_str()),
        }
    }
}

enum Type {
    Bool,
    Int(u32, u32),
    Word(&'static [&'static str]),
}

impl Key {
    pub const ALL: [Key; 8] = [
        Key::DeferLoading,
        Key::Activation,
        Key::MaxActivations,
        Key::OnMiss,
        Key::CatalogChars,
        Key::CatalogLineChars,
        Key::CatalogParams,
        Key::Unlocked,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Key::DeferLoading => "defer_loading",
            Key::Activation => "activation",
            Key::MaxActivations => "max_activations",
            Key::OnMiss => "on_miss",
            Key::CatalogChars => "catalog_chars",
            Key::CatalogLineChars => "catalog_line_chars",
            Key::CatalogParams => "catalog_params",
            Key::Unlocked => "unlocked",
        }
    }

    /// Keys are keywords, so case-insensitive like the rest.
    pub fn parse(s: &str) -> Option<Key> {
        Key::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s))
    }

    fn ty(self) -> Type {
        match self {
            Key::DeferLoading | Key::CatalogParams => Type::Bool,
            Key::Activation => Type::Word(&["sticky", "per_prompt"]),
            Key::OnMiss => Type::Word(&["activate", "error"]),
            Key::Unlocked => Type::Word(&["hide", "defer", "allow"]),
            Key::MaxActivations => Type::Int(1, 64),
            Key::CatalogChars => Type::Int(0, 1_000_000),
            Key::CatalogLineChars => Type::Int(20, 1000),
        }
    }

    /// Checks a written value; the error is a message and a help line.
    pub fn check(self, value: &Value) -> Result<SettingValue, (String, String)> {
        let name = self.name();
        match (self.ty(), value) {
            (Type::Bool, Value::Bool(b)) => Ok(SettingValue::Bool(*b)),
            (Type::Bool, _) => Err((
                format!("`{name}` takes `true` or `false`"),
                format!("write `{name} = true` or `{name} = false`"),
            )),
            (Type::Int(lo, hi), Value::Integer(s)) => match s.parse::<i64>() {
                Ok(n) if n >= i64::from(lo) && n <= i64::from(hi) => {
                    Ok(SettingValue::Int(n as u32))
                }
                _ => Err((
                    format!("`{name}` must be between {lo} and {hi}, found `{s}`"),
                    format!("use a whole number from {lo} to {hi}"),
                )),
            },
            (Type::Int(lo, hi), _) => Err((
                format!("`{name}` takes a whole number"),
                format!("use a whole number from {lo} to {hi}, without quotes"),
            )),
            (Type::Word(words), Value::Quoted(w)) => match words.iter().position(|x| x == w) {
                Some(i) => Ok(word_value(self, i)),
                None => {
                    let list: Vec<String> = words.iter().map(|w| format!("`\"{w}\"`")).collect();
                    let help = match crate::diag::closest(w, words.iter().copied()).first() {
                        Some(c) => format!("did you mean `\"{c}\"`"),
                        None => format!("use one of {}", list.join(", ")),
                    };
                    Err((format!("`{name}` cannot be `\"{w}\"`"), help))
                }
            },
            (Type::Word(words), Value::Bare(w)) if words.contains(&w.as_str()) => Err((
                format!("word values are quoted: `{w}` must be written `\"{w}\"`"),
                format!("write `{name} = \"{w}\"`"),
            )),
            (Type::Word(words), _) => {
                let list: Vec<String> = words.iter().map(|w| format!("`\"{w}\"`")).collect();
                Err((
                    format!("`{name}` takes one of {}", list.join(", ")),
                    format!("write `{name} = \"{}\"`", words[0]),
                ))
            }
        }
    }
}

fn word_value(key: Key, i: usize) -> SettingValue {
    match (key, i) {
        (Key::Activation, 0) => SettingValue::Activation(Activation::Sticky),
        (Key::Activation, _) => SettingValue::Activation(Activation::PerPrompt),
        (Key::Unlocked, 0) => SettingValue::Unlocked(Unlocked::Hide),
        (Key::Unlocked, 1) => SettingValue::Unlocked(Unlocked::Defer),
        (Key::Unlocked, _) => SettingValue::Unlocked(Unlocked::Allow),
        (_, 0) => SettingValue::OnMiss(OnMiss::Activate),
        _ => SettingValue::OnMiss(OnMiss::Error),
    }
}

/// The settings in effect for one context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    pub defer_loading: bool,
    pub activation: Activation,
    pub max_activations: u32,
    pub on_miss: OnMiss,
    pub catalog_chars: u32,
    pub catalog_line_chars: u32,
    pub catalog_params: bool,
    /// What becomes of an unlocked tool (only while the policy has a `lock`).
    #[serde(default)]
    pub unlocked: Unlocked,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            defer_loading: true,
            activation: Activation::Sticky,
            max_activations: 4,
            on_miss: OnMiss::Activate,
            catalog_chars: 4000,
            catalog_line_chars: 120,
            catalog_params: false,
            unlocked: Unlocked::Hide,
        }
    }
}

impl Settings {
    pub fn apply(&mut self, key: Key, value: SettingValue) {
        match (key, value) {
            (Key::DeferLoading, SettingValue::Bool(b)) => self.defer_loading = b,
            (Key::CatalogParams, SettingValue::Bool(b)) => self.catalog_params = b,
            (Key::Activation, SettingValue::Activation(a)) => self.activation = a,
            (Key::OnMiss, SettingValue::OnMiss(o)) => self.on_miss = o,
            (Key::MaxActivations, SettingValue::Int(n)) => self.max_activations = n,
            (Key::CatalogChars, SettingValue::Int(n)) => self.catalog_chars = n,
            (Key::CatalogLineChars, SettingValue::Int(n)) => self.catalog_line_chars = n,
            (Key::Unlocked, SettingValue::Unlocked(u)) => self.unlocked = u,
            // Values are checked against their key when a policy loads.
            _ => {}
        }
    }

    /// The value of one key, as the formatter would write it.
    pub fn value_of(&self, key: Key) -> SettingValue {
        match key {
            Key::DeferLoading => SettingValue::Bool(self.defer_loading),
            Key::CatalogParams => SettingValue::Bool(self.catalog_params),
            Key::Activation => SettingValue::Activation(self.activation),
            Key::OnMiss => SettingValue::OnMiss(self.on_miss),
            Key::MaxActivations => SettingValue::Int(self.max_activations),
            Key::CatalogChars => SettingValue::Int(self.catalog_chars),
            Key::CatalogLineChars => SettingValue::Int(self.catalog_line_chars),
            Key::Unlocked => SettingValue::Unlocked(self.unlocked),
        }
    }
}

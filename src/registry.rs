//! Tool registries and skill lists: the items a policy decides about.
//!
//! A registry is read from JSON in every shape runtimes declare tools in
//! (generic / pi, Anthropic, OpenAI, MCP), optionally under a `"tools"` key, and
//! keeps the order it was given. Every bad entry is reported by its path
//! (`tools[3].name`), never by a panic.

mod changes;
mod names;

use std::collections::{HashMap, HashSet};
use std::fmt;

use serde_json::{Map, Value};

use crate::diag::Code;
use crate::hint::{Annotations, HintSet};

pub use changes::{ToolField, changed_fields, changed_tools};

/// One tool definition, normalised from whatever shape it arrived in.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Tool {
    pub name: String,
    pub description: String,
    /// The JSON Schema of the tool's input, kept verbatim.
    pub parameters: Value,
    /// Origin tag such as `builtin` or `mcp:github`.
    pub source: Option<String>,
    /// The registry's own hint that the tool should be deferred (line 7 of the decision order, docs/language.md).
    pub defer_loading: bool,
    /// What `hint:` selectors match, read from `extra["annotations"]` by
    /// [`Registry::new`] (whatever is set here before is replaced).
    pub hints: HintSet,
    /// Whether the policy's lock file does not hold this definition (no
    /// entry of its name, or another digest): set by [`crate::lock::mark`]
    /// (an engine marks its registry whenever its policy or registry is
    /// set), false without a lock.
    pub unlocked: bool,
    /// The entry's fields the engine does not read (`cache_control`, `strict`,
    /// `annotations`...), kept verbatim so that a provider request carries them
    /// (docs/registry.md). A `type` here other than `function` or `custom` makes the
    /// entry a provider's own server tool, see [`Tool::is_server_tool`].
    pub extra: Map<String, Value>,
}

impl Tool {
    /// The compact definition a provider request carries, `{name, description, parameters}`.
    pub fn declaration(&self) -> Value {
        let mut map = Map::new();
        map.insert("name".into(), Value::String(self.name.clone()));
        map.insert(
            "description".into(),
            Value::String(self.description.clone()),
        );
        map.insert("parameters".into(), self.parameters.clone());
        Value::Object(map)
    }

    /// A provider's own tool (Anthropic `web_search_20250305`,
    /// `code_execution_*`...): its entry is passed to the provider untouched,
    /// never rewritten as a function with an empty schema.
    pub fn is_server_tool(&self) -> bool {
        self.extra.contains_key("type")
    }

    /// Parameter names from the schema's top-level `properties`, with whether each is required.
    pub fn parameter_names(&self) -> Vec<(&str, bool)> {
        let Some(props) = self.parameters.get("properties").and_then(Value::as_object) else {
            return Vec::new();
        };
        // A set, not a list: a registry from a server we do not control may
        // require 100,000 properties, and a lookup per property in a list of
        // them took 14 s.
        let required: HashSet<&str> = self
            .parameters
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        props
            .keys()
            .map(|k| (k.as_str(), required.contains(&k.as_str())))
            .collect()
    }
}

/// One skill, listed in `<available_skills>` and loaded through the skill tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    pub name: String,
    /// An internal key the skill tool accepts when no listed name matches.
    pub key: Option<String>,
    pub description: String,
    pub source: Option<String>,
    /// `false` keeps the skill hidden from the model whatever the policy says.
    pub model_invocable: bool,
}

/// A bad registry or skill list: where in the document, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    /// A path into the document such as `tools[3].name`; empty for the whole document.
    pub path: String,
    pub message: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "`{}`: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for LoadError {}

/// An entry that loads but that its author should know about (docs/registry.md:
/// names that read alike). Commands print these; `policy check` counts them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadWarning {
    pub code: Code,
    /// A path into the document such as `tools[3].name`.
    pub path: String,
    pub message: String,
    pub help: Option<String>,
}

impl fmt::Display for LoadWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.path, self.message)
    }
}

/// An annotation that is not a boolean (or `annotations` that is not an
/// object) counts as absent, so the tool gets MCP's default; said once per value.
fn annotation_warning(i: usize, t: &Tool, h: Option<crate::hint::Hint>) -> LoadWarning {
    let shown = crate::chars::escape_name(&t.name);
    let (path, message) = match h {
        Some(h) => (
            format!("tools[{i}].annotations.{}", h.annotation()),
            format!(
                "`{}` of tool `{shown}` is not a boolean; read as absent, so {}",
                h.annotation(),
                h.default_value()
            ),
        ),
        None => (
            format!("tools[{i}].annotations"),
            format!("`annotations` of tool `{shown}` is not an object; read as absent"),
        ),
    };
    LoadWarning {
        code: Code::BadAnnotation,
        path,
        message,
        help: Some("write `true` or `false`, or leave the annotation out".into()),
    }
}

fn err(path: impl Into<String>, message: impl Into<String>) -> LoadError {
    LoadError {
        path: path.into(),
        message: message.into(),
    }
}

/// Why a tool name would be refused by [`Registry::new`] (control, bidi or
/// zero-width characters, surrounding white space), if it would: a front end
/// that builds a registry from sources it does not control skips such a
/// tool with a warning instead of losing the whole registry.
pub fn name_problem(name: &str) -> Option<String> {
    names::unreadable(name)
}

/// An ordered set of named items with a by-name index.
#[derive(Debug, Clone)]
struct Indexed<T> {
    items: Vec<T>,
    by_name: HashMap<String, usize>,
    warnings: Vec<LoadWarning>,
}

impl<T> Default for Indexed<T> {
    fn default() -> Self {
        Indexed {
            items: Vec::new(),
            by_name: HashMap::new(),
            warnings: Vec::new(),
        }
    }
}

impl<T> Indexed<T> {
    fn build(items: Vec<T>, name: impl Fn(&T) -> &str, what: &str) -> Result<Self, LoadError> {
        let mut by_name = HashMap::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            if let Some(why) = names::unreadable(name(item)) {
                return Err(err(format!("{what}[{i}].name"), why));
            }
            if let Some(first) = by_name.insert(name(item).to_string(), i) {
                return Err(err(
                    format!("{what}[{i}].name"),
                    format!("duplicate name `{}` (first at {what}[{first}])", name(item)),
                ));
            }
        }
        let warnings = names::look_alikes(items.iter().map(&name), what);
        Ok(Indexed {
            items,
            by_name,
            warnings,
        })
    }
}

/// The complete tool registry of a runtime, in declaration order.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    tools: Indexed<Tool>,
}

impl Registry {
    /// Builds a registry from tools already in memory; names must be unique.
    /// Each tool's hints are resolved here, once, from its `annotations`.
    pub fn new(mut tools: Vec<Tool>) -> Result<Self, LoadError> {
        let mut bad = Vec::new();
        for (i, t) in tools.iter_mut().enumerate() {
            let (annotations, wrong) = Annotations::read(t.extra.get("annotations"));
            t.hints = annotations.hints();
            bad.extend(wrong.into_iter().map(|h| annotation_warning(i, t, h)));
        }
        let mut tools = Indexed::build(tools, |t| &t.name, "tools")?;
        tools.warnings.extend(bad);
        Ok(Registry { tools })
    }

    /// Whether any tool carries an `annotations` object: without one, every
    /// tool has MCP's defaults and hints cannot tell tools apart.
    pub fn has_annotations(&self) -> bool {
        self.tools
            .items
            .iter()
            .any(|t| t.extra.get("annotations").is_some_and(Value::is_object))
    }

    /// Reads a registry document: an array of tools, or an object with a `tools` array.
    pub fn from_json(text: &str) -> Result<Self, LoadError> {
        let doc: Value = serde_json::from_str(crate::input::strip_bom(text))
            .map_err(|e| err("", format!("not valid JSON: {e}")))?;
        let entries = match &doc {
            Value::Array(a) => a,
            Value::Object(o) => match o.get("tools") {
                Some(Value::Array(a)) => a,
                Some(_) => return Err(err("tools", "expected an array of tool definitions")),
                None => {
                    return Err(err(
                        "",
                        "expected an array of tool definitions or an object with a `tools` array",
                    ));
                }
            },
            _ => {
                return Err(err(
                    "",
                    "expected an array of tool definitions or an object with a `tools` array",
                ));
            }
        };
        let tools = entries
            .iter()
            .enumerate()
            .map(|(i, v)| parse_tool(i, v))
            .collect::<Result<Vec<_>, _>>()?;
        Self::new(tools)
    }

    pub fn tools(&self) -> &[Tool] {
        &self.tools.items
    }

    /// What loaded but reads badly: names that differ only by case or Unicode form.
    pub fn warnings(&self) -> &[LoadWarning] {
        &self.tools.warnings
    }

    pub fn len(&self) -> usize {
        self.tools.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.items.is_empty()
    }

    /// The tool's position in registry order.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.tools.by_name.get(name).copied()
    }

    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.index_of(name).map(|i| &self.tools.items[i])
    }

    /// Sets [`Tool::unlocked`] on every tool to what `unlocked` says of it;
    /// returns how many are unlocked. See [`crate::lock::mark`].
    pub fn set_unlocked(&mut self, mut unlocked: impl FnMut(&Tool) -> bool) -> usize {
        let mut n = 0;
        for t in &mut self.tools.items {
            t.unlocked = unlocked(t);
            n += usize::from(t.unlocked);
        }
        n
    }
}

/// The skills a runtime offers, in listing order.
#[derive(Debug, Clone, Default)]
pub struct SkillList {
    skills: Indexed<Skill>,
}

impl SkillList {
    pub fn new(skills: Vec<Skill>) -> Result<Self, LoadError> {
        let skills = Indexed::build(skills, |s| &s.name, "skills")?;
        check_keys(&skills)?;
        Ok(SkillList { skills })
    }

    /// Reads a JSON array of `{name, key?, description, source?, model_invocable?}`,
    /// optionally under a `skills` key.
    pub fn from_json(text: &str) -> Result<Self, LoadError> {
        let doc: Value = serde_json::from_str(crate::input::strip_bom(text))
            .map_err(|e| err("", format!("not valid JSON: {e}")))?;
        let entries = match &doc {
            Value::Array(a) => a,
            Value::Object(o) => match o.get("skills") {
                Some(Value::Array(a)) => a,
                _ => return Err(err("", "expected an array of skills")),
            },
            _ => return Err(err("", "expected an array of skills")),
        };
        let mut skills = Vec::with_capacity(entries.len());
        for (i, v) in entries.iter().enumerate() {
            let at = format!("skills[{i}]");
            let Value::Object(o) = v else {
                return Err(err(at, "expected an object"));
            };
            skills.push(Skill {
                name: required_str(o, &at, "name")?,
                key: optional_str(o, &at, "key")?,
                description: optional_str(o, &at, "description")?.unwrap_or_default(),
                source: optional_str(o, &at, "source")?,
                model_invocable: optional_bool(o, &at, "model_invocable")?.unwrap_or(true),
            });
        }
        Self::new(skills)
    }

    pub fn skills(&self) -> &[Skill] {
        &self.skills.items
    }

    /// What loaded but reads badly: names that differ only by case or Unicode form.
    pub fn warnings(&self) -> &[LoadWarning] {
        &self.skills.warnings
    }

    pub fn len(&self) -> usize {
        self.skills.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.skills.items.is_empty()
    }

    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills
            .by_name
            .get(name)
            .map(|&i| &self.skills.items[i])
    }

    /// The skill whose internal key is `key`, in listing order.
    pub fn by_key(&self, key: &str) -> Option<&Skill> {
        self.skills
            .items
            .iter()
            .find(|s| s.key.as_deref() == Some(key))
    }
}

/// A key must pick one skill whatever the context: a key that is another
/// skill's name resolves to that skill or to its own depending on which is
/// listed (`resolve_skill`), and a key shared by two skills resolves
/// by listing order. Both are refused, naming the two entries.
fn check_keys(skills: &Indexed<Skill>) -> Result<(), LoadError> {
    let mut keys: HashMap<&str, usize> = HashMap::new();
    for (i, skill) in skills.items.iter().enumerate() {
        let Some(key) = skill.key.as_deref() else {
            continue;
        };
        let at = format!("skills[{i}].key");
        if let Some(&j) = skills.by_name.get(key)
            && j != i
        {
            return Err(err(
                at,
                format!(
                    "`{key}` is also the name of skills[{j}]; a key must not be another skill's name"
                ),
            ));
        }
        if let Some(j) = keys.insert(key, i) {
            return Err(err(
                at,
                format!(
                    "`{key}` is also the key of skills[{j}] (`{}`); each key must pick one skill",
                    skills.items[j].name
                ),
            ));
        }
    }
    Ok(())
}

fn required_str(o: &Map<String, Value>, at: &str, field: &str) -> Result<String, LoadError> {
    match o.get(field) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(Value::String(_)) => Err(err(format!("{at}.{field}"), "must not be empty")),
        Some(other) => Err(err(
            format!("{at}.{field}"),
            format!("expected a string, found {}", kind(other)),
        )),
        None => Err(err(
            format!("{at}.{field}"),
            format!("missing: every entry needs a `{field}`"),
        )),
    }
}

fn optional_str(
    o: &Map<String, Value>,
    at: &str,
    field: &str,
) -> Result<Option<String>, LoadError> {
    match o.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(err(
            format!("{at}.{field}"),
            format!("expected a string, found {}", kind(other)),
        )),
    }
}

fn optional_bool(o: &Map<String, Value>, at: &str, field: &str) -> Result<Option<bool>, LoadError> {
    match o.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(err(
            format!("{at}.{field}"),
            format!("expected `true` or `false`, found {}", kind(other)),
        )),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Normalises one entry of any supported shape into a [`Tool`].
fn parse_tool(i: usize, v: &Value) -> Result<Tool, LoadError> {
    let at = format!("tools[{i}]");
    let Value::Object(outer) = v else {
        return Err(err(
            at,
            format!("expected a tool object, found {}", kind(v)),
        ));
    };
    // OpenAI Chat Completions nests the definition under `function`; the
    // Responses API and everyone else keep it flat.
    let (o, at) = match outer.get("function") {
        Some(Value::Object(inner)) if outer.get("name").is_none() => {
            (inner, format!("{at}.function"))
        }
        Some(other) if outer.get("name").is_none() => {
            return Err(err(
                format!("{at}.function"),
                format!("expected an object, found {}", kind(other)),
            ));
        }
        _ => (outer, at),
    };
    let name = required_str(o, &at, "name")?;
    let description = optional_str(o, &at, "description")?.unwrap_or_default();
    let mut parameters = None;
    for key in ["parameters", "input_schema", "inputSchema"] {
        match o.get(key) {
            None | Some(Value::Null) => {}
            Some(schema @ Value::Object(_)) => {
                parameters = Some(schema.clone());
                break;
            }
            Some(other) => {
                return Err(err(
                    format!("{at}.{key}"),
                    format!("expected a JSON Schema object, found {}", kind(other)),
                ));
            }
        }
    }
    let parameters =
        parameters.unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}}));
    // `source` and `defer_loading` may sit on the wrapper or the function object.
    let source = match optional_str(o, &at, "source")? {
        Some(s) => Some(s),
        None => optional_str(outer, &format!("tools[{i}]"), "source")?,
    };
    let defer_loading = match optional_bool(o, &at, "defer_loading")? {
        Some(b) => b,
        None => optional_bool(outer, &format!("tools[{i}]"), "defer_loading")?.unwrap_or(false),
    };
    Ok(Tool {
        name,
        description,
        parameters,
        source,
        defer_loading,
        extra: extra_fields(outer, o),
        ..Tool::default()
    })
}

/// Fields the engine reads; everything else an entry carries is kept in
/// [`Tool::extra`].
const READ_FIELDS: [&str; 7] = [
    "name",
    "description",
    "parameters",
    "input_schema",
    "inputSchema",
    "source",
    "defer_loading",
];

/// The entry's fields beyond those the engine reads, from the wrapper and (for
/// OpenAI's nested shape) the function object, the inner one winning. `type`
/// `function` or `custom` only says the entry is an ordinary tool, which every
/// provider shape writes its own way, so it is not kept.
fn extra_fields(outer: &Map<String, Value>, inner: &Map<String, Value>) -> Map<String, Value> {
    let nested = !std::ptr::eq(outer, inner);
    let mut extra = Map::new();
    let mut keep = |map: &Map<String, Value>| {
        for (key, value) in map {
            let envelope = nested && key == "function";
            let plain_type = key == "type" && matches!(value.as_str(), Some("function" | "custom"));
            if !envelope && !plain_type && !READ_FIELDS.contains(&key.as_str()) {
                extra.insert(key.clone(), value.clone());
            }
        }
    };
    keep(outer);
    if nested {
        keep(inner);
    }
    extra
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parameters keep the schema's order (`read(path, offset?, limit?)` in a
    /// catalog line), not an alphabetical one, and a tool's JSON keeps the
    /// order its registry wrote.
    #[test]
    fn parameters_and_fields_keep_the_registry_order() {
        let reg = Registry::from_json(
            r#"[{"name": "read", "parameters": {"type": "object", "required": ["path"],
                 "properties": {"path": {}, "offset": {}, "limit": {}}}}]"#,
        )
        .expect("loads");
        let t = &reg.tools()[0];
        assert_eq!(
            t.parameter_names(),
            [("path", true), ("offset", false), ("limit", false)]
        );
        let keys: Vec<&String> = t.parameters.as_object().expect("object").keys().collect();
        assert_eq!(keys, ["type", "required", "properties"]);
    }

    #[test]
    fn reads_every_shape_in_order() {
        let reg = Registry::from_json(
            r#"{"tools": [
                {"name": "a", "description": "generic", "parameters": {"type": "object"}},
                {"name": "b", "description": "anthropic", "input_schema": {"type": "object"}},
                {"type": "function", "function": {"name": "c", "description": "openai", "parameters": {}}},
                {"name": "d", "inputSchema": {"type": "object"}, "source": "mcp:x", "defer_loading": true}
            ]}"#,
        )
        .unwrap();
        let names: Vec<_> = reg.tools().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c", "d"]);
        assert_eq!(reg.get("b").unwrap().description, "anthropic");
        assert_eq!(reg.get("d").unwrap().source.as_deref(), Some("mcp:x"));
        assert!(reg.get("d").unwrap().defer_loading);
        assert!(!reg.get("a").unwrap().defer_loading);
        assert_eq!(reg.index_of("c"), Some(2));
    }

    #[test]
    fn bad_entries_are_named() {
        let e = Registry::from_json(r#"[{"name": "a"}, {"name": "b"}, {"name": 3}]"#).unwrap_err();
        assert_eq!(e.path, "tools[2].name");
        let e = Registry::from_json(r#"[{"name": "a"}, {"description": "x"}]"#).unwrap_err();
        assert_eq!(e.path, "tools[1].name");
        assert!(e.message.contains("missing"));
        let e = Registry::from_json(r#"[{"name": "a"}, {"name": "a"}]"#).unwrap_err();
        assert_eq!(e.path, "tools[1].name");
        assert!(e.message.contains("duplicate"));
        let e = Registry::from_json("[1,").unwrap_err();
        assert!(e.message.contains("not valid JSON"));
        let e = Registry::from_json(r#"[{"name": "a", "parameters": 3}]"#).unwrap_err();
        assert_eq!(e.path, "tools[0].parameters");
    }

    #[test]
    fn fields_the_engine_does_not_read_are_kept() {
        let reg = Registry::from_json(
            r#"[
                {"type": "function", "strict": false, "function": {"name": "a", "strict": true, "parameters": {}}},
                {"type": "custom", "name": "b", "cache_control": {"type": "ephemeral"}},
                {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}
            ]"#,
        )
        .unwrap();
        let [a, b, web] = reg.tools() else {
            panic!("three tools")
        };
        assert_eq!(
            Value::Object(a.extra.clone()),
            serde_json::json!({"strict": true})
        );
        assert_eq!(b.extra["cache_control"]["type"], "ephemeral");
        assert!(!a.is_server_tool() && !b.is_server_tool());
        assert!(web.is_server_tool());
        assert_eq!(web.extra["max_uses"], 5);
    }

    /// `annotations` is read from every shape that can carry it, resolved
    /// into hints once, and kept verbatim; a value that is not a boolean is a
    /// warning naming the entry and counts as absent.
    #[test]
    fn annotations_become_hints_in_every_shape() {
        use crate::hint::Hint;
        let reg = Registry::from_json(
            r#"{"tools": [
                {"name": "a", "parameters": {}, "annotations": {"readOnlyHint": true}},
                {"name": "b", "input_schema": {}, "annotations": {"destructiveHint": false}},
                {"type": "function", "function": {"name": "c", "parameters": {},
                  "annotations": {"idempotentHint": true, "openWorldHint": false}}},
                {"name": "d", "inputSchema": {}, "annotations": {"readOnlyHint": "yes", "title": "D"}},
                {"name": "e", "inputSchema": {}}
            ]}"#,
        )
        .unwrap();
        let hints = |n: &str| -> Vec<Hint> { reg.get(n).unwrap().hints.iter().collect() };
        assert_eq!(
            hints("a"),
            [Hint::ReadOnly, Hint::Idempotent, Hint::OpenWorld]
        );
        assert_eq!(hints("b"), [Hint::OpenWorld]);
        assert_eq!(hints("c"), [Hint::Destructive, Hint::Idempotent]);
        assert_eq!(hints("d"), [Hint::Destructive, Hint::OpenWorld]);
        assert_eq!(hints("e"), hints("d"));
        assert_eq!(
            reg.get("d").unwrap().extra["annotations"],
            serde_json::json!({"readOnlyHint": "yes", "title": "D"})
        );
        assert_eq!(
            reg.get("c").unwrap().extra["annotations"]["openWorldHint"],
            false
        );
        let [w] = reg.warnings() else {
            panic!("one warning: {:?}", reg.warnings())
        };
        assert_eq!(w.code, Code::BadAnnotation);
        assert_eq!(w.path, "tools[3].annotations.readOnlyHint");
        assert!(w.message.contains("tool `d`"), "{w}");
        assert!(reg.has_annotations());
        let bare = Registry::from_json(r#"[{"name": "x"}]"#).unwrap();
        assert!(!bare.has_annotations());
    }

    #[test]
    fn skills_default_to_invocable() {
        let s = SkillList::from_json(
            r#"[{"name": "review", "key": "code-review", "description": "d"},
                {"name": "secret", "model_invocable": false}]"#,
        )
        .unwrap();
        assert!(s.get("review").unwrap().model_invocable);
        assert!(!s.get("secret").unwrap().model_invocable);
        assert_eq!(s.by_key("code-review").unwrap().name, "review");
        let e = SkillList::from_json(r#"[{"name": "x", "model_invocable": "no"}]"#).unwrap_err();
        assert_eq!(e.path, "skills[0].model_invocable");
    }

    #[test]
    fn a_key_picks_one_skill() {
        let e = SkillList::from_json(r#"[{"name": "lint"}, {"name": "review", "key": "lint"}]"#)
            .unwrap_err();
        assert_eq!(e.path, "skills[1].key");
        assert!(e.message.contains("name of skills[0]"), "{e}");
        let e = SkillList::from_json(
            r#"[{"name": "a", "key": "k"}, {"name": "b"}, {"name": "c", "key": "k"}]"#,
        )
        .unwrap_err();
        assert_eq!(e.path, "skills[2].key");
        assert!(e.message.contains("key of skills[0] (`a`)"), "{e}");
        // A skill's key may repeat its own name.
        assert!(SkillList::from_json(r#"[{"name": "a", "key": "a"}]"#).is_ok());
    }

    #[test]
    fn a_leading_byte_order_mark_is_skipped() {
        let reg = Registry::from_json("\u{feff}[{\"name\": \"a\"}]").unwrap();
        assert_eq!(reg.len(), 1);
        let skills = SkillList::from_json("\u{feff}[{\"name\": \"s\"}]").unwrap();
        assert_eq!(skills.len(), 1);
    }
}

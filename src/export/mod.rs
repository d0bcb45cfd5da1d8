//! `policy export`: the policy written into an MCP client's own settings, for
//! users who run no gateway. The servers file becomes the client's server
//! entries (as written, `${VAR}` left for the client), and each context (a
//! mode, or no mode) becomes the client's allow, deny and defer keys for the
//! tools the registry has. No client holds the whole language: the
//! [`Report`] says, tool by tool, what an export could not carry over, what
//! it did instead, and which rule decided it.
//!
//! The shared part lives here: the servers, the decision table per context
//! ([`Model`]), the report, and the edits a client's files are made of
//! ([`FileOut`]), applied by [`json_edit`] (JSON with comments, span
//! preserving) or [`toml_merge`] (through `toml_edit`). One file per client.

mod claude_code;
mod codex;
mod gemini;
mod goose;
pub mod json_edit;
mod opencode;
pub mod toml_merge;
mod vscode;
mod zed;

use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::decision::{CauseKind, Context, Exposure, ItemRef};
use crate::gateway::servers;
use crate::policy::{Policy, RuleKind};
use crate::registry::Registry;
use crate::settings::Key;
use crate::table::Table;

/// What an export's report says of every feature it cannot carry.
pub const GATEWAY_NOTE: &str = "behind `policy gateway` these hold";

/// The clients an export writes for, by the names `--to` takes.
pub const CLIENTS: [&str; 8] = [
    "claude-code",
    "codex",
    "gemini-cli",
    "qwen-code",
    "opencode",
    "vscode",
    "goose",
    "zed",
];

/// What becomes of a deferred tool where the client cannot defer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fidelity {
    /// Left out: never more exposure than the policy gives.
    #[default]
    Hide,
    /// Declared from the first turn, as an active tool is.
    Declare,
}

/// One server of the servers file, as written.
#[derive(Debug, Clone)]
pub struct Server {
    pub name: String,
    /// The entry's fields as the file writes them, `${VAR}` unexpanded.
    pub entry: Map<String, Value>,
    /// A remote (streamable HTTP) server.
    pub remote: bool,
}

impl Server {
    /// A string field of the entry.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.entry.get(key).and_then(Value::as_str)
    }

    /// The entry's `args`, as strings.
    pub fn args(&self) -> Vec<String> {
        strings(self.entry.get("args"))
    }

    /// An object field of the entry (`env`, `headers`), in file order.
    pub fn map(&self, key: &str) -> Option<&Map<String, Value>> {
        self.entry.get(key).and_then(Value::as_object)
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Reads a servers file as the gateway does (every problem reported, with
/// its JSON path), keeping each enabled server's entry as written.
pub fn read_servers(text: &str, dir: &Path) -> Result<(Vec<Server>, Vec<String>), String> {
    // Checked with every `${VAR}` set, so that an unset variable is the
    // client's to expand, not an error here.
    let checked =
        servers::parse_with_env(text, dir, &|_| Some("x".to_string())).map_err(|problems| {
            problems
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        })?;
    let raw: Value = serde_json::from_str(crate::input::strip_bom(text))
        .map_err(|e| format!("not a servers file: {e}"))?;
    let entries = raw
        .get("mcpServers")
        .or_else(|| raw.get("servers"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let out = checked
        .servers
        .iter()
        .map(|spec| Server {
            name: spec.name.clone(),
            entry: entries
                .get(&spec.name)
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            remote: matches!(spec.transport, servers::Transport::Http { .. }),
        })
        .collect();
    let warnings = checked.warnings.iter().map(ToString::to_string).collect();
    Ok((out, warnings))
}

/// One tool's decision in one context.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The gateway's name, `SERVER__tool`.
    pub name: String,
    pub server: String,
    /// The server's own name for it.
    pub tool: String,
    pub exposure: Exposure,
    pub cause: CauseKind,
    /// The deciding statement, `file:line`; none for a default.
    pub rule: Option<String>,
}

/// One context's decisions, in registry order.
#[derive(Debug, Clone, Serialize)]
pub struct Ctx {
    pub context: Context,
    pub rows: Vec<Row>,
}

impl Ctx {
    /// The mode, or `default` for no mode: the profile's name where the
    /// client has profiles.
    pub fn label(&self) -> &str {
        self.context.mode.as_deref().unwrap_or("default")
    }

    /// The context's rows of server `name`.
    pub fn of<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Row> + 'a {
        self.rows.iter().filter(move |r| r.server == name)
    }
}

/// Everything an export is made from.
#[derive(Debug, Clone)]
pub struct Model {
    pub servers: Vec<Server>,
    pub contexts: Vec<Ctx>,
    /// Registry tools of no server in the servers file: not exported.
    pub strays: Vec<String>,
    /// Features of the policy no client holds, with where the policy says them.
    pub features: Vec<Feature>,
    pub fidelity: Fidelity,
}

/// A feature of the policy that no export carries.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Feature {
    pub feature: String,
    /// `file:line` of the first statement that uses it.
    pub rule: Option<String>,
}

/// Decides every tool of `registry` in every context: each of `modes`, or
/// every mode the policy declares (none: no mode), with `flags` set.
pub fn model(
    policy: &Policy,
    registry: &Registry,
    servers: Vec<Server>,
    modes: &[String],
    flags: &[String],
    fidelity: Fidelity,
) -> Result<Model, String> {
    let table = Table::compile(policy);
    let modes: Vec<Option<String>> = if !modes.is_empty() {
        modes.iter().cloned().map(Some).collect()
    } else if table.modes().is_empty() {
        vec![None]
    } else {
        table.modes().iter().cloned().map(Some).collect()
    };
    let mut strays = Vec::new();
    let mut tools = Vec::new();
    for t in registry.tools() {
        let server = t.name.split_once("__");
        let found = server.filter(|(s, _)| {
            servers.iter().any(|x| x.name == *s)
                && t.source
                    .as_deref()
                    .is_none_or(|src| src == format!("mcp:{s}"))
        });
        match found {
            Some((s, rest)) => tools.push((t, s.to_string(), rest.to_string())),
            None => strays.push(t.name.clone()),
        }
    }
    let mut contexts = Vec::new();
    for mode in modes {
        let mut context = Context {
            mode,
            ..Context::default()
        };
        context.flags = flags.iter().cloned().collect();
        let resolved = table.resolve(&context).map_err(|e| e.to_string())?;
        let rows = tools
            .iter()
            .map(|(t, server, tool)| {
                let item = ItemRef::from_tool(t);
                let d = table.decide(&resolved, &item);
                let cause = crate::explain::cause(policy, &d, &item);
                Row {
                    name: t.name.clone(),
                    server: server.clone(),
                    tool: tool.clone(),
                    exposure: d.exposure,
                    cause: d.cause,
                    rule: cause.rule.map(|r| format!("{}:{}", r.file, r.line)),
                }
            })
            .collect();
        contexts.push(Ctx { context, rows });
    }
    Ok(Model {
        servers,
        contexts,
        strays,
        features: features(policy, &table),
        fidelity,
    })
}

/// The features of `policy` that no client's settings hold.
fn features(policy: &Policy, table: &Table) -> Vec<Feature> {
    let at = |span: crate::ast::Span| {
        let r = crate::explain::rule_ref(policy, span);
        Some(format!("{}:{}", r.file, r.line))
    };
    let mut out = Vec::new();
    if let Some(r) = policy.rules.iter().find(|r| r.kind == RuleKind::Search) {
        out.push(Feature {
            feature: "search and the catalog of deferred tools".into(),
            rule: at(r.span),
        });
    } else if table.has_search() {
        out.push(Feature {
            feature: "search and the catalog of deferred tools".into(),
            rule: None,
        });
    }
    if let Some(r) = policy.rules.iter().find(|r| r.kind == RuleKind::Guard) {
        out.push(Feature {
            feature: "guards checked at call time".into(),
            rule: at(r.span),
        });
    }
    if let Some(r) = policy
        .rules
        .iter()
        .find(|r| r.kind == RuleKind::Grant && r.when.is_some())
    {
        out.push(Feature {
            feature: "grants that a flag turns on at call time".into(),
            rule: at(r.span),
        });
    }
    if let Some(s) = policy.settings.iter().find(|s| s.key == Key::OnMiss) {
        out.push(Feature {
            feature: "`on_miss` (a call of a tool not declared)".into(),
            rule: at(s.span),
        });
    }
    if let Some(l) = &policy.lock {
        out.push(Feature {
            feature: "the lock of approved tool definitions".into(),
            rule: at(l.span),
        });
    }
    out.push(Feature {
        feature: "runtime grants at call time".into(),
        rule: None,
    });
    out
}

/// What an export did with one tool whose decision the client cannot hold.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Loss {
    /// The context's mode; none for no mode.
    pub mode: Option<String>,
    pub tool: String,
    /// What the policy decides.
    pub policy: Exposure,
    /// What the client's settings say instead: `hidden`, `declared`, or
    /// `deferred`.
    pub exported: &'static str,
    pub why: String,
    /// The deciding statement, `file:line`.
    pub rule: Option<String>,
}

/// The fidelity report: what the export could not carry, and what it did.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub client: &'static str,
    pub fidelity: Fidelity,
    /// The contexts exported: `mode `work``, or `no mode`.
    pub contexts: Vec<String>,
    pub lost: Vec<Loss>,
    /// Registry tools of no server in the servers file.
    pub not_exported_tools: Vec<String>,
    pub features: Vec<Feature>,
    pub note: &'static str,
    /// Notes of the client (what it expands, what a key also means).
    pub notes: Vec<String>,
    /// Whether nothing the policy decides was lost.
    pub clean: bool,
}

impl Report {
    fn new(client: &'static str, model: &Model) -> Report {
        Report {
            client,
            fidelity: model.fidelity,
            contexts: model
                .contexts
                .iter()
                .map(|c| match &c.context.mode {
                    Some(m) => format!("mode `{m}`"),
                    None => "no mode".to_string(),
                })
                .collect(),
            lost: Vec::new(),
            not_exported_tools: model.strays.clone(),
            features: model.features.clone(),
            note: GATEWAY_NOTE,
            notes: Vec::new(),
            clean: true,
        }
    }

    /// Records a tool the client cannot hold as the policy decides it.
    pub fn lose(&mut self, ctx: &Ctx, row: &Row, exported: &'static str, why: impl Into<String>) {
        self.lost.push(Loss {
            mode: ctx.context.mode.clone(),
            tool: row.name.clone(),
            policy: row.exposure,
            exported,
            why: why.into(),
            rule: row.rule.clone(),
        });
    }

    fn finish(mut self) -> Report {
        self.clean = self.lost.is_empty() && self.not_exported_tools.is_empty();
        self
    }

    /// The report for people (standard error).
    pub fn human(&self) -> String {
        let mut out = format!(
            "export to {} ({}; deferred tools where it cannot defer: {}):\n",
            self.client,
            self.contexts.join(", "),
            match self.fidelity {
                Fidelity::Hide => "hidden",
                Fidelity::Declare => "declared",
            }
        );
        if self.lost.is_empty() {
            out += "  every tool's decision is held: nothing lost\n";
        }
        for l in &self.lost {
            let mode = l
                .mode
                .as_deref()
                .map(|m| format!("[{m}] "))
                .unwrap_or_default();
            let rule = l
                .rule
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            out += &format!(
                "  {mode}{}: {} in the policy{rule}, {} here: {}\n",
                l.tool, l.policy, l.exported, l.why
            );
        }
        if !self.not_exported_tools.is_empty() {
            out += &format!(
                "  not of a server in the servers file, left out: {}\n",
                self.not_exported_tools.join(", ")
            );
        }
        for n in &self.notes {
            out += &format!("  note: {n}\n");
        }
        if !self.features.is_empty() {
            out += &format!("never exported ({}):\n", self.note);
            for f in &self.features {
                let rule = f
                    .rule
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default();
                out += &format!("  {}{rule}\n", f.feature);
            }
        }
        out
    }
}

/// A file's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON, read with comments and trailing commas (JSONC).
    Json,
    Toml,
    /// A file the export owns whole (its text is the one edit's string).
    Text,
    /// A file written whole that may hold what the export does not own:
    /// never written over an existing file that differs.
    Whole,
}

/// One change to a settings file: the value at a key path.
#[derive(Debug, Clone, PartialEq)]
pub enum Edit {
    /// The value at `path` becomes `value` (created with its parents).
    Set(Vec<String>, Value),
    /// The array at `path` keeps the strings [`Owned`] does not claim, in
    /// order, and ends with `items`.
    List {
        path: Vec<String>,
        items: Vec<String>,
        owned: Owned,
    },
    /// The object at `path` keeps the members [`Owned`] does not claim, in
    /// order, and ends with `entries`.
    Entries {
        path: Vec<String>,
        entries: Map<String, Value>,
        owned: Owned,
    },
}

/// The entries of a list or object an export owns: each prefix itself, or
/// a prefix followed by the separator (`mcp__fs`, `mcp__fs__read`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owned {
    pub prefixes: Vec<String>,
    pub sep: &'static str,
}

impl Owned {
    /// The entries named `mcp__SERVER` or `mcp__SERVER__tool` of the
    /// exported servers: how Claude Code and Qwen Code name MCP tools.
    pub fn mcp_tools(model: &Model) -> Owned {
        Owned {
            prefixes: model
                .servers
                .iter()
                .map(|s| format!("mcp__{}", s.name))
                .collect(),
            sep: "__",
        }
    }

    pub fn claims(&self, entry: &str) -> bool {
        self.prefixes.iter().any(|p| {
            entry == p
                || entry
                    .strip_prefix(p.as_str())
                    .is_some_and(|rest| rest.starts_with(self.sep))
        })
    }
}

impl Edit {
    pub fn set(path: &[&str], value: Value) -> Edit {
        Edit::Set(keys(path), value)
    }
}

/// A key path.
pub fn keys(path: &[&str]) -> Vec<String> {
    path.iter().map(|s| s.to_string()).collect()
}

/// One file of an export: where the client reads it (relative to a
/// project), its format, and the keys it owns.
#[derive(Debug, Clone)]
pub struct FileOut {
    pub path: String,
    pub format: Format,
    pub edits: Vec<Edit>,
}

impl FileOut {
    /// The file written over `existing` (empty: a new file), every key the
    /// export does not own kept as it was.
    pub fn render(&self, existing: &str) -> Result<String, String> {
        match self.format {
            Format::Json => json_edit::apply(existing, &self.edits),
            Format::Toml => toml_merge::apply(existing, &self.edits),
            Format::Text => match self.edits.as_slice() {
                [Edit::Set(_, Value::String(text))] => Ok(text.clone()),
                _ => Err("a whole file is one text".into()),
            },
            Format::Whole => match self.edits.as_slice() {
                [Edit::Set(_, Value::String(text))]
                    if existing.trim().is_empty() || existing == text =>
                {
                    Ok(text.clone())
                }
                [Edit::Set(..)] => Err(format!(
                    "the file exists, and this export writes `{}` whole: write it to a new file and copy its entries into yours",
                    self.path
                )),
                _ => Err("a whole file is one text".into()),
            },
        }
    }
}

/// A client's export: its files and the report.
#[derive(Debug, Clone)]
pub struct Export {
    pub files: Vec<FileOut>,
    pub report: Report,
}

/// Exports `model` to `client` (one of [`CLIENTS`]).
pub fn export(client: &str, model: &Model) -> Result<Export, String> {
    let (files, report) = match client {
        "claude-code" => claude_code::export(model)?,
        "codex" => codex::export(model)?,
        "gemini-cli" => gemini::export(model, "gemini-cli")?,
        "qwen-code" => gemini::export(model, "qwen-code")?,
        "opencode" => opencode::export(model)?,
        "vscode" => vscode::export(model)?,
        "goose" => goose::export(model)?,
        "zed" => zed::export(model)?,
        other => {
            return Err(format!(
                "unknown client `{}`: use one of {}",
                crate::chars::escape(other),
                CLIENTS.join(", ")
            ));
        }
    };
    Ok(Export {
        files,
        report: report.finish(),
    })
}

/// The one context of a client whose settings hold one: an error that says
/// which modes to choose from when the model has several.
pub fn one_context<'a>(model: &'a Model, client: &str) -> Result<&'a Ctx, String> {
    match model.contexts.as_slice() {
        [one] => Ok(one),
        many => Err(format!(
            "{client} settings hold one context, and the policy has {} modes ({}): give one `--mode M`, one file per mode",
            many.len(),
            many.iter()
                .map(|c| c.label())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Where the client can only allow or deny: whether row is exposed, and the
/// loss recorded for a deferred tool.
pub fn allow_or_deny(
    report: &mut Report,
    model: &Model,
    ctx: &Ctx,
    row: &Row,
    client: &str,
) -> bool {
    match row.exposure {
        Exposure::Active => true,
        Exposure::Hidden => false,
        Exposure::Deferred => match model.fidelity {
            Fidelity::Hide => {
                report.lose(
                    ctx,
                    row,
                    "hidden",
                    format!(
                        "{client} cannot defer a tool; `--fidelity declare` declares it instead"
                    ),
                );
                false
            }
            Fidelity::Declare => {
                report.lose(
                    ctx,
                    row,
                    "declared",
                    format!("{client} cannot defer a tool (`--fidelity declare`)"),
                );
                true
            }
        },
    }
}

/// A server's entry in the `mcpServers` shape Claude Code and Gemini CLI
/// read: the servers file's own fields, `http` type for a remote one.
pub fn mcp_servers_entry(s: &Server) -> Value {
    Value::Object(s.entry.clone())
}

/// Converts a list of strings to a JSON array.
pub fn array(items: &[String]) -> Value {
    Value::Array(items.iter().cloned().map(Value::String).collect())
}

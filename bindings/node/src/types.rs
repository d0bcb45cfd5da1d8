//! TypeScript declarations for the shapes the binding reads or returns as
//! plain JSON: the Rust side never builds these structs, their
//! `#[napi(object)]` declarations exist so that `index.d.ts` names them.

// Declarations only: nothing constructs these.
#![allow(dead_code)]

use napi_derive::napi;
use serde_json::Value;

/// A tool definition: `{name, description, parameters}` and whatever else
/// its registry entry carries (`source`, `cache_control`...).
#[napi(object)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// One turn's plan (docs/runtime.md), the `plan` JSON contract with `declared` as
/// definitions. Put together in JavaScript (see `cache.rs`).
#[napi(object)]
pub struct PlanResult {
    /// Guards, search tools, active tools, then activated tools in
    /// first-activation order.
    #[napi(ts_type = "Array<ToolDefinition>")]
    pub declared: Vec<Value>,
    /// Deferred by policy and not activated, in registry order.
    pub deferred: Vec<String>,
    pub hidden: Vec<String>,
    /// The activated tools the plan declares, in first-activation order.
    pub activated: Vec<String>,
    /// The `# On-demand tools` text; empty when nothing is deferred.
    pub catalog: String,
    pub skills: Vec<String>,
    /// The `<available_skills>` block; empty when no skill is listed.
    pub skills_block: String,
    /// The search tool the model is told about, while anything is deferred.
    pub search_tool: Option<String>,
    pub tokens: crate::out::Tokens,
}

/// What a search or load did (the `search` JSON contract) and the text the
/// model reads as the tool's result. Put together in JavaScript (see
/// `cache.rs`).
#[napi(object)]
pub struct SearchResult {
    /// Declared from the next step, in activation order.
    pub activated: Vec<String>,
    pub already_active: Vec<String>,
    /// Hidden or unknown names, reported alike.
    pub unavailable: Vec<String>,
    /// Other matches of the query, not activated.
    pub matches: Vec<String>,
    /// Named deferred tools past `max_activations`.
    pub over_limit: Vec<String>,
    pub remaining_deferred: u32,
    /// `ok`, `error`, `interrupted` or `missing`: anything but `ok` activated nothing.
    pub status: String,
    /// The tool result to give the model.
    pub text: String,
}

/// What `Engine` is built from besides the policy text and the tools.
#[napi(object)]
pub struct EngineOptions {
    /// The policy's file name in diagnostics (default `policy`).
    pub file: Option<String>,
    /// The folder the policy text is read as if it stood in: a `lock =
    /// "tools.lock"` it names is read from there (and must be inside it).
    /// Policy text that names a lock without it throws.
    pub dir: Option<String>,
    /// The skill list: an array of `{name, key?, description, source?,
    /// model_invocable?}`, or JSON text.
    #[napi(ts_type = "Array<object> | string")]
    pub skills: Option<Value>,
    /// Append an audit log (JSON Lines) to this file; one that cannot be
    /// opened is a warning, not a throw.
    pub audit: Option<String>,
    /// Leave search queries out of the audit log.
    pub audit_no_queries: Option<bool>,
}

/// The audit options of `Engine.fromFiles`.
#[napi(object)]
pub struct AuditOptions {
    /// Append an audit log (JSON Lines) to this file; one that cannot be
    /// opened is a warning, not a throw.
    pub audit: Option<String>,
    /// Leave search queries out of the audit log.
    pub audit_no_queries: Option<bool>,
}

/// Where a chat runs: the policy's mode (required when the policy declares
/// modes), a Bot, the runtime's flags and its own grants (an allow-list of
/// selectors on top of the policy's).
#[napi(object)]
pub struct SessionContext {
    pub mode: Option<String>,
    pub bot: Option<String>,
    pub flags: Option<Vec<String>>,
    pub grants: Option<Vec<String>>,
}

/// A chat as a host persists it: its context and the tools with evidence.
#[napi(object)]
pub struct SessionState {
    pub context: SessionContext,
    pub evidence: Vec<String>,
}

/// One diagnostic of a thrown `ToolPolicyError` (its `diagnostics`) or of
/// `engine.warnings()`.
#[napi(object)]
pub struct Diagnostic {
    /// `PL004`...; `null` for errors that are not about a policy file.
    pub code: Option<String>,
    #[napi(ts_type = "'error' | 'warning'")]
    pub severity: String,
    pub message: String,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub column: Option<u32>,
    pub help: Option<String>,
    /// A registry or skill list entry, such as `tools[3].name`.
    pub path: Option<String>,
}

/// The `explain` JSON contract (docs/cli.md), keys in camelCase.
#[napi(object)]
pub struct Explanation {
    pub item: String,
    pub context: SessionContext,
    #[napi(ts_type = "'active' | 'deferred' | 'hidden'")]
    pub exposure: String,
    #[napi(
        ts_type = "{ kind: string, rule: { text: string, file: string, line: number, column: number } | null, selector: { text: string, line: number, column: number } | null }"
    )]
    pub cause: Value,
    pub candidates: Vec<Value>,
    pub settings: Vec<Value>,
    /// What would change the decision, in words.
    pub change: Vec<String>,
    pub not_declared: Option<String>,
}

/// A result's status as it stands in the transcript.
#[napi(string_enum)]
pub enum ResultStatus {
    #[napi(value = "ok")]
    Ok,
    #[napi(value = "error")]
    Error,
    #[napi(value = "interrupted")]
    Interrupted,
    #[napi(value = "missing")]
    Missing,
}

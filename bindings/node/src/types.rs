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

/// Audit log text for `auditReport`: `name` (`log N` by default, its place
/// in the array) names its bad lines.
#[napi(object)]
pub struct AuditLogText {
    pub text: String,
    pub name: Option<String>,
}

/// Which events `auditReport` reads.
#[napi(object)]
pub struct AuditReportOptions {
    /// Only this caller's events (and the engine-wide ones).
    pub caller: Option<String>,
    /// Only events at or after this time, as the log writes it or a prefix
    /// of it (`2026-12-01`, `2026-12-01T12:00`).
    pub since: Option<String>,
}

/// A line `auditReport` suggests for one tool.
#[napi(object)]
pub struct AuditSuggestion {
    pub tool: String,
    /// The sessions that loaded it (or declared it).
    pub sessions: u32,
    /// `NoDefer(tool)` or `Defer(tool)`.
    pub line: String,
    /// With the engine's policy: whether the line changes the decision, and
    /// nothing else.
    pub checked: Option<bool>,
    /// With the engine's policy: other tools the line would change too.
    pub also_changes: Option<Vec<String>>,
}

/// The `policy report --format json` contract (docs/audit.md), keys in
/// camelCase.
#[napi(object)]
pub struct AuditReport {
    pub events: u32,
    pub sessions: u32,
    /// Of `sessions`, those gathered from requests without a session.
    pub sessions_from_requests: u32,
    pub turns: u32,
    pub tokens: u32,
    pub tokens_all_declared: u32,
    /// `[query, count]`, most frequent first.
    #[napi(ts_type = "Array<[string, number]>")]
    pub empty_searches: Vec<Value>,
    #[napi(
        ts_type = "Array<{ query: string | null, tool: string, missingWords: Array<string> | null }>"
    )]
    pub search_misses: Vec<Value>,
    pub load_in_most_sessions: Vec<AuditSuggestion>,
    pub never_called: Vec<AuditSuggestion>,
    #[napi(
        ts_type = "Array<{ cause: string, rule: string | null, at: string | null, count: number, tools: Array<string> }>"
    )]
    pub refusals: Vec<Value>,
    #[napi(
        ts_type = "Array<{ server: string, calls: number, errors: number, p50Ms: number, p99Ms: number }>"
    )]
    pub latency: Vec<Value>,
    pub reloads: u32,
    pub failed_reloads: u32,
    pub drift: Vec<String>,
    pub dropped_events: u32,
    pub bad_lines: u32,
    #[napi(ts_type = "Array<{ file: string, line: number, message: string }>")]
    pub bad_lines_shown: Vec<Value>,
}

//! The runtime (docs/runtime.md): what an agent runtime embeds to decide, turn
//! by turn, which tools it declares to the model.
//!
//! - [`Engine`]: shared by every chat (`Arc<Engine>`, `Send + Sync`). It holds
//!   an immutable [`Snapshot`] of the compiled policy, the tool registry, the
//!   skill list and what is derived from them (search index, per-tool matching
//!   rules, token counts, catalog summaries), and swaps it on hot reload.
//! - [`Session`]: one chat. Its context, its activations and the evidence
//!   that rebuilds them; small, and persisted as a [`SessionState`].
//! - [`Plan`]: one turn: the declared tools, the deferred ones, the catalog,
//!   the skills block and the meter; rendered for a provider with
//!   [`Plan::provider_tools`].
//! - [`replay`]: runs a scenario file (docs/replay.md).
//!
//! ```
//! use toolpolicy::runtime::Engine;
//! use toolpolicy::{Context, Policy, Registry, SkillList};
//!
//! let policy = Policy::parse("p.policy", "search ToolSearch\nDefer(*)\nNoDefer(Read)\n").unwrap();
//! let registry = Registry::from_json(r#"[
//!     {"name": "Read", "description": "Read a file."},
//!     {"name": "ToolSearch", "description": "Find tools."},
//!     {"name": "WebFetch", "description": "Fetch a web page. Returns markdown."}
//! ]"#).unwrap();
//! let engine = Engine::new(policy, registry, SkillList::default());
//! let mut chat = engine.session(Context::default()).unwrap();
//!
//! let plan = chat.plan(&engine).unwrap();
//! let names: Vec<&str> = plan.declared().map(|t| t.name.as_str()).collect();
//! assert_eq!(names, ["ToolSearch", "Read"]);
//! assert_eq!(plan.catalog(), "# On-demand tools\n- WebFetch: Fetch a web page.");
//!
//! let found = chat.search(&engine, "fetch a page", &[] as &[&str]).unwrap();
//! assert_eq!(found.activated, ["WebFetch"]);
//! assert_eq!(chat.plan(&engine).unwrap().declared_len(), 3);
//! ```

mod activation;
pub mod catalog;
mod engine;
mod evidence;
mod indices;
mod meter;
mod own_names;
mod own_tools;
mod paths;
mod plan;
mod provider;
mod replay;
pub mod search_eval;
mod session;
mod snapshot;

pub use activation::{ActivationResult, CallMemory, CallOutcome, MAX_MATCHES};
pub use engine::Engine;
pub use evidence::ResultStatus;
pub use meter::meter_len;
pub use own_names::{DEFAULT_CALL_TOOL, DEFAULT_SEARCH_TOOL, Delivery};
pub use own_tools::{
    FirstTurn, MAX_TOOL_NAME_CHARS, TOKENS_NOTE, call_tool, declaration_tokens, percent_saved,
    search_tool, supplied_search_name, tool_name_problem,
};
pub use paths::data_path;
pub use plan::{Plan, PlanReport, Tokens};
pub use provider::{Provider, ProviderNames, is_valid_provider_name, parse_provider};
pub use replay::{CallStep, ReplayError, Scenario, SearchStep, Step, StepReport, replay};
pub use session::{Session, SessionState};
pub use snapshot::Snapshot;

//! The names the engine's own tools go by where nothing else names them, and
//! how a front end delivers the tools a search activates: what the plan, the
//! activation texts and the own tools' definitions all read, below each of them.

/// The search tool's name where the policy has no `search` statement.
pub const DEFAULT_SEARCH_TOOL: &str = "tool_search";

/// The call-through tool's name unless a front end configures another.
pub const DEFAULT_CALL_TOOL: &str = "call_tool";

/// How a front end hands the model the tools a search or load activates
/// (docs/gateway.md): it decides what the search tool's description and result say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Delivery<'a> {
    /// Activated tools are declared from the next step (a host that rebuilds
    /// its tool list every turn, or an MCP client that follows
    /// `tools/list_changed`).
    #[default]
    Declared,
    /// The declared list never changes: activated tools are reached through
    /// the call-through tool of this name, and a search result carries each
    /// loaded tool's parameter schema, the model's only way to see it.
    CallThrough(&'a str),
}

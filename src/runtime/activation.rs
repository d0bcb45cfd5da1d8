//! What a search, a load or a direct call returns: the lists a host acts on
//! and the text it gives back to the model as the tool's result.
//!
//! The text only ever names tools the model may see: hidden and unknown names
//! are reported as "not available" with the same words, so probing a name
//! reveals nothing. Registry names are sanitized like catalog lines.

use std::fmt::Write as _;

use serde::Serialize;

use super::catalog::{cut, sanitize};
use super::engine::Snapshot;
use super::evidence::ResultStatus;
use super::own_tools::Delivery;

/// At most this many other matches are reported by a search.
pub const MAX_MATCHES: usize = 10;

/// The most characters of what the model typed (a query, a name that is
/// not available) that a result repeats: past the longest name an MCP
/// client can be given (128 characters and a gateway's `SERVER__`).
pub const ECHO_CHARS: usize = 200;

/// The result of a search or a load (SPEC 3.3 and the `search` JSON of SPEC 4).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct ActivationResult {
    /// Tools activated by this call, declared from the next step
    /// (PI-Desktop's `addedToolNames`), in activation order.
    pub activated: Vec<String>,
    /// Named tools that were declared already.
    pub already_active: Vec<String>,
    /// Named tools that are hidden in this context or do not exist.
    pub unavailable: Vec<String>,
    /// Other matches of the query, by rank, not activated.
    pub matches: Vec<String>,
    /// Named deferred tools left out because the call's limit was reached.
    pub over_limit: Vec<String>,
    /// How many tools remain deferred after the call.
    pub remaining_deferred: usize,
    /// The status of the call's result; anything but `ok` activated nothing.
    pub status: ResultStatus,
    /// The tool result to give the model.
    pub text: String,
}

/// Which tool the text speaks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verb {
    Search,
    Load,
}

/// Registry names, whole: each is a name the model may call, and two long
/// names may differ only at their ends.
fn list(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{}`", sanitize(n))).collect();
    quoted.join(", ")
}

/// Names the model typed that are not available: repeated within
/// [`ECHO_CHARS`], as none of them can be called.
fn echoed(names: &[String]) -> String {
    let quoted: Vec<String> = names
        .iter()
        .map(|n| format!("`{}`", cut(&sanitize(n), ECHO_CHARS)))
        .collect();
    quoted.join(", ")
}

fn tools(n: usize) -> &'static str {
    if n == 1 { "tool" } else { "tools" }
}

impl ActivationResult {
    /// Writes [`ActivationResult::text`] from the lists: each loaded tool
    /// with its one-line summary and, for [`Delivery::CallThrough`], its
    /// parameter schema (SPEC 5.1).
    pub(crate) fn write_text(
        &mut self,
        verb: Verb,
        query: &str,
        limit: u32,
        snap: &Snapshot,
        delivery: Delivery<'_>,
    ) {
        let mut t = String::new();
        let what = match verb {
            Verb::Search => "search",
            Verb::Load => "load",
        };
        if !self.status.is_ok() {
            let _ = write!(
                t,
                "The {what} did not complete ({}); no tool was loaded.",
                self.status.as_str()
            );
            self.text = t;
            return;
        }
        if !self.activated.is_empty() {
            let n = self.activated.len();
            let how = match delivery {
                Delivery::Declared => "callable from your next step".to_string(),
                Delivery::CallThrough(call) => format!(
                    "call {} through `{}` with these parameters",
                    if n == 1 { "it" } else { "them" },
                    sanitize(call)
                ),
            };
            let _ = writeln!(t, "Loaded {n} {}, {how}:", tools(n));
            for name in &self.activated {
                loaded_line(&mut t, snap, name, delivery);
            }
        }
        if !self.already_active.is_empty() {
            let _ = writeln!(t, "Already available: {}.", list(&self.already_active));
        }
        if !self.unavailable.is_empty() {
            let _ = writeln!(
                t,
                "Not available in this chat: {}.",
                echoed(&self.unavailable)
            );
        }
        if !self.over_limit.is_empty() {
            let _ = writeln!(
                t,
                "Not loaded, over the limit of {limit} per {what}: {}; load them in another call.",
                list(&self.over_limit)
            );
        }
        if !self.matches.is_empty() {
            let _ = writeln!(
                t,
                "Also matching, not loaded: {}; search again or load them by name.",
                list(&self.matches)
            );
        }
        let nothing = self.activated.is_empty()
            && self.already_active.is_empty()
            && self.unavailable.is_empty()
            && self.over_limit.is_empty();
        if nothing && verb == Verb::Search {
            let q = cut(&sanitize(query), ECHO_CHARS);
            if q.is_empty() {
                t.push_str("No tool was named and the query is empty.\n");
            } else {
                let _ = writeln!(t, "No on-demand tool matches `{q}`.");
            }
        }
        let n = self.remaining_deferred;
        let verb = if n == 1 { "remains" } else { "remain" };
        let _ = write!(t, "{n} {} {verb} on demand.", tools(n));
        self.text = t;
    }
}

/// One loaded tool: `- `name`: summary`, and its schema for call-through.
fn loaded_line(t: &mut String, snap: &Snapshot, name: &str, delivery: Delivery<'_>) {
    let Some(i) = snap.registry().index_of(name) else {
        return;
    };
    let summary = &snap.tools.summaries[i].text;
    let shown = sanitize(name);
    if summary.is_empty() {
        let _ = writeln!(t, "- `{shown}`");
    } else {
        let _ = writeln!(t, "- `{shown}`: {summary}");
    }
    if let Delivery::CallThrough(_) = delivery {
        let schema = &snap.registry().tools()[i].parameters;
        let _ = writeln!(t, "  parameters: {schema}");
    }
}

/// What a direct call of a tool gets (SPEC 3.3 `call`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum CallOutcome {
    /// The tool is declared: run it, then report its result's status.
    Allowed,
    /// The call fails as not found. With `declared_next_step`, the tool was
    /// deferred and `on_miss = "activate"` declares it from the next step, so
    /// a retry works.
    NotFound { declared_next_step: bool },
}

impl CallOutcome {
    /// The text of a not-found result (none for an allowed call: the tool
    /// gives its own).
    pub fn not_found_text(self, tool: &str) -> Option<String> {
        // A tool declared from the next step is named whole, to be called;
        // any other name is what the model typed.
        let name = match self {
            CallOutcome::NotFound {
                declared_next_step: true,
            } => sanitize(tool),
            _ => cut(&sanitize(tool), ECHO_CHARS),
        };
        match self {
            CallOutcome::Allowed => None,
            CallOutcome::NotFound {
                declared_next_step: true,
            } => Some(format!(
                "Tool `{name}` not found. It has been loaded now: call it again in your next step."
            )),
            CallOutcome::NotFound {
                declared_next_step: false,
            } => Some(format!("Tool `{name}` not found.")),
        }
    }
}

//! What a search, a load or a direct call returns: the lists a host acts on
//! and the text it gives back to the model as the tool's result.
//!
//! The text only ever names tools the model may see: hidden and unknown names
//! are reported as "not available" with the same words, so probing a name
//! reveals nothing. Registry names are sanitized like catalog lines.

use std::fmt::Write as _;

use serde::Serialize;

use super::catalog::{cut, sanitize};
use super::evidence::ResultStatus;
use super::own_names::Delivery;
use super::snapshot::Snapshot;

/// At most this many other matches are reported by a search.
pub const MAX_MATCHES: usize = 10;

/// The most characters of what the model typed (a query, a name that is
/// not available) that a result repeats: past the longest name an MCP
/// client can be given (128 characters and a gateway's `SERVER__`).
pub const ECHO_CHARS: usize = 200;

/// The result of a search or a load (docs/runtime.md, and the `search` JSON in docs/cli.md).
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

/// Where deferred tools are: one `source` (a server, behind the gateway),
/// how many deferred tools it holds, and a few words of what they do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Area {
    pub source: String,
    pub tools: usize,
    pub words: Vec<String>,
}

/// At most this many areas, and words per area, in an empty result.
const MAX_AREAS: usize = 12;
const AREA_WORDS: usize = 4;

/// Name words that say what a tool does to something, not what it is
/// about: left out of an area's few words.
const GENERIC_NAME_WORDS: &[&str] = &[
    "add", "api", "create", "delete", "get", "list", "mcp", "patch", "post", "put", "remove",
    "retrieve", "set", "update", "v1", "v2", "v3", "v4",
];

/// The areas of the tools at registry indices `deferred`: per `source`
/// (tools without one are `other tools`), in the order each first appears,
/// with each area's most frequent name words.
pub(crate) fn areas(snap: &Snapshot, deferred: impl Iterator<Item = u32>) -> Vec<Area> {
    let tools = snap.registry().tools();
    // Per area, its name words: (word, count, first position).
    type Words = Vec<(String, usize, usize)>;
    let mut out: Vec<(Area, Words)> = Vec::new();
    for i in deferred {
        let Some(tool) = tools.get(i as usize) else {
            continue;
        };
        let source = tool.source.as_deref().unwrap_or("other tools");
        let k = match out.iter().position(|(a, _)| a.source == source) {
            Some(k) => k,
            None => {
                out.push((
                    Area {
                        source: source.to_string(),
                        tools: 0,
                        words: Vec::new(),
                    },
                    Vec::new(),
                ));
                out.len() - 1
            }
        };
        let (area, counts) = &mut out[k];
        area.tools += 1;
        let server = source.rsplit(':').next().unwrap_or(source).to_lowercase();
        for word in name_words(&tool.name) {
            if word.len() < 3 || word == server || GENERIC_NAME_WORDS.contains(&word.as_str()) {
                continue;
            }
            match counts.iter_mut().find(|(w, _, _)| *w == word) {
                Some(c) => c.1 += 1,
                None => {
                    let at = counts.len();
                    counts.push((word, 1, at));
                }
            }
        }
    }
    out.into_iter()
        .map(|(mut area, mut counts)| {
            counts.sort_by_key(|&(_, n, at)| (std::cmp::Reverse(n), at));
            area.words = counts
                .into_iter()
                .take(AREA_WORDS)
                .map(|(w, _, _)| w)
                .collect();
            area
        })
        .collect()
}

/// A tool name's words, lowercased: split on `_ - . / :`, spaces and
/// camelCase.
fn name_words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        prev_lower = c.is_lowercase() || c.is_numeric();
        word.extend(c.to_lowercase());
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
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
    /// parameter schema (docs/gateway.md).
    pub(crate) fn write_text(
        &mut self,
        verb: Verb,
        query: &str,
        limit: u32,
        snap: &Snapshot,
        delivery: Delivery<'_>,
        areas: &[Area],
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
        let nothing = self.activated.is_empty()
            && self.already_active.is_empty()
            && self.unavailable.is_empty()
            && self.over_limit.is_empty();
        let q = cut(&sanitize(query), ECHO_CHARS);
        if nothing && verb == Verb::Search && !q.is_empty() {
            // Say so, and where to look instead (docs/runtime.md).
            let _ = writeln!(
                t,
                "No on-demand tool matches `{q}` well enough, so none was loaded."
            );
            if !self.matches.is_empty() {
                let _ = writeln!(
                    t,
                    "Closest, but weak matches: {}; load one by name only if it can really do this.",
                    list(&self.matches)
                );
            }
            write_areas(&mut t, areas);
            t.push_str(
                "Search again in other words, or load a tool by its exact name from the \
                 catalog with `names` (names load exactly).\n",
            );
        } else {
            if !self.matches.is_empty() {
                let _ = writeln!(
                    t,
                    "Also matching, not loaded: {}; search again or load them by name.",
                    list(&self.matches)
                );
            }
            if nothing && verb == Verb::Search {
                t.push_str("No tool was named and the query is empty.\n");
            }
        }
        let n = self.remaining_deferred;
        let verb = if n == 1 { "remains" } else { "remain" };
        let _ = write!(t, "{n} {} {verb} on demand.", tools(n));
        self.text = t;
    }
}

/// `On-demand tools are in: ...`, one area a line, or nothing without areas.
fn write_areas(t: &mut String, areas: &[Area]) {
    if areas.is_empty() {
        return;
    }
    t.push_str("On-demand tools are in:\n");
    for a in areas.iter().take(MAX_AREAS) {
        let _ = write!(
            t,
            "- `{}`: {} {}",
            cut(&sanitize(&a.source), 100),
            a.tools,
            tools(a.tools)
        );
        if !a.words.is_empty() {
            let words: Vec<String> = a.words.iter().map(|w| cut(&sanitize(w), 40)).collect();
            let _ = write!(t, " ({})", words.join(", "));
        }
        t.push('\n');
    }
    if areas.len() > MAX_AREAS {
        let _ = writeln!(t, "- and {} more", areas.len() - MAX_AREAS);
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

/// What a call is decided from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallMemory {
    /// The session's own activations ([`crate::runtime::Session::call`]).
    Session,
    /// None: a request that belongs to no session
    /// ([`crate::runtime::Session::call_without_memory`]).
    None,
    /// A session that several processes serve, each holding only the
    /// activations made through it ([`crate::runtime::Session::call_shared`]).
    Shared,
}

/// What a direct call of a tool gets (docs/runtime.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum CallOutcome {
    /// The tool is declared: run it, then report its result's status.
    Allowed,
    /// The call fails as not found. With `declared_next_step`, the tool was
    /// deferred and `on_miss = "activate"` declares it from the next step, so
    /// a retry works.
    NotFound { declared_next_step: bool },
    /// The tool is deferred because its definition is not the one the
    /// policy's lock holds (`unlocked = "defer"`): it is called only once a
    /// search or a load has returned its new definition, so a direct call
    /// never loads it, whatever `on_miss` says. It fails as not found, and
    /// the text says to search or load it first.
    Unread,
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
            }
            | CallOutcome::Unread => sanitize(tool),
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
            CallOutcome::Unread => Some(format!(
                "Tool `{name}` not found: its definition changed, so it is called only once \
                 a search or a load has shown you the new one. Search for it or load it by \
                 name, read what it says now, then call it."
            )),
        }
    }
}

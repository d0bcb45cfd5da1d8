//! Putting sessions back together from their events, and what they add up
//! to: how many, their turns and tokens, the tools each loaded and first
//! declared, the search misses, and the lessons a search can learn from.
//! It needs nothing but the events.
//!
//! A session's events carry its name. A request that belongs to no session
//! (`sessionless`: MCP's 2026-07-28 requests over HTTP) is named alone, so
//! requests are grouped by what stays the same across one client's: its
//! caller, the client's own name and the context; a group's requests are
//! one session until [`IDLE_MS`] pass without one, as the gateway ends an
//! idle session. What a session adds to the totals is added as its events
//! are read, so that a group holds only what the next request needs (the
//! last list and the last search), however many requests it had.
//!
//! A **search miss** is a tool the session loaded or called, and the policy
//! let it, after a search with words that did not return it, while it was
//! not declared. A search by exact names alone (a load by name) asks nothing
//! of the ranking: it is no search of its own, and what it loads is paired
//! with the search before it that had words. A call the policy refused, or
//! a load of a tool it would not give, is no miss: a hidden or ungranted
//! tool is not one the search should have found.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use super::{Event, EventContext, EventKind, Outcome};

/// How long one client's requests without a session may pause and still
/// be one session: as long as the gateway keeps an idle session open
/// (`--session-idle`).
pub const IDLE_MS: i64 = 30 * 60 * 1000;

/// How many misses [`Totals::misses`] keeps unless told otherwise.
pub const MISSES_LISTED: usize = 50;

/// A tool, by its number in [`Sessions::tool`].
pub type ToolId = u32;
/// A context, by its place in [`Sessions::contexts`].
pub type ContextId = u32;

/// In how many sessions, and in which contexts.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Usage {
    pub sessions: usize,
    pub contexts: BTreeSet<ContextId>,
}

/// A search miss as the report lists it: the query (`None` where the log
/// left it out) and the tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Miss {
    pub query: Option<Arc<str>>,
    pub tool: ToolId,
}

/// A query with words that led to a tool: its search activated nothing or
/// did not return the tool, and the session then loaded or called the tool
/// and was let (a load that activated it, a call allowed and not failed).
/// Kept only when [`Sessions::keep_lessons`] asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lesson {
    /// As it was logged.
    pub query: Arc<str>,
    pub tool: ToolId,
    /// The session, by the order sessions were first met in: two lessons
    /// of one session have the same number.
    pub session: u32,
    pub context: ContextId,
}

/// What every session added.
#[derive(Debug, Default)]
pub struct Totals {
    pub sessions: usize,
    /// Of `sessions`, those gathered from requests without a session.
    pub from_requests: usize,
    pub turns: u64,
    pub tokens: u64,
    pub all_declared: u64,
    /// By tool: the sessions that loaded it (activated it, or reached it
    /// undeclared without a session).
    pub loaded: HashMap<ToolId, Usage>,
    /// By tool: the sessions whose first list declared it.
    pub declared: HashMap<ToolId, Usage>,
    /// The first misses (as many as [`Sessions::with_misses_listed`] says),
    /// each query and tool once.
    pub misses: Vec<Miss>,
    miss_seen: HashSet<(Option<Arc<str>>, ToolId)>,
}

/// Sessions read back from their events; see the module's documentation.
#[derive(Debug)]
pub struct Sessions {
    tools: Vec<Box<str>>,
    tool_ids: HashMap<Box<str>, ToolId>,
    contexts: Vec<EventContext>,
    context_ids: HashMap<EventContext, ContextId>,
    sessions: HashMap<Box<str>, Chat>,
    groups: HashMap<GroupKey, Group>,
    totals: Totals,
    misses_listed: usize,
    lessons: Option<Vec<Lesson>>,
}

impl Default for Sessions {
    fn default() -> Self {
        Sessions {
            tools: Vec::new(),
            tool_ids: HashMap::new(),
            contexts: Vec::new(),
            context_ids: HashMap::new(),
            sessions: HashMap::new(),
            groups: HashMap::new(),
            totals: Totals::default(),
            misses_listed: MISSES_LISTED,
            lessons: None,
        }
    }
}

/// The caller, the client and the context of requests without a session.
type GroupKey = (Option<Box<str>>, Option<Box<str>>, ContextId);

#[derive(Debug)]
struct Group {
    chat: Chat,
    /// The time of its last request, in milliseconds.
    last: Option<i64>,
}

#[derive(Debug, Default)]
struct Chat {
    /// Its number, in the order sessions were met.
    number: u32,
    context: ContextId,
    /// A list was read: the next is not the first.
    listed: bool,
    /// The tools declared at the last list (sorted); `None` before one.
    declared: Option<Arc<[ToolId]>>,
    /// Tools this session loaded, each counted once.
    loaded: HashSet<ToolId>,
    last_search: Option<LastSearch>,
}

/// The last search with words: its query, what it returned, what was
/// declared.
#[derive(Debug)]
struct LastSearch {
    query: Option<Arc<str>>,
    /// It activated nothing.
    empty: bool,
    returned: HashSet<ToolId>,
    declared: Option<Arc<[ToolId]>>,
    /// Tools already counted as missed by this search.
    missed: HashSet<ToolId>,
    /// Tools already taught by this search.
    taught: HashSet<ToolId>,
}

/// What an event tells of its session, with tools by number.
enum Step {
    /// The declared tools (sorted), tokens, tokens with every tool.
    List(Arc<[ToolId]>, u64, u64),
    Search {
        query: Option<Arc<str>>,
        activated: Vec<ToolId>,
        returned: HashSet<ToolId>,
    },
    /// Activated, and the names asked for that the session was given (a
    /// load, or a search by names alone); whether it ended well.
    Load(Vec<ToolId>, Vec<ToolId>, bool),
    /// Allowed, and whether its result was not a failure.
    Allowed(ToolId, bool),
    /// Refused, and declared from the next step (`on_miss`).
    Declared(ToolId),
    Other,
}

impl Sessions {
    pub fn new() -> Self {
        Sessions::default()
    }

    /// Keeps at most `n` misses in [`Totals::misses`] (default
    /// [`MISSES_LISTED`]).
    pub fn with_misses_listed(mut self, n: usize) -> Self {
        self.misses_listed = n;
        self
    }

    /// Keeps every [`Lesson`], for [`Sessions::lessons`]. They take memory
    /// in proportion to the misses, which the report does not need.
    pub fn keep_lessons(mut self) -> Self {
        self.lessons = Some(Vec::new());
        self
    }

    /// The number of a tool name, given one if it had none.
    pub fn tool_id(&mut self, name: &str) -> ToolId {
        if let Some(&id) = self.tool_ids.get(name) {
            return id;
        }
        let id = self.tools.len() as ToolId;
        self.tools.push(name.into());
        self.tool_ids.insert(name.into(), id);
        id
    }

    /// The name of a tool number this reader gave.
    pub fn tool(&self, id: ToolId) -> &str {
        self.tools.get(id as usize).map_or("", |t| t)
    }

    /// Every tool the events name.
    pub fn tools(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|t| &**t)
    }

    /// Every context the events name (flags sorted), by number.
    pub fn contexts(&self) -> &[EventContext] {
        &self.contexts
    }

    pub fn totals(&self) -> &Totals {
        &self.totals
    }

    /// The lessons read so far, in the order they were met; empty unless
    /// [`Sessions::keep_lessons`] was asked.
    pub fn lessons(&self) -> &[Lesson] {
        self.lessons.as_deref().unwrap_or(&[])
    }

    fn context_id(&mut self, event: &Event) -> ContextId {
        let ctx = match &event.context {
            Some(c) => {
                let mut flags = c.flags.clone();
                flags.sort();
                EventContext {
                    mode: c.mode.clone(),
                    bot: c.bot.clone(),
                    flags,
                }
            }
            None => EventContext::default(),
        };
        if let Some(&id) = self.context_ids.get(&ctx) {
            return id;
        }
        let id = self.contexts.len() as ContextId;
        self.contexts.push(ctx.clone());
        self.context_ids.insert(ctx, id);
        id
    }

    /// Reads one event, written at `at` (milliseconds, see
    /// [`millis`](super::read::millis)) if known. Events without a session
    /// are none of its business.
    pub fn read(&mut self, event: &Event, at: Option<i64>) {
        let Some(name) = &event.session else {
            return;
        };
        let context = self.context_id(event);
        let step = self.step_of(&event.kind);
        let totals = &mut self.totals;
        let chat = if event.sessionless {
            let key = (
                event.caller.as_deref().map(Box::from),
                event.client.as_deref().map(Box::from),
                context,
            );
            let group = self.groups.entry(key).or_insert_with(|| {
                totals.sessions += 1;
                totals.from_requests += 1;
                Group {
                    chat: Chat {
                        number: totals.sessions as u32,
                        context,
                        ..Chat::default()
                    },
                    last: None,
                }
            });
            if let (Some(at), Some(last)) = (at, group.last)
                && (at - last).abs() > IDLE_MS
            {
                // A new session of the same client: it lists what the
                // last one did (the same context, the same first turn).
                totals.sessions += 1;
                totals.from_requests += 1;
                group.chat = Chat {
                    number: totals.sessions as u32,
                    context,
                    declared: group.chat.declared.take(),
                    ..Chat::default()
                };
            }
            group.last = at.or(group.last);
            &mut group.chat
        } else {
            if !self.sessions.contains_key(name.as_str()) {
                totals.sessions += 1;
                let chat = Chat {
                    number: totals.sessions as u32,
                    ..Chat::default()
                };
                self.sessions.insert(name.as_str().into(), chat);
            }
            let Some(chat) = self.sessions.get_mut(name.as_str()) else {
                return;
            };
            chat.context = context;
            chat
        };
        let mut out = Out {
            totals,
            misses_listed: self.misses_listed,
            lessons: self.lessons.as_mut(),
        };
        chat.step(step, event.sessionless, &mut out);
    }

    fn step_of(&mut self, kind: &EventKind) -> Step {
        let ids = |s: &mut Sessions, names: &[String]| -> Vec<ToolId> {
            names.iter().map(|n| s.tool_id(n)).collect()
        };
        match kind {
            EventKind::List {
                names,
                tokens,
                all_declared,
                ..
            } => {
                let mut declared = ids(self, names);
                declared.sort_unstable();
                declared.dedup();
                Step::List(declared.into(), *tokens, *all_declared)
            }
            EventKind::Search {
                query,
                names,
                activated,
                already_active,
                matched,
                status,
                ..
            } if status.is_ok() => {
                let words = query.as_deref().map(|q| !q.trim().is_empty());
                // A search by exact names alone (or, with the query left
                // out of the log, one that names tools) is a load by name.
                if words == Some(false) || (words.is_none() && !names.is_empty()) {
                    let given: HashSet<&String> = activated.iter().chain(already_active).collect();
                    let named = names.iter().filter(|n| given.contains(n)).cloned();
                    let named: Vec<String> = named.collect();
                    return Step::Load(ids(self, activated), ids(self, &named), true);
                }
                let returned = [names, activated, already_active, matched]
                    .into_iter()
                    .flat_map(|list| ids(self, list))
                    .collect();
                Step::Search {
                    query: query.as_deref().map(Arc::from),
                    activated: ids(self, activated),
                    returned,
                }
            }
            EventKind::Load {
                names,
                activated,
                unavailable,
                status,
            } => {
                let given: Vec<String> = names
                    .iter()
                    .filter(|n| !unavailable.contains(n))
                    .cloned()
                    .collect();
                Step::Load(ids(self, activated), ids(self, &given), status.is_ok())
            }
            EventKind::Call {
                tool,
                outcome: Outcome::Allowed,
                status,
                is_error,
                ..
            } => {
                let ok = status.is_none_or(|s| s.is_ok()) && *is_error != Some(true);
                Step::Allowed(self.tool_id(tool), ok)
            }
            EventKind::Call {
                tool,
                outcome: Outcome::NotFound,
                declared_next_step: true,
                ..
            } => Step::Declared(self.tool_id(tool)),
            _ => Step::Other,
        }
    }
}

/// Where a session's step adds what it found.
struct Out<'a> {
    totals: &'a mut Totals,
    misses_listed: usize,
    lessons: Option<&'a mut Vec<Lesson>>,
}

impl Chat {
    fn step(&mut self, step: Step, sessionless: bool, out: &mut Out<'_>) {
        match step {
            Step::List(declared, tokens, all_declared) => {
                let totals = &mut *out.totals;
                totals.turns += 1;
                totals.tokens += tokens;
                totals.all_declared += all_declared;
                if !std::mem::replace(&mut self.listed, true) {
                    for &t in declared.iter() {
                        let u = totals.declared.entry(t).or_default();
                        u.sessions += 1;
                        u.contexts.insert(self.context);
                    }
                }
                self.declared = Some(declared);
            }
            Step::Search {
                query,
                activated,
                returned,
            } => {
                let empty = activated.is_empty();
                for t in activated {
                    self.load(t, out.totals);
                }
                self.last_search = Some(LastSearch {
                    query,
                    empty,
                    returned,
                    declared: self.declared.clone(),
                    missed: HashSet::new(),
                    taught: HashSet::new(),
                });
            }
            Step::Load(activated, given, ok) => {
                for t in activated {
                    self.load(t, out.totals);
                }
                for t in given {
                    self.miss(t, ok, out);
                }
            }
            Step::Allowed(t, ok) => {
                self.miss(t, ok, out);
                // Without a session a call reaches a deferred tool at
                // once: a tool the list did not declare was loaded.
                if sessionless
                    && let Some(declared) = &self.declared
                    && declared.binary_search(&t).is_err()
                {
                    self.load(t, out.totals);
                }
            }
            Step::Declared(t) => self.load(t, out.totals),
            Step::Other => {}
        }
    }

    fn load(&mut self, tool: ToolId, totals: &mut Totals) {
        let u = totals.loaded.entry(tool).or_default();
        u.contexts.insert(self.context);
        if self.loaded.insert(tool) {
            u.sessions += 1;
        }
    }

    /// A call or load of `tool` the session was let make, after the last
    /// search with words, of a tool that was not declared when the model
    /// searched: a miss where the search did not return it, a lesson too
    /// (where it ended well) where it did not or activated nothing.
    fn miss(&mut self, tool: ToolId, ok: bool, out: &mut Out<'_>) {
        let Some(last) = &mut self.last_search else {
            return;
        };
        let declared = last
            .declared
            .as_ref()
            .is_some_and(|d| d.binary_search(&tool).is_ok());
        if declared {
            return;
        }
        let returned = last.returned.contains(&tool);
        if ok
            && (!returned || last.empty)
            && last.taught.insert(tool)
            && let (Some(lessons), Some(query)) = (out.lessons.as_deref_mut(), &last.query)
        {
            lessons.push(Lesson {
                query: query.clone(),
                tool,
                session: self.number,
                context: self.context,
            });
        }
        if returned || !last.missed.insert(tool) {
            return;
        }
        let totals = &mut *out.totals;
        if totals.misses.len() >= out.misses_listed
            || !totals.miss_seen.insert((last.query.clone(), tool))
        {
            return;
        }
        totals.misses.push(Miss {
            query: last.query.clone(),
            tool,
        });
    }
}

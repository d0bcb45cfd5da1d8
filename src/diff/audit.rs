//! Logged sessions replayed against a NEW policy: the calls it would
//! refuse, and the tools a session was given on its first turn that NEW
//! would defer or hide (and those NEW would declare that it was not given).
//!
//! Each event is decided in its session's logged context, one pass over
//! the log in order: linear in the log, each context resolved once. Each
//! logged search is asked again under NEW, as the first search of a session
//! in its context (once per context, query and names): one whose
//! activations NEW would change is named with both lists.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::audit::{Event, EventContext, EventKind, Outcome};
use crate::decision::{Exposure, ItemRef};
use crate::explain::{Cause, cause};
use crate::policy::Policy;
use crate::registry::Registry;
use crate::registry::SkillList;
use crate::runtime::{Engine, ResultStatus};
use crate::table::{Resolved, Table};

/// How many examples each kind keeps.
pub const EXAMPLES: usize = 5;

/// One finding of a kind.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Example {
    pub session: String,
    pub context: EventContext,
    pub tool: String,
    /// Why NEW decides as it does; `None` for a context NEW refuses.
    pub cause: Option<Cause>,
}

/// A kind of finding: how many, and the first few.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, Default)]
pub struct Found {
    pub count: usize,
    pub examples: Vec<Example>,
}

impl Found {
    fn add(&mut self, e: impl FnOnce() -> Example) {
        self.count += 1;
        if self.examples.len() < EXAMPLES {
            self.examples.push(e());
        }
    }
}

/// A search whose activations NEW changes.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SearchExample {
    pub session: String,
    pub context: EventContext,
    /// The query, or empty for a search by names alone.
    pub query: String,
    pub names: Vec<String>,
    /// What the logged search activated (or found active already).
    pub logged: Vec<String>,
    /// What the same search activates under NEW, asked first in a session
    /// of the same context (active already or activated).
    pub new: Vec<String>,
}

/// The searches whose activations NEW changes: how many, and the first few.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, Default)]
pub struct SearchesFound {
    pub count: usize,
    /// Searches replayed (with an `ok` result and a query or names).
    pub replayed: usize,
    pub examples: Vec<SearchExample>,
}

/// What replaying the logs against NEW shows.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, Default)]
pub struct Replay {
    pub sessions: usize,
    pub events: usize,
    /// Allowed calls of tools NEW hides (or that its registry lacks).
    pub refused_calls: Found,
    /// Declared at a session's first turn, deferred under NEW.
    pub declared_now_deferred: Found,
    /// Declared at a session's first turn, hidden under NEW.
    pub declared_now_hidden: Found,
    /// Not declared at a session's first turn, declared under NEW.
    pub now_declared: Found,
    /// Sessions whose logged context NEW refuses (a mode it does not declare).
    pub refused_contexts: Found,
    /// Searches whose activations NEW changes.
    pub searches_differ: SearchesFound,
}

/// A search as asked: its context, query and names.
type SearchKey = (EventContext, String, Vec<String>);

/// Replays events one at a time; [`Replayer::finish`] gives the result.
pub struct Replayer<'a> {
    policy: &'a Policy,
    table: Table,
    registry: &'a Registry,
    resolved: HashMap<EventContext, Result<Resolved, String>>,
    seen: HashSet<String>,
    first_turn: HashSet<String>,
    /// The engine over NEW the searches are asked on, made at the first
    /// search, and each search's answer by context, query and names.
    engine: Option<Engine>,
    searches: HashMap<SearchKey, Option<Vec<String>>>,
    out: Replay,
}

impl<'a> Replayer<'a> {
    /// `registry` marked for `policy`'s lock, as an engine marks it.
    pub fn new(policy: &'a Policy, registry: &'a Registry) -> Replayer<'a> {
        Replayer {
            policy,
            table: Table::compile(policy),
            registry,
            resolved: HashMap::new(),
            seen: HashSet::new(),
            first_turn: HashSet::new(),
            engine: None,
            searches: HashMap::new(),
            out: Replay::default(),
        }
    }

    /// One logged event, in log order.
    pub fn read(&mut self, event: &Event) {
        self.out.events += 1;
        let (Some(session), Some(logged)) = (&event.session, &event.context) else {
            return;
        };
        let key = format!("{}\u{0}{session}", event.caller.as_deref().unwrap_or(""));
        let new_session = self.seen.insert(key.clone());
        if new_session {
            self.out.sessions += 1;
        }
        let policy = self.policy;
        let table = &self.table;
        if !self.resolved.contains_key(logged) {
            let ctx = logged.to_context();
            let r = table
                .resolve(&super::contexts::for_policy(&ctx, policy))
                .map_err(|e| e.to_string());
            self.resolved.insert(logged.clone(), r);
        }
        let resolved = &self.resolved[logged];
        let example = |tool: &str, cause: Option<Cause>| Example {
            session: session.clone(),
            context: logged.clone(),
            tool: tool.to_string(),
            cause,
        };
        let resolved = match resolved {
            Ok(r) => r,
            Err(e) => {
                if new_session {
                    let e = e.clone();
                    self.out.refused_contexts.add(|| example(&e, None));
                }
                return;
            }
        };
        let registry = self.registry;
        let decide = |name: &str| {
            let item = registry
                .get(name)
                .map_or(ItemRef::tool(name), ItemRef::from_tool);
            let d = table.decide(resolved, &item);
            (d.exposure, registry.get(name).is_some())
        };
        // The cause is worked out only for an example kept.
        let why = |name: &str| {
            let item = registry
                .get(name)
                .map_or(ItemRef::tool(name), ItemRef::from_tool);
            cause(policy, &table.decide(resolved, &item), &item)
        };
        match &event.kind {
            EventKind::Search {
                query,
                names,
                activated,
                already_active,
                status: ResultStatus::Ok,
                ..
            } => {
                let activated: Vec<String> =
                    activated.iter().chain(already_active).cloned().collect();
                let query = query.as_deref().unwrap_or("");
                if query.trim().is_empty() && names.is_empty() {
                    return;
                }
                let Some(new) = self.replay_activation(logged, query, names) else {
                    return;
                };
                let differ = {
                    let mut a: Vec<&String> = activated.iter().collect();
                    let mut b: Vec<&String> = new.iter().collect();
                    a.sort();
                    b.sort();
                    a != b
                };
                let found = &mut self.out.searches_differ;
                found.replayed += 1;
                if differ {
                    found.count += 1;
                    if found.examples.len() < EXAMPLES {
                        found.examples.push(SearchExample {
                            session: session.clone(),
                            context: logged.clone(),
                            query: query.to_string(),
                            names: names.clone(),
                            logged: activated,
                            new,
                        });
                    }
                }
            }
            EventKind::Call {
                tool,
                outcome: Outcome::Allowed,
                ..
            } => {
                let (e, known) = decide(tool);
                if e == Exposure::Hidden || !known {
                    self.out
                        .refused_calls
                        .add(|| example(tool, Some(why(tool))));
                }
            }
            EventKind::List { names, .. } if self.first_turn.insert(key) => {
                let given: HashSet<&str> = names.iter().map(String::as_str).collect();
                for name in names {
                    let (e, _) = decide(name);
                    match e {
                        Exposure::Deferred => self
                            .out
                            .declared_now_deferred
                            .add(|| example(name, Some(why(name)))),
                        Exposure::Hidden => self
                            .out
                            .declared_now_hidden
                            .add(|| example(name, Some(why(name)))),
                        Exposure::Active => {}
                    }
                }
                for t in self.registry.tools() {
                    if given.contains(t.name.as_str()) {
                        continue;
                    }
                    let item = ItemRef::from_tool(t);
                    let d = table.decide(resolved, &item);
                    // Search tools are left out of the logged names.
                    if d.exposure == Exposure::Active && d.cause != crate::CauseKind::Search {
                        self.out
                            .now_declared
                            .add(|| example(&t.name, Some(cause(policy, &d, &item))));
                    }
                }
            }
            _ => {}
        }
    }

    /// What the search activates under NEW asked as the first search of a
    /// session in the logged context (the same question, once per context,
    /// query and names), or `None` where NEW refuses the context.
    fn replay_activation(
        &mut self,
        logged: &EventContext,
        query: &str,
        names: &[String],
    ) -> Option<Vec<String>> {
        let key = (logged.clone(), query.to_string(), names.to_vec());
        if let Some(known) = self.searches.get(&key) {
            return known.clone();
        }
        let engine = self.engine.get_or_insert_with(|| {
            Engine::new(
                self.policy.clone(),
                self.registry.clone(),
                SkillList::default(),
            )
        });
        let ctx = super::contexts::for_policy(&logged.to_context(), self.policy);
        let found = engine
            .session(ctx)
            .ok()
            .and_then(|mut s| s.search(engine, query, names).ok())
            .map(|r| {
                let mut all = r.activated;
                all.extend(r.already_active);
                all
            });
        self.searches.insert(key, found.clone());
        found
    }

    pub fn finish(self) -> Replay {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(session: &str, mode: &str, kind: EventKind) -> Event {
        let mut e = Event::global(kind);
        e.session = Some(session.into());
        e.context = Some(EventContext {
            mode: Some(mode.into()),
            bot: None,
            flags: Vec::new(),
        });
        e
    }

    #[test]
    fn calls_and_first_turns_against_the_new_policy() {
        let reg = Registry::from_json(r#"[{"name": "Read"}, {"name": "Bash"}, {"name": "Web"}]"#)
            .unwrap();
        let new =
            Policy::parse("new.policy", "mode a {\n  Hide(Bash)\n  Defer(Read)\n}\n").unwrap();
        let mut r = Replayer::new(&new, &reg);
        let list = |names: &[&str]| EventKind::List {
            declared: names.len(),
            names: names.iter().map(|s| s.to_string()).collect(),
            tokens: 0,
            all_declared: 0,
        };
        let call = |tool: &str| EventKind::Call {
            tool: tool.into(),
            outcome: Outcome::Allowed,
            cause: None,
            declared_next_step: false,
            status: None,
            server: None,
            ms: None,
            is_error: None,
        };
        r.read(&event("s1", "a", list(&["Read", "Bash"])));
        r.read(&event("s1", "a", list(&["Read", "Bash"])));
        r.read(&event("s1", "a", call("Bash")));
        r.read(&event("s1", "a", call("Web")));
        r.read(&event("s2", "gone", call("Web")));
        let out = r.finish();
        assert_eq!((out.sessions, out.events), (2, 5));
        assert_eq!(out.refused_calls.count, 1);
        let ex = &out.refused_calls.examples[0];
        assert_eq!(ex.tool, "Bash");
        assert_eq!(ex.cause.as_ref().unwrap().rule.as_ref().unwrap().line, 2);
        assert_eq!(out.declared_now_deferred.count, 1);
        assert_eq!(out.declared_now_hidden.count, 1);
        assert_eq!(out.now_declared.count, 1);
        assert_eq!(out.now_declared.examples[0].tool, "Web");
        assert_eq!(out.refused_contexts.count, 1);
    }
}

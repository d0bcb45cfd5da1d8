//! One chat: its context and its activations (docs/runtime.md).
//!
//! A session is small on purpose: the context, the activated tools as registry
//! indices in first-activation order, and the evidence log. Everything else is
//! in the shared [`Engine`]; every method takes it and works on its current
//! snapshot. Indices are tied to the registry they were taken from (the session
//! keeps that registry alive through an `Arc`): after a registry reload the
//! session translates them by name at its next call, and drops tools that are
//! gone.
//!
//! The persisted form, [`SessionState`], holds names, never indices: the
//! context and the evidence, which is what survives a restart.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::audit::{Audit, AuditHook, EventCause, EventKind, Forwarded, Outcome};
use crate::decision::{Context, ContextError, ItemRef};
use crate::registry::{Registry, Skill};
use crate::search::{Explanation, Ranked};
use crate::settings::{Activation, Unlocked};

use super::activation::{ActivationResult, MAX_MATCHES, Verb, areas};
use super::engine::Engine;
use super::evidence::{EvidenceLog, ResultStatus};
use super::indices::IndexList;
use super::own_names::Delivery;
use super::plan::Plan;
use super::snapshot::{BasePlan, Snapshot, ToolState};

mod calls;

/// Sessions made with a subscriber in this process, by every engine: their
/// names (`PID-N`) stay apart when several engines write to one log (a
/// host that builds a new engine on each reload of its settings).
static AUDITED: AtomicU64 = AtomicU64::new(0);

/// Sessions are made by the engine; they are made here, beside what they are,
/// so that the engine itself needs nothing of a session.
impl Engine {
    fn audited_session(&self, mut session: Session) -> Session {
        if let Some(hook) = self.audit_hook() {
            let n = AUDITED.fetch_add(1, Ordering::Relaxed) + 1;
            session.set_audit(Some(hook), &format!("{:x}-{n}", std::process::id()));
        }
        session
    }

    /// A new session in `ctx`, with nothing activated; fails on a mode the
    /// policy does not declare.
    pub fn session(&self, ctx: Context) -> Result<Session, ContextError> {
        let snap = self.snapshot();
        snap.base(&ctx)?;
        Ok(self.audited_session(Session::new(ctx, Arc::clone(snap.registry_arc()))))
    }

    /// Resumes a persisted session: its activations are rebuilt from the
    /// evidence it kept, exactly as after a restart (docs/runtime.md). Names the
    /// registry no longer has are dropped, so a changed registry can never
    /// make a resumed session activate a different tool.
    pub fn resume(&self, state: SessionState) -> Result<Session, ContextError> {
        let snap = self.snapshot();
        let mut session = self.audited_session(Session::from_state(state, &snap));
        session.restart(self)?;
        Ok(session)
    }
}

/// One chat's state. Not shared: each chat owns its session.
#[derive(Debug, Clone)]
pub struct Session {
    context: Context,
    /// The registry the indices below refer to.
    registry: Arc<Registry>,
    /// Activated tools in first-activation order; only appended to between rebuilds.
    activated: IndexList,
    evidence: EvidenceLog,
    /// Tools declared by `on_miss = "activate"` since the last prompt, mode
    /// switch or restart: they count against `max_activations` like a load.
    misses: u8,
    /// The audit subscription; `None` costs nothing (boxed: one word).
    audit: Option<Box<Audit>>,
}

/// Allowed calls whose `call` event waits for a result; past this the
/// oldest is written without one.
const PENDING_LIMIT: usize = 64;

/// A session as a host persists it: the context and the names with evidence.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionState {
    pub context: Context,
    /// Tools with activation evidence in the effective context, in order of
    /// first evidence.
    #[serde(default)]
    pub evidence: Vec<String>,
}

impl Serialize for Session {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.state().serialize(serializer)
    }
}

/// Translates an index from one registry to another by name; `None` when gone.
fn moved(from: &Registry, to: &Registry, i: u32) -> Option<u32> {
    let t = from.tools().get(i as usize)?;
    to.index_of(&t.name).map(|j| j as u32)
}

/// [`moved`], for an activation or evidence kept across a reload: `None`
/// also for a tool the lock stopped holding since (it became unlocked, or
/// changed again while unlocked) while the context's `unlocked` is not
/// `allow`. The model read the definition it was loaded with: a hidden one
/// cannot be called any more, and a deferred one is read again before use.
fn carried(from: &Registry, to: &Registry, base: &BasePlan, i: u32) -> Option<u32> {
    let j = moved(from, to, i)?;
    let (Some(old), Some(new)) = (from.tools().get(i as usize), to.tools().get(j as usize)) else {
        return Some(j);
    };
    let newly_unlocked =
        new.unlocked && (!old.unlocked || !crate::registry::changed_fields(old, new).is_empty());
    (!newly_unlocked || base.settings.unlocked == Unlocked::Allow).then_some(j)
}

impl Session {
    pub(crate) fn new(context: Context, registry: Arc<Registry>) -> Session {
        Session {
            context,
            registry,
            activated: IndexList::default(),
            evidence: EvidenceLog::default(),
            misses: 0,
            audit: None,
        }
    }

    /// A persisted session in `snap`. Evidence of a tool the lock defers
    /// is dropped: the state holds names, not the definitions the model
    /// read, so a tool that changed while the session was away is read
    /// again, by a search or a load, before it is called.
    pub(crate) fn from_state(state: SessionState, snap: &Snapshot) -> Session {
        let registry = snap.registry();
        let base = snap.base(&state.context).ok();
        let indices = state
            .evidence
            .iter()
            .filter_map(|n| registry.index_of(n).map(|i| i as u32))
            .filter(|&i| !base.as_ref().is_some_and(|b| b.unread(registry.tools(), i)));
        Session {
            context: state.context,
            registry: Arc::clone(snap.registry_arc()),
            activated: IndexList::default(),
            evidence: EvidenceLog::from_indices(indices),
            misses: 0,
            audit: None,
        }
    }

    /// Subscribes `hook` to this session's events (or, with `None`, ends
    /// the subscription), under the name `session`.
    pub fn set_audit(&mut self, hook: Option<AuditHook>, session: &str) {
        let old = self.audit.as_deref();
        self.audit = hook.map(|hook| {
            Box::new(Audit {
                hook,
                session: session.into(),
                caller: old.and_then(|a| a.caller.clone()),
                client: old.and_then(|a| a.client.clone()),
                sessionless: old.is_some_and(|a| a.sessionless),
                pending: Vec::new(),
            })
        });
    }

    /// Who is calling, for the events' `caller` (a front end that knows its
    /// clients by name).
    pub fn set_audit_caller(&mut self, caller: Option<&str>) {
        if let Some(a) = &mut self.audit {
            a.caller = caller.map(Into::into);
        }
    }

    /// The client program's own name, for the events' `client` (a front end
    /// that speaks a protocol in which the client introduces itself).
    pub fn set_audit_client(&mut self, client: Option<&str>) {
        if let Some(a) = &mut self.audit {
            a.client = client.map(Into::into);
        }
    }

    /// Marks this session's events as those of one request that belongs to
    /// no session (`sessionless`): the session lives as long as the request.
    pub fn set_audit_sessionless(&mut self) {
        if let Some(a) = &mut self.audit {
            a.sessionless = true;
        }
    }

    /// The name this session's events carry, if it has a subscriber.
    pub fn audit_session(&self) -> Option<&str> {
        self.audit.as_ref().map(|a| &*a.session)
    }

    fn emit(&self, kind: impl FnOnce() -> EventKind) {
        if let Some(a) = &self.audit {
            a.emit(&self.context, kind());
        }
    }

    /// What decided `tool`'s exposure in this session's context, for a
    /// `call` event.
    fn cause_of(&self, snap: &Snapshot, tool: &str) -> Option<EventCause> {
        let i = snap.registry().index_of(tool)?;
        let resolved = snap.table().resolve(&self.context).ok()?;
        let t = &snap.registry().tools()[i];
        let d = snap
            .table()
            .decide_with(&resolved, &ItemRef::from_tool(t), &snap.matches[i]);
        let rule = crate::explain::origin_ref(snap.policy(), d.origin);
        Some(EventCause {
            kind: d.cause,
            rule: rule.as_ref().map(|r| r.text.clone()),
            file: rule.as_ref().map(|r| r.file.clone()),
            line: rule.as_ref().map(|r| r.line),
        })
    }

    /// Writes the `call` event of allowed calls whose result never came.
    fn flush_pending(&mut self) {
        let pending = match &mut self.audit {
            Some(a) => std::mem::take(&mut a.pending),
            None => return,
        };
        for (tool, cause) in pending {
            self.emit(|| call_event(tool, Outcome::Allowed, cause, false, None, None));
        }
    }

    /// The persisted form.
    pub fn state(&self) -> SessionState {
        SessionState {
            context: self.context.clone(),
            evidence: self.names(self.evidence.indices()),
        }
    }

    pub fn context(&self) -> &Context {
        &self.context
    }

    /// Activated tools in first-activation order (declared only while
    /// deferred by policy in the current context).
    pub fn activated(&self) -> Vec<String> {
        self.names(self.activated.as_slice())
    }

    /// Tools with evidence in the effective context, in order of first evidence.
    pub fn evidence(&self) -> Vec<String> {
        self.names(self.evidence.indices())
    }

    fn names(&self, indices: &[u32]) -> Vec<String> {
        let tools = self.registry.tools();
        indices
            .iter()
            .filter_map(|&i| tools.get(i as usize).map(|t| t.name.clone()))
            .collect()
    }

    /// The current snapshot and this context's base plan, with the session's
    /// indices moved to the snapshot's registry.
    fn prepare(&mut self, engine: &Engine) -> Result<(Arc<Snapshot>, Arc<BasePlan>), ContextError> {
        let snap = engine.snapshot();
        let base = snap.base(&self.context)?;
        if !Arc::ptr_eq(&self.registry, snap.registry_arc()) {
            let (from, to) = (&self.registry, snap.registry());
            self.activated.remap(|i| carried(from, to, &base, i));
            self.evidence.remap(|i| carried(from, to, &base, i));
            self.registry = Arc::clone(snap.registry_arc());
        }
        Ok((snap, base))
    }

    /// This turn's plan. Fails only when the context no longer fits the
    /// policy (a mode removed by a reload).
    pub fn plan(&self, engine: &Engine) -> Result<Plan, ContextError> {
        let plan = self.peek_plan(engine)?;
        self.emit(|| {
            let tokens = plan.tokens();
            let search: Vec<&str> = plan.search_tools().map(|t| t.name.as_str()).collect();
            EventKind::List {
                declared: plan.declared_len(),
                names: plan
                    .declared()
                    .filter(|t| !search.contains(&t.name.as_str()))
                    .map(|t| t.name.clone())
                    .collect(),
                tokens: tokens.total,
                all_declared: tokens.all_declared,
            }
        });
        Ok(plan)
    }

    /// This turn's plan, without a `list` event: for a front end that looks
    /// at the plan for its own needs, not to give it to the model.
    pub fn peek_plan(&self, engine: &Engine) -> Result<Plan, ContextError> {
        let snap = engine.snapshot();
        let base = snap.base(&self.context)?;
        let activated = self.activated.as_slice().iter().copied();
        if Arc::ptr_eq(&self.registry, snap.registry_arc()) {
            return Ok(Plan::new(snap, base, activated));
        }
        // The registry was reloaded since this session's last call.
        let (from, to) = (&self.registry, snap.registry());
        let activated: Vec<u32> = activated
            .filter_map(|i| carried(from, to, &base, i))
            .collect();
        Ok(Plan::new(snap, base, activated.into_iter()))
    }

    fn is_activated(&self, i: u32) -> bool {
        self.activated.contains(i)
    }

    fn remaining(&self, base: &BasePlan) -> usize {
        let activated = self
            .activated
            .as_slice()
            .iter()
            .filter(|&&i| base.declares_activated(i))
            .count();
        base.deferred.len().saturating_sub(activated)
    }

    /// Sorts named tools into the result, activating deferred ones while the
    /// limit allows. `names` are tried in order, each once.
    fn take_names<'a>(
        &mut self,
        snap: &Snapshot,
        base: &BasePlan,
        names: impl Iterator<Item = &'a str>,
        limit: usize,
        out: &mut ActivationResult,
    ) {
        let registry = snap.registry();
        // The model chooses how many names it sends: no quadratic work on them.
        let mut seen: HashSet<&str> = HashSet::new();
        for name in names {
            let name = name.trim();
            if name.is_empty() || !seen.insert(name) {
                continue;
            }
            let Some(i) = registry.index_of(name).map(|i| i as u32) else {
                out.unavailable.push(name.to_string());
                continue;
            };
            match base.state(i) {
                ToolState::Hidden | ToolState::Idle => out.unavailable.push(name.to_string()),
                ToolState::Declared => out.already_active.push(name.to_string()),
                ToolState::Deferred if self.is_activated(i) => {
                    out.already_active.push(name.to_string())
                }
                ToolState::Deferred if out.activated.len() < limit => {
                    self.activated.insert(i);
                    out.activated.push(name.to_string());
                }
                ToolState::Deferred => out.over_limit.push(name.to_string()),
            }
        }
    }

    /// Records the names a successful search or load added as evidence.
    fn record_added(&mut self, snap: &Snapshot, added: &[String]) {
        for name in added {
            if let Some(i) = snap.registry().index_of(name) {
                self.evidence.record(i as u32);
            }
        }
    }

    /// A search (docs/runtime.md): exact `names` first, then the query's ranked
    /// matches among the tools deferred in this context, activating at most
    /// `max_activations`. A query that is exactly a tool's name counts as that
    /// name.
    pub fn search<S: AsRef<str>>(
        &mut self,
        engine: &Engine,
        query: &str,
        names: &[S],
    ) -> Result<ActivationResult, ContextError> {
        self.search_with_status(engine, query, names, ResultStatus::Ok)
    }

    /// A search whose result ends in the transcript with `status`; anything
    /// but `ok` activates nothing and leaves no evidence.
    pub fn search_with_status<S: AsRef<str>>(
        &mut self,
        engine: &Engine,
        query: &str,
        names: &[S],
        status: ResultStatus,
    ) -> Result<ActivationResult, ContextError> {
        self.activate(
            engine,
            Verb::Search,
            query,
            names,
            status,
            Delivery::Declared,
        )
    }

    /// A search whose result text speaks for a front end's [`Delivery`]
    /// (docs/gateway.md): with call-through it carries each loaded tool's schema.
    pub fn search_for<S: AsRef<str>>(
        &mut self,
        engine: &Engine,
        query: &str,
        names: &[S],
        status: ResultStatus,
        delivery: Delivery<'_>,
    ) -> Result<ActivationResult, ContextError> {
        self.activate(engine, Verb::Search, query, names, status, delivery)
    }

    /// Why each of `tools` scores what it does for `query` in this session's
    /// context: the index a search here uses, which leaves out hidden tools
    /// (so their explanation is `None`, as for an unknown name). Changes
    /// nothing in the session.
    pub fn explain_search<S: AsRef<str>>(
        &mut self,
        engine: &Engine,
        query: &str,
        tools: &[S],
    ) -> Result<Vec<Option<Explanation>>, ContextError> {
        let (snap, base) = self.prepare(engine)?;
        let index = snap.search_index_for(&base);
        Ok(tools
            .iter()
            .map(|name| {
                let i = snap.registry().index_of(name.as_ref())?;
                index.explain(query, i)
            })
            .collect())
    }

    /// A load (docs/runtime.md): activates the named deferred tools, at most
    /// `max_activations`; hidden and unknown names are refused.
    pub fn load<S: AsRef<str>>(
        &mut self,
        engine: &Engine,
        names: &[S],
    ) -> Result<ActivationResult, ContextError> {
        self.load_with_status(engine, names, ResultStatus::Ok)
    }

    /// A load whose result ends in the transcript with `status`.
    pub fn load_with_status<S: AsRef<str>>(
        &mut self,
        engine: &Engine,
        names: &[S],
        status: ResultStatus,
    ) -> Result<ActivationResult, ContextError> {
        self.activate(engine, Verb::Load, "", names, status, Delivery::Declared)
    }

    /// A load whose result text speaks for a front end's [`Delivery`].
    pub fn load_for<S: AsRef<str>>(
        &mut self,
        engine: &Engine,
        names: &[S],
        status: ResultStatus,
        delivery: Delivery<'_>,
    ) -> Result<ActivationResult, ContextError> {
        self.activate(engine, Verb::Load, "", names, status, delivery)
    }

    /// Search and load: exact names first, then (for a search) the query's
    /// ranked matches, at most `max_activations` in all.
    fn activate<S: AsRef<str>>(
        &mut self,
        engine: &Engine,
        verb: Verb,
        query: &str,
        names: &[S],
        status: ResultStatus,
        delivery: Delivery<'_>,
    ) -> Result<ActivationResult, ContextError> {
        let (snap, base) = self.prepare(engine)?;
        let limit = base.settings.max_activations as usize;
        let mut out = ActivationResult {
            status,
            ..ActivationResult::default()
        };
        if status.is_ok() {
            let q = query.trim();
            let query_is_name = verb == Verb::Search
                && snap
                    .registry()
                    .index_of(q)
                    .is_some_and(|i| base.state(i as u32) != ToolState::Hidden);
            let exact = names.iter().map(AsRef::as_ref);
            if query_is_name {
                self.take_names(&snap, &base, exact.chain([q]), limit, &mut out);
            } else {
                self.take_names(&snap, &base, exact, limit, &mut out);
                if verb == Verb::Search {
                    self.take_ranked(&snap, &base, q, limit, &mut out);
                }
            }
            self.record_added(&snap, &out.activated);
        }
        out.remaining_deferred = self.remaining(&base);
        // An empty search result names where the deferred tools are.
        let areas = if verb == Verb::Search && out.activated.is_empty() {
            let left = base
                .deferred
                .iter()
                .copied()
                .filter(|&i| !self.activated.contains(i));
            areas(&snap, left)
        } else {
            Vec::new()
        };
        out.write_text(
            verb,
            query,
            base.settings.max_activations,
            &snap,
            delivery,
            &areas,
        );
        self.emit(|| {
            let names: Vec<String> = names.iter().map(|n| n.as_ref().to_string()).collect();
            match verb {
                Verb::Search => EventKind::Search {
                    query: Some(query.to_string()),
                    names,
                    activated: out.activated.clone(),
                    already_active: out.already_active.clone(),
                    matches: out.matches.len(),
                    matched: out.matches.clone(),
                    empty: out.activated.is_empty(),
                    status,
                },
                Verb::Load => EventKind::Load {
                    names,
                    activated: out.activated.clone(),
                    unavailable: out.unavailable.clone(),
                    status,
                },
            }
        });
        Ok(out)
    }

    /// The query's ranked matches among the tools deferred and not yet
    /// activated: activated up to `limit`, the next ones reported by name.
    fn take_ranked(
        &mut self,
        snap: &Snapshot,
        base: &BasePlan,
        query: &str,
        limit: usize,
        out: &mut ActivationResult,
    ) {
        // Only what fits is activated (docs/runtime.md): the rest of the ranking is
        // named, not loaded. Tools the model has already (declared by policy
        // or activated before, but not the guards and search tools) are
        // ranked too: where one fits as well as what would be loaded, the
        // result says it is there, and loads nothing weaker beside it.
        let room = limit.saturating_sub(out.activated.len());
        let own = &base.declared[..base.guards_len];
        let has = |i: usize| {
            let i32 = i as u32;
            match base.state(i32) {
                ToolState::Declared => !own.contains(&i32) && !base.search_tools.contains(&i32),
                ToolState::Deferred => self.activated.contains(i32),
                _ => false,
            }
        };
        let ranked = snap.search_index_for(base).rank_fitting(
            query,
            |i| has(i) || base.state(i as u32) == ToolState::Deferred,
            room,
            has,
        );
        let tools = snap.registry().tools();
        // Named tools past the limit are reported once, as `over_limit`; the
        // model chooses how many names it sends.
        let over_limit: HashSet<&str> = out.over_limit.iter().map(String::as_str).collect();
        let named: HashSet<String> = out.already_active.iter().cloned().collect();
        let had: Vec<bool> = ranked.iter().map(|r| has(r.tool)).collect();
        for (Ranked { tool: i, activate }, had) in ranked.into_iter().zip(had) {
            let name = &tools[i].name;
            if had {
                if activate && !named.contains(name) {
                    out.already_active.push(name.clone());
                }
                continue;
            }
            if over_limit.contains(name.as_str()) {
                continue;
            }
            if activate && out.activated.len() < limit {
                self.activated.insert(i as u32);
                out.activated.push(name.clone());
            } else if out.matches.len() < MAX_MATCHES {
                out.matches.push(name.clone());
            } else {
                break;
            }
        }
    }

    /// Activations rebuilt from evidence: the tools deferred by policy in the
    /// current context, in order of first evidence.
    fn rebuild(&mut self, base: &BasePlan) {
        self.activated.clear();
        let kept = self
            .evidence
            .indices()
            .iter()
            .copied()
            .filter(|&i| base.declares_activated(i));
        self.activated.extend(kept);
    }

    /// A new user prompt: under `per_prompt`, activations are rebuilt from
    /// the evidence still in the effective context.
    pub fn prompt(&mut self, engine: &Engine) -> Result<(), ContextError> {
        let (_, base) = self.prepare(engine)?;
        self.misses = 0;
        if base.settings.activation == Activation::PerPrompt {
            self.rebuild(&base);
        }
        self.flush_pending();
        self.emit(|| EventKind::Prompt);
        Ok(())
    }

    /// Switches mode (docs/runtime.md): under `per_prompt` in the new mode,
    /// activations are rebuilt; under `sticky` they are kept and declared
    /// again wherever they are deferred.
    pub fn set_mode(&mut self, engine: &Engine, mode: Option<&str>) -> Result<(), ContextError> {
        let context = Context {
            mode: mode.map(str::to_string),
            ..self.context.clone()
        };
        self.set_context(engine, context)
    }

    /// Changes the whole context (bot, flags, runtime grants); treated like a
    /// mode switch. On error the session keeps its context.
    pub fn set_context(&mut self, engine: &Engine, context: Context) -> Result<(), ContextError> {
        let old = std::mem::replace(&mut self.context, context);
        match self.prepare(engine) {
            Ok((_, base)) => {
                self.misses = 0;
                if base.settings.activation == Activation::PerPrompt {
                    self.rebuild(&base);
                }
                self.flush_pending();
                self.emit(|| EventKind::Mode {
                    mode: self.context.mode.clone(),
                });
                Ok(())
            }
            Err(e) => {
                self.context = old;
                Err(e)
            }
        }
    }

    /// Compaction: evidence recorded so far leaves the effective context.
    /// Activations stay until the next rebuild. Returns how many tools lost
    /// their evidence.
    pub fn compact(&mut self) -> usize {
        let dropped = self.evidence.clear();
        self.emit(|| EventKind::Compact {
            evidence_dropped: dropped,
        });
        dropped
    }

    /// A restart: what was held in memory is gone and activations are rebuilt
    /// from the effective context, whatever the activation setting.
    pub fn restart(&mut self, engine: &Engine) -> Result<(), ContextError> {
        let (_, base) = self.prepare(engine)?;
        self.misses = 0;
        self.rebuild(&base);
        self.flush_pending();
        self.emit(|| EventKind::Restart);
        Ok(())
    }

    /// The skill tool (docs/runtime.md): a listed skill's name first, its key only
    /// when no name matches, checked against the current context on every
    /// call. `None` for a skill that is hidden or does not exist.
    pub fn resolve_skill(
        &self,
        engine: &Engine,
        requested: &str,
    ) -> Result<Option<Skill>, ContextError> {
        let snap = engine.snapshot();
        let base = snap.base(&self.context)?;
        let all = snap.skills().skills();
        let listed = || base.skills.iter().map(|&i| &all[i as usize]);
        Ok(listed()
            .find(|s| s.name == requested)
            .or_else(|| listed().find(|s| s.key.as_deref() == Some(requested)))
            .cloned())
    }
}

fn call_event(
    tool: String,
    outcome: Outcome,
    cause: Option<EventCause>,
    declared_next_step: bool,
    status: Option<ResultStatus>,
    forwarded: Option<Forwarded>,
) -> EventKind {
    let forwarded = forwarded.unwrap_or_default();
    EventKind::Call {
        tool,
        outcome,
        cause,
        declared_next_step,
        status,
        server: forwarded.server,
        ms: forwarded.ms,
        is_error: forwarded.is_error,
    }
}

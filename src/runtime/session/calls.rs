//! A session's call path: a tool the model calls directly, decided, audited
//! and, once it has run, its result recorded as evidence (docs/runtime.md).

use crate::audit::{Forwarded, Outcome};
use crate::decision::ContextError;
use crate::settings::OnMiss;

use super::super::activation::{CallMemory, CallOutcome};
use super::super::engine::Engine;
use super::super::evidence::ResultStatus;
use super::super::snapshot::ToolState;
use super::{PENDING_LIMIT, Session, call_event};

impl Session {
    /// The model calls a tool directly. A declared tool may run (report its
    /// result with [`Session::record_result`]); anything else fails as not
    /// found, and a deferred tool is declared from the next step when
    /// `on_miss = "activate"`, at most `max_activations` of them between two
    /// prompts (the engine sees prompts, not the model's steps): without a
    /// cap, a burst of direct calls would declare any number of tools at once,
    /// which one search or load cannot. The not-found result is never evidence.
    pub fn call(&mut self, engine: &Engine, tool: &str) -> Result<CallOutcome, ContextError> {
        let outcome = self.decide_call(engine, tool)?;
        Ok(self.audit_call(engine, tool, outcome))
    }

    /// A call decided without memory, for a front end serving requests that
    /// belong to no session (docs/gateway.md): any tool the context does not hide
    /// may run, deferred or not; deferral shapes the list, the hidden set is
    /// the boundary. The one exception is a tool the lock defers
    /// ([`CallOutcome::Unread`]): with no memory, nothing shows that its new
    /// definition was read. Nothing is activated; the audit log sees the
    /// call as [`Session::call`] writes it.
    pub fn call_without_memory(
        &mut self,
        engine: &Engine,
        tool: &str,
    ) -> Result<CallOutcome, ContextError> {
        let outcome = self.decide_without_memory(engine, tool)?;
        Ok(self.audit_call(engine, tool, outcome))
    }

    /// A call in a session that several processes serve (gateway processes
    /// sharing a session key): a search served by one process activated
    /// the tool there only, so a call served by another is decided as
    /// [`Session::call_without_memory`] decides it: any tool the context
    /// does not hide may run. A tool the lock defers still runs only once a
    /// search or a load through this process returned its new definition.
    /// Nothing is activated by the call, whatever `on_miss` says.
    pub fn call_shared(
        &mut self,
        engine: &Engine,
        tool: &str,
    ) -> Result<CallOutcome, ContextError> {
        let outcome = self.decide_shared(engine, tool)?;
        Ok(self.audit_call(engine, tool, outcome))
    }

    fn decide_shared(&mut self, engine: &Engine, tool: &str) -> Result<CallOutcome, ContextError> {
        Ok(match self.decide_without_memory(engine, tool)? {
            CallOutcome::Unread => {
                let (snap, _) = self.prepare(engine)?;
                match snap.registry().index_of(tool).map(|i| i as u32) {
                    Some(i) if self.is_activated(i) => CallOutcome::Allowed,
                    _ => CallOutcome::Unread,
                }
            }
            outcome => outcome,
        })
    }

    fn decide_without_memory(
        &mut self,
        engine: &Engine,
        tool: &str,
    ) -> Result<CallOutcome, ContextError> {
        let (snap, base) = self.prepare(engine)?;
        let tools = snap.registry().tools();
        Ok(match snap.registry().index_of(tool).map(|i| i as u32) {
            Some(i) if base.unread(tools, i) => CallOutcome::Unread,
            Some(i) if base.state(i) != ToolState::Hidden => CallOutcome::Allowed,
            _ => CallOutcome::NotFound {
                declared_next_step: false,
            },
        })
    }

    /// A call allowed a moment ago, decided again just before a front end
    /// sends it on: the registry may have changed while the call waited (a
    /// server that the call itself started again, listing other
    /// definitions). Nothing is activated, whatever `on_miss` says.
    /// `memory` is what the first decision was made from. When the call is no longer
    /// allowed, its `call` event is written as refused, with what decides
    /// the tool now, and the outcome says what the call gets instead.
    pub fn confirm_call(
        &mut self,
        engine: &Engine,
        tool: &str,
        memory: CallMemory,
    ) -> Result<CallOutcome, ContextError> {
        let outcome = if memory == CallMemory::None {
            self.decide_without_memory(engine, tool)?
        } else if memory == CallMemory::Shared {
            self.decide_shared(engine, tool)?
        } else {
            let (snap, base) = self.prepare(engine)?;
            let i = snap.registry().index_of(tool).map(|i| i as u32);
            match i.map(|i| (i, base.state(i))) {
                Some((_, ToolState::Declared)) => CallOutcome::Allowed,
                Some((i, ToolState::Deferred)) if self.is_activated(i) => CallOutcome::Allowed,
                Some((i, ToolState::Deferred)) if base.unread(snap.registry().tools(), i) => {
                    CallOutcome::Unread
                }
                _ => CallOutcome::NotFound {
                    declared_next_step: false,
                },
            }
        };
        if outcome != CallOutcome::Allowed {
            let waiting = self.audit.as_mut().and_then(|a| {
                let at = a.pending.iter().position(|(t, _)| t == tool)?;
                Some(a.pending.remove(at))
            });
            if waiting.is_some() {
                let cause = self.cause_of(&engine.snapshot(), tool);
                self.emit(|| call_event(tool.into(), Outcome::NotFound, cause, false, None, None));
            }
        }
        Ok(outcome)
    }

    /// Writes a decided call's audit event (an allowed one waits for its
    /// result), and hands the outcome back.
    fn audit_call(&mut self, engine: &Engine, tool: &str, outcome: CallOutcome) -> CallOutcome {
        if self.audit.is_some() {
            let cause = self.cause_of(&engine.snapshot(), tool);
            match outcome {
                CallOutcome::Allowed => {
                    let Some(a) = &mut self.audit else {
                        return outcome;
                    };
                    let oldest = (a.pending.len() >= PENDING_LIMIT).then(|| a.pending.remove(0));
                    a.pending.push((tool.to_string(), cause));
                    if let Some((tool, cause)) = oldest {
                        self.emit(|| call_event(tool, Outcome::Allowed, cause, false, None, None));
                    }
                }
                CallOutcome::Unread => self.emit(|| {
                    call_event(
                        tool.to_string(),
                        Outcome::NotFound,
                        cause,
                        false,
                        None,
                        None,
                    )
                }),
                CallOutcome::NotFound { declared_next_step } => self.emit(|| {
                    call_event(
                        tool.to_string(),
                        Outcome::NotFound,
                        cause,
                        declared_next_step,
                        None,
                        None,
                    )
                }),
            }
        }
        outcome
    }

    fn decide_call(&mut self, engine: &Engine, tool: &str) -> Result<CallOutcome, ContextError> {
        let (snap, base) = self.prepare(engine)?;
        let Some(i) = snap.registry().index_of(tool).map(|i| i as u32) else {
            return Ok(CallOutcome::NotFound {
                declared_next_step: false,
            });
        };
        Ok(match base.state(i) {
            ToolState::Declared => CallOutcome::Allowed,
            ToolState::Deferred if self.is_activated(i) => CallOutcome::Allowed,
            // Declaring it from the next step would let it be called on
            // the definition the model read before it changed.
            ToolState::Deferred if base.unread(snap.registry().tools(), i) => CallOutcome::Unread,
            ToolState::Deferred
                if base.settings.on_miss == OnMiss::Activate
                    && u32::from(self.misses) < base.settings.max_activations =>
            {
                self.misses = self.misses.saturating_add(1);
                self.activated.insert(i);
                CallOutcome::NotFound {
                    declared_next_step: true,
                }
            }
            ToolState::Deferred | ToolState::Idle | ToolState::Hidden => CallOutcome::NotFound {
                declared_next_step: false,
            },
        })
    }

    /// The result of an allowed call, as it stands in the transcript. A
    /// successful result of a declared tool is evidence; anything else is not.
    pub fn record_result(
        &mut self,
        engine: &Engine,
        tool: &str,
        status: ResultStatus,
    ) -> Result<(), ContextError> {
        self.record_forwarded(engine, tool, status, None)
    }

    /// The result of an allowed call that a front end forwarded, with what
    /// it learnt of it (the server, the time, `isError`) for the audit log.
    pub fn record_forwarded(
        &mut self,
        engine: &Engine,
        tool: &str,
        status: ResultStatus,
        forwarded: Option<Forwarded>,
    ) -> Result<(), ContextError> {
        let waiting = self.audit.as_mut().and_then(|a| {
            let at = a.pending.iter().position(|(t, _)| t == tool)?;
            Some(a.pending.remove(at))
        });
        if let Some((tool, cause)) = waiting {
            self.emit(|| {
                call_event(
                    tool,
                    Outcome::Allowed,
                    cause,
                    false,
                    Some(status),
                    forwarded,
                )
            });
        }
        let (snap, base) = self.prepare(engine)?;
        if !status.is_ok() {
            return Ok(());
        }
        if let Some(i) = snap.registry().index_of(tool).map(|i| i as u32) {
            let declared = match base.state(i) {
                ToolState::Declared => true,
                ToolState::Deferred => self.is_activated(i),
                ToolState::Idle | ToolState::Hidden => false,
            };
            if declared {
                self.evidence.record(i);
            }
        }
        Ok(())
    }
}

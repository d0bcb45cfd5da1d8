//! `Session`: one chat. Every method works on the engine's current
//! snapshot, so a reload takes effect at the chat's next call.
//!
//! A session is one chat and belongs to one thread at a time: it may move
//! between threads, but a call made while another thread's call on the same
//! session is running raises `RuntimeError` at once (it never waits, never
//! corrupts the chat). The engine behind it is shared freely.

use std::borrow::Cow;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use serde_json::Value;
use toolpolicy::runtime::{ActivationResult, Delivery, Provider, parse_provider};
use toolpolicy::{Context, Plan};

use crate::args;
use crate::cache::{Defs, Key, PlanParts, View, Views};
use crate::convert::to_py;
use crate::error::{self, guard};
use toolpolicy::host::{def_id, provider_def_ids};

/// One chat: its context, its activations and the evidence that rebuilds
/// them. Make one with `engine.session()` or `engine.resume()`.
#[pyclass(frozen, module = "toolpolicy")]
pub struct Session {
    engine: Arc<toolpolicy::Engine>,
    defs: Arc<Defs>,
    chat: Mutex<Chat>,
}

struct Chat {
    session: toolpolicy::Session,
    views: Views,
}

const PROVIDERS: [&str; 5] = [
    "generic",
    "openai",
    "openai-responses",
    "anthropic",
    "anthropic-deferred",
];

fn delivery(call: Option<&str>) -> Delivery<'_> {
    match call {
        Some(name) => Delivery::CallThrough(name),
        None => Delivery::Declared,
    }
}

fn tokens<'py>(py: Python<'py>, t: &toolpolicy::runtime::Tokens) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("declared", t.declared)?;
    d.set_item("catalog", t.catalog)?;
    d.set_item("skills", t.skills)?;
    d.set_item("total", t.total)?;
    d.set_item("all_declared", t.all_declared)?;
    Ok(d)
}

impl Session {
    pub fn new(
        engine: Arc<toolpolicy::Engine>,
        defs: Arc<Defs>,
        session: toolpolicy::Session,
    ) -> Session {
        Session {
            engine,
            defs,
            chat: Mutex::new(Chat {
                session,
                views: Views::default(),
            }),
        }
    }

    /// The chat, or `RuntimeError` while another thread is in a call on it.
    fn chat(&self) -> PyResult<MutexGuard<'_, Chat>> {
        match self.chat.try_lock() {
            Ok(chat) => Ok(chat),
            // A call that failed inside left the chat as the library left
            // it, which is always whole.
            Err(TryLockError::Poisoned(p)) => Ok(p.into_inner()),
            Err(TryLockError::WouldBlock) => Err(PyRuntimeError::new_err(
                "this session is in use by another thread: a session is one chat, \
                 used by one thread at a time (give each thread its own with `engine.session()`)",
            )),
        }
    }

    fn plan_of(&self, py: Python<'_>, chat: &Chat) -> PyResult<Plan> {
        let engine = &*self.engine;
        let session = &chat.session;
        py.detach(|| session.plan(engine))
            .map_err(|e| error::context(&e))
    }

    fn plan_parts(&self, py: Python<'_>, plan: &Plan) -> PyResult<PlanParts> {
        let snap = plan.snapshot();
        let ids: Vec<u32> = plan
            .declared_indices()
            .map(|i| def_id(i, Provider::Generic))
            .collect();
        let declared = self
            .defs
            .tools(py, snap, &ids, || plan.provider_tools(Provider::Generic))?;
        let skills: Vec<&str> = plan.skills().map(|s| s.name.as_str()).collect();
        Ok(PlanParts {
            declared: PyTuple::new(py, declared)?.unbind(),
            deferred: self.defs.names(py, snap, plan.deferred_indices())?.unbind(),
            hidden: self.defs.names(py, snap, plan.hidden_indices())?.unbind(),
            activated: self
                .defs
                .names(py, snap, plan.activated_indices())?
                .unbind(),
            catalog: PyString::new(py, plan.catalog()).unbind(),
            skills: PyTuple::new(py, skills)?.unbind(),
            skills_block: PyString::new(py, plan.skills_block()).unbind(),
            search_tool: plan
                .search_tool_name()
                .map(|s| PyString::new(py, s).unbind()),
            tokens: plan.tokens(),
        })
    }

    /// The plan's tools in the generic shape with the engine's own tools in
    /// their places.
    fn tool_list_of<'py>(
        &self,
        py: Python<'py>,
        plan: &Plan,
        delivery: Delivery<'_>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let snap = plan.snapshot();
        let tools = plan.tool_list(delivery);
        let ids: Vec<u32> = plan
            .declared_indices()
            .map(|i| def_id(i, Provider::Generic))
            .collect();
        let mut registry = self
            .defs
            .tools(py, snap, &ids, || plan.provider_tools(Provider::Generic))?
            .into_iter();
        let mut items = Vec::with_capacity(tools.len());
        for tool in &tools {
            items.push(match tool {
                Cow::Owned(own) => self.defs.own(py, snap, own)?,
                Cow::Borrowed(t) => match registry.next() {
                    Some(d) => d,
                    None => to_py(py, &t.declaration())?,
                },
            });
        }
        PyTuple::new(py, items)
    }

    /// The declared tools in a provider's shape and, under Anthropic's
    /// native deferral, the deferred ones marked, the first unmarked when
    /// nothing is declared (as the library renders them).
    fn provider_tools_of<'py>(
        &self,
        py: Python<'py>,
        plan: &Plan,
        provider: Provider,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let ids = provider_def_ids(plan, provider);
        let defs = self
            .defs
            .tools(py, plan.snapshot(), &ids, || plan.provider_tools(provider))?;
        PyTuple::new(py, defs)
    }

    /// `{status, call_through}` of a search or load.
    fn delivery_options(
        status: Option<&Bound<'_, PyAny>>,
        call_through: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(toolpolicy::runtime::ResultStatus, Option<String>)> {
        Ok((
            args::status(status, "status")?,
            args::call_through(call_through, "call_through")?,
        ))
    }

    fn result<'py>(py: Python<'py>, r: ActivationResult) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("activated", r.activated)?;
        d.set_item("already_active", r.already_active)?;
        d.set_item("unavailable", r.unavailable)?;
        d.set_item("matches", r.matches)?;
        d.set_item("over_limit", r.over_limit)?;
        d.set_item("remaining_deferred", r.remaining_deferred)?;
        d.set_item("status", r.status.as_str())?;
        d.set_item("text", r.text)?;
        Ok(d)
    }
}

#[pymethods]
impl Session {
    /// This turn's plan. Raises only when the context no longer fits the
    /// policy (a mode a reload removed).
    fn plan<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        guard(|| {
            let mut chat = self.chat()?;
            let plan = self.plan_of(py, &chat)?;
            let key = Key::new(&plan, chat.session.context(), "plan".into());
            let View::Plan(p) = chat.views.get(py, key, || {
                Ok(View::Plan(Arc::new(self.plan_parts(py, &plan)?)))
            })?
            else {
                return Err(error::internal("the plan is missing"));
            };
            let d = PyDict::new(py);
            d.set_item("declared", p.declared.bind(py))?;
            d.set_item("deferred", p.deferred.bind(py))?;
            d.set_item("hidden", p.hidden.bind(py))?;
            d.set_item("activated", p.activated.bind(py))?;
            d.set_item("catalog", p.catalog.bind(py))?;
            d.set_item("skills", p.skills.bind(py))?;
            d.set_item("skills_block", p.skills_block.bind(py))?;
            d.set_item("search_tool", p.search_tool.as_ref().map(|s| s.bind(py)))?;
            d.set_item("tokens", tokens(py, &p.tokens)?)?;
            Ok(d)
        })
    }

    /// The same plan as JSON text (the `plan` contract, keys as the command
    /// line writes them, `declared` as definitions), for hosts that forward
    /// it unread. While nothing changes, the same string is returned again.
    fn plan_json<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyString>> {
        guard(|| {
            let mut chat = self.chat()?;
            let plan = self.plan_of(py, &chat)?;
            let key = Key::new(&plan, chat.session.context(), "plan_json".into());
            let View::Text(t) = chat.views.get(py, key, || {
                let text = py.detach(|| {
                    let mut report = serde_json::to_value(plan.report()).ok()?;
                    if let Value::Object(map) = &mut report {
                        map.insert(
                            "declared".into(),
                            Value::Array(plan.provider_tools(Provider::Generic)),
                        );
                    }
                    Some(report.to_string())
                });
                let text = text.ok_or_else(|| error::internal("cannot write the plan"))?;
                Ok(View::Text(PyString::new(py, &text).unbind()))
            })?
            else {
                return Err(error::internal("the plan text is missing"));
            };
            Ok(t.into_bound(py))
        })
    }

    /// The declared tools in a provider's request shape: `generic`,
    /// `openai`, `openai-responses`, `anthropic` or `anthropic-deferred`.
    fn provider_tools<'py>(
        &self,
        py: Python<'py>,
        provider: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        guard(|| {
            let name = args::string(provider, "provider")?;
            let Some(provider) = parse_provider(&name) else {
                let help = toolpolicy::diag::did_you_mean(&name, PROVIDERS).unwrap_or_else(|| {
                    let all: Vec<String> = PROVIDERS.iter().map(|p| format!("`{p}`")).collect();
                    format!("the providers are {}", all.join(", "))
                });
                return Err(error::wrong_value(
                    format!("unknown provider `{name}`"),
                    Some(help),
                ));
            };
            let mut chat = self.chat()?;
            let plan = self.plan_of(py, &chat)?;
            let key = Key::new(&plan, chat.session.context(), format!("provider:{name}"));
            let view = chat.views.get(py, key, || {
                Ok(View::Tools(
                    self.provider_tools_of(py, &plan, provider)?.unbind(),
                ))
            })?;
            list(py, view)
        })
    }

    /// The whole list a host declares: the plan's tools with the engine's
    /// own search tool in its place, and with `call_through` the
    /// call-through tool (`True` names it `call_tool`).
    #[pyo3(signature = (*, call_through = None))]
    fn tool_list<'py>(
        &self,
        py: Python<'py>,
        call_through: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        guard(|| {
            let call = args::call_through(call_through, "call_through")?;
            let mut chat = self.chat()?;
            let plan = self.plan_of(py, &chat)?;
            let view = format!("tool_list:{}", call.as_deref().unwrap_or(""));
            let key = Key::new(&plan, chat.session.context(), view);
            let view = chat.views.get(py, key, || {
                Ok(View::Tools(
                    self.tool_list_of(py, &plan, delivery(call.as_deref()))?
                        .unbind(),
                ))
            })?;
            list(py, view)
        })
    }

    /// A search: exact `names` first, then the query's matches among the
    /// deferred tools, at most the policy's limit activated. `status` is the
    /// search result's status as it stands in the transcript;
    /// `call_through` makes the text carry each loaded tool's schema.
    #[pyo3(signature = (query, names = None, *, status = None, call_through = None))]
    fn search<'py>(
        &self,
        py: Python<'py>,
        query: &Bound<'py, PyAny>,
        names: Option<&Bound<'py, PyAny>>,
        status: Option<&Bound<'py, PyAny>>,
        call_through: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        guard(|| {
            let query = args::string(query, "query")?;
            let names = args::opt_strings(names, "names")?.unwrap_or_default();
            let (status, call) = Self::delivery_options(status, call_through)?;
            let mut chat = self.chat()?;
            let engine = &*self.engine;
            let session = &mut chat.session;
            let r = py
                .detach(|| {
                    session.search_for(engine, &query, &names, status, delivery(call.as_deref()))
                })
                .map_err(|e| error::context(&e))?;
            Self::result(py, r)
        })
    }

    /// A load: activates the named deferred tools; hidden and unknown names
    /// are refused alike.
    #[pyo3(signature = (names, *, status = None, call_through = None))]
    fn load<'py>(
        &self,
        py: Python<'py>,
        names: &Bound<'py, PyAny>,
        status: Option<&Bound<'py, PyAny>>,
        call_through: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        guard(|| {
            let names = args::strings(names, "names")?;
            let (status, call) = Self::delivery_options(status, call_through)?;
            let mut chat = self.chat()?;
            let engine = &*self.engine;
            let session = &mut chat.session;
            let r = py
                .detach(|| session.load_for(engine, &names, status, delivery(call.as_deref())))
                .map_err(|e| error::context(&e))?;
            Self::result(py, r)
        })
    }

    /// The model calls a tool directly: allowed when declared; otherwise it
    /// fails as not found (a deferred tool under `on_miss = "activate"` is
    /// declared from the next step).
    fn call<'py>(&self, py: Python<'py>, name: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
        guard(|| {
            let name = args::string(name, "name")?;
            let mut chat = self.chat()?;
            let engine = &*self.engine;
            let session = &mut chat.session;
            let outcome = py
                .detach(|| session.call(engine, &name))
                .map_err(|e| error::context(&e))?;
            let d = PyDict::new(py);
            d.set_item(
                "allowed",
                outcome == toolpolicy::runtime::CallOutcome::Allowed,
            )?;
            d.set_item(
                "declared_next_step",
                matches!(
                    outcome,
                    toolpolicy::runtime::CallOutcome::NotFound {
                        declared_next_step: true
                    }
                ),
            )?;
            d.set_item("text", outcome.not_found_text(&name))?;
            Ok(d)
        })
    }

    /// The result of an allowed call as it stands in the transcript: a
    /// successful one is evidence that rebuilds the tool's activation.
    #[pyo3(signature = (name, status = None))]
    fn record_result(
        &self,
        py: Python<'_>,
        name: &Bound<'_, PyAny>,
        status: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        guard(|| {
            let name = args::string(name, "name")?;
            let status = args::status(status, "status")?;
            let mut chat = self.chat()?;
            let engine = &*self.engine;
            let session = &mut chat.session;
            py.detach(|| session.record_result(engine, &name, status))
                .map_err(|e| error::context(&e))
        })
    }

    /// A new user prompt: under `per_prompt`, activations are rebuilt from
    /// the evidence.
    fn prompt(&self, py: Python<'_>) -> PyResult<()> {
        guard(|| {
            let mut chat = self.chat()?;
            let engine = &*self.engine;
            let session = &mut chat.session;
            py.detach(|| session.prompt(engine))
                .map_err(|e| error::context(&e))
        })
    }

    /// Compaction: the evidence so far leaves the effective context; the
    /// next prompt rebuilds. Returns how many tools lost their evidence.
    fn compact(&self) -> PyResult<usize> {
        guard(|| Ok(self.chat()?.session.compact()))
    }

    /// A restart: activations are rebuilt from the evidence.
    fn restart(&self, py: Python<'_>) -> PyResult<()> {
        guard(|| {
            let mut chat = self.chat()?;
            let engine = &*self.engine;
            let session = &mut chat.session;
            py.detach(|| session.restart(engine))
                .map_err(|e| error::context(&e))
        })
    }

    /// Switches mode (`None` for none); raises on a mode the policy does not
    /// declare and keeps the old one.
    fn set_mode(&self, py: Python<'_>, mode: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        guard(|| {
            let mode = args::opt_string(mode, "mode")?;
            let mut chat = self.chat()?;
            let engine = &*self.engine;
            let session = &mut chat.session;
            py.detach(|| session.set_mode(engine, mode.as_deref()))
                .map_err(|e| error::context(&e))
        })
    }

    /// Changes the whole context (mode, bot, flags, grants), like a mode switch.
    fn set_context(&self, py: Python<'_>, context: &Bound<'_, PyAny>) -> PyResult<()> {
        guard(|| {
            if context.is_none() {
                return Err(error::wrong_type("context must be a dict, not None"));
            }
            let ctx: Context = args::context(Some(context), "context")?;
            let mut chat = self.chat()?;
            let engine = &*self.engine;
            let session = &mut chat.session;
            py.detach(|| session.set_context(engine, ctx))
                .map_err(|e| error::context(&e))
        })
    }

    /// What to persist: the context and the names with evidence. Give it to
    /// `engine.resume()` after a restart.
    fn state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        guard(|| {
            let state = self.chat()?.session.state();
            let value = serde_json::to_value(state)
                .map_err(|e| error::internal(format!("cannot write the state: {e}")))?;
            to_py(py, &value)
        })
    }

    /// Activated tools in first-activation order.
    fn activated(&self) -> PyResult<Vec<String>> {
        guard(|| Ok(self.chat()?.session.activated()))
    }

    /// The skill tool: a listed skill's name first, its key only when no
    /// name matches, checked against the current context; `None` for a
    /// hidden or unknown skill.
    fn resolve_skill<'py>(
        &self,
        py: Python<'py>,
        requested: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        guard(|| {
            let requested = args::string(requested, "requested")?;
            let chat = self.chat()?;
            let skill = chat
                .session
                .resolve_skill(&self.engine, &requested)
                .map_err(|e| error::context(&e))?;
            skill
                .map(|s| {
                    let d = PyDict::new(py);
                    d.set_item("name", s.name)?;
                    d.set_item("key", s.key)?;
                    d.set_item("description", s.description)?;
                    d.set_item("source", s.source)?;
                    Ok(d)
                })
                .transpose()
        })
    }
}

/// A fresh list of a kept tuple's items.
fn list<'py>(py: Python<'py>, view: View) -> PyResult<Bound<'py, PyList>> {
    match view {
        View::Tools(t) => Ok(t.bind(py).to_list()),
        _ => Err(error::internal("the tool list is missing")),
    }
}

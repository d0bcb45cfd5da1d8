//! Python objects kept between calls, so that a plan asked for every turn
//! costs little.
//!
//! [`Defs`], shared by every session of an engine, holds each registry
//! tool's definition dict in each provider shape and each of the engine's
//! own tools, for as long as the engine's snapshot lasts: a changed plan
//! points at the dicts it already has instead of converting schemas again.
//! Those dicts are shared by every plan and list that holds them: a caller
//! that wants to change one copies it first.
//!
//! [`Views`], one per session, holds the last plan, tool list and provider
//! list in their immutable parts (tuples and strings), so that an unchanged
//! one costs a fresh top-level dict or list and nothing more.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};
use serde_json::Value;
use toolpolicy::runtime::Snapshot;
use toolpolicy::{Context, Plan, Tool};

use crate::convert::to_py;

/// How many of the engine's own tools' definitions are kept per snapshot
/// (a search tool per catalog and delivery); past it the oldest goes.
const OWN_SLOTS: usize = 64;

#[derive(Default)]
pub struct Defs(Mutex<DefsState>);

#[derive(Default)]
struct DefsState {
    snapshot: Option<Arc<Snapshot>>,
    tools: HashMap<u32, Py<PyAny>>,
    own: Vec<(Tool, Py<PyAny>)>,
    /// The registry's tool names, by index.
    names: Vec<Option<Py<PyString>>>,
}

impl DefsState {
    fn at(&mut self, snap: &Arc<Snapshot>) {
        if !self.snapshot.as_ref().is_some_and(|s| Arc::ptr_eq(s, snap)) {
            self.snapshot = Some(Arc::clone(snap));
            self.tools.clear();
            self.own.clear();
            self.names.clear();
        }
    }
}

impl Defs {
    /// The definitions `ids`; `render` gives all of them in the same order
    /// and is called only when some were never converted. Another thread
    /// holding the cache (it is only ever held under the GIL, but a
    /// finalizer can run anywhere) means converting without it.
    pub fn tools<'py>(
        &self,
        py: Python<'py>,
        snap: &Arc<Snapshot>,
        ids: &[u32],
        render: impl FnOnce() -> Vec<Value>,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let Ok(mut state) = self.0.try_lock() else {
            return render().iter().map(|v| to_py(py, v)).collect();
        };
        state.at(snap);
        if ids.iter().any(|i| !state.tools.contains_key(i)) {
            for (&i, def) in ids.iter().zip(render()) {
                if let std::collections::hash_map::Entry::Vacant(slot) = state.tools.entry(i) {
                    slot.insert(to_py(py, &def)?.unbind());
                }
            }
        }
        ids.iter()
            .map(|i| match state.tools.get(i) {
                Some(d) => Ok(d.bind(py).clone()),
                None => Err(crate::error::internal("a definition is missing")),
            })
            .collect()
    }

    /// The names of registry tools `indices`, as a tuple.
    pub fn names<'py>(
        &self,
        py: Python<'py>,
        snap: &Arc<Snapshot>,
        indices: impl Iterator<Item = usize>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let tools = snap.registry().tools();
        let name = |i: usize| tools.get(i).map_or("", |t| t.name.as_str());
        let Ok(mut state) = self.0.try_lock() else {
            let names: Vec<&str> = indices.map(name).collect();
            return PyTuple::new(py, names);
        };
        state.at(snap);
        if state.names.len() < tools.len() {
            state.names.resize_with(tools.len(), || None);
        }
        let mut out = Vec::new();
        for i in indices {
            let Some(slot) = state.names.get_mut(i) else {
                continue;
            };
            let s = slot.get_or_insert_with(|| PyString::new(py, name(i)).unbind());
            out.push(s.bind(py).clone());
        }
        PyTuple::new(py, out)
    }

    /// One of the engine's own tools' definitions (the search tool, the
    /// call-through tool).
    pub fn own<'py>(
        &self,
        py: Python<'py>,
        snap: &Arc<Snapshot>,
        tool: &Tool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let Ok(mut state) = self.0.try_lock() else {
            return to_py(py, &tool.declaration());
        };
        state.at(snap);
        if let Some((_, d)) = state.own.iter().find(|(t, _)| t == tool) {
            return Ok(d.bind(py).clone());
        }
        let def = to_py(py, &tool.declaration())?;
        if state.own.len() >= OWN_SLOTS {
            state.own.remove(0);
        }
        state.own.push((tool.clone(), def.clone().unbind()));
        Ok(def)
    }
}

/// What a kept view depends on. The snapshot is held, not its address, so
/// that a reload can never make an old entry look current.
pub struct Key {
    snapshot: Arc<Snapshot>,
    context: Context,
    activated: Vec<String>,
    /// Which view: `plan`, `plan_json`, `tool_list` with its delivery,
    /// `provider_tools` with its provider.
    view: String,
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        Arc::ptr_eq(&self.snapshot, &other.snapshot)
            && self.context == other.context
            && self.activated == other.activated
            && self.view == other.view
    }
}

impl Key {
    pub fn new(plan: &Plan, context: &Context, view: String) -> Key {
        Key {
            snapshot: Arc::clone(plan.snapshot()),
            context: context.clone(),
            activated: plan.activated().map(|t| t.name.clone()).collect(),
            view,
        }
    }
}

/// A plan's parts, each immutable.
pub struct PlanParts {
    pub declared: Py<PyTuple>,
    pub deferred: Py<PyTuple>,
    pub hidden: Py<PyTuple>,
    pub activated: Py<PyTuple>,
    pub catalog: Py<PyString>,
    pub skills: Py<PyTuple>,
    pub skills_block: Py<PyString>,
    pub search_tool: Option<Py<PyString>>,
    pub tokens: toolpolicy::runtime::Tokens,
}

/// A kept view.
pub enum View {
    Plan(Arc<PlanParts>),
    Tools(Py<PyTuple>),
    Text(Py<PyString>),
}

impl View {
    fn clone_ref(&self, py: Python<'_>) -> View {
        match self {
            View::Plan(p) => View::Plan(Arc::clone(p)),
            View::Tools(t) => View::Tools(t.clone_ref(py)),
            View::Text(t) => View::Text(t.clone_ref(py)),
        }
    }
}

/// One kept view of each kind, per session.
#[derive(Default)]
pub struct Views(Vec<(Key, View)>);

impl Views {
    /// The view for `key`: the kept one, or `make()`'s, kept in place of the
    /// same view's previous one.
    pub fn get(
        &mut self,
        py: Python<'_>,
        key: Key,
        make: impl FnOnce() -> PyResult<View>,
    ) -> PyResult<View> {
        if let Some((_, v)) = self.0.iter().find(|(k, _)| *k == key) {
            return Ok(v.clone_ref(py));
        }
        let view = make()?;
        let kept = view.clone_ref(py);
        if let Some(i) = self.0.iter().position(|(k, _)| k.view == key.view) {
            self.0.swap_remove(i);
        }
        self.0.push((key, kept));
        Ok(view)
    }
}

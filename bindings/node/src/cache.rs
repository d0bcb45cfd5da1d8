//! The objects a session hands to JavaScript, kept as JavaScript objects.
//!
//! A host asks for the plan every turn and it rarely changes between two
//! turns, so an unchanged plan (or tool list, or provider list) is the same
//! object again. A changed one is put together in JavaScript from parts
//! that live as long as the engine's snapshot: each registry tool's
//! definition in each shape, its name, and each catalog or own-tool
//! definition text, sent once and kept. What crosses per changed plan is a
//! small JSON layout of numbers pointing at those parts, so neither side
//! serializes or parses a schema or a catalog again. Everything is frozen,
//! deeply, so that no caller can change what the next one reads.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use napi::bindgen_prelude::{
    FnArgs, Function, FunctionRef, JsObjectValue, JsValue, Object, ObjectRef, Unknown,
};
use napi::{Env, Result};
use serde_json::Value;
use toolpolicy::runtime::{ActivationResult, Snapshot};
use toolpolicy::{Context, Plan, Tool};

/// What a cached object depends on. The snapshot is held, not its address,
/// so that a reload can never make an old entry look current.
#[derive(Clone)]
pub struct Key {
    snapshot: Arc<Snapshot>,
    context: Context,
    activated: Vec<String>,
    /// Which view of the plan: `plan()`, `toolList()` with its delivery, or
    /// `providerTools()` with its provider.
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

/// Puts an object together in JavaScript. `layout` is JSON: an array of
/// items (a list of tools), a plan whose lists hold numbers, or with `text`
/// a search result whose lists hold registry indices or unknown names. An item
/// `n >= 0` is the definition with id `n` (see [`toolpolicy::host::def_id`]), an item
/// `n < 0` the value in slot `-1 - n` (a catalog text, the engine's own
/// tool); a name is a registry index into the snapshot's names. `fresh`
/// (the names) comes with each new generation, `defs` and `vals` with the
/// parts JavaScript does not hold yet, as flat `[key, value, ...]` arrays.
const BUILD: &str = "(function () {\
    let generation = -1;\
    let names = [];\
    const defs = new Map();\
    const vals = [];\
    const freeze = (o) => {\
        if (o === null || typeof o !== 'object' || Object.isFrozen(o)) return o;\
        Object.freeze(o);\
        for (const k in o) freeze(o[k]);\
        return o;\
    };\
    const item = (n) => (n >= 0 ? defs.get(n) : vals[-1 - n]);\
    const name = (i) => names[i];\
    const list = (xs, f) => Object.freeze(xs.map(f));\
    const nameOr = (v) => (typeof v === 'number' ? names[v] : v);\
    const result = (l, text) => ({\
        activated: l.activated.map(nameOr),\
        alreadyActive: l.alreadyActive.map(nameOr),\
        unavailable: l.unavailable.map(nameOr),\
        matches: l.matches.map(nameOr),\
        overLimit: l.overLimit.map(nameOr),\
        remainingDeferred: l.remainingDeferred,\
        status: l.status,\
        text,\
    });\
    return function (gen, fresh, newDefs, newVals, layout, text) {\
        if (gen !== generation) {\
            generation = gen;\
            names = JSON.parse(fresh);\
            defs.clear();\
            vals.length = 0;\
        }\
        if (newDefs !== '') {\
            const d = JSON.parse(newDefs);\
            for (let k = 0; k < d.length; k += 2) defs.set(d[k], freeze(d[k + 1]));\
        }\
        if (newVals !== '') {\
            const v = JSON.parse(newVals);\
            for (let k = 0; k < v.length; k += 2) vals[v[k]] = freeze(v[k + 1]);\
        }\
        const l = JSON.parse(layout);\
        if (text !== null) return result(l, text);\
        if (Array.isArray(l)) return list(l, item);\
        return Object.freeze({\
            declared: list(l.declared, item),\
            deferred: list(l.deferred, name),\
            hidden: list(l.hidden, name),\
            activated: list(l.activated, name),\
            catalog: item(l.catalog),\
            skills: Object.freeze(l.skills),\
            skillsBlock: item(l.skillsBlock),\
            searchTool: l.searchTool,\
            tokens: Object.freeze(l.tokens),\
        });\
    };\
})()";

type BuildArgs = FnArgs<(u32, String, String, String, String, Option<String>)>;

/// How many texts and own-tool definitions JavaScript keeps per snapshot:
/// a catalog per context in use, a search tool per catalog and delivery.
/// Past it the oldest slot is reused.
const VAL_SLOTS: usize = 64;

/// A part kept in a slot.
enum Val {
    Text(String),
    Tool(Tool),
}

/// [`BUILD`] and what it has been given, shared by every session of an
/// engine: compiled once (that costs a millisecond), and each part sent
/// once per snapshot.
#[derive(Default)]
pub struct Builder(Mutex<BuilderState>);

#[derive(Default)]
struct BuilderState {
    build: Option<FunctionRef<BuildArgs, Object<'static>>>,
    snapshot: Option<Arc<Snapshot>>,
    generation: u32,
    /// Whether JavaScript has this generation's names yet.
    named: bool,
    /// Definition ids JavaScript holds.
    sent: HashSet<u32>,
    /// What JavaScript holds in each slot, and the slot to reuse next.
    vals: Vec<Val>,
    next: usize,
}

/// Collects the parts one object needs while its layout is written: the
/// numbers it returns go into the layout.
pub struct Parts<'s> {
    state: &'s mut BuilderState,
    new_defs: Vec<Value>,
    new_vals: Vec<Value>,
}

impl Parts<'_> {
    /// The items of definitions `ids`; `render` gives all of them in the
    /// same order, and is called only when some were never sent.
    pub fn defs(&mut self, ids: &[u32], render: impl FnOnce() -> Vec<Value>) -> Vec<i64> {
        if ids.iter().any(|i| !self.state.sent.contains(i)) {
            for (&i, def) in ids.iter().zip(render()) {
                if self.state.sent.insert(i) {
                    self.new_defs.push(i.into());
                    self.new_defs.push(def);
                }
            }
        }
        ids.iter().copied().map(i64::from).collect()
    }

    /// The item of a text (a catalog, a skills block).
    pub fn text(&mut self, text: &str) -> i64 {
        let found = self
            .state
            .vals
            .iter()
            .position(|v| matches!(v, Val::Text(t) if t == text));
        self.val(found, || (Val::Text(text.to_string()), text.into()))
    }

    /// The item of one of the engine's own tools' definitions.
    pub fn own_tool(&mut self, tool: &Tool) -> i64 {
        let found = self
            .state
            .vals
            .iter()
            .position(|v| matches!(v, Val::Tool(t) if t == tool));
        self.val(found, || (Val::Tool(tool.clone()), tool.declaration()))
    }

    fn val(&mut self, found: Option<usize>, make: impl FnOnce() -> (Val, Value)) -> i64 {
        let slot = found.unwrap_or_else(|| {
            let (kept, sent) = make();
            let state = &mut *self.state;
            let slot = state.next;
            state.next = (slot + 1) % VAL_SLOTS;
            if slot < state.vals.len() {
                state.vals[slot] = kept;
            } else {
                state.vals.push(kept);
            }
            self.new_vals.push(slot.into());
            self.new_vals.push(sent);
            slot
        });
        -1 - i64::try_from(slot).unwrap_or(0)
    }
}

impl Builder {
    fn build<'e>(
        &self,
        env: &'e Env,
        snap: &Arc<Snapshot>,
        layout: impl FnOnce(&mut Parts<'_>) -> Result<String>,
        text: Option<String>,
    ) -> Result<Object<'e>> {
        let mut state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let built = Self::build_in(&mut state, env, snap, layout, text);
        if built.is_err() {
            // What JavaScript holds is unknown now: start again.
            state.snapshot = None;
        }
        built
    }

    fn build_in<'e>(
        state: &mut BuilderState,
        env: &'e Env,
        snap: &Arc<Snapshot>,
        layout: impl FnOnce(&mut Parts<'_>) -> Result<String>,
        text: Option<String>,
    ) -> Result<Object<'e>> {
        if state.build.is_none() {
            let f: Function<BuildArgs, Object<'static>> = env.run_script(BUILD)?;
            state.build = Some(f.create_ref()?);
        }
        if !state
            .snapshot
            .as_ref()
            .is_some_and(|s| Arc::ptr_eq(s, snap))
        {
            state.snapshot = Some(Arc::clone(snap));
            state.generation = state.generation.wrapping_add(1);
            state.named = false;
            state.sent.clear();
            state.vals.clear();
            state.next = 0;
        }
        let fresh = if std::mem::replace(&mut state.named, true) {
            String::new()
        } else {
            let names: Vec<&str> = snap
                .registry()
                .tools()
                .iter()
                .map(|t| t.name.as_str())
                .collect();
            json(&names)?
        };
        let mut parts = Parts {
            state: &mut *state,
            new_defs: Vec::new(),
            new_vals: Vec::new(),
        };
        let layout = layout(&mut parts)?;
        let flat = |v: Vec<Value>| {
            if v.is_empty() {
                Ok(String::new())
            } else {
                json(&v)
            }
        };
        let (new_defs, new_vals) = (flat(parts.new_defs)?, flat(parts.new_vals)?);
        let Some(build) = state.build.as_ref() else {
            return Err(napi::Error::from_reason("the plan builder is missing"));
        };
        let built = build.borrow_back(env)?.call(FnArgs {
            data: (state.generation, fresh, new_defs, new_vals, layout, text),
        })?;
        Ok(Object::from_raw(env.raw(), built.raw()))
    }
}

/// JSON text of a value the binding made itself.
pub fn json<T: serde::Serialize + ?Sized>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| napi::Error::from_reason(e.to_string()))
}

/// A registry tool by its index, or a name the registry does not have.
#[derive(serde::Serialize)]
#[serde(untagged)]
enum NameOr {
    Index(usize),
    Name(String),
}

/// The fields of `SearchResult` but its text, names as [`NameOr`].
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct ResultLayout {
    activated: Vec<NameOr>,
    already_active: Vec<NameOr>,
    unavailable: Vec<NameOr>,
    matches: Vec<NameOr>,
    over_limit: Vec<NameOr>,
    remaining_deferred: usize,
    status: &'static str,
}

/// One cached object per view.
pub struct Cache {
    entries: Vec<(Key, ObjectRef<false>)>,
    builder: Arc<Builder>,
}

impl Cache {
    pub fn new(builder: Arc<Builder>) -> Cache {
        Cache {
            entries: Vec::new(),
            builder,
        }
    }

    /// The object for `key`: the cached one, or one put together from the
    /// layout `layout` writes, frozen and cached in place of the view's
    /// previous one.
    pub fn get<'e>(
        &mut self,
        env: &'e Env,
        key: Key,
        layout: impl FnOnce(&mut Parts<'_>) -> Result<String>,
    ) -> Result<Object<'e>> {
        if let Some((_, r)) = self.entries.iter().find(|(k, _)| *k == key) {
            return r.get_value(env);
        }
        let obj = self.builder.build(env, &key.snapshot, layout, None)?;
        self.put(env, key, &obj)?;
        Ok(obj)
    }

    /// The text for `key`: the cached one, or `make()`'s, kept (in an
    /// object, the only kind of value a reference holds) in place of the
    /// view's previous one. Creating a long string from UTF-8 is what the
    /// call costs, so an unchanged text is the same string again.
    pub fn text<'e>(
        &mut self,
        env: &'e Env,
        key: Key,
        make: impl FnOnce() -> Result<String>,
    ) -> Result<Unknown<'e>> {
        let holder = match self.entries.iter().find(|(k, _)| *k == key) {
            Some((_, r)) => r.get_value(env)?,
            None => {
                let mut holder = Object::new(env)?;
                holder.set_named_property("text", make()?)?;
                self.put(env, key, &holder)?;
                holder
            }
        };
        holder.get_named_property("text")
    }

    fn put(&mut self, env: &Env, key: Key, obj: &Object<'_>) -> Result<()> {
        let fresh = obj.create_ref::<false>()?;
        if let Some(i) = self.entries.iter().position(|(k, _)| k.view == key.view) {
            let (_, old) = self.entries.swap_remove(i);
            old.unref(env)?;
        }
        self.entries.push((key, fresh));
        Ok(())
    }

    /// A search or load result (not cached: each is news), its names
    /// looked up in the snapshot's names that JavaScript holds.
    pub fn result<'e>(
        &self,
        env: &'e Env,
        snap: &Arc<Snapshot>,
        result: ActivationResult,
    ) -> Result<Object<'e>> {
        let registry = snap.registry();
        let names = |v: Vec<String>| -> Vec<NameOr> {
            v.into_iter()
                .map(|n| match registry.index_of(&n) {
                    Some(i) => NameOr::Index(i),
                    None => NameOr::Name(n),
                })
                .collect()
        };
        let layout = ResultLayout {
            activated: names(result.activated),
            already_active: names(result.already_active),
            unavailable: names(result.unavailable),
            matches: names(result.matches),
            over_limit: names(result.over_limit),
            remaining_deferred: result.remaining_deferred,
            status: result.status.as_str(),
        };
        self.builder
            .build(env, snap, |_| json(&layout), Some(result.text))
    }

    /// Releases the cached objects (the session is being collected).
    pub fn clear(&mut self, env: &Env) -> Result<()> {
        for (_, r) in self.entries.drain(..) {
            r.unref(env)?;
        }
        Ok(())
    }
}

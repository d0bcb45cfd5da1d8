//! The last plan a session handed to JavaScript, kept as the JavaScript
//! object itself. A host asks for the plan every turn and it rarely changes
//! between two turns; building the object again (definitions with their
//! schemas, the catalog, every deferred name) is what a call from
//! JavaScript costs, so an unchanged plan is the same object again, and a
//! changed one reuses the definition objects of the tools it still
//! declares. Everything is frozen, deeply, so that no caller can change what
//! the next one reads.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use napi::bindgen_prelude::{FnArgs, Function, FunctionRef, JsValue, Object, ObjectRef};
use napi::{Env, Result};
use serde_json::Value;
use toolpolicy::runtime::Snapshot;
use toolpolicy::{Context, Plan};

/// What a plan object depends on. The snapshot is held, not its address,
/// so that a reload can never make an old entry look current.
#[derive(Clone)]
pub struct Key {
    snapshot: Arc<Snapshot>,
    context: Context,
    activated: Vec<String>,
    /// Which view of the plan: `plan()`, or `toolList()` with its delivery.
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

/// Builds a frozen plan object in JavaScript, from JSON text whose
/// `declared` list holds `null` where a registry tool goes: those are
/// filled in order with the definition objects of `slots` (registry
/// indices), each made once per registry from `missingText` and kept in a
/// `Map`, so that a changed plan parses its names and catalog, never the
/// schemas again. V8's parser and a freeze loop cost a fraction of building
/// the same objects one property at a time through N-API.
const BUILD: &str = "(function () {\
    let generation = -1;\
    const defs = new Map();\
    const freeze = (o) => {\
        Object.freeze(o);\
        for (const k in o) {\
            const v = o[k];\
            if (v !== null && typeof v === 'object' && !Object.isFrozen(v)) freeze(v);\
        }\
        return o;\
    };\
    return function (gen, text, slots, missing, missingText, list) {\
        if (gen !== generation) { defs.clear(); generation = gen; }\
        if (missing.length > 0) {\
            const made = JSON.parse(missingText);\
            for (let k = 0; k < missing.length; k++) defs.set(missing[k], freeze(made[k]));\
        }\
        const o = JSON.parse(text);\
        let next = 0;\
        const declared = o.declared;\
        for (let k = 0; k < declared.length; k++) {\
            if (declared[k] === null) declared[k] = defs.get(slots[next++]);\
        }\
        return freeze(list ? declared : o);\
    };\
})()";

type BuildArgs = FnArgs<(u32, String, Vec<u32>, Vec<u32>, String, bool)>;

/// [`BUILD`] and what it has been given, shared by every session of an
/// engine: compiled once (that costs a millisecond), and each registry
/// tool's definition converted once per snapshot.
#[derive(Default)]
pub struct Builder(Mutex<BuilderState>);

#[derive(Default)]
struct BuilderState {
    build: Option<FunctionRef<BuildArgs, Object<'static>>>,
    snapshot: Option<Arc<Snapshot>>,
    generation: u32,
    /// Registry indices whose definitions JavaScript holds.
    sent: HashSet<usize>,
}

/// What a view of the plan is made of: JSON text with `null` in place of
/// each registry tool of `declared`, those tools' registry indices in
/// order, and their definitions (called only for the ones not sent yet).
pub struct Parts<'p> {
    pub text: String,
    pub slots: Vec<usize>,
    pub definitions: Box<dyn FnOnce() -> Vec<Value> + 'p>,
    /// Return the `declared` list itself rather than the whole object.
    pub list: bool,
}

impl Builder {
    fn build<'e>(
        &self,
        env: &'e Env,
        snap: &Arc<Snapshot>,
        parts: Parts<'_>,
    ) -> Result<Object<'e>> {
        let mut state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
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
            state.sent.clear();
        }
        let missing: Vec<usize> = parts
            .slots
            .iter()
            .copied()
            .filter(|i| !state.sent.contains(i))
            .collect();
        let missing_text = if missing.is_empty() {
            String::new()
        } else {
            let all = (parts.definitions)();
            let made: Vec<&Value> = missing
                .iter()
                .filter_map(|i| parts.slots.iter().position(|s| s == i))
                .filter_map(|k| all.get(k))
                .collect();
            serde_json::to_string(&made).map_err(|e| napi::Error::from_reason(e.to_string()))?
        };
        let Some(build) = state.build.as_ref() else {
            return Err(napi::Error::from_reason("the plan builder is missing"));
        };
        let index = |i: usize| u32::try_from(i).unwrap_or(u32::MAX);
        let built = build.borrow_back(env)?.call(FnArgs {
            data: (
                state.generation,
                parts.text,
                parts.slots.iter().copied().map(index).collect(),
                missing.iter().copied().map(index).collect(),
                missing_text,
                parts.list,
            ),
        })?;
        state.sent.extend(missing);
        Ok(Object::from_raw(env.raw(), built.raw()))
    }
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

    /// The object for `key`: the cached one, or `make()` converted, frozen
    /// and cached in place of the view's previous one.
    pub fn get<'e, 'p>(
        &mut self,
        env: &'e Env,
        key: Key,
        make: impl FnOnce() -> Result<Parts<'p>>,
    ) -> Result<Object<'e>> {
        if let Some((_, r)) = self.entries.iter().find(|(k, _)| *k == key) {
            return r.get_value(env);
        }
        let obj = self.builder.build(env, &key.snapshot, make()?)?;
        let fresh = obj.create_ref::<false>()?;
        if let Some(i) = self.entries.iter().position(|(k, _)| k.view == key.view) {
            let (_, old) = self.entries.swap_remove(i);
            old.unref(env)?;
        }
        self.entries.push((key, fresh));
        Ok(obj)
    }

    /// Releases the cached objects (the session is being collected).
    pub fn clear(&mut self, env: &Env) -> Result<()> {
        for (_, r) in self.entries.drain(..) {
            r.unref(env)?;
        }
        Ok(())
    }
}

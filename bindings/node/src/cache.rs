//! The last plan a session handed to JavaScript, kept as the JavaScript
//! object itself. A host asks for the plan every turn and it rarely changes
//! between two turns; building the object again (definitions with their
//! schemas, the catalog, every deferred name) is what a call from
//! JavaScript costs, so an unchanged plan is the same object again. It is
//! frozen, deeply, so that no caller can change what the next one reads.

use std::sync::{Arc, Mutex, PoisonError};

use napi::bindgen_prelude::{Function, FunctionRef, JsValue, Object, ObjectRef};
use napi::{Env, Result};
use serde::Serialize;
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

/// JSON text to a deeply frozen object, in JavaScript: V8's own parser and
/// a loop over the result cost a fraction of building and freezing the same
/// object one property at a time through N-API.
const BUILD: &str = "(function (text) {\
    const freeze = (o) => {\
        Object.freeze(o);\
        for (const k in o) {\
            const v = o[k];\
            if (v !== null && typeof v === 'object') freeze(v);\
        }\
        return o;\
    };\
    return freeze(JSON.parse(text));\
})";

/// [`BUILD`], compiled on the first miss of any session of an engine and
/// shared by all of them: compiling it costs a millisecond.
#[derive(Default)]
pub struct Builder(Mutex<Option<FunctionRef<String, Object<'static>>>>);

impl Builder {
    fn build<'e>(&self, env: &'e Env, text: String) -> Result<Object<'e>> {
        let mut slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            let f: Function<String, Object<'static>> = env.run_script(BUILD)?;
            *slot = Some(f.create_ref()?);
        }
        let Some(build) = slot.as_ref() else {
            return Err(napi::Error::from_reason("the plan builder is missing"));
        };
        let built = build.borrow_back(env)?.call(text)?;
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
    pub fn get<'e, T: Serialize>(
        &mut self,
        env: &'e Env,
        key: Key,
        make: impl FnOnce() -> T,
    ) -> Result<Object<'e>> {
        if let Some((_, r)) = self.entries.iter().find(|(k, _)| *k == key) {
            return r.get_value(env);
        }
        let text = serde_json::to_string(&make())
            .map_err(|e| napi::Error::from_reason(format!("cannot write the plan: {e}")))?;
        let obj = self.builder.build(env, text)?;
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

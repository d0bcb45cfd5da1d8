//! The engine every session of a runtime shares: the compiled policy, the tool
//! registry, the skill list and everything derived from them, held as one
//! immutable [`Snapshot`] that hot reload replaces as a whole.
//!
//! A session asks the engine for the current snapshot at the start of every
//! call, so a reload takes effect at the next call of every session, and a call
//! in progress finishes on the snapshot it started with. A reload that fails
//! leaves the last good snapshot in place and returns why.

use std::sync::{Arc, Mutex, PoisonError, RwLock};

use crate::audit::{AuditHook, Event, EventKind};

use crate::policy::{LoadErrors, Policy};
use crate::registry::{LoadError, Registry, SkillList};
use crate::table::Table;

use super::snapshot::{PolicyData, Snapshot, ToolData, terms_of};

/// The shared engine. `Send + Sync`: put it in an `Arc` and hand it to every session.
pub struct Engine {
    current: RwLock<Arc<Snapshot>>,
    /// Serializes reloads, so two at once cannot undo each other.
    reload: Mutex<()>,
    /// The audit subscriber new sessions take, and reload events go to.
    audit: RwLock<Option<AuditHook>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("current", &self.current)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// An engine over a checked policy, a registry and a skill list (may be empty).
    pub fn new(policy: Policy, mut registry: Registry, skills: SkillList) -> Engine {
        crate::lock::mark(&mut registry, &policy);
        let table = Table::compile(&policy);
        let terms = terms_of(&policy);
        let snapshot = Snapshot::new(
            Arc::new(PolicyData { policy, table }),
            Arc::new(ToolData::new(registry, terms)),
            Arc::new(skills),
        );
        Engine {
            current: RwLock::new(Arc::new(snapshot)),
            reload: Mutex::new(()),
            audit: RwLock::new(None),
        }
    }

    /// Subscribes `hook` to the events of every session made from now on,
    /// and to the engine's own (`reload`); `None` ends the subscription for
    /// sessions made later. Each session's events carry a name unique in
    /// this process (`PID-N`, the process id in hex); a front end with names
    /// of its own sets them with [`Session::set_audit`](super::Session::set_audit).
    pub fn set_audit(&self, hook: Option<AuditHook>) {
        *self.audit.write().unwrap_or_else(PoisonError::into_inner) = hook;
    }

    /// The hook set with [`Engine::set_audit`].
    pub fn audit_hook(&self) -> Option<AuditHook> {
        self.audit
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Hands an engine-wide event (`reload`, `drift`) to the subscriber.
    pub fn emit(&self, kind: EventKind) {
        if let Some(hook) = self.audit_hook() {
            hook(&Event::global(kind));
        }
    }

    fn reloaded<E>(
        &self,
        what: &str,
        result: &Result<(), E>,
        codes: impl FnOnce(&E) -> Vec<String>,
    ) {
        if self.audit_hook().is_some() {
            self.emit(EventKind::Reload {
                what: what.into(),
                ok: result.is_ok(),
                codes: result.as_ref().err().map(codes).unwrap_or_default(),
            });
        }
    }

    /// The snapshot in force now. Holding it keeps it alive across a reload.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        Arc::clone(&self.current.read().unwrap_or_else(PoisonError::into_inner))
    }

    fn swap(&self, build: impl FnOnce(&Snapshot) -> Snapshot) {
        let _guard = self.reload.lock().unwrap_or_else(PoisonError::into_inner);
        let old = self.snapshot();
        let new = Arc::new(build(&old));
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = new;
    }

    /// Replaces the policy; sessions pick it up at their next call. The
    /// registry's tools are marked for the new policy's lock here.
    pub fn set_policy(&self, policy: Policy) {
        let table = Table::compile(&policy);
        let data = Arc::new(PolicyData { policy, table });
        self.swap(|old| {
            let tools = match old.tools.remarked(&data.policy) {
                Some(tools) => Arc::new(tools),
                None => Arc::clone(&old.tools),
            };
            Snapshot::new(data, tools, Arc::clone(&old.skills))
        });
    }

    /// Replaces the registry. Sessions keep their activations by name; a tool
    /// that is gone is dropped from them. Its tools are marked for the
    /// policy's lock here, so unlocked-ness is resolved once per load.
    pub fn set_registry(&self, mut registry: Registry) {
        self.swap(|old| {
            crate::lock::mark(&mut registry, &old.policy.policy);
            let data = Arc::new(ToolData::new(registry, terms_of(&old.policy.policy)));
            Snapshot::new(Arc::clone(&old.policy), data, Arc::clone(&old.skills))
        });
    }

    pub fn set_skills(&self, skills: SkillList) {
        let skills = Arc::new(skills);
        self.swap(|old| Snapshot::new(Arc::clone(&old.policy), Arc::clone(&old.tools), skills));
    }

    /// Parses policy text and, if it loads, makes it current; on error the
    /// engine stays on the last good policy and the errors say why.
    pub fn reload_policy(&self, name: &str, text: &str) -> Result<(), LoadErrors> {
        let result = Policy::parse(name, text).map(|policy| self.set_policy(policy));
        self.reloaded("policy", &result, |e| {
            e.diagnostics.iter().map(|d| d.code.to_string()).collect()
        });
        result
    }

    /// Reads a policy file and the lock it names ([`crate::lock::load_policy`])
    /// and, if both load, makes the policy current; on error the engine stays
    /// on the last good policy. A changed lock file is reloaded this way too.
    pub fn reload_policy_file(
        &self,
        path: &std::path::Path,
    ) -> Result<(), crate::lock::PolicyLoadError> {
        let result = crate::lock::load_policy(path).map(|policy| self.set_policy(policy));
        self.reloaded("policy", &result, |e| match e {
            crate::lock::PolicyLoadError::Policy(e) => {
                e.diagnostics.iter().map(|d| d.code.to_string()).collect()
            }
            crate::lock::PolicyLoadError::Io(..) => Vec::new(),
        });
        result
    }

    /// Reads a registry document and, if it loads, makes it current; on error
    /// the engine keeps the last good registry.
    pub fn reload_registry(&self, json: &str) -> Result<(), LoadError> {
        let result = Registry::from_json(json).map(|registry| self.set_registry(registry));
        self.reloaded("registry", &result, |_| Vec::new());
        result
    }

    /// Reads a skill list and, if it loads, makes it current.
    pub fn reload_skills(&self, json: &str) -> Result<(), LoadError> {
        let result = SkillList::from_json(json).map(|skills| self.set_skills(skills));
        self.reloaded("skills", &result, |_| Vec::new());
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Context;

    #[test]
    fn contexts_hiding_the_same_tools_share_one_search_index() {
        let policy = Policy::parse(
            "p",
            "mode a {\n Hide(x)\n}\nmode b {\n Hide(x)\n}\nmode c {\n}\n",
        )
        .unwrap();
        let registry = Registry::from_json(
            r#"[{"name": "x", "description": "x"}, {"name": "y", "description": "y"}]"#,
        )
        .unwrap();
        let engine = Engine::new(policy, registry, SkillList::default());
        let snap = engine.snapshot();
        let index = |m: &str| snap.search_index_for(&snap.base(&Context::mode(m)).unwrap());
        assert!(Arc::ptr_eq(&index("a"), &index("b")));
        assert!(Arc::ptr_eq(&index("a"), &index("a")));
        assert!(!Arc::ptr_eq(&index("a"), &index("c")));
        assert!(Arc::ptr_eq(&index("c"), &snap.tools.index));
    }

    #[test]
    fn the_policy_s_terms_are_searched_and_follow_its_reloads() {
        let dir =
            std::env::temp_dir().join(format!("toolpolicy-engine-terms-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("p.policy");
        std::fs::write(&path, "terms = \"t.toml\"\nDefer(*)\nsearch tool_search\n").unwrap();
        std::fs::write(
            dir.join("t.toml"),
            "[notes]\nterms = [\"jot memos down\"]\n",
        )
        .unwrap();
        let registry = Registry::from_json(
            r#"[{"name": "notes", "description": "Store a note"}, {"name": "weather", "description": "The weather"}]"#,
        )
        .unwrap();
        let engine = Engine::new(
            crate::lock::load_policy(&path).unwrap(),
            registry,
            SkillList::default(),
        );
        let activated = |q: &str| {
            let snap = engine.snapshot();
            let index = snap.search_index();
            index
                .rank_fitting(q, |_| true, 4, |_| false)
                .into_iter()
                .filter(|r| r.activate)
                .map(|r| snap.registry().tools()[r.tool].name.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(activated("jot memos down"), ["notes"]);
        assert_eq!(activated("rainy skies"), Vec::<String>::new());
        // The same terms again: the index is kept, not counted again.
        let before = Arc::clone(&engine.snapshot().tools.index);
        engine.reload_policy_file(&path).unwrap();
        assert!(Arc::ptr_eq(&before, &engine.snapshot().tools.index));
        // New terms: the next search has them, and no longer the old ones.
        std::fs::write(dir.join("t.toml"), "[weather]\nterms = [\"rainy skies\"]\n").unwrap();
        engine.reload_policy_file(&path).unwrap();
        assert_eq!(activated("rainy skies"), ["weather"]);
        assert_eq!(activated("jot memos down"), Vec::<String>::new());
        // A broken terms file keeps the last good policy and its terms.
        std::fs::write(dir.join("t.toml"), "[weather]\nterms = 3\n").unwrap();
        assert!(engine.reload_policy_file(&path).is_err());
        assert_eq!(activated("rainy skies"), ["weather"]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

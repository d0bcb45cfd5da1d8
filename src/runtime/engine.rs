//! The engine every session of a runtime shares: the compiled policy, the tool
//! registry, the skill list and everything derived from them, held as one
//! immutable [`Snapshot`] that hot reload replaces as a whole.
//!
//! A session asks the engine for the current snapshot at the start of every
//! call, so a reload takes effect at the next call of every session, and a call
//! in progress finishes on the snapshot it started with. A reload that fails
//! leaves the last good snapshot in place and returns why.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};

use crate::audit::{AuditHook, Event, EventKind};

use crate::decision::{Context, ContextError, ItemRef};
use crate::policy::{LoadErrors, Policy};
use crate::registry::{LoadError, Registry, SkillList};
use crate::search::SearchIndex;
use crate::table::Table;

use super::catalog::{self, Counted};
use super::plan::BasePlan;
use super::provider::ProviderNames;
use super::session::{Session, SessionState};

/// Contexts whose base plan is kept; past this the cache starts over, so that
/// runtime grants that differ per user cannot grow it without bound.
const BASE_CACHE_LIMIT: usize = 1024;

/// Search indexes kept per set of hidden tools; past this the cache starts
/// over. Contexts that hide the same tools share one.
const INDEX_CACHE_LIMIT: usize = 32;

/// What is derived from a registry alone, shared by snapshots until the
/// registry itself is replaced.
#[derive(Debug)]
pub(crate) struct ToolData {
    pub registry: Arc<Registry>,
    /// Over every tool: what a context that hides nothing searches.
    pub index: Arc<SearchIndex>,
    /// Per tool: meter tokens of its compact definition.
    pub tokens: Box<[u32]>,
    /// Per tool: its name as the catalog shows it (sanitized).
    pub names: Box<[Counted]>,
    /// Per tool: the sanitized first sentence of its description.
    pub summaries: Box<[Counted]>,
    /// Per tool: `(a, b?)`, made the first time a plan has `catalog_params`
    /// on: most policies never turn it on, and a tool may have 100,000
    /// parameters.
    signatures: OnceLock<Box<[Counted]>>,
    /// The names OpenAI and Anthropic get for tools whose own they reject.
    pub provider_names: ProviderNames,
}

impl ToolData {
    fn new(registry: Registry) -> ToolData {
        let tools = registry.tools();
        ToolData {
            index: Arc::new(SearchIndex::new(&registry)),
            provider_names: ProviderNames::new(&registry),
            tokens: tools
                .iter()
                .map(|t| tokens_of_len(declaration_len(t)))
                .collect(),
            names: tools
                .iter()
                .map(|t| Counted::new(catalog::sanitize(&t.name)))
                .collect(),
            summaries: tools
                .iter()
                .map(|t| Counted::new(catalog::summary(&t.description)))
                .collect(),
            signatures: OnceLock::new(),
            registry: Arc::new(registry),
        }
    }

    /// The same tools marked for `policy`'s lock ([`crate::lock::mark`]),
    /// or `None` when no mark would change: what is derived from the
    /// definitions is shared, only the registry is copied.
    fn remarked(&self, policy: &Policy) -> Option<ToolData> {
        let wanted = crate::lock::marks(&self.registry, policy);
        let tools = self.registry.tools();
        if tools.iter().zip(&wanted).all(|(t, &w)| t.unlocked == w) {
            return None;
        }
        let mut registry = Registry::clone(&self.registry);
        let mut wanted = wanted.into_iter();
        registry.set_unlocked(|_| wanted.next().unwrap_or(true));
        let signatures = OnceLock::new();
        if let Some(s) = self.signatures.get() {
            let _ = signatures.set(s.clone());
        }
        Some(ToolData {
            registry: Arc::new(registry),
            index: Arc::clone(&self.index),
            tokens: self.tokens.clone(),
            names: self.names.clone(),
            summaries: self.summaries.clone(),
            signatures,
            provider_names: self.provider_names.clone(),
        })
    }

    /// Per tool: `(a, b?)`.
    pub fn signatures(&self) -> &[Counted] {
        self.signatures.get_or_init(|| {
            self.registry
                .tools()
                .iter()
                .map(|t| Counted::new(catalog::signature(&t.parameter_names())))
                .collect()
        })
    }
}

/// A compiled policy with the source it came from, for explanations.
#[derive(Debug)]
pub(crate) struct PolicyData {
    pub policy: Policy,
    pub table: Table,
}

/// Meter tokens: a quarter token per character, rounded up.
pub(crate) fn tokens_of_len(chars: usize) -> u32 {
    u32::try_from(chars.div_ceil(4)).unwrap_or(u32::MAX)
}

/// The length the meter counts, in UTF-16 code units: what JavaScript's
/// `string.length` gives, so figures agree with runtimes that measure in
/// JavaScript (Aiden's meter, the fixture READMEs). It differs from a count of
/// Unicode scalar values only for characters outside the Basic Multilingual
/// Plane (emoji), which count two.
pub fn meter_len(text: &str) -> usize {
    // Every character but continuation bytes counts one; four-byte ones
    // (outside the BMP) count two. Counted in `u8` over chunks of 127 bytes
    // (at most 2 per byte, so no overflow) so that the compiler vectorizes
    // the loop 16 bytes at a time: summing into `usize` per byte took ~1 ns
    // a byte, a quarter of a 100-tool first-turn plan (`plan/100`).
    let mut n = 0;
    for chunk in text.as_bytes().chunks(127) {
        let mut c: u8 = 0;
        for &b in chunk {
            c += u8::from(b & 0xC0 != 0x80) + u8::from(b >= 0xF0);
        }
        n += usize::from(c);
    }
    n
}

/// The meter length of a tool's compact definition `{name, description,
/// parameters}`, as [`Tool::declaration`](crate::Tool::declaration) would
/// serialize it, counted as it is written instead of built and copied.
pub(crate) fn declaration_len(tool: &crate::Tool) -> usize {
    #[derive(serde::Serialize)]
    struct Declaration<'a> {
        description: &'a str,
        name: &'a str,
        parameters: &'a serde_json::Value,
    }
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf
                .iter()
                .map(|&b| usize::from(b & 0xC0 != 0x80) + usize::from(b >= 0xF0))
                .sum::<usize>();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let decl = Declaration {
        description: &tool.description,
        name: &tool.name,
        parameters: &tool.parameters,
    };
    match serde_json::to_writer(&mut count, &decl) {
        Ok(()) => count.0,
        Err(_) => 0,
    }
}

/// Everything the engine knows at one moment. Immutable; a reload builds a new one.
#[derive(Debug)]
pub struct Snapshot {
    pub(crate) policy: Arc<PolicyData>,
    pub(crate) tools: Arc<ToolData>,
    pub(crate) skills: Arc<SkillList>,
    /// Per tool: the policy rules whose selectors match it.
    pub(crate) matches: Box<[Box<[u32]>]>,
    /// Per skill: likewise.
    pub(crate) skill_matches: Box<[Box<[u32]>]>,
    /// Base plans per context, computed on first use.
    bases: RwLock<HashMap<Context, Arc<BasePlan>>>,
    /// Search indexes without a context's hidden tools, by the hidden set.
    indexes: RwLock<HashMap<Box<[u32]>, Arc<SearchIndex>>>,
}

impl Snapshot {
    fn new(policy: Arc<PolicyData>, tools: Arc<ToolData>, skills: Arc<SkillList>) -> Snapshot {
        let matches = policy
            .table
            .registry_matches(&tools.registry)
            .into_boxed_slice();
        let skill_matches = skills
            .skills()
            .iter()
            .map(|s| {
                policy
                    .table
                    .matching_rules(&ItemRef::from_skill(s))
                    .into_boxed_slice()
            })
            .collect();
        Snapshot {
            policy,
            tools,
            skills,
            matches,
            skill_matches,
            bases: RwLock::new(HashMap::new()),
            indexes: RwLock::new(HashMap::new()),
        }
    }

    pub fn policy(&self) -> &Policy {
        &self.policy.policy
    }

    pub fn table(&self) -> &Table {
        &self.policy.table
    }

    pub fn registry(&self) -> &Registry {
        &self.tools.registry
    }

    pub(crate) fn registry_arc(&self) -> &Arc<Registry> {
        &self.tools.registry
    }

    pub fn skills(&self) -> &SkillList {
        &self.skills
    }

    /// The index over every tool of the registry. A session searches the
    /// index of its context instead (`Snapshot::search_index_for`), which
    /// leaves out what the context hides.
    pub fn search_index(&self) -> &SearchIndex {
        &self.tools.index
    }

    /// The names tools are sent under to OpenAI and Anthropic, and back: a
    /// host maps the name in a provider's tool call with
    /// [`ProviderNames::registry_name`] before it runs the tool or tells the
    /// session about the call.
    pub fn provider_names(&self) -> &ProviderNames {
        &self.tools.provider_names
    }

    /// The index a search in the context of `base` uses: built without the
    /// context's hidden tools, so that a search answers exactly as if they
    /// were absent (docs/runtime.md). Built on the first search in a context and
    /// shared by every context that hides the same tools. The snapshot holds
    /// at most [`INDEX_CACHE_LIMIT`] of them and a base plan only a weak
    /// reference, so memory stays bounded however many contexts search.
    pub(crate) fn search_index_for(&self, base: &BasePlan) -> Arc<SearchIndex> {
        if base.hidden.is_empty() {
            return Arc::clone(&self.tools.index);
        }
        let known = base
            .search_index
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(index) = known.upgrade() {
            return index;
        }
        drop(known);
        let cached = self
            .indexes
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&base.hidden)
            .cloned();
        let index = cached.unwrap_or_else(|| {
            let index = Arc::new(self.tools.index.without(&base.hidden));
            let mut cache = self.indexes.write().unwrap_or_else(PoisonError::into_inner);
            if cache.len() >= INDEX_CACHE_LIMIT {
                cache.clear();
            }
            Arc::clone(cache.entry(base.hidden.clone()).or_insert(index))
        });
        *base
            .search_index
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::downgrade(&index);
        index
    }

    /// The part of a plan that depends on the context only, computed once per
    /// context and snapshot.
    pub(crate) fn base(&self, ctx: &Context) -> Result<Arc<BasePlan>, ContextError> {
        {
            let cache = self.bases.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(b) = cache.get(ctx) {
                return Ok(Arc::clone(b));
            }
        }
        let base = Arc::new(BasePlan::compute(self, ctx)?);
        let mut cache = self.bases.write().unwrap_or_else(PoisonError::into_inner);
        if cache.len() >= BASE_CACHE_LIMIT {
            cache.clear();
        }
        Ok(Arc::clone(cache.entry(ctx.clone()).or_insert(base)))
    }
}

/// The shared engine. `Send + Sync`: put it in an `Arc` and hand it to every session.
pub struct Engine {
    current: RwLock<Arc<Snapshot>>,
    /// Serializes reloads, so two at once cannot undo each other.
    reload: Mutex<()>,
    /// The audit subscriber new sessions take, and reload events go to.
    audit: RwLock<Option<AuditHook>>,
}

/// Sessions made with a subscriber in this process, by every engine: their
/// names (`PID-N`) stay apart when several engines write to one log (a
/// host that builds a new engine on each reload of its settings).
static AUDITED: AtomicU64 = AtomicU64::new(0);

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
        let snapshot = Snapshot::new(
            Arc::new(PolicyData { policy, table }),
            Arc::new(ToolData::new(registry)),
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
    /// of its own sets them with [`Session::set_audit`].
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

    fn audited_session(&self, mut session: Session) -> Session {
        if let Some(hook) = self.audit_hook() {
            let n = AUDITED.fetch_add(1, Ordering::Relaxed) + 1;
            session.set_audit(Some(hook), &format!("{:x}-{n}", std::process::id()));
        }
        session
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
            let data = Arc::new(ToolData::new(registry));
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
    fn meter_counts_utf16_units_and_declarations_as_serialized() {
        assert_eq!(meter_len("abc"), 3);
        assert_eq!(meter_len("搜索"), 2);
        assert_eq!(meter_len("é😀"), 3);
        let reg = Registry::from_json(
            r#"[{"name": "t", "description": "引号 \" and 😀", "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}}]"#,
        )
        .unwrap();
        let t = &reg.tools()[0];
        let text = serde_json::to_string(&t.declaration()).unwrap();
        assert_eq!(declaration_len(t), meter_len(&text));
        assert_eq!(tokens_of_len(5), 2);
        assert_eq!(tokens_of_len(8), 2);
        assert_eq!(tokens_of_len(0), 0);
    }
}

//! What the engine knows at one moment: the [`Snapshot`] of the compiled
//! policy, the registry, the skill list and what is derived from them, and the
//! [`BasePlan`] of each context it has planned for.
//!
//! Almost all of a plan depends on the context alone, not on the session: it is
//! the base plan, computed once per context and snapshot and shared by every
//! session in that context. A session's turn only appends its activations to
//! it, so the plan of a turn where nothing changed costs a cache lookup and a
//! walk over the session's activations, whatever the size of the registry.
//! The snapshot and the base plan sit together because each builds on the
//! other: a snapshot caches base plans, and a base plan is computed from one.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, PoisonError, RwLock, Weak};

use crate::decision::{CauseKind, Context, ContextError, Exposure, ItemRef};
use crate::policy::Policy;
use crate::registry::{Registry, SkillList, Tool};
use crate::search::SearchIndex;
use crate::settings::{Settings, Unlocked};
use crate::table::Table;
use crate::terms::TermsFile;

use super::catalog::{self, Counted};
use super::meter::{declaration_len, meter_len, tokens_of_len};
use super::own_names::DEFAULT_SEARCH_TOOL;
use super::provider::names::ProviderNames;

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
    /// The learned terms `index` holds: the policy's terms file when it was
    /// built.
    terms: Option<Arc<TermsFile>>,
}

/// The terms file a policy names, once read.
pub(crate) fn terms_of(policy: &Policy) -> Option<Arc<TermsFile>> {
    policy.terms.as_ref().and_then(|s| s.file.clone())
}

/// Whether two terms files are the same terms.
fn same_terms(a: &Option<Arc<TermsFile>>, b: &Option<Arc<TermsFile>>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a.tools() == b.tools(),
        _ => false,
    }
}

impl ToolData {
    pub(crate) fn new(registry: Registry, terms: Option<Arc<TermsFile>>) -> ToolData {
        let tools = registry.tools();
        ToolData {
            index: Arc::new(SearchIndex::new_with_terms(&registry, terms.as_deref())),
            terms,
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

    /// The same tools marked for `policy`'s lock ([`crate::lock::mark`])
    /// and searched with its terms file, or `None` when neither would
    /// change: what is derived from the definitions is shared, only the
    /// registry is copied where a mark changes, and the index counted again
    /// where the terms do.
    pub(crate) fn remarked(&self, policy: &Policy) -> Option<ToolData> {
        let wanted = crate::lock::marks(&self.registry, policy);
        let tools = self.registry.tools();
        let marks_hold = tools.iter().zip(&wanted).all(|(t, &w)| t.unlocked == w);
        let terms = terms_of(policy);
        let terms_hold = same_terms(&self.terms, &terms);
        if marks_hold && terms_hold {
            return None;
        }
        let registry = if marks_hold {
            Arc::clone(&self.registry)
        } else {
            let mut registry = Registry::clone(&self.registry);
            let mut wanted = wanted.into_iter();
            registry.set_unlocked(|_| wanted.next().unwrap_or(true));
            Arc::new(registry)
        };
        let index = if terms_hold {
            Arc::clone(&self.index)
        } else {
            Arc::new(match &terms {
                Some(t) => self.index.with_terms(t),
                None => self.index.without_terms(),
            })
        };
        let signatures = OnceLock::new();
        if let Some(s) = self.signatures.get() {
            let _ = signatures.set(s.clone());
        }
        Some(ToolData {
            registry,
            index,
            terms,
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
    pub(crate) fn new(
        policy: Arc<PolicyData>,
        tools: Arc<ToolData>,
        skills: Arc<SkillList>,
    ) -> Snapshot {
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

/// Where one registry tool stands in a context, before activations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolState {
    /// Declared from the start of every turn.
    Declared,
    /// Active by policy but not declared: a search tool while nothing is deferred.
    Idle,
    /// Deferred by policy: declared only once activated.
    Deferred,
    Hidden,
}

/// The context's share of a plan: the same for every session in the context.
#[derive(Debug)]
pub(crate) struct BasePlan {
    pub settings: Settings,
    /// Per registry tool.
    pub state: Box<[ToolState]>,
    /// Guards, search tools (while anything is deferred) and active tools, in
    /// declaration order.
    pub declared: Box<[u32]>,
    /// Tools deferred by policy, in registry order.
    pub deferred: Box<[u32]>,
    pub hidden: Box<[u32]>,
    /// The search tools declared in this context, in declaration order.
    pub search_tools: Box<[u32]>,
    /// How many guards open `declared`: the search tools follow them.
    pub guards_len: usize,
    /// The name of the search tool the model is told about (docs/gateway.md), while
    /// anything is deferred: the first name a `search` statement gives, else
    /// the first declared registry search tool, else `tool_search` when the
    /// policy has no `search` statement and the registry no tool of that name.
    pub search_name: Option<Box<str>>,
    pub catalog: String,
    /// Listed skills, in listing order.
    pub skills: Box<[u32]>,
    pub skills_block: String,
    pub declared_tokens: u64,
    pub catalog_tokens: u64,
    pub skills_tokens: u64,
    /// Tokens of every non-hidden tool's definition.
    pub all_tool_tokens: u64,
    /// The search index without the hidden tools, once a search has needed
    /// it; the snapshot's cache owns it (`Snapshot::search_index_for`).
    pub search_index: RwLock<Weak<crate::search::SearchIndex>>,
}

impl BasePlan {
    pub fn compute(snap: &Snapshot, ctx: &Context) -> Result<BasePlan, ContextError> {
        let table = snap.table();
        let resolved = table.resolve(ctx)?;
        let settings = *resolved.settings();
        let registry = snap.registry();
        let tools = registry.tools();
        let tokens = &snap.tools.tokens;

        let mut exposure = Vec::with_capacity(tools.len());
        let mut causes = Vec::with_capacity(tools.len());
        let mut deferred = Vec::new();
        let mut hidden = Vec::new();
        let mut all_tool_tokens = 0u64;
        for (i, t) in tools.iter().enumerate() {
            let d = table.decide_with(&resolved, &ItemRef::from_tool(t), &snap.matches[i]);
            match d.exposure {
                Exposure::Deferred => deferred.push(i as u32),
                Exposure::Hidden => hidden.push(i as u32),
                Exposure::Active => {}
            }
            if d.exposure != Exposure::Hidden {
                all_tool_tokens += u64::from(tokens[i]);
            }
            exposure.push(d.exposure);
            causes.push(d.cause);
        }

        // Declared order: guards, search tools, then the other active tools.
        let mut placed = vec![false; tools.len()];
        let mut declared = Vec::new();
        let mut place = |i: usize, declared: &mut Vec<u32>| {
            if !std::mem::replace(&mut placed[i], true) {
                declared.push(i as u32);
            }
        };
        for i in table.guard_order(registry) {
            if causes[i] == CauseKind::Guard {
                place(i, &mut declared);
            }
        }
        let guards_end = declared.len();
        if !deferred.is_empty() {
            for i in table.search_order(registry) {
                if causes[i] == CauseKind::Search {
                    place(i, &mut declared);
                }
            }
        }
        let search_tools: Box<[u32]> = declared[guards_end..].into();
        for (i, e) in exposure.iter().enumerate() {
            let discovery = matches!(causes[i], CauseKind::Guard | CauseKind::Search);
            if *e == Exposure::Active && !discovery {
                place(i, &mut declared);
            }
        }
        let state: Box<[ToolState]> = exposure
            .iter()
            .zip(&placed)
            .map(|(e, &placed)| match e {
                Exposure::Active if placed => ToolState::Declared,
                Exposure::Active => ToolState::Idle,
                Exposure::Deferred => ToolState::Deferred,
                Exposure::Hidden => ToolState::Hidden,
            })
            .collect();

        let search_name: Option<Box<str>> = if deferred.is_empty() {
            None
        } else {
            table
                .search_names()
                .next()
                .or_else(|| {
                    search_tools
                        .first()
                        .map(|&i| tools[i as usize].name.as_str())
                })
                .or_else(|| {
                    let default = DEFAULT_SEARCH_TOOL;
                    (!table.has_search() && registry.index_of(default).is_none()).then_some(default)
                })
                .map(Into::into)
        };
        let search_tool = search_name.as_deref();
        let data = &snap.tools;
        let signatures = settings.catalog_params.then(|| data.signatures());
        let catalog = catalog::build_catalog(
            deferred.len(),
            |k| {
                let i = deferred[k] as usize;
                catalog::Entry {
                    name: &data.names[i],
                    signature: signatures.map(|s| &s[i]),
                    summary: &data.summaries[i],
                }
            },
            settings.catalog_line_chars as usize,
            settings.catalog_chars as usize,
            search_tool,
        );

        let all_skills = snap.skills().skills();
        let skills: Box<[u32]> = all_skills
            .iter()
            .enumerate()
            .filter(|&(i, s)| {
                table
                    .decide_with(&resolved, &ItemRef::from_skill(s), &snap.skill_matches[i])
                    .exposure
                    == Exposure::Active
            })
            .map(|(i, _)| i as u32)
            .collect();
        let skills_block = catalog::skills_block(skills.iter().map(|&i| {
            let s = &all_skills[i as usize];
            (s.name.as_str(), s.description.as_str())
        }));

        Ok(BasePlan {
            settings,
            declared_tokens: declared
                .iter()
                .map(|&i| u64::from(tokens[i as usize]))
                .sum(),
            catalog_tokens: u64::from(tokens_of_len(meter_len(&catalog))),
            skills_tokens: u64::from(tokens_of_len(meter_len(&skills_block))),
            all_tool_tokens,
            state,
            declared: declared.into_boxed_slice(),
            deferred: deferred.into_boxed_slice(),
            hidden: hidden.into_boxed_slice(),
            search_tools,
            guards_len: guards_end,
            search_name,
            catalog,
            skills,
            skills_block,
            search_index: RwLock::new(Weak::new()),
        })
    }

    /// Whether the session's activations would declare tool `i`: only a tool
    /// deferred by policy in this context is declared through activation.
    pub fn declares_activated(&self, i: u32) -> bool {
        self.state(i) == ToolState::Deferred
    }

    /// Whether tool `i` is deferred because its definition is not the one
    /// the policy's lock holds (`unlocked = "defer"`): the model reads its
    /// new definition, from a search or a load, before it may call it.
    /// Such a tool is deferred by the lock line of the procedure, which
    /// comes before every `NoDefer` and switch, so its mark and the
    /// setting say it all.
    pub fn unread(&self, tools: &[Tool], i: u32) -> bool {
        self.state(i) == ToolState::Deferred
            && self.settings.unlocked == Unlocked::Defer
            && tools.get(i as usize).is_some_and(|t| t.unlocked)
    }

    /// A registry index's state; an index out of range counts as hidden.
    pub fn state(&self, i: u32) -> ToolState {
        self.state
            .get(i as usize)
            .copied()
            .unwrap_or(ToolState::Hidden)
    }
}

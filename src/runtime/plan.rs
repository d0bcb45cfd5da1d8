//! The per-turn plan (docs/runtime.md): what is declared, what is deferred, the
//! catalog, the skills block and the meter.
//!
//! Almost all of a plan depends on the context alone, not on the session: it is
//! the [`BasePlan`], computed once per context and snapshot and shared by every
//! session in that context. A session's turn only appends its activations to
//! it, so the plan of a turn where nothing changed costs a cache lookup and a
//! walk over the session's activations, whatever the size of the registry.

use std::sync::{Arc, RwLock, Weak};

use serde::Serialize;

use crate::decision::{CauseKind, Context, ContextError, Exposure, ItemRef};
use crate::registry::{Skill, Tool};
use crate::settings::{Settings, Unlocked};

use super::catalog;
use super::engine::{Snapshot, meter_len, tokens_of_len};

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
                    let default = super::own_tools::DEFAULT_SEARCH_TOOL;
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

/// The meter (docs/runtime.md): tokens at a quarter token per character, rounded up
/// per definition, counted in UTF-16 code units (see [`meter_len`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Tokens {
    /// The declared tools' definitions, `{name, description, parameters}` each.
    pub declared: u64,
    pub catalog: u64,
    pub skills: u64,
    /// `declared + catalog + skills`.
    pub total: u64,
    /// The same count had every non-hidden tool been declared (no catalog then).
    pub all_declared: u64,
}

/// One turn's plan for one session. Cheap to make: it shares the context's
/// base plan and carries only the session's activations.
#[derive(Debug, Clone)]
pub struct Plan {
    pub(super) snapshot: Arc<Snapshot>,
    pub(super) base: Arc<BasePlan>,
    /// Activated tools the plan declares, in first-activation order.
    activated: Vec<u32>,
    /// The same, sorted: whether a tool is activated is asked per deferred
    /// tool, and a scan of `activated` each time was quadratic.
    activated_sorted: Box<[u32]>,
}

impl Plan {
    pub(crate) fn new(
        snapshot: Arc<Snapshot>,
        base: Arc<BasePlan>,
        activations: impl Iterator<Item = u32>,
    ) -> Plan {
        let activated: Vec<u32> = activations
            .filter(|&i| base.declares_activated(i))
            .collect();
        let mut activated_sorted: Box<[u32]> = activated.clone().into();
        activated_sorted.sort_unstable();
        Plan {
            snapshot,
            base,
            activated,
            activated_sorted,
        }
    }

    fn is_activated(&self, i: u32) -> bool {
        self.activated_sorted.binary_search(&i).is_ok()
    }

    fn tool(&self, i: u32) -> &Tool {
        &self.snapshot.registry().tools()[i as usize]
    }

    /// Registry indices of the declared tools, in declaration order.
    pub fn declared_indices(&self) -> impl Iterator<Item = usize> + '_ {
        self.base
            .declared
            .iter()
            .chain(&self.activated)
            .map(|&i| i as usize)
    }

    /// The declared tools: guards, search tools, active tools, then activated
    /// tools in first-activation order. Earlier turns' lists are prefixes of
    /// later ones until activations are rebuilt.
    pub fn declared(&self) -> impl Iterator<Item = &Tool> + '_ {
        self.declared_indices()
            .map(|i| &self.snapshot.registry().tools()[i])
    }

    pub fn declared_len(&self) -> usize {
        self.base.declared.len() + self.activated.len()
    }

    /// Registry indices of the deferred tools, in registry order: what a
    /// front end that keeps one object per registry tool looks up.
    pub fn deferred_indices(&self) -> impl Iterator<Item = usize> + '_ {
        self.base
            .deferred
            .iter()
            .filter(|&&i| !self.is_activated(i))
            .map(|&i| i as usize)
    }

    /// The tools deferred by policy and not activated, in registry order.
    pub fn deferred(&self) -> impl Iterator<Item = &Tool> + '_ {
        self.deferred_indices()
            .map(|i| &self.snapshot.registry().tools()[i])
    }

    pub fn deferred_len(&self) -> usize {
        self.base.deferred.len() - self.activated.len()
    }

    /// Registry indices of the hidden tools, in registry order.
    pub fn hidden_indices(&self) -> impl Iterator<Item = usize> + '_ {
        self.base.hidden.iter().map(|&i| i as usize)
    }

    /// The tools the policy hides in this context: never shown to the model.
    pub fn hidden(&self) -> impl Iterator<Item = &Tool> + '_ {
        self.base.hidden.iter().map(|&i| self.tool(i))
    }

    /// The search tools declared in this plan (none while nothing is deferred):
    /// where the host points the model for tools in the catalog.
    pub fn search_tools(&self) -> impl Iterator<Item = &Tool> + '_ {
        self.base.search_tools.iter().map(|&i| self.tool(i))
    }

    /// Registry indices of [`Plan::activated`], in first-activation order.
    pub fn activated_indices(&self) -> impl Iterator<Item = usize> + '_ {
        self.activated.iter().map(|&i| i as usize)
    }

    /// Activated tools this plan declares, in first-activation order.
    pub fn activated(&self) -> impl Iterator<Item = &Tool> + '_ {
        self.activated.iter().map(|&i| self.tool(i))
    }

    /// The `# On-demand tools` text; empty when nothing is deferred. It does
    /// not change as tools are activated.
    pub fn catalog(&self) -> &str {
        &self.base.catalog
    }

    /// The listed skills, in listing order.
    pub fn skills(&self) -> impl Iterator<Item = &Skill> + '_ {
        let all = self.snapshot.skills().skills();
        self.base.skills.iter().map(move |&i| &all[i as usize])
    }

    /// The `<available_skills>` block; empty when no skill is listed.
    pub fn skills_block(&self) -> &str {
        &self.base.skills_block
    }

    /// The settings in effect in the plan's context.
    pub fn settings(&self) -> &Settings {
        &self.base.settings
    }

    /// The policy's exposure of a registry tool in this context (before activations).
    pub fn exposure(&self, name: &str) -> Option<Exposure> {
        let i = self.snapshot.registry().index_of(name)?;
        Some(match self.base.state(i as u32) {
            ToolState::Declared | ToolState::Idle => Exposure::Active,
            ToolState::Deferred => Exposure::Deferred,
            ToolState::Hidden => Exposure::Hidden,
        })
    }

    /// Whether the tool is declared in this plan.
    pub fn is_declared(&self, name: &str) -> bool {
        self.snapshot
            .registry()
            .index_of(name)
            .is_some_and(|i| match self.base.state(i as u32) {
                ToolState::Declared => true,
                ToolState::Deferred => self.is_activated(i as u32),
                ToolState::Idle | ToolState::Hidden => false,
            })
    }

    pub fn tokens(&self) -> Tokens {
        let tokens = &self.snapshot.tools.tokens;
        let declared = self.base.declared_tokens
            + self
                .activated
                .iter()
                .map(|&i| u64::from(tokens[i as usize]))
                .sum::<u64>();
        let (catalog, skills) = (self.base.catalog_tokens, self.base.skills_tokens);
        Tokens {
            declared,
            catalog,
            skills,
            total: declared + catalog + skills,
            all_declared: self.base.all_tool_tokens + skills,
        }
    }

    /// The snapshot the plan was made from.
    pub fn snapshot(&self) -> &Arc<Snapshot> {
        &self.snapshot
    }

    /// The plan in the JSON shape `policy plan` prints (docs/cli.md).
    pub fn report(&self) -> PlanReport {
        let names = |it: &mut dyn Iterator<Item = &Tool>| it.map(|t| t.name.clone()).collect();
        PlanReport {
            declared: names(&mut self.declared()),
            deferred: names(&mut self.deferred()),
            hidden: names(&mut self.hidden()),
            catalog: self.catalog().to_string(),
            skills: self.skills().map(|s| s.name.clone()).collect(),
            skills_block: self.skills_block().to_string(),
            tokens: self.tokens(),
        }
    }
}

/// `{"declared", "deferred", "hidden", "catalog", "skills", "tokens"}` (docs/cli.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanReport {
    pub declared: Vec<String>,
    pub deferred: Vec<String>,
    pub hidden: Vec<String>,
    pub catalog: String,
    pub skills: Vec<String>,
    pub skills_block: String,
    pub tokens: Tokens,
}

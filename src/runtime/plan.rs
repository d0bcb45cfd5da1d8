//! The per-turn plan (docs/runtime.md): what is declared, what is deferred, the
//! catalog, the skills block and the meter.
//!
//! A plan is the context's base plan (in `snapshot.rs`, computed once per
//! context and snapshot) with the session's activations appended.

use std::sync::Arc;

use serde::Serialize;

use crate::decision::Exposure;
use crate::registry::{Skill, Tool};
use crate::settings::Settings;

use super::snapshot::{BasePlan, Snapshot, ToolState};

/// The meter (docs/runtime.md): tokens at a quarter token per character, rounded up
/// per definition, counted in UTF-16 code units (see [`meter_len`](super::meter_len)).
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

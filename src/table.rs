//! The compiled decision table: a checked policy lowered into a span-free,
//! owned form that answers "this item, this context" with a few lookups.
//!
//! Compilation classifies every pattern once (`pattern::PatternSet`). Asking
//! about a context first *resolves* it ([`Table::resolve`]: which sections
//! apply, the settings in effect, which grant filters restrict), once per
//! context; each decision then walks only the rules that match the item. For a
//! registry known in advance, [`Table::registry_matches`] computes each tool's
//! matching rules once, so a decision needs no string work at all.

use std::collections::HashMap;

use crate::ast::SelectorKind;
use crate::decision::{
    CauseKind, Context, ContextError, Decision, Exposure, ItemKind, ItemRef, Origin, check_flags,
    check_grants, check_mode, split_selector,
};
use crate::hint::{Hint, HintSet};
use crate::pattern::{Pattern, PatternSet};
use crate::policy::{Condition, Policy, RuleKind, Scope};
use crate::registry::Registry;
use crate::settings::{Key, SettingValue, Settings, Unlocked};

/// A section is one (scope, condition) pair: the unit that applies or not.
#[derive(Debug, Clone)]
struct Section {
    scope: Scope,
    when: Option<Condition>,
}

#[derive(Debug, Clone, Copy)]
struct CompiledRule {
    kind: RuleKind,
    section: u32,
    /// The grant filter block, which is also the scope's specificity (0..=3).
    specificity: u8,
    grants_tools: bool,
    grants_skills: bool,
}

#[derive(Debug, Clone)]
struct CompiledSetting {
    key: Key,
    value: SettingValue,
    section: u32,
    rank: (u8, bool, usize),
}

/// The compiled policy. Owned, `Send + Sync`, no lifetimes: share it behind an `Arc`.
#[derive(Debug, Clone)]
pub struct Table {
    rules: Vec<CompiledRule>,
    sections: Vec<Section>,
    tool_names: PatternSet<u32>,
    skill_names: PatternSet<u32>,
    sources: PatternSet<u32>,
    /// Per hint (by `Hint as usize`), the rules that name it, in file order.
    hints: [Vec<u32>; 4],
    settings: Vec<CompiledSetting>,
    /// The `Grant` rules, which resolving a context walks: every rule would
    /// make resolving as slow as the policy is long.
    grants: Vec<u32>,
    modes: Vec<String>,
    /// The flags the policy's `when` blocks name.
    flags: Vec<String>,
    /// Guard and search selectors in policy order, for the plan's declared order.
    guards: Vec<(SelectorKind, Pattern)>,
    searches: Vec<(SelectorKind, Pattern)>,
}

/// Grants the runtime adds to a context, compiled once per context.
#[derive(Debug, Clone, Default)]
struct RuntimeGrants {
    tool_names: PatternSet<()>,
    skill_names: PatternSet<()>,
    sources: PatternSet<()>,
    hints: HintSet,
    restricts_tools: bool,
    restricts_skills: bool,
}

/// A context resolved against one table: valid only with the table it came from.
#[derive(Debug, Clone)]
pub struct Resolved {
    context: Context,
    applicable: Vec<bool>,
    settings: Settings,
    setting_origins: HashMap<Key, u32>,
    /// Per filter block (top, mode, `bot *`, named bot): the first grant rule
    /// that makes it restrict tools / skills.
    tool_filters: [Option<u32>; 4],
    skill_filters: [Option<u32>; 4],
    runtime: Option<RuntimeGrants>,
}

impl Resolved {
    pub fn context(&self) -> &Context {
        &self.context
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The setting statement (index into `Policy::settings`) that set `key`, if any.
    pub fn setting_origin(&self, key: Key) -> Option<u32> {
        self.setting_origins.get(&key).copied()
    }
}

const KINDS: usize = 6;

fn kind_index(k: RuleKind) -> usize {
    match k {
        RuleKind::Guard => 0,
        RuleKind::Search => 1,
        RuleKind::Hide => 2,
        RuleKind::Grant => 3,
        RuleKind::NoDefer => 4,
        RuleKind::Defer => 5,
    }
}

impl Table {
    pub fn compile(policy: &Policy) -> Table {
        let mut sections: Vec<Section> = Vec::new();
        let mut section_ids: HashMap<(Scope, Option<Condition>), u32> = HashMap::new();
        let mut section_of = |scope: &Scope, when: &Option<Condition>| -> u32 {
            *section_ids
                .entry((scope.clone(), when.clone()))
                .or_insert_with(|| {
                    sections.push(Section {
                        scope: scope.clone(),
                        when: when.clone(),
                    });
                    (sections.len() - 1) as u32
                })
        };
        let mut table_rules = Vec::with_capacity(policy.rules.len());
        let mut tool_names = PatternSet::default();
        let mut skill_names = PatternSet::default();
        let mut sources = PatternSet::default();
        let mut hints: [Vec<u32>; 4] = Default::default();
        let mut guards = Vec::new();
        let mut searches = Vec::new();
        for (i, r) in policy.rules.iter().enumerate() {
            let id = i as u32;
            for sel in &r.selectors {
                let p = Pattern::new(&sel.pattern);
                match sel.kind {
                    SelectorKind::Tool => tool_names.insert(&p, id),
                    SelectorKind::Skill => skill_names.insert(&p, id),
                    SelectorKind::Source => sources.insert(&p, id),
                    // A checked policy names only the four hints.
                    SelectorKind::Hint => {
                        if let Some(h) = Hint::parse(&sel.pattern) {
                            hints[h as usize].push(id);
                        }
                    }
                }
                match r.kind {
                    RuleKind::Guard if sel.kind != SelectorKind::Skill => {
                        guards.push((sel.kind, p))
                    }
                    RuleKind::Search if sel.kind != SelectorKind::Skill => {
                        searches.push((sel.kind, p))
                    }
                    _ => {}
                }
            }
            table_rules.push(CompiledRule {
                kind: r.kind,
                section: section_of(&r.scope, &r.when),
                specificity: r.scope.specificity(),
                grants_tools: r
                    .selectors
                    .iter()
                    .any(|s| !matches!(s.kind, SelectorKind::Skill)),
                grants_skills: r
                    .selectors
                    .iter()
                    .any(|s| matches!(s.kind, SelectorKind::Skill | SelectorKind::Source)),
            });
        }
        let settings = policy
            .settings
            .iter()
            .enumerate()
            .map(|(i, s)| CompiledSetting {
                key: s.key,
                value: s.value,
                section: section_of(&s.scope, &s.when),
                rank: (
                    s.scope.specificity(),
                    s.when.is_some(),
                    if s.when.is_some() { i } else { 0 },
                ),
            })
            .collect();
        let grants = (0..table_rules.len() as u32)
            .filter(|&i| table_rules[i as usize].kind == RuleKind::Grant)
            .collect();
        Table {
            rules: table_rules,
            sections,
            tool_names,
            skill_names,
            sources,
            hints,
            settings,
            grants,
            modes: policy.modes.clone(),
            flags: policy.flags(),
            guards,
            searches,
        }
    }

    /// Declared modes, in file order.
    pub fn modes(&self) -> &[String] {
        &self.modes
    }

    /// Resolves a context once; every decision in it then uses the result.
    pub fn resolve(&self, ctx: &Context) -> Result<Resolved, ContextError> {
        check_mode(&self.modes, ctx.mode.as_deref())?;
        check_flags(&self.flags, &ctx.flags)?;
        check_grants(ctx.grants.as_deref())?;
        let applicable: Vec<bool> = self
            .sections
            .iter()
            .map(|s| crate::reference::applies(&s.scope, s.when.as_ref(), ctx))
            .collect();
        let mut settings = Settings::default();
        let mut setting_origins = HashMap::new();
        let mut best: HashMap<Key, ((u8, bool, usize), usize)> = HashMap::new();
        for (i, s) in self.settings.iter().enumerate() {
            if !applicable[s.section as usize] {
                continue;
            }
            let e = best.entry(s.key).or_insert((s.rank, i));
            if s.rank > e.0 {
                *e = (s.rank, i);
            }
        }
        for (key, (_, i)) in best {
            settings.apply(key, self.settings[i].value);
            setting_origins.insert(key, i as u32);
        }
        let mut tool_filters = [None; 4];
        let mut skill_filters = [None; 4];
        for &i in &self.grants {
            let r = &self.rules[i as usize];
            if !applicable[r.section as usize] {
                continue;
            }
            let b = r.specificity as usize;
            if r.grants_tools && tool_filters[b].is_none() {
                tool_filters[b] = Some(i);
            }
            if r.grants_skills && skill_filters[b].is_none() {
                skill_filters[b] = Some(i);
            }
        }
        let runtime = ctx.grants.as_ref().map(|grants| {
            // An empty allow-list lets nothing through (docs/language.md); reading it
            // as "no grant restricts" would fail open.
            let mut g = RuntimeGrants {
                restricts_tools: grants.is_empty(),
                restricts_skills: grants.is_empty(),
                ..RuntimeGrants::default()
            };
            for s in grants {
                let (kind, pattern) = split_selector(s);
                let p = Pattern::new(pattern);
                match kind {
                    SelectorKind::Tool => {
                        g.tool_names.insert(&p, ());
                        g.restricts_tools = true;
                    }
                    SelectorKind::Skill => {
                        g.skill_names.insert(&p, ());
                        g.restricts_skills = true;
                    }
                    SelectorKind::Source => {
                        g.sources.insert(&p, ());
                        g.restricts_tools = true;
                        g.restricts_skills = true;
                    }
                    SelectorKind::Hint => {
                        if let Some(h) = Hint::parse(pattern) {
                            g.hints = g.hints.with(h);
                        }
                        g.restricts_tools = true;
                    }
                }
            }
            g
        });
        Ok(Resolved {
            context: ctx.clone(),
            applicable,
            settings,
            setting_origins,
            tool_filters,
            skill_filters,
            runtime,
        })
    }

    /// Every rule (index into `Policy::rules`) with a selector matching the item,
    /// in file order, whatever the context.
    pub fn matching_rules(&self, item: &ItemRef<'_>) -> Vec<u32> {
        let mut out = Vec::new();
        match item.kind {
            ItemKind::Tool => self.tool_names.matches_into(item.name, &mut out),
            ItemKind::Skill => self.skill_names.matches_into(item.name, &mut out),
        }
        if let Some(src) = item.source {
            self.sources.matches_into(src, &mut out);
        }
        for h in item.hints.iter() {
            out.extend_from_slice(&self.hints[h as usize]);
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Each registry tool's matching rules, computed once so that decisions about
    /// registered tools do no pattern matching.
    pub fn registry_matches(&self, registry: &Registry) -> Vec<Box<[u32]>> {
        registry
            .tools()
            .iter()
            .map(|t| {
                self.matching_rules(&ItemRef::from_tool(t))
                    .into_boxed_slice()
            })
            .collect()
    }

    /// Decides an item; matches the item's name against every pattern.
    pub fn decide(&self, resolved: &Resolved, item: &ItemRef<'_>) -> Decision {
        let matches = self.matching_rules(item);
        self.decide_with(resolved, item, &matches)
    }

    /// Decides an item whose matching rules are already known (from
    /// [`Table::matching_rules`] or [`Table::registry_matches`]).
    pub fn decide_with(
        &self,
        resolved: &Resolved,
        item: &ItemRef<'_>,
        matches: &[u32],
    ) -> Decision {
        let mut best: [Option<(u8, u32)>; KINDS] = [None; KINDS];
        let mut granted = [false; 4];
        for &id in matches {
            let r = &self.rules[id as usize];
            if !resolved.applicable[r.section as usize] {
                continue;
            }
            if r.kind == RuleKind::Grant {
                granted[r.specificity as usize] = true;
            }
            let slot = &mut best[kind_index(r.kind)];
            if slot.is_none_or(|(s, _)| r.specificity > s) {
                *slot = Some((r.specificity, id));
            }
        }
        let rule = |k: RuleKind| best[kind_index(k)].map(|(_, id)| Origin::Rule(id));
        let d = |exposure, cause, origin| Decision {
            exposure,
            cause,
            origin,
        };
        let is_tool = item.kind == ItemKind::Tool;
        if is_tool {
            if let Some(o) = rule(RuleKind::Guard) {
                return d(Exposure::Active, CauseKind::Guard, Some(o));
            }
            if let Some(o) = rule(RuleKind::Search) {
                return d(Exposure::Active, CauseKind::Search, Some(o));
            }
        } else if !item.model_invocable {
            return d(Exposure::Hidden, CauseKind::ModelInvocable, None);
        }
        if let Some(o) = rule(RuleKind::Hide) {
            return d(Exposure::Hidden, CauseKind::Hide, Some(o));
        }
        let filters = if is_tool {
            &resolved.tool_filters
        } else {
            &resolved.skill_filters
        };
        for b in (0..4).rev() {
            if let Some(first) = filters[b]
                && !granted[b]
            {
                return d(
                    Exposure::Hidden,
                    CauseKind::Grant,
                    Some(Origin::Rule(first)),
                );
            }
        }
        if let Some(rt) = &resolved.runtime
            && !runtime_grants(rt, item)
        {
            return d(Exposure::Hidden, CauseKind::Grant, None);
        }
        if !is_tool {
            return d(Exposure::Active, CauseKind::Default, None);
        }
        if item.unlocked {
            let origin = || resolved.setting_origin(Key::Unlocked).map(Origin::Setting);
            match resolved.settings.unlocked {
                Unlocked::Hide => return d(Exposure::Hidden, CauseKind::Lock, origin()),
                Unlocked::Defer => return d(Exposure::Deferred, CauseKind::Lock, origin()),
                Unlocked::Allow => {}
            }
        }
        if let Some(o) = rule(RuleKind::NoDefer) {
            return d(Exposure::Active, CauseKind::NoDefer, Some(o));
        }
        if !resolved.settings.defer_loading {
            let origin = resolved
                .setting_origin(Key::DeferLoading)
                .map(Origin::Setting);
            return d(Exposure::Active, CauseKind::Switch, origin);
        }
        if let Some(o) = rule(RuleKind::Defer) {
            return d(Exposure::Deferred, CauseKind::Defer, Some(o));
        }
        if item.defer_hint {
            return d(Exposure::Deferred, CauseKind::Hint, None);
        }
        d(Exposure::Active, CauseKind::Default, None)
    }

    /// Registry indices of the tools a list of guard or search selectors picks,
    /// in policy order, each pattern's matches in registry order, each tool once.
    fn ordered(list: &[(SelectorKind, Pattern)], registry: &Registry) -> Vec<usize> {
        let mut seen = vec![false; registry.len()];
        let mut out = Vec::new();
        for (kind, p) in list {
            if let (SelectorKind::Tool, Pattern::Exact(name)) = (kind, p) {
                if let Some(i) = registry.index_of(name)
                    && !std::mem::replace(&mut seen[i], true)
                {
                    out.push(i);
                }
                continue;
            }
            for (i, t) in registry.tools().iter().enumerate() {
                let hit = match kind {
                    SelectorKind::Tool => p.matches(&t.name),
                    _ => t.source.as_deref().is_some_and(|s| p.matches(s)),
                };
                if hit && !std::mem::replace(&mut seen[i], true) {
                    out.push(i);
                }
            }
        }
        out
    }

    /// Guard tools of the registry in declaration order (docs/runtime.md).
    pub fn guard_order(&self, registry: &Registry) -> Vec<usize> {
        Self::ordered(&self.guards, registry)
    }

    /// Search tools of the registry in declaration order (docs/runtime.md).
    pub fn search_order(&self, registry: &Registry) -> Vec<usize> {
        Self::ordered(&self.searches, registry)
    }

    /// The tool names `search` statements give literally (no wildcard, no
    /// `source:`), in policy order: the names the engine's own search tool
    /// may take (docs/gateway.md).
    pub fn search_names(&self) -> impl Iterator<Item = &str> {
        self.searches
            .iter()
            .filter_map(|(kind, p)| match (kind, p) {
                (SelectorKind::Tool, Pattern::Exact(name)) => Some(name.as_str()),
                _ => None,
            })
    }

    /// Whether the policy has any `search` statement.
    pub fn has_search(&self) -> bool {
        !self.searches.is_empty()
    }
}

fn runtime_grants(rt: &RuntimeGrants, item: &ItemRef<'_>) -> bool {
    let restricts = match item.kind {
        ItemKind::Tool => rt.restricts_tools,
        ItemKind::Skill => rt.restricts_skills,
    };
    if !restricts {
        return true;
    }
    let mut hits = Vec::new();
    match item.kind {
        ItemKind::Tool => rt.tool_names.matches_into(item.name, &mut hits),
        ItemKind::Skill => rt.skill_names.matches_into(item.name, &mut hits),
    }
    if let Some(src) = item.source {
        rt.sources.matches_into(src, &mut hits);
    }
    !hits.is_empty() || item.hints.iter().any(|h| rt.hints.contains(h))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decide(src: &str, ctx: &Context, item: ItemRef<'_>) -> Decision {
        let p = Policy::parse("t", src).unwrap();
        let t = Table::compile(&p);
        t.decide(&t.resolve(ctx).unwrap(), &item)
    }

    #[test]
    fn procedure_lines_in_order() {
        let src = "guard g\nsearch s\nDefer(*)\nNoDefer(n)\nHide(h, g, s)\n";
        let ctx = Context::default();
        let kind = |name| decide(src, &ctx, ItemRef::tool(name)).cause;
        assert_eq!(kind("g"), CauseKind::Guard);
        assert_eq!(kind("s"), CauseKind::Search);
        assert_eq!(kind("h"), CauseKind::Hide);
        assert_eq!(kind("n"), CauseKind::NoDefer);
        assert_eq!(kind("x"), CauseKind::Defer);
    }

    #[test]
    fn most_specific_rule_is_the_cause() {
        let src = "Defer(a*)\nmode m {\n Defer(ab)\n}\n";
        let d = decide(src, &Context::mode("m"), ItemRef::tool("ab"));
        assert_eq!(d.origin, Some(Origin::Rule(1)));
        let d = decide(src, &Context::mode("m"), ItemRef::tool("ac"));
        assert_eq!(d.origin, Some(Origin::Rule(0)));
    }

    #[test]
    fn grants_filter_per_block() {
        let src = "bot r {\n Grant(Read, skill:review)\n}\n";
        let ctx = Context::default().with_bot("r");
        assert_eq!(
            decide(src, &ctx, ItemRef::tool("Read")).exposure,
            Exposure::Active
        );
        assert_eq!(
            decide(src, &ctx, ItemRef::tool("Bash")).cause,
            CauseKind::Grant
        );
        assert_eq!(
            decide(src, &ctx, ItemRef::skill("other")).cause,
            CauseKind::Grant
        );
        // Without the bot, the block does not apply.
        assert_eq!(
            decide(src, &Context::default(), ItemRef::tool("Bash")).exposure,
            Exposure::Active
        );
        // Runtime grants are one more filter.
        let ctx = Context::default().with_grants(["Read"]);
        assert_eq!(
            decide("", &ctx, ItemRef::tool("Bash")).cause,
            CauseKind::Grant
        );
        assert_eq!(
            decide("", &ctx, ItemRef::skill("any")).exposure,
            Exposure::Active
        );
    }

    #[test]
    fn settings_most_specific_first() {
        let src = "defer_loading = false\nDefer(*)\nmode m {\n defer_loading = true\n}\nmode n {\n}\nwhen f {\n defer_loading = true\n}\n";
        assert_eq!(
            decide(src, &Context::mode("n"), ItemRef::tool("x")).cause,
            CauseKind::Switch
        );
        assert_eq!(
            decide(src, &Context::mode("m"), ItemRef::tool("x")).cause,
            CauseKind::Defer
        );
        assert_eq!(
            decide(src, &Context::mode("n").with_flag("f"), ItemRef::tool("x")).cause,
            CauseKind::Defer
        );
    }

    #[test]
    fn undeclared_mode_names_the_closest() {
        let p = Policy::parse("t", "mode agent { }\nmode chat { }\n").unwrap();
        let e = Table::compile(&p)
            .resolve(&Context::mode("agnt"))
            .unwrap_err();
        assert!(e.to_string().contains("`agent`"), "{e}");
        // A missing mode is the same error: never "the top level only".
        let e = Table::compile(&p).resolve(&Context::default()).unwrap_err();
        assert!(e.to_string().contains("`agent`, `chat`"), "{e}");
    }

    #[test]
    fn an_empty_runtime_grant_list_grants_nothing() {
        let ctx = Context::default().with_grants(Vec::<String>::new());
        let src = "guard g\nsearch s\n";
        for (item, exposure) in [
            (ItemRef::tool("x"), Exposure::Hidden),
            (ItemRef::skill("x"), Exposure::Hidden),
            (ItemRef::tool("g"), Exposure::Active),
            (ItemRef::tool("s"), Exposure::Active),
        ] {
            assert_eq!(decide(src, &ctx, item).exposure, exposure, "{item:?}");
        }
    }

    /// A runtime grant may be a hint; an unknown hint name there is an error
    /// with a did-you-mean, not a grant that silently lets nothing through.
    #[test]
    fn runtime_grants_by_hint() {
        let reg = Registry::from_json(
            r#"[{"name": "r", "annotations": {"readOnlyHint": true}}, {"name": "w"}]"#,
        )
        .unwrap();
        let ctx = Context::default().with_grants(["hint:read_only"]);
        let exposure = |name| decide("", &ctx, ItemRef::from_tool(reg.get(name).unwrap())).exposure;
        assert_eq!(exposure("r"), Exposure::Active);
        assert_eq!(exposure("w"), Exposure::Hidden);
        let p = Policy::parse("t", "").unwrap();
        let e = Table::compile(&p)
            .resolve(&Context::default().with_grants(["hint:readonly"]))
            .unwrap_err();
        assert_eq!(e.help.as_deref(), Some("did you mean `hint:read_only`"));
    }

    #[test]
    fn guard_order_is_policy_then_registry_order() {
        let reg = Registry::new(
            ["b1", "a1", "a2", "c"]
                .iter()
                .map(|n| crate::registry::Tool {
                    name: n.to_string(),
                    description: String::new(),
                    parameters: serde_json::json!({}),
                    source: None,
                    defer_loading: false,
                    ..Default::default()
                })
                .collect(),
        )
        .unwrap();
        let p = Policy::parse("t", "guard c, a*\nguard b1, a1\n").unwrap();
        assert_eq!(Table::compile(&p).guard_order(&reg), [3, 1, 2, 0]);
    }
}

//! What must hold after anything a session went through, checked against the
//! compiled table, itself checked against the reference interpreter on every
//! item of the session. A broken invariant panics: that is the finding.

use toolpolicy::runtime::{ActivationResult, Engine};
use toolpolicy::{CauseKind, Context, Decision, Exposure, ItemRef, Session, reference};

/// The table's decision on every tool and skill of the engine's current
/// registry and skill list, in one context.
pub struct Oracle {
    names: Vec<String>,
    tools: Vec<Decision>,
    skills: Vec<(String, Decision)>,
}

impl Oracle {
    /// `None` when the policy rejects the context (an undeclared mode); the
    /// table and the reference interpreter must then reject it alike.
    pub fn new(engine: &Engine, ctx: &Context) -> Option<Oracle> {
        let snap = engine.snapshot();
        let (policy, table) = (snap.policy(), snap.table());
        let probe = ItemRef::tool("probe");
        let resolved = match table.resolve(ctx) {
            Ok(r) => r,
            Err(e) => {
                assert_eq!(Err(e), reference::decide(policy, ctx, &probe).map(|_| ()));
                return None;
            }
        };
        let decide = |item: ItemRef<'_>| {
            let got = table.decide(&resolved, &item);
            let want = reference::decide(policy, ctx, &item);
            assert_eq!(
                Ok(got),
                want,
                "table and reference disagree on {item:?} in {ctx:?}\n{}",
                policy.source.text
            );
            got
        };
        let tools = snap.registry().tools();
        Some(Oracle {
            names: tools.iter().map(|t| t.name.clone()).collect(),
            tools: tools
                .iter()
                .map(|t| decide(ItemRef::from_tool(t)))
                .collect(),
            skills: snap
                .skills()
                .skills()
                .iter()
                .map(|s| (s.name.clone(), decide(ItemRef::from_skill(s))))
                .collect(),
        })
    }

    pub fn tool(&self, name: &str) -> Option<Decision> {
        let i = self.names.iter().position(|n| n == name)?;
        Some(self.tools[i])
    }

    fn is_hidden(&self, name: &str) -> bool {
        self.tool(name)
            .is_some_and(|d| d.exposure == Exposure::Hidden)
    }

    fn skill(&self, name: &str) -> Option<Decision> {
        self.skills.iter().find(|s| s.0 == name).map(|s| s.1)
    }

    /// What a search or load showed the model never names a hidden tool
    /// (`unavailable` only echoes what the model asked for), and only
    /// deferred tools are activated.
    pub fn check_result(&self, r: &ActivationResult) {
        let shown = r.activated.iter().chain(&r.already_active);
        for name in shown.chain(&r.matches).chain(&r.over_limit) {
            assert!(!self.is_hidden(name), "hidden `{name}` shown: {r:?}");
        }
        for name in &r.activated {
            let d = self.tool(name).map(|d| d.exposure);
            assert_eq!(d, Some(Exposure::Deferred), "`{name}` activated: {r:?}");
        }
        assert!(r.activated.is_empty() || r.status.is_ok(), "{r:?}");
    }

    /// The plan the session would send now.
    pub fn check_plan(&self, engine: &Engine, session: &Session) {
        let plan = match session.plan(engine) {
            Ok(p) => p,
            Err(e) => panic!("the context resolved but the plan fails: {e}"),
        };
        let activated = session.activated();
        let declared: Vec<&str> = plan.declared().map(|t| t.name.as_str()).collect();
        let mut unique = declared.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), declared.len(), "declared twice: {declared:?}");
        for (name, d) in self.names.iter().zip(&self.tools) {
            assert_eq!(plan.exposure(name), Some(d.exposure), "`{name}`");
            let is_declared = declared.contains(&name.as_str());
            match d.exposure {
                Exposure::Hidden => assert!(!is_declared, "hidden `{name}` declared"),
                Exposure::Deferred => assert_eq!(
                    is_declared,
                    activated.contains(name),
                    "deferred `{name}` declared: {declared:?}, activated {activated:?}"
                ),
                Exposure::Active if d.cause != CauseKind::Search => {
                    assert!(is_declared, "active `{name}` not declared")
                }
                Exposure::Active => {}
            }
        }
        for t in plan.deferred() {
            let d = self.tool(&t.name).map(|d| d.exposure);
            assert_eq!(d, Some(Exposure::Deferred), "`{}` in deferred", t.name);
        }
        let catalog = plan.catalog();
        let budget = plan.settings().catalog_chars as usize;
        assert!(
            catalog.chars().count() <= budget,
            "catalog over {budget}:\n{catalog}"
        );
        for line in catalog.lines().skip(1) {
            assert!(line.starts_with("- "), "catalog line {line:?}");
            let name = entry_name(line);
            if let Some(d) = self.tool(name) {
                assert_eq!(
                    d.exposure,
                    Exposure::Deferred,
                    "`{name}` in the catalog:\n{catalog}"
                );
            }
        }
        self.check_skills(engine, session, plan.skills_block());
    }

    /// The skills block lists exactly the skills that are not hidden, and
    /// the skill tool resolves exactly those.
    fn check_skills(&self, engine: &Engine, session: &Session, block: &str) {
        let listed: Vec<&str> = block
            .lines()
            .filter(|l| l.starts_with("- "))
            .map(entry_name)
            .collect();
        let visible: Vec<&str> = self
            .skills
            .iter()
            .filter(|s| s.1.exposure != Exposure::Hidden)
            .map(|s| s.0.as_str())
            .collect();
        assert_eq!(listed, visible, "skills block:\n{block}");
        for (name, _) in &self.skills {
            let hidden = self
                .skill(name)
                .is_some_and(|d| d.exposure == Exposure::Hidden);
            let found = match session.resolve_skill(engine, name) {
                Ok(s) => s,
                Err(e) => panic!("the context resolved but the skill tool fails: {e}"),
            };
            assert_eq!(found.map(|s| s.name).is_none(), hidden, "skill `{name}`");
        }
    }
}

/// The item name a catalog or skills line starts with: `- name: …`,
/// `- name(params): …`, `- name`. Names are the generator's, plain letters.
fn entry_name(line: &str) -> &str {
    let rest = line.trim_start_matches("- ");
    let end = rest.find([':', '(', '…']).unwrap_or(rest.len());
    &rest[..end]
}

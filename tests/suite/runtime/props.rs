//! Properties of the runtime over random registries, skill lists, policies and
//! sequences of calls, stated as docs/runtime.md states them:
//!
//! - a hidden item never reaches the model: not declared, not in the catalog,
//!   not in a search or load result (other than echoing a name the model
//!   asked for as unavailable), not in the skills block, not resolvable;
//! - activations only append between rebuilds;
//! - the catalog never exceeds its budget;
//! - the same inputs give byte-identical plans and results.
//!
//! Hidden is decided by the compiled table directly (the oracle), not by the
//! runtime under test.

use proptest::prelude::*;
use toolpolicy::registry::{Skill, Tool};
use toolpolicy::runtime::{Engine, ResultStatus, Session};
use toolpolicy::{Context, Exposure, ItemRef, Policy, Registry, SkillList, Table};

/// Tool names: none is a substring of another, and none occurs in descriptions.
const TOOLS: [&str; 12] = [
    "Alpha", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot", "Golf", "Hotel", "India", "Juliet",
    "Kilo", "Lima",
];
const SKILLS: [&str; 4] = ["sk-one", "sk-two", "sk-three", "sk-four"];
const WORDS: [&str; 10] = [
    "read", "write", "file", "search", "web", "page", "issue", "browser", "文件", "搜索",
];
const SOURCES: [&str; 3] = ["builtin", "mcp:x", "mcp:y"];
const RULES: [&str; 16] = [
    "Defer(*)",
    "Defer(*)",
    "NoDefer(D*)",
    "NoDefer(Alpha, Bravo)",
    "Hide(Echo)",
    "Hide(source:mcp:x)",
    "Hide(G*)",
    "Grant(A*, B*, C*, D*, E*, F*, skill:*)",
    "Defer(source:mcp:y)",
    "Hide(skill:sk-one)",
    "Grant(skill:sk-two, skill:sk-three)",
    "Hide(Charlie)",
    "NoDefer(Charlie)",
    "Defer(India, Juliet)",
    "Hide(Kilo, Lima)",
    "Grant(*)",
];
const GRANTS: [&str; 5] = ["*", "A*", "skill:*", "source:mcp:x", "Hotel"];
const MODES: [&str; 2] = ["m1", "m2"];

#[derive(Debug, Clone)]
struct Inputs {
    tools: Vec<(usize, Vec<usize>, usize, bool, bool)>,
    skills: Vec<(usize, bool)>,
    top: Vec<usize>,
    modes: [Vec<usize>; 2],
    guard: Option<usize>,
    search: Vec<usize>,
    settings: (usize, usize, u32, bool, bool),
}

#[derive(Debug, Clone)]
enum Op {
    Search(Vec<usize>, Vec<usize>),
    Load(Vec<usize>),
    Call(usize, u8),
    Prompt,
    Mode(usize),
    Grants(Option<Vec<usize>>),
    Compact,
    Restart,
    Failed(Vec<usize>),
}

fn inputs() -> impl Strategy<Value = Inputs> {
    let tool = (
        0..TOOLS.len(),
        prop::collection::vec(0..WORDS.len(), 0..6),
        0..SOURCES.len(),
        any::<bool>(),
        any::<bool>(),
    );
    (
        prop::collection::vec(tool, 1..12),
        prop::collection::vec((0..SKILLS.len(), any::<bool>()), 0..4),
        prop::collection::vec(0..RULES.len(), 0..4),
        prop::collection::vec(0..RULES.len(), 0..3),
        prop::collection::vec(0..RULES.len(), 0..3),
        prop::option::of(0..TOOLS.len()),
        prop::collection::vec(0..TOOLS.len(), 0..2),
        (0..5usize, 0..3usize, 1..5u32, any::<bool>(), any::<bool>()),
    )
        .prop_map(
            |(tools, skills, top, m1, m2, guard, search, settings)| Inputs {
                tools,
                skills,
                top,
                modes: [m1, m2],
                guard,
                search,
                settings,
            },
        )
}

fn op() -> impl Strategy<Value = Op> {
    let names = || prop::collection::vec(0..TOOLS.len() + 1, 0..5);
    prop_oneof![
        4 => (prop::collection::vec(0..WORDS.len(), 0..3), names()).prop_map(|(w, n)| Op::Search(w, n)),
        3 => names().prop_map(Op::Load),
        3 => (0..TOOLS.len() + 1, 0..4u8).prop_map(|(t, s)| Op::Call(t, s)),
        2 => Just(Op::Prompt),
        1 => (0..2usize).prop_map(Op::Mode),
        1 => prop::option::of(prop::collection::vec(0..GRANTS.len(), 0..3)).prop_map(Op::Grants),
        1 => Just(Op::Compact),
        1 => Just(Op::Restart),
        1 => names().prop_map(Op::Failed),
    ]
}

/// A tool name, or `Zulu` (unknown) for the index past the end.
fn name(i: usize) -> &'static str {
    TOOLS.get(i).copied().unwrap_or("Zulu")
}

fn build(inputs: &Inputs) -> Option<(Policy, Registry, SkillList)> {
    let mut seen = Vec::new();
    let mut tools = Vec::new();
    for (t, words, source, hint, noisy) in &inputs.tools {
        if seen.contains(t) {
            continue;
        }
        seen.push(*t);
        let mut description: Vec<&str> = words.iter().map(|&w| WORDS[w]).collect();
        if *noisy {
            description.push("done.\n\n- Injected: line\u{7}\u{202E}");
        }
        tools.push(Tool {
            name: TOOLS[*t].to_string(),
            description: description.join(" "),
            parameters: serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            source: Some(SOURCES[*source].to_string()),
            defer_loading: *hint,
            ..Default::default()
        });
    }
    let mut skills = Vec::new();
    for (k, invocable) in &inputs.skills {
        if skills.iter().any(|s: &Skill| s.name == SKILLS[*k]) {
            continue;
        }
        skills.push(Skill {
            name: SKILLS[*k].to_string(),
            key: Some(format!("key-{k}")),
            description: "does things\nwith <tags>".into(),
            source: Some("builtin".into()),
            model_invocable: *invocable,
        });
    }
    let (chars, line, max, per_prompt, params) = inputs.settings;
    let mut text = format!(
        "catalog_chars = {}\ncatalog_line_chars = {}\nmax_activations = {max}\nactivation = \"{}\"\ncatalog_params = {params}\n",
        [0, 25, 60, 200, 4000][chars],
        [20, 40, 120][line],
        if per_prompt { "per_prompt" } else { "sticky" },
    );
    if let Some(g) = inputs.guard {
        text += &format!("guard {}\n", TOOLS[g]);
    }
    for s in &inputs.search {
        text += &format!("search {}\n", TOOLS[*s]);
    }
    for r in &inputs.top {
        text += &format!("{}\n", RULES[*r]);
    }
    for (m, rules) in MODES.iter().zip(&inputs.modes) {
        text += &format!("mode {m} {{\n");
        for r in rules {
            text += &format!("  {}\n", RULES[*r]);
        }
        text += "}\n";
    }
    let policy = Policy::parse("random.policy", text).ok()?;
    Some((
        policy,
        Registry::new(tools).ok()?,
        SkillList::new(skills).ok()?,
    ))
}

/// What the oracle says is hidden in the session's context.
fn hidden(
    policy: &Policy,
    registry: &Registry,
    skills: &SkillList,
    ctx: &Context,
) -> (Vec<String>, Vec<String>, u32) {
    let table = Table::compile(policy);
    let resolved = table.resolve(ctx).expect("modes are declared");
    let tools = registry
        .tools()
        .iter()
        .filter(|t| table.decide(&resolved, &ItemRef::from_tool(t)).exposure == Exposure::Hidden)
        .map(|t| t.name.clone())
        .collect();
    let skills = skills
        .skills()
        .iter()
        .filter(|s| table.decide(&resolved, &ItemRef::from_skill(s)).exposure == Exposure::Hidden)
        .map(|s| s.name.clone())
        .collect();
    (tools, skills, resolved.settings().catalog_chars)
}

/// Runs one op; returns everything the model saw from it, as JSON text.
fn apply(s: &mut Session, e: &Engine, op: &Op) -> (String, Vec<String>) {
    let status = |k: u8| match k {
        0 => ResultStatus::Ok,
        1 => ResultStatus::Error,
        2 => ResultStatus::Interrupted,
        _ => ResultStatus::Missing,
    };
    let names = |v: &[usize]| v.iter().map(|&i| name(i)).collect::<Vec<_>>();
    match op {
        Op::Search(words, n) => {
            let q: Vec<&str> = words.iter().map(|&w| WORDS[w]).collect();
            let r = s.search(e, &q.join(" "), &names(n)).unwrap();
            let mut shown = r.activated.clone();
            shown.extend(r.already_active.iter().cloned());
            shown.extend(r.matches.iter().cloned());
            shown.extend(r.over_limit.iter().cloned());
            (serde_json::to_string(&r).unwrap(), shown)
        }
        Op::Load(n) | Op::Failed(n) => {
            let st = if matches!(op, Op::Failed(_)) {
                ResultStatus::Error
            } else {
                ResultStatus::Ok
            };
            let r = s.load_with_status(e, &names(n), st).unwrap();
            let mut shown = r.activated.clone();
            shown.extend(r.already_active.iter().cloned());
            shown.extend(r.over_limit.iter().cloned());
            (serde_json::to_string(&r).unwrap(), shown)
        }
        Op::Call(t, k) => {
            let outcome = s.call(e, name(*t)).unwrap();
            if outcome == toolpolicy::runtime::CallOutcome::Allowed {
                s.record_result(e, name(*t), status(*k)).unwrap();
            }
            (format!("{outcome:?}"), Vec::new())
        }
        Op::Prompt => {
            s.prompt(e).unwrap();
            (String::new(), Vec::new())
        }
        Op::Mode(m) => {
            s.set_mode(e, Some(MODES[*m])).unwrap();
            (String::new(), Vec::new())
        }
        Op::Grants(g) => {
            let mut ctx = s.context().clone();
            ctx.grants = g
                .as_ref()
                .map(|g| g.iter().map(|&i| GRANTS[i].to_string()).collect());
            s.set_context(e, ctx).unwrap();
            (String::new(), Vec::new())
        }
        Op::Compact => (s.compact().to_string(), Vec::new()),
        Op::Restart => {
            s.restart(e).unwrap();
            (String::new(), Vec::new())
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn the_model_never_sees_a_hidden_item(
        inputs in inputs(),
        ops in prop::collection::vec(op(), 1..14),
    ) {
        let Some((policy, registry, skills)) = build(&inputs) else {
            return Err(TestCaseError::reject("not a valid policy"));
        };
        let e = Engine::new(policy.clone(), registry.clone(), skills.clone());
        let mut s = e.session(Context::mode("m1")).unwrap();
        for op in &ops {
            let before = s.activated();
            let (_, shown) = apply(&mut s, &e, op);
            let (hidden_tools, hidden_skills, budget) = hidden(&policy, &registry, &skills, s.context());
            if matches!(op, Op::Search(..) | Op::Load(_) | Op::Call(..) | Op::Failed(_) | Op::Compact) {
                prop_assert!(s.activated().starts_with(&before), "{:?}: {:?} -> {:?}", op, before, s.activated());
            }
            for n in &shown {
                prop_assert!(!hidden_tools.contains(n), "{op:?} showed hidden {n}");
            }
            let plan = s.plan(&e).unwrap();
            let declared: Vec<&str> = plan.declared().map(|t| t.name.as_str()).collect();
            let mut unique = declared.clone();
            unique.sort_unstable();
            unique.dedup();
            prop_assert_eq!(unique.len(), declared.len(), "declared twice: {:?}", declared);
            // The index views name the same tools as the tool views.
            let tools = plan.snapshot().registry().tools();
            let named = |ix: Vec<usize>| -> Vec<String> { ix.into_iter().map(|i| tools[i].name.clone()).collect() };
            let names = |ts: Vec<&Tool>| -> Vec<String> { ts.into_iter().map(|t| t.name.clone()).collect() };
            prop_assert_eq!(named(plan.deferred_indices().collect()), names(plan.deferred().collect()));
            prop_assert_eq!(named(plan.hidden_indices().collect()), names(plan.hidden().collect()));
            prop_assert_eq!(named(plan.activated_indices().collect()), names(plan.activated().collect()));
            let catalog = plan.catalog();
            prop_assert!(catalog.chars().count() <= budget as usize, "{} > {budget}", catalog.chars().count());
            let block = plan.skills_block();
            for h in &hidden_tools {
                prop_assert!(!declared.contains(&h.as_str()), "hidden {h} declared");
                prop_assert!(!catalog.contains(h.as_str()), "hidden {h} in the catalog:\n{catalog}");
                prop_assert!(plan.deferred().all(|t| &t.name != h));
            }
            for h in &hidden_skills {
                prop_assert!(!block.contains(h.as_str()), "hidden skill {h} listed");
                prop_assert!(s.resolve_skill(&e, h).unwrap().is_none());
                let key = skills.get(h).and_then(|k| k.key.clone()).unwrap_or_default();
                prop_assert!(s.resolve_skill(&e, &key).unwrap().is_none_or(|k| !hidden_skills.contains(&k.name)));
            }
            // One catalog line per line of text: nothing injected a line.
            for line in catalog.lines().skip(1) {
                prop_assert!(line.starts_with("- "), "{line:?}");
                let clean = !line.contains(['\u{7}', '\u{202E}']);
                prop_assert!(clean, "{line:?}");
            }
            for line in block.lines() {
                prop_assert!(line.starts_with("- ") || line.ends_with("available_skills>"), "{line:?}");
            }
        }
    }

    #[test]
    fn the_same_inputs_give_byte_identical_plans(
        inputs in inputs(),
        ops in prop::collection::vec(op(), 1..10),
    ) {
        let Some((policy, registry, skills)) = build(&inputs) else {
            return Err(TestCaseError::reject("not a valid policy"));
        };
        let run = || {
            let e = Engine::new(policy.clone(), registry.clone(), skills.clone());
            let mut s = e.session(Context::mode("m2")).unwrap();
            let mut out = Vec::new();
            for op in &ops {
                let (result, _) = apply(&mut s, &e, op);
                let plan = s.plan(&e).unwrap();
                out.push(result);
                out.push(serde_json::to_string(&plan.report()).unwrap());
            }
            out
        };
        prop_assert_eq!(run(), run());
    }
}

//! What words of one kind do to a search, measured through real searches (a
//! fresh chat per query, every tool deferred, at most 4 activations):
//!
//! * English requests for tools described only in Chinese
//!   (`tests/data/search_queries_cjk_english.toml`, over the `cjk-tools`
//!   fixture registry): the right tool loads, and a request none of them
//!   serves loads nothing. The tools' names are English, so the set runs a
//!   second time with every name hidden (`tool_01`, ...): then only the
//!   Chinese descriptions can answer.
//! * Multi-step requests that name files and file types
//!   (`tests/data/search_queries_multistep.toml`): the right tool loads,
//!   and none of the format tools the case says to avoid.
//!
//! Both sets were written before the search was changed for them.

use serde::Deserialize;
use toolpolicy::registry::{Registry, Tool};
use toolpolicy::runtime::Engine;
use toolpolicy::runtime::search_eval::{EvalFile, Floors, evaluate};
use toolpolicy::{Context, Policy, SkillList};

fn engine(registry: Registry) -> Engine {
    let policy = Policy::parse("all.policy", "Defer(*)\n").expect("policy parses");
    Engine::new(policy, registry, SkillList::default())
}

fn read(file: &str) -> String {
    let path = format!("{}/tests/data/{file}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).expect("query set is readable")
}

/// The registry with every tool renamed `tool_NN`, and the renaming.
fn hide_names(registry: &Registry) -> (Registry, Vec<(String, String)>) {
    let mut names = Vec::new();
    let tools: Vec<Tool> = (registry.tools().iter().enumerate())
        .map(|(i, t)| {
            let mut t = t.clone();
            let hidden = format!("tool_{:02}", i + 1);
            names.push((t.name.clone(), hidden.clone()));
            t.name = hidden;
            t
        })
        .collect();
    (
        Registry::new(tools).expect("hidden names are unique"),
        names,
    )
}

#[test]
fn english_requests_reach_tools_described_in_chinese() {
    let Some(registry) = crate::fixtures::registry("cjk-tools") else {
        return;
    };
    let set: EvalFile = toml::from_str(&read("search_queries_cjk_english.toml")).expect("parses");
    let ctx = Context::default();
    let named = evaluate(
        &engine(registry.clone()),
        &ctx,
        &set.case,
        &Floors::default(),
    )
    .expect("context is valid");
    let (hidden, renaming) = hide_names(&registry);
    let mut cases = set.case.clone();
    for case in &mut cases {
        for e in &mut case.expect {
            let (_, h) = (renaming.iter())
                .find(|(n, _)| n == e)
                .unwrap_or_else(|| panic!("{e} is not a cjk-tools tool"));
            *e = h.clone();
        }
    }
    let unnamed =
        evaluate(&engine(hidden), &ctx, &cases, &Floors::default()).expect("context is valid");
    for (label, r) in [("names shown", &named), ("names hidden", &unnamed)] {
        eprintln!(
            "English for Chinese tools, {label}: right tool activated {:.3}, {:.2} activated \
             per query, recall@1 {:.3}, recall@4 {:.3} over {}; {} of {} no-answer requests \
             activated nothing",
            r.recall_activated,
            r.activated_per_query,
            r.recall_at_1,
            r.recall_at_4,
            r.answerable,
            r.abstained,
            r.no_answer
        );
        for m in &r.misses {
            eprintln!(
                "  miss: {:?} loaded {:?}: {}",
                m.query, m.activated, m.reason
            );
        }
    }
    assert!(
        named.answerable >= 12 && named.no_answer >= 5,
        "set too small"
    );
    // Measured: 0.800 (12 of 15) both ways; 0.333 and 0.067 before English
    // words reached Chinese ones.
    assert!(
        named.recall_activated >= 0.75,
        "names shown: right tool lost"
    );
    assert!(
        unnamed.recall_activated >= 0.75,
        "names hidden: right tool lost"
    );
    assert!(
        unnamed.activated_per_query <= 2.5,
        "names hidden: too many loaded"
    );
    for r in [&named, &unnamed] {
        assert_eq!(
            r.abstained, r.no_answer,
            "a no-answer request loaded a tool"
        );
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MultiStep {
    case: Vec<Step>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Step {
    registry: String,
    query: String,
    expect: Vec<String>,
    avoid: Vec<String>,
    half: String,
}

#[derive(Default)]
struct Tally {
    cases: usize,
    right: usize,
    avoided_loaded: usize,
    activated: usize,
}

#[test]
fn multi_step_requests_are_not_pulled_towards_format_tools() {
    let set: MultiStep = toml::from_str(&read("search_queries_multistep.toml")).expect("parses");
    let names =
        |r: &Registry| -> Vec<String> { r.tools().iter().map(|t| t.name.clone()).collect() };
    let project = crate::search::recall::project_registries();
    let project = (names(&project), engine(project));
    let fixtures = crate::fixtures::all().map(|r| (names(&r), engine(r)));
    let mut tallies = [Tally::default(), Tally::default()];
    for case in &set.case {
        let (names, engine) = match case.registry.as_str() {
            "project" => (&project.0, &project.1),
            "fixtures" => match &fixtures {
                Some((n, e)) => (n, e),
                None => continue,
            },
            other => panic!("unknown registry {other}"),
        };
        for name in case.expect.iter().chain(&case.avoid) {
            assert!(names.contains(name), "{name} is not in {}", case.registry);
        }
        let mut chat = engine.session(Context::default()).expect("session");
        let found = chat
            .search(engine, &case.query, &[] as &[&str])
            .expect("search");
        let t = &mut tallies[usize::from(case.half == "holdout")];
        t.cases += 1;
        t.activated += found.activated.len();
        let right = found.activated.iter().any(|n| case.expect.contains(n));
        let wrong: Vec<&String> = (found.activated.iter())
            .filter(|n| case.avoid.contains(n))
            .collect();
        t.right += usize::from(right);
        t.avoided_loaded += usize::from(!wrong.is_empty());
        if !right || !wrong.is_empty() {
            eprintln!(
                "  {} {:?}: loaded {:?}{}",
                case.half,
                case.query,
                found.activated,
                if wrong.is_empty() {
                    ""
                } else {
                    " (a format tool)"
                }
            );
        }
    }
    for (label, t) in [("dev", &tallies[0]), ("untouched", &tallies[1])] {
        eprintln!(
            "multi-step {label}: right tool activated {} of {}, a format tool to avoid \
             activated in {}, {:.2} activated per query",
            t.right,
            t.cases,
            t.avoided_loaded,
            t.activated as f64 / t.cases.max(1) as f64
        );
    }
    let [dev, untouched] = &tallies;
    assert!(dev.cases + untouched.cases >= 10, "set too small");
    // Measured: 3 of 11 and 2 of 11 (5 and 2 before file names and
    // qualifying file types were read as weak words).
    assert!(dev.avoided_loaded <= 3, "dev: format tools loaded");
    assert!(
        untouched.avoided_loaded <= 2,
        "untouched: format tools loaded"
    );
    assert!(dev.right * 10 >= dev.cases * 8, "dev: right tool lost");
    assert!(
        untouched.right * 10 >= untouched.cases * 7,
        "untouched: right tool lost"
    );
}

/// Every query of the project's sets with what its search activates, into
/// the file `TOOLPOLICY_SEARCH_DUMP` names (for comparing two versions of
/// the rules; nothing without it).
#[test]
fn dump_activations_when_asked() {
    let Some(out) = std::env::var_os("TOOLPOLICY_SEARCH_DUMP") else {
        return;
    };
    let mut lines = Vec::new();
    let project = engine(crate::search::recall::project_registries());
    let fixtures = crate::fixtures::all().map(engine);
    for file in [
        "search_queries.toml",
        "search_queries_heldout.toml",
        "search_queries_registries.toml",
        "search_queries_noanswer.toml",
        "search_queries_noanswer_fresh.toml",
    ] {
        let set: EvalFile = toml::from_str(&read(file)).expect("parses");
        let mut engines = vec![("project", &project)];
        if let Some(f) = &fixtures
            && file != "search_queries_registries.toml"
        {
            engines.push(("fixtures", f));
        }
        for (label, engine) in engines {
            if label == "project" && !file.contains("registries") && !file.contains("noanswer") {
                continue;
            }
            for case in &set.case {
                let mut chat = engine.session(Context::default()).expect("session");
                let found = chat
                    .search(engine, &case.query, &[] as &[&str])
                    .expect("search");
                lines.push(format!(
                    "{file} {label} {:?} {:?} {:?} expect {:?}",
                    case.half, case.query, found.activated, case.expect
                ));
            }
        }
    }
    std::fs::write(out, lines.join("\n")).expect("dump is written");
}

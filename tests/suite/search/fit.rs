//! What a search activates, measured through real searches (a fresh chat
//! per query, every tool deferred, at most 4 activations) on the project's
//! query sets: the right tool among the activated ones, the tools activated
//! per answerable query, and the requests no tool can serve that activate
//! nothing. `policy search-eval` computes the same figures for a cases file.
//!
//! Figures per set, before a search activated only what fits (every search
//! filled its quota): right tool activated (= recall@4) / activated per query
//!
//! | set | right tool activated | per query |
//! | --- | ---: | ---: |
//! | tuned (fixtures) | 0.990 | 4.00 |
//! | held-out dev (fixtures) | 0.959 | 3.98 |
//! | held-out untouched (fixtures) | 0.865 | 4.00 |
//! | registries dev (project) | 0.807 | 4.00 |
//! | registries untouched (project) | 0.695 | 4.00 |
//!
//! and 0 / 24, 1 / 24 (fixtures) and 1 / 24, 1 / 24 (project) of the
//! no-answer requests (development / untouched half) activated nothing.
//!
//! After (a search activates only what fits), measured with the rules fixed
//! on the development halves and the tuned set:
//!
//! | set | right tool activated | per query |
//! | --- | ---: | ---: |
//! | tuned (fixtures) | 0.980 | 1.94 |
//! | held-out dev (fixtures) | 0.948 | 2.55 |
//! | held-out untouched (fixtures) | 0.844 | 2.52 |
//! | registries dev (project) | 0.795 | 2.51 |
//! | registries untouched (project) | 0.671 | 2.63 |
//!
//! and 24 / 24, 19 / 24 (fixtures) and 23 / 24, 14 / 24 (project) of the
//! no-answer requests activate nothing: 80 of 96. A third no-answer set,
//! `search_queries_noanswer_fresh.toml`, written once the fourth round's
//! rules were fixed and never tuned on, measures how far that carries to
//! new requests: 22 / 24 (fixtures) and 19 / 24 (project) activate nothing.
//!
//! How the rules got there, round by round. The first round: 0.985 / 2.40,
//! 0.948 / 2.86, 0.854 / 2.90, 0.783 / 2.87, 0.659 / 2.85, and 15, 9, 16
//! and 7 of 24. The second, with every word some tool matched by any
//! evidence counted as known and a Chinese character as a whole word, and
//! no cut of a weaker match on the best's direct words: 0.980 / 2.10, 0.959
//! / 2.76, 0.854 / 2.75, 0.795 / 2.64, 0.671 / 2.71, and 18, 7, 17 and 8 of
//! 24. The third round trades one answerable query on each of three sets
//! (on the development halves: the right tool ranked among four that match
//! alike, and a request half of whose words the registry knows only
//! loosely) for 27 more no-answer requests that activate nothing and 0.1 to
//! 0.25 fewer tools per query. The fourth round reads `star` as
//! `favourite` (registries dev 0.783 / 2.51 before: `star the revenue
//! dashboard` loaded nothing, and now loads the favourite tool and its
//! opposite), and Chinese characters left alone side by side as words the
//! dictionary lacks, a pair each (held-out dev 0.938 / 2.53 before:
//! `明天要带伞吗，查下杭州的天气` loaded nothing, and now loads both weather
//! tools; registries untouched 2.60 tools per query before). The fifth
//! reads the first word of a two-word CC-CEDICT gloss alone as a part of
//! the thing (体重, `body weight`, is not a request's `body`): 2.56 and
//! 2.53 tools per query on the development halves before, and 22 and 22
//! of their no-answer requests; 21 and 18 of the fresh set's. The
//! untouched halves came out exactly as before it, and no right tool
//! was lost anywhere.
//!
//! The sixth round lets an English word reach the Chinese words CC-CEDICT
//! glosses with it (`recipe` -> 菜谱), and reads the pieces of a file name
//! and a file type qualifying a word (`notes.md`, `the markdown notes`) as
//! weak: no fit on them alone. Right tool activated on registries dev 0.795
//! -> 0.807 (`tell me when events on the calendar change`); tools per query
//! 1.94 -> 1.95, 2.55 -> 2.52, 2.52 -> 2.50, 2.51 -> 2.53 and 2.63 -> 2.66
//! (three untouched Feishu requests load a Chinese-described sibling more);
//! no-answer requests 24 -> 23 on the fixtures' development half (`how
//! many steps did I walk yesterday`: `walk` is 步行 of the walking route
//! tool); everything else as before.
//!
//! The floors below sit a little under these figures, so a change that
//! loses them fails.

use toolpolicy::runtime::Engine;
use toolpolicy::runtime::search_eval::{EvalFile, EvalReport, Floors, evaluate};
use toolpolicy::{Context, Policy, Registry, SkillList};

fn engine(registry: Registry) -> Engine {
    let policy = Policy::parse("all.policy", "Defer(*)\n").expect("policy parses");
    Engine::new(policy, registry, SkillList::default())
}

fn cases(file: &str) -> EvalFile {
    let path = format!("{}/tests/data/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("query set is readable");
    toml::from_str(&text).expect("query set parses as a cases file")
}

fn run(engine: &Engine, file: &str, half: Option<&str>) -> EvalReport {
    let mut set = cases(file);
    if let Some(half) = half {
        set.case.retain(|c| c.half.as_deref() == Some(half));
    }
    evaluate(engine, &Context::default(), &set.case, &Floors::default()).expect("context is valid")
}

fn line(label: &str, r: &EvalReport) -> String {
    if r.answerable > 0 {
        format!(
            "{label}: right tool activated {:.3}, {:.2} activated per query, \
             recall@1 {:.3}, recall@4 {:.3}, MRR {:.3} over {}",
            r.recall_activated,
            r.activated_per_query,
            r.recall_at_1,
            r.recall_at_4,
            r.mrr,
            r.answerable
        )
    } else {
        format!(
            "{label}: {} of {} no-answer requests activated nothing",
            r.abstained, r.no_answer
        )
    }
}

#[test]
fn activation_figures_per_set() {
    let project = engine(crate::search::recall::project_registries());
    let mut lines = Vec::new();
    let mut reports = Vec::new();
    if let Some(fixtures) = crate::fixtures::all() {
        let fixtures = engine(fixtures);
        for (label, file, half) in [
            ("tuned", "search_queries.toml", None),
            ("held-out dev", "search_queries_heldout.toml", Some("dev")),
            (
                "held-out untouched",
                "search_queries_heldout.toml",
                Some("holdout"),
            ),
            (
                "no-answer dev (fixtures)",
                "search_queries_noanswer.toml",
                Some("dev"),
            ),
            (
                "no-answer untouched (fixtures)",
                "search_queries_noanswer.toml",
                Some("holdout"),
            ),
            (
                "no-answer fresh (fixtures)",
                "search_queries_noanswer_fresh.toml",
                None,
            ),
        ] {
            let r = run(&fixtures, file, half);
            lines.push(line(label, &r));
            reports.push((label, r));
        }
    }
    for (label, file, half) in [
        (
            "registries dev",
            "search_queries_registries.toml",
            Some("dev"),
        ),
        (
            "registries untouched",
            "search_queries_registries.toml",
            Some("holdout"),
        ),
        (
            "no-answer dev (project)",
            "search_queries_noanswer.toml",
            Some("dev"),
        ),
        (
            "no-answer untouched (project)",
            "search_queries_noanswer.toml",
            Some("holdout"),
        ),
        (
            "no-answer fresh (project)",
            "search_queries_noanswer_fresh.toml",
            None,
        ),
    ] {
        let r = run(&project, file, half);
        lines.push(line(label, &r));
        reports.push((label, r));
    }
    eprintln!("{}", lines.join("\n"));
    // (set, right tool activated at least, activated per query at most) or
    // (set, no-answer requests that activate nothing at least).
    for (label, r) in &reports {
        let (recall, per_query, abstained) = match *label {
            "tuned" => (0.975, 2.0, 0),
            "held-out dev" => (0.945, 2.58, 0),
            "held-out untouched" => (0.835, 2.6, 0),
            "registries dev" => (0.79, 2.55, 0),
            "registries untouched" => (0.66, 2.7, 0),
            "no-answer dev (fixtures)" => (0.0, 0.0, 23),
            "no-answer untouched (fixtures)" => (0.0, 0.0, 18),
            "no-answer dev (project)" => (0.0, 0.0, 22),
            "no-answer untouched (project)" => (0.0, 0.0, 13),
            "no-answer fresh (fixtures)" => (0.0, 0.0, 21),
            "no-answer fresh (project)" => (0.0, 0.0, 18),
            other => panic!("no floor for {other}"),
        };
        if r.answerable > 0 {
            assert!(
                r.recall_activated >= recall,
                "{label}: right tool activated below {recall}"
            );
            assert!(
                r.activated_per_query <= per_query,
                "{label}: more than {per_query} activated per query"
            );
        } else {
            assert!(
                r.abstained >= abstained,
                "{label}: fewer than {abstained} abstained"
            );
        }
    }
}

/// Learning on: the sets nobody tuned on, judged again with the terms the
/// usage simulation teaches for three of the project's registries. The
/// activation aims hold as they do without learning, and no figure falls
/// by more than 0.02 (or one no-answer request).
#[test]
fn activation_figures_hold_with_learning_on() {
    let policy_path = crate::search::learning::learned_policy("fit");
    let learned = toolpolicy::lock::load_policy(&policy_path).unwrap_or_else(|e| panic!("{e}"));
    assert!(learned.terms.is_some());
    let registry = crate::search::recall::project_registries();
    let plain = engine(registry.clone());
    let with = Engine::new(learned, registry, SkillList::default());
    let mut lines = Vec::new();
    for (label, file, half) in [
        (
            "registries untouched",
            "search_queries_registries.toml",
            Some("holdout"),
        ),
        (
            "no-answer untouched (project)",
            "search_queries_noanswer.toml",
            Some("holdout"),
        ),
        (
            "no-answer fresh (project)",
            "search_queries_noanswer_fresh.toml",
            None,
        ),
    ] {
        let (off, on) = (run(&plain, file, half), run(&with, file, half));
        lines.push(line(&format!("{label}, learning off"), &off));
        lines.push(line(&format!("{label}, learning on"), &on));
        if off.answerable > 0 {
            assert!(
                on.recall_activated >= off.recall_activated - 0.02,
                "{label}: right tool activated {} -> {}",
                off.recall_activated,
                on.recall_activated
            );
            assert!(on.activated_per_query <= off.activated_per_query.max(2.5) + 0.05);
        } else {
            assert!(
                on.abstained + 1 >= off.abstained,
                "{label}: no-answer requests activating nothing {} -> {}",
                off.abstained,
                on.abstained
            );
        }
    }
    eprintln!("{}", lines.join("\n"));
}

#[test]
fn no_answer_set_is_split_in_two_halves() {
    let set = cases("search_queries_noanswer.toml");
    assert!(set.case.len() >= 40, "no-answer set too small");
    let chinese = set
        .case
        .iter()
        .filter(|c| {
            c.query
                .chars()
                .any(|ch| ('\u{4e00}'..='\u{9fff}').contains(&ch))
        })
        .count();
    assert!(chinese >= 15, "too few Chinese requests");
    for (i, c) in set.case.iter().enumerate() {
        assert!(c.expect.is_empty(), "{:?} expects a tool", c.query);
        let want = if i % 2 == 0 { "dev" } else { "holdout" };
        assert_eq!(c.half.as_deref(), Some(want), "request {} half", i + 1);
    }
}

#[test]
fn a_declared_tool_that_fits_better_is_named_not_loaded_again() {
    let registry = Registry::from_json(
        r#"[
        {"name": "list_directory", "description": "List the files and folders of a directory"},
        {"name": "edit_file", "description": "Edit a file in a directory by replacing lines"},
        {"name": "move_file", "description": "Move a file to another directory"},
        {"name": "read_file", "description": "Read a file"}
    ]"#,
    )
    .expect("registry loads");
    let policy = Policy::parse("p.policy", "Defer(*)\nNoDefer(list_directory)\n").expect("parses");
    let engine = Engine::new(policy, registry, SkillList::default());
    let mut chat = engine.session(Context::default()).expect("session");
    let found = chat
        .search(&engine, "list directory", &[] as &[&str])
        .expect("search");
    assert_eq!(found.already_active, ["list_directory"], "{found:?}");
    assert!(found.activated.is_empty(), "{found:?}");
    assert!(
        found.text.contains("Already available: `list_directory`"),
        "{}",
        found.text
    );
    // Nothing was loaded, so the plan declares what it did.
    let plan = chat.plan(&engine).expect("plan");
    assert!(plan.declared().all(|t| t.name != "edit_file"));
    // A request the declared tool does not serve still loads what fits.
    let found = chat
        .search(&engine, "move a file", &[] as &[&str])
        .expect("search");
    assert_eq!(found.activated, ["move_file"], "{found:?}");
    assert!(found.already_active.is_empty(), "{found:?}");
}

#[test]
fn an_empty_result_says_so_and_names_the_areas() {
    let registry = Registry::from_json(
        r#"[
        {"name": "jira_assign_issue", "description": "Assign an issue to some user", "source": "mcp:jira"},
        {"name": "jira_transition_issue", "description": "Move an issue to the next status", "source": "mcp:jira"},
        {"name": "jira_search_issues", "description": "Search issues with JQL", "source": "mcp:jira"},
        {"name": "create_payment_intent", "description": "Create a payment of a large amount", "source": "mcp:stripe"},
        {"name": "hidden_music", "description": "Play jazz on Spotify", "source": "mcp:music"},
        {"name": "Read", "description": "Read a file"}
    ]"#,
    )
    .expect("registry loads");
    let policy =
        Policy::parse("p.policy", "Defer(*)\nNoDefer(Read)\nHide(hidden_music)\n").expect("parses");
    let engine = Engine::new(policy, registry, SkillList::default());
    let mut chat = engine.session(Context::default()).expect("session");
    let found = chat
        .search(&engine, "play some jazz on Spotify", &[] as &[&str])
        .expect("search");
    assert!(found.activated.is_empty(), "{found:?}");
    let text = &found.text;
    assert!(
        text.contains("No on-demand tool matches `play some jazz on Spotify` well enough"),
        "{text}"
    );
    assert!(
        text.contains("- `mcp:jira`: 3 tools (issue, assign, transition"),
        "{text}"
    );
    assert!(
        text.contains("- `mcp:stripe`: 1 tool (payment, intent)"),
        "{text}"
    );
    assert!(
        !text.contains("music") && !text.contains("`Read`"),
        "{text}"
    );
    assert!(text.contains("names load exactly"), "{text}");
    // A search that loads something says nothing of the kind.
    let found = chat
        .search(&engine, "assign the issue to Ann", &[] as &[&str])
        .expect("search");
    assert_eq!(found.activated, ["jira_assign_issue"], "{found:?}");
    assert!(
        !found.text.contains("On-demand tools are in"),
        "{}",
        found.text
    );
}

//! The documented behaviour of the three public systems, step by step through
//! the library API (the replayed scenarios in `tests/scenarios/` cover more).

use toolpolicy::runtime::{CallOutcome, Engine, ResultStatus};
use toolpolicy::{Context, Policy, Registry, SkillList};

use crate::runtime::support::{
    NONE, declared, engine, example_registry, example_skills, policy, session,
};

fn aiden() -> Engine {
    Engine::new(
        policy("aiden"),
        example_registry("aiden"),
        example_skills("aiden"),
    )
}

#[test]
fn pi_desktop_start_sets_per_mode() {
    let e = engine("pi-desktop", "pi-desktop");
    let agent = session(&e, "agent");
    assert_eq!(
        declared(&agent, &e),
        ["new_context", "ToolSearch", "Read", "Bash", "Edit", "Write"]
    );
    let chat = session(&e, "chat");
    assert_eq!(
        declared(&chat, &e),
        ["new_context", "ToolSearch", "Read", "Glob", "Grep"]
    );
    let plan = chat.plan(&e).unwrap();
    let catalog = plan.catalog();
    assert!(
        catalog.starts_with("# On-demand tools\n- Bash: "),
        "{catalog}"
    );
    // Every catalog line is a deferred tool, in registry order, never a schema.
    let listed: Vec<&str> = catalog
        .lines()
        .skip(1)
        .filter_map(|l| l.strip_prefix("- ")?.split(':').next())
        .collect();
    let deferred: Vec<&str> = plan.deferred().map(|t| t.name.as_str()).collect();
    assert_eq!(listed, deferred);
    assert!(!catalog.contains("\"type\""));
}

#[test]
fn search_tools_are_declared_only_while_something_is_deferred() {
    let p = Policy::parse(
        "p",
        "guard new_context\nsearch ToolSearch\nmode all {\n}\nmode lazy {\n Defer(WebFetch)\n}\n",
    )
    .unwrap();
    let e = Engine::new(p, example_registry("pi-desktop"), SkillList::default());
    let all = session(&e, "all");
    let names = declared(&all, &e);
    assert!(!names.contains(&"ToolSearch".to_string()));
    assert_eq!(names[0], "new_context");
    assert_eq!(all.plan(&e).unwrap().catalog(), "");
    let lazy = session(&e, "lazy");
    assert_eq!(declared(&lazy, &e)[..2], ["new_context", "ToolSearch"]);
    // Nothing deferred: the search tool is not callable either.
    let mut all = all;
    assert_eq!(
        all.call(&e, "ToolSearch").unwrap(),
        CallOutcome::NotFound {
            declared_next_step: false
        }
    );
}

#[test]
fn a_query_search_activates_the_best_matches_at_most_four() {
    let e = engine("pi-desktop", "pi-desktop");
    let mut s = session(&e, "agent");
    let r = s
        .search(&e, "open a local url in the preview browser", NONE)
        .unwrap();
    assert_eq!(
        r.activated.first().map(String::as_str),
        Some("BrowserPreview")
    );
    assert!(r.activated.len() <= 4);
    let r = s.search(&e, "file", NONE).unwrap();
    assert!(r.activated.len() + r.matches.len() > 0);
    assert!(r.activated.len() <= 4);
    assert!(!r.activated.contains(&"BrowserPreview".to_string()));
    assert!(r.text.contains("remain on demand"), "{}", r.text);
    // The catalog does not change as tools are activated.
    let before = session(&e, "agent").plan(&e).unwrap().catalog().to_string();
    assert_eq!(s.plan(&e).unwrap().catalog(), before);
}

#[test]
fn hidden_and_unknown_names_are_refused_alike() {
    let p = Policy::parse(
        "p",
        "search ToolSearch\nDefer(*)\nNoDefer(Read)\nHide(Bash)\n",
    )
    .unwrap();
    let e = Engine::new(p, example_registry("pi-desktop"), SkillList::default());
    let mut s = e.session(Context::default()).unwrap();
    let hidden = s.load(&e, &["Bash"]).unwrap();
    let unknown = s.load(&e, &["Bqsh"]).unwrap();
    assert_eq!(hidden.unavailable, ["Bash"]);
    assert_eq!(
        hidden.text.replace("Bash", "X"),
        unknown.text.replace("Bqsh", "X")
    );
    // A query naming a hidden tool exactly finds nothing by that name.
    let r = s.search(&e, "Bash", NONE).unwrap();
    assert!(!r.activated.contains(&"Bash".to_string()));
    assert!(!r.matches.contains(&"Bash".to_string()));
    assert_eq!(
        s.call(&e, "Bash").unwrap(),
        CallOutcome::NotFound {
            declared_next_step: false
        }
    );
    let plan = s.plan(&e).unwrap();
    assert!(!plan.catalog().contains("Bash"));
    assert!(!declared(&s, &e).contains(&"Bash".to_string()));
}

#[test]
fn aiden_sticky_first_load_order_is_a_stable_prefix() {
    let e = aiden();
    let mut s = session(&e, "chat");
    let mut previous = declared(&s, &e);
    let steps: [&dyn Fn(&mut toolpolicy::runtime::Session); 5] = [
        &|s| {
            s.load(&e, &["email_draft", "email_send"]).unwrap();
        },
        &|s| {
            s.call(&e, "weather_forecast").unwrap();
        },
        &|s| s.prompt(&e).unwrap(),
        &|s| {
            s.search(&e, "translate text into another language", NONE)
                .unwrap();
        },
        &|s| s.prompt(&e).unwrap(),
    ];
    for step in steps {
        step(&mut s);
        let now = declared(&s, &e);
        assert!(
            now.starts_with(&previous),
            "{previous:?} is not a prefix of {now:?}"
        );
        previous = now;
    }
    let activated = s.activated();
    assert_eq!(
        activated[..3],
        ["email_draft", "email_send", "weather_forecast"]
    );
    assert!(activated.contains(&"translate_text".to_string()));
}

#[test]
fn aiden_load_tools_refuses_names_the_chat_was_not_given() {
    let e = aiden();
    let ctx = Context::mode("chat").with_grants([
        "read_file",
        "skill",
        "load_tools",
        "email_*",
        "skill:*",
    ]);
    let mut s = e.session(ctx).unwrap();
    let r = s.load(&e, &["db_query", "email_send"]).unwrap();
    assert_eq!(r.activated, ["email_send"]);
    assert_eq!(r.unavailable, ["db_query"]);
    assert!(
        r.text.contains("Not available in this chat: `db_query`"),
        "{}",
        r.text
    );
    assert_eq!(
        declared(&s, &e),
        ["skill", "load_tools", "read_file", "email_send"]
    );
    // Nothing outside the grants is listed or found.
    let plan = s.plan(&e).unwrap();
    assert!(!plan.catalog().contains("db_query"));
    let r = s.search(&e, "run a read-only SQL query", NONE).unwrap();
    assert!(r.activated.iter().all(|n| n.starts_with("email_")), "{r:?}");
}

#[test]
fn aiden_not_found_then_declared_retry() {
    let e = aiden();
    let mut s = session(&e, "chat");
    let first = s.call(&e, "maps_directions").unwrap();
    assert_eq!(
        first,
        CallOutcome::NotFound {
            declared_next_step: true
        }
    );
    assert!(
        first
            .not_found_text("maps_directions")
            .unwrap()
            .contains("not found")
    );
    assert!(declared(&s, &e).contains(&"maps_directions".to_string()));
    assert_eq!(s.call(&e, "maps_directions").unwrap(), CallOutcome::Allowed);
    // The not-found result was not evidence; the successful retry is.
    assert!(s.evidence().is_empty());
    s.record_result(&e, "maps_directions", ResultStatus::Ok)
        .unwrap();
    assert_eq!(s.evidence(), ["maps_directions"]);
    // With on_miss = "error" the call only fails.
    let p = Policy::parse("p", "search load_tools\nDefer(*)\non_miss = \"error\"\n").unwrap();
    let e = Engine::new(p, example_registry("aiden"), SkillList::default());
    let mut s = e.session(Context::default()).unwrap();
    assert_eq!(
        s.call(&e, "maps_directions").unwrap(),
        CallOutcome::NotFound {
            declared_next_step: false
        }
    );
    assert_eq!(declared(&s, &e), ["load_tools"]);
}

#[test]
fn aiden_bot_computer_tools_are_declared_from_the_start() {
    let e = aiden();
    for mode in ["chat", "workspace"] {
        let ctx = Context::mode(mode).with_bot("anybot").with_flag("codemode");
        let s = e.session(ctx).unwrap();
        let names = declared(&s, &e);
        for t in [
            "computer_screenshot",
            "computer_click",
            "computer_type",
            "computer_scroll",
        ] {
            assert!(names.contains(&t.to_string()), "{mode}: {names:?}");
        }
    }
    // Without a bot they are deferred.
    let s = session(&e, "chat");
    assert!(!declared(&s, &e).contains(&"computer_click".to_string()));
}

#[test]
fn aiden_lazy_loading_in_workspace_only_with_codemode() {
    let e = aiden();
    let plain = session(&e, "workspace");
    let names = declared(&plain, &e);
    assert_eq!(names.len(), 44, "every tool but load_tools: {names:?}");
    assert!(!names.contains(&"load_tools".to_string()));
    let code = e
        .session(Context::mode("workspace").with_flag("codemode"))
        .unwrap();
    assert_eq!(declared(&code, &e).len(), 9);
}

#[test]
fn aiden_skills_listed_and_resolved_against_the_current_context() {
    let e = aiden();
    let s = e
        .session(Context::mode("chat").with_bot("researcher"))
        .unwrap();
    let plan = s.plan(&e).unwrap();
    let listed: Vec<&str> = plan.skills().map(|k| k.name.as_str()).collect();
    assert_eq!(listed, ["deep-research"]);
    assert!(
        plan.skills_block()
            .starts_with("<available_skills>\n- deep-research: ")
    );
    let resolve =
        |s: &toolpolicy::runtime::Session, r: &str| s.resolve_skill(&e, r).unwrap().map(|k| k.name);
    assert_eq!(
        resolve(&s, "skill_research").as_deref(),
        Some("deep-research")
    );
    assert_eq!(resolve(&s, "code-review"), None);
    // Never listed, never loadable: model_invocable false.
    let mut any = session(&e, "chat");
    assert_eq!(resolve(&any, "billing-admin"), None);
    assert_eq!(resolve(&any, "skill_billing"), None);
    assert!(!any.plan(&e).unwrap().skills_block().contains("billing"));
    // A key that is another skill's name would resolve to one or the other
    // depending on which the context lists: the skill list is refused.
    let clash = SkillList::from_json(r#"[{"name": "a", "key": "b"}, {"name": "b", "key": "c"}]"#);
    assert_eq!(clash.unwrap_err().path, "skills[0].key");
    let skills =
        SkillList::from_json(r#"[{"name": "a", "key": "x"}, {"name": "b", "key": "c"}]"#).unwrap();
    let e2 = Engine::new(Policy::parse("p", "").unwrap(), Registry::default(), skills);
    let s2 = e2.session(Context::default()).unwrap();
    assert_eq!(s2.resolve_skill(&e2, "b").unwrap().unwrap().name, "b");
    assert_eq!(s2.resolve_skill(&e2, "c").unwrap().unwrap().name, "b");
    // A grant revoked between two calls stops the second.
    let granted = Context::mode("chat").with_grants(["*", "skill:slides"]);
    any.set_context(&e, granted.clone()).unwrap();
    assert_eq!(resolve(&any, "slides").as_deref(), Some("slides"));
    any.set_context(&e, granted.with_grants(["*", "skill:code-review"]))
        .unwrap();
    assert_eq!(resolve(&any, "slides"), None);
}

#[test]
fn pi_lazy_tools_guards_survive_defer_everything() {
    let e = engine("pi-lazy-tools", "pi-lazy-tools");
    let s = e.session(Context::default()).unwrap();
    let names = declared(&s, &e);
    assert_eq!(names[..2], ["tool_search", "defer_execute_tool"]);
    let e = engine("pi-lazy-tools-examples", "pi-lazy-tools");
    let mut s = session(&e, "everything");
    assert_eq!(declared(&s, &e), ["tool_search", "defer_execute_tool"]);
    let r = s
        .search(&e, "", &["read", "mcp__github__get_issue"])
        .unwrap();
    assert_eq!(r.activated, ["read", "mcp__github__get_issue"]);
}

#[test]
fn chinese_queries_find_chinese_tools_in_the_fixtures() {
    let Some(registry) = crate::fixtures::registry("cjk-tools") else {
        return;
    };
    let e = Engine::new(policy("cjk-maps"), registry, SkillList::default());
    let mut s = e.session(Context::default()).unwrap();
    let r = s.search(&e, "天气", NONE).unwrap();
    assert!(r.activated.iter().any(|n| n.contains("weather")), "{r:?}");
    let r = s.search(&e, "菜谱", NONE).unwrap();
    assert!(
        r.activated.iter().any(|n| n.starts_with("mcp_howtocook")),
        "{r:?}"
    );
}

//! Decisions that must fail closed (docs/language.md): an empty runtime grant list,
//! a context without a mode, `skill:` / `source:` prefixes in another case.

use toolpolicy::runtime::{Engine, Scenario, SessionState, replay};
use toolpolicy::{Context, Exposure, ItemRef, Policy, Registry, SkillList, Table};

use crate::cli::support::{policy as run_policy, scratch};

const REGISTRY: &str = r#"[
  {"name": "ToolSearch", "description": "find tools"},
  {"name": "Read", "description": "read a file"},
  {"name": "Bash", "description": "run a command"},
  {"name": "Browser", "description": "open a page"},
  {"name": "Skill:x", "description": "a tool whose name looks like a selector"}
]"#;
const SKILLS: &str = r#"[{"name": "x", "description": "a skill"}]"#;

fn engine(policy: &str) -> Engine {
    Engine::new(
        Policy::parse("t.policy", policy).unwrap_or_else(|e| panic!("{e}")),
        Registry::from_json(REGISTRY).expect("registry"),
        SkillList::from_json(SKILLS).expect("skills"),
    )
}

fn declared_and_skills(e: &Engine, ctx: Context) -> (Vec<String>, Vec<String>) {
    let plan = e
        .session(ctx)
        .and_then(|s| s.plan(e))
        .unwrap_or_else(|err| panic!("{err}"));
    (
        plan.declared().map(|t| t.name.clone()).collect(),
        plan.skills().map(|s| s.name.clone()).collect(),
    )
}

#[test]
fn an_empty_grant_list_lets_only_guards_and_search_tools_through() {
    let e = engine("guard Read\nsearch ToolSearch\nDefer(Browser)\n");
    let open = declared_and_skills(&e, Context::default());
    assert!(open.0.contains(&"Bash".to_string()), "{open:?}");
    let none: Vec<String> = Vec::new();
    let empty = declared_and_skills(&e, Context::default().with_grants(none));
    let unmatched = declared_and_skills(&e, Context::default().with_grants(["nothing"]));
    // Nothing is deferred, so the search tool is not declared either.
    assert_eq!(empty.0, ["Read"]);
    assert!(empty.1.is_empty(), "skills listed: {:?}", empty.1);
    assert_eq!(empty.0, unmatched.0);

    // The compiled table and the reference interpreter agree.
    let p = Policy::parse("t", "guard Read\nsearch ToolSearch\n").expect("policy");
    let t = Table::compile(&p);
    let ctx = Context::default().with_grants(Vec::<String>::new());
    let r = t.resolve(&ctx).expect("no modes");
    for item in [
        ItemRef::tool("Bash"),
        ItemRef::tool("Read"),
        ItemRef::tool("ToolSearch"),
        ItemRef::skill("x"),
    ] {
        let want = toolpolicy::reference::decide(&p, &ctx, &item).expect("no modes");
        assert_eq!(t.decide(&r, &item), want, "{item:?}");
    }
    assert_eq!(
        t.decide(&r, &ItemRef::tool("Bash")).exposure,
        Exposure::Hidden
    );
    assert_eq!(
        t.decide(&r, &ItemRef::skill("x")).exposure,
        Exposure::Hidden
    );
    assert_eq!(
        t.decide(&r, &ItemRef::tool("Read")).exposure,
        Exposure::Active
    );
}

#[test]
fn an_empty_grant_list_holds_in_saved_sessions_and_replays() {
    let e = engine("guard Read\n");
    let state: SessionState =
        serde_json::from_str(r#"{"context": {"mode": null, "grants": []}, "evidence": ["Bash"]}"#)
            .expect("state");
    let resumed = e.resume(state).expect("resumes");
    let plan = resumed.plan(&e).expect("plan");
    let names: Vec<&str> = plan.declared().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["Read"]);

    let scenario = Scenario::from_json(
        r#"{"grants": [], "steps": [{"prompt": "x"}, {"grants": null}, {"grants": []}]}"#,
    )
    .expect("scenario");
    let reports = replay(&e, &scenario).expect("replays");
    assert_eq!(reports[0].declared, ["Read"]);
    assert!(reports[1].declared.contains(&"Bash".to_string()));
    assert_eq!(reports[2].declared, ["Read"]);
}

const MODES: &str = "mode agent {\n}\nmode chat {\n  Hide(Bash)\n}\n";

#[test]
fn a_context_without_a_mode_is_refused_on_every_library_path() {
    let e = engine(MODES);
    let err = e.session(Context::default()).expect_err("no mode");
    assert!(err.to_string().contains("`agent`, `chat`"), "{err}");
    let state: SessionState = serde_json::from_str(r#"{"context": {}}"#).expect("state");
    assert!(e.resume(state).is_err());
    let mut s = e.session(Context::mode("chat")).expect("chat");
    assert!(s.set_mode(&e, None).is_err());
    assert_eq!(s.context().mode.as_deref(), Some("chat"));

    // The same words as an unknown mode's, which names the declared ones.
    let p = Policy::parse("t", MODES).expect("policy");
    let missing = Table::compile(&p).resolve(&Context::default()).unwrap_err();
    assert!(missing.to_string().contains("`agent`, `chat`"), "{missing}");
    assert!(
        toolpolicy::reference::decide(&p, &Context::default(), &ItemRef::tool("Bash")).is_err()
    );
}

#[test]
fn a_replay_without_a_mode_stops() {
    let e = engine(MODES);
    let none = Scenario::from_json(r#"{"steps": [{"prompt": "x"}]}"#).expect("scenario");
    let err = replay(&e, &none).expect_err("no mode");
    assert!(err.to_string().contains("no mode"), "{err}");
    let null =
        Scenario::from_json(r#"{"mode": "chat", "steps": [{"prompt": "x"}, {"mode": null}]}"#)
            .expect("scenario");
    let err = replay(&e, &null).expect_err("mode null");
    assert_eq!(err.path, "steps[1]");
}

#[test]
fn explain_without_a_mode_never_answers_from_the_top_level() {
    let dir = scratch("explain-modes");
    let file = dir.join("m.policy");
    std::fs::write(&file, MODES).expect("write");
    let f = file.to_str().expect("utf-8 path");
    let json = run_policy(&["explain", "Bash", "--policy", f, "--format", "json"]);
    assert_eq!(json.status.code(), Some(2));
    let err = String::from_utf8_lossy(&json.stderr);
    assert!(
        err.contains("`--mode` is required") && err.contains("`chat`"),
        "{err}"
    );
    assert!(json.stdout.is_empty());

    let human = run_policy(&["explain", "Bash", "--policy", f]);
    assert_eq!(human.status.code(), Some(0));
    let out = String::from_utf8_lossy(&human.stdout);
    assert!(!out.contains("no mode"), "{out}");
    let chat = out
        .lines()
        .find(|l| l.trim_start().starts_with("chat"))
        .unwrap_or("");
    assert!(chat.contains("hidden"), "{out}");
}

#[test]
fn selector_prefixes_are_read_in_any_case() {
    let e = engine("Hide(Skill:x)\nHide(SOURCE:mcp:*)\n");
    let (declared, skills) = declared_and_skills(&e, Context::default());
    assert!(declared.contains(&"Skill:x".to_string()), "{declared:?}");
    assert!(skills.is_empty(), "{skills:?}");
    let formatted = toolpolicy::format::format("t", "Hide(Skill:x, SOURCE:mcp:*, \"Skill:y\")\n")
        .expect("formats");
    assert_eq!(formatted, "Hide(skill:x, source:mcp:*, \"Skill:y\")\n");
    // Runtime grants read them the same way.
    let (declared, skills) = declared_and_skills(&e, Context::default().with_grants(["SKILL:*"]));
    assert!(declared.contains(&"Bash".to_string()) && skills.is_empty());
}

#[test]
fn a_runtime_grant_that_can_only_be_a_slip_is_refused_naming_it() {
    let e = engine("guard Read\n");
    for (grant, says) in [
        ("skill:", "no pattern after `skill:`"),
        ("SOURCE:", "no pattern after `source:`"),
        ("source:  ", "no pattern after `source:`"),
        ("", "a runtime grant is empty"),
        (" Bash", "white space at an end"),
    ] {
        let ctx = Context::default().with_grants(["Read", grant]);
        let err = e.session(ctx.clone()).expect_err(grant);
        assert!(err.to_string().contains(says), "{grant:?}: {err}");
        // The table and the reference interpreter refuse it alike.
        let p = Policy::parse("t", "guard Read\n").expect("policy");
        assert!(Table::compile(&p).resolve(&ctx).is_err(), "{grant:?}");
        assert!(toolpolicy::reference::decide(&p, &ctx, &ItemRef::tool("Read")).is_err());
    }
    // A name that looks like a prefix, and a pattern after one, are grants.
    let ok = Context::default().with_grants(["skill:*", "source:mcp:*", "Skill:x"]);
    assert!(e.session(ok).is_ok());

    // On the command line the error names the flag's value and the fix.
    let dir = scratch("grant-slip");
    let policy = dir.join("g.policy");
    let registry = dir.join("r.json");
    std::fs::write(&policy, "guard Read\n").expect("write");
    std::fs::write(&registry, REGISTRY).expect("write");
    let out = run_policy(&[
        "plan",
        "--policy",
        policy.to_str().expect("utf-8 path"),
        "--registry",
        registry.to_str().expect("utf-8 path"),
        "--grant",
        "skill:",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`skill:` has no pattern") && err.contains("`skill:*`"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

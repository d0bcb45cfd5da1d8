//! Each lint fires where it should and stays quiet where it should.

use super::*;
use crate::registry::{Skill, Tool};

fn policy(src: &str) -> Policy {
    Policy::parse("t.policy", src).unwrap_or_else(|e| panic!("{src}\n{e}"))
}

fn registry(tools: &[(&str, Option<&str>)]) -> Registry {
    Registry::new(
        tools
            .iter()
            .map(|(name, source)| Tool {
                name: name.to_string(),
                description: format!("Does {name}. More words here."),
                parameters: serde_json::json!({"type": "object", "properties": {}}),
                source: source.map(str::to_string),
                defer_loading: false,
                ..Default::default()
            })
            .collect(),
    )
    .unwrap()
}

fn skills(names: &[&str]) -> SkillList {
    SkillList::new(
        names
            .iter()
            .map(|n| Skill {
                name: n.to_string(),
                key: None,
                description: format!("The {n} skill."),
                source: None,
                model_invocable: true,
            })
            .collect(),
    )
    .unwrap()
}

/// `(code, line)` of every finding.
fn found(src: &str, options: Options<'_>) -> Vec<(&'static str, usize)> {
    let p = policy(src);
    lint_with(&p, &options)
        .iter()
        .map(|d| (d.code.as_str(), p.source.line_col(d.span.start).0))
        .collect()
}

fn plain(src: &str) -> Vec<(&'static str, usize)> {
    found(src, Options::default())
}

fn messages(src: &str, options: Options<'_>) -> Vec<String> {
    let p = policy(src);
    lint_with(&p, &options)
        .into_iter()
        .map(|d| format!("{}: {} ({})", d.code, d.message, d.help.unwrap_or_default()))
        .collect()
}

const SEARCH: &str = "search ToolSearch\n";

// PL101 -----------------------------------------------------------------

#[test]
fn undiscoverable_fires_without_a_search_tool() {
    assert_eq!(plain("Defer(*)\nNoDefer(Read)\n"), [("PL101", 1)]);
    assert_eq!(plain("mode a {\n  Defer(web*)\n}\n"), [("PL101", 2)]);
}

#[test]
fn undiscoverable_is_quiet_with_a_search_tool_or_nothing_deferred() {
    assert_eq!(plain(&format!("{SEARCH}Defer(*)\n")), []);
    // Deferring nothing (a skill, or under the switch) locks nobody out; a
    // skill in `Defer` is its own finding.
    assert_eq!(plain("Defer(skill:x)\n"), [("PL110", 1)]);
    assert_eq!(
        plain("defer_loading = false\nDefer(*)\n"),
        [("PL102", 2)],
        "the rule is shadowed instead"
    );
}

#[test]
fn undiscoverable_with_a_registry_needs_the_search_tool_in_it() {
    let reg = registry(&[("Read", None), ("Web", None)]);
    let with = |r| Options {
        registry: Some(r),
        ..Options::default()
    };
    let got = found(&format!("{SEARCH}Defer(Web)\n"), with(&reg));
    assert_eq!(got, [("PL105", 1), ("PL101", 2)]);
    let reg = registry(&[("Read", None), ("Web", None), ("ToolSearch", None)]);
    assert_eq!(found(&format!("{SEARCH}Defer(Web)\n"), with(&reg)), []);
}

#[test]
fn a_search_tool_the_engine_supplies_is_neither_missing_nor_undiscoverable() {
    let reg = registry(&[("Read", None), ("Web", None)]);
    let with = |r, engine_search| Options {
        registry: Some(r),
        engine_search,
        ..Options::default()
    };
    // `tool_search` is the engine's own name: satisfied whatever the front end.
    let src = "search tool_search\nDefer(Web)\n";
    assert_eq!(found(src, with(&reg, false)), []);
    // Another name is the engine's only when the front end says it adds it.
    let src = "search find_tools\nDefer(Web)\n";
    assert_eq!(found(src, with(&reg, false)), [("PL105", 1), ("PL101", 2)]);
    assert_eq!(found(src, with(&reg, true)), []);
    let m = messages(src, with(&reg, false));
    assert!(m[0].contains("a search tool the engine supplies"), "{m:?}");
    // Only the first name is the engine's: a second missing one is reported.
    let src = "search tool_search\nsearch ToolSerch\nDefer(Web)\n";
    assert_eq!(found(src, with(&reg, true)), [("PL105", 2)]);
    // Without a `search` statement, the front end's `tool_search` finds them.
    assert_eq!(found("Defer(Web)\n", with(&reg, true)), []);
    assert_eq!(found("Defer(Web)\n", with(&reg, false)), [("PL101", 1)]);
    // A wildcard names no tool the engine could define.
    let src = "search *search*\nDefer(Web)\n";
    assert_eq!(found(src, with(&reg, true)), [("PL105", 1), ("PL101", 2)]);
}

// PL102 -----------------------------------------------------------------

#[test]
fn shadowed_defer_under_nodefer() {
    let src = format!("{SEARCH}NoDefer(*)\nDefer(bash)\n");
    assert_eq!(plain(&src), [("PL102", 3)]);
    let m = messages(&src, Options::default());
    assert!(
        m[0].contains("`Defer(bash)` never takes effect")
            && m[0].contains("`NoDefer(*)` at line 2"),
        "{m:?}"
    );
}

#[test]
fn shadowed_nodefer_on_a_hidden_tool() {
    assert_eq!(plain("Hide(x)\nNoDefer(x)\n"), [("PL102", 2)]);
    // Hidden by a grant filter it cannot pass.
    assert_eq!(
        plain("bot r {\n  Grant(Read)\n  NoDefer(zzz)\n}\n"),
        [("PL102", 3)]
    );
    assert_eq!(plain("bot r {\n  Grant(Read)\n  NoDefer(Re*)\n}\n"), []);
}

#[test]
fn shadowing_respects_scopes() {
    // A NoDefer in mode a says nothing about mode b.
    let src = format!("{SEARCH}mode a {{\n  NoDefer(*)\n}}\nmode b {{\n  Defer(bash)\n}}\n");
    assert_eq!(plain(&src), []);
    // A top-level Defer that every declared mode overrides is dead: a policy
    // with modes has no context without one.
    let src = format!(
        "{SEARCH}Defer(bash)\nmode a {{\n  NoDefer(*)\n}}\nmode b {{\n  NoDefer(ba*)\n}}\n"
    );
    assert_eq!(plain(&src), [("PL102", 2)]);
    // One in a mode that the same mode overrides is dead.
    let src = format!("{SEARCH}mode a {{\n  NoDefer(*)\n  Defer(bash)\n}}\n");
    assert_eq!(plain(&src), [("PL102", 4)]);
    // A bot's NoDefer does not shadow a Defer that also applies without the bot.
    let src = format!("{SEARCH}Defer(bash)\nbot * {{\n  NoDefer(*)\n}}\n");
    assert_eq!(plain(&src), []);
}

#[test]
fn shadowing_respects_conditions() {
    // Under `when`, the NoDefer may be inactive.
    let src = format!("{SEARCH}Defer(bash)\nwhen fast {{\n  NoDefer(*)\n}}\n");
    assert_eq!(plain(&src), []);
    // Both ways of a flag covered: always shadowed.
    let src = format!(
        "{SEARCH}Defer(bash)\nwhen fast {{\n  NoDefer(*)\n}}\nwhen !fast {{\n  Hide(bash)\n}}\n"
    );
    assert_eq!(plain(&src), [("PL102", 2)]);
    // The switch off under a condition leaves the Defer alive.
    let src = format!("{SEARCH}Defer(*)\nwhen plain {{\n  defer_loading = false\n}}\n");
    assert_eq!(plain(&src), []);
    let src = format!("{SEARCH}mode off {{\n  defer_loading = false\n  Defer(*)\n}}\n");
    assert_eq!(plain(&src), [("PL102", 4)]);
}

#[test]
fn shadowing_needs_one_pattern_to_cover_all() {
    let src = format!("{SEARCH}Defer(a*)\nNoDefer(ab*)\n");
    assert_eq!(plain(&src), []);
    let src = format!("{SEARCH}Defer(ab*, ac)\nNoDefer(a*)\n");
    assert_eq!(plain(&src), [("PL102", 2)]);
    // Names never cover sources without a registry: a tool of that source may
    // have any name.
    let src = format!("{SEARCH}Defer(source:mcp:github)\nNoDefer(get_me, list_issues)\n");
    assert_eq!(plain(&src), []);
}

#[test]
fn shadowing_is_exact_with_a_registry() {
    let reg = registry(&[
        ("get_me", Some("mcp:github")),
        ("list_issues", Some("mcp:github")),
        ("ToolSearch", None),
    ]);
    let opts = Options {
        registry: Some(&reg),
        ..Options::default()
    };
    let src = format!("{SEARCH}Defer(source:mcp:github)\nNoDefer(get_me, list_issues)\n");
    assert_eq!(found(&src, opts), [("PL102", 2)]);
    let m = messages(&src, opts);
    assert!(m[0].contains("every registry tool it matches"), "{m:?}");
    let src = format!("{SEARCH}Defer(source:mcp:github)\nNoDefer(get_me)\n");
    assert_eq!(found(&src, opts), []);
}

#[test]
fn hide_is_shadowed_only_by_not_invocable_skills() {
    let list = SkillList::new(vec![Skill {
        name: "secret".into(),
        key: None,
        description: String::new(),
        source: None,
        model_invocable: false,
    }])
    .unwrap();
    let opts = Options {
        skills: Some(&list),
        ..Options::default()
    };
    assert_eq!(found("Hide(skill:secret)\n", opts), [("PL102", 1)]);
    assert_eq!(plain("Hide(skill:secret)\n"), []);
}

// PL103 -----------------------------------------------------------------

#[test]
fn redundant_rules_and_selectors() {
    assert_eq!(plain("NoDefer(Read)\nNoDefer(Read)\n"), [("PL103", 2)]);
    assert_eq!(plain("NoDefer(Read, Bash, Read)\n"), [("PL103", 1)]);
    assert_eq!(
        plain("mode a {\n  Hide(x*)\n  Hide(xy)\n}\n"),
        [("PL103", 3)]
    );
    let m = messages("NoDefer(*)\nNoDefer(a, b)\n", Options::default());
    assert!(
        m[0].contains("adds nothing to `NoDefer(*)` at line 1"),
        "{m:?}"
    );
}

#[test]
fn redundant_is_quiet_across_scopes_conditions_and_kinds() {
    assert_eq!(plain("NoDefer(Read)\nmode a {\n  NoDefer(Read)\n}\n"), []);
    assert_eq!(plain("NoDefer(Read)\nwhen x {\n  NoDefer(Read)\n}\n"), []);
    assert_eq!(plain("Hide(Read)\nNoDefer(Read)\n"), [("PL102", 2)]);
    // `source:` also restricts skills, so it adds to `Grant(*)`.
    assert_eq!(plain("bot r {\n  Grant(*)\n  Grant(source:x)\n}\n"), []);
    // The earlier of two rules is never the redundant one.
    assert_eq!(plain("NoDefer(Read)\nNoDefer(*)\n"), []);
}

// PL104 -----------------------------------------------------------------

#[test]
fn rules_naming_guards_or_search_tools() {
    let src = "guard new_context\nsearch ToolSearch\nHide(new_context)\nDefer(ToolSearch)\nbot r {\n  Grant(Read, new_context)\n}\n";
    assert_eq!(plain(src), [("PL104", 3), ("PL104", 4), ("PL104", 6)]);
}

#[test]
fn naming_guards_is_quiet_for_wider_patterns_and_nodefer() {
    let src = format!("guard new_context\n{SEARCH}Defer(*)\nHide(new*)\n");
    assert_eq!(plain(&src), []);
    // `NoDefer` on a guard is not this lint: the rule is shadowed by the guard.
    let src = format!("guard new_context\n{SEARCH}NoDefer(new_context)\n");
    assert_eq!(plain(&src), [("PL102", 3)]);
    // A `source:` Hide also hides skills of that source.
    assert_eq!(plain("guard source:builtin\nHide(source:builtin)\n"), []);
}

// PL105 / PL106 ---------------------------------------------------------

#[test]
fn selectors_that_match_nothing() {
    let reg = registry(&[("Read", None), ("Bash", None), ("ToolSearch", None)]);
    let list = skills(&["code-review"]);
    let opts = Options {
        registry: Some(&reg),
        skills: Some(&list),
        ..Options::default()
    };
    let src = format!("{SEARCH}NoDefer(Raed, Bash)\nHide(skill:code-reveiw)\nDefer(bash*)\n");
    let m = messages(&src, opts);
    assert_eq!(
        found(&src, opts),
        [("PL105", 2), ("PL105", 3), ("PL105", 4)]
    );
    assert!(m[0].contains("did you mean `Read`"), "{m:?}");
    assert!(m[1].contains("did you mean `skill:code-review`"), "{m:?}");
    assert!(m[2].contains("case-sensitive"), "{m:?}");
    // Without the lists nothing is known, so nothing is said.
    assert_eq!(plain(&src), []);
}

#[test]
fn grants_that_grant_nothing() {
    let list = skills(&["code-review"]);
    let opts = Options {
        skills: Some(&list),
        ..Options::default()
    };
    let src = "bot reviewer {\n  Grant(skill:code-reveiw)\n}\n";
    assert_eq!(found(src, opts), [("PL106", 2)]);
    let m = messages(src, opts);
    assert!(
        m[0].contains("every skill is hidden for bot `reviewer`") && m[0].contains("did you mean"),
        "{m:?}"
    );
    assert_eq!(
        found("bot reviewer {\n  Grant(skill:code-review)\n}\n", opts),
        []
    );
    // A tool grant is unknown without a registry: quiet.
    assert_eq!(found("bot reviewer {\n  Grant(Read)\n}\n", opts), []);
}

// PL107 -----------------------------------------------------------------

#[test]
fn literal_glob_characters() {
    assert_eq!(
        plain(&format!("{SEARCH}Defer(\"browser_?\")\n")),
        [("PL107", 2)]
    );
    assert_eq!(plain(&format!("{SEARCH}Defer(\"browser *\")\n")), []);
}

// PL110 -----------------------------------------------------------------

#[test]
fn defer_on_skills() {
    assert_eq!(
        plain(&format!("{SEARCH}Defer(skill:x)\nNoDefer(a, skill:y*)\n")),
        [("PL110", 2), ("PL110", 3)]
    );
    // Hide and Grant do act on skills; `source:` also picks tools.
    assert_eq!(
        plain(&format!(
            "{SEARCH}Hide(skill:x)\nDefer(source:mcp:*)\nbot b {{\n  Grant(skill:y)\n}}\n"
        )),
        []
    );
}

// PL108 / PL109 ---------------------------------------------------------

fn many_tools() -> Registry {
    let names: Vec<String> = (0..40).map(|i| format!("tool_{i:02}")).collect();
    let mut tools: Vec<(&str, Option<&str>)> = names.iter().map(|n| (n.as_str(), None)).collect();
    tools.push(("ToolSearch", None));
    registry(&tools)
}

#[test]
fn catalog_overflow_per_mode() {
    let reg = many_tools();
    let opts = Options {
        registry: Some(&reg),
        ..Options::default()
    };
    let src =
        format!("{SEARCH}Defer(*)\nmode small {{\n  catalog_chars = 200\n}}\nmode big {{\n}}\n");
    assert_eq!(found(&src, opts), [("PL108", 3)]);
    let m = messages(&src, opts);
    assert!(
        m[0].contains("in mode `small`") && m[0].contains("of 40 deferred tools"),
        "{m:?}"
    );
}

#[test]
fn token_budget_counts_the_engines_own_tools_where_it_supplies_them() {
    let reg = many_tools();
    let src = "search tool_search\nDefer(tool_1*)\n";
    let p = policy(src);
    let engine = crate::runtime::Engine::new(p.clone(), reg.clone(), SkillList::default());
    let plan = engine
        .session(crate::Context::default())
        .unwrap()
        .plan(&engine)
        .unwrap();
    let call = crate::runtime::Delivery::CallThrough(crate::runtime::DEFAULT_CALL_TOOL);
    let listed = plan.first_turn(Some(call)).listed;
    assert!(listed > plan.first_turn(None).listed);
    let opts = |max| Options {
        registry: Some(&reg),
        max_tokens: Some(max),
        ..Options::default()
    };
    // The budget is the gateway's list: one token under it warns, at it not.
    assert_eq!(found(src, opts(listed)), []);
    assert_eq!(found(src, opts(listed - 1)), [("PL109", 2)]);
    let m = messages(src, opts(listed - 1));
    let shown = crate::render::thousands(listed as usize);
    assert!(m[0].contains(&format!("declares {shown} tokens")), "{m:?}");
    assert!(m[0].contains("the engine's own tools"), "{m:?}");
}

#[test]
fn token_budget_per_mode() {
    let reg = many_tools();
    let src = format!("{SEARCH}mode lazy {{\n  Defer(*)\n}}\nmode eager {{\n}}\n");
    let opts = |max| Options {
        registry: Some(&reg),
        max_tokens: Some(max),
        ..Options::default()
    };
    assert_eq!(found(&src, opts(600)), [("PL109", 5)]);
    assert_eq!(found(&src, opts(100_000)), []);
    // Without a registry there is no plan to measure.
    let p = policy(&src);
    assert!(
        lint_with(
            &p,
            &Options {
                max_tokens: Some(1),
                ..Options::default()
            }
        )
        .is_empty()
    );
}

// The bundled policies ---------------------------------------------------

#[test]
fn bundled_policies_are_clean() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("policies");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "policy") {
            let text = std::fs::read_to_string(&path).unwrap();
            let p = Policy::parse(path.display().to_string(), text).unwrap();
            let found = lint(&p, None, None);
            assert!(found.is_empty(), "{}: {found:?}", path.display());
        }
    }
}

fn annotated(tools: &[(&str, serde_json::Value)]) -> Registry {
    let entries: Vec<serde_json::Value> = tools
        .iter()
        .map(|(n, a)| serde_json::json!({"name": n, "annotations": a}))
        .collect();
    Registry::from_json(&serde_json::Value::Array(entries).to_string()).unwrap()
}

/// PL121 for a hint no tool has; PL122 once for hiding or deferring by hint
/// while nothing carries annotations; quiet for a `NoDefer` by hint in a
/// scope that also hides by name.
#[test]
fn hints_against_the_registry() {
    let reg = annotated(&[
        ("read", serde_json::json!({"readOnlyHint": true})),
        ("edit", serde_json::json!({"destructiveHint": false})),
    ]);
    let with = |registry| Options {
        registry: Some(registry),
        ..Options::default()
    };
    assert_eq!(
        found(
            "Hide(hint:destructive)\nNoDefer(hint:read_only, hint:idempotent)\n",
            with(&reg)
        ),
        [("PL121", 1)]
    );
    assert_eq!(
        found(
            "mode plan {\n  Grant(hint:read_only)\n  Hide(edit)\n  NoDefer(hint:read_only)\n}\n",
            with(&reg)
        ),
        []
    );
    let bare = registry(&[("read", None), ("edit", None)]);
    assert_eq!(
        found(
            "Hide(hint:destructive)\nDefer(hint:open_world)\nmode m {\n  Hide(hint:read_only)\n}\n",
            with(&bare)
        ),
        // Said once; that everything is hidden, so the `Defer` is shadowed,
        // is true and its own finding.
        [("PL122", 1), ("PL102", 2)]
    );
    // Without a registry nothing is known: quiet.
    assert_eq!(
        plain("search s\nHide(hint:destructive)\nDefer(hint:read_only)\n"),
        []
    );
}

/// The text with a diagnostic's first fix applied.
fn fixed(p: &Policy, d: &Diagnostic) -> String {
    let f = &d.fixes[0];
    let t = &p.source.text;
    format!("{}{}{}", &t[..f.span.start], f.text, &t[f.span.end..])
}

#[test]
fn repeated_rules_and_selectors_carry_their_removal() {
    let p = policy("Defer(a)\nDefer(a)\nNoDefer(b*, c, b)\nNoDefer(b, z)\n");
    let d = lint(&p, None, None);
    let repeated: Vec<&Diagnostic> = d.iter().filter(|d| d.code == Code::Redundant).collect();
    assert_eq!(repeated.len(), 3, "{d:?}");
    // The whole rule, with the earlier one as its related place.
    assert_eq!(
        fixed(&p, repeated[0]),
        "Defer(a)\n\nNoDefer(b*, c, b)\nNoDefer(b, z)\n"
    );
    assert_eq!(repeated[0].related[0].span, p.rules[0].span);
    // One selector, with its comma, whether last or first.
    let rest: Vec<String> = repeated[1..].iter().map(|d| fixed(&p, d)).collect();
    assert_eq!(
        rest,
        [
            "Defer(a)\nDefer(a)\nNoDefer(b*, c)\nNoDefer(b, z)\n",
            "Defer(a)\nDefer(a)\nNoDefer(b*, c, b)\nNoDefer(z)\n"
        ]
    );
}

#[test]
fn misspelled_words_carry_their_replacement() {
    let (p, d) = Policy::parse_with_diagnostics(crate::diag::SourceFile::new(
        "t.policy",
        "Defr(a)\nactivaton = \"sticky\"\nHide(hint:read_onyl)\n",
    ));
    let texts: Vec<(&str, &str)> = d
        .iter()
        .map(|d| (p.source.slice(d.fixes[0].span), d.fixes[0].text.as_str()))
        .collect();
    assert_eq!(
        texts,
        [
            ("Defr", "Defer"),
            ("activaton", "activation"),
            ("hint:read_onyl", "hint:read_only")
        ]
    );
}

#[test]
fn a_name_the_registry_lacks_carries_the_close_ones() {
    let p = policy("Defer(Rea, \"a b\", skill:cod-review)\nsearch ToolSearch\n");
    let r = registry(&[("Read", None), ("ToolSearch", None), ("a b c", None)]);
    let s = skills(&["code-review"]);
    let d = lint(&p, Some(&r), Some(&s));
    let fixes: Vec<&str> = d
        .iter()
        .filter(|d| d.code == Code::MatchesNothing)
        .flat_map(|d| d.fixes.iter().map(|f| f.text.as_str()))
        .collect();
    assert_eq!(fixes, ["Read", "\"a b c\"", "skill:code-review"], "{d:?}");
}

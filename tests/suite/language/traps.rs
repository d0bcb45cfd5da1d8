//! Quiet traps: inputs that loaded or passed silently where a user expects to
//! be told. Each test names its trap and fails on the code before the fix.

use toolpolicy::diag::Code;
use toolpolicy::runtime::{CallOutcome, Engine, Scenario};
use toolpolicy::{Context, Policy, SkillList};

use crate::cli::support::{policy, policy_with_stdin, scratch};
use crate::cli::tools::text;
use crate::runtime::support::example_registry;

#[test]
fn fmt_check_on_standard_input_checks() {
    let messy = policy_with_stdin(&["fmt", "--check", "-"], b"defer( a ,b )\n");
    assert_eq!(messy.status.code(), Some(1), "{}", text(&messy.stderr));
    let diff = text(&messy.stdout);
    assert!(
        diff.contains("-defer( a ,b )") && diff.contains("+Defer(a, b)"),
        "{diff}"
    );
    let clean = policy_with_stdin(&["fmt", "--check", "-"], b"Defer(a, b)\n");
    assert_eq!(clean.status.code(), Some(0), "{}", text(&clean.stderr));
    assert_eq!(text(&clean.stdout), "");
}

#[test]
fn fmt_json_prints_one_document() {
    for args in [
        &["fmt", "--format", "json", "-"][..],
        &["fmt", "--check", "--format", "json", "-"],
    ] {
        let out = policy_with_stdin(args, b"defer( a ,b )\n");
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}\n{}", text(&out.stdout)));
        if args.contains(&"--check") {
            assert_eq!(out.status.code(), Some(1));
            assert_eq!(doc["would_reformat"], 1);
        } else {
            assert_eq!(out.status.code(), Some(0));
            assert_eq!(doc["files"][0]["formatted"], "Defer(a, b)\n");
        }
    }
}

#[test]
fn a_byte_order_mark_is_skipped_and_positions_stay_right() {
    let p = Policy::parse("p", "\u{feff}guard a\nDefer(b)\n").expect("loads");
    assert_eq!(p.rules.len(), 2);
    let e = Policy::parse("p", "\u{feff}Defr(x)\n").unwrap_err();
    assert_eq!(e.diagnostics[0].code, Code::UnknownRule);
    assert_eq!(e.source.line_col(e.diagnostics[0].span.start), (1, 1));
    let e = Policy::from_bytes("p", b"\xef\xbb\xbfDefer(a)\n\xff\n").unwrap_err();
    assert_eq!(e.source.line_col(e.diagnostics[0].span.start), (2, 1));
    // The formatter keeps the mark where the file had one.
    let formatted = toolpolicy::format::format("p", "\u{feff}defer( a )\n").expect("formats");
    assert_eq!(formatted, "\u{feff}Defer(a)\n");
    let scenario =
        Scenario::from_json("\u{feff}{\"mode\": \"agent\", \"steps\": [{\"prompt\": \"x\"}]}");
    assert!(scenario.is_ok(), "{scenario:?}");
}

#[test]
fn the_command_line_reads_files_with_a_byte_order_mark() {
    let dir = scratch("bom");
    let bom = "\u{feff}";
    let write = |name: &str, body: &str| {
        std::fs::write(dir.join(name), format!("{bom}{body}")).expect("write");
        dir.join(name).to_str().expect("utf-8 path").to_string()
    };
    let p = write("p.policy", "search ToolSearch\nDefer(*)\nNoDefer(Read)\n");
    let r = write(
        "tools.json",
        r#"[{"name": "ToolSearch"}, {"name": "Read"}, {"name": "Grep"}]"#,
    );
    let s = write("skills.json", r#"[{"name": "review"}]"#);
    write(
        "p.test.toml",
        "[[case]]\nitem = \"Grep\"\nexpect = \"deferred\"\n",
    );
    let out = policy(&[
        "check",
        "--deny-warnings",
        "--registry",
        &r,
        "--skills",
        &s,
        &p,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(policy(&["fmt", "--check", &p]).status.code(), Some(0));
    let out = policy(&["test", dir.join("p.test.toml").to_str().expect("utf-8")]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let out = policy(&["plan", "--policy", &p, "--registry", &r, "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn a_quoted_star_is_not_a_bot_name() {
    let e = Policy::parse("p", "bot \"*\" {\n  NoDefer(x)\n}\n").unwrap_err();
    assert_eq!(e.diagnostics.len(), 1, "{e}");
    assert_eq!(e.diagnostics[0].code, Code::QuotedAnyBot);
    assert!(Policy::parse("p", "bot * {\n  NoDefer(x)\n}\n").is_ok());
}

#[cfg(unix)]
#[test]
fn a_folder_includes_files_whose_names_are_not_utf8() {
    use std::os::unix::ffi::OsStrExt as _;
    let dir = scratch("non-utf8-names");
    std::fs::write(dir.join("good.policy"), "Defer(a)\n").expect("write");
    let odd = std::ffi::OsStr::from_bytes(b"bad\xff.policy");
    std::fs::write(dir.join("x").with_file_name(odd), "Defr(a)\n").expect("write");
    let folder = dir.join("").to_str().expect("utf-8 path").to_string();
    let out = policy(&["check", &folder]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("PL004") && stdout.contains("checked 2 files"),
        "{stdout}"
    );
    let out = policy(&["fmt", "--check", &folder]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    // An expectation file so named still finds its policy, `NAME.policy`.
    std::fs::write(dir.join("x").with_file_name(odd), "Defer(a)\n").expect("write");
    let test_file = std::ffi::OsStr::from_bytes(b"bad\xff.test.toml");
    let case = "[[case]]\nitem = \"a\"\nexpect = \"deferred\"\n";
    std::fs::write(dir.join("x").with_file_name(test_file), case).expect("write");
    let out = policy(&["test", &folder]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "1 passed, 0 failed\n");
}

#[test]
fn a_search_wildcard_that_captures_a_tool_is_reported_and_explained() {
    let dir = scratch("search-capture");
    let p = dir.join("p.policy");
    std::fs::write(
        &p,
        "search *Search*\nmode agent {\n  Defer(Grep)\n}\nmode chat {\n  defer_loading = false\n}\n",
    )
    .expect("write");
    let r = dir.join("tools.json");
    std::fs::write(
        &r,
        r#"[{"name": "ToolSearch"}, {"name": "WebSearch"}, {"name": "Grep"}]"#,
    )
    .expect("write");
    let (p, r) = (p.to_str().expect("utf-8"), r.to_str().expect("utf-8"));
    let out = policy(&["check", "--format", "plain", "--registry", r, p]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(
            "1:8: warning[PL120]: `search *Search*` makes 2 registry tools search tools: `ToolSearch`, `WebSearch`"
        ),
        "{stdout}"
    );
    // In chat nothing is deferred: the plan leaves `WebSearch` out, and
    // explain says so instead of only "active".
    let plan = policy(&[
        "plan",
        "--policy",
        p,
        "--registry",
        r,
        "--mode",
        "chat",
        "--format",
        "json",
    ]);
    let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).expect("plan JSON");
    assert_eq!(plan["declared"], serde_json::json!(["Grep"]));
    let out = policy(&[
        "explain",
        "WebSearch",
        "--policy",
        p,
        "--registry",
        r,
        "--mode",
        "chat",
    ]);
    assert!(
        text(&out.stdout).contains("  not declared: nothing in the registry is deferred"),
        "{}",
        text(&out.stdout)
    );
    let out = policy(&[
        "explain",
        "WebSearch",
        "--policy",
        p,
        "--registry",
        r,
        "--mode",
        "chat",
        "--format",
        "json",
    ]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("explain JSON");
    assert!(doc["not_declared"].is_string(), "{doc}");
    let out = policy(&[
        "explain",
        "WebSearch",
        "--policy",
        p,
        "--registry",
        r,
        "--mode",
        "agent",
        "--format",
        "json",
    ]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("explain JSON");
    assert!(doc.get("not_declared").is_none(), "{doc}");
}

/// The decision matrix agrees with the plan: in a mode where nothing is
/// deferred the search tool is decided active but not declared, and every
/// output form says so.
#[test]
fn the_matrix_marks_search_tools_the_plan_leaves_out() {
    let dir = scratch("matrix-search");
    let p = dir.join("p.policy");
    std::fs::write(
        &p,
        "search ToolSearch\nmode agent {\n  Defer(Grep)\n}\nmode chat {\n  defer_loading = false\n}\n",
    )
    .expect("write");
    let r = dir.join("tools.json");
    std::fs::write(&r, r#"[{"name": "ToolSearch"}, {"name": "Grep"}]"#).expect("write");
    let (p, r) = (p.to_str().expect("utf-8"), r.to_str().expect("utf-8"));
    let out = policy(&["explain", "--policy", p, "--registry", r]);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("  ToolSearch  S      s\n"), "{stdout}");
    let out = policy(&[
        "explain",
        "--policy",
        p,
        "--registry",
        r,
        "--format",
        "plain",
    ]);
    assert!(
        text(&out.stdout)
            .contains("ToolSearch: agent=active (search), chat=active (search, not declared)\n"),
        "{}",
        text(&out.stdout)
    );
    let out = policy(&[
        "explain",
        "--policy",
        p,
        "--registry",
        r,
        "--format",
        "json",
    ]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("matrix JSON");
    let cells = &doc["rows"][0]["cells"];
    assert!(cells[0].get("not_declared").is_none(), "{doc}");
    assert!(cells[1]["not_declared"].is_string(), "{doc}");
}

#[test]
fn direct_calls_declare_at_most_max_activations_per_prompt() {
    let p = Policy::parse(
        "p",
        "search load_tools\nDefer(*)\nmax_activations = 1\non_miss = \"activate\"\n",
    )
    .expect("loads");
    let e = Engine::new(p, example_registry("aiden"), SkillList::default());
    let mut s = e.session(Context::default()).expect("session");
    let outcome = |s: &mut toolpolicy::Session, tool: &str| s.call(&e, tool).expect("call");
    let declared = CallOutcome::NotFound {
        declared_next_step: true,
    };
    let refused = CallOutcome::NotFound {
        declared_next_step: false,
    };
    assert_eq!(outcome(&mut s, "web_fetch"), declared);
    for tool in ["maps_directions", "email_send", "notes_create"] {
        assert_eq!(outcome(&mut s, tool), refused, "{tool}");
    }
    let plan = s.plan(&e).expect("plan");
    let names: Vec<&str> = plan.declared().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["load_tools", "web_fetch"]);
    // The count starts again at the next prompt.
    s.prompt(&e).expect("prompt");
    assert_eq!(outcome(&mut s, "maps_directions"), declared);
}

#[test]
fn expect_keys_are_checked() {
    let scenario = |expect: &str| {
        Scenario::from_json(&format!(
            r#"{{"steps": [{{"prompt": "x"}}, {{"load": ["a"], "expect": {expect}}}]}}"#
        ))
    };
    let e = scenario(r#"{"activatd": null}"#).unwrap_err();
    assert_eq!(e.path, "steps[1].expect.activatd");
    assert!(e.message.contains("did you mean `activated`"), "{e}");
    let e = scenario(r#"{"outcome": "allowed"}"#).unwrap_err();
    assert_eq!(e.path, "steps[1].expect.outcome");
    assert!(scenario(r#"{"activated": [], "declared": [], "over_limit": []}"#).is_ok());
}

#[test]
fn an_expectation_file_without_cases_is_an_error() {
    let dir = scratch("empty-test");
    std::fs::write(dir.join("p.policy"), "Defer(a)\n").expect("write");
    let file = dir.join("p.test.toml");
    std::fs::write(&file, "# nothing yet\n").expect("write");
    let out = policy(&["test", file.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("has no cases"),
        "{}",
        text(&out.stderr)
    );
}

#[cfg(unix)]
#[test]
fn an_endless_input_is_refused_at_the_cap() {
    for args in [
        &["check", "/dev/zero"][..],
        &[
            "plan",
            "--policy",
            "policies/aiden.policy",
            "--registry",
            "/dev/zero",
            "--mode",
            "chat",
        ],
    ] {
        let out = policy(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("`/dev/zero`") && stderr.contains("64 MiB"),
            "{stderr}"
        );
    }
    let out = policy_with_stdin(&["fmt", "-"], &vec![b'#'; 64 * 1024 * 1024 + 1]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("64 MiB"),
        "{}",
        text(&out.stderr)
    );
}

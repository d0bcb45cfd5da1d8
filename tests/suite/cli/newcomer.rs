//! What a newcomer runs into on the way from their servers to a checked
//! policy: misspelled flags, test files naming tools that do not exist,
//! `explain`'s near misses, help texts.

use std::collections::BTreeSet;

use toolpolicy::runtime::Engine;
use toolpolicy::{Context, Policy, Registry, SkillList};

use crate::cli::support::{policy, scratch};
use crate::cli::tools::text;

const READONLY: &str = "\
search tool_search
NoDefer(read, write)
when readonly {
  Hide(write)
}
";

const TOOLS: &str = r#"{"tools": [
  {"name": "read", "description": "Read a file.", "source": "mcp:fs"},
  {"name": "write", "description": "Write a file.", "source": "mcp:fs"},
  {"name": "list_directory", "description": "List a folder.", "source": "mcp:fs"}
]}"#;

fn flags(names: &[&str]) -> Context {
    Context {
        flags: names.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>(),
        ..Context::default()
    }
}

#[test]
fn a_flag_no_when_names_is_refused_with_did_you_mean_by_the_library() {
    let policy = Policy::parse("p.policy", READONLY).unwrap();
    let registry = Registry::from_json(TOOLS).unwrap();
    let engine = Engine::new(policy.clone(), registry, SkillList::default());
    let Err(e) = engine.session(flags(&["readonyl"])) else {
        panic!("a misspelled flag was taken")
    };
    assert_eq!(
        e.message,
        "no `when` block of the policy names the flag `readonyl`"
    );
    assert_eq!(e.help.as_deref(), Some("did you mean `readonly`"));
    assert!(engine.session(flags(&["readonly"])).is_ok());
    // The reference interpreter agrees.
    let item = toolpolicy::ItemRef::tool("write");
    let e = toolpolicy::reference::decide(&policy, &flags(&["readonyl"]), &item).unwrap_err();
    assert!(e.message.contains("`readonyl`"), "{e}");
    // A policy that names no flag takes any, as one without modes takes any mode.
    let plain = Policy::parse("p.policy", "NoDefer(*)\n").unwrap();
    let engine = Engine::new(plain, Registry::default(), SkillList::default());
    assert!(engine.session(flags(&["anything"])).is_ok());
}

#[test]
fn a_misspelled_flag_fails_every_command_that_takes_a_context() {
    let dir = scratch("flags");
    let p = dir.join("p.policy");
    let r = dir.join("r.json");
    std::fs::write(&p, READONLY).unwrap();
    std::fs::write(&r, TOOLS).unwrap();
    let (p, r) = (p.to_str().unwrap(), r.to_str().unwrap());
    let files = ["--policy", p, "--registry", r];
    let runs: Vec<Vec<&str>> = vec![
        [&["plan"][..], &files, &["--flag", "readonyl"]].concat(),
        [&["search"][..], &files, &["--flag", "readonyl", "write"]].concat(),
        [&["measure"][..], &files, &["--flag", "readonyl"]].concat(),
        vec!["explain", "write", "--policy", p, "--flag", "readonyl"],
        vec![
            "explain",
            "--policy",
            p,
            "--registry",
            r,
            "--flag",
            "readonyl",
        ],
    ];
    for args in runs {
        let out = policy(&args);
        let err = text(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {err}{}",
            text(&out.stdout)
        );
        assert!(
            err.contains("the flag `readonyl`") && err.contains("did you mean `readonly`"),
            "{args:?}: {err}"
        );
    }
    // A replay scenario's flags go through the same check.
    let scenario = dir.join("s.json");
    std::fs::write(
        &scenario,
        r#"{"flags": ["readonyl"], "steps": [{"prompt": "hi"}]}"#,
    )
    .unwrap();
    let out = policy(&[
        "replay",
        scenario.to_str().unwrap(),
        "--policy",
        p,
        "--registry",
        r,
    ]);
    let err = text(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("did you mean `readonly`"), "{err}");
    // And a test case's.
    let tests = dir.join("p.test.toml");
    std::fs::write(
        &tests,
        "[[case]]\nflags = [\"readonyl\"]\nitem = \"write\"\nexpect = \"active\"\n",
    )
    .unwrap();
    let out = policy(&["test", tests.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("did you mean `readonly`"), "{stdout}");
}

#[test]
fn a_test_case_about_a_tool_the_registry_lacks_fails_with_did_you_mean() {
    let dir = scratch("test-absent");
    std::fs::write(dir.join("p.policy"), READONLY).unwrap();
    std::fs::write(dir.join("r.json"), TOOLS).unwrap();
    let tests = dir.join("p.test.toml");
    std::fs::write(
        &tests,
        "registry = \"r.json\"\n\
         [[case]]\nitem = \"list_directroy\"\nexpect = \"deferred\"\n\
         [[case]]\nitem = \"read\"\nexpect = \"active\"\n\
         [[case]]\nitem = \"renamed\"\nsource = \"mcp:fs\"\nexpect = \"active\"\n",
    )
    .unwrap();
    let out = policy(&["test", tests.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("FAIL"), "{stdout}");
    assert!(
        stdout.contains(
            "`list_directroy` is not in the registry `r.json` (did you mean `list_directory`)"
        ),
        "{stdout}"
    );
    // A case that describes its item itself tests a name the registry lacks.
    assert!(stdout.ends_with("2 passed, 1 failed\n"), "{stdout}");
}

#[test]
fn every_problem_of_a_test_file_is_reported_at_once() {
    let dir = scratch("test-problems");
    std::fs::write(dir.join("p.policy"), "mode a {\n  Defer(*)\n}\n").unwrap();
    let tests = dir.join("p.test.toml");
    std::fs::write(
        &tests,
        "[[case]]\nmode = \"a\"\nitem = \"x\"\nexpect = \"activ\"\n\
         [[case]]\nmode = \"a\"\nitem = \"x\"\nexpcet = \"active\"\n\
         [[case]]\nitem = \"x\"\nexpect = \"active\"\n\
         [[case]]\nmode = \"a\"\nitem = \"x\"\nexpect = \"active\"\ncause = \"deferred\"\n",
    )
    .unwrap();
    let out = policy(&["test", tests.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("has 4 problems"), "{err}");
    for (line, what) in [
        (1, "`expect` is `activ`"),
        (5, "unknown field `expcet`"),
        (9, "the case has no `mode`"),
        (12, "unknown cause `deferred`"),
    ] {
        assert!(
            err.contains(&format!("p.test.toml:{line}: {what}")),
            "{line}: {err}"
        );
    }
}

#[test]
fn explain_points_at_the_rule_one_letter_off_and_check_at_the_misspelled_block() {
    let dir = scratch("near-miss");
    let p = dir.join("p.policy");
    std::fs::write(
        &p,
        "search tool_search\nNoDefer(read, list_directroy)\nDefer(*)\nmode work {\n}\n",
    )
    .unwrap();
    let out = policy(&[
        "explain",
        "list_directory",
        "--policy",
        p.to_str().unwrap(),
        "--mode",
        "work",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        stdout.contains("near misses")
            && stdout.contains(
                "line 2   `list_directroy` in `NoDefer(read, list_directroy)` (top level): did you mean `list_directory`?"
            ),
        "{stdout}"
    );
    assert!(
        stdout.contains("add `NoDefer(list_directory)` in `mode work` (this mode only) or at top level (every mode)"),
        "{stdout}"
    );
    std::fs::write(&p, "mdoe review {\n  Defer(*)\n}\n").unwrap();
    let out = policy(&["check", p.to_str().unwrap()]);
    let stdout = text(&out.stdout) + &text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("unknown block `mdoe`"), "{stdout}");
    assert!(stdout.contains("did you mean `mode`"), "{stdout}");
}

#[test]
fn every_flag_has_a_help_text_and_no_help_cites_the_spec() {
    let commands = [
        "check", "explain", "fmt", "test", "plan", "search", "replay", "measure", "gateway",
        "registry", "learn",
    ];
    let option =
        regex::Regex::new(r"^\s+(-\w, )?--[a-z-]+( <[A-Z_]+>)?(\.\.\.)?( +(.*))?$").unwrap();
    let section = regex::Regex::new(r"\b(SPEC|[Ss]ection \d|§)").unwrap();
    let mut helps = vec![("policy".to_string(), text(&policy(&["--help"]).stdout))];
    for c in commands {
        for flag in ["-h", "--help"] {
            let out = policy(&[c, flag]);
            assert_eq!(out.status.code(), Some(0), "{c} {flag}");
            helps.push((format!("{c} {flag}"), text(&out.stdout)));
        }
        // Short help puts each option's text on its line: none may lack one.
        let short = text(&policy(&[c, "-h"]).stdout);
        for line in short.lines() {
            if let Some(m) = option.captures(line) {
                let help = m.get(5).map_or("", |h| h.as_str());
                assert!(
                    !help.is_empty() && !help.starts_with('['),
                    "`policy {c}`: an option without a help text: {line:?}"
                );
            }
        }
    }
    for (what, help) in helps {
        assert!(
            !section.is_match(&help),
            "`policy {what}` cites the spec:\n{help}"
        );
    }
}

/// The bundled gateway policy is clean against its own servers' tools: the
/// engine's own `tool_search` is not reported missing.
#[test]
fn the_bundled_gateway_policy_checks_clean_against_its_servers_registry() {
    let out = policy(&[
        "check",
        "--registry",
        "examples/gateway/registry.json",
        "--deny-warnings",
        "policies/gateway.policy",
        "examples/gateway/modes.policy",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

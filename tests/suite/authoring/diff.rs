//! `policy diff` and `toolpolicy::diff` on the bundled policies and the
//! shared registries: what a change changes, by context, with both
//! deciding statements, and the exit codes a pull-request check relies on.

use toolpolicy::diff::{Diff, diff};
use toolpolicy::{Exposure, Policy, Registry, SkillList};

use crate::cli::support::{policy, root, scratch};
use crate::cli::tools::text;

fn bundled(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).expect("bundled file")
}

fn registry(path: &str) -> Registry {
    Registry::from_json(&bundled(path)).expect("bundled registry")
}

fn compare(old: &str, new: &str, reg: &Registry) -> Diff {
    let old = Policy::parse("old.policy", old).expect("old loads");
    let new = Policy::parse("new.policy", new).expect("new loads");
    diff(&old, &new, reg, &SkillList::default())
}

#[test]
fn every_bundled_policy_against_itself_changes_nothing() {
    for entry in std::fs::read_dir(root().join("policies")).expect("policies/") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "policy") {
            continue;
        }
        let p = path.to_str().expect("utf-8 path");
        let out = policy(&[
            "diff",
            p,
            p,
            "--registry",
            "examples/gateway/registry.json",
            "--format",
            "json",
            "--fail-on-widening",
        ]);
        assert_eq!(out.status.code(), Some(0), "{p}: {}", text(&out.stderr));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(doc["unchanged"], true, "{p}: {doc}");
        assert_eq!(doc["groups"].as_array().map(Vec::len), Some(0));
    }
}

/// The worked example of docs/diff.md: one tool declared, one hidden.
#[test]
fn the_gateway_change_widens_one_tool_and_hides_another() {
    let dir = scratch("diff-gateway");
    let new = dir.join("gateway.policy");
    let text_new = bundled("policies/gateway.policy").replace(
        "filesystem__search_files)",
        "filesystem__search_files, memory__read_graph)\nHide(filesystem__write_file)",
    );
    std::fs::write(&new, &text_new).expect("write");
    let new = new.to_str().expect("utf-8");
    let args = [
        "diff",
        "policies/gateway.policy",
        new,
        "--registry",
        "examples/gateway/registry.json",
    ];
    let out = policy(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let widens = stdout
        .find("WIDENS deferred → declared: 1 tool")
        .expect(&stdout);
    let hides = stdout.find("deferred → hidden: 1 tool").expect(&stdout);
    assert!(widens < hides, "widening first:\n{stdout}");
    assert!(
        stdout.contains("- memory__read_graph\n  in: no mode, no bot, no flags; flag `readonly`"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  old: defer (`Defer(*)`)\n    --> policies/gateway.policy:14:7"),
        "{stdout}"
    );
    assert!(
        stdout.contains("^^^^^^^^^^^^^^^^^^\n"),
        "a caret under the selector:\n{stdout}"
    );
    let out = policy(&[&args[..], &["--fail-on-widening"]].concat());
    assert_eq!(out.status.code(), Some(1));
    // Only the Hide: nothing widens.
    let narrower = dir.join("narrower.policy");
    std::fs::write(
        &narrower,
        bundled("policies/gateway.policy")
            .replace("Defer(*)", "Defer(*)\nHide(filesystem__write_file)"),
    )
    .expect("write");
    let out = policy(&[
        "diff",
        "policies/gateway.policy",
        narrower.to_str().expect("utf-8"),
        "--registry",
        "examples/gateway/registry.json",
        "--fail-on-widening",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(doc["widening"], false);
    assert_eq!(doc["groups"][0]["change"], "deferred → hidden");
    assert_eq!(doc["groups"][0]["changes"][0]["new"]["rule"]["line"], 15);
}

#[test]
fn a_policy_that_does_not_load_is_exit_2_with_its_diagnostics() {
    let dir = scratch("diff-bad");
    let bad = dir.join("bad.policy");
    std::fs::write(&bad, "Defer(\n").expect("write");
    let out = policy(&[
        "diff",
        "policies/gateway.policy",
        bad.to_str().expect("utf-8"),
        "--registry",
        "examples/gateway/registry.json",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("error[PL001]"),
        "{}",
        text(&out.stderr)
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn settings_alone_are_reported_as_such() {
    let reg = registry("examples/gateway/registry.json");
    let old = bundled("policies/gateway.policy");
    let d = compare(&old, &format!("{old}\ncatalog_chars = 900\n"), &reg);
    assert!(d.settings_only && d.groups.is_empty(), "{d:?}");
    assert_eq!(d.settings[0].key, "catalog_chars");
    assert_eq!(d.settings[0].contexts.len(), 2);
    assert!(!d.widening);
}

/// The github policy's modes and flag on the shared GitHub registry: a
/// NoDefer moved from one mode to another changes those two modes only.
#[test]
fn modes_of_the_github_policy_on_the_shared_registry() {
    let Some(reg) = crate::fixtures::registry("github-mcp") else {
        return;
    };
    let old = bundled("policies/github-toolsets.policy");
    let new = old.replace(
        "  NoDefer(search_issues, search_pull_requests, list_commits, get_commit)\n}\n\nmode coding {\n",
        "}\n\nmode coding {\n  NoDefer(search_issues, search_pull_requests, list_commits, get_commit)\n",
    );
    assert_ne!(old, new, "the edit applies");
    let d = compare(&old, &new, &reg);
    let changes: Vec<(&str, Option<&str>)> = d
        .groups
        .iter()
        .flat_map(|g| {
            g.changes.iter().flat_map(move |c| {
                c.contexts
                    .iter()
                    .map(move |x| (g.change.as_str(), x.mode.as_deref()))
            })
        })
        .collect();
    assert!(!changes.is_empty());
    for (change, mode) in &changes {
        match *mode {
            Some("triage") => assert_eq!(*change, "declared → deferred"),
            Some("coding") => assert_eq!(*change, "deferred → declared"),
            other => panic!("{other:?} should not change"),
        }
    }
    // Each changed tool is decided as the reference interpreter decides it.
    let newp = Policy::parse("n", new.as_str()).expect("loads");
    for g in &d.groups {
        for c in &g.changes {
            for ctx in &c.contexts {
                for item in &c.items {
                    let t = reg.get(item).expect("registry tool");
                    let want = toolpolicy::reference::decide(
                        &newp,
                        ctx,
                        &toolpolicy::ItemRef::from_tool(t),
                    )
                    .expect("decides");
                    assert_eq!(want.exposure, g.to);
                }
            }
        }
    }
    assert!(
        d.groups
            .iter()
            .any(|g| g.to == Exposure::Active && g.widening)
    );
}

/// docs/diff.md shows the command's real output on the gateway change.
#[test]
fn the_diff_page_shows_what_the_command_prints() {
    let dir = scratch("diff-doc");
    std::fs::create_dir_all(dir.join("old")).expect("mkdir");
    std::fs::create_dir_all(dir.join("examples/gateway")).expect("mkdir");
    let old = bundled("policies/gateway.policy");
    std::fs::write(dir.join("old/gateway.policy"), &old).expect("write");
    std::fs::write(
        dir.join("gateway.policy"),
        old.replace(
            "filesystem__search_files)",
            "filesystem__search_files, memory__read_graph)\nHide(filesystem__write_file)",
        ),
    )
    .expect("write");
    std::fs::copy(
        root().join("examples/gateway/registry.json"),
        dir.join("examples/gateway/registry.json"),
    )
    .expect("copy");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_policy"))
        .args([
            "diff",
            "old/gateway.policy",
            "gateway.policy",
            "--registry",
            "examples/gateway/registry.json",
        ])
        .current_dir(dir.join(""))
        .env("NO_COLOR", "1")
        .output()
        .expect("policy runs");
    let page = bundled("docs/diff.md");
    let shown = "$ policy diff old/gateway.policy gateway.policy --registry examples/gateway/registry.json\n";
    let start = page.find(shown).expect("the page shows the command") + shown.len();
    let end = start + page[start..].find("```").expect("the block ends");
    assert_eq!(&page[start..end], text(&out.stdout));
}

/// A logged review session replayed against a change that hides the tool
/// it called and defers one it was given.
#[test]
fn audit_logs_are_replayed_against_new() {
    let dir = scratch("diff-audit");
    let log = dir.join("log.jsonl");
    let log = log.to_str().expect("utf-8");
    let out = policy(&[
        "replay",
        "examples/gateway/review-session.json",
        "--policy",
        "examples/gateway/modes.policy",
        "--registry",
        "examples/gateway/registry.json",
        "--audit",
        log,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let new = dir.join("modes.policy");
    std::fs::write(
        &new,
        bundled("examples/gateway/modes.policy").replace(
            "  NoDefer(filesystem__read_text_file, filesystem__search_files)\n",
            "  NoDefer(filesystem__read_text_file, filesystem__list_directory)\n  Hide(memory__read_graph)\n",
        ),
    )
    .expect("write");
    let out = policy(&[
        "diff",
        "examples/gateway/modes.policy",
        new.to_str().expect("utf-8"),
        "--registry",
        "examples/gateway/registry.json",
        "--format",
        "json",
        "--audit",
        log,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let a = &doc["audit"];
    assert_eq!(a["sessions"], 1);
    // The search by name that loaded the memory graph's reader loads
    // nothing under NEW, which hides it; the load of a hidden writer was
    // refused in the log and is under NEW.
    let searches = &a["searches_differ"];
    assert_eq!(
        (searches["count"].as_u64(), searches["replayed"].as_u64()),
        (Some(1), Some(1)),
        "{a}"
    );
    assert_eq!(
        searches["examples"][0]["names"],
        serde_json::json!(["memory__read_graph"])
    );
    assert_eq!(
        searches["examples"][0]["logged"],
        serde_json::json!(["memory__read_graph"])
    );
    assert_eq!(searches["examples"][0]["new"], serde_json::json!([]));
    assert_eq!(a["refused_calls"]["count"], 1);
    assert_eq!(
        a["refused_calls"]["examples"][0]["tool"],
        "memory__read_graph"
    );
    assert_eq!(
        a["refused_calls"]["examples"][0]["cause"]["rule"]["text"],
        "Hide(memory__read_graph)"
    );
    assert_eq!(
        a["declared_now_deferred"]["examples"][0]["tool"],
        "filesystem__search_files"
    );
    assert_eq!(
        a["now_declared"]["examples"][0]["tool"],
        "filesystem__list_directory"
    );
    assert_eq!(a["declared_now_hidden"]["count"], 0);
}

/// A lock added to the bundled team policy: the tools whose definitions
/// changed since it was written are a group of their own, and the exposure
/// they lose is in the groups.
#[test]
fn tools_a_lock_stops_holding_are_their_own_group() {
    let dir = scratch("diff-lock");
    let with_lock = bundled("examples/locks/team.policy");
    std::fs::write(dir.join("new.policy"), &with_lock).expect("write");
    std::fs::copy(
        root().join("examples/locks/tools.lock"),
        dir.join("tools.lock"),
    )
    .expect("copy");
    let without: String = with_lock
        .lines()
        .filter(|l| !l.starts_with("lock =") && !l.trim_start().starts_with("unlocked ="))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(dir.join("old.policy"), without).expect("write");
    let (old, new) = (dir.join("old.policy"), dir.join("new.policy"));
    let out = policy(&[
        "diff",
        old.to_str().expect("utf-8"),
        new.to_str().expect("utf-8"),
        "--registry",
        "examples/locks/changed.json",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let unlocked: Vec<&str> = doc["locks"]["unlocked"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert!(!unlocked.is_empty(), "{doc}");
    assert_eq!(doc["locks"]["locked"].as_array().map(Vec::len), Some(0));
    // Every unlocked tool that is not a search tool loses exposure by the lock.
    let by_lock: Vec<&str> = doc["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .flat_map(|g| g["changes"].as_array().into_iter().flatten())
        .filter(|c| c["new"]["kind"] == "lock")
        .flat_map(|c| c["items"].as_array().into_iter().flatten())
        .filter_map(|v| v.as_str())
        .collect();
    assert!(!by_lock.is_empty(), "{doc}");
    assert!(
        by_lock.iter().all(|t| unlocked.contains(t)),
        "{by_lock:?} {unlocked:?}"
    );
    assert_eq!(doc["settings"][0]["key"], "unlocked");
}

/// Skills are decided too: a grant narrowed in the aiden policy's reviewer
/// bot hides one skill in that bot's contexts only.
#[test]
fn a_narrowed_skill_grant_hides_the_skill_for_its_bot() {
    let dir = scratch("diff-skills");
    let new = dir.join("aiden.policy");
    let old = bundled("policies/aiden.policy");
    let changed = old.replace(
        "Grant(skill:code-review, skill:security-review)",
        "Grant(skill:code-review)",
    );
    assert_ne!(old, changed, "the edit applies");
    std::fs::write(&new, changed).expect("write");
    let out = policy(&[
        "diff",
        "policies/aiden.policy",
        new.to_str().expect("utf-8"),
        "--registry",
        "examples/registries/aiden.json",
        "--skills",
        "examples/skills/aiden.json",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        stdout.contains("listed → hidden: 1 skill\n- skill:security-review\n"),
        "{stdout}"
    );
    let contexts = stdout
        .lines()
        .find(|l| l.starts_with("  in: "))
        .expect("contexts");
    assert_eq!(contexts.matches("bot `reviewer`").count(), 4, "{contexts}");
    assert!(
        stdout.contains("  new: grant (`Grant(skill:code-review)`)"),
        "{stdout}"
    );
    assert!(!stdout.contains("WIDENS"), "{stdout}");
}

/// Large inputs: 200,000 logged events of 2,000 sessions over 1,000 tools,
/// and a diff at its bound of contexts over 2,000 tools (their speed is
/// measured by the `diff/` benches).
#[test]
fn large_logs_and_many_contexts() {
    use toolpolicy::audit::{Event, EventContext, EventKind, Outcome};
    use toolpolicy::diff::audit::Replayer;
    let tools = |n: usize| {
        let list: Vec<serde_json::Value> = (0..n)
            .map(|i| serde_json::json!({"name": format!("t{i}"), "description": "A tool."}))
            .collect();
        Registry::from_json(&serde_json::Value::from(list).to_string()).expect("registry")
    };
    let reg = tools(1000);
    let new = Policy::parse("n.policy", "Defer(t1*)\nHide(t2*)\nmode a {\n}\n").expect("loads");
    let mut r = Replayer::new(&new, &reg);
    for i in 0..200_000usize {
        let kind = if i % 100 == 0 {
            EventKind::List {
                declared: 2,
                names: vec!["t1".into(), "t3".into()],
                tokens: 0,
                all_declared: 0,
            }
        } else {
            EventKind::Call {
                tool: format!("t{}", i % 1000),
                outcome: Outcome::Allowed,
                cause: None,
                declared_next_step: false,
                status: None,
                server: None,
                ms: None,
                is_error: None,
            }
        };
        let mut e = Event::global(kind);
        e.session = Some(format!("s{}", i / 100));
        e.context = Some(EventContext {
            mode: Some("a".into()),
            bot: None,
            flags: Vec::new(),
        });
        r.read(&e);
    }
    let out = r.finish();
    assert_eq!(out.sessions, 2000);
    assert!(out.refused_calls.count > 0 && out.declared_now_deferred.count == 2000);
    // 20 modes, 7 bots (none, five, any other) and 7 flag sets: 980
    // contexts, 512 compared.
    let mut text = String::new();
    for m in 0..20 {
        text += &format!("mode m{m} {{\n  Defer(t{m}*)\n}}\n");
    }
    for b in 0..5 {
        text += &format!("bot b{b} {{\n  Hide(t{b}*)\n}}\n");
    }
    for f in 0..5 {
        text += &format!("when f{f} {{\n  NoDefer(t{f}*)\n}}\n");
    }
    let old = Policy::parse("o.policy", text.as_str()).expect("loads");
    let new = Policy::parse("n.policy", format!("{text}Hide(t9*)\n")).expect("loads");
    let reg = tools(2000);
    let d = diff(&old, &new, &reg, &SkillList::default());
    assert_eq!((d.contexts.compared, d.contexts.left_out), (512, 980 - 512));
    assert!(d.groups.iter().all(|g| g.to == Exposure::Hidden) && !d.groups.is_empty());
}

//! `policy report` against the reference interpreter: a line it suggests
//! (`NoDefer(...)` for a deferred tool loaded in most sessions, `Defer(...)`
//! for a declared tool never called) and marks as checked against the
//! policy does change that tool's decision, in every context the sessions
//! that ask for it ran in, and no other tool's in any context; one it marks
//! as not suggested would not, or would change another tool too. A line
//! that would change nothing is not listed.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use proptest::prelude::*;
use toolpolicy::audit::writer::{AuditLog, Options};
use toolpolicy::runtime::{Engine, ResultStatus};
use toolpolicy::{Context, Exposure, ItemRef, Policy, Registry, SkillList, reference};

use crate::language::arbitrary::{GenPolicy, policy, render};

/// Tool names the generated selectors (`[ab*]{1,3}`) can match, with a
/// `source` of `a` or `b` each.
const TOOLS: [(&str, &str); 8] = [
    ("a", "a"),
    ("b", "b"),
    ("aa", "b"),
    ("ab", "a"),
    ("ba", "b"),
    ("bb", "a"),
    ("aab", "a"),
    ("bba", "b"),
];

fn registry_json() -> String {
    let tools: Vec<serde_json::Value> = TOOLS
        .iter()
        .map(|(name, source)| {
            serde_json::json!({
                "name": name,
                "description": format!("Tool {name} does things."),
                "source": source,
            })
        })
        .collect();
    serde_json::Value::Array(tools).to_string()
}

/// One generated chat: its context (indices into the choices below) and
/// which tools it loads and calls.
#[derive(Debug, Clone)]
struct GenSession {
    mode: usize,
    bot: usize,
    flags: Vec<bool>,
    loads: Vec<usize>,
    calls: Vec<usize>,
}

fn session() -> impl Strategy<Value = GenSession> {
    (
        0..4usize,
        0..3usize,
        prop::collection::vec(any::<bool>(), 2),
        prop::collection::vec(0..TOOLS.len(), 0..5),
        prop::collection::vec(0..TOOLS.len(), 0..4),
    )
        .prop_map(|(mode, bot, flags, loads, calls)| GenSession {
            mode,
            bot,
            flags,
            loads,
            calls,
        })
}

/// The session's context in `policy`: a mode it declares (or none when it
/// declares none), a bot, flags.
fn context(s: &GenSession, policy: &Policy) -> Context {
    let mode = match policy.modes.len() {
        0 => None,
        n => Some(policy.modes[s.mode % n].clone()),
    };
    Context {
        mode,
        bot: [None, Some("r1"), Some("r2")][s.bot].map(str::to_string),
        flags: s
            .flags
            .iter()
            .enumerate()
            .filter(|(_, on)| **on)
            .map(|(i, _)| format!("f{i}"))
            // A flag no `when` names is an error of the context.
            .filter(|f| policy.source.text.contains(&format!("{f} {{")))
            .collect(),
        grants: None,
    }
}

/// Runs the sessions against the policy with an audit log, and returns the
/// report's JSON and each session's context by its name in the log.
fn run(
    dir: &Path,
    text: &str,
    sessions: &[GenSession],
) -> (serde_json::Value, BTreeMap<String, Context>) {
    let policy = Policy::parse("gen.policy", text).expect("generated policy loads");
    let registry = Registry::from_json(&registry_json()).unwrap();
    let log_path = dir.join("audit.jsonl");
    let _ = std::fs::remove_file(&log_path);
    let log = AuditLog::open(&log_path, Options::default()).unwrap();
    let engine = Engine::new(policy.clone(), registry, SkillList::default());
    engine.set_audit(Some(log.hook()));
    let mut contexts = BTreeMap::new();
    for s in sessions {
        let ctx = context(s, &policy);
        let mut chat = engine.session(ctx.clone()).expect("a declared mode");
        contexts.insert(chat.audit_session().unwrap().to_string(), ctx);
        chat.plan(&engine).unwrap();
        let loads: Vec<&str> = s.loads.iter().map(|&i| TOOLS[i].0).collect();
        chat.load(&engine, &loads).unwrap();
        chat.plan(&engine).unwrap();
        for &i in &s.calls {
            let tool = TOOLS[i].0;
            if chat.call(&engine, tool).unwrap() == toolpolicy::runtime::CallOutcome::Allowed {
                chat.record_result(&engine, tool, ResultStatus::Ok).unwrap();
            }
        }
        chat.plan(&engine).unwrap();
    }
    engine.set_audit(None);
    log.flush(Duration::from_secs(10));
    assert_eq!(log.dropped(), 0);
    drop(log);
    let policy_file = dir.join("gen.policy");
    let registry_file = dir.join("registry.json");
    std::fs::write(&policy_file, text).unwrap();
    std::fs::write(&registry_file, registry_json()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_policy"))
        .arg("report")
        .arg(&log_path)
        .arg("--policy")
        .arg(&policy_file)
        .arg("--registry")
        .arg(&registry_file)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (serde_json::from_slice(&out.stdout).unwrap(), contexts)
}

/// The exposure of `tool` in `ctx` under `text` with `line` added at its
/// end, by the reference interpreter.
fn exposure_with(text: &str, line: &str, tool: &str, ctx: &Context) -> Exposure {
    let changed = Policy::parse("gen.policy", format!("{text}\n{line}\n"))
        .unwrap_or_else(|e| panic!("`{line}` does not load: {e}"));
    let registry = Registry::from_json(&registry_json()).unwrap();
    let item = registry
        .get(tool)
        .map_or_else(|| ItemRef::tool(tool), ItemRef::from_tool);
    reference::decide(&changed, ctx, &item).unwrap().exposure
}

fn scratch() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("toolpolicy-props-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

proptest! {
    // Each case runs the `policy` binary once.
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn report_suggests_only_lines_that_change_the_decision(
        p in policy(0..8),
        sessions in prop::collection::vec(session(), 1..5),
    ) {
        let p: GenPolicy = p;
        let text = render(&p);
        let dir = scratch();
        let (report, contexts) = run(&dir, &text, &sessions);
        // The sessions each suggestion is about, from the log itself.
        let log = std::fs::read_to_string(dir.join("audit.jsonl")).unwrap();
        let events: Vec<serde_json::Value> =
            log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let sessions_where = |tool: &str, want: Exposure| -> Vec<&Context> {
            let mut names: Vec<&str> = Vec::new();
            for e in &events {
                let name = e["session"].as_str().unwrap();
                let hit = match want {
                    // Loaded (activated) in the session: by a search, a
                    // load, or a refused call that `on_miss` declares.
                    Exposure::Active => (matches!(e["event"].as_str(), Some("search" | "load"))
                        && e["activated"].as_array().unwrap().iter().any(|t| t == tool))
                        || (e["event"] == "call" && e["tool"] == tool && e["declared_next_step"] == true),
                    // Declared on the session's first plan.
                    _ => e["event"] == "list"
                        && !names.contains(&name)
                        && events.iter().find(|f| f["session"] == name && f["event"] == "list")
                            .is_some_and(|first| first["names"].as_array().unwrap().iter().any(|t| t == tool)),
                };
                if hit && !names.contains(&name) {
                    names.push(name);
                }
            }
            names.iter().map(|n| &contexts[*n]).collect()
        };
        for (section, want) in [("load_in_most_sessions", Exposure::Active), ("never_called", Exposure::Deferred)] {
            for s in report[section].as_array().unwrap() {
                let (tool, line) = (s["tool"].as_str().unwrap(), s["line"].as_str().unwrap());
                let ctxs = sessions_where(tool, want);
                prop_assert!(!ctxs.is_empty(), "{section}: `{tool}` is in no session\n{text}");
                let got: Vec<Exposure> = ctxs.iter().map(|c| exposure_with(&text, line, tool, c)).collect();
                let changes = got.iter().all(|e| *e == want);
                // What else the line would change, in any context a session ran in.
                let others: Vec<&str> = TOOLS
                    .iter()
                    .map(|(t, _)| *t)
                    .filter(|t| *t != tool)
                    .filter(|t| contexts.values().any(|c| {
                        exposure_with(&text, "", t, c) != exposure_with(&text, line, t, c)
                    }))
                    .collect();
                prop_assert_eq!(
                    s["checked"].as_bool(), Some(changes && others.is_empty()),
                    "{}: `{}` for `{}` in {:?} gives {:?}, changes {:?} too\npolicy:\n{}",
                    section, line, tool, ctxs, got, others, text
                );
                // A line is suggested only where it changes the tool somewhere.
                let before: Vec<Exposure> = ctxs.iter().map(|c| exposure_with(&text, "", tool, c)).collect();
                prop_assert!(
                    before.iter().any(|e| *e != want),
                    "{}: `{}` changes nothing for `{}`\npolicy:\n{}", section, line, tool, text
                );
            }
        }
    }
}

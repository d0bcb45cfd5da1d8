//! Every scenario in `tests/scenarios/` replayed through the library's replay
//! function (the one `policy replay` uses); each step's `expect` must hold.

use toolpolicy::runtime::{Engine, Scenario, replay};
use toolpolicy::{Policy, Registry, SkillList};

use crate::runtime::support::root;

/// The files each scenario is for, by the start of its name. A scenario may
/// name only files in its own folder (docs/replay.md), so these are given the way
/// `policy replay --policy F --registry F --skills F` gives them.
const FILES: [(&str, &str, &str, Option<&str>); 3] = [
    (
        "aiden-",
        "policies/aiden.policy",
        "examples/registries/aiden.json",
        Some("examples/skills/aiden.json"),
    ),
    (
        "pi-desktop-",
        "policies/pi-desktop.policy",
        "examples/registries/pi-desktop.json",
        None,
    ),
    (
        "pi-lazy-",
        "policies/pi-lazy-tools-examples.policy",
        "examples/registries/pi-lazy-tools.json",
        None,
    ),
];

fn load(file: &std::path::Path) -> Engine {
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let (_, policy, registry, skills) = FILES
        .iter()
        .find(|(prefix, ..)| name.starts_with(prefix))
        .unwrap_or_else(|| panic!("{name}: add its files to `FILES`"));
    let read = |rel: &str| {
        let p = root().join(rel);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    };
    let policy = Policy::parse(*policy, read(policy)).unwrap_or_else(|e| panic!("{e}"));
    let registry = Registry::from_json(&read(registry)).unwrap_or_else(|e| panic!("{e}"));
    let skills = match skills {
        Some(s) => SkillList::from_json(&read(s)).unwrap_or_else(|e| panic!("{e}")),
        None => SkillList::default(),
    };
    Engine::new(policy, registry, skills)
}

#[test]
fn every_scenario_meets_its_expectations() {
    let dir = root().join("tests/scenarios");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/scenarios exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 7, "scenario files are missing");
    let mut failures = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("readable scenario");
        let scenario =
            Scenario::from_json(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let expectations: usize = scenario
            .steps
            .iter()
            .map(|s| s.expect.as_ref().map_or(0, |e| e.len()))
            .sum();
        assert!(
            expectations >= scenario.steps.len() / 2,
            "{}: too few expectations",
            file.display()
        );
        let engine = load(file);
        let reports =
            replay(&engine, &scenario).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert_eq!(reports.len(), scenario.steps.len());
        for r in reports {
            for f in r.failures {
                failures.push(format!("{}: {f}", file.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn scenario_errors_name_the_step() {
    let bad = r#"{"mode": "agent", "steps": [{"prompt": "x"}, {"prompt": "y", "load": ["a"]}]}"#;
    let e = Scenario::from_json(bad).unwrap_err();
    assert_eq!(e.path, "steps[1]");
    assert!(e.message.contains("one action"), "{e}");
    let e = Scenario::from_json(r#"{"steps": [{"serch": {}}]}"#).unwrap_err();
    assert_eq!(e.path, "steps[0]");
    assert!(e.message.contains("serch"), "{e}");
    let e = Scenario::from_json(r#"{"steps": [{"prompt": "x", "status": "error"}]}"#).unwrap_err();
    assert!(e.message.contains("`status`"), "{e}");
    let e = Scenario::from_json(r#"{"steps": [{"call": {"tool": "a", "status": "weird"}}]}"#)
        .unwrap_err();
    assert_eq!(e.path, "steps[0]");
    // `{}` is how the specification writes payload-free steps; `null` is fine too.
    let s = Scenario::from_json(r#"{"steps": [{"compact": null}, {"restart": {}}]}"#)
        .expect("null and {} are both accepted");
    assert_eq!(s.steps.len(), 2);
}

#[test]
fn a_mode_the_policy_lacks_stops_the_replay_at_its_step() {
    let engine = Engine::new(
        crate::runtime::support::policy("pi-desktop"),
        crate::runtime::support::example_registry("pi-desktop"),
        SkillList::default(),
    );
    let s =
        Scenario::from_json(r#"{"mode": "agent", "steps": [{"prompt": ""}, {"mode": "chta"}]}"#)
            .unwrap();
    let e = replay(&engine, &s).unwrap_err();
    assert_eq!(e.path, "steps[1]");
    assert!(e.to_string().contains("`chat`"), "{e}");
}

use super::*;
use crate::decision::CauseKind;

fn reg() -> Registry {
    Registry::from_json(
        r#"[{"name": "Read", "description": "Read a file."},
            {"name": "Bash", "description": "Run a command."},
            {"name": "Web", "description": "Fetch a page."}]"#,
    )
    .unwrap()
}

fn run(old: &str, new: &str) -> Diff {
    let old = Policy::parse("old.policy", old).unwrap();
    let new = Policy::parse("new.policy", new).unwrap();
    diff(&old, &new, &reg(), &SkillList::default())
}

#[test]
fn the_same_policy_changes_nothing() {
    let src = "mode a {\n  Defer(*)\n  NoDefer(Read)\n}\nmode b {\n  Hide(Bash)\n}\n";
    let d = run(src, src);
    assert!(d.unchanged, "{d:?}");
    assert!(!d.widening);
    assert_eq!(d.contexts.compared, 2);
}

#[test]
fn a_defer_moved_into_a_mode_is_grouped_with_both_rules() {
    let d = run(
        "Defer(*)\nNoDefer(Read)\nmode a {\n}\nmode b {\n}\n",
        "NoDefer(Read)\nmode a {\n  Defer(*)\n}\nmode b {\n}\n",
    );
    assert_eq!(d.groups.len(), 1, "{:?}", d.groups);
    let g = &d.groups[0];
    assert_eq!(g.change, "deferred → declared");
    assert!(g.widening && d.widening);
    assert_eq!(g.changes.len(), 1);
    let c = &g.changes[0];
    assert_eq!(c.items, ["Bash", "Web"]);
    assert_eq!(c.contexts, [Context::mode("b")]);
    assert_eq!(c.new.kind, CauseKind::Default);
    assert!(c.new.rule.is_none());
    let old = c.old.rule.as_ref().unwrap();
    assert_eq!(
        (old.text.as_str(), old.line, old.column),
        ("Defer(*)", 1, 1)
    );
    // The tokens of mode b grow, those of mode a stay.
    let t: Vec<bool> = d.tokens.iter().map(|t| t.changed).collect();
    assert_eq!(t, [false, true]);
}

#[test]
fn widening_groups_come_first_and_settings_alone_are_said() {
    let d = run("Hide(Web)\nDefer(Bash)\n", "Hide(Bash)\nDefer(Web)\n");
    let order: Vec<&str> = d.groups.iter().map(|g| g.change.as_str()).collect();
    assert_eq!(order, ["hidden → deferred", "deferred → hidden"]);
    let d = run("Defer(*)\n", "Defer(*)\nmax_activations = 2\n");
    assert!(d.groups.is_empty() && d.settings_only);
    assert_eq!(d.settings.len(), 1);
    assert_eq!(
        (
            d.settings[0].key,
            d.settings[0].old.as_str(),
            d.settings[0].new.as_str()
        ),
        ("max_activations", "4", "2")
    );
    assert_eq!(d.settings[0].new_from.as_ref().unwrap().line, 2);
}

#[test]
fn a_mode_only_one_policy_declares_is_one_sided() {
    let d = run("mode a {\n}\n", "mode a {\n}\nmode b {\n  Hide(Bash)\n}\n");
    assert_eq!(d.one_sided.len(), 1);
    let c = &d.one_sided[0];
    assert_eq!((c.accepted_by, c.declared, c.hidden), ("new", 2, 1));
    assert!(c.error.contains("`b`"), "{}", c.error);
    assert!(d.widening);
}

#[test]
fn bots_and_flags_are_contexts() {
    let d = run(
        "bot * {\n  Hide(Web)\n}\nwhen fast {\n  Defer(Bash)\n}\n",
        "bot r {\n  Hide(Web)\n}\nwhen fast {\n  Defer(Bash)\n}\n",
    );
    let g = &d.groups[0];
    assert_eq!(g.change, "hidden → declared");
    let bots: Vec<Option<&str>> = g.changes[0]
        .contexts
        .iter()
        .map(|c| c.bot.as_deref())
        .collect();
    assert_eq!(bots, [Some(ANY_OTHER_BOT), Some(ANY_OTHER_BOT)]);
    assert_eq!(d.contexts.compared, 6);
}

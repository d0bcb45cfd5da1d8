use super::*;

#[test]
fn names_that_read_as_other_selectors_are_quoted() {
    assert_eq!(selector("Read").as_deref(), Some("Read"));
    assert_eq!(selector("mcp:git/x").as_deref(), Some("mcp:git/x"));
    for name in ["hint:destructive", "HINT:x", "skill:a", "Source:b", "a b"] {
        assert_eq!(selector(name), Some(format!("\"{name}\"")));
    }
    assert_eq!(selector("a*"), None);
}

/// A line that would decide other tools too is not suggested as is,
/// and those tools are named.
#[test]
fn a_line_that_changes_other_tools_is_named_with_them() {
    let policy = Policy::parse("p.policy", "Defer(*)\n").unwrap();
    let registry = Registry::from_json(
        r#"[{"name": "hint:destructive", "description": "A."},
            {"name": "Rm", "description": "B.", "annotations": {"destructiveHint": true}},
            {"name": "Ls", "description": "C.", "annotations": {"readOnlyHint": true}}]"#,
    )
    .unwrap();
    let contexts = [EventContext::default()];
    let checker = Checker::new(&policy, Some(&registry), std::iter::empty(), &contexts);
    let seen = BTreeSet::from([0]);
    let tool = "hint:destructive";
    assert_eq!(
        checker.check("NoDefer(hint:destructive)", tool, &seen, Exposure::Active),
        Verdict::AlsoChanges(vec!["Rm".into()])
    );
    assert_eq!(
        checker.check(
            "NoDefer(\"hint:destructive\")",
            tool,
            &seen,
            Exposure::Active
        ),
        Verdict::Applies
    );
    // Already deferred: nothing to suggest.
    assert_eq!(
        checker.check("Defer(Rm)", "Rm", &seen, Exposure::Deferred),
        Verdict::Nothing
    );
}

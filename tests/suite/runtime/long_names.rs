//! A name the model may call is never cut: MCP allows tool names of 128
//! characters and a gateway adds `SERVER__` (up to 34), so two loaded
//! tools may differ only at their 160th character. The catalog, a search's
//! and a load's result texts and a not-found text show them whole;
//! descriptions may be cut.

use toolpolicy::runtime::{CallOutcome, Delivery, Engine, ResultStatus};
use toolpolicy::{Context, Policy, Registry, SkillList};

/// `srv__nnn...a`: 162 characters, the longest a gateway can serve.
fn long(end: char) -> String {
    format!("srv__{}{end}", "n".repeat(156))
}

fn engine(policy: &str) -> Engine {
    let tools: Vec<serde_json::Value> = ['a', 'b']
        .iter()
        .map(|&end| {
            serde_json::json!({
                "name": long(end),
                "description": format!("Renders the {end} report. {}", "More words. ".repeat(30)),
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}
            })
        })
        .collect();
    let registry = Registry::from_json(&serde_json::to_string(&tools).unwrap()).unwrap();
    let policy = Policy::parse("p.policy", policy).unwrap();
    Engine::new(policy, registry, SkillList::default())
}

fn assert_whole(text: &str, names: &[String]) {
    for name in names {
        assert!(
            text.contains(&format!("`{name}`")),
            "`{name}` is not whole in:\n{text}"
        );
    }
}

#[test]
fn long_names_are_shown_whole_wherever_the_model_reads_them() {
    let both = [long('a'), long('b')];
    let e = engine("Defer(*)\nmax_activations = 1\n");
    let mut s = e.session(Context::default()).unwrap();
    let plan = s.plan(&e).unwrap();
    for name in &both {
        assert!(
            plan.catalog().contains(&format!("- {name}")),
            "{}",
            plan.catalog()
        );
    }
    // One loaded, the other a match beyond the limit: both whole.
    let r = s
        .search_for(
            &e,
            "renders report",
            &[] as &[&str],
            ResultStatus::Ok,
            Delivery::CallThrough("call_tool"),
        )
        .unwrap();
    assert_eq!(r.activated.len(), 1, "{}", r.text);
    assert_eq!(r.matches.len(), 1, "{}", r.text);
    assert_whole(&r.text, &both);
    // Loading both by name: one already there, the other over the limit.
    let r = s.load(&e, &both).unwrap();
    assert_whole(&r.text, &both);
    let r = s.load(&e, &both).unwrap();
    assert_whole(&r.text, &both);
    // A deferred tool called first is declared from the next step: the
    // not-found text names it whole, to be called again.
    let mut fresh = e.session(Context::default()).unwrap();
    let outcome = fresh.call(&e, &both[1]).unwrap();
    assert_eq!(
        outcome,
        CallOutcome::NotFound {
            declared_next_step: true
        }
    );
    assert_whole(&outcome.not_found_text(&both[1]).unwrap(), &both[1..]);
}

#[test]
fn what_the_model_typed_is_repeated_within_a_bound() {
    let e = engine("Defer(*)\n");
    let mut s = e.session(Context::default()).unwrap();
    let typed = "x".repeat(10_000);
    let r = s.load(&e, &[typed.as_str()]).unwrap();
    assert!(
        r.text.contains("Not available in this chat: `xxx"),
        "{}",
        r.text
    );
    assert!(r.text.chars().count() < 400, "{}", r.text);
}

/// Behind the gateway: two server tools with MCP's longest names, differing
/// only at the end, are found, shown and called by their whole names.
#[cfg(feature = "gateway")]
#[test]
fn the_gateway_s_search_shows_and_calls_long_names_whole() {
    use crate::gateway::support::{Gateway, files, fixture, is_error, temp_dir, text};
    use serde_json::json;

    let own = |end: char| format!("{}{end}", "n".repeat(127));
    let tools = format!("echo,{},{}", own('a'), own('b'));
    let dir = temp_dir("long-names");
    let (p, s) = files(
        &dir,
        "guard fx__echo\nDefer(*)\n",
        &[("fx", fixture(&tools, &[]))],
    );
    let mut g = Gateway::connect_files(&p, &s, "2025-11-25").holding(dir);
    let full = [format!("fx__{}", own('a')), format!("fx__{}", own('b'))];
    let r = g.call("tool_search", json!({"query": "fixture", "names": full}));
    let t = text(&r);
    assert_whole(&t, &full);
    for name in &full {
        let r = g.call("call_tool", json!({"name": name, "arguments": {}}));
        assert!(!is_error(&r), "{r}");
        assert!(text(&r).starts_with(&format!("{}: ", &name[4..])), "{r}");
    }
}

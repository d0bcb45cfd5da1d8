//! docs/search.md: hidden items are not part of what is searched. A search answers
//! exactly as it would if the hidden tools were absent from the registry:
//! their words move no term statistic and decide no expansion, so no answer
//! reveals anything about them.

use proptest::prelude::*;
use serde_json::json;
use toolpolicy::runtime::{ActivationResult, Engine};
use toolpolicy::{Context, Policy, Registry, SkillList};

/// Visible tool names (`v_` …) and hidden ones (`h_` …, hidden by the policy
/// or by the runtime's grants).
const VISIBLE: [&str; 8] = [
    "v_frobnicator_run",
    "v_beta_tool",
    "v_gamma_ray",
    "v_file_reader",
    "v_web_fetch",
    "v_authenticate",
    "v_list_issues",
    "v_notify",
];
const HIDDEN: [&str; 6] = ["h_frob", "h_beta", "h_file", "h_auth", "h_web", "h_notes"];
const WORDS: [&str; 16] = [
    "frob",
    "beta",
    "gamma",
    "file",
    "read",
    "web",
    "page",
    "authentication",
    "notification",
    "issues",
    "make sure",
    "文件",
    "搜索",
    "步行",
    "run",
    "list",
];

fn tool(name: &str, words: &[usize], param: Option<usize>) -> serde_json::Value {
    let description: Vec<&str> = words.iter().map(|&w| WORDS[w]).collect();
    let mut properties = serde_json::Map::new();
    if let Some(p) = param {
        properties.insert(
            WORDS[p].replace(' ', "_"),
            json!({"type": "string", "description": WORDS[(p + 3) % WORDS.len()]}),
        );
    }
    json!({
        "name": name,
        "description": description.join(" "),
        "parameters": {"type": "object", "properties": properties},
    })
}

type Spec = (usize, Vec<usize>, Option<usize>);

fn registry(visible: &[Spec], hidden: &[Spec]) -> Registry {
    // Hidden tools are interleaved, so registry indices differ between the
    // two registries while the visible tools keep their relative order.
    let mut tools = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for i in 0..visible.len().max(hidden.len()) {
        if let Some((h, w, p)) = hidden.get(i)
            && seen.insert(HIDDEN[*h])
        {
            tools.push(tool(HIDDEN[*h], w, *p));
        }
        if let Some((v, w, p)) = visible.get(i)
            && seen.insert(VISIBLE[*v])
        {
            tools.push(tool(VISIBLE[*v], w, *p));
        }
    }
    Registry::from_json(&serde_json::Value::Array(tools).to_string()).expect("registry")
}

fn engine(policy: &str, registry: Registry) -> Engine {
    Engine::new(
        Policy::parse("p", policy).expect("policy"),
        registry,
        SkillList::default(),
    )
}

/// [`engine`], the policy with learned terms: each tool of the registry
/// gets the words `term` picks for it (by its place), the registry's
/// hidden tools too.
fn engine_with_terms(policy: &str, registry: Registry, term: &[Vec<usize>]) -> Engine {
    let mut file = toolpolicy::terms::TermsFile::new();
    for (i, t) in registry.tools().iter().enumerate() {
        let Some(words) = term.get(i % term.len().max(1)).filter(|w| !w.is_empty()) else {
            continue;
        };
        let words: Vec<&str> = words.iter().map(|&w| WORDS[w]).collect();
        file.teach(&t.name, &words.join(" "), 2);
    }
    let mut policy = Policy::parse("p", format!("terms = \"t.toml\"\n{policy}")).expect("policy");
    if let Some(setting) = &mut policy.terms {
        setting.file = Some(std::sync::Arc::new(file));
    }
    Engine::new(policy, registry, SkillList::default())
}

fn search(e: &Engine, ctx: &Context, query: &str, names: &[String]) -> ActivationResult {
    let mut s = e.session(ctx.clone()).expect("context");
    s.search(e, query, names).expect("search")
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        any::<prop::sample::Index>(),
        prop::collection::vec(0..WORDS.len(), 0..5),
        prop::option::of(0..WORDS.len()),
    )
        .prop_map(|(i, w, p)| (i.index(usize::MAX), w, p))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn a_search_answers_as_if_hidden_tools_were_absent(
        visible in prop::collection::vec(spec(), 1..8),
        hidden in prop::collection::vec(spec(), 1..6),
        query in prop::collection::vec(0..WORDS.len(), 1..4),
        names in prop::collection::vec(0..VISIBLE.len() + HIDDEN.len(), 0..3),
        by_grants in any::<bool>(),
        limit in 1..4u32,
    ) {
        let visible: Vec<Spec> =
            visible.into_iter().map(|(i, w, p)| (i % VISIBLE.len(), w, p)).collect();
        let hidden: Vec<Spec> =
            hidden.into_iter().map(|(i, w, p)| (i % HIDDEN.len(), w, p)).collect();
        let (policy, ctx) = if by_grants {
            (format!("max_activations = {limit}\nDefer(*)\n"), Context::default().with_grants(["v_*"]))
        } else {
            (format!("max_activations = {limit}\nDefer(*)\nHide(h_*)\n"), Context::default())
        };
        let with = engine(&policy, registry(&visible, &hidden));
        let without = engine(&policy, registry(&visible, &[]));
        let query: Vec<&str> = query.iter().map(|&w| WORDS[w]).collect();
        let query = query.join(" ");
        let names: Vec<String> = names
            .iter()
            .map(|&n| VISIBLE.iter().chain(&HIDDEN).nth(n).copied().unwrap_or("x").to_string())
            .collect();
        prop_assert_eq!(
            search(&with, &ctx, &query, &names),
            search(&without, &ctx, &query, &names),
            "query {:?}", query
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// Learned terms of hidden tools are never searched: with terms for
    /// every tool, a search answers as it does when the hidden tools, and
    /// their terms, are absent.
    #[test]
    fn learned_terms_of_hidden_tools_are_never_searched(
        visible in prop::collection::vec(spec(), 1..6),
        hidden in prop::collection::vec(spec(), 1..5),
        query in prop::collection::vec(0..WORDS.len(), 1..4),
        terms in prop::collection::vec(prop::collection::vec(0..WORDS.len(), 0..4), 1..6),
    ) {
        let visible: Vec<Spec> =
            visible.into_iter().map(|(i, w, p)| (i % VISIBLE.len(), w, p)).collect();
        let hidden: Vec<Spec> =
            hidden.into_iter().map(|(i, w, p)| (i % HIDDEN.len(), w, p)).collect();
        let policy = "Defer(*)\nHide(h_*)\n";
        let full = registry(&visible, &hidden);
        let shown = registry(&visible, &[]);
        // The same terms for the same visible tools in both: by name.
        let pick = |r: &Registry| -> Vec<Vec<usize>> {
            r.tools()
                .iter()
                .map(|t| {
                    let k = VISIBLE.iter().chain(&HIDDEN).position(|n| *n == t.name).unwrap_or(0);
                    terms[k % terms.len()].clone()
                })
                .collect()
        };
        let with = engine_with_terms(policy, full.clone(), &pick(&full));
        let without = engine_with_terms(policy, shown.clone(), &pick(&shown));
        let query: Vec<&str> = query.iter().map(|&w| WORDS[w]).collect();
        let query = query.join(" ");
        let ctx = Context::default();
        prop_assert_eq!(
            search(&with, &ctx, &query, &[]),
            search(&without, &ctx, &query, &[]),
            "query {:?}", query
        );
    }
}

#[test]
fn hidden_words_do_not_change_what_a_search_finds() {
    let visible = json!({"name": "frobnicator_run", "description": "runs the frobnicator"});
    let hider = json!({"name": "secret", "description": "frob the secret store"});
    let policy = "Defer(*)\nHide(secret)\n";
    let with = engine(
        policy,
        Registry::from_json(&json!([hider, visible]).to_string()).expect("r"),
    );
    let without = engine(
        policy,
        Registry::from_json(&json!([visible]).to_string()).expect("r"),
    );
    let ctx = Context::default();
    let none: [String; 0] = [];
    let found = search(&without, &ctx, "frob", &none);
    assert_eq!(found.activated, ["frobnicator_run"]);
    assert_eq!(search(&with, &ctx, "frob", &none), found);
}

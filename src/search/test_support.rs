//! What the search's unit tests share: a registry from names and
//! descriptions, the tools a search activates, and the check that an
//! explanation adds up to the ranking's score.

use serde_json::json;

use crate::registry::{Registry, Tool};

use super::SearchIndex;

/// A registry of tools with these names and descriptions and no parameters.
pub(super) fn registry(tools: &[(&str, &str)]) -> Registry {
    Registry::new(
        tools
            .iter()
            .map(|(n, d)| Tool {
                name: n.to_string(),
                description: d.to_string(),
                parameters: json!({"type": "object", "properties": {}}),
                ..Default::default()
            })
            .collect(),
    )
    .unwrap()
}

/// The names a search for `q` activates, at most four.
pub(super) fn activated(reg: &Registry, idx: &SearchIndex, q: &str) -> Vec<String> {
    idx.rank_fitting(q, |_| true, 4, |_| false)
        .into_iter()
        .filter(|r| r.activate)
        .map(|r| reg.tools()[r.tool].name.clone())
        .collect()
}

/// Every tool's explanation for `q` adds up to its score, the scores fall
/// in ranking order, and a tool is ranked exactly when it scores.
pub(super) fn assert_explanations_add_up(reg: &Registry, idx: &SearchIndex, q: &str) {
    let ranked = idx.rank(q, |_| true);
    let scores: Vec<f32> = ranked
        .iter()
        .map(|&i| idx.explain(q, i).unwrap().score)
        .collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1] - 1e-4),
        "{q}: {ranked:?} {scores:?}"
    );
    for i in 0..reg.tools().len() {
        let e = idx.explain(q, i).unwrap();
        let parts: f32 = e.concepts.iter().map(|c| c.score).sum::<f32>()
            + e.bonuses.iter().map(|b| b.points).sum::<f32>();
        assert!((parts - e.score).abs() < 1e-3, "{q}: {e:?}");
        assert_eq!(ranked.contains(&i), e.score > 0.0, "{q}: {e:?}");
    }
}

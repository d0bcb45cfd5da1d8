//! What crosses to JavaScript for a changed plan, tool list or provider
//! list: JSON of numbers that point at the parts the engine's builder keeps
//! per snapshot (see `cache.rs`), plus the few fields that are neither a
//! tool nor a long text.

use std::borrow::Cow;

use serde::Serialize;
use toolpolicy::Plan;
use toolpolicy::runtime::{Delivery, Provider};

use crate::cache::{Parts, json};
use crate::out::Tokens;
use toolpolicy::host::{def_id, provider_def_ids};

/// A plan: the fields of `PlanResult`, tools as items, names as registry
/// indices.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PlanLayout<'p> {
    declared: Vec<i64>,
    deferred: Vec<usize>,
    hidden: Vec<usize>,
    activated: Vec<usize>,
    catalog: i64,
    skills: Vec<&'p str>,
    skills_block: i64,
    search_tool: Option<&'p str>,
    tokens: Tokens,
}

/// `session.plan()`.
pub fn plan(plan: &Plan, parts: &mut Parts<'_>) -> napi::Result<String> {
    let ids: Vec<u32> = plan
        .declared_indices()
        .map(|i| def_id(i, Provider::Generic))
        .collect();
    json(&PlanLayout {
        declared: parts.defs(&ids, || plan.provider_tools(Provider::Generic)),
        deferred: plan.deferred_indices().collect(),
        hidden: plan.hidden_indices().collect(),
        activated: plan.activated_indices().collect(),
        catalog: parts.text(plan.catalog()),
        skills: plan.skills().map(|s| s.name.as_str()).collect(),
        skills_block: parts.text(plan.skills_block()),
        search_tool: plan.search_tool_name(),
        tokens: plan.tokens().into(),
    })
}

/// `session.toolList()`: the plan's tools in the generic shape with the
/// engine's own tools in their places (docs/gateway.md).
pub fn tool_list(
    plan: &Plan,
    delivery: Delivery<'_>,
) -> impl FnOnce(&mut Parts<'_>) -> napi::Result<String> {
    move |parts| {
        let tools = plan.tool_list(delivery);
        let ids: Vec<u32> = plan
            .declared_indices()
            .map(|i| def_id(i, Provider::Generic))
            .collect();
        let mut registry = parts
            .defs(&ids, || plan.provider_tools(Provider::Generic))
            .into_iter();
        let items: Vec<i64> = tools
            .iter()
            .map(|tool| match tool {
                Cow::Owned(own) => parts.own_tool(own),
                Cow::Borrowed(_) => registry.next().unwrap_or(0),
            })
            .collect();
        json(&items)
    }
}

/// `session.providerTools(provider)`: the declared tools in the provider's
/// shape and, under Anthropic's native deferral, the deferred ones marked,
/// the first unmarked when nothing is declared (as the library renders
/// them).
pub fn provider_tools(
    plan: &Plan,
    provider: Provider,
    parts: &mut Parts<'_>,
) -> napi::Result<String> {
    let ids = provider_def_ids(plan, provider);
    json(&parts.defs(&ids, || plan.provider_tools(provider)))
}

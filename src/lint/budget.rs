//! The first turn per mode, measured with the runtime's own plan: deferred
//! tools the catalog has no room for (PL108), and a first turn over a token
//! budget (PL109). Each mode is planned without a bot and without flags.

use crate::ast::{BlockHead, Item, Span};
use crate::decision::Context;
use crate::diag::{Code, Diagnostic};
use crate::policy::{Policy, RuleKind};
use crate::registry::{Registry, SkillList};
use crate::runtime::{DEFAULT_CALL_TOOL, Delivery, Engine, Plan, supplied_search_name};

/// Where each mode's block starts, for pointing at it.
fn mode_spans(policy: &Policy) -> Vec<(String, Span)> {
    let (ast, _) = crate::syntax::parse(&policy.source.text);
    ast.items
        .iter()
        .filter_map(|item| match item {
            Item::Block(b) => match &b.head {
                BlockHead::Mode(m) => Some((m.clone(), b.head_span)),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// How many of the plan's deferred tools have no line of their own in the
/// catalog: the catalog is a header, one line per tool shown, and one closing
/// line standing for all the others (docs/runtime.md).
fn left_out(plan: &Plan) -> usize {
    let deferred = plan.deferred_len();
    let catalog = plan.catalog();
    if catalog.is_empty() {
        return deferred;
    }
    let body = catalog.lines().count().saturating_sub(1);
    let shown = if body >= deferred {
        deferred
    } else {
        body.saturating_sub(1)
    };
    deferred - shown
}

pub fn check(
    policy: &Policy,
    registry: &Registry,
    skills: Option<&SkillList>,
    max_tokens: Option<u64>,
    engine_search: bool,
    out: &mut Vec<Diagnostic>,
) {
    let engine = Engine::new(
        policy.clone(),
        registry.clone(),
        skills.cloned().unwrap_or_default(),
    );
    let spans = mode_spans(policy);
    // Counted as `policy measure` and the gateway's dry run count: with the
    // engine's own tools, in the gateway's default delivery, where the
    // engine supplies them.
    let supplied = {
        let snap = engine.snapshot();
        supplied_search_name(snap.table(), engine_search).is_some()
    };
    let own = supplied.then_some(Delivery::CallThrough(DEFAULT_CALL_TOOL));
    // Without modes, point at the first `Defer` (what fills the catalog), or
    // at the start of the file.
    let fallback = policy
        .rules
        .iter()
        .find(|r| r.kind == RuleKind::Defer)
        .map_or(Span::new(0, 0), |r| r.span);
    let modes: Vec<Option<&str>> = if policy.modes.is_empty() {
        vec![None]
    } else {
        policy.modes.iter().map(|m| Some(m.as_str())).collect()
    };
    for mode in modes {
        let ctx = Context {
            mode: mode.map(str::to_string),
            ..Context::default()
        };
        let Ok(plan) = engine.session(ctx).and_then(|s| s.plan(&engine)) else {
            continue;
        };
        let span = mode
            .and_then(|m| spans.iter().find(|(n, _)| n == m))
            .map_or(fallback, |(_, s)| *s);
        let in_mode = mode.map_or(String::new(), |m| format!("in mode `{m}`, "));
        let missing = left_out(&plan);
        if missing > 0 {
            let settings = plan.settings();
            out.push(
                Diagnostic::new(
                    Code::CatalogOverflow,
                    span,
                    format!(
                        "{in_mode}{missing} of {} deferred tools do not fit in the catalog (`catalog_chars = {}`)",
                        plan.deferred_len(),
                        settings.catalog_chars
                    ),
                )
                .with_help(format!(
                    "the model learns of them only by searching; raise `catalog_chars`, lower `catalog_line_chars` (now {}), or declare fewer tools deferred",
                    settings.catalog_line_chars
                )),
            );
        }
        if let Some(max) = max_tokens {
            let t = plan.tokens();
            let first = plan.first_turn(own);
            let total = first.listed + t.skills;
            if total > max {
                let n = |v: u64| crate::render::thousands(v as usize);
                let parts = if supplied {
                    format!("the engine's own tools, with the catalog: {}", n(first.own))
                } else {
                    format!("catalog: {}", n(t.catalog))
                };
                out.push(
                    Diagnostic::new(
                        Code::TokenBudget,
                        span,
                        format!(
                            "{in_mode}the first turn declares {} tokens, over the budget of {} ({} tools: {}, {parts}, skills: {})",
                            n(total),
                            n(max),
                            plan.declared_len(),
                            n(t.declared),
                            n(t.skills)
                        ),
                    )
                    .with_help(
                        "defer or hide tools this mode does not need from the start (`Defer(...)`, `Hide(...)`), or raise `--max-tokens`",
                    ),
                );
            }
        }
    }
}

//! An author's own search test: a file of cases, each a query with the tools
//! that would be right (or none: a request the registry cannot serve), run
//! through real searches in one context, and scored.
//!
//! Each case runs in a fresh chat, so no case sees another's activations.
//! A case's ranking is what its search returned in order: the tools it
//! activated, then the other matches it named. From that come recall at 1
//! and at 4 and the mean reciprocal rank (a right tool past the named
//! matches counts 0); what the search activated gives the share of
//! answerable cases whose right tool was activated, the tools activated per
//! answerable case, and the no-answer cases that activated nothing.

use serde::{Deserialize, Serialize};

use crate::{Context, ContextError};

use super::engine::Engine;

/// A cases file: the cases, and the figures they must reach.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalFile {
    /// What the figures must reach; a figure without a floor is not checked.
    #[serde(default)]
    pub floors: Floors,
    /// The cases, in file order (`[[case]]`; `[[query]]` is read the same).
    #[serde(alias = "query")]
    pub case: Vec<EvalCase>,
}

/// One case: a query and the tools that would be right.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalCase {
    #[serde(alias = "q")]
    pub query: String,
    /// Any of these is a right answer; none means no tool can serve the
    /// query, and the search should activate nothing.
    #[serde(default)]
    pub expect: Vec<String>,
    /// A label to run part of a file by (`dev`, `holdout`).
    #[serde(default)]
    pub half: Option<String>,
}

/// The figures a cases file asks for; each is optional.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Floors {
    pub recall_at_1: Option<f64>,
    pub recall_at_4: Option<f64>,
    pub mrr: Option<f64>,
    /// The share of answerable cases whose right tool was activated.
    pub recall_activated: Option<f64>,
    /// The share of no-answer cases that activated nothing.
    pub no_answer_abstained: Option<f64>,
    /// At most this many tools activated per answerable case, on average.
    pub max_activated_per_query: Option<f64>,
}

/// What went wrong in one case.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Miss {
    pub query: String,
    pub expect: Vec<String>,
    /// 1-based rank of the first right tool among what came back, if any.
    pub rank: Option<usize>,
    pub activated: Vec<String>,
    /// The other matches the search named, not activated.
    pub matches: Vec<String>,
    /// Why, as `policy search --explain` would say it.
    pub reason: String,
}

/// The figures of one run of a cases file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalReport {
    pub answerable: usize,
    pub no_answer: usize,
    pub recall_at_1: f64,
    pub recall_at_4: f64,
    pub mrr: f64,
    pub recall_activated: f64,
    pub activated_per_query: f64,
    /// No-answer cases that activated nothing.
    pub abstained: usize,
    /// `abstained` over `no_answer` (1 when there are none).
    pub no_answer_abstained: f64,
    /// Answerable cases whose right tool was not activated, and no-answer
    /// cases that activated something.
    pub misses: Vec<Miss>,
    /// The floors not met, each as `figure value < floor`.
    pub failed_floors: Vec<String>,
}

/// Runs every case through a search in a fresh chat of `ctx`.
pub fn evaluate(
    engine: &Engine,
    ctx: &Context,
    cases: &[EvalCase],
    floors: &Floors,
) -> Result<EvalReport, ContextError> {
    let (mut at1, mut at4, mut rr, mut found, mut activated_sum) = (0, 0, 0.0, 0, 0);
    let (mut answerable, mut no_answer, mut abstained) = (0, 0, 0);
    let mut misses = Vec::new();
    for case in cases {
        let mut chat = engine.session(ctx.clone())?;
        let result = chat.search(engine, &case.query, &[] as &[&str])?;
        // A tool the search says is there already is as good as loaded.
        let ranked: Vec<&String> = result
            .already_active
            .iter()
            .chain(&result.activated)
            .chain(&result.matches)
            .collect();
        if case.expect.is_empty() {
            no_answer += 1;
            if result.activated.is_empty() {
                abstained += 1;
                continue;
            }
            let reason = reason(&mut chat, engine, &case.query, &result.activated[0], None)?;
            misses.push(miss(case, None, &result, reason));
            continue;
        }
        answerable += 1;
        activated_sum += result.activated.len();
        let rank = ranked.iter().position(|n| case.expect.contains(n));
        at1 += usize::from(rank == Some(0));
        at4 += usize::from(rank.is_some_and(|r| r < 4));
        rr += rank.map_or(0.0, |r| 1.0 / (r as f64 + 1.0));
        let hit = (result.activated.iter())
            .chain(&result.already_active)
            .any(|n| case.expect.contains(n));
        found += usize::from(hit);
        if !hit {
            let top = ranked.first().map(|s| s.as_str());
            let want = rank.map_or(case.expect[0].as_str(), |r| ranked[r].as_str());
            let reason = reason(&mut chat, engine, &case.query, want, top)?;
            misses.push(miss(case, rank, &result, reason));
        }
    }
    let share = |n: usize, of: usize| if of == 0 { 1.0 } else { n as f64 / of as f64 };
    let mut report = EvalReport {
        answerable,
        no_answer,
        recall_at_1: share(at1, answerable),
        recall_at_4: share(at4, answerable),
        mrr: if answerable == 0 {
            1.0
        } else {
            rr / answerable as f64
        },
        recall_activated: share(found, answerable),
        activated_per_query: if answerable == 0 {
            0.0
        } else {
            activated_sum as f64 / answerable as f64
        },
        abstained,
        no_answer_abstained: share(abstained, no_answer),
        misses,
        failed_floors: Vec::new(),
    };
    report.failed_floors = report.check(floors);
    Ok(report)
}

impl EvalReport {
    /// The floors this report does not meet.
    fn check(&self, floors: &Floors) -> Vec<String> {
        let mut failed = Vec::new();
        let mut at_least = |what: &str, value: f64, floor: Option<f64>| {
            if let Some(floor) = floor
                && value < floor
            {
                failed.push(format!("{what} {value:.3} < {floor}"));
            }
        };
        at_least("recall_at_1", self.recall_at_1, floors.recall_at_1);
        at_least("recall_at_4", self.recall_at_4, floors.recall_at_4);
        at_least("mrr", self.mrr, floors.mrr);
        at_least(
            "recall_activated",
            self.recall_activated,
            floors.recall_activated,
        );
        at_least(
            "no_answer_abstained",
            self.no_answer_abstained,
            floors.no_answer_abstained,
        );
        if let Some(most) = floors.max_activated_per_query
            && self.activated_per_query > most
        {
            failed.push(format!(
                "max_activated_per_query {:.3} > {most}",
                self.activated_per_query
            ));
        }
        failed
    }
}

fn miss(
    case: &EvalCase,
    rank: Option<usize>,
    result: &super::ActivationResult,
    reason: String,
) -> Miss {
    Miss {
        query: case.query.clone(),
        expect: case.expect.clone(),
        rank: rank.map(|r| r + 1),
        activated: result.activated.clone(),
        matches: result.matches.clone(),
        reason,
    }
}

/// Why `tool` did (or did not) come out as it did, against `top`, the first
/// result, when that is another tool.
fn reason(
    chat: &mut super::Session,
    engine: &Engine,
    query: &str,
    tool: &str,
    top: Option<&str>,
) -> Result<String, ContextError> {
    let names: Vec<&str> = std::iter::once(tool)
        .chain(top.filter(|t| *t != tool))
        .collect();
    let explained = chat.explain_search(engine, query, &names)?;
    let mut parts = Vec::new();
    for (name, e) in names.iter().zip(explained) {
        parts.push(match e {
            None => format!("`{name}` is not searchable in this context"),
            Some(e) => e.summary(),
        });
    }
    Ok(parts.join("; "))
}

//! `policy diff`'s two costs: a diff of two policies at its bound of
//! contexts, and logged sessions replayed against the new policy
//! (`diff/audit/1000000`: a million events of 10,000 sessions, linear in the
//! log).

use std::hint::black_box;

use criterion::Criterion;
use toolpolicy::audit::{Event, EventContext, EventKind, Outcome};
use toolpolicy::diff::audit::Replayer;
use toolpolicy::policy::Policy;
use toolpolicy::runtime::ResultStatus;
use toolpolicy::{SkillList, Tool};

use super::{data, ran};

/// Events of the audit bench.
const EVENTS: usize = 1_000_000;

pub fn diff(c: &mut Criterion, base: &[Tool]) {
    let registry = data::scaled(base, 1_000);
    let old = Policy::parse("old.policy", data::policy(registry.tools(), 100, 3))
        .expect("generated policy loads");
    let new = Policy::parse(
        "new.policy",
        format!(
            "{}\nHide(*delete*)\n",
            data::policy(registry.tools(), 100, 3)
        ),
    )
    .expect("generated policy loads");
    let mut g = c.benchmark_group("diff");
    g.sample_size(10);
    g.bench_function("contexts/1000", |b| {
        ran("diff/contexts/1000");
        b.iter(|| {
            black_box(toolpolicy::diff::diff(
                &old,
                &new,
                &registry,
                &SkillList::default(),
            ))
        })
    });

    // A million events: every hundredth a first turn's list, every tenth a
    // search, the rest calls, in 10,000 sessions of the policy's first mode.
    let mode = new.modes.first().cloned();
    let names: Vec<&str> = registry.tools().iter().map(|t| t.name.as_str()).collect();
    let events: Vec<Event> = (0..EVENTS)
        .map(|i| {
            let tool = names[i * 7 % names.len()].to_string();
            let kind = if i % 100 == 0 {
                EventKind::List {
                    declared: 2,
                    names: names[..2].iter().map(|s| s.to_string()).collect(),
                    tokens: 0,
                    all_declared: 0,
                }
            } else if i % 10 == 0 {
                EventKind::Search {
                    query: Some(
                        ["list open issues", "take a screenshot", "read a file"][i / 10 % 3].into(),
                    ),
                    names: Vec::new(),
                    activated: vec![tool],
                    already_active: Vec::new(),
                    matches: 0,
                    matched: Vec::new(),
                    empty: false,
                    status: ResultStatus::Ok,
                }
            } else {
                EventKind::Call {
                    tool,
                    outcome: Outcome::Allowed,
                    cause: None,
                    declared_next_step: false,
                    status: None,
                    server: None,
                    ms: None,
                    is_error: None,
                }
            };
            let mut e = Event::global(kind);
            e.session = Some(format!("s{}", i / 100));
            e.context = Some(EventContext {
                mode: mode.clone(),
                bot: None,
                flags: Vec::new(),
            });
            e
        })
        .collect();
    g.bench_function(format!("audit/{EVENTS}"), |b| {
        ran(&format!("diff/audit/{EVENTS}"));
        b.iter(|| {
            let mut r = Replayer::new(&new, &registry);
            for e in &events {
                r.read(e);
            }
            black_box(r.finish())
        })
    });
    g.finish();
}

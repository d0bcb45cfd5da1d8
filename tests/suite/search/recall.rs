//! Search recall over the fixture registries joined (docs/runtime.md), on two query
//! sets phrased as a model or user would ask, each query with the tools that
//! satisfy it. A query is found at k when one of its expected tools ranks in
//! the top k with every tool eligible.
//!
//! * `tests/data/search_queries.toml`: the set the ranking was tuned on.
//! * `tests/data/search_queries_heldout.toml`: written later, before the
//!   ranking was changed for it, and split by a fixed rule (odd-numbered
//!   queries are the development half, even-numbered ones the untouched
//!   half; each entry's `half` says which).
//! * `tests/data/search_queries_registries.toml`: queries over other
//!   registries, listed from real MCP servers (`tests/data/registries/`),
//!   written before the ranking was changed for them and split the same way.
//!   These registries ship with the project, so this set always runs.

use serde::Deserialize;
use toolpolicy::registry::{Registry, Tool};
use toolpolicy::search::SearchIndex;

#[derive(Deserialize)]
struct QuerySet {
    query: Vec<Query>,
}

#[derive(Deserialize)]
struct Query {
    q: String,
    expect: Vec<String>,
    /// `dev` or `holdout` in the held-out file; absent in the tuned set.
    #[serde(default)]
    half: Option<String>,
}

/// Floors a little below the measured figures, so a regression fails.
/// Tuned set, measured: 0.91 / 0.99 over 197 queries; Chinese 0.92 / 1.00
/// over 37 (the same before the last round of issue 11; 0.90 / 0.98 and
/// 0.89 / 1.00 before the lexicon and the rest of issue 11; 0.88 / 0.98 and
/// 0.86 / 1.00 before the held-out work).
const FLOOR_AT_1: f64 = 0.88;
const FLOOR_AT_4: f64 = 0.96;
const FLOOR_CJK_AT_1: f64 = 0.86;
const FLOOR_CJK_AT_4: f64 = 0.97;

/// Held-out set, development half, measured: 0.77 / 0.96 over 97 queries;
/// Chinese 0.75 / 0.96 over 24 (0.72 / 0.95 and 0.67 / 0.92 before the last
/// round of issue 11; 0.74 / 0.96 and 0.71 / 0.96 before issue 11; 0.53 /
/// 0.75 and 0.54 / 0.67 before the held-out work).
const FLOOR_DEV: Floors = Floors {
    at1: 0.74,
    at4: 0.93,
    cjk_at1: 0.70,
    cjk_at4: 0.92,
};
/// Held-out set, untouched half: 0.66 / 0.86 over 96 queries; Chinese 0.75 /
/// 0.96 over 24 (0.66 / 0.86 and 0.79 / 0.96 before the last round of issue
/// 11; 0.62 / 0.84 and 0.67 / 0.92 before issue 11; 0.55 / 0.78 and 0.54 /
/// 0.71 before the held-out work).
const FLOOR_HOLDOUT: Floors = Floors {
    at1: 0.62,
    at4: 0.83,
    cjk_at1: 0.70,
    cjk_at4: 0.92,
};

struct Floors {
    at1: f64,
    at4: f64,
    cjk_at1: f64,
    cjk_at4: f64,
}

fn is_cjk_query(q: &str) -> bool {
    q.chars().any(|c| {
        matches!(c as u32, 0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF)
    })
}

#[derive(Default)]
struct Tally {
    queries: usize,
    at1: usize,
    at4: usize,
}

impl Tally {
    fn add(&mut self, rank: Option<usize>) {
        self.queries += 1;
        self.at1 += usize::from(rank == Some(0));
        self.at4 += usize::from(rank.is_some_and(|r| r < 4));
    }
    fn r1(&self) -> f64 {
        self.at1 as f64 / self.queries.max(1) as f64
    }
    fn r4(&self) -> f64 {
        self.at4 as f64 / self.queries.max(1) as f64
    }
}

#[derive(Default)]
struct Report {
    all: Tally,
    english: Tally,
    chinese: Tally,
    misses: Vec<String>,
}

impl Report {
    fn summary(&self, label: &str) -> String {
        format!(
            "{label}: recall@1 = {:.2}, recall@4 = {:.2} over {} queries \
             (English {:.2}/{:.2} over {}, Chinese {:.2}/{:.2} over {})",
            self.all.r1(),
            self.all.r4(),
            self.all.queries,
            self.english.r1(),
            self.english.r4(),
            self.english.queries,
            self.chinese.r1(),
            self.chinese.r4(),
            self.chinese.queries,
        )
    }

    fn check(&self, label: &str, floors: &Floors) {
        assert!(
            self.all.r1() >= floors.at1,
            "{label}: recall@1 below {}",
            floors.at1
        );
        assert!(
            self.all.r4() >= floors.at4,
            "{label}: recall@4 below {}",
            floors.at4
        );
        assert!(
            self.chinese.r1() >= floors.cjk_at1,
            "{label}: Chinese recall@1 below {}",
            floors.cjk_at1
        );
        assert!(
            self.chinese.r4() >= floors.cjk_at4,
            "{label}: Chinese recall@4 below {}",
            floors.cjk_at4
        );
    }
}

fn load(file: &str) -> QuerySet {
    let path = format!("{}/tests/data/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("query set is readable");
    toml::from_str(&text).expect("query set parses")
}

/// Ranks every query of `set` accepted by `keep` and tallies where the first
/// expected tool lands.
fn evaluate(registry: &Registry, set: &QuerySet, keep: impl Fn(&Query) -> bool) -> Report {
    let index = SearchIndex::new(registry);
    let mut report = Report::default();
    for query in set.query.iter().filter(|q| keep(q)) {
        for name in &query.expect {
            assert!(
                registry.get(name).is_some(),
                "query {:?} expects unknown tool {name}",
                query.q
            );
        }
        let ranked = index.rank(&query.q, |_| true);
        let rank = ranked
            .iter()
            .position(|&i| query.expect.iter().any(|n| *n == registry.tools()[i].name));
        report.all.add(rank);
        if is_cjk_query(&query.q) {
            report.chinese.add(rank);
        } else {
            report.english.add(rank);
        }
        if rank != Some(0) {
            let top: Vec<&str> = ranked
                .iter()
                .take(4)
                .map(|&i| registry.tools()[i].name.as_str())
                .collect();
            report.misses.push(format!(
                "  {:?}: expected {:?} at {}, top {:?}",
                query.q,
                query.expect,
                rank.map_or("none".to_string(), |r| (r + 1).to_string()),
                top
            ));
        }
    }
    report
}

#[test]
fn search_recall_over_fixture_registries() {
    let Some(registry) = crate::fixtures::all() else {
        return;
    };
    let report = evaluate(&registry, &load("search_queries.toml"), |_| true);
    eprintln!("queries not ranked first:\n{}", report.misses.join("\n"));
    eprintln!("{}", report.summary("search recall (tuned set)"));
    assert!(
        report.all.queries >= 80 && report.chinese.queries >= 20,
        "query set too small"
    );
    report.check(
        "tuned set",
        &Floors {
            at1: FLOOR_AT_1,
            at4: FLOOR_AT_4,
            cjk_at1: FLOOR_CJK_AT_1,
            cjk_at4: FLOOR_CJK_AT_4,
        },
    );
}

#[test]
fn held_out_queries_are_split_in_two_halves() {
    let set = load("search_queries_heldout.toml");
    assert!(set.query.len() >= 120, "held-out set too small");
    let chinese = set.query.iter().filter(|q| is_cjk_query(&q.q)).count();
    assert!(chinese >= 30, "held-out set has too few Chinese queries");
    for (i, q) in set.query.iter().enumerate() {
        let want = if i % 2 == 0 { "dev" } else { "holdout" };
        assert_eq!(
            q.half.as_deref(),
            Some(want),
            "query {} ({:?}) is in the wrong half",
            i + 1,
            q.q
        );
    }
}

#[test]
fn search_recall_heldout_dev_half() {
    let Some(registry) = crate::fixtures::all() else {
        return;
    };
    let set = load("search_queries_heldout.toml");
    let report = evaluate(&registry, &set, |q| q.half.as_deref() == Some("dev"));
    eprintln!("dev half, not ranked first:\n{}", report.misses.join("\n"));
    eprintln!(
        "{}",
        report.summary("search recall (held-out set, dev half)")
    );
    report.check("held-out dev half", &FLOOR_DEV);
}

/// Prints only the figures: the misses of an untouched half are not for
/// reading while the ranking is worked on.
#[test]
fn search_recall_heldout_untouched_half() {
    let Some(registry) = crate::fixtures::all() else {
        return;
    };
    let set = load("search_queries_heldout.toml");
    let report = evaluate(&registry, &set, |q| q.half.as_deref() == Some("holdout"));
    let whole = evaluate(&registry, &set, |_| true);
    eprintln!(
        "{}",
        report.summary("search recall (held-out set, untouched half)")
    );
    eprintln!("{}", whole.summary("search recall (held-out set, whole)"));
    report.check("held-out untouched half", &FLOOR_HOLDOUT);
}

/// The registries of `tests/data/registries/`, joined in this order.
const REGISTRIES: [&str; 8] = [
    "notion",
    "kubernetes",
    "everything",
    "metabase",
    "weather",
    "coolify",
    "slack",
    "lark-zh",
];

/// The registries joined. A name an earlier server already has gets the
/// server's name in front (`coolify_list_databases`), as a gateway that
/// serves several servers at once has to do.
pub fn project_registries() -> Registry {
    let mut tools: Vec<Tool> = Vec::new();
    for name in REGISTRIES {
        let path = format!(
            "{}/tests/data/registries/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).expect("registry is readable");
        let registry = Registry::from_json(&text).expect("registry loads");
        for mut tool in registry.tools().iter().cloned() {
            if tools.iter().any(|t| t.name == tool.name) {
                let server = tool.source.as_deref().unwrap_or("");
                tool.name = format!("{}_{}", server.trim_start_matches("mcp:"), tool.name);
            }
            tools.push(tool);
        }
    }
    Registry::new(tools).expect("names are unique once prefixed")
}

/// Project registries, development half, measured: 0.58 / 0.81 over 83
/// queries; Chinese 0.58 / 0.82 over 33 (0.53 / 0.76 and 0.45 / 0.70 before
/// the last round of issue 11; 0.49 / 0.69 and 0.39 / 0.58 with the ranking
/// as it was when the queries were written).
const FLOOR_REGISTRIES_DEV: Floors = Floors {
    at1: 0.55,
    at4: 0.77,
    cjk_at1: 0.52,
    cjk_at4: 0.76,
};
/// Project registries, untouched half, measured at the end: 0.49 / 0.70 over
/// 82 queries; Chinese 0.39 / 0.64 over 33 (0.49 / 0.70 and 0.42 / 0.61
/// before the last round of issue 11; 0.44 / 0.60 and 0.30 / 0.42 with the
/// ranking as it was when the queries were written).
const FLOOR_REGISTRIES_HOLDOUT: Floors = Floors {
    at1: 0.45,
    at4: 0.66,
    cjk_at1: 0.35,
    cjk_at4: 0.60,
};

#[test]
fn project_registries_hold_enough_tools_and_queries() {
    let registry = project_registries();
    assert!(registry.tools().len() >= 300, "too few tools");
    let chinese_tools = registry
        .tools()
        .iter()
        .filter(|t| is_cjk_query(&t.description))
        .count();
    assert!(chinese_tools >= 100, "too few Chinese-described tools");
    let set = load("search_queries_registries.toml");
    assert!(set.query.len() >= 150, "query set too small");
    for (i, q) in set.query.iter().enumerate() {
        let want = if i % 2 == 0 { "dev" } else { "holdout" };
        assert_eq!(q.half.as_deref(), Some(want), "query {} half", i + 1);
    }
}

#[test]
fn search_recall_registries_dev_half() {
    let registry = project_registries();
    let set = load("search_queries_registries.toml");
    let report = evaluate(&registry, &set, |q| q.half.as_deref() == Some("dev"));
    eprintln!("dev half, not ranked first:\n{}", report.misses.join("\n"));
    eprintln!(
        "{}",
        report.summary("search recall (project registries, dev half)")
    );
    report.check("project registries dev half", &FLOOR_REGISTRIES_DEV);
}

/// Prints only the figures: the misses of this half are not for reading
/// while the ranking is being changed.
#[test]
fn search_recall_registries_untouched_half() {
    let registry = project_registries();
    let set = load("search_queries_registries.toml");
    let report = evaluate(&registry, &set, |q| q.half.as_deref() == Some("holdout"));
    let whole = evaluate(&registry, &set, |_| true);
    eprintln!(
        "{}",
        report.summary("search recall (project registries, untouched half)")
    );
    eprintln!(
        "{}",
        whole.summary("search recall (project registries, whole)")
    );
    report.check(
        "project registries untouched half",
        &FLOOR_REGISTRIES_HOLDOUT,
    );
}

//! Learned search terms, measured as a user would see them: a usage
//! simulation over three registries (English and Chinese).
//!
//! For each intent of `tests/data/learning/intents.toml`, simulated sessions
//! run on the real engine with the real audit log writer: each searches with
//! one of the intent's `taught` paraphrases and, when the search did not
//! bring the right tool, loads it by name and calls it, as a model reading
//! the catalog does. `policy learn` reads that log into a terms file; then
//! `policy search-eval` judges the search, without and with the terms, on
//! the `unseen` paraphrases (never searched in the log) and on requests no
//! tool serves. A second log is noisy: a fifth of its sessions load an
//! unrelated tool after the search (the same wrong one for the same
//! paraphrase, the worst case, since agreeing sessions are what teaches).
//!
//! The figures are printed (`cargo test --test suite search::learning --
//! --nocapture`) and docs/search.md quotes them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use toolpolicy::audit::writer::{AuditLog, Options};
use toolpolicy::runtime::{Engine, ResultStatus};
use toolpolicy::{Context, Policy, Registry, SkillList};

/// The policy every simulated session runs under: everything deferred.
const POLICY: &str = "search tool_search\nDefer(*)\n";
/// Sessions that search with each taught paraphrase.
const SESSIONS_PER_PARAPHRASE: usize = 3;

#[derive(Deserialize)]
struct Intents {
    registry: Vec<RegistryEntry>,
    intent: Vec<Intent>,
    noanswer: Vec<NoAnswer>,
}

#[derive(Deserialize)]
struct RegistryEntry {
    name: String,
    path: String,
}

#[derive(Deserialize)]
struct Intent {
    registry: String,
    tool: String,
    taught: Vec<String>,
    unseen: Vec<String>,
}

#[derive(Deserialize)]
struct NoAnswer {
    registry: String,
    queries: Vec<String>,
}

impl Intents {
    /// One registry of the file: its path, its tools, and its intents.
    fn of(&self, entry: &RegistryEntry) -> (PathBuf, Registry, Vec<&Intent>) {
        let path = root().join(&entry.path);
        let registry = Registry::from_json(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let intents = self
            .intent
            .iter()
            .filter(|i| i.registry == entry.name)
            .collect();
        (path, registry, intents)
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn intents() -> Intents {
    let path = root().join("tests/data/learning/intents.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("toolpolicy-learning-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// FNV-1a: a fixed, portable hash, so the noisy sessions and their wrong
/// tools are the same on every machine.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// How a simulated session goes.
#[derive(Clone, Copy, PartialEq)]
enum Noise {
    None,
    /// One session in five (by its name's hash) loads an unrelated tool.
    OneInFive,
}

/// What the simulation wrote into one registry's log.
#[derive(Default)]
struct Written {
    sessions: usize,
    noisy: usize,
    /// Sessions whose search already activated the right tool.
    found: usize,
}

/// Runs the simulated sessions of one registry's intents on the real engine,
/// its audit log written by the real writer into `log`.
fn simulate(registry: &Registry, intents: &[&Intent], noise: Noise, log: &Path) -> Written {
    let engine = Engine::new(
        Policy::parse("simulation.policy", POLICY).unwrap(),
        registry.clone(),
        SkillList::default(),
    );
    let writer = AuditLog::open(log, Options::default()).unwrap();
    engine.set_audit(Some(writer.hook()));
    let names: Vec<&str> = registry.tools().iter().map(|t| t.name.as_str()).collect();
    let mut written = Written::default();
    for intent in intents {
        for (p, query) in intent.taught.iter().enumerate() {
            for s in 0..SESSIONS_PER_PARAPHRASE {
                let name = format!("{}-{p}-{s}", intent.tool);
                let noisy = noise == Noise::OneInFive && fnv(&name).is_multiple_of(5);
                let target = if noisy {
                    unrelated(&names, &intent.tool, query)
                } else {
                    intent.tool.as_str()
                };
                let mut session = engine.session(Context::default()).unwrap();
                session.set_audit(Some(writer.hook()), &name);
                session.set_audit_caller(Some(&format!("user{}", s + 1)));
                session.prompt(&engine).unwrap();
                let found = session.search(&engine, query, &[] as &[&str]).unwrap();
                let brought = found.activated.iter().any(|t| t == target)
                    || found.already_active.iter().any(|t| t == target);
                if !brought {
                    session.load(&engine, &[target]).unwrap();
                } else if !noisy {
                    written.found += 1;
                }
                session.prompt(&engine).unwrap();
                session.call(&engine, target).unwrap();
                session
                    .record_result(&engine, target, ResultStatus::Ok)
                    .unwrap();
                session.prompt(&engine).unwrap();
                written.sessions += 1;
                written.noisy += usize::from(noisy);
            }
        }
    }
    writer.flush(Duration::from_secs(10));
    assert_eq!(writer.dropped(), 0, "the simulation's log lost events");
    written
}

/// The unrelated tool a noisy session loads after searching with `query`:
/// the same for every session of that paraphrase, never the right one.
fn unrelated<'a>(names: &[&'a str], right: &str, query: &str) -> &'a str {
    let others: Vec<&str> = names.iter().copied().filter(|n| *n != right).collect();
    others[(fnv(query) % others.len() as u64) as usize]
}

fn policy_cmd(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_policy"))
        .current_dir(root())
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "policy {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Search figures summed over registries, as counts.
#[derive(Default, Clone, Copy, Debug)]
struct Figures {
    answerable: f64,
    at_1: f64,
    at_4: f64,
    activated_right: f64,
    activated: f64,
    no_answer: f64,
    abstained: f64,
}

impl Figures {
    fn add(&mut self, report: &Value) {
        let answerable = report["answerable"].as_f64().unwrap();
        self.answerable += answerable;
        self.at_1 += report["recall_at_1"].as_f64().unwrap() * answerable;
        self.at_4 += report["recall_at_4"].as_f64().unwrap() * answerable;
        self.activated_right += report["recall_activated"].as_f64().unwrap() * answerable;
        self.activated += report["activated_per_query"].as_f64().unwrap() * answerable;
        self.no_answer += report["no_answer"].as_f64().unwrap();
        self.abstained += report["abstained"].as_f64().unwrap();
    }

    fn recall_at_1(&self) -> f64 {
        self.at_1 / self.answerable
    }

    fn recall_at_4(&self) -> f64 {
        self.at_4 / self.answerable
    }

    fn recall_activated(&self) -> f64 {
        self.activated_right / self.answerable
    }

    fn line(&self, name: &str) -> String {
        format!(
            "{name:<26} recall@1 {:.2}  recall@4 {:.2}  activated right {:.2}  tools/query {:.2}  no-answer activating nothing {}/{}",
            self.recall_at_1(),
            self.recall_at_4(),
            self.recall_activated(),
            self.activated / self.answerable,
            self.abstained,
            self.no_answer
        )
    }
}

/// One registry's search-eval on the unseen paraphrases and the no-answer
/// requests, under `policy`.
fn evaluate(registry: &str, policy: &Path, cases: &Path) -> Value {
    let out = policy_cmd(&[
        "search-eval",
        cases.to_str().unwrap(),
        "--policy",
        policy.to_str().unwrap(),
        "--registry",
        registry,
        "--format",
        "json",
    ]);
    serde_json::from_str(&out).unwrap()
}

/// The cases file of the unseen paraphrases and the no-answer requests.
fn write_cases(path: &Path, intents: &[&Intent], noanswer: &[&NoAnswer]) {
    let mut cases = Vec::new();
    for intent in intents {
        for query in &intent.unseen {
            cases.push(json!({"query": query, "expect": [intent.tool]}));
        }
    }
    for set in noanswer {
        for query in &set.queries {
            cases.push(json!({"query": query, "expect": []}));
        }
    }
    std::fs::write(path, json!({"case": cases}).to_string()).unwrap();
}

/// Terms the file holds for a tool other than the one whose paraphrase
/// taught them: what a noisy log costs.
fn wrong_terms(terms: &Path, intents: &[&Intent]) -> usize {
    let Ok(text) = std::fs::read_to_string(terms) else {
        return 0;
    };
    let file: BTreeMap<String, toml::Value> = toml::from_str(&text).unwrap();
    let mut wrong = 0;
    for (tool, table) in &file {
        let learned = table["terms"].as_array().unwrap();
        for term in learned {
            let term = term.as_str().unwrap();
            let right = intents
                .iter()
                .find(|i| i.taught.iter().any(|q| normal(q) == term));
            if right.is_some_and(|i| &i.tool != tool) {
                wrong += 1;
            }
        }
    }
    wrong
}

/// Lower case and single spaces, enough to match a query to its term.
fn normal(query: &str) -> String {
    query
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// One way of learning: a log and how many sessions must agree.
struct Variant {
    name: &'static str,
    noise: Noise,
    min_sessions: &'static str,
}

const VARIANTS: [Variant; 3] = [
    Variant {
        name: "clean",
        noise: Noise::None,
        min_sessions: "2",
    },
    Variant {
        name: "noisy",
        noise: Noise::OneInFive,
        min_sessions: "2",
    },
    // What a wrong term costs: one session is enough to teach.
    Variant {
        name: "noisy-1",
        noise: Noise::OneInFive,
        min_sessions: "1",
    },
];

/// The figures of one variant over every registry.
#[derive(Default)]
struct Learnt {
    figures: Figures,
    terms: usize,
    wrong: usize,
}

struct Run {
    before: Figures,
    /// By [`VARIANTS`].
    after: Vec<Learnt>,
    per_registry: Vec<String>,
    written: Written,
}

fn run() -> Run {
    let all = intents();
    let dir = scratch("simulation");
    let mut run = Run {
        before: Figures::default(),
        after: VARIANTS.iter().map(|_| Learnt::default()).collect(),
        per_registry: Vec::new(),
        written: Written::default(),
    };
    for entry in &all.registry {
        let (registry_path, registry, intents) = all.of(entry);
        let noanswer: Vec<&NoAnswer> = all
            .noanswer
            .iter()
            .filter(|n| n.registry == entry.name)
            .collect();
        let here = dir.join(&entry.name);
        std::fs::create_dir_all(&here).unwrap();
        let base = here.join("simulation.policy");
        std::fs::write(&base, POLICY).unwrap();
        let cases = here.join("unseen.json");
        write_cases(&cases, &intents, &noanswer);
        let registry_arg = registry_path.to_str().unwrap();

        let before = evaluate(registry_arg, &base, &cases);
        run.before.add(&before);
        let mut figures = Figures::default();
        figures.add(&before);
        let mut line = format!(
            "{:<11} before {:.2}/{:.2}",
            entry.name,
            figures.recall_at_1(),
            figures.recall_at_4()
        );

        for noise in [Noise::None, Noise::OneInFive] {
            let log = here.join(if noise == Noise::None {
                "clean.jsonl"
            } else {
                "noisy.jsonl"
            });
            let written = simulate(&registry, &intents, noise, &log);
            if noise == Noise::None {
                run.written.sessions += written.sessions;
                run.written.found += written.found;
            } else {
                run.written.noisy += written.noisy;
            }
            for (v, variant) in VARIANTS.iter().enumerate() {
                if variant.noise != noise {
                    continue;
                }
                let terms = here.join(format!("{}-terms.toml", variant.name));
                let mut args = vec![
                    "learn",
                    log.to_str().unwrap(),
                    "--policy",
                    base.to_str().unwrap(),
                    "--registry",
                    registry_arg,
                    "--min-sessions",
                    variant.min_sessions,
                ];
                let learned: Value = serde_json::from_str(&policy_cmd(
                    &[args.as_slice(), &["--format", "json"]].concat(),
                ))
                .unwrap();
                args.extend(["--out", terms.to_str().unwrap()]);
                policy_cmd(&args);
                let taught = here.join(format!("{}.policy", variant.name));
                let setting = format!("terms = \"{}-terms.toml\"\n{POLICY}", variant.name);
                std::fs::write(&taught, setting).unwrap();
                let after = evaluate(registry_arg, &taught, &cases);
                let count = learned_count(&learned);
                let mut figures = Figures::default();
                figures.add(&after);
                line += &format!(
                    "  {} {:.2}/{:.2} ({count} terms)",
                    variant.name,
                    figures.recall_at_1(),
                    figures.recall_at_4()
                );
                let learnt = &mut run.after[v];
                learnt.figures.add(&after);
                learnt.terms += count;
                learnt.wrong += wrong_terms(&terms, &intents);
            }
        }
        run.per_registry.push(line);
    }
    run
}

/// How many terms `policy learn --format json` says it would add.
fn learned_count(learned: &Value) -> usize {
    learned["terms"]
        .as_array()
        .unwrap_or_else(|| panic!("`policy learn --format json` has no `terms`: {learned}"))
        .len()
}

#[test]
fn learning_from_use_finds_unseen_paraphrases_and_costs_no_answers() {
    let run = run();
    println!(
        "usage simulation: {} sessions a log ({} found the tool at once), {} noisy in the noisy log",
        run.written.sessions, run.written.found, run.written.noisy
    );
    println!("{}", run.before.line("before (no terms)"));
    for (variant, learnt) in VARIANTS.iter().zip(&run.after) {
        println!(
            "{}   {} terms, {} wrong",
            learnt.figures.line(&format!(
                "{}, --min-sessions {}",
                variant.name, variant.min_sessions
            )),
            learnt.terms,
            learnt.wrong
        );
    }
    for line in &run.per_registry {
        println!("  {line}");
    }
    let [clean, noisy, noisy_one] = &run.after[..] else {
        unreachable!()
    };
    let before = &run.before;

    // The simulation is what learning is for: most sessions' searches
    // missed; the clean log teaches, and nothing wrong.
    assert!(
        run.written.found < run.written.sessions / 2,
        "{}",
        run.written.found
    );
    assert!(clean.terms > 0);
    assert_eq!(clean.wrong, 0);
    // Terms learnt from other paraphrases reach paraphrases never searched.
    assert!(
        clean.figures.recall_at_4() > before.recall_at_4(),
        "learning should raise recall@4 on unseen paraphrases: {:.2} -> {:.2}",
        before.recall_at_4(),
        clean.figures.recall_at_4()
    );
    assert!(clean.figures.recall_at_1() >= before.recall_at_1());
    assert!(clean.figures.recall_activated() >= before.recall_activated());
    // Learning never teaches the search to answer what nothing serves.
    assert!(
        clean.figures.abstained >= before.abstained,
        "no-answer requests activating nothing: {} -> {}",
        before.abstained,
        clean.figures.abstained
    );
    // Two agreeing sessions keep a noisy log's wrong loads out; one session
    // lets them in, which is what the default guards against.
    assert!(noisy.wrong <= noisy_one.wrong);
    assert!(
        noisy_one.wrong > 0,
        "the noisy log should teach some wrong term at one session"
    );
    assert!(noisy.figures.recall_at_4() >= before.recall_at_4());
    assert!(noisy.figures.abstained >= before.abstained - 1.0);
}

/// The same logs give the same terms file, byte for byte.
#[test]
fn the_simulation_learns_the_same_file_twice() {
    let all = intents();
    let entry = &all.registry[0];
    let (registry_path, registry, intents) = all.of(entry);
    let dir = scratch("twice");
    let base = dir.join("p.policy");
    std::fs::write(&base, POLICY).unwrap();
    let mut files = Vec::new();
    for round in 0..2 {
        let log = dir.join(format!("{round}.jsonl"));
        simulate(&registry, &intents, Noise::OneInFive, &log);
        let out = dir.join(format!("{round}.toml"));
        policy_cmd(&[
            "learn",
            log.to_str().unwrap(),
            "--policy",
            base.to_str().unwrap(),
            "--registry",
            registry_path.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        files.push(std::fs::read(&out).unwrap());
    }
    assert!(!files[0].is_empty());
    assert_eq!(files[0], files[1]);
}

/// The terms the clean simulation teaches, over every registry of the
/// intents file, merged into one terms file in a fresh folder beside a
/// policy that names it (`Defer(*)`): for measuring other query sets with
/// learning on. Returns the policy's path.
pub fn learned_policy(tag: &str) -> PathBuf {
    let all = intents();
    let dir = scratch(&format!("learned-{tag}"));
    let base = dir.join("simulation.policy");
    std::fs::write(&base, POLICY).unwrap();
    let terms = dir.join("search-terms.toml");
    for entry in &all.registry {
        let (registry_path, registry, intents) = all.of(entry);
        let log = dir.join(format!("{}.jsonl", entry.name));
        simulate(&registry, &intents, Noise::None, &log);
        policy_cmd(&[
            "learn",
            log.to_str().unwrap(),
            "--policy",
            base.to_str().unwrap(),
            "--registry",
            registry_path.to_str().unwrap(),
            "--out",
            terms.to_str().unwrap(),
        ]);
    }
    let policy = dir.join("learned.policy");
    std::fs::write(&policy, "terms = \"search-terms.toml\"\nDefer(*)\n").unwrap();
    policy
}

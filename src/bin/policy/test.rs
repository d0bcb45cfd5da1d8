//! `policy test PATH...`: runs expectation files against their policies.
//!
//! An expectation file is TOML, by convention `NAME.test.toml` beside
//! `NAME.policy`:
//!
//! ```toml
//! policy = "pi-desktop.policy"   # optional: the file's stem minus `.test`, plus `.policy`
//! registry = "tools.json"        # optional, relative to this file
//! skills = "skills.json"         # optional, relative to this file
//!
//! These paths stay inside the file's folder (docs/replay.md).
//!
//! [[case]]
//! mode = "chat"                  # optional when the policy has no modes
//! bot = "reviewer"               # optional
//! flags = ["codemode"]           # optional
//! item = "Bash"                  # a tool name, or `skill:NAME`
//! expect = "deferred"            # active | deferred | hidden
//! cause = "defer"                # optional: guard, search, hide, grant, nodefer,
//!                                # switch, defer, hint, default, model_invocable
//! ```
//!
//! A case may also give the item's facts when no registry does: `source`,
//! `defer_loading` (the registry hint), `annotations` (MCP's, for `hint:`
//! selectors: `annotations = { readOnlyHint = true }`) and, for a skill,
//! `model_invocable`; and the runtime's own `grants`. With a `registry` (or `skills`), a case whose
//! item is not in it and that gives none of those facts fails, with the
//! closest names: a misspelled or renamed tool would otherwise pass. Every
//! problem of a file (bad cases, unknown keys, missing modes) is reported
//! at once, the cases without one still run, and the command exits 2. A
//! folder means every `*.test.toml` in it.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::Deserialize;
use serde::Serialize;
use toolpolicy::coverage::{Coverage, Tally};
use toolpolicy::decision::{CauseKind, Exposure};
use toolpolicy::diag::SourceFile;
use toolpolicy::explain::rule_ref;
use toolpolicy::runtime::data_path;
use toolpolicy::{Context, ItemRef, Origin, Policy, Registry, Resolved, SkillList, Table};

use crate::common::{self, CliError, Format};

#[derive(clap::Args)]
#[command(
    after_help = "An expectation file, `NAME.test.toml` beside `NAME.policy`:

  [[case]]
  mode = \"chat\"          # optional when the policy has no modes
  bot = \"reviewer\"       # optional
  flags = [\"codemode\"]   # optional
  item = \"Bash\"          # a tool name, or skill:NAME
  expect = \"deferred\"    # active | deferred | hidden
  cause = \"defer\"        # optional

Top-level `policy`, `registry` and `skills` paths (relative to the file, and
inside its folder) are optional; a case may give `source`, `defer_loading` and `model_invocable` for
an item no registry describes. With a registry, a case whose item is not in it
(and that gives none of those) fails, naming the closest tools. Every problem
of a file is reported at once, and its other cases still run. Ends with
`N passed, N failed` (and `N not run`); exits 1 on a failure, 2 on a bad
file or case. With `--coverage`, then names each rule (and selector) that
decides no case, and the share of rules that do; `--min-coverage P` exits 1
under P percent."
)]
pub struct Args {
    /// Expectation files, or folders holding `*.test.toml` files
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Also list the cases that pass
    #[arg(long, short)]
    verbose: bool,
    /// After the cases: the rules (and selectors) of each policy that decide no case, and the share that do
    #[arg(long)]
    coverage: bool,
    /// With `--coverage` implied: exit 1 when fewer than P percent of the rules of all files decide a case
    #[arg(long, value_name = "P")]
    min_coverage: Option<f64>,
    /// Output format
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

struct TestFile {
    policy: Option<String>,
    registry: Option<String>,
    skills: Option<String>,
    /// Each case read on its own, so that every bad case is reported.
    cases: Vec<toml::Spanned<toml::Value>>,
    /// Top-level keys the file does not know, kept to be reported with the
    /// file's other problems rather than refusing the file for them.
    unknown: Vec<toml::Spanned<String>>,
}

/// The top-level keys a test file may have.
const KEYS: [&str; 4] = ["policy", "registry", "skills", "case"];

/// Read by hand, in the one pass that parses the file: an unknown key is
/// kept with its place, where serde's `deny_unknown_fields` would refuse
/// the whole file at the first.
impl<'de> Deserialize<'de> for TestFile {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<TestFile, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = TestFile;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a test file")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<TestFile, A::Error> {
                let mut file = TestFile {
                    policy: None,
                    registry: None,
                    skills: None,
                    cases: Vec::new(),
                    unknown: Vec::new(),
                };
                while let Some(key) = map.next_key::<toml::Spanned<String>>()? {
                    match key.get_ref().as_str() {
                        "policy" => file.policy = Some(map.next_value()?),
                        "registry" => file.registry = Some(map.next_value()?),
                        "skills" => file.skills = Some(map.next_value()?),
                        "case" => file.cases = map.next_value()?,
                        _ => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                            file.unknown.push(key);
                        }
                    }
                }
                Ok(file)
            }
        }
        d.deserialize_map(Visitor)
    }
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct Case {
    mode: Option<String>,
    bot: Option<String>,
    #[serde(default)]
    flags: Vec<String>,
    grants: Option<Vec<String>>,
    item: String,
    expect: String,
    cause: Option<String>,
    source: Option<String>,
    defer_loading: Option<bool>,
    /// The tool's MCP annotations, as a registry entry would carry them.
    annotations: Option<serde_json::Value>,
    model_invocable: Option<bool>,
}

#[derive(Serialize)]
struct Outcome {
    exposure: Exposure,
    cause: CauseKind,
    /// The deciding statement, `file:line:column: text`.
    #[serde(skip_serializing_if = "Option::is_none")]
    rule: Option<String>,
}

#[derive(Serialize)]
struct CaseReport {
    file: String,
    line: usize,
    item: String,
    context: Context,
    expected: String,
    passed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    actual: Option<Outcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// What one file gave: its problems (each `file:line: what`), the reports
/// of the cases that could run, and how many could not.
struct FileRun {
    problems: Vec<String>,
    reports: Vec<CaseReport>,
    not_run: usize,
    /// Which rules decided a case, when the policy loaded.
    coverage: Option<Coverage>,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let files = crate::files::expand(&args.paths, ".test.toml")?;
    if files.is_empty() {
        return Err(CliError::Usage("no `*.test.toml` files found".into()));
    }
    let mut reports = Vec::new();
    let mut problems = Vec::new();
    let mut not_run = 0;
    let mut coverage: Vec<Coverage> = Vec::new();
    if let Some(p) = args.min_coverage
        && !(0.0..=100.0).contains(&p)
    {
        return Err(CliError::Usage(format!(
            "`--min-coverage {p}` is not a percentage from 0 to 100"
        )));
    }
    // A file with problems, or one that cannot be used at all, is reported
    // and the run goes on: one run shows everything there is to fix.
    let mut refused = false;
    for file in &files {
        match run_file(file, args.format) {
            Ok(run) => {
                if !run.problems.is_empty() {
                    refused = true;
                    let n = run.problems.len();
                    eprintln!(
                        "{}",
                        toolpolicy::chars::escape(&format!(
                            "error: `{}` has {n} problem{}:\n{}",
                            file.display(),
                            if n == 1 { "" } else { "s" },
                            run.problems.join("\n")
                        ))
                    );
                }
                problems.extend(run.problems);
                reports.extend(run.reports);
                not_run += run.not_run;
                coverage.extend(run.coverage);
            }
            Err(CliError::Reported) => refused = true,
            Err(e) => {
                refused = true;
                eprintln!("{}", toolpolicy::chars::escape(&e.to_string()));
                problems.push(e.to_string().trim_start_matches("error: ").to_string());
            }
        }
    }
    let passed = reports.iter().filter(|r| r.passed).count();
    let failed = reports.len() - passed;
    let with_coverage = args.coverage || args.min_coverage.is_some();
    let total = crate::coverage::total(&coverage);
    let under = args.min_coverage.is_some_and(|p| total < p);
    if args.format == Format::Json {
        let mut doc = serde_json::json!({
            "cases": reports,
            "passed": passed,
            "failed": failed,
            "not_run": not_run,
            "problems": problems,
        });
        if with_coverage {
            doc["coverage"] = serde_json::json!({
                "files": coverage,
                "percent": total,
                "min": args.min_coverage,
            });
        }
        common::print_json(&doc)?;
    } else {
        let mut out = String::new();
        for r in &reports {
            if !r.passed || args.verbose {
                describe(&mut out, r);
            }
        }
        out += &format!("{passed} passed, {failed} failed");
        if not_run > 0 {
            out += &format!(", {not_run} not run");
        }
        out += "\n";
        if with_coverage {
            crate::coverage::human(&mut out, &coverage, total, args.min_coverage);
        }
        print!("{}", toolpolicy::chars::escape(&out));
    }
    Ok(if refused {
        ExitCode::from(2)
    } else if failed > 0 || under {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// A problem for each top-level key the file does not know, at its line,
/// with the nearest known key.
fn unknown_keys(doc: &TestFile, name: &str, lines: &SourceFile) -> Vec<(usize, String)> {
    doc.unknown
        .iter()
        .map(|k| {
            let key = k.get_ref();
            let help = toolpolicy::diag::did_you_mean(key, KEYS).unwrap_or_else(|| {
                "the keys are `policy`, `registry`, `skills` and `[[case]]`".into()
            });
            let line = lines.line_col(k.span().start).0;
            (line, format!("{name}:{line}: unknown key `{key}` ({help})"))
        })
        .collect()
}

fn describe(out: &mut String, r: &CaseReport) {
    let ctx = &r.context;
    let mut place = Vec::new();
    if let Some(m) = &ctx.mode {
        place.push(format!("mode `{m}`"));
    }
    if let Some(b) = &ctx.bot {
        place.push(format!("bot `{b}`"));
    }
    if !ctx.flags.is_empty() {
        let f: Vec<String> = ctx.flags.iter().map(|f| format!("`{f}`")).collect();
        place.push(format!("flags {}", f.join(", ")));
    }
    let place = if place.is_empty() {
        String::new()
    } else {
        format!(" in {}", place.join(", "))
    };
    let verdict = if r.passed { "ok  " } else { "FAIL" };
    let _ = writeln!(out, "{verdict} {}:{}: `{}`{place}", r.file, r.line, r.item);
    if r.passed {
        return;
    }
    let _ = writeln!(out, "  expected: {}", r.expected);
    match (&r.actual, &r.error) {
        (Some(a), _) => {
            let rule = a
                .rule
                .as_ref()
                .map(|r| format!(", by {r}"))
                .unwrap_or_default();
            let _ = writeln!(out, "  actual:   {} ({}{rule})", a.exposure, a.cause);
        }
        (None, Some(e)) => {
            let _ = writeln!(out, "  error:    {e}");
        }
        (None, None) => {}
    }
}

/// A path the test file names, inside its folder (docs/replay.md).
fn named(file: &Path, key: &str, p: impl AsRef<Path>) -> Result<PathBuf, CliError> {
    data_path(file, key, p)
        .map_err(|e| CliError::Usage(format!("bad test file `{}`: {e}", file.display())))
}

/// Runs one file. What keeps the whole file from running (it cannot be read
/// or parsed, has no cases, names a path it may not) is an error; a bad
/// case or key is one of its problems, and the other cases still run.
fn run_file(file: &Path, format: Format) -> Result<FileRun, CliError> {
    let name = file.display().to_string();
    let bytes = common::read(file)?;
    let text =
        String::from_utf8(bytes).map_err(|_| CliError::Usage(format!("`{name}` is not UTF-8")))?;
    let text = toolpolicy::input::strip_bom(&text);
    let doc: TestFile = toml::from_str(text)
        .map_err(|e| CliError::Usage(format!("`{name}` is not a valid test file: {e}")))?;
    // A file that tests nothing would report `0 passed, 0 failed` and exit 0,
    // so a CI job would pass on it: refused like a malformed file.
    if doc.cases.is_empty() {
        return Err(CliError::Usage(format!(
            "`{name}` has no cases: add a `[[case]]` table for each expectation"
        )));
    }
    let policy_path = match &doc.policy {
        Some(p) => named(file, "policy", p)?,
        // `NAME.test.toml` → `NAME.policy` beside it, on the name's bytes: a
        // name that is not UTF-8 still names its policy.
        None => {
            let own = file
                .file_name()
                .filter(|n| n.as_encoded_bytes().ends_with(b".test.toml"))
                .map(|_| file.with_extension("").with_extension("policy"))
                .ok_or_else(|| {
                    CliError::Usage(format!(
                        "`{name}`: name the policy with `policy = \"...\"`, or call the file `NAME.test.toml`"
                    ))
                })?;
            named(file, "policy", own.file_name().unwrap_or_default())?
        }
    };
    let registry = doc
        .registry
        .as_deref()
        .map(|p| named(file, "registry", p))
        .transpose()?;
    let skills = doc
        .skills
        .as_deref()
        .map(|p| named(file, "skills", p))
        .transpose()?;
    let mut registry = common::load_registry(registry.as_deref())?;
    let skills = common::load_skills(skills.as_deref())?;
    // One line table for every case: counting the lines before each case
    // from the start made 20,000 cases take 23 s.
    let lines = SourceFile::new(name.as_str(), text);
    let line_of = |offset: usize| lines.line_col(offset).0;
    // Every case is checked before any runs, so a typo is an error, not a
    // failure; every problem of the file is reported, and a case with one
    // does not run.
    let mut problems = unknown_keys(&doc, &name, &lines);
    let mut cases: Vec<toml::Spanned<Case>> = Vec::with_capacity(doc.cases.len());
    for c in &doc.cases {
        let span = c.span();
        let line = line_of(span.start);
        let at = format!("{name}:{line}");
        let case = match Case::deserialize(c.get_ref().clone()) {
            Ok(case) => case,
            Err(e) => {
                problems.push((line, format!("{at}: {}", e.message().trim_end())));
                continue;
            }
        };
        let before = problems.len();
        if parse_exposure(&case.expect).is_none() {
            problems.push((
                line,
                format!(
                    "{at}: `expect` is `{}`; use `active`, `deferred` or `hidden`",
                    case.expect
                ),
            ));
        }
        if let Some(cause) = &case.cause
            && CauseKind::parse(cause).is_none()
        {
            problems.push((line, format!(
                "{at}: unknown cause `{cause}`; use guard, search, hide, grant, lock, nodefer, switch, defer, hint, default or model_invocable"
            )));
        }
        if problems.len() == before {
            cases.push(toml::Spanned::new(span, case));
        }
    }
    let policy = match common::load_policy(&policy_path, format) {
        Ok(p) => Some(p),
        Err(CliError::Reported) => None,
        Err(e) => return Err(e),
    };
    // The registry's tools held to the policy's lock, as an engine holds them.
    if let (Some(p), Some(r)) = (&policy, &mut registry) {
        toolpolicy::lock::mark(r, p);
    }
    // A context always has a mode when the policy declares some (docs/language.md).
    if let Some(policy) = policy.as_ref().filter(|p| !p.modes.is_empty()) {
        let modes: Vec<String> = policy.modes.iter().map(|m| format!("`{m}`")).collect();
        cases.retain(|c| {
            if c.get_ref().mode.is_some() {
                return true;
            }
            let line = line_of(c.span().start);
            problems.push((
                line,
                format!(
                    "{name}:{line}: the case has no `mode`, and the policy declares {}",
                    modes.join(", ")
                ),
            ));
            false
        });
    }
    let not_run = doc.cases.len() - cases.len();
    // In the file's order, as a reader fixes them.
    problems.sort_by_key(|(line, _)| *line);
    let problems: Vec<String> = problems.into_iter().map(|(_, p)| p).collect();
    let Some(policy) = policy else {
        // The policy's errors are printed; every case fails.
        let reports = cases
            .iter()
            .map(|c| {
                failed_case(
                    &name,
                    line_of(c.span().start),
                    c.get_ref(),
                    "the policy has errors",
                )
            })
            .collect();
        return Ok(FileRun {
            problems,
            reports,
            not_run,
            coverage: None,
        });
    };
    let lists = Lists {
        registry: registry.as_ref().zip(doc.registry.as_deref()),
        skills: skills.as_ref().zip(doc.skills.as_deref()),
    };
    let table = Table::compile(&policy);
    let mut tally = Tally::new(&policy);
    // Cases share a few contexts: each is resolved once.
    let mut contexts: HashMap<Context, Result<Resolved, String>> = HashMap::new();
    let reports = cases
        .iter()
        .map(|c| {
            let ctx = context_of(c.get_ref());
            let resolved = contexts
                .entry(ctx)
                .or_insert_with_key(|ctx| table.resolve(ctx).map_err(|e| e.to_string()));
            let line = line_of(c.span().start);
            let unknown = unknown_item(c.get_ref(), &lists);
            match resolved {
                Ok(_) if unknown.is_some() => failed_case(
                    &name,
                    line,
                    c.get_ref(),
                    unknown.as_deref().unwrap_or_default(),
                ),
                Ok(resolved) => {
                    let item = item_of(c.get_ref(), registry.as_ref(), skills.as_ref());
                    let report =
                        run_case(&policy, &table, resolved, &item, &name, line, c.get_ref());
                    tally.record(
                        &policy,
                        resolved.context(),
                        &item,
                        &table.decide(resolved, &item),
                    );
                    report
                }
                Err(e) => failed_case(&name, line, c.get_ref(), e),
            }
        })
        .collect();
    let lints = toolpolicy::lint::lint(&policy, registry.as_ref(), skills.as_ref());
    Ok(FileRun {
        problems,
        reports,
        not_run,
        coverage: Some(tally.finish(&policy, &lints)),
    })
}

/// The registry and skill list a test file names, with the names it gives them.
struct Lists<'a> {
    registry: Option<(&'a Registry, &'a str)>,
    skills: Option<(&'a SkillList, &'a str)>,
}

/// Why a case's item is not one its file's registry or skill list knows,
/// when it names one and the case does not describe the item itself: a
/// case about a misspelled or renamed tool would test a name no runtime
/// has, and pass.
fn unknown_item(c: &Case, lists: &Lists<'_>) -> Option<String> {
    let (name, known, list, what): (&str, Vec<&str>, &str, &str) = match c
        .item
        .strip_prefix("skill:")
    {
        Some(skill) => {
            let (skills, path) = lists.skills?;
            if skills.get(skill).is_some() || c.source.is_some() || c.model_invocable.is_some() {
                return None;
            }
            let names = skills.skills().iter().map(|s| s.name.as_str()).collect();
            (skill, names, path, "skill list")
        }
        None => {
            let (registry, path) = lists.registry?;
            if registry.get(&c.item).is_some() || c.source.is_some() || c.defer_loading.is_some() {
                return None;
            }
            let names = registry.tools().iter().map(|t| t.name.as_str()).collect();
            (c.item.as_str(), names, path, "registry")
        }
    };
    let help = toolpolicy::diag::did_you_mean(name, known).unwrap_or_else(|| {
        "give the item's `source` (or its hints) in the case to test a name the list lacks"
            .to_string()
    });
    Some(format!("`{name}` is not in the {what} `{list}` ({help})"))
}

fn parse_exposure(s: &str) -> Option<Exposure> {
    match s {
        "active" => Some(Exposure::Active),
        "deferred" => Some(Exposure::Deferred),
        "hidden" => Some(Exposure::Hidden),
        _ => None,
    }
}

fn context_of(c: &Case) -> Context {
    Context {
        mode: c.mode.clone(),
        bot: c.bot.clone(),
        flags: c.flags.iter().cloned().collect(),
        grants: c.grants.clone(),
    }
}

fn expected_text(c: &Case) -> String {
    match &c.cause {
        Some(cause) => format!("{} ({cause})", c.expect),
        None => c.expect.clone(),
    }
}

fn failed_case(file: &str, line: usize, c: &Case, error: &str) -> CaseReport {
    CaseReport {
        file: file.to_string(),
        line,
        item: c.item.clone(),
        context: context_of(c),
        expected: expected_text(c),
        passed: false,
        actual: None,
        error: Some(error.to_string()),
    }
}

/// The case's item: the registry's or skill list's facts, overridden by the case's.
fn item_of<'a>(
    c: &'a Case,
    registry: Option<&'a Registry>,
    skills: Option<&'a SkillList>,
) -> ItemRef<'a> {
    let mut item = match c.item.strip_prefix("skill:") {
        Some(s) => skills
            .and_then(|l| l.get(s))
            .map_or(ItemRef::skill(s), ItemRef::from_skill),
        None => registry
            .and_then(|r| r.get(&c.item))
            .map_or(ItemRef::tool(&c.item), ItemRef::from_tool),
    };
    if let Some(s) = &c.source {
        item.source = Some(s);
    }
    if let Some(h) = c.defer_loading {
        item.defer_hint = h;
    }
    if let Some(a) = &c.annotations {
        item.hints = toolpolicy::hint::Annotations::read(Some(a)).0.hints();
        item.annotations = Some(a);
    }
    if let Some(m) = c.model_invocable {
        item.model_invocable = m;
    }
    item
}

fn run_case(
    policy: &Policy,
    table: &Table,
    resolved: &Resolved,
    item: &ItemRef<'_>,
    file: &str,
    line: usize,
    c: &Case,
) -> CaseReport {
    let d = table.decide(resolved, item);
    let rule = match d.origin {
        Some(Origin::Rule(i)) => policy.rules.get(i as usize).map(|r| r.span),
        Some(Origin::Setting(i)) => policy.settings.get(i as usize).map(|s| s.span),
        None => None,
    }
    .map(|span| {
        let r = rule_ref(policy, span);
        format!("`{}` at {}:{}:{}", r.text, r.file, r.line, r.column)
    });
    let want_exposure = parse_exposure(&c.expect);
    let want_cause = c.cause.as_deref().and_then(CauseKind::parse);
    let passed = want_exposure == Some(d.exposure) && want_cause.is_none_or(|k| k == d.cause);
    CaseReport {
        file: file.to_string(),
        line,
        item: c.item.clone(),
        context: resolved.context().clone(),
        expected: expected_text(c),
        passed,
        actual: Some(Outcome {
            exposure: d.exposure,
            cause: d.cause,
            rule,
        }),
        error: None,
    }
}

//! `policy replay SCENARIO [--policy F] [--registry F] [--skills F]`
//!
//! The files may also be named by the scenario itself (`"policy"`,
//! `"registry"`, `"skills"`, relative to the scenario file and inside its
//! folder); flags win.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use toolpolicy::chars::escape;
use toolpolicy::runtime::{Scenario, StepReport, data_path, replay};

use crate::audit_args::{self, AuditArgs};
use crate::common::{self, CliError, Format};
use crate::runtime_args::{load_engine, names};
use crate::search::indent;

#[derive(clap::Args)]
pub struct Args {
    /// The scenario file (JSON): the context, the files, and the steps with what each expects
    scenario: PathBuf,
    /// The policy (default: the scenario's `policy`)
    #[arg(long)]
    policy: Option<PathBuf>,
    /// The tool registry (default: the scenario's `registry`)
    #[arg(long)]
    registry: Option<PathBuf>,
    /// The skill list (default: the scenario's `skills`)
    #[arg(long)]
    skills: Option<PathBuf>,
    #[command(flatten)]
    audit: AuditArgs,
    /// Output format
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

/// A flag, or the scenario's own path, which must stay in the scenario's
/// folder (docs/replay.md); the flags are the way to point elsewhere.
fn pick(
    flag: Option<PathBuf>,
    key: &str,
    named: Option<&str>,
    scenario: &Path,
) -> Result<Option<PathBuf>, CliError> {
    if flag.is_some() {
        return Ok(flag);
    }
    let Some(named) = named else { return Ok(None) };
    data_path(scenario, key, named).map(Some).map_err(|e| {
        CliError::Usage(format!(
            "bad scenario `{}`: {e}; pass `--{key}` to use a file elsewhere",
            scenario.display()
        ))
    })
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let bytes = common::read(&args.scenario)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| CliError::Usage(format!("`{}` is not UTF-8", args.scenario.display())))?;
    let scenario = Scenario::from_json(&text)
        .map_err(|e| CliError::Usage(format!("bad scenario `{}`: {e}", args.scenario.display())))?;
    let missing = |what: &str| {
        CliError::Usage(format!(
            "no {what}: pass `--{what}` or name it in the scenario's `\"{what}\"`"
        ))
    };
    let policy = pick(
        args.policy,
        "policy",
        scenario.policy.as_deref(),
        &args.scenario,
    )?
    .ok_or_else(|| missing("policy"))?;
    let registry = pick(
        args.registry,
        "registry",
        scenario.registry.as_deref(),
        &args.scenario,
    )?
    .ok_or_else(|| missing("registry"))?;
    let skills = pick(
        args.skills,
        "skills",
        scenario.skills.as_deref(),
        &args.scenario,
    )?;
    let engine = load_engine(&policy, &registry, skills.as_deref(), args.format)?;
    let log = args.audit.open();
    engine.set_audit(log.as_ref().map(|l| l.hook()));
    let reports = replay(&engine, &scenario);
    if let Some(log) = &log {
        audit_args::close(log);
    }
    let reports = reports.map_err(|e| CliError::Usage(format!("replay stopped: {e}")))?;
    let failures: Vec<&String> = reports.iter().flat_map(|r| &r.failures).collect();
    match args.format {
        Format::Json => common::print_json(&reports)?,
        _ => {
            for (r, step) in reports.iter().zip(&scenario.steps) {
                print!("{}", escape(&human(r, step)));
            }
            if failures.is_empty() {
                println!("{} steps replayed", reports.len());
            } else {
                println!(
                    "{} steps replayed, {} expectations failed",
                    reports.len(),
                    failures.len()
                );
            }
        }
    }
    for f in &failures {
        eprintln!("failed: {}", escape(f));
    }
    Ok(if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn human(r: &StepReport, step: &toolpolicy::runtime::Step) -> String {
    let what = match r.action {
        "search" => step
            .search
            .as_ref()
            .map(|s| {
                let mut w = format!("search {:?}", s.query);
                if !s.names.is_empty() {
                    w += &format!(" names {}", s.names.join(", "));
                }
                w
            })
            .unwrap_or_default(),
        "call" => step
            .call
            .as_ref()
            .map(|c| format!("call {} ({})", c.tool, c.status.as_str()))
            .unwrap_or_default(),
        "load" => format!(
            "load {}",
            step.load.as_deref().unwrap_or_default().join(", ")
        ),
        "mode" => format!(
            "mode {}",
            step.mode
                .clone()
                .flatten()
                .unwrap_or_else(|| "(none)".into())
        ),
        "skill" => format!("skill {}", step.skill.as_deref().unwrap_or_default()),
        other => other.to_string(),
    };
    let status = step
        .status
        .filter(|s| !s.is_ok())
        .map(|s| format!(" [{}]", s.as_str()))
        .unwrap_or_default();
    let mut out = format!("step {}: {what}{status}\n", r.step);
    let text = r.result.get("text").and_then(|t| t.as_str());
    match (text, r.result.get("activated")) {
        (Some(text), _) => out += &format!("{}\n", indent(text)),
        (None, Some(a)) => out += &format!("  activated: {}\n", list(a)),
        _ => {}
    }
    match r.action {
        "call" => {
            let outcome = r.result.get("outcome").and_then(|o| o.as_str());
            if outcome == Some("allowed") {
                out += "  allowed\n";
            }
        }
        "compact" => {
            let n = r
                .result
                .get("evidence_dropped")
                .cloned()
                .unwrap_or_default();
            out += &format!("  evidence dropped for {n} tools\n");
        }
        "skill" => {
            let skill = r.result.get("skill").and_then(|s| s.as_str());
            out += &format!("  resolves to: {}\n", skill.unwrap_or("(not available)"));
        }
        _ => {}
    }
    out += &format!(
        "  declared: {}\n",
        names(r.declared.iter().map(String::as_str))
    );
    for f in &r.failures {
        out += &format!("  FAILED {f}\n");
    }
    out
}

fn list(v: &serde_json::Value) -> String {
    let items: Vec<&str> = v
        .as_array()
        .map(|a| a.iter().filter_map(|x| x.as_str()).collect())
        .unwrap_or_default();
    names(items)
}

//! `policy search-eval CASES --policy F --registry F [--mode M] [--half H] [--format json]`

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use toolpolicy::chars::escape;
use toolpolicy::runtime::search_eval::{EvalFile, EvalReport, evaluate};

use crate::common::{self, CliError, Format};
use crate::runtime_args::{ContextArgs, EngineArgs, names, session};

#[derive(clap::Args)]
pub struct Args {
    /// The cases file (TOML, or JSON when it ends in `.json`): `[[case]]`
    /// tables of `query` and `expect` (the right tools; empty or absent for a
    /// request no tool can serve), and an optional `[floors]` table
    cases: PathBuf,
    #[command(flatten)]
    files: EngineArgs,
    #[command(flatten)]
    context: ContextArgs,
    /// Run only the cases whose `half` is this (`dev`, `holdout`)
    #[arg(long)]
    half: Option<String>,
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let mut file = read_cases(&args.cases)?;
    if let Some(half) = &args.half {
        file.case
            .retain(|c| c.half.as_deref() == Some(half.as_str()));
        if file.case.is_empty() {
            return Err(CliError::Usage(format!(
                "`{}` has no case with `half = \"{half}\"`",
                args.cases.display()
            )));
        }
    }
    let engine = args.files.load(args.format)?;
    // Checks the mode and the context once, before any case runs.
    session(&engine, &args.context)?;
    let snap = engine.snapshot();
    let registry = snap.registry();
    for (i, case) in file.case.iter().enumerate() {
        for name in &case.expect {
            if registry.get(name).is_none() {
                return Err(CliError::Usage(format!(
                    "case {} (`{}`) expects `{name}`, which the registry does not have",
                    i + 1,
                    case.query
                )));
            }
        }
    }
    let report = evaluate(&engine, &args.context.context(), &file.case, &file.floors)
        .map_err(|e| CliError::Usage(e.to_string()))?;
    match args.format {
        Format::Json => common::print_json(&report)?,
        _ => print!("{}", escape(&human(&report))),
    }
    Ok(if report.failed_floors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn read_cases(path: &Path) -> Result<EvalFile, CliError> {
    let name = path.display();
    let bytes = common::read(path)?;
    let text =
        String::from_utf8(bytes).map_err(|_| CliError::Usage(format!("`{name}` is not UTF-8")))?;
    let text = toolpolicy::input::strip_bom(&text);
    let json = path.extension().is_some_and(|e| e == "json");
    let file: EvalFile = if json {
        serde_json::from_str(text)
            .map_err(|e| CliError::Usage(format!("`{name}` is not a valid cases file: {e}")))?
    } else {
        toml::from_str(text)
            .map_err(|e| CliError::Usage(format!("`{name}` is not a valid cases file: {e}")))?
    };
    if file.case.is_empty() {
        return Err(CliError::Usage(format!(
            "`{name}` has no cases: add a `[[case]]` table with a `query` for each"
        )));
    }
    Ok(file)
}

fn human(r: &EvalReport) -> String {
    let mut out = format!(
        "cases:              {} answerable, {} no-answer\n",
        r.answerable, r.no_answer
    );
    out += &format!("recall@1:           {:.3}\n", r.recall_at_1);
    out += &format!("recall@4:           {:.3}\n", r.recall_at_4);
    out += &format!("MRR:                {:.3}\n", r.mrr);
    out += &format!("right tool loaded:  {:.3}\n", r.recall_activated);
    out += &format!(
        "loaded per query:   {:.2} (answerable cases)\n",
        r.activated_per_query
    );
    out += &format!(
        "no-answer, nothing loaded: {} of {}\n",
        r.abstained, r.no_answer
    );
    if !r.misses.is_empty() {
        out += &format!("\nmisses ({}):\n", r.misses.len());
    }
    for m in &r.misses {
        let expected = if m.expect.is_empty() {
            "nothing".to_string()
        } else {
            names(m.expect.iter().map(String::as_str))
        };
        out += &format!("  `{}`\n", m.query);
        out += &format!(
            "    expected {expected}{}\n",
            m.rank.map_or(String::new(), |r| format!(" (ranked {r})"))
        );
        out += &format!(
            "    loaded {}; also matching {}\n",
            names(m.activated.iter().map(String::as_str)),
            names(m.matches.iter().take(4).map(String::as_str))
        );
        out += &format!("    why: {}\n", m.reason);
    }
    if !r.failed_floors.is_empty() {
        out += &format!("\nfloors not met: {}\n", r.failed_floors.join(", "));
    }
    out
}

//! `policy search QUERY --policy F --registry F --mode M [--names a,b]`

use std::process::ExitCode;

use toolpolicy::chars::escape;
use toolpolicy::runtime::ActivationResult;

use crate::common::{self, CliError, Format};
use crate::runtime_args::{ContextArgs, EngineArgs, names, session};

#[derive(clap::Args)]
pub struct Args {
    /// What the model searched for (may be empty with `--names`)
    query: String,
    #[command(flatten)]
    files: EngineArgs,
    #[command(flatten)]
    context: ContextArgs,
    /// Exact tool names the model asked for, comma-separated
    #[arg(long, value_delimiter = ',')]
    names: Vec<String>,
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let engine = args.files.load(args.format)?;
    let result = session(&engine, &args.context)?
        .search(&engine, &args.query, &args.names)
        .map_err(|e| CliError::Usage(e.to_string()))?;
    match args.format {
        Format::Json => common::print_json(&result)?,
        _ => print!("{}", escape(&human(&result))),
    }
    Ok(ExitCode::SUCCESS)
}

fn human(result: &ActivationResult) -> String {
    let list = |v: &[String]| names(v.iter().map(String::as_str));
    let mut out = format!("activated:          {}\n", list(&result.activated));
    out += &format!("already active:     {}\n", list(&result.already_active));
    out += &format!("unavailable:        {}\n", list(&result.unavailable));
    if !result.over_limit.is_empty() {
        out += &format!("over the limit:     {}\n", list(&result.over_limit));
    }
    out += &format!("other matches:      {}\n", list(&result.matches));
    out += &format!("remaining deferred: {}\n", result.remaining_deferred);
    out += &format!("\nthe model reads:\n{}\n", indent(&result.text));
    out
}

pub fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

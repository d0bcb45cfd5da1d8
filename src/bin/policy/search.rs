//! `policy search QUERY --policy F --registry F --mode M [--names a,b]`

use std::process::ExitCode;

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
        _ => {
            let list = |v: &[String]| names(v.iter().map(String::as_str));
            println!("activated:          {}", list(&result.activated));
            println!("already active:     {}", list(&result.already_active));
            println!("unavailable:        {}", list(&result.unavailable));
            if !result.over_limit.is_empty() {
                println!("over the limit:     {}", list(&result.over_limit));
            }
            println!("other matches:      {}", list(&result.matches));
            println!("remaining deferred: {}", result.remaining_deferred);
            println!("\nthe model reads:\n{}", indent(&result.text));
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

//! `policy`: check, explain, format and test tool-exposure policies, and run the
//! runtime's plans, searches and replays from the command line.
//!
//! A thin client of the library: each subcommand is one file with its own
//! arguments; every command returns a `Result`, and exit codes are decided here.

mod check;
mod common;
mod explain;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use common::{CliError, Format};

#[derive(Parser)]
#[command(
    name = "policy",
    version,
    about = "Tool-exposure policies for LLM agent runtimes"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Parse and lint policy files (a folder means every `*.policy` in it)
    Check(check::Args),
    /// Why an item is active, deferred or hidden
    Explain(explain::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check(a) => check::run(a),
        Command::Explain(a) => explain::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(e.exit_code())
        }
    }
}

//! `policy`: check, explain, format and test tool-exposure policies, and run the
//! runtime's plans, searches and replays from the command line.
//!
//! A thin client of the library: each subcommand is one file with its own
//! arguments; every command returns a `Result`, and exit codes are decided here.

/// `print!` and `println!` for every subcommand: standard output closed early
/// (`policy plan ... | head -1`) ends the command with an error and exit code
/// 2, where the standard macros would panic.
macro_rules! print {
    ($($arg:tt)*) => {
        $crate::common::write_stdout(format_args!($($arg)*))
    };
}

macro_rules! println {
    () => {
        $crate::common::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::common::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

mod audit_args;
mod check;
mod common;
mod coverage;
mod diff;
mod explain;
#[cfg(feature = "gateway")]
mod export;
mod files;
mod fmt;
#[cfg(feature = "gateway")]
mod gateway;
mod learn;
mod line_diff;
mod lock;
mod lsp;
mod matrix;
mod measure;
mod plan;
#[cfg(feature = "gateway")]
mod registry;
mod replay;
mod report;
mod runtime_args;
mod search;
mod search_eval;
mod test;

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
    /// Why an item is active, deferred or hidden; with a registry and no item, the decision matrix
    Explain(explain::Args),
    /// Rewrite policy files in canonical form (`--check` shows the diff instead)
    Fmt(fmt::Args),
    /// Run `*.test.toml` expectation files against their policies
    Test(test::Args),
    /// The first turn's plan: declared, deferred and hidden tools, catalog, skills, tokens
    Plan(plan::Args),
    /// What a search would activate
    Search(search::Args),
    /// Score the search on a file of queries with their right tools (recall, MRR, abstention)
    SearchEval(search_eval::Args),
    /// Replay a chat scenario (JSON) step by step
    Replay(replay::Args),
    /// Per mode: the first turn's tools and tokens, against every visible tool declared and against no policy
    Measure(measure::Args),
    /// What audit logs show: empty searches, search misses, tools to declare or defer, refusals
    Report(report::Args),
    /// Learn search terms from audit logs: queries that found nothing fitting, then the deferred tool used
    Learn(learn::Args),
    /// An MCP server on standard input/output that puts the servers of a servers file behind a policy
    #[cfg(feature = "gateway")]
    Gateway(Box<gateway::Args>),
    /// Start the servers of a servers file and write the registry the gateway would serve
    #[cfg(feature = "gateway")]
    Registry(registry::Args),
    /// What a change of policy changes: every tool and skill decided under both, only what differs
    Diff(diff::Args),
    /// Write the policy into an MCP client's own settings (Claude Code, Codex, Gemini CLI, opencode...), with what the client cannot hold
    #[cfg(feature = "gateway")]
    Export(export::Args),
    /// Write the lock of approved tool definitions the policy names, or check the registry against it
    Lock(lock::Args),
    /// A language server on standard input/output for `.policy` files: diagnostics, hover, completion, formatting, quick fixes
    Lsp(lsp::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check(a) => check::run(a),
        Command::Explain(a) => explain::run(a),
        Command::Fmt(a) => fmt::run(a),
        Command::Test(a) => test::run(a),
        Command::Plan(a) => plan::run(a),
        Command::Search(a) => search::run(a),
        Command::SearchEval(a) => search_eval::run(a),
        Command::Replay(a) => replay::run(a),
        Command::Measure(a) => measure::run(a),
        Command::Report(a) => report::run(a),
        Command::Learn(a) => learn::run(a),
        #[cfg(feature = "gateway")]
        Command::Gateway(a) => gateway::run(*a),
        #[cfg(feature = "gateway")]
        Command::Registry(a) => registry::run(a),
        Command::Diff(a) => diff::run(a),
        #[cfg(feature = "gateway")]
        Command::Export(a) => export::run(a),
        Command::Lock(a) => lock::run(a),
        Command::Lsp(a) => lsp::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{}", toolpolicy::chars::escape(&e.to_string()));
            ExitCode::from(e.exit_code())
        }
    }
}

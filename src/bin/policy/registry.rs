//! `policy registry --servers F [--out F] [--start-timeout SECS]`
//!
//! Starts the servers of a servers file as `policy gateway` does and writes
//! the joined registry it would serve (`SERVER__tool` names, each tool's
//! `source`, its definition as the server gave it): the file `check
//! --registry`, `explain`, `plan`, `search`, `measure` and test files read.
//! A server that does not start fails the command and nothing is written:
//! a registry without its tools would make every rule naming them look wrong.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use toolpolicy::Registry;
use toolpolicy::gateway::{Started, catalog, log};

use crate::common::CliError;
use crate::gateway::{load_servers, seconds};

#[derive(clap::Args)]
pub struct Args {
    /// The servers file, as `policy gateway` reads it
    #[arg(long)]
    servers: PathBuf,
    /// Write the registry to this file instead of standard output
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Seconds a server may take to start and list its tools
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    start_timeout: f64,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let registry = start_and_list(&args.servers, args.start_timeout)?;
    let text = serde_json::to_string_pretty(&catalog::to_document(&registry))
        .map_err(|e| CliError::Usage(e.to_string()))?;
    match &args.out {
        Some(path) => {
            std::fs::write(path, format!("{text}\n"))
                .map_err(|e| CliError::Usage(format!("cannot write `{}`: {e}", path.display())))?;
            eprintln!(
                "note: wrote {} tools to `{}`",
                registry.len(),
                path.display()
            );
        }
        None => println!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// Starts the servers of a servers file as the gateway does, lists their
/// tools, stops them, and returns the joined registry the gateway would
/// serve; a server that does not start is an error naming it.
pub fn start_and_list(servers: &Path, start_timeout: f64) -> Result<Registry, CliError> {
    let servers = load_servers(servers)?;
    let timeout = seconds("start-timeout", start_timeout)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Usage(format!("cannot start the async runtime: {e}")))?;
    let started = runtime.block_on(async {
        let started = Started::start(servers, timeout).await;
        started.stop().await;
        started
    });
    log::flush(Duration::from_secs(1));
    runtime.shutdown_background();
    let mut failed = Vec::new();
    for (child, result) in started.children.iter().zip(&started.report) {
        match result {
            Ok(n) => eprintln!("note: server `{}` started with {n} tools", child.name()),
            Err(e) => failed.push(e.clone()),
        }
    }
    if !failed.is_empty() {
        return Err(CliError::Usage(format!(
            "no registry written: {}",
            failed.join("; ")
        )));
    }
    let built = started.catalog();
    for w in &built.warnings {
        eprintln!("warning: {w}");
    }
    Ok(built.registry)
}

//! `policy lsp`: the library's language server on standard input/output
//! (docs/editor.md).

use std::process::ExitCode;

use crate::common::CliError;

#[derive(clap::Args)]
pub struct Args {
    /// Accepted for clients that pass it: standard input/output is the only transport
    #[arg(long)]
    stdio: bool,
}

pub fn run(_args: Args) -> Result<ExitCode, CliError> {
    // Without `shutdown` before `exit`, the protocol asks for exit code 1.
    match toolpolicy::lsp::serve_stdio() {
        Ok(true) => Ok(ExitCode::SUCCESS),
        Ok(false) => Ok(ExitCode::from(1)),
        Err(e) => Err(CliError::Usage(e.to_string())),
    }
}

//! Running the `policy` binary as a user does, from the project's root.

use std::path::Path;
use std::process::{Command, Output};

pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `policy ARGS...` without colour and returns what it did.
pub fn policy(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_policy"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .expect("policy runs")
}

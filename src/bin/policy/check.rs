//! `policy check PATH... [--registry F] [--skills F] [--deny-warnings]`

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use toolpolicy::Policy;
use toolpolicy::diag::{Severity, SourceFile};

use crate::common::{self, CliError, Format};

#[derive(clap::Args)]
pub struct Args {
    /// Policy files, or folders holding `*.policy` files
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// A tool registry (JSON) to check selectors against
    #[arg(long)]
    registry: Option<PathBuf>,
    /// A skill list (JSON) to check `skill:` selectors against
    #[arg(long)]
    skills: Option<PathBuf>,
    /// Fail on warnings as well as errors
    #[arg(long)]
    deny_warnings: bool,
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

/// Every `*.policy` file a path names, sorted so that output is stable.
pub fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, CliError> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found = Vec::new();
            collect(p, &mut found)?;
            found.sort();
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), CliError> {
    let entries = std::fs::read_dir(dir).map_err(|e| CliError::Io(dir.to_path_buf(), e))?;
    for entry in entries {
        let path = entry
            .map_err(|e| CliError::Io(dir.to_path_buf(), e))?
            .path();
        if path.is_dir() {
            collect(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "policy") {
            out.push(path);
        }
    }
    Ok(())
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let registry = common::load_registry(args.registry.as_deref())?;
    let skills = common::load_skills(args.skills.as_deref())?;
    let files = expand(&args.paths)?;
    if files.is_empty() {
        return Err(CliError::Usage("no `*.policy` files found".into()));
    }
    let mut all_json = Vec::new();
    let (mut errors, mut warnings) = (0usize, 0usize);
    for path in &files {
        let bytes = common::read(path)?;
        let name = path.display().to_string();
        let (source, diags) = match std::str::from_utf8(&bytes) {
            Ok(text) => {
                let source = SourceFile::new(name, text);
                let (policy, mut diags) = Policy::parse_with_diagnostics(source.clone());
                if !diags.iter().any(|d| d.severity == Severity::Error) {
                    diags.extend(toolpolicy::lint::lint(
                        &policy,
                        registry.as_ref(),
                        skills.as_ref(),
                    ));
                }
                (source, diags)
            }
            Err(_) => match Policy::from_bytes(name, &bytes) {
                Err(e) => (e.source, e.diagnostics),
                Ok(_) => continue,
            },
        };
        errors += diags
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count();
        warnings += diags
            .iter()
            .filter(|d| d.severity == Severity::Warning)
            .count();
        match args.format {
            Format::Json => all_json.extend(
                diags
                    .iter()
                    .map(|d| toolpolicy::render::to_json(&source, d)),
            ),
            f => print!("{}", common::render(f, &source, &diags)),
        }
    }
    match args.format {
        Format::Json => common::print_json(&serde_json::json!({
            "diagnostics": all_json,
            "errors": errors,
            "warnings": warnings,
        }))?,
        Format::Human => {
            let files_word = if files.len() == 1 { "file" } else { "files" };
            println!(
                "checked {} {files_word}: {errors} error{}, {warnings} warning{}",
                files.len(),
                if errors == 1 { "" } else { "s" },
                if warnings == 1 { "" } else { "s" }
            );
        }
        Format::Plain => {}
    }
    let fail = errors > 0 || (args.deny_warnings && warnings > 0);
    Ok(if fail {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

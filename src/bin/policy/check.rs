//! `policy check PATH... [--registry F] [--skills F] [--max-tokens N] [--deny-warnings]`
//!
//! Exit codes (docs/cli.md): 1 when a file has an error (or a warning, with
//! `--deny-warnings`), 2 on a usage or I/O error, 0 otherwise.

use std::path::PathBuf;
use std::process::ExitCode;

use toolpolicy::Policy;
use toolpolicy::diag::{Severity, SourceFile};

use crate::common::{self, CliError, Format};

#[derive(clap::Args)]
pub struct Args {
    /// Policy files, or folders (every `*.policy` directly in them)
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// A tool registry (JSON): check selectors against it, decide shadowing
    /// tool by tool, and measure each mode's first turn
    #[arg(long)]
    registry: Option<PathBuf>,
    /// A skill list (JSON) to check `skill:` selectors against
    #[arg(long)]
    skills: Option<PathBuf>,
    /// With `--registry`: warn about a mode whose first turn declares more tokens
    #[arg(long, value_name = "N", requires = "registry")]
    max_tokens: Option<u64>,
    /// The runtime supplies the engine's own search tool, as `policy gateway`
    /// and the Node module do: the first name a `search` statement gives needs
    /// no registry entry. Implied when that name is `tool_search`
    #[arg(long)]
    engine_tools: bool,
    /// Fail on warnings as well as errors
    #[arg(long)]
    deny_warnings: bool,
    /// Output format
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let registry = common::read_registry(args.registry.as_deref())?;
    let skills = common::read_skills(args.skills.as_deref())?;
    let files = crate::files::expand(&args.paths, ".policy")?;
    if files.is_empty() {
        return Err(CliError::Usage("no `*.policy` files found".into()));
    }
    let mut all_json = Vec::new();
    // Whether a token figure was shown, to say once what it is.
    let mut budgets = false;
    let (mut errors, mut warnings, mut omitted) = (0usize, 0usize, 0usize);
    // The registry's and skill list's own findings, once whatever the files.
    let lists = [
        (
            args.registry.as_deref(),
            registry.as_ref().map(toolpolicy::lint::registry),
        ),
        (
            args.skills.as_deref(),
            skills.as_ref().map(|s| s.warnings().to_vec()),
        ),
    ];
    for (path, found) in lists {
        let (Some(path), Some(found)) = (path, found) else {
            continue;
        };
        warnings += found.len();
        match args.format {
            Format::Json => {
                all_json.extend(found.iter().map(|w| common::load_warning_json(path, w)))
            }
            _ => print!("{}", common::load_warnings(path, &found)),
        }
    }
    for path in &files {
        let bytes = common::read(path)?;
        let name = path.display().to_string();
        let (source, diags) = match std::str::from_utf8(&bytes) {
            Ok(text) => {
                let source = SourceFile::new(name, text);
                let options = toolpolicy::lint::Options {
                    registry: registry.as_ref(),
                    skills: skills.as_ref(),
                    max_tokens: args.max_tokens,
                    engine_search: args.engine_tools,
                };
                let diags = toolpolicy::lint::diagnose(&source, path, &options);
                (source, diags)
            }
            Err(_) => match Policy::from_bytes(name, &bytes) {
                Err(e) => (e.source, e.diagnostics),
                Ok(_) => continue,
            },
        };
        budgets |= diags
            .iter()
            .any(|d| d.code == toolpolicy::diag::Code::TokenBudget);
        let file_errors = diags
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count();
        let file_warnings = diags.len() - file_errors;
        errors += file_errors;
        warnings += file_warnings;
        match args.format {
            Format::Json => {
                let shown = toolpolicy::render::to_json_shown(&source, &diags);
                omitted += diags.len() - shown.len();
                all_json.extend(
                    shown
                        .into_iter()
                        .map(|d| serde_json::to_value(d).unwrap_or_default()),
                );
            }
            f => print!("{}", common::render(f, &source, &diags)),
        }
        if args.format == Format::Human && files.len() > 1 {
            let status = if diags.is_empty() {
                "ok".to_string()
            } else {
                counts(file_errors, file_warnings)
            };
            println!("{}: {status}", toolpolicy::chars::escape(&source.name));
        }
    }
    if budgets && args.format != Format::Json {
        println!("note: {}", toolpolicy::runtime::TOKENS_NOTE);
    }
    match args.format {
        Format::Json => common::print_json(&serde_json::json!({
            "diagnostics": all_json,
            "errors": errors,
            "warnings": warnings,
            // Diagnostics past the per-file limit: counted above, not listed.
            "omitted": omitted,
        }))?,
        Format::Human => {
            let files_word = if files.len() == 1 { "file" } else { "files" };
            println!(
                "checked {} {files_word}: {}",
                files.len(),
                counts(errors, warnings)
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

fn counts(errors: usize, warnings: usize) -> String {
    format!(
        "{errors} error{}, {warnings} warning{}",
        if errors == 1 { "" } else { "s" },
        if warnings == 1 { "" } else { "s" }
    )
}

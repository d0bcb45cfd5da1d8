//! `policy fmt [--check | --stdout] PATH...`
//!
//! Rewrites each file in its canonical form (see `toolpolicy::format`). With
//! `--check` nothing is written: the diff is shown and the command fails when a
//! file would change. With `--stdout` the formatted text is printed instead of
//! written. `-` reads a policy from standard input and prints it formatted
//! (with `--check`, only the diff). With `--format json` standard output is one
//! JSON document, the formatted text included. A file with errors is never
//! formatted: its diagnostics are shown instead.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::Serialize;
use toolpolicy::Policy;
use toolpolicy::chars::escape;
use toolpolicy::format::{FormatError, format};

use crate::common::{self, CliError, Format};

#[derive(clap::Args)]
pub struct Args {
    /// Policy files, folders (every `*.policy` directly in them), or `-` for
    /// standard input
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Write nothing: show what would change and exit 1 if anything would
    #[arg(long, conflicts_with = "stdout")]
    check: bool,
    /// Print the formatted text instead of rewriting the files
    #[arg(long)]
    stdout: bool,
    /// Output format
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

#[derive(Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Status {
    Unchanged,
    Reformatted,
    WouldReformat,
    Invalid,
}

#[derive(Serialize)]
struct FileReport {
    file: String,
    status: Status,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    diagnostics: Vec<toolpolicy::render::JsonDiagnostic>,
    /// The formatted text, for `-` and `--stdout`.
    #[serde(skip_serializing_if = "Option::is_none")]
    formatted: Option<String>,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let stdin = Path::new("-");
    let mut paths = Vec::new();
    for p in &args.paths {
        if p == stdin {
            paths.push(p.clone());
        } else {
            paths.extend(crate::files::expand(std::slice::from_ref(p), ".policy")?);
        }
    }
    if paths.is_empty() {
        return Err(CliError::Usage("no `*.policy` files found".into()));
    }
    let mut reports = Vec::new();
    for path in &paths {
        let (name, bytes) = if path == stdin {
            let buf = toolpolicy::input::read_from(std::io::stdin().lock())
                .map_err(|e| CliError::Io(path.clone(), e))?;
            ("<stdin>".to_string(), buf)
        } else {
            (path.display().to_string(), common::read(path)?)
        };
        let result = match std::str::from_utf8(&bytes) {
            Ok(text) => format(&name, text).map(|f| (text.to_string(), f)),
            // Not UTF-8: `from_bytes` says so with a position.
            Err(_) => Err(match Policy::from_bytes(name.as_str(), &bytes) {
                Err(e) => FormatError::Invalid(e),
                Ok(_) => FormatError::Unfaithful {
                    formatted: String::new(),
                    reason: "the file is not UTF-8".into(),
                },
            }),
        };
        let (text, formatted) = match result {
            Ok(pair) => pair,
            Err(FormatError::Invalid(e)) => {
                if args.format != Format::Json {
                    eprint!("{}", common::render(args.format, &e.source, &e.diagnostics));
                    eprintln!("{}: not formatted, it has errors", escape(&name));
                }
                reports.push(FileReport {
                    file: name,
                    status: Status::Invalid,
                    diagnostics: toolpolicy::render::to_json_shown(&e.source, &e.diagnostics),
                    formatted: None,
                });
                continue;
            }
            Err(e @ FormatError::Unfaithful { .. }) => {
                return Err(CliError::Usage(format!("{name}: {e}")));
            }
        };
        let changed = formatted != text;
        // `-` prints the formatted text, except under `--check`, which only
        // tells (a pre-commit hook pipes the buffer and reads the exit code).
        let mut printed = None;
        let status = if !args.check && (path == stdin || args.stdout) {
            // In JSON the text goes into the report: one document on stdout.
            if args.format == Format::Json {
                printed = Some(formatted);
            } else {
                print!("{formatted}");
            }
            if changed {
                Status::Reformatted
            } else {
                Status::Unchanged
            }
        } else if !changed {
            Status::Unchanged
        } else if args.check {
            if args.format != Format::Json {
                let color = args.format == Format::Human && common::color();
                print!(
                    "{}",
                    crate::line_diff::unified(&escape(&name), &text, &formatted, color)
                );
            }
            Status::WouldReformat
        } else {
            std::fs::write(path, &formatted).map_err(|e| CliError::Io(path.clone(), e))?;
            Status::Reformatted
        };
        reports.push(FileReport {
            file: name,
            status,
            diagnostics: Vec::new(),
            formatted: printed,
        });
    }
    let count = |s: Status| reports.iter().filter(|r| r.status == s).count();
    let (invalid, would) = (count(Status::Invalid), count(Status::WouldReformat));
    match args.format {
        Format::Json => common::print_json(&serde_json::json!({
            "files": reports,
            "reformatted": count(Status::Reformatted),
            "would_reformat": would,
            "unchanged": count(Status::Unchanged),
            "invalid": invalid,
        }))?,
        _ if !args.check && (args.stdout || paths.iter().any(|p| p == stdin)) => {}
        _ => {
            let files = |n: usize| if n == 1 { "file" } else { "files" };
            let total = reports.len();
            if invalid > 0 {
                eprintln!(
                    "{invalid} {} not formatted: fix the errors first",
                    files(invalid)
                );
            }
            if args.check {
                if would == 0 && invalid == 0 {
                    eprintln!("{total} {} already formatted", files(total));
                } else if would > 0 {
                    eprintln!(
                        "{would} of {total} {} would be reformatted; run `policy fmt` on them",
                        files(total)
                    );
                }
            } else {
                let done = count(Status::Reformatted);
                eprintln!(
                    "{done} {} reformatted, {} already formatted",
                    files(done),
                    count(Status::Unchanged)
                );
            }
        }
    }
    Ok(if invalid > 0 || would > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

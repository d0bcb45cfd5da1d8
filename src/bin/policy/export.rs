//! `policy export --to CLIENT --policy F --servers F [--registry F] [--mode M]... [--fidelity hide|declare] [--out F] [--check F] [--format human|json]`
//!
//! Writes the policy into a client's own settings (toolpolicy::export): the
//! files on standard output (or merged into `--out`), the fidelity report on
//! standard error (`--format json`: one JSON document on standard output).
//! `--check F` writes nothing and exits 1 with a diff when F is not what
//! the export would write. Exit 2 on usage and I/O errors.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use toolpolicy::export::{self, Export, Fidelity, FileOut};

use crate::common::{self, CliError, Format};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum FidelityArg {
    /// A deferred tool the client cannot defer is left out
    #[default]
    Hide,
    /// A deferred tool the client cannot defer is declared
    Declare,
}

#[derive(clap::Args)]
#[command(
    after_help = "Clients: claude-code, codex, gemini-cli, qwen-code, opencode, vscode, goose, zed.

Examples:
  policy export --to codex --policy policies/gateway.policy --servers examples/gateway/servers.json --registry examples/gateway/registry.json
      prints .codex/config.toml; the fidelity report on standard error
  policy export --to opencode --policy examples/gateway/modes.policy --servers examples/gateway/servers.json --registry examples/gateway/registry.json --out opencode.json
      merges into opencode.json, one agent per mode, every other key and comment kept
  policy export --to claude-code ... --mode work --check .
      exits 1 with a diff when .mcp.json or .claude/settings.json no longer match the policy"
)]
pub struct Args {
    /// The client: claude-code, codex, gemini-cli, qwen-code, opencode, vscode, goose, zed
    #[arg(long, value_name = "CLIENT")]
    to: String,
    /// The policy file
    #[arg(long)]
    policy: PathBuf,
    /// The servers file, as `policy gateway` reads it: the client's server entries
    #[arg(long)]
    servers: PathBuf,
    /// The tools the servers list, as `policy registry` writes them; without it the servers are started and listed
    #[arg(long)]
    registry: Option<PathBuf>,
    /// A mode to export (repeatable); without it every mode the policy declares, or no mode
    #[arg(long = "mode", value_name = "M")]
    modes: Vec<String>,
    /// A flag the runtime would set (repeatable)
    #[arg(long = "flag", value_name = "X")]
    flags: Vec<String>,
    /// What becomes of a deferred tool where the client cannot defer
    #[arg(long, value_enum, default_value_t)]
    fidelity: FidelityArg,
    /// Merge into this settings file (a folder for a client of several files), keeping every key the export does not own
    #[arg(long, value_name = "F", conflicts_with = "check")]
    out: Option<PathBuf>,
    /// Write nothing: exit 1 with a diff when F (a folder for a client of several files) is not what the export writes
    #[arg(long, value_name = "F")]
    check: Option<PathBuf>,
    /// Without `--registry`: seconds a server may take to start and list its tools
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    start_timeout: f64,
    /// Output format
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

/// Where each file of an export goes under `target`: the file itself for a
/// client of one file (unless `target` is a folder), else the client's
/// paths under the folder.
fn targets(files: &[FileOut], target: &Path) -> Result<Vec<PathBuf>, CliError> {
    if target.is_dir() {
        return Ok(files.iter().map(|f| target.join(&f.path)).collect());
    }
    match files {
        [_] => Ok(vec![target.to_path_buf()]),
        _ => Err(CliError::Usage(format!(
            "`{}` is not a folder: this client's export is {} files ({}); give the folder they go under",
            target.display(),
            files.len(),
            files
                .iter()
                .map(|f| f.path.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

fn existing(path: &Path) -> Result<String, CliError> {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map_err(|_| CliError::Usage(format!("`{}` is not UTF-8", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(CliError::Io(path.to_path_buf(), e)),
    }
}

fn render(file: &FileOut, path: &Path, old: &str) -> Result<String, CliError> {
    file.render(old)
        .map_err(|e| CliError::Usage(format!("`{}`: {e}", path.display())))
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let policy = common::load_policy(&args.policy, args.format)?;
    let text = existing(&args.servers)?;
    let dir = args.servers.parent().map(PathBuf::from).unwrap_or_default();
    let (servers, warnings) = export::read_servers(&text, &dir).map_err(|e| {
        CliError::Usage(format!(
            "`{}` is not a valid servers file:\n{e}",
            args.servers.display()
        ))
    })?;
    for w in warnings {
        eprintln!("warning: `{}`: {w}", args.servers.display());
    }
    let registry = match &args.registry {
        Some(path) => common::load_registry(Some(path))?.expect("a path was given"),
        None => crate::registry::start_and_list(&args.servers, args.start_timeout)?,
    };
    let fidelity = match args.fidelity {
        FidelityArg::Hide => Fidelity::Hide,
        FidelityArg::Declare => Fidelity::Declare,
    };
    let model = export::model(
        &policy,
        &registry,
        servers,
        &args.modes,
        &args.flags,
        fidelity,
    )
    .map_err(CliError::Usage)?;
    let out = export::export(&args.to, &model).map_err(CliError::Usage)?;
    let json = args.format == Format::Json;
    let mut code = ExitCode::SUCCESS;
    let mut written = serde_json::Map::new();
    if let Some(check) = &args.check {
        let mut diffs = String::new();
        for (file, path) in out.files.iter().zip(targets(&out.files, check)?) {
            let old = existing(&path)?;
            let new = render(file, &path, &old)?;
            if old != new {
                let name = path.display().to_string();
                diffs += &crate::line_diff::unified(&name, &old, &new, !json && common::color());
                written.insert(name, serde_json::Value::Bool(false));
            }
        }
        if !diffs.is_empty() {
            code = ExitCode::from(1);
            if !json {
                print!("{diffs}");
                eprintln!(
                    "the exported settings no longer match the policy: run `policy export` with `--out`"
                );
            }
        }
    } else if let Some(target) = &args.out {
        for (file, path) in out.files.iter().zip(targets(&out.files, target)?) {
            let old = existing(&path)?;
            let new = render(file, &path, &old)?;
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent).map_err(|e| CliError::Io(parent.into(), e))?;
            }
            std::fs::write(&path, &new).map_err(|e| CliError::Io(path.clone(), e))?;
            written.insert(path.display().to_string(), serde_json::Value::Bool(true));
        }
    } else {
        print_files(&out, json, &mut written)?;
    }
    if json {
        let key = if args.check.is_some() {
            "differs"
        } else if args.out.is_some() {
            "written"
        } else {
            "files"
        };
        let doc = serde_json::json!({ key: written, "report": out.report });
        common::print_json(&doc)?;
    } else {
        eprint!("{}", toolpolicy::chars::escape(&out.report.human()));
    }
    Ok(code)
}

/// The files on standard output: one as it is, several each under a
/// `==> path <==` line; with `json`, into `files`.
fn print_files(
    out: &Export,
    json: bool,
    files: &mut serde_json::Map<String, serde_json::Value>,
) -> Result<(), CliError> {
    let many = out.files.len() > 1;
    for (i, f) in out.files.iter().enumerate() {
        let text = render(f, Path::new(&f.path), "")?;
        if json {
            files.insert(f.path.clone(), text.into());
        } else {
            if many {
                let gap = if i == 0 { "" } else { "\n" };
                print!("{gap}==> {} <==\n", f.path);
            }
            print!("{text}");
        }
    }
    Ok(())
}

//! What every subcommand shares: output formats, errors and exit codes, and
//! reading policies, registries and skill lists from disk.

use std::fmt;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::ValueEnum;
use toolpolicy::diag::SourceFile;
use toolpolicy::registry::LoadWarning;
use toolpolicy::{Policy, Registry, SkillList};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    /// For people: rustc-like, coloured on a terminal unless NO_COLOR is set
    #[default]
    Human,
    /// One line per finding, no colour: for screen readers and editors
    Plain,
    /// JSON, for scripts and editors
    Json,
}

/// Why a command could not do its job.
#[derive(Debug)]
pub enum CliError {
    /// Bad arguments or input that is not a policy problem: exit 2.
    Usage(String),
    /// A file could not be read: exit 2.
    Io(PathBuf, std::io::Error),
    /// The policy (or another input) has errors, already printed: exit 1.
    Reported,
}

impl CliError {
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Reported => 1,
            CliError::Usage(_) | CliError::Io(..) => 2,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(m) => write!(f, "error: {m}"),
            CliError::Io(p, e) => write!(f, "error: cannot read `{}`: {e}", p.display()),
            CliError::Reported => Ok(()),
        }
    }
}

/// Every file a command reads comes through here, under the library's size cap.
pub fn read(path: &Path) -> Result<Vec<u8>, CliError> {
    toolpolicy::input::read(path).map_err(|e| CliError::Io(path.to_path_buf(), e))
}

/// Writes to standard output; when it is closed or fails, says so and ends
/// the command with exit code 2 (a panic would exit with 101).
pub fn write_stdout(args: fmt::Arguments<'_>) {
    use std::io::Write as _;
    if let Err(e) = std::io::stdout().lock().write_fmt(args) {
        let _ = writeln!(
            std::io::stderr(),
            "error: cannot write to standard output: {e}"
        );
        std::process::exit(2);
    }
}

/// Whether to colour output written to stdout.
pub fn color() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal()
}

/// Renders diagnostics of one file in the chosen format (JSON is handled by callers).
pub fn render(format: Format, file: &SourceFile, diags: &[toolpolicy::diag::Diagnostic]) -> String {
    match format {
        Format::Plain | Format::Json => toolpolicy::render::plain(file, diags),
        Format::Human => toolpolicy::render::human(file, diags, color()),
    }
}

/// Loads a policy and the files it names (its lock, its terms file); its
/// errors are printed (to stderr) and the command fails with 1.
pub fn load_policy(path: &Path, format: Format) -> Result<Policy, CliError> {
    load_policy_with(path, format, false)
}

/// [`load_policy`] for the command that writes the terms file: a terms file
/// that is not there yet is an empty one.
pub fn load_policy_new_terms(path: &Path, format: Format) -> Result<Policy, CliError> {
    load_policy_with(path, format, true)
}

fn load_policy_with(path: &Path, format: Format, new_terms: bool) -> Result<Policy, CliError> {
    let bytes = read(path)?;
    Policy::from_bytes(path.display().to_string(), &bytes)
        .and_then(|mut policy| {
            let terms = policy
                .terms
                .as_ref()
                .filter(|_| new_terms)
                .and_then(|t| toolpolicy::lock::resolve_terms(path, &t.path).ok());
            toolpolicy::lock::attach_with(
                &mut policy,
                path,
                |file| match toolpolicy::input::read(file) {
                    Err(e)
                        if e.kind() == std::io::ErrorKind::NotFound
                            && terms.as_deref() == Some(file) =>
                    {
                        Ok(Vec::new())
                    }
                    other => other,
                },
            )?;
            Ok(policy)
        })
        .map_err(|e| {
            if format == Format::Json {
                let all = &e.diagnostics;
                let diags = toolpolicy::render::to_json_shown(&e.source, all);
                let errors = all
                    .iter()
                    .filter(|d| d.severity == toolpolicy::diag::Severity::Error)
                    .count();
                let doc = serde_json::json!({
                    "diagnostics": diags,
                    "errors": errors,
                    "warnings": all.len() - errors,
                    "omitted": all.len() - diags.len(),
                });
                println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
            } else {
                eprint!("{}", render(format, &e.source, &e.diagnostics));
            }
            CliError::Reported
        })
}

/// Loads a registry; what loads but reads badly is printed to standard error.
pub fn load_registry(path: Option<&Path>) -> Result<Option<Registry>, CliError> {
    let registry = read_registry(path)?;
    if let (Some(path), Some(r)) = (path, &registry) {
        eprint!("{}", load_warnings(path, r.warnings()));
    }
    Ok(registry)
}

/// Loads a registry and leaves its warnings to the caller.
pub fn read_registry(path: Option<&Path>) -> Result<Option<Registry>, CliError> {
    let Some(path) = path else { return Ok(None) };
    let bytes = read(path)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| CliError::Usage(format!("`{}` is not UTF-8", path.display())))?;
    Registry::from_json(&text)
        .map(Some)
        .map_err(|e| CliError::Usage(format!("bad registry `{}`: {e}", path.display())))
}

/// Loads a skill list; what loads but reads badly is printed to standard error.
pub fn load_skills(path: Option<&Path>) -> Result<Option<SkillList>, CliError> {
    let skills = read_skills(path)?;
    if let (Some(path), Some(s)) = (path, &skills) {
        eprint!("{}", load_warnings(path, s.warnings()));
    }
    Ok(skills)
}

/// Loads a skill list and leaves its warnings to the caller.
pub fn read_skills(path: Option<&Path>) -> Result<Option<SkillList>, CliError> {
    let Some(path) = path else { return Ok(None) };
    let bytes = read(path)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| CliError::Usage(format!("`{}` is not UTF-8", path.display())))?;
    SkillList::from_json(&text)
        .map(Some)
        .map_err(|e| CliError::Usage(format!("bad skill list `{}`: {e}", path.display())))
}

/// Registry or skill list warnings, one line each:
/// ``FILE: warning[PL115]: `tools[1].name`: message (help: ...)``.
pub fn load_warnings(path: &Path, warnings: &[LoadWarning]) -> String {
    let file = path.display().to_string();
    let mut out = String::new();
    for w in warnings {
        out += &format!("{file}: warning[{}]: {w}", w.code);
        if let Some(h) = &w.help {
            out += &format!(" (help: {h})");
        }
        out.push('\n');
    }
    toolpolicy::chars::escape(&out).into_owned()
}

/// A registry or skill list warning in `policy check`'s JSON shape; the
/// entry's path stands for its place (line and column say the file's start).
pub fn load_warning_json(path: &Path, w: &LoadWarning) -> serde_json::Value {
    serde_json::json!({
        "code": w.code.as_str(),
        "severity": "warning",
        "message": w.message,
        "file": path.display().to_string(),
        "line": 1,
        "column": 1,
        "path": w.path,
        "help": w.help,
    })
}

/// Prints a value as pretty JSON.
pub fn print_json<T: serde::Serialize>(value: &T) -> Result<(), CliError> {
    let text = serde_json::to_string_pretty(value).map_err(|e| CliError::Usage(e.to_string()))?;
    println!("{text}");
    Ok(())
}

//! `policy learn LOG... --policy F --registry F [--out F] [--min-sessions N]
//! [--format human|json]`
//!
//! Reads audit logs with the library's reader and session reconstruction,
//! and writes (or merges into) the terms file the words of the searches
//! that missed, each of a tool that sessions then loaded or called: see
//! `toolpolicy::terms`. `--format json` prints what the file would get and
//! writes nothing. A terms file already there that is not one is an error
//! with its line and column, and nothing is written. Exit 2 on usage and I/O
//! errors.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::Serialize;
use toolpolicy::audit::learn::{self, Learned};
use toolpolicy::audit::read::{self, BadLine, BadLines, Line};
use toolpolicy::audit::sessions::Sessions;
use toolpolicy::terms::{Taught, TermsFile};

use crate::common::{self, CliError, Format};

#[derive(clap::Args)]
#[command(after_help = "Examples:
  policy learn audit.jsonl --policy team.policy --registry tools.json --out search-terms.toml
      adds to search-terms.toml the queries that two or more sessions searched with, found
      nothing fitting, and then used a deferred tool for
  policy learn audit.jsonl --policy team.policy --registry tools.json
      the same, into the terms file the policy names (`terms = \"search-terms.toml\"`)
  policy learn logs/*.jsonl --policy team.policy --registry tools.json --out t.toml --format json
      prints the terms it would add, and writes nothing")]
pub struct Args {
    /// Audit logs (JSON Lines), in any order: the same logs always give the same file
    #[arg(required = true)]
    logs: Vec<PathBuf>,
    /// The policy the logs were written under: a term is only learnt for a tool it defers
    #[arg(long)]
    policy: PathBuf,
    /// The tool registry: a term is never learnt for a tool it lacks
    #[arg(long)]
    registry: PathBuf,
    /// The terms file to write or add to (its terms and tools are kept); by default the one
    /// the policy names with `terms = "..."`
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// How many different sessions must have followed a query with the same tool
    #[arg(long, value_name = "N", default_value_t = 2)]
    min_sessions: usize,
    /// Output format; `json` prints what would be added and writes nothing
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

#[derive(Serialize)]
struct Term<'a> {
    tool: &'a str,
    term: &'a str,
    sessions: u64,
    /// The terms file did not have it.
    new: bool,
}

#[derive(Serialize)]
struct Output<'a> {
    /// The terms file read, if any.
    file: Option<String>,
    terms: Vec<Term<'a>>,
    sessions: usize,
    bad_lines: u64,
    bad_lines_shown: &'a [BadLine],
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let policy = common::load_policy_new_terms(&args.policy, args.format)?;
    let mut registry = common::load_registry(Some(&args.registry))?.unwrap_or_default();
    toolpolicy::lock::mark(&mut registry, &policy);
    let out = match &args.out {
        Some(out) => Some(out.clone()),
        None => policy_terms_file(&args.policy, &policy)?,
    };
    if out.is_none() && args.format != Format::Json {
        return Err(CliError::Usage(
            "give `--out FILE`, or name the terms file in the policy (`terms = \"search-terms.toml\"`): the terms file to write or add to".into(),
        ));
    }
    let existing = match &out {
        Some(path) => read_terms(path)?,
        None => TermsFile::new(),
    };
    let mut sessions = Sessions::new().keep_lessons();
    // Bad lines come as the files are read: the first by file and line are
    // named, whatever the order of the files.
    let mut bad = BadLines::by_place();
    read::read_logs_by_time(&args.logs, |line| match line {
        Line::Bad(b) => bad.push(b),
        Line::Event(logged) => sessions.read(&logged.event, logged.millis()),
    })
    .map_err(|e| CliError::Io(e.path, e.error))?;
    let learned = learn::learn(&sessions, &policy, &registry, args.min_sessions);
    let count = sessions.totals().sessions;
    finish(&args, out.as_deref(), existing, &learned, count, bad)
}

fn finish(
    args: &Args,
    out: Option<&Path>,
    existing: TermsFile,
    learned: &[Learned],
    sessions: usize,
    bad: BadLines,
) -> Result<ExitCode, CliError> {
    let mut file = existing.clone();
    let terms: Vec<Term<'_>> = learned
        .iter()
        .map(|l| Term {
            tool: &l.tool,
            term: &l.term,
            sessions: l.sessions,
            new: file.teach(&l.tool, &l.term, l.sessions) == Taught::New,
        })
        .collect();
    let shown = bad.shown();
    if args.format == Format::Json {
        return common::print_json(&Output {
            file: out.map(|p| p.display().to_string()),
            terms,
            sessions,
            bad_lines: bad.count(),
            bad_lines_shown: shown,
        })
        .map(|()| ExitCode::SUCCESS);
    }
    let Some(out) = out else {
        return Ok(ExitCode::SUCCESS);
    };
    let shown_path = out.display().to_string();
    let text = file.to_toml_with_counts();
    let unchanged = std::fs::read(out).is_ok_and(|old| old == text.as_bytes());
    if !unchanged {
        std::fs::write(out, &text)
            .map_err(|e| CliError::Usage(format!("cannot write `{shown_path}`: {e}")))?;
    }
    let new = terms.iter().filter(|t| t.new).count();
    let mut by_tool: BTreeMap<&str, usize> = BTreeMap::new();
    for t in terms.iter().filter(|t| t.new) {
        *by_tool.entry(t.tool).or_default() += 1;
    }
    let mut o = String::new();
    for t in &terms {
        let mark = if t.new { "+" } else { " " };
        let n = t.sessions;
        o += &format!(
            "{mark} {}: `{}` ({n} {})\n",
            t.tool,
            t.term,
            if n == 1 { "session" } else { "sessions" }
        );
    }
    o += &format!(
        "{sessions} sessions read; {new} new {} for {} {}, {} taught again; `{shown_path}` {}\n",
        if new == 1 { "term" } else { "terms" },
        by_tool.len(),
        if by_tool.len() == 1 { "tool" } else { "tools" },
        terms.len() - new,
        if unchanged { "unchanged" } else { "written" },
    );
    if bad.count() > 0 {
        o += &format!(
            "warning: {} lines are not events and were skipped:\n",
            bad.count()
        );
        for b in shown {
            o += &format!("  {}:{}: {}\n", b.file, b.line, b.message);
        }
    }
    print!("{}", toolpolicy::chars::escape(&o));
    Ok(ExitCode::SUCCESS)
}

/// The terms file the policy names, relative to its folder.
///
/// The terms file the policy names (`terms = "..."`), where it names one:
/// where `policy learn` writes without `--out`.
fn policy_terms_file(
    path: &Path,
    policy: &toolpolicy::Policy,
) -> Result<Option<PathBuf>, CliError> {
    let Some(setting) = &policy.terms else {
        return Ok(None);
    };
    toolpolicy::lock::resolve_terms(path, &setting.path)
        .map(Some)
        .map_err(CliError::Usage)
}

/// The terms file as it is: empty where there is none yet; an error, with
/// its line and column, where it is there and not a terms file.
fn read_terms(path: &Path) -> Result<TermsFile, CliError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(TermsFile::new()),
        Err(e) => return Err(CliError::Io(path.to_path_buf(), e)),
    };
    let shown = path.display();
    let text = String::from_utf8(bytes)
        .map_err(|_| CliError::Usage(format!("`{shown}` is not UTF-8 text: nothing written")))?;
    TermsFile::parse(&text).map_err(|e| {
        CliError::Usage(format!(
            "{shown}:{}:{}: not a terms file: {}; nothing written",
            e.line, e.column, e.message
        ))
    })
}

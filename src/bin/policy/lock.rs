//! `policy lock --policy F (--registry F | --servers F) [--check] [--out F]`
//!
//! Writes the lock the policy names (or `--out`) from the registry as it is
//! now: every tool's name, source and digest, one entry a line, sorted. With
//! `--servers` the servers are started and listed as `policy registry` and
//! the gateway do. `--check` writes nothing and exits 1 when the registry and
//! the lock differ, naming each added, removed and changed tool and what
//! changed. Exit 2 on usage and I/O errors.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use toolpolicy::lock::{Comparison, Lock, compare};
use toolpolicy::{Policy, Registry};

use crate::common::{self, CliError, Format};

#[derive(clap::Args)]
#[command(after_help = "Examples:
  policy lock --policy examples/locks/team.policy --registry examples/registries/gateway.json
      writes the lock the policy names (`lock = \"tools.lock\"`, beside the policy)
  policy lock --policy examples/locks/team.policy --registry examples/registries/gateway.json --check
      exits 1 naming each tool added, removed or changed since the lock was written
  policy lock --policy team.policy --servers servers.json --check
      starts the servers and compares what they list now")]
pub struct Args {
    /// The policy file; its `lock = "..."` setting names the lock
    #[arg(long)]
    policy: PathBuf,
    /// A tool registry (JSON) to lock
    #[arg(long, required_unless_present = "servers", conflicts_with = "servers")]
    registry: Option<PathBuf>,
    /// A servers file, as `policy gateway` reads it: start the servers and lock what they list
    #[arg(long)]
    servers: Option<PathBuf>,
    /// With `--servers`: seconds a server may take to start and list its tools
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    start_timeout: f64,
    /// Write nothing: exit 1 when the registry and the lock differ, 0 when they agree
    #[arg(long)]
    check: bool,
    /// The lock file, instead of the one the policy names
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Output format
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let target = target(&args)?;
    let registry = match (&args.registry, &args.servers) {
        (Some(path), _) => common::load_registry(Some(path))?.unwrap_or_default(),
        #[cfg(feature = "gateway")]
        (None, Some(servers)) => crate::registry::start_and_list(servers, args.start_timeout)?,
        #[cfg(not(feature = "gateway"))]
        (None, Some(_)) => {
            return Err(CliError::Usage(
                "`--servers` starts servers, which this build of `policy` cannot (it was built without the `gateway` feature); give `--registry FILE`, or install the full command".into(),
            ));
        }
        (None, None) => {
            return Err(CliError::Usage(
                "give `--registry FILE` or `--servers FILE`: the tools to lock".into(),
            ));
        }
    };
    let shown = target.display().to_string();
    // The lock as it is, if there is one: what `--check` compares with, and
    // what a new lock changes.
    let previous = match std::fs::metadata(&target) {
        Ok(_) if args.check => Some(read_lock(&target)?),
        // A lock left broken (a merge conflict in it) is written anew.
        Ok(_) => match read_lock(&target) {
            Ok(lock) => Some(lock),
            Err(e) => {
                eprintln!(
                    "warning: {}; writing it anew",
                    e.to_string().trim_start_matches("error: ")
                );
                None
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !args.check => None,
        Err(e) => return Err(CliError::Io(target.clone(), e)),
    };
    let comparison = previous
        .as_ref()
        .map(|lock| compare(lock, &registry))
        .unwrap_or_else(|| compare(&Lock::default(), &registry));
    if args.check {
        report(&args, &shown, &comparison, &registry, false)?;
        return Ok(if comparison.is_clean() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    let lock = Lock::from_registry(&registry);
    std::fs::write(&target, lock.to_text())
        .map_err(|e| CliError::Usage(format!("cannot write `{shown}`: {e}")))?;
    report(&args, &shown, &comparison, &registry, true)?;
    Ok(ExitCode::SUCCESS)
}

/// The lock file to write or check: `--out`, or the one the policy names,
/// relative to the policy's folder and inside it.
fn target(args: &Args) -> Result<PathBuf, CliError> {
    if let Some(out) = &args.out {
        return Ok(out.clone());
    }
    let bytes = common::read(&args.policy)?;
    let name = args.policy.display().to_string();
    // The policy's errors are its own; the lock need not exist yet, so it
    // is not read here.
    let policy = Policy::from_bytes(name.clone(), &bytes).map_err(|e| {
        eprint!(
            "{}",
            common::render(args.format_for_errors(), &e.source, &e.diagnostics)
        );
        CliError::Usage(format!("`{name}` does not load"))
    })?;
    let Some(setting) = &policy.lock else {
        return Err(CliError::Usage(format!(
            "the policy `{name}` names no lock: add `lock = \"tools.lock\"` to it (the lock is written beside the policy), or give `--out FILE`"
        )));
    };
    toolpolicy::lock::resolve(&args.policy, &setting.path).map_err(|why| {
        CliError::Usage(format!(
            "the lock `{}` that `{name}` names {why}",
            toolpolicy::chars::escape(&setting.path)
        ))
    })
}

impl Args {
    fn format_for_errors(&self) -> Format {
        match self.format {
            Format::Json => Format::Plain,
            f => f,
        }
    }
}

fn read_lock(path: &Path) -> Result<Lock, CliError> {
    let bytes = common::read(path)?;
    Lock::from_bytes(&bytes)
        .map_err(|e| CliError::Usage(format!("`{}` is not a lock: {e}", path.display())))
}

fn report(
    args: &Args,
    lock: &str,
    c: &Comparison,
    registry: &Registry,
    written: bool,
) -> Result<(), CliError> {
    if args.format == Format::Json {
        let mut doc = serde_json::to_value(c).map_err(|e| CliError::Usage(e.to_string()))?;
        if let Some(obj) = doc.as_object_mut() {
            obj.insert("lock".into(), lock.into());
            obj.insert("tools".into(), registry.len().into());
            obj.insert("clean".into(), c.is_clean().into());
            obj.insert("written".into(), written.into());
        }
        return common::print_json(&doc);
    }
    // A first lock adds every tool: the count says it.
    let mut out = if written && c.locked + c.changed.len() + c.moved.len() + c.removed.len() == 0 {
        String::new()
    } else {
        c.to_string()
    };
    let n = registry.len();
    let tools = if n == 1 { "tool" } else { "tools" };
    if written {
        out += &format!("wrote `{lock}`: {n} {tools} locked\n");
    } else if c.is_clean() {
        out += &format!("`{lock}` holds all {n} {tools} as the registry has them\n");
    } else {
        let count = c.added.len() + c.removed.len() + c.changed.len() + c.moved.len();
        out += &format!(
            "`{lock}` differs from the registry in {count} {}: review the changes, then write it again with `policy lock`\n",
            if count == 1 { "tool" } else { "tools" }
        );
    }
    print!("{}", toolpolicy::chars::escape(&out));
    Ok(())
}

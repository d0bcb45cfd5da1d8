//! `policy gateway --policy F --servers F [--mode M] [--bot B] [--flag X]... [--grant SEL]...
//! [--exposure call|list-changed] [--call-tool NAME] [--call-timeout SECS]
//! [--start-timeout SECS] [--dry-run [--format human|json]]`
//!
//! Everything is checked before anything is served: a policy error exits 1,
//! a bad servers file or context exits 2. While serving, standard output
//! carries protocol messages only; everything else goes to standard error.

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::ValueEnum;
use rmcp::ServiceExt as _;
use toolpolicy::gateway::{self, Exposure, Gateway, Options, connection::Connection, dry_run, log};
use toolpolicy::runtime::DEFAULT_CALL_TOOL;

use crate::common::{self, CliError, Format};
use crate::runtime_args::{ContextArgs, require_mode};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
enum ExposureArg {
    /// Fixed tool list; activated tools are called through the call-through tool
    #[default]
    Call,
    /// Activated tools are appended and `notifications/tools/list_changed` sent
    ListChanged,
}

#[derive(clap::Args)]
pub struct Args {
    /// The policy file (re-read when it changes, or on SIGHUP)
    #[arg(long)]
    policy: PathBuf,
    /// The servers file: `{"mcpServers": {NAME: {command, args, env, cwd}}}`, `{url, headers}` for a remote (streamable HTTP) server, or VS Code's `{"servers": ...}`
    #[arg(long)]
    servers: PathBuf,
    /// The context every connection runs in: mode, Bot, flags and runtime
    /// grants (`--grant source:mcp:fs` serves that server's tools alone)
    #[command(flatten)]
    context: ContextArgs,
    /// How activated tools reach the client
    #[arg(long, value_enum, default_value_t)]
    exposure: ExposureArg,
    /// The call-through tool's name
    #[arg(long, value_name = "NAME", default_value = DEFAULT_CALL_TOOL)]
    call_tool: String,
    /// Seconds one forwarded call may take before it fails
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    call_timeout: f64,
    /// Seconds a server may take to start and list its tools
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    start_timeout: f64,
    /// Start the servers, print their tool counts and the first turn's list with its tokens, and exit
    #[arg(long)]
    dry_run: bool,
    /// Output of `--dry-run`
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

/// `--start-timeout` and `--call-timeout` as a duration.
pub fn seconds(flag: &str, secs: f64) -> Result<Duration, CliError> {
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            CliError::Usage(format!(
                "`--{flag}` must be a positive number of seconds, not `{secs}`"
            ))
        })
}

/// Reads a servers file; its warnings go to standard error.
pub fn load_servers(path: &Path) -> Result<Vec<gateway::servers::ServerSpec>, CliError> {
    let text = common::read(path)?;
    let text = String::from_utf8(text)
        .map_err(|_| CliError::Usage(format!("`{}` is not UTF-8", path.display())))?;
    let dir = path.parent().map(PathBuf::from).unwrap_or_default();
    let servers = gateway::servers::parse(&text, &dir).map_err(|problems| {
        let all: Vec<String> = problems.iter().map(ToString::to_string).collect();
        CliError::Usage(format!(
            "`{}` is not a valid servers file:\n{}",
            path.display(),
            all.join("\n")
        ))
    })?;
    for w in &servers.warnings {
        eprintln!("warning: `{}`: {w}", path.display());
    }
    Ok(servers.servers)
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    // Policy errors go to standard error while serving: standard output is the protocol's.
    let format = if args.dry_run {
        args.format
    } else {
        Format::Human
    };
    let policy = common::load_policy(&args.policy, format)?;
    let servers = load_servers(&args.servers)?;
    let options = Options {
        policy_path: args.policy.clone(),
        context: args.context.context(),
        exposure: match args.exposure {
            ExposureArg::Call => Exposure::Call,
            ExposureArg::ListChanged => Exposure::ListChanged,
        },
        call_tool: args.call_tool.clone(),
        call_timeout: seconds("call-timeout", args.call_timeout)?,
        start_timeout: seconds("start-timeout", args.start_timeout)?,
    };
    // Checked before any child starts: a context the policy refuses is a usage error.
    let check = toolpolicy::Engine::new(policy.clone(), Default::default(), Default::default());
    require_mode(&check, &options.context)?;
    check
        .session(options.context.clone())
        .map_err(|e| CliError::Usage(e.to_string()))?;
    drop(check);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Usage(format!("cannot start the async runtime: {e}")))?;
    let served = runtime.block_on(serve(options, policy, servers, args.dry_run, args.format));
    // The last notes, unless nobody reads them.
    log::flush(Duration::from_secs(1));
    // Stopped by a signal, the gateway may still be reading its input on a
    // blocking thread, which dropping the runtime would wait for.
    runtime.shutdown_background();
    served
}

async fn serve(
    options: Options,
    policy: toolpolicy::Policy,
    servers: Vec<gateway::servers::ServerSpec>,
    dry_run: bool,
    format: Format,
) -> Result<ExitCode, CliError> {
    let mut termination = gateway::reload::Termination::catch();
    let hangup = gateway::reload::hangup_signal();
    // A signal while the servers start (up to `--start-timeout`) drops
    // the start: the processes already running are killed with it.
    let (gw, started, events) = tokio::select! {
        started = Gateway::start(options, policy, servers) => started,
        signal = termination.wait() => {
            log::line(format!("note: {signal}: stopping the servers that were starting"));
            return Ok(ExitCode::SUCCESS);
        }
    };
    for (child, result) in gw.children.iter().zip(&started) {
        match result {
            Ok(n) => log::line(format!(
                "note: server `{}` started with {n} tools",
                child.name()
            )),
            Err(e) => log::line(format!("error: {e}")),
        }
    }
    let lints = gw.lint(true);
    if dry_run {
        let _ = lints.await;
        let report = dry_run::report(&gw, &started).map_err(CliError::Usage)?;
        gw.stop().await;
        match format {
            Format::Json => common::print_json(&report)?,
            _ => print!("{}", dry_run::human(&report)),
        }
        return Ok(if report.failed {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        });
    }
    // What the dry run notes of the list, said once at start too.
    if let Ok(report) = dry_run::report(&gw, &started) {
        for name in &report.deprecated {
            log::line(format!(
                "note: `{name}` is listed, and its title or description says it is deprecated"
            ));
        }
    }
    if std::io::stdin().is_terminal() {
        log::line(
            "note: serving MCP on standard input and output: an MCP client starts this command \
             and speaks to it; press Ctrl-C to stop"
                .to_string(),
        );
    }
    tokio::spawn(Arc::clone(&gw).follow(events));
    tokio::spawn(gateway::reload::watch(Arc::clone(&gw), hangup));
    let connection =
        Connection::new(Arc::clone(&gw), gw.options.context.clone()).map_err(CliError::Usage)?;
    let signalled = tokio::select! {
        running = connection.serve(rmcp::transport::stdio()) => {
            let running = match running {
                Ok(running) => running,
                Err(e) => {
                    stop(&gw, &mut termination).await;
                    return Err(CliError::Usage(format!("the client did not connect: {e}")));
                }
            };
            tokio::spawn(gateway::connection::tell_reloads(
                Arc::clone(&gw),
                running.peer().clone(),
            ));
            tokio::select! {
                _ = running.waiting() => None,
                signal = termination.wait() => Some(signal),
            }
        }
        signal = termination.wait() => Some(signal),
    };
    if let Some(signal) = signalled {
        log::line(format!(
            "note: {signal}: stopping the servers (a second signal kills them)"
        ));
    }
    stop(&gw, &mut termination).await;
    Ok(ExitCode::SUCCESS)
}

/// Stops the servers as MCP asks, which takes a few seconds for one that
/// stays up; a signal meanwhile ends the wait, and the processes still
/// running are killed as the runtime drops them.
async fn stop(gw: &Gateway, termination: &mut gateway::reload::Termination) {
    tokio::select! {
        _ = gw.stop() => {}
        signal = termination.wait() => log::line(format!("note: {signal}: killing the servers")),
    }
}

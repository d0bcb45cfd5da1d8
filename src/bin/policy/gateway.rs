//! `policy gateway --policy F --servers F [--mode M] [--bot B] [--flag X]... [--grant SEL]...
//! [--exposure call|list-changed] [--call-tool NAME] [--call-timeout SECS]
//! [--start-timeout SECS] [--dry-run [--format human|json] [--clients F [--caller NAME]]]
//! [--listen HOST:PORT [--clients F] [--stateless] [--session-idle SECS] [--max-sessions N]
//! [--session-key-file F] [--session-max-age SECS]
//! [--body-timeout SECS] [--allow-origin O]... [--allow-host H]... [--max-concurrent N]
//! [--max-concurrent-per-caller N] [--drain-timeout SECS] [--threads N]]`
//!
//! Everything is checked before anything is served: a policy error exits 1,
//! a bad servers file or context, or an address it cannot listen on, exits
//! 2. On standard input, standard output carries protocol messages only;
//! everything else goes to standard error.

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::ValueEnum;
use rmcp::ServiceExt as _;
use toolpolicy::gateway::{self, Exposure, Gateway, Options, connection::Connection, dry_run, log};
use toolpolicy::runtime::DEFAULT_CALL_TOOL;

use crate::audit_args::{self, AuditArgs};
use crate::common::{self, CliError, Format};
use crate::runtime_args::{ContextArgs, require_mode};

#[path = "gateway/listening.rs"]
mod listening;
pub use listening::seconds;
use listening::{ListenArgs, Listening, bind, threads};

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
    /// The call-through tool's name: a valid MCP tool name (1 to 128 ASCII
    /// letters, digits, `_`, `-` and `.`) that is neither the search tool's
    /// nor a server tool's
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
    /// With `--dry-run --clients F`: report this caller alone (its name in
    /// the file, or `jwt.defaults`) instead of every caller
    #[arg(long, value_name = "NAME", requires = "clients", requires = "dry_run")]
    caller: Option<String>,
    #[command(flatten)]
    audit: AuditArgs,
    #[command(flatten)]
    listen: ListenArgs,
}

/// What `--dry-run` reports, and how.
struct DryRun {
    format: Format,
    /// With a clients file: each caller reported (its name, where the
    /// file names it, its context), in file order.
    callers: Option<Vec<(String, String, toolpolicy::Context)>>,
}

/// The callers of a clients file a dry run reports: every one, or the one
/// `--caller` names (its name in the file, or where the file names it).
fn dry_run_callers(
    clients: &gateway::clients::Clients,
    base: &toolpolicy::Context,
    only: Option<&str>,
) -> Result<Vec<(String, String, toolpolicy::Context)>, CliError> {
    let all: Vec<(String, String, toolpolicy::Context)> = clients
        .contexts()
        .into_iter()
        .map(|(at, o)| {
            let name = at.strip_prefix("clients.").unwrap_or(&at).to_string();
            (name, at, o.apply(base))
        })
        .collect();
    let Some(only) = only else {
        return Ok(all);
    };
    let picked: Vec<_> = all
        .iter()
        .filter(|(name, at, _)| name == only || at == only)
        .cloned()
        .collect();
    if picked.is_empty() {
        let names: Vec<String> = all.iter().map(|(n, ..)| format!("`{n}`")).collect();
        return Err(CliError::Usage(format!(
            "`--caller` `{only}` is not a caller of `{}`: its callers are {}",
            clients.path().display(),
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        )));
    }
    Ok(picked)
}

/// The command line's context.
fn options_context(args: &Args) -> toolpolicy::Context {
    args.context.context()
}

/// Reads the clients file and checks each context it names against the
/// policy, before anything is served: a client the policy cannot serve is
/// a usage error naming it.
fn load_clients(
    path: &Path,
    policy: &toolpolicy::Policy,
    base: &toolpolicy::Context,
) -> Result<gateway::clients::Clients, CliError> {
    let clients =
        gateway::clients::Clients::load(path).map_err(|e| CliError::Usage(e.to_string()))?;
    for w in clients.warnings() {
        eprintln!("warning: `{}`: {w}", path.display());
    }
    let engine = toolpolicy::Engine::new(policy.clone(), Default::default(), Default::default());
    let unmoded = gateway::clients::without_mode(
        &clients.contexts(),
        base,
        engine.snapshot().table().modes(),
    );
    if !unmoded.is_empty() {
        let all: Vec<String> = unmoded.iter().map(ToString::to_string).collect();
        return Err(CliError::Usage(format!(
            "`{}`: every caller needs a mode, as `--mode` gives none:\n{}",
            path.display(),
            all.join("\n")
        )));
    }
    if let Some(why) = refused_contexts(&engine, &clients, base).into_iter().next() {
        return Err(CliError::Usage(why));
    }
    Ok(clients)
}

/// Why the policy cannot serve a context the clients file names, one line
/// each (`clients.alice` in `F`: ...).
fn refused_contexts(
    engine: &toolpolicy::Engine,
    clients: &gateway::clients::Clients,
    base: &toolpolicy::Context,
) -> Vec<String> {
    clients
        .contexts()
        .into_iter()
        .filter_map(|(at, overrides)| {
            let e = engine.session(overrides.apply(base)).err()?;
            Some(format!("`{at}` in `{}`: {e}", clients.path().display()))
        })
        .collect()
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
    if let Some(why) = toolpolicy::runtime::tool_name_problem(&args.call_tool) {
        return Err(CliError::Usage(format!(
            "`--call-tool` is not a valid MCP tool name: {why}"
        )));
    }
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
    if args.listen.clients.is_some() && args.listen.listen.is_none() && !args.dry_run {
        return Err(CliError::Usage(
            "`--clients` names who may call a gateway that listens: give `--listen HOST:PORT` too (or `--dry-run`, to see what each caller would be served)".into(),
        ));
    }
    // Checked before any child starts: a context the policy refuses is a
    // usage error. With a clients file, the command line's context is the
    // base of every caller's, and needs no mode where each caller names one.
    let check = toolpolicy::Engine::new(policy.clone(), Default::default(), Default::default());
    if args.listen.clients.is_none() || options.context.mode.is_some() {
        require_mode(&check, &options.context)?;
        check
            .session(options.context.clone())
            .map_err(|e| CliError::Usage(e.to_string()))?;
    }
    drop(check);
    let clients = match &args.listen.clients {
        Some(path) => Some(Arc::new(load_clients(
            path,
            &policy,
            &options_context(&args),
        )?)),
        None => None,
    };
    let dry_run = match (args.dry_run, &clients) {
        (false, _) => None,
        (true, None) => Some(DryRun {
            format: args.format,
            callers: None,
        }),
        (true, Some(clients)) => Some(DryRun {
            format: args.format,
            callers: Some(dry_run_callers(
                clients,
                &options_context(&args),
                args.caller.as_deref(),
            )?),
        }),
    };
    let callers: Option<gateway::CallerContexts> = clients.clone().map(|clients| {
        let base = options_context(&args);
        Arc::new(move || {
            clients
                .contexts()
                .iter()
                .map(|(_, o)| o.apply(&base))
                .collect()
        }) as gateway::CallerContexts
    });
    let listening = match (&args.listen.listen, args.dry_run) {
        (Some(listen), false) => {
            let options = args.listen.options()?;
            let drain = seconds("drain-timeout", args.listen.drain_timeout)?;
            let sockets = bind(listen, clients.is_some())?;
            Some(Listening {
                sockets,
                options,
                clients: clients.clone(),
                public_url: args.listen.public_url.clone(),
                metrics: None,
                drain,
            })
        }
        _ => None,
    };
    // Many clients over HTTP are served on several threads; one client on
    // standard input, on one.
    let runtime = match &listening {
        Some(_) => {
            let workers = threads(args.listen.threads.as_deref())?;
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.worker_threads(workers);
            builder
        }
        None => tokio::runtime::Builder::new_current_thread(),
    }
    .enable_all()
    .build()
    .map_err(|e| CliError::Usage(format!("cannot start the async runtime: {e}")))?;
    // The writer's warnings go through the gateway's own standard error.
    let audit = if args.dry_run {
        None
    } else {
        args.audit.open_with(Arc::new(log::line))
    };
    let mut listening = listening;
    // The listener counts the events for `/metrics` beside the log.
    let metrics = listening
        .as_ref()
        .map(|_| Arc::new(toolpolicy::audit::metrics::Metrics::new()));
    if let (Some(listening), Some(metrics)) = (&mut listening, &metrics) {
        let (metrics, log) = (Arc::clone(metrics), audit.clone());
        listening.metrics = Some(gateway::listen::MetricsPage {
            render: Arc::new(move |open| {
                metrics.set_open_sessions(open);
                if let Some(log) = &log {
                    metrics.set_dropped(log.dropped());
                    metrics.set_write_failures(log.write_failures());
                }
                (metrics.render(), toolpolicy::audit::metrics::CONTENT_TYPE)
            }),
        });
    }
    let hook = toolpolicy::audit::metrics::both(
        audit.as_ref().map(|l| l.hook()),
        metrics.as_ref().map(|m| m.hook()),
    );
    let served = runtime.block_on(async {
        // Log rotation moves the log aside, then sends SIGHUP: the log is
        // opened again at its path (the policy is reloaded too).
        if let Some(audit) = audit.clone() {
            let mut hangup = gateway::reload::hangup_signal();
            tokio::spawn(async move {
                loop {
                    gateway::reload::next_hangup(&mut hangup).await;
                    audit.reopen();
                }
            });
        }
        serve(options, policy, servers, dry_run, hook, listening, callers).await
    });
    if let Some(audit) = &audit {
        audit_args::close(audit);
    }
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
    dry_run: Option<DryRun>,
    audit: Option<toolpolicy::audit::AuditHook>,
    listening: Option<Listening>,
    callers: Option<gateway::CallerContexts>,
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
    // The clients file's callers are what the gateway serves, and checks.
    if let Some(callers) = callers {
        gw.serve_callers(callers);
    }
    for (child, result) in gw.children.iter().zip(&started) {
        match result {
            Ok(n) => log::line(format!(
                "note: server `{}` started with {n} tools",
                child.name()
            )),
            Err(e) => log::line(format!("error: {e}")),
        }
    }
    // Only now are the servers' tool names known.
    if let Some(why) = gw.call_tool_taken().or_else(|| gw.search_tool_problem()) {
        stop(&gw, &mut termination).await;
        return Err(CliError::Usage(why));
    }
    let lints = gw.lint(true);
    if let Some(dry) = dry_run {
        let _ = lints.await;
        let failed = match &dry.callers {
            None => {
                let report = dry_run::report(&gw, &started);
                gw.stop().await;
                let report = report.map_err(CliError::Usage)?;
                match dry.format {
                    Format::Json => common::print_json(&report)?,
                    _ => print!("{}", dry_run::human(&report)),
                }
                report.failed
            }
            Some(callers) => {
                let report = dry_run::callers_report(&gw, &started, callers);
                gw.stop().await;
                let report = report.map_err(CliError::Usage)?;
                match dry.format {
                    Format::Json => common::print_json(&report)?,
                    _ => print!("{}", dry_run::callers_human(&report)),
                }
                report.failed
            }
        };
        return Ok(if failed {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        });
    }
    // Set after the start, so that the registry's first build is no reload.
    gw.engine.set_audit(audit);
    // What the dry run notes of the list, said once at start too.
    let deprecated = match gw.contexts().first() {
        Some(ctx) => dry_run::served(&gw, ctx).map(|s| s.deprecated),
        None => Ok(Vec::new()),
    };
    if let Ok(deprecated) = deprecated {
        for name in &deprecated {
            log::line(format!(
                "note: `{name}` is listed, and its title or description says it is deprecated"
            ));
        }
    }
    if let Some(listening) = listening {
        tokio::spawn(Arc::clone(&gw).follow(events));
        tokio::spawn(gateway::reload::watch(Arc::clone(&gw), hangup));
        return serve_http(gw, listening, termination).await;
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
    let connection = Connection::new(Arc::clone(&gw), gw.options.context.clone())
        .map_err(|e| CliError::Usage(e.to_string()))?;
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

/// Serves MCP over HTTP on the bound sockets until SIGTERM or SIGINT; then
/// ends every session, then stops the servers.
async fn serve_http(
    gw: Arc<Gateway>,
    listening: Listening,
    mut termination: gateway::reload::Termination,
) -> Result<ExitCode, CliError> {
    let Listening {
        sockets,
        options,
        clients,
        public_url,
        metrics,
        drain,
    } = listening;
    let mut tasks = tokio::task::JoinSet::new();
    let callers = match clients {
        None => gateway::listen::Callers::CommandLine(gw.options.context.clone()),
        Some(clients) => {
            // A reload of the clients file that leaves a caller without a
            // mode keeps the last good one.
            let (engine_of, base) = (Arc::downgrade(&gw), gw.options.context.clone());
            clients.set_check(Arc::new(move |contexts| {
                let Some(gw) = engine_of.upgrade() else {
                    return Vec::new();
                };
                let snap = gw.engine.snapshot();
                gateway::clients::without_mode(contexts, &base, snap.table().modes())
            }));
            // A policy reload that cannot serve a caller the clients file
            // names keeps the last good policy.
            let served = Arc::clone(&clients);
            let base = gw.options.context.clone();
            gw.set_reload_check(Arc::new(move |engine| {
                refused_contexts(engine, &served, &base)
            }));
            let watched = Arc::clone(&gw);
            let checked = Arc::clone(&clients);
            tasks.spawn(Arc::clone(&clients).watch(move |result| {
                watched.engine.emit(toolpolicy::audit::EventKind::Reload {
                    what: "clients".into(),
                    ok: result.is_ok(),
                    codes: Vec::new(),
                });
                if result.is_ok() {
                    for why in refused_contexts(&watched.engine, &checked, &watched.options.context) {
                        log::line(format!(
                            "error: {why}; that caller's requests fail until the policy or the clients file serves it"
                        ));
                    }
                    // Sessions take their caller's new context at their next request.
                    watched.bump();
                }
            }));
            gateway::listen::Callers::Clients {
                clients,
                base: gw.options.context.clone(),
                public_url,
            }
        }
    };
    let listener = gateway::listen::Listener::new(Arc::clone(&gw), options, callers);
    if let Some(page) = metrics {
        listener.serve_metrics(page);
    }
    for socket in sockets {
        let socket = match tokio::net::TcpListener::from_std(socket) {
            Ok(socket) => socket,
            Err(e) => {
                stop(&gw, &mut termination).await;
                return Err(CliError::Usage(format!("cannot listen: {e}")));
            }
        };
        if let Ok(addr) = socket.local_addr() {
            log::line(format!("note: serving MCP over HTTP at http://{addr}/mcp"));
        }
        tasks.spawn(Arc::clone(&listener).serve(socket));
    }
    tasks.spawn(Arc::clone(&listener).reap());
    let signal = termination.wait().await;
    // No new request from here on, and `/readyz` fails: the requests in
    // flight finish, within `--drain-timeout`; then the sessions end, then
    // the servers stop. A second signal cuts the wait short.
    let health = Arc::clone(listener.health());
    health.drain();
    let in_flight = health.in_flight();
    if in_flight > 0 {
        log::line(format!(
            "note: {signal}: draining: waiting up to {} s for {in_flight} requests in flight (a second signal stops at once)",
            drain.as_secs_f64()
        ));
        let left = tokio::select! {
            left = health.drained(drain) => left,
            again = termination.wait() => {
                log::line(format!("note: {again}: not waiting for the requests in flight"));
                health.in_flight()
            }
        };
        if left > 0 {
            log::line(format!(
                "warning: {left} requests still in flight at the end of the drain: they fail"
            ));
        }
    }
    tasks.abort_all();
    let sessions = listener.close_all().await;
    log::line(format!(
        "note: {signal}: ended {sessions} sessions; stopping the servers (a second signal kills them)"
    ));
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

//! `policy gateway --policy F --servers F [--mode M] [--bot B] [--flag X]... [--grant SEL]...
//! [--exposure call|list-changed] [--call-tool NAME] [--call-timeout SECS]
//! [--start-timeout SECS] [--dry-run [--format human|json]]
//! [--listen HOST:PORT [--stateless] [--session-idle SECS] [--max-sessions N]
//! [--body-timeout SECS] [--allow-origin O]... [--allow-host H]... [--max-concurrent N]
//! [--max-concurrent-per-caller N]]`
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
    #[command(flatten)]
    audit: AuditArgs,
    #[command(flatten)]
    listen: ListenArgs,
}

/// Serving over HTTP instead of standard input.
#[derive(clap::Args)]
struct ListenArgs {
    /// Serve MCP's streamable HTTP transport at `http://HOST:PORT/mcp` to any
    /// number of clients instead of one on standard input (port 0: any free
    /// one, named on standard error). Without `--clients`, loopback
    /// addresses only, as every caller gets the command line's context
    #[arg(long, value_name = "HOST:PORT")]
    listen: Option<String>,
    /// The clients file: bearer tokens and JWT access tokens to contexts
    /// (re-read when it changes, or on SIGHUP); a request without a
    /// credential it accepts is refused with 401
    #[arg(long, value_name = "FILE", requires = "listen")]
    clients: Option<PathBuf>,
    /// The URL clients reach the gateway's `/mcp` at, as the
    /// protected-resource metadata names it (behind a reverse proxy);
    /// by default made from each request's `Host`
    #[arg(long, value_name = "URL", requires = "clients")]
    public_url: Option<String>,
    /// Serve every request without a session, whatever the client's protocol
    /// version: a search activates nothing beyond its request, and a call
    /// reaches any tool the context does not hide
    #[arg(long, requires = "listen")]
    stateless: bool,
    /// Seconds without a request after which a session ends (its client
    /// then gets 404 and starts a new one)
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 1800.0,
        requires = "listen"
    )]
    session_idle: f64,
    /// The most sessions open at once, shared between callers; past it a
    /// caller over its share loses its own longest idle session
    #[arg(long, value_name = "N", default_value_t = 1000, requires = "listen")]
    max_sessions: usize,
    /// Seconds a request's body may take to arrive in full after its head;
    /// past it, 408 and the connection closes
    #[arg(long, value_name = "SECS", default_value_t = 30.0, requires = "listen")]
    body_timeout: f64,
    /// An origin browsers may call from, `scheme://host[:port]` (repeatable);
    /// a request with any other `Origin` is refused with 403. Requests
    /// without one (non-browser clients) pass
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "listen")]
    allow_origins: Vec<String>,
    /// A `Host` name the gateway answers to besides the loopback ones, as a
    /// reverse proxy may pass on (repeatable); others are refused with 403
    #[arg(long = "allow-host", value_name = "HOST", requires = "listen")]
    allow_hosts: Vec<String>,
    /// Requests served at once in all; past it, 503
    #[arg(long, value_name = "N", default_value_t = 256, requires = "listen")]
    max_concurrent: usize,
    /// Requests served at once for one caller; past it, 429
    #[arg(long, value_name = "N", default_value_t = 32, requires = "listen")]
    max_concurrent_per_caller: usize,
}

impl ListenArgs {
    fn options(&self) -> Result<gateway::listen::ListenOptions, CliError> {
        let positive = |flag: &str, n: usize| {
            if n == 0 {
                Err(CliError::Usage(format!("`--{flag}` must be at least 1")))
            } else {
                Ok(n)
            }
        };
        for origin in &self.allow_origins {
            if gateway::listen::normal_origin(origin).is_none() {
                return Err(CliError::Usage(format!(
                    "`--allow-origin` `{origin}` is not an origin: write `scheme://host` or `scheme://host:port`, as a browser sends it"
                )));
            }
        }
        if let Some(url) = &self.public_url
            && gateway::clients::metadata_url(url).is_none()
        {
            return Err(CliError::Usage(format!(
                "`--public-url` `{url}` is not a URL: write it as clients reach the gateway, such as `https://mcp.example.com/mcp`"
            )));
        }
        Ok(gateway::listen::ListenOptions {
            stateless: self.stateless,
            session_idle: seconds("session-idle", self.session_idle)?,
            max_sessions: positive("max-sessions", self.max_sessions)?,
            allow_origins: self.allow_origins.clone(),
            allow_hosts: self.allow_hosts.clone(),
            max_body: gateway::listen::MAX_BODY,
            max_values: gateway::listen::MAX_VALUES,
            body_timeout: seconds("body-timeout", self.body_timeout)?,
            max_concurrent: positive("max-concurrent", self.max_concurrent)?,
            max_concurrent_per_caller: positive(
                "max-concurrent-per-caller",
                self.max_concurrent_per_caller,
            )?,
        })
    }
}

/// What `--listen` and the flags beside it give, checked and bound.
struct Listening {
    sockets: Vec<std::net::TcpListener>,
    options: gateway::listen::ListenOptions,
    clients: Option<gateway::clients::Clients>,
    public_url: Option<String>,
    /// The counts `/metrics` serves.
    metrics: Option<gateway::listen::MetricsPage>,
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

/// Binds every address `--listen` names, before any server starts: an
/// address in use, or one beyond loopback without callers named by a
/// credential, ends the command at once.
fn bind(listen: &str, authenticates: bool) -> Result<Vec<std::net::TcpListener>, CliError> {
    use std::net::ToSocketAddrs as _;
    let addrs: Vec<std::net::SocketAddr> = listen
        .to_socket_addrs()
        .map_err(|e| {
            CliError::Usage(format!(
                "`--listen` `{listen}` is not an address to listen on (write HOST:PORT, such as `127.0.0.1:8080`): {e}"
            ))
        })?
        .fold(Vec::new(), |mut v, a| {
            if !v.contains(&a) {
                v.push(a);
            }
            v
        });
    if !authenticates && !gateway::listen::all_loopback(&addrs) {
        let shown: Vec<String> = addrs.iter().map(|a| a.ip().to_string()).collect();
        return Err(CliError::Usage(format!(
            "`--listen` `{listen}` is not a loopback address ({}): every caller gets the command line's context, with no credential asked, so the gateway listens only on 127.0.0.1, ::1 or localhost",
            shown.join(", ")
        )));
    }
    addrs
        .iter()
        .map(|addr| {
            let listener = std::net::TcpListener::bind(addr)
                .map_err(|e| CliError::Usage(format!("cannot listen on `{addr}`: {e}")))?;
            listener
                .set_nonblocking(true)
                .map_err(|e| CliError::Usage(format!("cannot listen on `{addr}`: {e}")))?;
            Ok(listener)
        })
        .collect()
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
    // Checked before any child starts: a context the policy refuses is a usage error.
    let check = toolpolicy::Engine::new(policy.clone(), Default::default(), Default::default());
    require_mode(&check, &options.context)?;
    check
        .session(options.context.clone())
        .map_err(|e| CliError::Usage(e.to_string()))?;
    drop(check);
    let listening = match (&args.listen.listen, args.dry_run) {
        (Some(listen), false) => {
            let options = args.listen.options()?;
            let clients = match &args.listen.clients {
                Some(path) => Some(load_clients(path, &policy, &options_context(&args))?),
                None => None,
            };
            let sockets = bind(listen, clients.is_some())?;
            Some(Listening {
                sockets,
                options,
                clients,
                public_url: args.listen.public_url.clone(),
                metrics: None,
            })
        }
        _ => None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
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
        serve(
            options,
            policy,
            servers,
            args.dry_run,
            args.format,
            hook,
            listening,
        )
        .await
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
    dry_run: bool,
    format: Format,
    audit: Option<toolpolicy::audit::AuditHook>,
    listening: Option<Listening>,
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
    // Only now are the servers' tool names known.
    if let Some(why) = gw.call_tool_taken().or_else(|| gw.search_tool_problem()) {
        stop(&gw, &mut termination).await;
        return Err(CliError::Usage(why));
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
    // Set after the start, so that the registry's first build is no reload.
    gw.engine.set_audit(audit);
    // What the dry run notes of the list, said once at start too.
    if let Ok(report) = dry_run::report(&gw, &started) {
        for name in &report.deprecated {
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
    } = listening;
    let mut tasks = tokio::task::JoinSet::new();
    let callers = match clients {
        None => gateway::listen::Callers::CommandLine(gw.options.context.clone()),
        Some(clients) => {
            let clients = Arc::new(clients);
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
    // No new request from here on; sessions end, then the servers stop.
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

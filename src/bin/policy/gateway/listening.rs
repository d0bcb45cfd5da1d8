//! `policy gateway --listen` and the flags beside it: parsed, checked and
//! the addresses bound before any server starts.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use toolpolicy::gateway;

use crate::common::CliError;

/// Serving over HTTP instead of standard input.
#[derive(clap::Args)]
pub(super) struct ListenArgs {
    /// Serve MCP's streamable HTTP transport at `http://HOST:PORT/mcp` to any
    /// number of clients instead of one on standard input (port 0: any free
    /// one, named on standard error). Without `--clients`, loopback
    /// addresses only, as every caller gets the command line's context
    #[arg(long, value_name = "HOST:PORT")]
    pub(super) listen: Option<String>,
    /// The clients file: bearer tokens and JWT access tokens to contexts
    /// (re-read when it changes, or on SIGHUP); a request without a
    /// credential it accepts is refused with 401. Where every caller it
    /// names (and its JWT defaults) names a mode, `--mode` may be left out
    #[arg(long, value_name = "FILE")]
    pub(super) clients: Option<PathBuf>,
    /// The URL clients reach the gateway's `/mcp` at, as the
    /// protected-resource metadata names it (behind a reverse proxy);
    /// by default made from each request's `Host`
    #[arg(long, value_name = "URL", requires = "clients")]
    pub(super) public_url: Option<String>,
    /// Serve every request without a session, whatever the client's protocol
    /// version: a search activates nothing beyond its request, and a call
    /// reaches any tool the context does not hide
    #[arg(long, requires = "listen")]
    pub(super) stateless: bool,
    /// Seconds without a request after which this process ends a session:
    /// its client then gets 404 and starts a new one, or, with
    /// `--session-key-file`, its next request recreates it (activations
    /// empty)
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 1800.0,
        requires = "listen"
    )]
    pub(super) session_idle: f64,
    /// A file holding the key session ids are signed with, shared by every
    /// gateway process behind one address: any of them then serves a
    /// session another opened, recreating it from its id. At least 32
    /// random bytes, raw or as hex or base64 text (`openssl rand -hex 32`);
    /// readable by the gateway's user, not by every user. Without it, a key
    /// of this process's own
    #[arg(long, value_name = "FILE", requires = "listen")]
    pub(super) session_key_file: Option<PathBuf>,
    /// Seconds after it was made that a session id stops being valid: its
    /// session ends on every process, and its client gets 404
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 86400.0,
        requires = "listen"
    )]
    pub(super) session_max_age: f64,
    /// The most sessions open at once, shared between callers; past it a
    /// caller over its share loses its own longest idle session
    #[arg(long, value_name = "N", default_value_t = 1000, requires = "listen")]
    pub(super) max_sessions: usize,
    /// Seconds a request's body may take to arrive in full after its head;
    /// past it, 408 and the connection closes
    #[arg(long, value_name = "SECS", default_value_t = 30.0, requires = "listen")]
    pub(super) body_timeout: f64,
    /// An origin browsers may call from, `scheme://host[:port]` (repeatable);
    /// a request with any other `Origin` is refused with 403. Requests
    /// without one (non-browser clients) pass
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "listen")]
    pub(super) allow_origins: Vec<String>,
    /// A `Host` name the gateway answers to besides the loopback ones, as a
    /// reverse proxy may pass on (repeatable); others are refused with 403
    #[arg(long = "allow-host", value_name = "HOST", requires = "listen")]
    pub(super) allow_hosts: Vec<String>,
    /// Requests served at once in all; past it, 503
    #[arg(long, value_name = "N", default_value_t = 256, requires = "listen")]
    pub(super) max_concurrent: usize,
    /// Requests served at once for one caller; past it, 429
    #[arg(long, value_name = "N", default_value_t = 32, requires = "listen")]
    pub(super) max_concurrent_per_caller: usize,
    /// Seconds the requests in flight at SIGTERM may take to finish (new
    /// ones are refused with 503 and `/readyz` fails at once); then the
    /// sessions end and the servers stop
    #[arg(long, value_name = "SECS", default_value_t = 10.0, requires = "listen")]
    pub(super) drain_timeout: f64,
    /// Worker threads serving HTTP (1 to 16; by default the machine's
    /// cores, at most 16). Standard input is served on one thread
    #[arg(long, value_name = "N", requires = "listen")]
    pub(super) threads: Option<String>,
}

/// The most worker threads `--threads` takes, and its default's bound.
const MAX_THREADS: usize = 16;

/// `--threads` checked: 1 to [`MAX_THREADS`]; by default the machine's
/// cores, bounded so.
pub(super) fn threads(given: Option<&str>) -> Result<usize, CliError> {
    let Some(given) = given else {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        return Ok(cores.clamp(1, MAX_THREADS));
    };
    match given.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_THREADS).contains(&n) => Ok(n),
        _ => Err(CliError::Usage(format!(
            "`--threads` must be a whole number from 1 to {MAX_THREADS}, not `{given}`"
        ))),
    }
}

impl ListenArgs {
    pub(super) fn options(&self) -> Result<gateway::listen::ListenOptions, CliError> {
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
            session_key: match &self.session_key_file {
                Some(path) => Some(
                    gateway::session_id::SessionKey::from_file(path).map_err(CliError::Usage)?,
                ),
                None => None,
            },
            session_max_age: seconds("session-max-age", self.session_max_age)?,
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
pub(super) struct Listening {
    pub(super) sockets: Vec<std::net::TcpListener>,
    pub(super) options: gateway::listen::ListenOptions,
    pub(super) clients: Option<Arc<gateway::clients::Clients>>,
    pub(super) public_url: Option<String>,
    /// The counts `/metrics` serves.
    pub(super) metrics: Option<gateway::listen::MetricsPage>,
    /// How long the requests in flight at SIGTERM may take.
    pub(super) drain: Duration,
}

/// Binds every address `--listen` names, before any server starts: an
/// address in use, or one beyond loopback without callers named by a
/// credential, ends the command at once.
pub(super) fn bind(
    listen: &str,
    authenticates: bool,
) -> Result<Vec<std::net::TcpListener>, CliError> {
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

/// A flag's seconds (`--start-timeout`, `--session-idle` ...) as a duration.
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

//! Hot reload of the policy: its file is polled for a new modification time
//! or length every [`POLL`], and re-read at once on SIGHUP. A reload that
//! fails (a policy error, or a policy that refuses the gateway's context)
//! keeps the last good policy and prints why to standard error.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::Policy;

use super::Gateway;

/// How often the policy file's metadata is looked at.
pub const POLL: Duration = Duration::from_millis(500);

/// What identifies a version of the file without reading it.
fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// Re-reads the policy; returns whether it is now in force.
pub fn reload(gateway: &Gateway) -> bool {
    let path = &gateway.options.policy_path;
    let shown = path.display().to_string();
    let bytes = match crate::input::read(path) {
        Ok(b) => b,
        Err(e) => {
            log!("error: cannot read `{shown}`: {e}; keeping the last good policy");
            return false;
        }
    };
    let policy = match Policy::from_bytes(shown.clone(), &bytes) {
        Ok(p) => p,
        Err(e) => {
            let shown_errors = crate::render::plain(&e.source, &e.diagnostics);
            log!("{}", shown_errors.trim_end_matches('\n'));
            log!("error: `{shown}` has errors; keeping the last good policy");
            return false;
        }
    };
    let engine = &gateway.engine;
    let old = engine.snapshot().policy().clone();
    engine.set_policy(policy);
    if let Err(e) = engine.session(gateway.options.context.clone()) {
        engine.set_policy(old);
        log!("error: `{shown}`: {e}; keeping the last good policy");
        return false;
    }
    log!("note: reloaded `{shown}`");
    drop(gateway.lint(true));
    gateway.bump();
    true
}

/// Watches the policy file and SIGHUP (from [`hangup_signal`], taken
/// before the children start, so that a SIGHUP then does not end the
/// gateway) until the task is dropped.
pub async fn watch(gateway: Arc<Gateway>, mut hangup: Hangup) {
    let path = gateway.options.policy_path.clone();
    let mut last = stamp(&path);
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let forced = tokio::select! {
            _ = tick.tick() => false,
            _ = next_hangup(&mut hangup) => true,
        };
        let now = stamp(&path);
        if forced || now != last {
            last = now;
            reload(&gateway);
        }
    }
}

/// SIGHUP's stream, where there is one.
#[cfg(unix)]
pub type Hangup = Option<tokio::signal::unix::Signal>;
#[cfg(not(unix))]
pub type Hangup = Option<()>;

/// Starts catching SIGHUP.
#[cfg(unix)]
pub fn hangup_signal() -> Hangup {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok()
}

/// Starts catching SIGHUP.
#[cfg(not(unix))]
pub fn hangup_signal() -> Hangup {
    None
}

async fn next_hangup(h: &mut Hangup) {
    #[cfg(unix)]
    if let Some(s) = h {
        s.recv().await;
        return;
    }
    let _ = h;
    std::future::pending::<()>().await
}

/// SIGTERM and SIGINT, caught from when [`Termination::catch`] is called, so
/// that the gateway stops its servers (as MCP asks) before it exits rather
/// than leaving one that ignores its closed input running.
pub struct Termination {
    #[cfg(unix)]
    signals: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl Termination {
    /// Starts catching SIGTERM and SIGINT (Ctrl-C elsewhere).
    pub fn catch() -> Termination {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let signals = signal(SignalKind::terminate())
                .and_then(|term| Ok((term, signal(SignalKind::interrupt())?)))
                .ok();
            Termination { signals }
        }
        #[cfg(not(unix))]
        Termination {}
    }

    /// Waits for the first of them and names it; never, when they could not
    /// be caught.
    pub async fn wait(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            let Some((term, int)) = &mut self.signals else {
                return std::future::pending().await;
            };
            tokio::select! {
                _ = term.recv() => "SIGTERM",
                _ = int.recv() => "SIGINT",
            }
        }
        #[cfg(not(unix))]
        {
            match tokio::signal::ctrl_c().await {
                Ok(()) => "Ctrl-C",
                Err(_) => std::future::pending().await,
            }
        }
    }
}

//! Hot reload of the policy: its file, and the lock file it names, are
//! polled for a new modification time or length every [`POLL`], and re-read
//! at once on SIGHUP. A new lock is a new version of the policy: the policy
//! is read again with it. A reload that fails (a policy error, a lock that
//! does not load, or a policy that refuses the gateway's context) keeps the
//! last good policy and prints why to standard error.
//!
//! A reload fails closed. Only a regular file is re-read, the policy and its
//! lock alike, opened so that a FIFO at the path cannot block it (a pipe such
//! as `<(cat p.policy)` has nothing left to give); an empty or white-space-only text is refused (an
//! editor's truncate before its write, caught by the poll); the poll reads a
//! new version only once its stamp has held still for one poll. Every look
//! at the files (reading, parsing and the lock's read) runs on a blocking thread, one at a time, so that a stalled
//! mount never stops calls or signals: one that takes longer than
//! [`READ_WAIT`] is reported, and the file is looked at again once it ends.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::task::JoinHandle;

use crate::{LoadErrors, Policy};

use super::Gateway;

/// How often the policy file's metadata is looked at.
pub const POLL: Duration = Duration::from_millis(500);

/// How long one look at the policy file may take before the gateway says it
/// is waiting for it (a stalled network mount).
pub const READ_WAIT: Duration = Duration::from_secs(5);

/// What identifies a version of a file without reading it: its
/// modification time and length.
type FileStamp = Option<(SystemTime, u64)>;

/// The policy file's stamp and those of the files it names (its lock, its
/// terms file): a new lock or terms file is a new version of the policy.
type Stamp = (FileStamp, Vec<FileStamp>);

fn file_stamp(path: &Path) -> FileStamp {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

fn stamp(path: &Path, files: &[PathBuf]) -> Stamp {
    (
        file_stamp(path),
        files.iter().map(|f| file_stamp(f)).collect(),
    )
}

/// Where the files the policy in force names lie (its lock, its terms
/// file), those that can be inside its folder.
fn named_files(gateway: &Gateway) -> Vec<PathBuf> {
    let snap = gateway.engine.snapshot();
    let policy = snap.policy();
    let at = &gateway.options.policy_path;
    let lock = policy
        .lock
        .as_ref()
        .and_then(|s| crate::lock::resolve(at, &s.path).ok());
    let terms = policy
        .terms
        .as_ref()
        .and_then(|s| crate::lock::resolve_terms(at, &s.path).ok());
    lock.into_iter().chain(terms).collect()
}

/// The policy file's bytes for a reload, or why it is not re-read: it is
/// not a regular file (a FIFO is opened without waiting for a writer, then
/// refused), it cannot be read, or it is empty or white space only.
pub fn read_for_reload(path: &Path) -> Result<Vec<u8>, String> {
    let shown = path.display();
    let bytes = read_regular(path).map_err(|e| {
        if is_not_regular(&e) {
            format!("`{shown}` is {NOT_REGULAR} and is not re-read")
        } else {
            format!("cannot read `{shown}`: {e}")
        }
    })?;
    if crate::input::strip_bom_bytes(&bytes)
        .iter()
        .all(u8::is_ascii_whitespace)
    {
        return Err(format!(
            "`{shown}` is empty (a file caught between a truncate and its write?)"
        ));
    }
    Ok(bytes)
}

const NOT_REGULAR: &str = "not a regular file (a pipe, a FIFO, a device or a folder)";

fn is_not_regular(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::InvalidInput && e.to_string().ends_with(NOT_REGULAR)
}

/// The bytes of a file a reload reads (the policy, the lock it names, a
/// clients file and its key set), capped as every input is. Only a regular
/// file is read, and it is opened without waiting: a FIFO put at the path
/// is refused at once instead of holding the reload until a writer comes.
pub fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    let file = open_without_waiting(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("it is {NOT_REGULAR}"),
        ));
    }
    if meta.len() > crate::input::MAX_INPUT_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "it is larger than {} MiB, the most an input file may hold",
                crate::input::MAX_INPUT_BYTES >> 20
            ),
        ));
    }
    crate::input::read_from(file)
}

/// Opens `path` for reading; on Unix with `O_NONBLOCK`, so that opening a
/// FIFO does not wait for a writer (a regular file ignores the flag).
fn open_without_waiting(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits());
    }
    options.open(path)
}

/// Why a new version of the policy was not loaded.
pub enum Unloaded {
    /// The file was not read (see [`read_for_reload`]).
    Unread(String),
    /// The policy, or the lock it names, has errors.
    Errors(LoadErrors),
}

/// Reads, parses and attaches the lock of a new version of the policy:
/// all of it on the caller's (blocking) thread, the lock read as the policy
/// is ([`read_regular`]), so that a FIFO at either path waits for nobody.
pub fn load_for_reload(path: &Path) -> Result<Policy, Unloaded> {
    let bytes = read_for_reload(path).map_err(Unloaded::Unread)?;
    let mut policy =
        Policy::from_bytes(path.display().to_string(), &bytes).map_err(Unloaded::Errors)?;
    crate::lock::attach_with(&mut policy, path, read_regular).map_err(Unloaded::Errors)?;
    Ok(policy)
}

/// Re-reads the policy; returns whether it is now in force.
pub fn reload(gateway: &Gateway) -> bool {
    let read = load_for_reload(&gateway.options.policy_path);
    install(gateway, read)
}

/// Puts the policy read from its file in force, unless it cannot be read,
/// has errors or refuses the gateway's context: then the last good policy
/// stays, and standard error says why. Returns whether it is in force.
fn install(gateway: &Gateway, read: Result<Policy, Unloaded>) -> bool {
    let (ok, codes) = install_policy(gateway, read);
    gateway.engine.emit(crate::audit::EventKind::Reload {
        what: "policy".into(),
        ok,
        codes,
    });
    ok
}

/// [`install`], with the codes of the diagnostics that kept it out.
fn install_policy(gateway: &Gateway, read: Result<Policy, Unloaded>) -> (bool, Vec<String>) {
    let shown = gateway.options.policy_path.display().to_string();
    // The lock the policy names was read with it: one that does not load
    // keeps the last good policy, as a policy error does.
    let policy = match read {
        Ok(p) => p,
        Err(Unloaded::Unread(why)) => {
            log!("error: {why}; keeping the last good policy");
            return (false, Vec::new());
        }
        Err(Unloaded::Errors(e)) => {
            let shown_errors = crate::render::plain(&e.source, &e.diagnostics);
            log!("{}", shown_errors.trim_end_matches('\n'));
            let what = if e
                .diagnostics
                .iter()
                .any(|d| d.code == crate::diag::Code::BadLock)
            {
                "the lock it names does not load"
            } else {
                "has errors"
            };
            log!("error: `{shown}`: {what}; keeping the last good policy");
            return (
                false,
                e.diagnostics.iter().map(|d| d.code.to_string()).collect(),
            );
        }
    };
    let engine = &gateway.engine;
    let old = engine.snapshot().policy().clone();
    engine.set_policy(policy);
    if let Some(Err(e)) = gateway
        .serves_base()
        .then(|| engine.session(gateway.options.context.clone()))
    {
        engine.set_policy(old);
        log!("error: `{shown}`: {e}; keeping the last good policy");
        return (false, Vec::new());
    }
    if let Some(why) = gateway.reload_refusals().into_iter().next() {
        engine.set_policy(old);
        log!("error: `{shown}`: {why}; keeping the last good policy");
        return (false, Vec::new());
    }
    if let Some(why) = gateway.search_tool_problem() {
        engine.set_policy(old);
        log!("error: `{shown}`: {why}; keeping the last good policy");
        return (false, Vec::new());
    }
    let snap = engine.snapshot();
    let named: Vec<String> = [
        snap.policy()
            .lock
            .as_ref()
            .map(|l| format!("its lock `{}`", crate::chars::escape(&l.path))),
        snap.policy()
            .terms
            .as_ref()
            .map(|t| format!("its terms file `{}`", crate::chars::escape(&t.path))),
    ]
    .into_iter()
    .flatten()
    .collect();
    if named.is_empty() {
        log!("note: reloaded `{shown}`");
    } else {
        log!("note: reloaded `{shown}` and {}", named.join(" and "));
    }
    drop(gateway.lint(true));
    gateway.bump();
    (true, Vec::new())
}

/// What one look at the file found, on a blocking thread.
enum Look {
    /// The stamp, for the poll.
    Stamp(Stamp),
    /// The stamp before the read, and the policy read with its lock.
    Read(Stamp, Box<Result<Policy, Unloaded>>),
}

/// The one look at the file in flight, and whether it was reported late.
struct Pending {
    task: JoinHandle<Look>,
    since: tokio::time::Instant,
    reported: bool,
}

fn look(path: &Path, files: Vec<PathBuf>, read: bool) -> Pending {
    let path = path.to_path_buf();
    Pending {
        task: tokio::task::spawn_blocking(move || {
            let before = stamp(&path, &files);
            if read {
                Look::Read(before, Box::new(load_for_reload(&path)))
            } else {
                Look::Stamp(before)
            }
        }),
        since: tokio::time::Instant::now(),
        reported: false,
    }
}

/// Waits for the look in flight; never, when there is none.
async fn finished(pending: &mut Option<Pending>) -> Option<Look> {
    match pending {
        Some(p) => (&mut p.task).await.ok(),
        None => std::future::pending().await,
    }
}

/// Watches the policy file and SIGHUP (from [`hangup_signal`], taken
/// before the children start, so that a SIGHUP then does not end the
/// gateway) until the task is dropped.
pub async fn watch(gateway: Arc<Gateway>, mut hangup: Hangup) {
    let path: PathBuf = gateway.options.policy_path.clone();
    // The stamp of the version last read (or refused), and the poll's last.
    let mut last = tokio::task::spawn_blocking({
        let path = path.clone();
        let files = named_files(&gateway);
        move || stamp(&path, &files)
    })
    .await
    .unwrap_or((None, Vec::new()));
    let mut polled = last.clone();
    let mut pending: Option<Pending> = None;
    let mut read_asked = false;
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {
                match &mut pending {
                    None => pending = Some(look(&path, named_files(&gateway), std::mem::take(&mut read_asked))),
                    Some(p) if !p.reported && p.since.elapsed() >= READ_WAIT => {
                        p.reported = true;
                        log!(
                            "error: `{}` has not answered for {} s (a stalled mount?); \
                             keeping the last good policy until it does",
                            path.display(),
                            READ_WAIT.as_secs()
                        );
                    }
                    Some(_) => {}
                }
            }
            _ = next_hangup(&mut hangup) => {
                if pending.is_none() {
                    pending = Some(look(&path, named_files(&gateway), true));
                } else {
                    read_asked = true;
                }
            }
            done = finished(&mut pending) => {
                pending = None;
                match done {
                    Some(Look::Stamp(now)) => {
                        // Read once the stamp has held still for one poll.
                        if now != last && now == polled {
                            pending = Some(look(&path, named_files(&gateway), true));
                        }
                        polled = now;
                    }
                    Some(Look::Read(before, read)) => {
                        polled = before.clone();
                        last = before;
                        install(&gateway, *read);
                    }
                    None => {}
                }
            }
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

/// Waits for the next SIGHUP; never, where there is none.
pub async fn next_hangup(h: &mut Hangup) {
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

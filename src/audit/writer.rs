//! The audit log's writer, shared by the front ends: JSON Lines appended to
//! one file, one event per line, written by a thread of its own.
//!
//! Serving never waits for the disk. Events are queued (at most
//! [`Options::capacity`] lines); one that does not fit is dropped and
//! counted, and the count is written as a `dropped` event before the next
//! line that gets through (and when the log is flushed). The file is opened
//! for appending (`O_APPEND`) and every write holds whole lines, so several
//! processes may append to one file.
//!
//! Opening never waits: a FIFO that no process reads is an error at once
//! (the front end warns and serves on), not an open that blocks until a
//! reader comes. [`AuditLog::reopen`] opens the path anew, for log rotation
//! (the file moved aside, then SIGHUP). A write that fails (a full disk) is
//! said once when writing first fails and once when it works again, and the
//! events it held are counted ([`AuditLog::write_failures`]).

use std::fs::{File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use super::{AuditHook, Event, EventKind};

/// What a front end chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Write search queries (`--audit-no-queries` turns this off).
    pub queries: bool,
    /// Lines that may wait for the writer; past this, events are dropped.
    pub capacity: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            queries: true,
            capacity: 8192,
        }
    }
}

/// Bytes gathered into one write at most.
const BATCH_BYTES: usize = 64 * 1024;

struct Shared {
    /// Lines queued and not yet written.
    queued: AtomicUsize,
    dropped: AtomicU64,
    /// Dropped events whose count is in the file.
    reported: AtomicU64,
    /// The last write error, once.
    failed: Mutex<Option<String>>,
    /// Events that could not be written, and are lost.
    unwritten: AtomicU64,
    /// Asked by [`AuditLog::reopen`], taken by the writer before its next
    /// write.
    reopen: AtomicBool,
}

/// Where the writer's warnings go (that writing failed, that it works
/// again, that a reopen failed): one line each, without a newline.
pub type Warn = Arc<dyn Fn(String) + Send + Sync>;

/// An open audit log. Cheap to share: [`AuditLog::hook`] hands it to an
/// engine or a session.
pub struct AuditLog {
    sender: SyncSender<String>,
    shared: Arc<Shared>,
    options: Options,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

#[derive(Serialize)]
struct Line<'a> {
    ts: &'a str,
    #[serde(flatten)]
    event: &'a Event,
}

impl AuditLog {
    /// Opens `path` for appending (creating it) and starts the writer, its
    /// warnings on standard error. An error here is for the front end to
    /// report as a warning and serve on.
    pub fn open(path: &Path, options: Options) -> io::Result<Arc<AuditLog>> {
        AuditLog::open_with(path, options, Arc::new(|w: String| eprintln!("{w}")))
    }

    /// [`AuditLog::open`], the writer's warnings given to `warn` (a front
    /// end that must not write to standard error from another thread).
    pub fn open_with(path: &Path, options: Options, warn: Warn) -> io::Result<Arc<AuditLog>> {
        let file = open_file(path)?;
        let (sender, lines) = sync_channel::<String>(options.capacity.max(1));
        let shared = Arc::new(Shared {
            queued: AtomicUsize::new(0),
            dropped: AtomicU64::new(0),
            reported: AtomicU64::new(0),
            failed: Mutex::new(None),
            unwritten: AtomicU64::new(0),
            reopen: AtomicBool::new(false),
        });
        let writer = Writer {
            file,
            path: path.to_path_buf(),
            warn,
            failing: None,
        };
        let state = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("audit-log".into())
            .spawn(move || writer.run(lines, &state))?;
        Ok(Arc::new(AuditLog {
            sender,
            shared,
            options,
        }))
    }

    /// Opens the log's path anew before the next write (the file was moved
    /// aside by log rotation); a path that cannot be opened keeps the file
    /// already open, with a warning. Never blocks.
    pub fn reopen(&self) {
        self.shared.reopen.store(true, Ordering::Release);
        // An empty line wakes the writer; a full queue means it is awake.
        let _ = self.sender.try_send(String::new());
    }

    /// Events that could not be written (a full disk) so far.
    pub fn write_failures(&self) -> u64 {
        self.shared.unwritten.load(Ordering::Relaxed)
    }

    /// A hook that queues every event it is given.
    pub fn hook(self: &Arc<Self>) -> AuditHook {
        let log = Arc::clone(self);
        Arc::new(move |event: &Event| log.record(event))
    }

    /// Queues one event; never blocks.
    pub fn record(&self, event: &Event) {
        let stripped;
        let event = match &event.kind {
            EventKind::Search { query: Some(_), .. } if !self.options.queries => {
                let mut e = event.clone();
                if let EventKind::Search { query, .. } = &mut e.kind {
                    *query = None;
                }
                stripped = e;
                &stripped
            }
            _ => event,
        };
        let Ok(line) = serde_json::to_string(&Line {
            ts: &timestamp(SystemTime::now()),
            event,
        }) else {
            self.shared.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        self.shared.queued.fetch_add(1, Ordering::Relaxed);
        match self.sender.try_send(line) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.shared.queued.fetch_sub(1, Ordering::Relaxed);
                self.shared.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Events dropped so far because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// The first write error, if writing failed (reported once).
    pub fn take_error(&self) -> Option<String> {
        self.shared
            .failed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Waits, at most `within`, until every queued event is written and a
    /// count of dropped ones is in the file: before a front end exits.
    pub fn flush(&self, within: Duration) {
        let until = Instant::now() + within;
        let unreported = || {
            self.shared.dropped.load(Ordering::Relaxed)
                > self.shared.reported.load(Ordering::Relaxed)
        };
        // An empty line asks the writer for the count of dropped events.
        while unreported() && Instant::now() < until {
            match self.sender.try_send(String::new()) {
                Ok(()) => break,
                Err(TrySendError::Disconnected(_)) => return,
                Err(TrySendError::Full(_)) => std::thread::sleep(Duration::from_millis(2)),
            }
        }
        while (self.shared.queued.load(Ordering::Relaxed) > 0 || unreported())
            && Instant::now() < until
        {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

/// Opens `path` for appending without waiting: `O_NONBLOCK` makes the open
/// of a FIFO that no process reads fail (`ENXIO`) instead of blocking until
/// a reader comes. Once open, writes block again as they always did (a
/// slow reader holds up the writer's thread, never serving).
fn open_file(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.append(true).create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits());
    }
    let file = options.open(path).map_err(|e| {
        #[cfg(unix)]
        if e.raw_os_error() == Some(nix::errno::Errno::ENXIO as i32) {
            return io::Error::new(
                io::ErrorKind::NotConnected,
                "it is a FIFO that no process reads (start its reader first)",
            );
        }
        e
    })?;
    #[cfg(unix)]
    {
        use nix::fcntl::{FcntlArg, OFlag, fcntl};
        let flags = OFlag::from_bits_truncate(fcntl(&file, FcntlArg::F_GETFL)?);
        fcntl(&file, FcntlArg::F_SETFL(flags - OFlag::O_NONBLOCK))?;
    }
    Ok(file)
}

/// The writer thread's own state.
struct Writer {
    file: File,
    path: PathBuf,
    warn: Warn,
    /// Events lost since writing last failed; `None` while writing works.
    failing: Option<u64>,
}

impl Writer {
    /// Gathers what is queued into whole-line writes until every sender is
    /// gone.
    fn run(mut self, lines: Receiver<String>, shared: &Shared) {
        let mut buf = String::new();
        while let Ok(first) = lines.recv() {
            let mut taken = 0;
            let mut next = Some(first);
            while let Some(line) = next.take() {
                if !line.is_empty() {
                    taken += 1;
                    buf.push_str(&line);
                    buf.push('\n');
                }
                if buf.len() < BATCH_BYTES {
                    next = lines.try_recv().ok();
                }
            }
            if shared.reopen.swap(false, Ordering::Acquire) {
                self.reopen();
            }
            let dropped = shared.dropped.load(Ordering::Relaxed);
            let reported = shared.reported.load(Ordering::Relaxed);
            if dropped > reported {
                let note = Event::global(EventKind::Dropped {
                    count: dropped - reported,
                });
                if let Ok(line) = serde_json::to_string(&Line {
                    ts: &timestamp(SystemTime::now()),
                    event: &note,
                }) {
                    buf.push_str(&line);
                    buf.push('\n');
                }
            }
            if !buf.is_empty() {
                let written = self.file.write_all(buf.as_bytes());
                self.said(written, taken as u64, shared);
            }
            shared.reported.store(dropped, Ordering::Relaxed);
            buf.clear();
            shared.queued.fetch_sub(taken, Ordering::Relaxed);
        }
    }

    /// Counts the events of a failed write and says when writing starts
    /// failing and when it works again, once each.
    fn said(&mut self, written: io::Result<()>, events: u64, shared: &Shared) {
        match (written, &mut self.failing) {
            (Ok(()), failing) => {
                if let Some(lost) = failing.take() {
                    let events = if lost == 1 {
                        "event was"
                    } else {
                        "events were"
                    };
                    (self.warn)(format!(
                        "note: the audit log `{}` is written again; {lost} {events} lost",
                        self.shown()
                    ));
                }
            }
            (Err(e), failing) => {
                shared.unwritten.fetch_add(events, Ordering::Relaxed);
                let mut first = shared.failed.lock().unwrap_or_else(PoisonError::into_inner);
                if first.is_none() {
                    *first = Some(e.to_string());
                }
                drop(first);
                match failing {
                    Some(lost) => *lost += events,
                    None => {
                        *failing = Some(events);
                        (self.warn)(format!(
                            "warning: cannot write the audit log `{}`: {}; its events are lost until it can be written again",
                            self.shown(),
                            crate::chars::lowercase_first(&e.to_string())
                        ));
                    }
                }
            }
        }
    }

    /// Opens the path anew, or keeps the file open and says why not.
    fn reopen(&mut self) {
        match open_file(&self.path) {
            Ok(file) => self.file = file,
            Err(e) => (self.warn)(format!(
                "warning: cannot reopen the audit log `{}`: {}; writing on to the file already open",
                self.shown(),
                crate::chars::lowercase_first(&e.to_string())
            )),
        }
    }

    fn shown(&self) -> String {
        crate::chars::escape(&self.path.display().to_string()).into_owned()
    }
}

/// RFC 3339 in UTC with milliseconds: `2026-12-01T12:00:00.123Z`, which
/// sorts as text in time order.
pub fn timestamp(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil-from-days.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc_rfc3339() {
        let t = UNIX_EPOCH + Duration::from_millis(1_796_126_400_123);
        assert_eq!(timestamp(t), "2026-12-01T12:00:00.123Z");
        assert_eq!(timestamp(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(timestamp(leap), "2000-02-29T00:00:00.000Z");
    }
}

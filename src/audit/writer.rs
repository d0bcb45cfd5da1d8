//! The audit log's writer, shared by the front ends: JSON Lines appended to
//! one file, one event per line, written by a thread of its own.
//!
//! Serving never waits for the disk. Events are queued (at most
//! [`Options::capacity`] lines); one that does not fit is dropped and
//! counted, and the count is written as a `dropped` event before the next
//! line that gets through (and when the log is flushed). The file is opened
//! for appending (`O_APPEND`) and every write holds whole lines, so several
//! processes may append to one file.

use std::fs::{File, OpenOptions};
use std::io::{self, Write as _};
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
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
}

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
    /// Opens `path` for appending (creating it) and starts the writer. An
    /// error here is for the front end to report as a warning and serve on.
    pub fn open(path: &Path, options: Options) -> io::Result<Arc<AuditLog>> {
        let file = OpenOptions::new().append(true).create(true).open(path)?;
        let (sender, lines) = sync_channel::<String>(options.capacity.max(1));
        let shared = Arc::new(Shared {
            queued: AtomicUsize::new(0),
            dropped: AtomicU64::new(0),
            reported: AtomicU64::new(0),
            failed: Mutex::new(None),
        });
        let writer = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("audit-log".into())
            .spawn(move || write_lines(file, lines, &writer))?;
        Ok(Arc::new(AuditLog {
            sender,
            shared,
            options,
        }))
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

/// The writer thread: gathers what is queued into whole-line writes.
fn write_lines(mut file: File, lines: Receiver<String>, shared: &Shared) {
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
        if let Err(e) = file.write_all(buf.as_bytes()) {
            let mut failed = shared.failed.lock().unwrap_or_else(PoisonError::into_inner);
            if failed.is_none() {
                *failed = Some(e.to_string());
            }
        }
        shared.reported.store(dropped, Ordering::Relaxed);
        buf.clear();
        shared.queued.fetch_sub(taken, Ordering::Relaxed);
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

//! The gateway's standard error while it serves: its own notes and its
//! servers' lines, written by a thread of their own.
//!
//! A client may pipe the gateway's standard error and never read it. Once
//! that pipe is full, a write to it blocks, and a write on the async
//! runtime's thread would stop the gateway: no call answered, no server
//! read. Lines are queued instead (up to [`QUEUED_BYTES`]); what does not
//! fit while nobody reads is dropped and counted, and the count is written
//! before the next line that gets through.

use std::io::Write as _;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::time::{Duration, Instant};

/// The most bytes of lines waiting to be written.
pub const QUEUED_BYTES: usize = 1 << 20;

struct Queue {
    /// `None` when the writer thread could not be started: lines are then
    /// written where they are made.
    sender: Option<Sender<String>>,
    /// Bytes queued and not yet written.
    queued: AtomicUsize,
    dropped: AtomicU64,
}

fn queue() -> &'static Queue {
    static QUEUE: OnceLock<Queue> = OnceLock::new();
    QUEUE.get_or_init(|| {
        let (sender, lines) = channel::<String>();
        let started = std::thread::Builder::new()
            .name("gateway-stderr".into())
            .spawn(move || {
                let mut err = std::io::stderr();
                for text in lines {
                    let q = queue();
                    let dropped = q.dropped.swap(0, Ordering::Relaxed);
                    if dropped > 0 {
                        let _ = writeln!(
                            err,
                            "warning: {dropped} lines of standard error were dropped: \
                             nobody read them in time"
                        );
                    }
                    let _ = writeln!(err, "{text}");
                    q.queued.fetch_sub(text.len() + 1, Ordering::Relaxed);
                }
            });
        Queue {
            sender: started.ok().map(|_| sender),
            queued: AtomicUsize::new(0),
            dropped: AtomicU64::new(0),
        }
    })
}

/// Queues `text` as one line of standard error (see the module's notes).
pub fn line(text: String) {
    let q = queue();
    let Some(sender) = &q.sender else {
        eprintln!("{text}");
        return;
    };
    let size = text.len() + 1;
    if q.queued.fetch_add(size, Ordering::Relaxed) + size > QUEUED_BYTES {
        q.queued.fetch_sub(size, Ordering::Relaxed);
        q.dropped.fetch_add(1, Ordering::Relaxed);
        return;
    }
    if sender.send(text).is_err() {
        q.queued.fetch_sub(size, Ordering::Relaxed);
    }
}

/// Waits, at most `within`, until every queued line has been written: for
/// the last notes before the gateway exits. Gives up on a standard error
/// nobody reads.
pub fn flush(within: Duration) {
    let q = queue();
    let until = Instant::now() + within;
    while q.queued.load(Ordering::Relaxed) > 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
}

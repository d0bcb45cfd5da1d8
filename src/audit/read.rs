//! Reading audit logs back: JSON Lines, one event a line, from several files
//! written by several processes.
//!
//! A log is read one line at a time and never held whole: a line that is not
//! an event, or is longer than [`MAX_LINE_BYTES`], is a [`BadLine`] named by
//! file and line, read past without being held, never a stop. Only a file
//! that cannot be read at all is an error ([`LogError`]).
//!
//! [`read_logs`] reads files one after the other, in the order given;
//! [`read_logs_by_time`] merges them by the events' times, so that the
//! requests one client sent to two processes are read in the order they
//! were sent, and the same files given in any order are read the same.

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Event, EventKind};

/// The longest line read as an event. The longest event a front end writes
/// is a plan's `list` of tool names, some 130 bytes a tool at most: 4 MiB
/// holds the names of 30,000 tools. A longer line is a bad line, read past
/// without being held.
pub const MAX_LINE_BYTES: usize = 4 << 20;

/// One line of a log: an event and the time it was written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Logged {
    /// As the writer wrote it (`2026-12-01T12:00:00.123Z`); `None` in a
    /// line without one.
    #[serde(default)]
    pub ts: Option<String>,
    #[serde(flatten)]
    pub event: Event,
}

impl Logged {
    /// One line as an event. The number `ms` is taken out before the rest
    /// is read: with the arbitrary-precision numbers the registry needs,
    /// serde cannot read a number inside a flattened enum.
    pub fn parse(text: &str) -> Result<Logged, serde_json::Error> {
        let mut value: serde_json::Value = serde_json::from_str(text)?;
        let ms = value
            .as_object_mut()
            .and_then(|o| o.remove("ms"))
            .and_then(|ms| ms.as_f64());
        let mut logged: Logged = serde_json::from_value(value)?;
        if let EventKind::Call { ms: slot, .. } = &mut logged.event.kind {
            *slot = ms;
        }
        Ok(logged)
    }

    /// The time it was written, in milliseconds since 1970 (see [`millis`]).
    pub fn millis(&self) -> Option<i64> {
        self.ts.as_deref().and_then(millis)
    }
}

/// A line that is not an event: where, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BadLine {
    /// The file, as its path was given.
    pub file: String,
    /// From 1.
    pub line: usize,
    pub message: String,
}

/// How many bad lines [`BadLines`] keeps to name; past this only counted.
pub const BAD_LINES_SHOWN: usize = 20;

/// The bad lines of a reading: all counted, the first
/// [`BAD_LINES_SHOWN`] kept to be named, so that a log of nothing but bad
/// lines takes no more memory than one of events.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BadLines {
    count: u64,
    shown: Vec<BadLine>,
    by_place: bool,
}

impl BadLines {
    /// Keeps the first bad lines met.
    pub fn new() -> Self {
        BadLines::default()
    }

    /// Keeps the first bad lines by file name and line, whatever order they
    /// are met in: for logs merged by time ([`read_logs_by_time`]), whose
    /// bad lines come in an order the order of the files changes.
    pub fn by_place() -> Self {
        BadLines {
            by_place: true,
            ..BadLines::default()
        }
    }

    pub fn push(&mut self, bad: BadLine) {
        self.count += 1;
        if !self.by_place {
            if self.shown.len() < BAD_LINES_SHOWN {
                self.shown.push(bad);
            }
            return;
        }
        let at = self
            .shown
            .partition_point(|b| (&b.file, b.line) <= (&bad.file, bad.line));
        if at < BAD_LINES_SHOWN {
            self.shown.insert(at, bad);
            self.shown.truncate(BAD_LINES_SHOWN);
        }
    }

    /// How many bad lines there were.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The ones kept to name.
    pub fn shown(&self) -> &[BadLine] {
        &self.shown
    }

    pub fn into_shown(self) -> Vec<BadLine> {
        self.shown
    }
}

/// What a log's next line is. Blank lines are skipped.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    Event(Box<Logged>),
    Bad(BadLine),
}

/// A log that could not be opened or read.
#[derive(Debug)]
pub struct LogError {
    pub path: PathBuf,
    pub error: io::Error,
}

impl fmt::Display for LogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot read `{}`: {}", self.path.display(), self.error)
    }
}

impl std::error::Error for LogError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// One log, read a line at a time.
pub struct LogFile<R> {
    name: String,
    input: R,
    buf: Vec<u8>,
    line: usize,
}

impl LogFile<BufReader<File>> {
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = File::open(path)?;
        Ok(LogFile::new(
            path.display().to_string(),
            BufReader::with_capacity(64 * 1024, file),
        ))
    }
}

impl<R: BufRead> LogFile<R> {
    /// A log read from `input`; `name` is what its bad lines are named by.
    pub fn new(name: impl Into<String>, input: R) -> Self {
        LogFile {
            name: name.into(),
            input,
            buf: Vec::new(),
            line: 0,
        }
    }

    /// The next event or bad line; `None` at the end.
    pub fn next_line(&mut self) -> io::Result<Option<Line>> {
        loop {
            let Some(len) = read_line(&mut self.input, &mut self.buf, MAX_LINE_BYTES)? else {
                return Ok(None);
            };
            self.line += 1;
            if len > MAX_LINE_BYTES as u64 {
                let message = format!(
                    "a line of {} bytes, longer than the {} MiB an event may be",
                    crate::render::thousands(len as usize),
                    MAX_LINE_BYTES >> 20
                );
                return Ok(Some(self.bad(message)));
            }
            let text = String::from_utf8_lossy(&self.buf);
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            return Ok(Some(match Logged::parse(text) {
                Ok(logged) => Line::Event(Box::new(logged)),
                Err(e) => self.bad(e.to_string()),
            }));
        }
    }

    fn bad(&self, message: String) -> Line {
        Line::Bad(BadLine {
            file: self.name.clone(),
            line: self.line,
            message,
        })
    }
}

/// Reads every log, one after the other in the order given, and hands each
/// line to `each`.
pub fn read_logs(paths: &[PathBuf], mut each: impl FnMut(Line)) -> Result<(), LogError> {
    for path in paths {
        let error = |error| LogError {
            path: path.clone(),
            error,
        };
        let mut log = LogFile::open(path).map_err(error)?;
        while let Some(line) = log.next_line().map_err(error)? {
            each(line);
        }
    }
    Ok(())
}

/// Reads every log at once and hands their events to `each` in the order of
/// their times: each file's own order is kept (a writer appends), and of the
/// files' next events the earliest comes first. A line without a time takes
/// its file's last one. Events of the same time are ordered by their text,
/// so that the order of `paths` never changes the order of the events; bad
/// lines come as they are met.
pub fn read_logs_by_time(paths: &[PathBuf], mut each: impl FnMut(Line)) -> Result<(), LogError> {
    struct Head {
        log: LogFile<BufReader<File>>,
        path: PathBuf,
        /// The next event, with its time and its text as the order knows it.
        next: Option<(i64, String, Box<Logged>)>,
        last: i64,
    }
    let advance = |head: &mut Head, each: &mut dyn FnMut(Line)| -> Result<(), LogError> {
        head.next = None;
        while let Some(line) = head.log.next_line().map_err(|error| LogError {
            path: head.path.clone(),
            error,
        })? {
            match line {
                Line::Bad(bad) => each(Line::Bad(bad)),
                Line::Event(logged) => {
                    let at = logged.millis().unwrap_or(head.last);
                    head.last = at;
                    let text = String::from_utf8_lossy(&head.log.buf).into_owned();
                    head.next = Some((at, text, logged));
                    break;
                }
            }
        }
        Ok(())
    };
    let mut heads = Vec::with_capacity(paths.len());
    for path in paths {
        let log = LogFile::open(path).map_err(|error| LogError {
            path: path.clone(),
            error,
        })?;
        let mut head = Head {
            log,
            path: path.clone(),
            next: None,
            last: i64::MIN,
        };
        advance(&mut head, &mut each)?;
        heads.push(head);
    }
    loop {
        let first = heads
            .iter()
            .enumerate()
            .filter_map(|(i, h)| h.next.as_ref().map(|(at, text, _)| (at, text, &h.path, i)))
            .min()
            .map(|(_, _, _, i)| i);
        let Some(i) = first else {
            return Ok(());
        };
        let head = &mut heads[i];
        if let Some((_, _, logged)) = head.next.take() {
            each(Line::Event(logged));
        }
        advance(head, &mut each)?;
    }
}

/// Reads one line into `buf`, keeping at most `cap` bytes of it and
/// reading past the rest: the line's length (without its newline), or
/// `None` at the end.
pub fn read_line(
    input: &mut impl BufRead,
    buf: &mut Vec<u8>,
    cap: usize,
) -> io::Result<Option<u64>> {
    buf.clear();
    let mut len: u64 = 0;
    let mut any = false;
    loop {
        let chunk = match input.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(any.then_some(len));
        }
        any = true;
        let (part, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], true),
            None => (chunk, false),
        };
        let room = cap.saturating_sub(buf.len());
        buf.extend_from_slice(&part[..part.len().min(room)]);
        len += part.len() as u64;
        let used = part.len() + usize::from(done);
        input.consume(used);
        if done {
            return Ok(Some(len));
        }
    }
}

/// `2026-12-01T12:00:00.123Z` in milliseconds since 1970; `None` for
/// anything else.
pub fn millis(ts: &str) -> Option<i64> {
    let b = ts.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = ts.get(r)?;
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())?
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' {
        return None;
    }
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, min, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let ms = match b.get(19) {
        Some(b'.') => num(20..23).unwrap_or(0),
        _ => 0,
    };
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    // Days from civil, after Howard Hinnant's algorithm.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + h) * 60 + min) * 60_000 + s * 1000 + ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_past_the_cap_is_read_past_and_only_its_length_kept() {
        let text = format!("{}\n{{}}\nlast", "x".repeat(100));
        let mut input = io::BufReader::with_capacity(7, text.as_bytes());
        let mut buf = Vec::new();
        assert_eq!(read_line(&mut input, &mut buf, 10).unwrap(), Some(100));
        assert_eq!(buf.len(), 10);
        assert_eq!(read_line(&mut input, &mut buf, 10).unwrap(), Some(2));
        assert_eq!(buf, b"{}");
        assert_eq!(read_line(&mut input, &mut buf, 10).unwrap(), Some(4));
        assert_eq!(buf, b"last");
        assert_eq!(read_line(&mut input, &mut buf, 10).unwrap(), None);
    }

    #[test]
    fn millis_reads_the_log_s_times() {
        assert_eq!(millis("1970-01-01T00:00:00.000Z"), Some(0));
        assert_eq!(millis("2026-12-01T12:00:00.123Z"), Some(1_796_126_400_123));
        assert_eq!(millis("2026-12-01"), None);
        assert_eq!(millis("2026-13-01T00:00:00.000Z"), None);
    }

    #[test]
    fn bad_lines_are_named_by_line_and_blank_ones_skipped() {
        let text = "\n{\"version\":1,\"event\":\"restart\",\"session\":\"s\"}\nnot json\n";
        let mut log = LogFile::new("a.jsonl", text.as_bytes());
        assert!(matches!(log.next_line().unwrap(), Some(Line::Event(_))));
        match log.next_line().unwrap() {
            Some(Line::Bad(b)) => assert_eq!((b.file.as_str(), b.line), ("a.jsonl", 3)),
            other => panic!("expected a bad line, got {other:?}"),
        }
        assert!(log.next_line().unwrap().is_none());
    }

    /// Two processes' logs of one client: merged by time, whichever is
    /// given first.
    #[test]
    fn logs_merged_by_time_read_the_same_in_any_order() {
        let dir = std::env::temp_dir().join(format!("toolpolicy-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let line = |m: u32, n: u32| {
            format!(
                "{{\"ts\":\"2026-12-01T00:{m:02}:00.000Z\",\"version\":1,\"session\":\"s{n}\",\"event\":\"restart\"}}\n"
            )
        };
        let (a, b) = (dir.join("a.jsonl"), dir.join("b.jsonl"));
        std::fs::write(&a, [line(1, 1), line(3, 3), "oops\n".into()].concat()).unwrap();
        std::fs::write(&b, [line(0, 0), line(2, 2), line(3, 4)].concat()).unwrap();
        let read = |paths: &[PathBuf]| {
            let mut seen = Vec::new();
            read_logs_by_time(paths, |l| {
                if let Line::Event(e) = l {
                    seen.push(e.event.session.unwrap_or_default());
                }
            })
            .unwrap();
            seen
        };
        let one = read(&[a.clone(), b.clone()]);
        assert_eq!(one, ["s0", "s1", "s2", "s3", "s4"]);
        assert_eq!(read(&[b, a]), one);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

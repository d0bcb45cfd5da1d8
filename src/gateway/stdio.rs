//! A local server's standard input and output as an MCP transport: rmcp's
//! line-delimited JSON-RPC over the child's pipes, with two things of the
//! gateway's own.
//!
//! - An answer over rmcp's limit for one message (a line of 16 MiB) is
//!   dropped by rmcp without a word, so its call would wait for its timeout
//!   and then say the server did not answer. [`OversizeGuard`] reads the
//!   child's output on its way to rmcp, keeps the top-level `id` of the line
//!   in flight (a few bytes, wherever in the line it is), and after a line
//!   over the limit hands rmcp an error for that `id` in the server's place:
//!   the call ends at once and says why, and the server's other calls go on.
//! - The process is shut down as MCP asks of a client (its input closed,
//!   then `SIGTERM`, then `SIGKILL`, each after a wait), and killed when the
//!   transport is dropped.

use std::io;
use std::pin::Pin;
use std::process::Stdio;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::{AsyncRwTransport, DEFAULT_MAX_LINE_LENGTH};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

/// How long a server has to exit after its input is closed, and again after
/// `SIGTERM`.
pub const EXIT_WAIT: Duration = Duration::from_secs(3);

/// A local server's process and its MCP transport.
pub struct ChildProcess {
    /// `None` once the process has exited and been waited for.
    child: Option<Child>,
    transport: AsyncRwTransport<RoleClient, OversizeGuard<ChildStdout>, ChildStdin>,
}

impl ChildProcess {
    /// Starts `command` with its standard input and output piped to the
    /// transport, and returns its standard error for the caller to copy.
    pub fn spawn(mut command: Command) -> io::Result<(ChildProcess, Option<ChildStderr>)> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(io::Error::other(
                "the server's standard input or output is not a pipe",
            ));
        };
        let stderr = child.stderr.take();
        let guarded = OversizeGuard::new(stdout, DEFAULT_MAX_LINE_LENGTH);
        let process = ChildProcess {
            child: Some(child),
            transport: AsyncRwTransport::new_client(guarded, stdin),
        };
        Ok((process, stderr))
    }

    /// MCP's shutdown of a local server: close its input and wait for it to
    /// exit; then `SIGTERM` (Unix) and wait again; then kill it.
    async fn shut_down(&mut self) -> io::Result<()> {
        self.transport.close().await?;
        let Some(child) = self.child.as_mut() else {
            return Ok(());
        };
        if tokio::time::timeout(EXIT_WAIT, child.wait()).await.is_ok() {
            self.child = None;
            return Ok(());
        }
        #[cfg(unix)]
        if let Some(pid) = child.id().and_then(|pid| i32::try_from(pid).ok()) {
            use nix::sys::signal::{Signal, kill};
            if kill(nix::unistd::Pid::from_raw(pid), Signal::SIGTERM).is_ok()
                && tokio::time::timeout(EXIT_WAIT, child.wait()).await.is_ok()
            {
                self.child = None;
                return Ok(());
            }
        }
        let killed = child.kill().await;
        self.child = None;
        killed
    }
}

impl Transport<RoleClient> for ChildProcess {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.transport.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.transport.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.shut_down()
    }
}

/// A reader of a server's output that, after each line longer than `limit`
/// bytes (its newline counted, as rmcp counts it), adds a line of its own:
/// a JSON-RPC error for the request the long line answered. The long line
/// itself passes through for rmcp to drop. Output is read straight into the
/// reader's buffer and looked at there; only after a long line are the
/// error and the bytes read behind it held, until handed on. What this
/// keeps is the few bytes of the line's `id`, whatever the line's length.
pub struct OversizeGuard<R> {
    inner: R,
    limit: usize,
    /// Bytes of the current line so far, its newline included once read.
    line_len: usize,
    scan: TopLevel,
    /// Error lines and the bytes read after them, looked at and not yet
    /// handed on: empty but after a long line.
    held: Vec<u8>,
}

impl<R> OversizeGuard<R> {
    pub fn new(inner: R, limit: usize) -> OversizeGuard<R> {
        OversizeGuard {
            inner,
            limit,
            line_len: 0,
            scan: TopLevel::default(),
            held: Vec::new(),
        }
    }

    /// Looks at bytes just read. Returns where the first error line goes
    /// (after the newline that ends a long line), with what follows that
    /// point: the error lines and the rest of `bytes` in order.
    fn look(&mut self, mut bytes: &[u8]) -> Option<(usize, Vec<u8>)> {
        let mut at = 0;
        let mut added: Option<(usize, Vec<u8>)> = None;
        while !bytes.is_empty() {
            let newline = memchr::memchr(b'\n', bytes);
            let part = &bytes[..newline.map_or(bytes.len(), |i| i + 1)];
            bytes = &bytes[part.len()..];
            at += part.len();
            if let Some((_, after)) = &mut added {
                after.extend_from_slice(part);
            }
            self.line_len = self.line_len.saturating_add(part.len());
            if newline.is_none() {
                self.scan.feed(part);
                continue;
            }
            self.scan.feed(&part[..part.len() - 1]);
            if self.line_len > self.limit
                && let Some(reply) = self.scan.error_reply(self.line_len, self.limit)
            {
                let (_, after) = added.get_or_insert_with(|| (at, Vec::new()));
                after.extend_from_slice(reply.as_bytes());
                after.push(b'\n');
            }
            self.line_len = 0;
            self.scan = TopLevel::default();
        }
        added
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for OversizeGuard<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.held.is_empty() {
            let n = buf.remaining().min(this.held.len());
            buf.put_slice(&this.held[..n]);
            this.held.drain(..n);
            return Poll::Ready(Ok(()));
        }
        let start = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        if let Some((at, after)) = this.look(&buf.filled()[start..]) {
            // Handed on up to the long line's end; the rest on later reads.
            buf.set_filled(start + at);
            this.held = after;
        }
        Poll::Ready(Ok(()))
    }
}

/// The most bytes of an `id` value kept: a JSON-RPC id is a number or a
/// short string (rmcp's are numbers).
const ID_MAX: usize = 256;

/// What a streaming look at one line has found of its top-level object:
/// the raw text of its `id` and whether it has a `method` (then it is a
/// request or notification of the server's, not an answer). It keeps no
/// more than [`ID_MAX`] bytes whatever the line's length, and skips the
/// inside of strings it has no use for a run at a time.
#[derive(Default)]
struct TopLevel {
    /// The first byte that is not white space has been seen.
    started: bool,
    /// That byte was not `{`: the line is not an object.
    not_object: bool,
    /// Nesting of objects and arrays outside strings; the top-level
    /// object's members are at depth 1, and depth 0 after it closes.
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// At depth 1: the next string is a key.
    want_key: bool,
    /// The key being read, raw and cut short (only `id` and `method`
    /// matter), while `reading_key`.
    key: Vec<u8>,
    reading_key: bool,
    /// A member's value is being read; `in_id` when it is the `id`'s.
    in_value: bool,
    in_id: bool,
    id: Option<Vec<u8>>,
    /// The `id` value is longer than [`ID_MAX`] or the key appears twice.
    id_unusable: bool,
    has_method: bool,
}

impl TopLevel {
    fn feed(&mut self, bytes: &[u8]) {
        let mut at = 0;
        while at < bytes.len() {
            if self.not_object {
                return;
            }
            // The inside of a string that is neither a key nor the id: on
            // to the next quote or backslash.
            if self.in_string && !self.escaped && !self.reading_key && !self.in_id {
                match memchr::memchr2(b'"', b'\\', &bytes[at..]) {
                    Some(skip) => at += skip,
                    None => return,
                }
            }
            self.step(bytes[at]);
            at += 1;
        }
    }

    fn step(&mut self, b: u8) {
        if !self.started {
            match b {
                b' ' | b'\t' | b'\r' => {}
                b'{' => {
                    self.started = true;
                    self.depth = 1;
                    self.want_key = true;
                }
                _ => self.not_object = true,
            }
            return;
        }
        if self.in_id && self.depth == 1 {
            match self.id.as_mut() {
                Some(id) if id.len() < ID_MAX => id.push(b),
                _ => self.id_unusable = true,
            }
        }
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                self.reading_key = false;
                return;
            }
            // Kept raw: an escape in a key makes it neither `id` nor `method`.
            if self.reading_key && self.key.len() < 8 {
                self.key.push(b);
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.want_key {
                    self.want_key = false;
                    self.reading_key = true;
                    self.key.clear();
                }
            }
            b':' if self.depth == 1 && !self.in_value => {
                self.in_value = true;
                self.has_method |= self.key == b"method";
                if self.key == b"id" {
                    self.in_id = true;
                    self.id_unusable |= self.id.is_some();
                    self.id = Some(Vec::new());
                }
            }
            b',' if self.depth == 1 => {
                self.value_ends();
                self.want_key = true;
            }
            b'{' | b'[' => self.depth = self.depth.saturating_add(1),
            b'}' | b']' => {
                if self.depth == 1 {
                    self.value_ends();
                }
                self.depth = self.depth.saturating_sub(1);
            }
            _ => {}
        }
    }

    fn value_ends(&mut self) {
        if self.in_id
            && let Some(id) = self.id.as_mut()
        {
            // The `,` or `}` that ended the value was kept with it.
            id.pop();
        }
        self.in_value = false;
        self.in_id = false;
    }

    /// The error line rmcp is handed for a line of `len` bytes that answered
    /// a request: `None` unless the line was a whole object with a usable
    /// `id` and no `method`.
    fn error_reply(&self, len: usize, limit: usize) -> Option<String> {
        let whole = self.started && !self.not_object && self.depth == 0;
        if !whole || self.has_method || self.id_unusable {
            return None;
        }
        let id: serde_json::Value = serde_json::from_slice(self.id.as_deref()?).ok()?;
        if !(id.is_number() || id.is_string()) {
            return None;
        }
        let message = format!(
            "the answer was {}, over the {} limit for one MCP message; the gateway dropped it",
            mib(len),
            mib(limit)
        );
        Some(
            serde_json::json!({
                "jsonrpc": "2.0",
                "id": id,
                "error": {"code": -32603, "message": message},
            })
            .to_string(),
        )
    }
}

/// A byte count in MiB, whole when it is, or in bytes under one.
fn mib(bytes: usize) -> String {
    let m = bytes as f64 / (1024.0 * 1024.0);
    if bytes < 1024 * 1024 {
        format!("{bytes} bytes")
    } else if bytes.is_multiple_of(1024 * 1024) {
        format!("{m:.0} MiB")
    } else {
        format!("{m:.1} MiB")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rmcp::model::{NumberOrString, ServerJsonRpcMessage};
    use serde_json::{Value, json};

    /// A reader that hands out `input` in pieces of `sizes` (cycled).
    struct Pieces<'a> {
        input: &'a [u8],
        sizes: std::iter::Cycle<std::slice::Iter<'a, usize>>,
    }

    impl AsyncRead for Pieces<'_> {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let size = self.sizes.next().copied().unwrap_or(usize::MAX).max(1);
            let n = size.min(self.input.len()).min(buf.remaining());
            buf.put_slice(&self.input[..n]);
            self.input = &self.input[n..];
            Poll::Ready(Ok(()))
        }
    }

    /// What the guard hands on for `input` given in pieces of `sizes`, read
    /// through its `AsyncRead` 64 bytes at a time.
    fn through(limit: usize, input: &[u8], sizes: &[usize]) -> Vec<u8> {
        let pieces = Pieces {
            input,
            sizes: sizes.iter().cycle(),
        };
        let mut guard = OversizeGuard::new(pieces, limit);
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut out = Vec::new();
        let mut chunk = [0u8; 64];
        loop {
            let mut buf = ReadBuf::new(&mut chunk);
            match Pin::new(&mut guard).poll_read(&mut cx, &mut buf) {
                Poll::Ready(Ok(())) if buf.filled().is_empty() => return out,
                Poll::Ready(Ok(())) => out.extend_from_slice(buf.filled()),
                other => panic!("the guard over a ready reader gave {other:?}"),
            }
        }
    }

    /// The lines the guard added to `input` (which ends with a newline).
    fn added(limit: usize, input: &str) -> Vec<Value> {
        let out = String::from_utf8(through(limit, input.as_bytes(), &[])).unwrap();
        let rest = out.strip_prefix(input).unwrap_or_else(|| {
            panic!("the input did not pass through unchanged: {out:?}");
        });
        rest.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn answer(id_first: bool, id: &str, result: &str) -> String {
        let result = json!({"content": [{"type": "text", "text": result}]});
        if id_first {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#) + "\n"
        } else {
            format!(r#"{{"result":{result},"jsonrpc":"2.0","id":{id}}}"#) + "\n"
        }
    }

    #[test]
    fn a_line_within_the_limit_passes_unchanged() {
        let line = answer(true, "7", &"y".repeat(50));
        assert!(added(line.len(), &line).is_empty());
    }

    #[test]
    fn an_answer_over_the_limit_is_followed_by_an_error_for_its_id() {
        for id_first in [true, false] {
            for (id, expected) in [("7", json!(7)), (r#""a\"b""#, json!("a\"b"))] {
                let line = answer(id_first, id, &"y".repeat(300));
                let added = added(100, &line);
                assert_eq!(added.len(), 1, "{line}");
                assert_eq!(added[0]["id"], expected, "{line}");
                assert_eq!(added[0]["error"]["code"], -32603);
                let message = added[0]["error"]["message"].as_str().unwrap();
                assert_eq!(
                    message,
                    format!(
                        "the answer was {} bytes, over the 100 bytes limit for one MCP \
                         message; the gateway dropped it",
                        line.len()
                    )
                );
            }
        }
    }

    #[test]
    fn only_a_whole_answer_with_one_top_level_id_gets_an_error() {
        let big = "y".repeat(300);
        for line in [
            // A request or notification of the server's.
            format!(
                r#"{{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{{"x":"{big}"}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"x":"{big}"}}}}"#
            ),
            // An `id` only inside the result, or only in a string.
            format!(r#"{{"jsonrpc":"2.0","result":{{"id":4,"x":"{big}"}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","result":"\"id\":5 {big}"}}"#),
            // Not an object, not whole, an id that is not a number or string,
            // an id twice.
            format!(r#"["id",6,"{big}"]"#),
            format!(r#"{{"jsonrpc":"2.0","id":7,"result":"{big}""#),
            format!(r#"{{"jsonrpc":"2.0","id":{{"n":8}},"result":"{big}"}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":9,"id":10,"result":"{big}"}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":"{big}","result":1}}"#),
            big.clone(),
        ] {
            assert!(added(100, &format!("{line}\n")).is_empty(), "{line}");
        }
    }

    proptest! {
        /// The guard's output does not depend on how the server's output is
        /// split into reads, and is the input with error lines added.
        #[test]
        fn reads_of_any_size_give_the_same_output(
            lines in proptest::collection::vec((any::<bool>(), 0u32..1000, 0usize..400), 1..8),
            sizes in proptest::collection::vec(1usize..64, 1..8),
        ) {
            let input: String = lines
                .iter()
                .map(|&(first, id, len)| answer(first, &id.to_string(), &"z".repeat(len)))
                .collect();
            let whole = through(200, input.as_bytes(), &[]);
            prop_assert_eq!(&through(200, input.as_bytes(), &sizes), &whole);
            let long = lines.iter().filter(|&&(first, id, len)| {
                answer(first, &id.to_string(), &"z".repeat(len)).len() > 200
            });
            let errors = long.clone().count();
            prop_assert_eq!(String::from_utf8(whole).unwrap().lines().count(), lines.len() + errors);
        }
    }

    /// A JSON value of a few kinds, with strings that hold what a scanner
    /// could trip on (quotes, backslashes, braces, `"id":`).
    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            any::<i64>().prop_map(Value::from),
            "[a-z \"\\\\{}\\[\\],:]{0,12}".prop_map(Value::from),
            any::<bool>().prop_map(Value::from),
            Just(Value::Null),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                proptest::collection::vec((key(), inner), 0..4)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    fn key() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("id"),
            Just("method"),
            Just("jsonrpc"),
            Just("result"),
            Just("error"),
            Just("i"),
            Just("idx"),
        ]
        .prop_map(String::from)
    }

    /// The members of an object, in the order written (a key may come twice).
    type Members = Vec<(String, Value)>;

    /// One line of a server's output: an object written member by member,
    /// with its members, or bytes that are not JSON.
    fn line() -> impl Strategy<Value = (String, Option<Members>)> {
        prop_oneof![
            3 => proptest::collection::vec((key(), value()), 0..5).prop_map(|members| {
                let written: Vec<String> = members
                    .iter()
                    .map(|(k, v)| format!("{}:{v}", Value::from(k.as_str())))
                    .collect();
                (format!("{{{}}}", written.join(",")), Some(members))
            }),
            1 => "[ -~]{0,40}".prop_map(|garbage| (garbage, None)),
        ]
    }

    /// What the guard should add after `line` (without its newline): an
    /// error for its `id` when it is over `limit` and an object with one
    /// `id`, a number or string, and no `method`. Worked out from the
    /// members the line was written from, not from the scanner's states.
    fn expected_error(line: &str, members: Option<&Members>, limit: usize) -> Option<Value> {
        let len = line.len() + 1;
        let members = members.filter(|_| len > limit)?;
        let mut ids = members.iter().filter(|(k, _)| k == "id").map(|(_, v)| v);
        let (Some(id), None) = (ids.next(), ids.next()) else {
            return None;
        };
        if members.iter().any(|(k, _)| k == "method") || !(id.is_number() || id.is_string()) {
            return None;
        }
        let message = format!(
            "the answer was {}, over the {} limit for one MCP message; the gateway dropped it",
            mib(len),
            mib(limit)
        );
        Some(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": message}}))
    }

    proptest! {
        /// Against [`expected_error`]: every line passes through as it was,
        /// and exactly the lines it names are followed by their error.
        #[test]
        fn the_guard_adds_an_error_after_exactly_the_long_answers(
            lines in proptest::collection::vec(line(), 1..6),
            limit in 10usize..120,
            sizes in proptest::collection::vec(1usize..32, 1..4),
        ) {
            let input: String = lines.iter().map(|(l, _)| format!("{l}\n")).collect();
            let out = String::from_utf8(through(limit, input.as_bytes(), &sizes)).unwrap();
            let mut out_lines = out.lines();
            for (line, members) in &lines {
                prop_assert_eq!(out_lines.next(), Some(line.as_str()));
                if let Some(expected) = expected_error(line, members.as_ref(), limit) {
                    let added = out_lines.next().map(|l| serde_json::from_str::<Value>(l).unwrap());
                    prop_assert_eq!(added, Some(expected), "after {}", line);
                }
            }
            prop_assert_eq!(out_lines.next(), None);
        }
    }

    /// rmcp's own reading of the guard's output, with rmcp's limit set as
    /// the guard's: every line over it is dropped and answered by an error,
    /// a line at it is read; the limit means the same to both.
    #[tokio::test]
    async fn rmcp_drops_each_long_line_and_reads_the_error_instead() {
        // Long enough for the error line to be within it.
        let at_limit = answer(true, "1", &"y".repeat(200));
        let limit = at_limit.len();
        let over = answer(false, "2", &"y".repeat(201));
        assert_eq!(over.len(), limit + 1);
        let input = format!("{at_limit}{over}{}", answer(true, "3", "ok"));
        let guard = OversizeGuard::new(std::io::Cursor::new(input.into_bytes()), limit);
        let (_keep, sink) = tokio::io::duplex(64);
        let mut transport = AsyncRwTransport::<RoleClient, _, _>::new_client(guard, sink)
            .with_max_line_length(limit);
        let mut seen = Vec::new();
        while let Some(message) = transport.receive().await {
            seen.push(match message {
                ServerJsonRpcMessage::Response(r) => (r.id, "result"),
                ServerJsonRpcMessage::Error(e) => (e.id.expect("an id"), "error"),
                other => panic!("unexpected {other:?}"),
            });
        }
        let n = NumberOrString::Number;
        assert_eq!(seen, [(n(1), "result"), (n(2), "error"), (n(3), "result")]);
    }
}

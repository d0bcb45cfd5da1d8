//! Arbitrary bytes as a local server's standard output, read through the
//! gateway's guard (`gateway::stdio::OversizeGuard`) on their way to rmcp.
//!
//! The first byte picks the line limit (16 to 271 bytes), the second the
//! size of each read (1 to 256 bytes); the rest is the output. Whatever it
//! holds: the guard ends, gives the same bytes whatever the read size, and
//! gives the output back with lines added only right after a line over the
//! limit. Each added line is a JSON-RPC error (-32603) whose `id` is a
//! number or string; and when the long line is JSON serde reads as an
//! object, it has that `id` at its top level and no `method`.

#![no_main]

use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tokio::io::{AsyncRead, ReadBuf};
use toolpolicy::gateway::stdio::OversizeGuard;

/// A reader that hands out `input` `step` bytes at a time.
struct Steps<'a> {
    input: &'a [u8],
    step: usize,
}

impl AsyncRead for Steps<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let n = self.step.min(self.input.len()).min(buf.remaining());
        buf.put_slice(&self.input[..n]);
        self.input = &self.input[n..];
        Poll::Ready(Ok(()))
    }
}

/// Everything the guard hands on, read `step` bytes at a time (its reader
/// is always ready, so no runtime is needed).
fn through(input: &[u8], limit: usize, step: usize, out_step: usize) -> Vec<u8> {
    let mut guard = OversizeGuard::new(Steps { input, step }, limit);
    let mut cx = Context::from_waker(Waker::noop());
    let mut out = Vec::new();
    let mut chunk = vec![0u8; out_step];
    loop {
        let mut buf = ReadBuf::new(&mut chunk);
        match Pin::new(&mut guard).poll_read(&mut cx, &mut buf) {
            Poll::Ready(Ok(())) if buf.filled().is_empty() => return out,
            Poll::Ready(Ok(())) => out.extend_from_slice(buf.filled()),
            other => panic!("the guard over a ready reader gave {other:?}"),
        }
    }
}

/// The lines of `bytes`, each with its newline (the last may have none).
fn lines(bytes: &[u8]) -> Vec<&[u8]> {
    bytes.split_inclusive(|&b| b == b'\n').collect()
}

/// The text every line the guard adds holds, and no input here does.
const ADDED: &[u8] = b"the answer was ";

fuzz_target!(|data: &[u8]| {
    let [limit, step, input @ ..] = data else {
        return;
    };
    // So that an added line cannot be taken for one of the input's.
    if input.windows(ADDED.len()).any(|w| w == ADDED) {
        return;
    }
    let limit = 16 + usize::from(*limit);
    let step = 1 + usize::from(*step);
    let out = through(input, limit, step, 64);
    assert_eq!(
        out,
        through(input, limit, 4096, 7),
        "the output depends on the reads"
    );

    let mut out_lines = lines(&out).into_iter().peekable();
    for line in lines(input) {
        assert_eq!(out_lines.next(), Some(line), "a line of the input changed");
        let long = line.ends_with(b"\n") && line.len() > limit;
        let Some(next) = out_lines.next_if(|l| l.windows(ADDED.len()).any(|w| w == ADDED)) else {
            continue;
        };
        assert!(long, "a line added after a line within the limit");
        let error: Value = serde_json::from_slice(next).expect("an added line is JSON");
        assert_eq!(error["jsonrpc"], "2.0");
        assert_eq!(error["error"]["code"], -32603);
        let id = &error["id"];
        assert!(id.is_number() || id.is_string(), "an error for the id {id}");
        if let Ok(Value::Object(members)) = serde_json::from_slice::<Value>(line) {
            assert_eq!(members.get("id"), Some(id), "an error for another id");
            assert!(!members.contains_key("method"), "an error for a request");
        }
    }
    assert_eq!(out_lines.next(), None, "a line added where none was due");
});

//! The language server driven by arbitrary messages: documents opened,
//! changed (often half-typed: a generated policy cut anywhere, or raw
//! bytes), saved and closed, and every request it answers (hover,
//! completion, formatting, quick fixes, definitions) at any position,
//! including positions past the end of a line or inside a character, plus
//! requests with the wrong parameters and methods it does not know. After
//! every message each waiting document's diagnostics are published.
//!
//! A panic anywhere is a finding (libFuzzer's hook aborts on it, even where
//! the server would catch it and answer an error), and so is an answer that
//! says the request failed as a bug, an answer to no request, or a request
//! left unanswered.

#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Instant;

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use toolpolicy::lsp::{DEBOUNCE, Flow, Message, Server};
use toolpolicy_fuzz::cases::{self, Dice, SplitMix};
use toolpolicy_fuzz::{Bytes, world};

/// Messages per input.
const MAX_OPS: usize = 32;

/// The workspace: a registry and the server's settings file naming it, so
/// that hover and completion have tools to talk about. Written once per
/// process; nothing in it changes.
fn workspace() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("toolpolicy-fuzz-lsp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temporary folder");
        let registry = world::registry_json(&mut SplitMix::for_group(1, 0), 8);
        std::fs::write(dir.join("tools.json"), registry).expect("registry");
        std::fs::write(dir.join(".policy-lsp.toml"), "registry = \"tools.json\"\n")
            .expect("settings");
        dir
    })
}

/// The documents: policies inside the workspace and outside it (no
/// registry), an unsaved buffer, and the gateway's two JSON files.
fn uris() -> &'static [String] {
    static URIS: OnceLock<Vec<String>> = OnceLock::new();
    URIS.get_or_init(|| {
        let dir = workspace().display().to_string();
        vec![
            format!("file://{dir}/a.policy"),
            format!("file://{dir}/b%20c.policy"),
            "file:///nonexistent/toolpolicy-fuzz/d.policy".to_string(),
            "untitled:Untitled-1".to_string(),
            format!("file://{dir}/servers.json"),
            format!("file://{dir}/clients.json"),
        ]
    })
}

/// Characters that reach the parser's corners: multi-byte and astral
/// (two UTF-16 units), line ends of every kind, a byte order mark.
const ODD: [&str; 8] = ["é", "搜", "😀", "\r\n", "\r", "\u{feff}", "\"", "\\"];

fn text(d: &mut Bytes<'_>) -> String {
    match d.below(4) {
        // A whole generated policy.
        0 => cases::policy(d, 8),
        // Half-typed: a generated policy cut at any character.
        1 => {
            let full = cases::policy(d, 8);
            let cut = d.below(full.chars().count() + 1);
            full.chars().take(cut).collect()
        }
        // A generated policy with odd characters spliced in.
        2 => {
            let full = cases::policy(d, 6);
            let mut chars: Vec<String> = full.chars().map(String::from).collect();
            for _ in 0..d.below(4) {
                let at = d.below(chars.len() + 1);
                chars.insert(at, (*d.pick(&ODD)).to_string());
            }
            chars.concat()
        }
        // Whatever bytes are left, read leniently.
        _ => {
            let n = d.below(512);
            let bytes: Vec<u8> = (0..n).map(|_| d.below(256) as u8).collect();
            String::from_utf8_lossy(&bytes).into_owned()
        }
    }
}

fn position(d: &mut Bytes<'_>) -> Value {
    json!({ "line": d.below(40), "character": d.below(120) })
}

fn doc(uri: &str) -> Value {
    json!({ "uri": uri })
}

fn notification(method: &str, params: Value) -> Message {
    serde_json::from_value(json!({ "jsonrpc": "2.0", "method": method, "params": params }))
        .expect("a notification")
}

fn request(id: i32, method: &str, params: Value) -> Message {
    serde_json::from_value(
        json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }),
    )
    .expect("a request")
}

/// Parameters of the wrong shape: a request must answer them with an
/// error, never fail.
fn wrong(d: &mut Bytes<'_>) -> Value {
    match d.below(5) {
        0 => Value::Null,
        1 => json!(7),
        2 => json!({ "textDocument": 3 }),
        3 => json!({ "textDocument": { "uri": "not a uri" }, "position": { "line": -1 } }),
        _ => json!([]),
    }
}

/// Every method a request is sent with: the first three take a position
/// (formatting and code actions have messages of their own below).
const REQUESTS: [&str; 6] = [
    "textDocument/hover",
    "textDocument/completion",
    "textDocument/definition",
    "textDocument/formatting",
    "textDocument/codeAction",
    "workspace/symbol",
];

fn message(d: &mut Bytes<'_>, id: i32, version: &mut i32) -> Message {
    let uri = d.pick(uris()).clone();
    *version += 1;
    match d.below(12) {
        0 | 1 => notification(
            "textDocument/didOpen",
            json!({ "textDocument": {
                "uri": uri, "languageId": "policy", "version": *version, "text": text(d),
            } }),
        ),
        2 | 3 => notification(
            "textDocument/didChange",
            json!({
                "textDocument": { "uri": uri, "version": *version },
                "contentChanges": [{ "text": text(d) }],
            }),
        ),
        4 => notification(
            "textDocument/didClose",
            json!({ "textDocument": doc(&uri) }),
        ),
        5 => notification("textDocument/didSave", json!({ "textDocument": doc(&uri) })),
        6 => request(
            id,
            "textDocument/codeAction",
            json!({
                "textDocument": doc(&uri),
                "range": { "start": position(d), "end": position(d) },
                "context": { "diagnostics": [] },
            }),
        ),
        7 => request(
            id,
            "textDocument/formatting",
            json!({
                "textDocument": doc(&uri),
                "options": { "tabSize": 4, "insertSpaces": true },
            }),
        ),
        8 => request(id, *d.pick(&REQUESTS), wrong(d)),
        9 if d.below(8) == 0 => request(id, "shutdown", Value::Null),
        _ => {
            let params = json!({ "textDocument": doc(&uri), "position": position(d) });
            request(id, *d.pick(&REQUESTS[..3]), params)
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut d = Bytes(arbitrary::Unstructured::new(data));
    let root = format!("file://{}", workspace().display());
    let (mut server, result) = Server::initialize(json!({
        "processId": null,
        "rootUri": root,
        "capabilities": {},
    }));
    assert!(result.get("capabilities").is_some());
    let mut version = 0;
    for id in 0..MAX_OPS as i32 {
        if d.is_empty() {
            break;
        }
        let msg = message(&mut d, id, &mut version);
        let is_request = matches!(msg, Message::Request(_));
        let flow = server.receive(msg);
        // Every document waiting for diagnostics gets them now.
        server.publish_due(Instant::now() + DEBOUNCE * 2);
        let mut answered = 0;
        for out in server.outgoing() {
            match out {
                Message::Response(r) => {
                    assert_eq!(r.id, id.into(), "an answer to another request");
                    // -32603, the protocol's internal error: what a handler
                    // that failed answers.
                    if let Err(e) = &r.response_result {
                        assert_ne!(e.code, -32603, "request failed: {}", e.message);
                    }
                    answered += 1;
                }
                Message::Notification(n) => {
                    assert_eq!(n.method, "textDocument/publishDiagnostics");
                }
                Message::Request(r) => panic!("the server asked `{}`", r.method),
            }
        }
        assert_eq!(answered, usize::from(is_request), "requests answer once");
        if flow == Flow::Exit {
            break;
        }
    }
});

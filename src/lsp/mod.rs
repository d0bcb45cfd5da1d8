//! The language server of `policy lsp`: diagnostics, hover, completion,
//! formatting, definitions and quick fixes for `.policy` files, and
//! diagnostics for the gateway's servers and clients files (docs/editor.md).
//!
//! One thread answers every message in order; the transport (rust-analyzer's
//! `lsp-server`) reads and writes on threads of its own. Diagnostics are
//! published a little after the last change of a document (the debounce),
//! so that typing is not answered with a check per key; every request is
//! answered at once from the latest text. Parsing and linting are linear in
//! the file, so a half-typed file is answered as fast as a whole one, and a
//! handler that fails (or panics) answers an error, never stops the server.

// `lsp_types::Uri` keeps its parsed parts in a cell; it hashes and compares
// by its text, which never changes, so it is a sound map key.
#![allow(clippy::mutable_key_type)]

mod completion;
mod config;
mod diagnostics;
mod edits;
#[cfg(feature = "gateway")]
mod gateway_files;
mod hover;
mod locate;
mod text;
mod words;

use std::collections::HashMap;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub use lsp_server::{Connection, Message};
use lsp_server::{ErrorCode, Notification, Request, Response};
use lsp_types::{
    CodeActionKind, CodeActionOptions, CodeActionParams, CodeActionProviderCapability,
    CompletionOptions, CompletionParams, DidChangeTextDocumentParams, DidCloseTextDocumentParams,
    DidOpenTextDocumentParams, DocumentFormattingParams, GotoDefinitionParams, Hover,
    HoverContents, HoverParams, HoverProviderCapability, InitializeParams, MarkupContent,
    MarkupKind, OneOf, PublishDiagnosticsParams, ServerCapabilities, TextDocumentSyncCapability,
    TextDocumentSyncKind, Uri,
};

use text::Text;

/// How it names itself in messages.
pub const NAME: &str = "policy lsp";

/// How long after a document's last change its diagnostics are published.
pub const DEBOUNCE: Duration = Duration::from_millis(150);

/// The transport failed: the client broke the protocol's framing or left
/// before `initialize` was answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError(pub String);

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{NAME}: {}", self.0)
    }
}

impl std::error::Error for ProtocolError {}

fn protocol(e: impl fmt::Display) -> ProtocolError {
    ProtocolError(e.to_string())
}

/// Serves on standard input and output until the client leaves; whether it
/// asked for `shutdown` first (the protocol's exit code is 0 then, else 1).
pub fn serve_stdio() -> Result<bool, ProtocolError> {
    let (connection, io) = Connection::stdio();
    let served = serve(&connection);
    drop(connection);
    let joined = io.join();
    // After `shutdown` the work is done: a client that then closes the
    // pipes before reading the last answer has not failed anything.
    match served? {
        true => Ok(true),
        false => {
            joined.map_err(protocol)?;
            Ok(false)
        }
    }
}

/// Serves one connection until the client leaves; whether it asked for
/// `shutdown` first.
pub fn serve(connection: &Connection) -> Result<bool, ProtocolError> {
    let (id, raw) = connection.initialize_start().map_err(protocol)?;
    let (mut server, result) = Server::initialize(raw);
    connection.initialize_finish(id, result).map_err(protocol)?;
    loop {
        let msg = match server.next_due() {
            Some(at) => {
                let wait = at.saturating_duration_since(Instant::now());
                match connection.receiver.recv_timeout(wait) {
                    Ok(m) => Some(m),
                    Err(e) if e.is_timeout() => None,
                    Err(_) => return Ok(server.is_shut_down()),
                }
            }
            None => match connection.receiver.recv() {
                Ok(m) => Some(m),
                Err(_) => return Ok(server.is_shut_down()),
            },
        };
        let flow = match msg {
            Some(m) => server.receive(m),
            None => {
                server.publish_due(Instant::now());
                Flow::Continue
            }
        };
        for out in server.outgoing() {
            // The writer thread is gone only when the client is: nothing to tell.
            let _ = connection.sender.send(out);
        }
        if flow == Flow::Exit {
            return Ok(server.is_shut_down());
        }
    }
}

fn capabilities() -> ServerCapabilities {
    ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Kind(TextDocumentSyncKind::FULL)),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec!["(".into(), ",".into(), ":".into()]),
            ..CompletionOptions::default()
        }),
        document_formatting_provider: Some(OneOf::Left(true)),
        definition_provider: Some(OneOf::Left(true)),
        code_action_provider: Some(CodeActionProviderCapability::Options(CodeActionOptions {
            code_action_kinds: Some(vec![CodeActionKind::QUICKFIX]),
            ..CodeActionOptions::default()
        })),
        ..ServerCapabilities::default()
    }
}

/// Whether the server goes on after a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// The client sent `exit`.
    Exit,
}

/// The server's state apart from its transport: open documents, those
/// waiting for diagnostics, the settings, and the messages to send. A
/// transport feeds it messages ([`Server::receive`]), publishes what is due
/// when [`Server::next_due`] comes ([`Server::publish_due`]), and sends
/// [`Server::outgoing`].
pub struct Server {
    docs: HashMap<Uri, Doc>,
    pending: HashMap<Uri, Instant>,
    store: config::Store,
    /// A problem with the initialization options, shown with each
    /// document's diagnostics.
    options_problem: Option<String>,
    /// Whether `shutdown` was asked: from then on only `exit` is awaited.
    shut_down: bool,
    out: Vec<Message>,
}

struct Doc {
    text: Text,
    version: i32,
}

impl Server {
    /// A server for the parameters of `initialize`, and the result to answer
    /// it with. Read leniently: a client that sends less than the
    /// protocol's types require still gets its options read, and a
    /// workspace without a folder is the current directory.
    pub fn initialize(raw: serde_json::Value) -> (Server, serde_json::Value) {
        let options = raw.get("initializationOptions").cloned();
        let params: InitializeParams = serde_json::from_value(raw).unwrap_or_default();
        #[allow(deprecated)]
        let root = params
            .workspace_folders
            .as_ref()
            .and_then(|f| f.first())
            .map(|f| f.uri.clone())
            .or(params.root_uri.clone())
            .and_then(|u| uri_path(&u))
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_default();
        let (store, options_problem) = config::Store::new(root, options.as_ref());
        let result = serde_json::json!({
            "capabilities": capabilities(),
            "serverInfo": { "name": "policy", "version": env!("CARGO_PKG_VERSION") },
        });
        let server = Server {
            docs: HashMap::new(),
            pending: HashMap::new(),
            store,
            options_problem,
            shut_down: false,
            out: Vec::new(),
        };
        (server, result)
    }

    /// Handles one message from the client; answers and notifications go
    /// to [`Server::outgoing`].
    pub fn receive(&mut self, msg: Message) -> Flow {
        match msg {
            Message::Request(req) if req.method == "shutdown" => {
                self.shut_down = true;
                self.pending.clear();
                self.out
                    .push(Message::Response(Response::new_ok(req.id, ())));
            }
            Message::Request(req) if self.shut_down => {
                self.out.push(Message::Response(Response::new_err(
                    req.id,
                    ErrorCode::InvalidRequest as i32,
                    "the server is shutting down".into(),
                )));
            }
            Message::Request(req) => {
                let response = self.answer(req);
                self.out.push(Message::Response(response));
            }
            Message::Notification(n) if n.method == "exit" => return Flow::Exit,
            Message::Notification(n) => self.notified(n),
            Message::Response(_) => {}
        }
        Flow::Continue
    }

    /// When the next document's diagnostics are due, if any is waiting.
    pub fn next_due(&self) -> Option<Instant> {
        self.pending.values().min().copied()
    }

    /// Whether the client asked for `shutdown`.
    pub fn is_shut_down(&self) -> bool {
        self.shut_down
    }

    /// The messages to send, in order; taking them empties the queue.
    pub fn outgoing(&mut self) -> Vec<Message> {
        std::mem::take(&mut self.out)
    }

    fn notified(&mut self, n: Notification) {
        match n.method.as_str() {
            "textDocument/didOpen" => {
                if let Ok(p) = serde_json::from_value::<DidOpenTextDocumentParams>(n.params) {
                    let doc = Doc {
                        text: Text::new(p.text_document.text),
                        version: p.text_document.version,
                    };
                    self.docs.insert(p.text_document.uri.clone(), doc);
                    self.pending
                        .insert(p.text_document.uri, Instant::now() + DEBOUNCE);
                }
            }
            "textDocument/didChange" => {
                if let Ok(p) = serde_json::from_value::<DidChangeTextDocumentParams>(n.params)
                    && let Some(change) = p.content_changes.into_iter().last()
                {
                    let uri = p.text_document.uri;
                    self.docs.insert(
                        uri.clone(),
                        Doc {
                            text: Text::new(change.text),
                            version: p.text_document.version,
                        },
                    );
                    self.pending.insert(uri, Instant::now() + DEBOUNCE);
                }
            }
            "textDocument/didClose" => {
                if let Ok(p) = serde_json::from_value::<DidCloseTextDocumentParams>(n.params) {
                    let uri = p.text_document.uri;
                    self.docs.remove(&uri);
                    self.pending.remove(&uri);
                    self.publish(uri, Vec::new(), None);
                }
            }
            // A settings file or registry may have changed: check again.
            "textDocument/didSave"
            | "workspace/didChangeWatchedFiles"
            | "workspace/didChangeConfiguration" => {
                let now = Instant::now();
                for uri in self.docs.keys() {
                    self.pending.insert(uri.clone(), now);
                }
            }
            _ => {}
        }
    }

    /// Publishes the diagnostics of every document due by `now`.
    pub fn publish_due(&mut self, now: Instant) {
        let due: Vec<Uri> = self
            .pending
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(u, _)| u.clone())
            .collect();
        for uri in due {
            self.pending.remove(&uri);
            let Some(doc) = self.docs.get(&uri) else {
                continue;
            };
            let version = doc.version;
            let diags = catch_unwind(AssertUnwindSafe(|| self.diagnostics(&uri)))
                .unwrap_or_else(|_| Vec::new());
            self.publish(uri, diags, Some(version));
        }
    }

    fn publish(&mut self, uri: Uri, diagnostics: Vec<lsp_types::Diagnostic>, version: Option<i32>) {
        let params = PublishDiagnosticsParams {
            uri,
            diagnostics,
            version,
        };
        self.out.push(Message::Notification(Notification::new(
            "textDocument/publishDiagnostics".into(),
            params,
        )));
    }

    /// The document's diagnostics (none for a document not open).
    fn diagnostics(&mut self, uri: &Uri) -> Vec<lsp_types::Diagnostic> {
        let path = doc_path(uri);
        let mut config = self.store.config(uri_path(uri).as_deref());
        config.problems.extend(self.options_problem.clone());
        let Some(doc) = self.docs.get(uri) else {
            return Vec::new();
        };
        #[cfg(feature = "gateway")]
        if let Some(kind) = gateway_files::kind(&path) {
            return gateway_files::diagnostics(kind, &path, &doc.text);
        }
        if path.extension().is_some_and(|e| e == "json") {
            return Vec::new();
        }
        diagnostics::compute(uri, &path, &doc.text, &config)
    }

    fn answer(&mut self, req: Request) -> Response {
        let id = req.id.clone();
        match catch_unwind(AssertUnwindSafe(|| self.handle(req))) {
            Ok(Ok(value)) => Response::new_ok(id, value),
            Ok(Err((code, message))) => Response::new_err(id, code as i32, message),
            Err(_) => Response::new_err(
                id,
                ErrorCode::InternalError as i32,
                format!("{NAME}: the request failed; this is a bug"),
            ),
        }
    }

    fn handle(&mut self, req: Request) -> Result<serde_json::Value, (ErrorCode, String)> {
        fn params<P: serde::de::DeserializeOwned>(req: Request) -> Result<P, (ErrorCode, String)> {
            serde_json::from_value(req.params).map_err(|e| {
                (
                    ErrorCode::InvalidParams,
                    format!("bad parameters of `{}`: {e}", req.method),
                )
            })
        }
        let json = |v: serde_json::Result<serde_json::Value>| {
            v.map_err(|e| (ErrorCode::InternalError, e.to_string()))
        };
        match req.method.as_str() {
            "textDocument/hover" => {
                let p: HoverParams = params(req)?;
                let pos = p.text_document_position_params;
                let uri = pos.text_document.uri;
                let config = self.store.config(uri_path(&uri).as_deref());
                let Some(doc) = self.docs.get(&uri).filter(|_| is_policy(&uri)) else {
                    return Ok(serde_json::Value::Null);
                };
                let offset = doc.text.offset(pos.position);
                let loaded = hover::Loaded::new(&doc_path(&uri), &doc.text.text, &config);
                let hover = hover::hover(&loaded, offset).map(|(md, span)| Hover {
                    contents: HoverContents::Markup(MarkupContent {
                        kind: MarkupKind::Markdown,
                        value: md,
                    }),
                    range: Some(doc.text.range(span)),
                });
                json(serde_json::to_value(hover))
            }
            "textDocument/completion" => {
                let p: CompletionParams = params(req)?;
                let pos = p.text_document_position;
                let uri = pos.text_document.uri;
                let config = self.store.config(uri_path(&uri).as_deref());
                let Some(doc) = self.docs.get(&uri).filter(|_| is_policy(&uri)) else {
                    return Ok(serde_json::Value::Null);
                };
                let offset = doc.text.offset(pos.position);
                json(serde_json::to_value(completion::complete(
                    &doc.text, offset, &config,
                )))
            }
            "textDocument/formatting" => {
                let p: DocumentFormattingParams = params(req)?;
                let uri = p.text_document.uri;
                let Some(doc) = self.docs.get(&uri).filter(|_| is_policy(&uri)) else {
                    return Ok(serde_json::Value::Null);
                };
                let name = doc_path(&uri).display().to_string();
                let edits =
                    edits::format(&name, &doc.text).map_err(|e| (ErrorCode::RequestFailed, e))?;
                json(serde_json::to_value(edits))
            }
            "textDocument/codeAction" => {
                let p: CodeActionParams = params(req)?;
                let uri = p.text_document.uri;
                let diags = self.diagnostics(&uri);
                json(serde_json::to_value(edits::code_actions(
                    &uri, p.range, &diags,
                )))
            }
            "textDocument/definition" => {
                let p: GotoDefinitionParams = params(req)?;
                let pos = p.text_document_position_params;
                let uri = pos.text_document.uri;
                let Some(doc) = self.docs.get(&uri).filter(|_| is_policy(&uri)) else {
                    return Ok(serde_json::Value::Null);
                };
                let offset = doc.text.offset(pos.position);
                json(serde_json::to_value(edits::definition(
                    &uri, &doc.text, offset,
                )))
            }
            other => Err((
                ErrorCode::MethodNotFound,
                format!("{NAME} does not answer `{other}`"),
            )),
        }
    }
}

/// Whether a document is a policy (the gateway's JSON files get
/// diagnostics only).
fn is_policy(uri: &Uri) -> bool {
    doc_path(uri).extension().is_none_or(|e| e != "json")
}

/// The local path of a `file:` URI.
fn uri_path(uri: &Uri) -> Option<PathBuf> {
    let s = uri.as_str();
    let rest = s.strip_prefix("file://")?;
    // `file:///p` has an empty authority; `file://localhost/p` names this host.
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    percent_decode(rest).map(PathBuf::from)
}

/// The path a document is checked as: its file, or its URI for a document
/// with none (an unsaved buffer).
fn doc_path(uri: &Uri) -> PathBuf {
    uri_path(uri).unwrap_or_else(|| PathBuf::from(uri.as_str()))
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(method: &str, params: serde_json::Value) -> Message {
        Message::Notification(Notification::new(method.into(), params))
    }

    /// The server apart from its transport: diagnostics wait for the
    /// debounce, a request is answered at once, `exit` ends it.
    #[test]
    fn a_server_in_memory_publishes_when_due_and_answers_at_once() {
        let (mut server, result) = Server::initialize(serde_json::json!({
            "rootUri": "file:///nonexistent/toolpolicy-lsp-test",
        }));
        assert_eq!(result["capabilities"]["hoverProvider"], true);
        let uri = "file:///nonexistent/toolpolicy-lsp-test/p.policy";
        let opened = note(
            "textDocument/didOpen",
            serde_json::json!({ "textDocument": {
                "uri": uri, "languageId": "policy", "version": 3, "text": "Defer(\n",
            } }),
        );
        let start = Instant::now();
        assert_eq!(server.receive(opened), Flow::Continue);
        assert!(
            server.outgoing().is_empty(),
            "published before the debounce"
        );
        let due = server.next_due().expect("a document waits");
        assert!(due >= start + DEBOUNCE);
        server.publish_due(start);
        assert!(server.outgoing().is_empty(), "published before it was due");
        server.publish_due(due);
        let out = server.outgoing();
        let [Message::Notification(n)] = out.as_slice() else {
            panic!("one notification expected: {out:?}");
        };
        assert_eq!(n.method, "textDocument/publishDiagnostics");
        assert_eq!(n.params["version"], 3);
        let diags = n.params["diagnostics"].as_array().unwrap();
        assert!(!diags.is_empty(), "an unclosed rule is an error");
        assert_eq!(server.next_due(), None);

        let hover = Message::Request(Request::new(
            7.into(),
            "textDocument/hover".into(),
            serde_json::json!({
                "textDocument": { "uri": uri }, "position": { "line": 0, "character": 1 },
            }),
        ));
        server.receive(hover);
        let out = server.outgoing();
        let [Message::Response(r)] = out.as_slice() else {
            panic!("one answer expected: {out:?}");
        };
        assert_eq!(r.id, 7.into());
        assert!(r.response_result.is_ok(), "{r:?}");

        let wrong = Message::Request(Request::new(8.into(), "textDocument/hover".into(), 5));
        server.receive(wrong);
        let out = server.outgoing();
        let [Message::Response(r)] = out.as_slice() else {
            panic!("one answer expected: {out:?}");
        };
        let code = r.response_result.as_ref().err().map(|e| e.code);
        assert_eq!(code, Some(ErrorCode::InvalidParams as i32));

        assert_eq!(
            server.receive(note("exit", serde_json::Value::Null)),
            Flow::Exit
        );
        assert!(!server.is_shut_down());
    }

    #[test]
    fn file_uris_become_paths() {
        let u: Uri = "file:///tmp/a%20b/p.policy".parse().unwrap();
        assert_eq!(uri_path(&u), Some(PathBuf::from("/tmp/a b/p.policy")));
        let u: Uri = "untitled:Untitled-1".parse().unwrap();
        assert_eq!(uri_path(&u), None);
        assert_eq!(doc_path(&u), PathBuf::from("untitled:Untitled-1"));
        assert_eq!(percent_decode("%zz"), None);
    }
}

//! `policy lsp`: a language server on standard input/output for `.policy`
//! files (docs/editor.md).
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
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use lsp_server::{Connection, ErrorCode, Message, Notification, Request, Response};
use lsp_types::{
    CodeActionKind, CodeActionOptions, CodeActionParams, CodeActionProviderCapability,
    CompletionOptions, CompletionParams, DidChangeTextDocumentParams, DidCloseTextDocumentParams,
    DidOpenTextDocumentParams, DocumentFormattingParams, GotoDefinitionParams, Hover,
    HoverContents, HoverParams, HoverProviderCapability, InitializeParams, MarkupContent,
    MarkupKind, OneOf, PublishDiagnosticsParams, ServerCapabilities, TextDocumentSyncCapability,
    TextDocumentSyncKind, Uri,
};

use crate::common::CliError;
use text::Text;

/// How it names itself in messages.
pub const NAME: &str = "policy lsp";

/// How long after a document's last change its diagnostics are published.
const DEBOUNCE: Duration = Duration::from_millis(150);

#[derive(clap::Args)]
pub struct Args {
    /// Accepted for clients that pass it: standard input/output is the only transport
    #[arg(long)]
    stdio: bool,
}

pub fn run(_args: Args) -> Result<ExitCode, CliError> {
    let (connection, io) = Connection::stdio();
    let served = serve(&connection);
    drop(connection);
    let joined = io.join();
    // After `shutdown` the work is done: a client that then closes the
    // pipes before reading the last answer has not failed anything. Without
    // it, the protocol asks for exit code 1.
    match served? {
        true => Ok(ExitCode::SUCCESS),
        false => {
            joined.map_err(protocol)?;
            Ok(ExitCode::from(1))
        }
    }
}

fn protocol(e: impl std::fmt::Display) -> CliError {
    CliError::Usage(format!("{NAME}: {e}"))
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

/// The server's state: open documents, those waiting for diagnostics, and
/// the settings.
struct Server<'c> {
    connection: &'c Connection,
    docs: HashMap<Uri, Doc>,
    pending: HashMap<Uri, Instant>,
    store: config::Store,
    /// A problem with the initialization options, shown with each
    /// document's diagnostics.
    options_problem: Option<String>,
    /// Whether `shutdown` was asked: from then on only `exit` is awaited.
    shut_down: bool,
}

struct Doc {
    text: Text,
    version: i32,
}

/// Serves until the client leaves; whether it asked for `shutdown` first.
fn serve(connection: &Connection) -> Result<bool, CliError> {
    let (id, raw) = connection.initialize_start().map_err(protocol)?;
    // Read leniently: a client that sends less than the protocol's types
    // require still gets its options read.
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
    connection.initialize_finish(id, result).map_err(protocol)?;
    let mut server = Server {
        connection,
        docs: HashMap::new(),
        pending: HashMap::new(),
        store,
        options_problem,
        shut_down: false,
    };
    server.run()
}

impl Server<'_> {
    fn run(&mut self) -> Result<bool, CliError> {
        loop {
            let next = self.pending.values().min().copied();
            let msg = match next {
                Some(at) => {
                    let wait = at.saturating_duration_since(Instant::now());
                    match self.connection.receiver.recv_timeout(wait) {
                        Ok(m) => m,
                        Err(e) if e.is_timeout() => {
                            self.publish_due();
                            continue;
                        }
                        Err(_) => return Ok(self.shut_down),
                    }
                }
                None => match self.connection.receiver.recv() {
                    Ok(m) => m,
                    Err(_) => return Ok(self.shut_down),
                },
            };
            match msg {
                Message::Request(req) if req.method == "shutdown" => {
                    self.shut_down = true;
                    self.pending.clear();
                    self.send(Message::Response(Response::new_ok(req.id, ())));
                }
                Message::Request(req) if self.shut_down => {
                    self.send(Message::Response(Response::new_err(
                        req.id,
                        ErrorCode::InvalidRequest as i32,
                        "the server is shutting down".into(),
                    )));
                }
                Message::Request(req) => {
                    let response = self.answer(req);
                    self.send(Message::Response(response));
                }
                Message::Notification(n) if n.method == "exit" => return Ok(self.shut_down),
                Message::Notification(n) => self.notified(n),
                Message::Response(_) => {}
            }
        }
    }

    fn send(&self, msg: Message) {
        // The writer thread is gone only when the client is: nothing to tell.
        let _ = self.connection.sender.send(msg);
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

    fn publish_due(&mut self) {
        let now = Instant::now();
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

    fn publish(&self, uri: Uri, diagnostics: Vec<lsp_types::Diagnostic>, version: Option<i32>) {
        let params = PublishDiagnosticsParams {
            uri,
            diagnostics,
            version,
        };
        self.send(Message::Notification(Notification::new(
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

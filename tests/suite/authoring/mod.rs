//! The policy author's tools: `diff`, coverage, locks, exports to clients,
//! the JSON Schemas and the language server.

mod coverage;
mod diff;
#[cfg(feature = "gateway")]
mod export;
mod lock;
mod lsp;
mod lsp_editor;
mod props_diff;
mod props_locks;
mod schemas;

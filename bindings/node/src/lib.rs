//! The toolpolicy engine as a native Node module.
//!
//! A thin adapter: every decision is the library's. This crate only reads
//! JavaScript values into the library's inputs (checking their types itself,
//! so a mistake reads as JavaScript, never as a Rust type name), and writes
//! the library's answers back as plain camelCase objects. Every error is a
//! thrown `Error` whose `diagnostics` array says where and what; nothing that
//! comes from JavaScript can panic.
//!
//! - [`engine`]: `Engine`, shared by every chat; hot reload keeps the last
//!   good one.
//! - [`session`]: `Session`, one chat: plan, search, load, call, evidence.
//! - [`cache`]: a session's last plan, tool list, provider lists and plan
//!   text, kept as frozen JavaScript objects put together from parts kept
//!   per snapshot.
//! - [`layout`]: what crosses for each of those.
//! - [`args`]: reading JavaScript arguments.
//! - [`error`]: errors with diagnostics.
//! - [`out`]: the shapes JavaScript gets back.

mod args;
mod cache;
mod engine;
mod error;
mod layout;
mod out;
mod session;
mod types;

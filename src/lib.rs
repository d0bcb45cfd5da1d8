//! A policy-driven tool-exposure engine for LLM agent runtimes.
//!
//! The pipeline, one module per step: policy text → [`syntax`](crate::parse)
//! (the only module that touches pest) → spanned [`ast`] → checked [`policy`]
//! → compiled [`table`] → [`decision`]s → per-turn plans (`runtime`). The
//! items come from a [`registry`], whose tools' MCP annotations are read once
//! into the [`hint`]s that `hint:` selectors match, and held to a policy's
//! [`lock`] file of approved definitions when the policy names one.

pub mod ast;
pub mod audit;
pub mod chars;
pub mod coverage;
pub mod decision;
pub mod diag;
pub mod diff;
pub mod explain;
#[cfg(feature = "gateway")]
pub mod export;
pub mod format;
#[cfg(feature = "gateway")]
pub mod gateway;
pub mod hint;
pub mod host;
pub mod input;
pub mod lint;
pub mod lock;
#[cfg(feature = "lsp")]
pub mod lsp;
pub mod pattern;
pub mod policy;
pub mod reference;
pub mod registry;
pub mod render;
pub mod runtime;
pub mod search;
pub mod settings;
mod syntax;
pub mod table;
pub mod terms;

pub use decision::{
    CauseKind, Context, ContextError, Decision, Exposure, ItemKind, ItemRef, Origin,
};
pub use policy::{LoadErrors, Policy};
pub use registry::{Registry, Skill, SkillList, Tool};
pub use runtime::{Engine, Plan, Session, SessionState};
pub use syntax::parse;
#[doc(hidden)]
pub use syntax::parse_with_pest;
pub use table::{Resolved, Table};

//! The policy language: the bundled corpus, parsing and checking any input,
//! the compiled table, formatting, hints, lints and the documented codes.

pub(crate) mod arbitrary;
mod diagnostics_doc;
mod differential;
mod docs_examples;
mod policies;
mod props_format;
mod props_hints;
mod props_lint;
mod props_table;
mod robustness;
mod traps;

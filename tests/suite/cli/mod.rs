//! The `policy` binary run as a user runs it: its commands and JSON
//! contracts, its output pinned, the README's commands and the packages.

mod conformance;
mod data_paths;
mod golden;
mod newcomer;
mod output;
mod packaging;
mod readme;
mod runtime;
pub(crate) mod support;
pub(crate) mod tools;

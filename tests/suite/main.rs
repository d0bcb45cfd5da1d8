//! One integration test binary: every module below is a group of tests.

mod arbitrary;
mod cli;
mod cli_runtime;
mod cli_tools;
mod conformance;
mod diagnostics_doc;
mod differential;
mod fixtures;
mod golden;
mod policies;
mod props_format;
mod props_lint;
mod props_table;
mod robustness;
mod runtime_behaviour;
mod runtime_engine;
mod runtime_props;
mod runtime_scenarios;
mod runtime_support;
mod search_recall;

//! One integration test binary: every module below is a group of tests.

mod arbitrary;
mod audit;
mod cli;
mod cli_runtime;
mod cli_tools;
mod conformance;
mod coverage;
mod data_paths;
mod diagnostics_doc;
mod diff;
mod differential;
mod docs_examples;
#[cfg(feature = "gateway")]
mod export;
mod fail_closed;
mod fixtures;
#[cfg(feature = "gateway")]
mod gateway;
#[cfg(feature = "gateway")]
mod gateway_audit;
mod gateway_balanced;
#[cfg(feature = "gateway")]
mod gateway_callers;
#[cfg(feature = "gateway")]
mod gateway_clients;
#[cfg(feature = "gateway")]
mod gateway_flags;
#[cfg(feature = "gateway")]
mod gateway_http;
#[cfg(feature = "gateway")]
mod gateway_listen;
#[cfg(feature = "gateway")]
mod gateway_listen_limits;
#[cfg(feature = "gateway")]
mod gateway_lock;
#[cfg(feature = "gateway")]
mod gateway_memory;
#[cfg(feature = "gateway")]
mod gateway_ops;
#[cfg(feature = "gateway")]
mod gateway_registry;
#[cfg(feature = "gateway")]
mod gateway_relist;
#[cfg(feature = "gateway")]
mod gateway_reload;
#[cfg(feature = "gateway")]
mod gateway_session_ids;
#[cfg(feature = "gateway")]
mod gateway_support;
#[cfg(feature = "gateway")]
mod gateway_tls;
#[cfg(feature = "gateway")]
mod gateway_urls;
mod golden;
#[cfg(feature = "gateway")]
mod http_load;
mod learn;
mod linear;
mod lock;
mod long_names;
mod lsp;
mod lsp_editor;
#[cfg(feature = "gateway")]
mod metrics;
mod newcomer;
mod output;
mod packaging;
mod policies;
mod props_diff;
mod props_format;
mod props_hints;
mod props_lint;
mod props_locks;
mod props_report;
mod props_table;
mod readme;
mod report;
mod robustness;
mod runtime_behaviour;
mod runtime_engine;
mod runtime_props;
mod runtime_scenarios;
mod runtime_support;
mod schemas;
mod search_fit;
mod search_hidden;
mod search_learning;
mod search_recall;
mod search_words;
mod team_setup;
mod traps;

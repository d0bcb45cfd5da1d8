//! One integration test binary: every module below is a group of tests.

mod fixtures;
mod policies;
mod props_table;
mod robustness;
mod search_recall;

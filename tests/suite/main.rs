//! One integration test binary: every module below is a group of tests, in
//! a folder per front end and per part of the engine, as `src/` is laid out.

mod audit;
mod authoring;
mod cli;
mod fixtures;
#[cfg(feature = "gateway")]
mod gateway;
mod language;
mod runtime;
mod search;

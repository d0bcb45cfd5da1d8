//! `policy gateway`: over stdio and HTTP, in front of local and remote
//! servers, listening for many callers, and run as a team runs it.

mod audit;
mod balanced;
mod callers;
pub(crate) mod clients;
mod flags;
mod http;
mod http_load;
pub(crate) mod listen;
mod listen_limits;
mod lock;
mod memory;
mod ops;
mod registry;
mod relist;
mod reload;
mod session_ids;
mod stdio;
pub(crate) mod support;
mod team_setup;
mod tls;
mod urls;

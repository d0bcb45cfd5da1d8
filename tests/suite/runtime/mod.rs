//! The runtime engine through the library API: sessions, plans, replayed
//! scenarios, the decisions that fail closed and the inputs that stay linear.

mod behaviour;
mod engine;
mod fail_closed;
mod linear;
mod long_names;
mod props;
mod scenarios;
pub(crate) mod support;

//! Search: what it finds and activates, what it never shows, and the terms
//! `policy learn` teaches it.

mod fit;
mod hidden;
mod learn;
pub(crate) mod learning;
pub(crate) mod recall;
mod words;

//! The body every HTTP answer of the listener carries, rmcp's and the
//! gateway's own alike: the health pages and the listener both answer with
//! it, so it sits below both.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;

/// A response body, as rmcp's answers have it.
pub type Body = BoxBody<Bytes, Infallible>;

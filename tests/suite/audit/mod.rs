//! The audit log, `policy report` on it, and its events counted for
//! Prometheus.

mod log;
#[cfg(feature = "gateway")]
mod metrics;
mod props_report;
pub(crate) mod report;

//! `--audit FILE` and `--audit-no-queries`, shared by the commands that can
//! write an audit log (`replay`, `gateway`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use toolpolicy::audit::writer::{AuditLog, Options, Warn};

#[derive(clap::Args, Debug, Clone, Default)]
pub struct AuditArgs {
    /// Append an audit log (JSON Lines, one event per line) to this file
    #[arg(long, value_name = "FILE")]
    pub audit: Option<PathBuf>,
    /// Leave search queries out of the audit log
    #[arg(long, requires = "audit")]
    pub audit_no_queries: bool,
}

impl AuditArgs {
    /// The open log, or `None`; a log that cannot be opened is a warning on
    /// standard error, never a stop.
    pub fn open(&self) -> Option<Arc<AuditLog>> {
        self.open_with(Arc::new(|w: String| eprintln!("{w}")))
    }

    /// [`AuditArgs::open`], the writer's later warnings (writing failed, or
    /// works again) given to `warn`.
    pub fn open_with(&self, warn: Warn) -> Option<Arc<AuditLog>> {
        let path = self.audit.as_ref()?;
        let options = Options {
            queries: !self.audit_no_queries,
            ..Options::default()
        };
        match AuditLog::open_with(path, options, warn) {
            Ok(log) => Some(log),
            Err(e) => {
                eprintln!(
                    "warning: cannot open the audit log `{}`: {e}; going on without one",
                    toolpolicy::chars::escape(&path.display().to_string())
                );
                None
            }
        }
    }
}

/// Writes what is queued (at most a few seconds) and says so when writing
/// failed or events were dropped.
pub fn close(log: &AuditLog) {
    log.flush(Duration::from_secs(5));
    if let Some(e) = log.take_error() {
        eprintln!("warning: the audit log could not be written: {e}");
    }
    let dropped = log.dropped();
    if dropped > 0 {
        eprintln!("warning: {dropped} audit events were dropped: the log was not written in time");
    }
}

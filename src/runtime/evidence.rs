//! Activation evidence (docs/runtime.md): what in the effective context of a chat
//! proves that a tool was activated or used, so activations can be rebuilt at a
//! new prompt, a mode switch or a restart.
//!
//! Only what a rebuild can use is kept: the tools that a successful search or
//! load added and the tools whose call returned successfully, each once, in the
//! order of its first evidence. A failed, interrupted or missing result
//! contributes nothing, so it is not stored. Compaction drops the whole log: the
//! evidence before it is no longer in the effective context.

use serde::{Deserialize, Serialize};

use super::indices::IndexList;

/// The status of a tool result as it stands in the chat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultStatus {
    /// The tool returned normally.
    #[default]
    Ok,
    /// The tool ran and reported an error.
    Error,
    /// The call was cut off (the user stopped the turn, the runtime crashed).
    Interrupted,
    /// The call has no result in the transcript.
    Missing,
}

impl ResultStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ResultStatus::Ok => "ok",
            ResultStatus::Error => "error",
            ResultStatus::Interrupted => "interrupted",
            ResultStatus::Missing => "missing",
        }
    }

    /// Whether a result with this status is evidence at all.
    pub fn is_ok(self) -> bool {
        self == ResultStatus::Ok
    }
}

/// Registry indices with evidence, in order of first evidence, each once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct EvidenceLog(IndexList);

impl EvidenceLog {
    pub fn from_indices(indices: impl IntoIterator<Item = u32>) -> Self {
        EvidenceLog(indices.into_iter().collect())
    }

    pub fn record(&mut self, tool: u32) {
        self.0.insert(tool);
    }

    /// Drops everything; returns how many tools had evidence.
    pub fn clear(&mut self) -> usize {
        self.0.clear()
    }

    pub fn indices(&self) -> &[u32] {
        self.0.as_slice()
    }

    /// Moves the indices to another registry (see [`IndexList::remap`]).
    pub fn remap(&mut self, f: impl FnMut(u32) -> Option<u32>) {
        self.0.remap(f);
    }
}

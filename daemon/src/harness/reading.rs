//! What every harness's session file reader gives the core: the figure,
//! the compactions seen, where reading stopped. No harness owns these.

use super::Trigger;
use serde::{Deserialize, Serialize};

/// A compaction the session's file records (Claude Code's
/// `compact_boundary`, Codex's `compacted`, a fall in Gemini CLI's figure,
/// Qwen Code's `chat_compression`, Copilot CLI's `compaction_complete`,
/// OpenCode's `compacted` line).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Boundary {
    pub uuid: Option<String>,
    /// `manual` or `auto`, when the file says.
    pub trigger: Option<Trigger>,
    pub pre_tokens: Option<u64>,
    pub post_tokens: Option<u64>,
    pub timestamp: Option<String>,
}

impl Boundary {
    /// Where the record starts in its file, for a boundary named `prefix`
    /// followed by that offset (as the readers that find records by byte
    /// name them).
    pub fn byte_offset(&self, prefix: &str) -> Option<u64> {
        self.uuid.as_deref()?.strip_prefix(prefix)?.parse().ok()
    }
}

/// What the session's file says about the context right now.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    pub tokens: u64,
    pub model: Option<String>,
    /// The figure is a compaction's estimate (`postTokens`), not a reply's.
    pub from_boundary: bool,
    /// The reply the figure comes from.
    pub message_id: Option<String>,
    /// Why the latest figure the file gave cannot be used; `tokens`
    /// is then the last good one (0 when there was none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid: Option<String>,
}

impl Usage {
    /// `current` marked invalid: the figure stands, the reading does not.
    pub fn invalidated(current: Option<Usage>, why: String) -> Usage {
        Usage {
            invalid: Some(why),
            ..current.unwrap_or_default()
        }
    }
}

/// Where a session's reading stopped: the byte after the last complete line.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Cursor {
    pub offset: u64,
    pub dev: u64,
    pub ino: u64,
}

/// How a reading went through the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Unchanged,
    Forward,
    Backward,
}

/// One reading of a session's file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// `None` when the file has no usable figure yet.
    pub usage: Option<Usage>,
    /// Compactions seen in this reading, oldest first.
    pub boundaries: Vec<Boundary>,
    pub cursor: Cursor,
    pub method: Method,
    /// Bytes read from the file.
    pub bytes_read: u64,
}

/// One look at a session's own file (Claude Code's transcript, Codex's
/// rollout, Gemini CLI's and Qwen Code's chat files), in terms every
/// harness shares.
#[derive(Debug, Clone)]
pub struct SessionReading {
    /// The figure, the compactions seen, and where reading stopped.
    pub reading: Reading,
    /// The window the harness itself reported, if its file says.
    pub window: Option<u64>,
    /// Where the harness's own settings say it compacts, if they say.
    pub compaction_point: Option<HarnessPoint>,
}

/// A compaction point a harness's settings give: a number of tokens or a
/// share of the window, and where it was set.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HarnessPoint {
    pub tokens: Option<u64>,
    pub fraction: Option<f64>,
    pub basis: String,
}

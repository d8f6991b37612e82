//! Claude Code's `statusLine` input: the one place its own figures (the
//! window, the reply's usage) reach hookd without a transcript read.

use protocol::pressure::{CONTEXT_COUNTS, token_count, token_sum};
use protocol::wire::Harness;
use serde_json::Value;
use std::path::PathBuf;

/// Only Claude Code has a statusLine.
pub const HARNESS: Harness = Harness::ClaudeCode;

/// What hookd takes from one statusLine input.
pub struct Input {
    pub session_id: Option<String>,
    pub window: Option<u64>,
    /// `None` before the first reply; an error names what cannot be right.
    pub tokens: Option<Result<u64, String>>,
    pub model: Option<String>,
    pub project: Option<PathBuf>,
    pub transcript: Option<PathBuf>,
}

pub fn parse(input: &Value) -> Input {
    let window = token_count(
        "context_window_size",
        input["context_window"].get("context_window_size"),
    )
    .ok()
    .flatten()
    .filter(|w| *w > 0);
    let usage = &input["context_window"]["current_usage"];
    let tokens = (!usage.is_null()).then(|| {
        token_sum(usage, &CONTEXT_COUNTS)
            .map_err(|why| format!("invalid usage in the statusLine input: {why}"))
    });
    // Relative paths would resolve against the daemon's own directory.
    let absolute = |v: &Value| v.as_str().map(PathBuf::from).filter(|p| p.is_absolute());
    Input {
        session_id: input["session_id"]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(str::to_owned),
        window,
        tokens,
        model: input["model"]["id"].as_str().map(str::to_owned),
        project: absolute(&input["workspace"]["project_dir"]).or_else(|| absolute(&input["cwd"])),
        transcript: absolute(&input["transcript_path"]),
    }
}

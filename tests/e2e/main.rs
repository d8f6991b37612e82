//! End-to-end scenarios: the real agent clients run headless against
//! scripted mocks of their model APIs, with the real hookctl and hookd wired
//! into a real git project. Only the model is mocked.
//!
//! - Claude Code 2.1.330 (`$HOOKD_E2E_CLAUDE`) against `mock_api.py`, a mock
//!   of the Anthropic Messages API: see `hookd_tests::e2e`.
//! - Codex CLI 0.169.0 (`$HOOKD_E2E_CODEX`, `codex.rs`) and Gemini CLI 0.61.0
//!   (`$HOOKD_E2E_GEMINI`, `gemini.rs`) against `hookd-mock-model`: see
//!   `hookd_tests::e2e_agents`; what they check alike is in `agents.rs`.
//! - Qwen Code 0.24.4 (`$HOOKD_E2E_QWEN`, `qwen_code.rs`) against
//!   `hookd-mock-model`'s Chat Completions API, the same way.
//! - GitHub Copilot CLI 1.0.102 (`$HOOKD_E2E_COPILOT`, `copilot_cli.rs`)
//!   against the same Chat Completions API, offline.
//! - OpenCode 1.18.33 (`$HOOKD_E2E_OPENCODE`, `opencode.rs`) against the
//!   same Chat Completions API.
//!
//! A scenario whose client is not named skips (and says so), unless
//! `HOOKD_E2E=require`. `tests/tools/install-clients` installs them all.

mod agents;
mod codex;
mod codex_points;
mod compaction;
mod copilot_cli;
mod fail_open;
mod gemini;
mod gemini_points;
mod memory;
mod opencode;
mod qwen_code;
mod resume_shapes;
mod sessions;
mod thresholds;
mod workflow_checks;

use serde_json::Value;

/// How Claude Code opens the conversation after a compaction.
pub const CONTINUATION: &str = "This session is being continued from a previous conversation";

/// Whether any line of `text` says that `event`'s hook completed successfully,
/// as Claude Code reports compaction hooks: `PreCompact [cmd] completed successfully`.
pub fn hook_reported_success(text: &str, event: &str) -> bool {
    text.lines().any(|l| {
        // `hookctl install` wires hookctl by its full path: `PreCompact [/…/hookctl hook pre-compact]`.
        l.contains(&format!("{event} ["))
            && l.contains("hookctl hook")
            && l.contains("] completed successfully")
    })
}

/// Transcript attachments of one type (`hook_system_message`, ...).
pub fn attachments<'a>(transcript: &'a [Value], kind: &str) -> Vec<&'a Value> {
    transcript
        .iter()
        .filter(|e| e["type"] == "attachment" && e["attachment"]["type"] == kind)
        .map(|e| &e["attachment"])
        .collect()
}

/// The `tool_use` blocks of the transcript's assistant entries, by tool name.
pub fn tool_uses<'a>(transcript: &'a [Value], name: &str) -> Vec<&'a Value> {
    transcript
        .iter()
        .filter(|e| e["type"] == "assistant")
        .flat_map(|e| e["message"]["content"].as_array().into_iter().flatten())
        .filter(|b| b["type"] == "tool_use" && b["name"] == name)
        .collect()
}

/// The text of the `tool_result` answering `tool_use_id`.
pub fn tool_result(transcript: &[Value], tool_use_id: &str) -> String {
    transcript
        .iter()
        .filter(|e| e["type"] == "user")
        .flat_map(|e| e["message"]["content"].as_array().into_iter().flatten())
        .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == tool_use_id)
        .map(|b| match &b["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .unwrap_or_else(|| panic!("no tool_result for {tool_use_id}"))
}

//! Codex CLI's wiring: `hooks.json` (user: `~/.codex/hooks.json`, or
//! `$CODEX_HOME`; project: `<dir>/.codex/hooks.json`), in Claude Code's
//! layout with timeouts in seconds. Sources: openai/codex
//! `codex-rs/config/src/hook_config.rs` and developers.openai.com/codex/hooks.
//!
//! Codex runs a new or changed hook only after the person has trusted it
//! (`/hooks` in the Codex TUI, or its start-up review); project hooks load
//! only in a trusted project. hookctl cannot do that for them.

use super::{HookSpec, Scope, Wiring};
use anyhow::Context;
use protocol::wire::Harness;
use serde_json::{Value, json};
use std::path::PathBuf;

const HOOKS: &[HookSpec] = &[
    HookSpec {
        event: "SessionStart",
        matcher: Some("startup|resume|clear|compact"),
        arg: "session-start",
        timeout: 30,
    },
    HookSpec {
        event: "UserPromptSubmit",
        matcher: None,
        arg: "user-prompt-submit",
        timeout: 10,
    },
    HookSpec {
        event: "PostToolUse",
        matcher: None,
        arg: "post-tool-use",
        timeout: 10,
    },
    HookSpec {
        event: "PreCompact",
        matcher: None,
        arg: "pre-compact",
        timeout: 60,
    },
    HookSpec {
        event: "PostCompact",
        matcher: None,
        arg: "post-compact",
        timeout: 10,
    },
    HookSpec {
        event: "Stop",
        matcher: None,
        arg: "stop",
        timeout: 10,
    },
];

pub const WIRING: Wiring = Wiring {
    harness: Harness::Codex,
    hooks: HOOKS,
    file: hooks_file,
    handler,
    after_install: "Codex runs new or changed hooks only once you trust them: start codex and \
                    accept the hook review, or open /hooks and trust each hookd hook. \
                    Project hooks also need the project to be trusted.",
};

fn handler(spec: &HookSpec, command: String) -> Value {
    json!({ "type": "command", "command": command, "timeout": spec.timeout })
}

pub fn hooks_file(scope: &Scope) -> anyhow::Result<PathBuf> {
    match scope {
        Scope::Project(dir) => Ok(dir.join(".codex/hooks.json")),
        Scope::User => Ok(codex_home()?.join("hooks.json")),
    }
}

/// `$CODEX_HOME`, else `~/.codex`.
pub fn codex_home() -> anyhow::Result<PathBuf> {
    std::env::var_os("CODEX_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".codex")))
        .context("cannot find Codex's settings: HOME is not set")
}

//! Gemini CLI's wiring: the `hooks` object of `settings.json` (user:
//! `~/.gemini/settings.json`; project: `<dir>/.gemini/settings.json`), in
//! Claude Code's layout with timeouts in milliseconds and a `name` per hook
//! (what `/hooks enable|disable` take). Sources: google-gemini/gemini-cli
//! `docs/hooks/index.md` and `docs/hooks/reference.md`.
//!
//! Gemini CLI allows comments in settings.json; hookctl refuses such a file
//! rather than drop them (add the entries from `hooks/gemini-cli/` by hand).

use super::{HookSpec, Scope, Wiring};
use anyhow::Context;
use protocol::wire::Harness;
use serde_json::{Value, json};
use std::path::PathBuf;

/// Lifecycle matchers are exact strings in Gemini CLI, so SessionStart has
/// none (every source).
const HOOKS: &[HookSpec] = &[
    HookSpec {
        event: "SessionStart",
        matcher: None,
        arg: "session-start",
        timeout: 30_000,
    },
    HookSpec {
        event: "BeforeAgent",
        matcher: None,
        arg: "before-agent",
        timeout: 10_000,
    },
    HookSpec {
        event: "AfterTool",
        matcher: None,
        arg: "after-tool",
        timeout: 10_000,
    },
    HookSpec {
        event: "PreCompress",
        matcher: None,
        arg: "pre-compress",
        timeout: 60_000,
    },
    HookSpec {
        event: "AfterAgent",
        matcher: None,
        arg: "after-agent",
        timeout: 10_000,
    },
    HookSpec {
        event: "SessionEnd",
        matcher: None,
        arg: "session-end",
        timeout: 10_000,
    },
];

pub const WIRING: Wiring = Wiring {
    harness: Harness::GeminiCli,
    hooks: HOOKS,
    file: settings_file,
    handler,
    after_install: "Gemini CLI reads hooks when it starts: restart it. If /hooks panel says the \
                    hooks system is disabled, enable it in /settings (Advanced, \"Enable Hooks System\").",
};

fn handler(spec: &HookSpec, command: String) -> Value {
    json!({
        "name": format!("hookd-{}", spec.arg),
        "type": "command",
        "command": command,
        "timeout": spec.timeout,
    })
}

pub fn settings_file(scope: &Scope) -> anyhow::Result<PathBuf> {
    match scope {
        Scope::Project(dir) => Ok(dir.join(protocol::project::GEMINI_CLI_PROJECT_SETTINGS)),
        Scope::User => Ok(gemini_home()?.join(".gemini/settings.json")),
    }
}

/// Gemini CLI's home: `$GEMINI_CLI_HOME`, else the user's home.
pub fn gemini_home() -> anyhow::Result<PathBuf> {
    std::env::var_os("GEMINI_CLI_HOME")
        .filter(|v| !v.is_empty())
        .or_else(|| std::env::var_os("HOME"))
        .map(PathBuf::from)
        .context("cannot find Gemini CLI's settings: neither GEMINI_CLI_HOME nor HOME is set")
}

//! Codex CLI's wiring: `hooks.json` (user: `~/.codex/hooks.json`, or
//! `$CODEX_HOME`; project: `<dir>/.codex/hooks.json`), in Claude Code's
//! layout with timeouts in seconds. Sources: openai/codex
//! `codex-rs/config/src/hook_config.rs` and developers.openai.com/codex/hooks.
//!
//! Codex runs a new or changed hook only after the person has trusted it
//! (`/hooks` in the Codex TUI, or its start-up review); project hooks load
//! only in a trusted project. hookctl cannot do that for them.

use super::{HookSpec, InstallOptions, Report, Scope, Wiring};
use protocol::wire::Harness;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

const HOOKS: &[HookSpec] = &[
    HookSpec {
        event: "SessionStart",
        matcher: Some("startup|resume|clear|compact|fork"),
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
    // Codex clamps SessionEnd hooks to 3 seconds.
    HookSpec {
        event: "SessionEnd",
        matcher: None,
        arg: "session-end",
        timeout: 3,
    },
];

/// Codex CLI, as hookctl wires it.
pub struct Codex;

impl Wiring for Codex {
    fn harness(&self) -> Harness {
        Harness::Codex
    }

    fn hooks(&self) -> &'static [HookSpec] {
        HOOKS
    }

    fn file(&self, scope: &Scope) -> anyhow::Result<PathBuf> {
        hooks_file(scope)
    }

    fn handler(&self, spec: &HookSpec, command: String) -> Value {
        json!({ "type": "command", "command": command, "timeout": spec.timeout })
    }

    fn flat_entries(&self) -> bool {
        false
    }

    fn after_install(&self) -> &'static str {
        "Codex skips new or changed hooks, silently, until you trust them: open `codex` \
         in a terminal once and choose \"Trust all\" at its hook review (or trust each \
         hookd hook in /hooks). Project hooks also need the project to be trusted. \
         `hookctl doctor` checks that Codex has trusted them."
    }

    /// Codex runs the hooks of the user's `hooks.json` and the project's both.
    fn runs_every_scope(&self) -> bool {
        true
    }

    fn install_more(
        &self,
        _root: &mut Map<String, Value>,
        _exe: &Path,
        _scope: &Scope,
        options: &InstallOptions,
        report: &mut Report,
    ) -> anyhow::Result<()> {
        super::no_statusline(self.harness(), options, report);
        Ok(())
    }

    /// Nothing but the hooks was installed.
    fn uninstall_more(
        &self,
        _root: &mut Map<String, Value>,
        _scope: &Scope,
        _dry_run: bool,
        _report: &mut Report,
    ) -> anyhow::Result<()> {
        Ok(())
    }

    fn presence(&self) -> (Option<PathBuf>, &'static str) {
        (codex_home().ok(), "codex")
    }

    fn unwired_fails(&self) -> bool {
        false
    }

    fn runs_hooks_of(&self) -> Option<Harness> {
        None
    }

    /// Codex runs a hook only once the person has trusted it.
    fn doctor_problem(
        &self,
        file: &Path,
        _project: Option<&Path>,
    ) -> Option<(String, &'static str)> {
        let events: Vec<&str> = HOOKS.iter().map(|s| s.event).collect();
        let untrusted = untrusted_events(file, &events);
        (!untrusted.is_empty()).then(|| {
            (
                format!(
                    "{}: Codex has not trusted hookd's hooks for {}, and `codex exec` skips untrusted hooks without a word",
                    file.display(),
                    untrusted.join(", ")
                ),
                "run `codex` in a terminal once and choose \"Trust all\" at the hook review (or trust hookd's hooks in /hooks)",
            )
        })
    }
}

/// Events (in Codex's snake case) of hookd's hooks in `hooks_json` that
/// Codex has not trusted, by the `[hooks.state."<file>:<event>:<group>:<i>"]`
/// tables its hook review writes into `config.toml`.
pub fn untrusted_events(hooks_json: &std::path::Path, events: &[&str]) -> Vec<String> {
    let config = codex_home()
        .map(|h| std::fs::read_to_string(h.join("config.toml")).unwrap_or_default())
        .unwrap_or_default();
    events
        .iter()
        .map(|e| snake_case(e))
        .filter(|event| {
            let key = format!("[hooks.state.\"{}:{event}:", hooks_json.display());
            !config.lines().any(|l| l.trim_start().starts_with(&key))
        })
        .collect()
}

/// `PostToolUse` → `post_tool_use`.
fn snake_case(event: &str) -> String {
    let mut out = String::new();
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

pub fn hooks_file(scope: &Scope) -> anyhow::Result<PathBuf> {
    match scope {
        Scope::Project(dir) => Ok(dir.join(protocol::project::CODEX_PROJECT_HOOKS)),
        Scope::User => Ok(codex_home()?.join("hooks.json")),
    }
}

/// `$CODEX_HOME`, else `~/.codex`.
pub fn codex_home() -> anyhow::Result<PathBuf> {
    match std::env::var_os("CODEX_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => Ok(PathBuf::from(dir)),
        None => Ok(super::home_for("Codex's settings")?.join(".codex")),
    }
}

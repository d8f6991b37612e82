//! Qwen Code's wiring: the `hooks` object of `settings.json` (user:
//! `~/.qwen/settings.json`; project: `<dir>/.qwen/settings.json`), in
//! Claude Code's layout with timeouts in seconds. Qwen Code reads it when
//! it starts, and runs no hook at all while `disableAllHooks` is true.

use super::{HookSpec, InstallOptions, Report, Scope, Wiring};
use protocol::wire::Harness;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// Every SessionStart source (no matcher): `compact` carries the resume
/// prompt. PostToolBatch follows each reply that called tools, one process
/// per batch rather than one per call.
const HOOKS: &[HookSpec] = &[
    HookSpec {
        event: "SessionStart",
        matcher: None,
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
        event: "PostToolBatch",
        matcher: None,
        arg: "post-tool-batch",
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
    HookSpec {
        event: "SessionEnd",
        matcher: None,
        arg: "session-end",
        timeout: 10,
    },
];

/// Qwen Code, as hookctl wires it.
pub struct QwenCode;

impl Wiring for QwenCode {
    fn harness(&self) -> Harness {
        Harness::QwenCode
    }

    fn hooks(&self) -> &'static [HookSpec] {
        HOOKS
    }

    fn file(&self, scope: &Scope) -> anyhow::Result<PathBuf> {
        settings_file(scope)
    }

    fn handler(&self, spec: &HookSpec, command: String) -> Value {
        json!({ "type": "command", "command": command, "timeout": spec.timeout })
    }

    fn flat_entries(&self) -> bool {
        false
    }

    fn after_install(&self) -> &'static str {
        "Qwen Code reads hooks when it starts: restart it. It runs none while \
         `disableAllHooks` is true in its settings; `hookctl doctor` checks that."
    }

    fn runs_every_scope(&self) -> bool {
        false
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
        (
            super::home_for("Qwen Code's settings")
                .ok()
                .map(|h| h.join(".qwen")),
            "qwen",
        )
    }

    fn unwired_fails(&self) -> bool {
        false
    }

    fn runs_hooks_of(&self) -> Option<Harness> {
        None
    }

    /// Qwen Code skips every hook, without a word, while `disableAllHooks`
    /// is true in any settings file it reads: the one that wires hookd, the
    /// user's, the project's doctor looks at.
    fn doctor_problem(
        &self,
        file: &Path,
        project: Option<&Path>,
    ) -> Option<(String, &'static str)> {
        let user = settings_file(&Scope::User).ok();
        let here = project.and_then(|dir| settings_file(&Scope::Project(dir.to_path_buf())).ok());
        let mut off: Vec<String> = Vec::new();
        for path in std::iter::once(file.to_path_buf()).chain(user).chain(here) {
            let shown = path.display().to_string();
            if !off.contains(&shown) && hooks_disabled(&path) {
                off.push(shown);
            }
        }
        (!off.is_empty()).then(|| {
            (
                format!(
                    "disableAllHooks is true in {}: Qwen Code runs no hook, hookd's included, and says nothing",
                    off.join(" and ")
                ),
                "remove disableAllHooks from that file (or set it to false), then restart Qwen Code",
            )
        })
    }
}

/// Whether a settings file sets `disableAllHooks: true`. Read as a
/// project's file may be: a link, a FIFO or an endless file is not read.
fn hooks_disabled(path: &Path) -> bool {
    protocol::trust::read_project_file(path)
        .ok()
        .flatten()
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .is_some_and(|v| v.get("disableAllHooks") == Some(&Value::Bool(true)))
}

pub fn settings_file(scope: &Scope) -> anyhow::Result<PathBuf> {
    match scope {
        Scope::Project(dir) => Ok(dir.join(protocol::project::QWEN_CODE_PROJECT_SETTINGS)),
        Scope::User => Ok(super::home_for("Qwen Code's settings")?.join(".qwen/settings.json")),
    }
}

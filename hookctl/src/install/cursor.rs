//! Cursor's wiring: `hooks.json` (user: `~/.cursor/hooks.json`; project:
//! `<dir>/.cursor/hooks.json`), `{"version": 1, "hooks": {"preCompact":
//! [{"command": ..., "timeout": SECONDS}]}}`: flat entries, camelCase
//! events. Written from Cursor's documentation; no Cursor build was run.
//!
//! Cursor also runs the hooks of Claude Code's settings files with its own
//! payloads; hookd answers those as Cursor's (see `hookctl/src/hook.rs`).

use super::{HookSpec, InstallOptions, Report, Scope, Wiring};
use protocol::wire::Harness;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// The version of the file's format Cursor documents.
const FORMAT_VERSION: u64 = 1;

/// Tool activity is `postToolUse` alone: Cursor also sends
/// `afterShellExecution` and `afterFileEdit` for the same calls.
/// `beforeSubmitPrompt` is left out: hookd has nothing to say there, and
/// an answer is what lets the prompt through.
const HOOKS: &[HookSpec] = &[
    HookSpec {
        event: "sessionStart",
        matcher: None,
        arg: "session-start",
        timeout: 30,
    },
    HookSpec {
        event: "postToolUse",
        matcher: None,
        arg: "post-tool-use",
        timeout: 10,
    },
    HookSpec {
        event: "preCompact",
        matcher: None,
        arg: "pre-compact",
        timeout: 60,
    },
    HookSpec {
        event: "stop",
        matcher: None,
        arg: "stop",
        timeout: 10,
    },
    HookSpec {
        event: "sessionEnd",
        matcher: None,
        arg: "session-end",
        timeout: 10,
    },
];

/// Cursor, as hookctl wires it.
pub struct Cursor;

impl Wiring for Cursor {
    fn harness(&self) -> Harness {
        Harness::Cursor
    }

    fn hooks(&self) -> &'static [HookSpec] {
        HOOKS
    }

    fn file(&self, scope: &Scope) -> anyhow::Result<PathBuf> {
        hooks_file(scope)
    }

    fn handler(&self, spec: &HookSpec, command: String) -> Value {
        json!({ "command": command, "timeout": spec.timeout })
    }

    fn flat_entries(&self) -> bool {
        true
    }

    fn after_install(&self) -> &'static str {
        "Cursor's support in hookd is documented, not run: it follows Cursor's hooks \
         documentation and was never run against a Cursor build. Restart Cursor to load the \
         hooks. hookd's resume prompt reaches Cursor's model as the follow-up message of the \
         first completed turn after a compaction."
    }

    /// Cursor runs the user's hooks and the project's both.
    fn runs_every_scope(&self) -> bool {
        true
    }

    /// A file hookd makes gets the format's version.
    fn install_more(
        &self,
        root: &mut Map<String, Value>,
        _exe: &Path,
        _scope: &Scope,
        options: &InstallOptions,
        report: &mut Report,
    ) -> anyhow::Result<()> {
        if !root.contains_key("version") {
            // First, where Cursor's documentation puts it.
            let rest = std::mem::take(root);
            root.insert("version".into(), Value::from(FORMAT_VERSION));
            root.extend(rest);
        }
        super::no_statusline(self.harness(), options, report);
        Ok(())
    }

    /// A file left with nothing but its version holds no hook of anyone's.
    fn uninstall_more(
        &self,
        root: &mut Map<String, Value>,
        _scope: &Scope,
        _dry_run: bool,
        _report: &mut Report,
    ) -> anyhow::Result<()> {
        if root.len() == 1 && root.get("version") == Some(&Value::from(FORMAT_VERSION)) {
            root.clear();
        }
        Ok(())
    }

    fn presence(&self) -> (Option<PathBuf>, &'static str) {
        (
            super::home_for("Cursor's hooks file")
                .ok()
                .map(|h| h.join(".cursor")),
            "cursor-agent",
        )
    }

    fn unwired_fails(&self) -> bool {
        false
    }

    fn runs_hooks_of(&self) -> Option<Harness> {
        Some(Harness::ClaudeCode)
    }

    /// Always said: Cursor's support was written from its documentation,
    /// never run. (Doctor itself says when hookd's Claude Code hooks,
    /// which Cursor runs too, would bring each event twice.)
    fn doctor_problem(
        &self,
        _file: &Path,
        _project: Option<&Path>,
    ) -> Option<(String, &'static str)> {
        Some((
            "Cursor support is documented, not run: hookd follows Cursor's hooks documentation \
             and was never run against a Cursor build"
                .into(),
            "nothing to fix; after a Cursor session, `hookctl status` shows whether hookd heard it",
        ))
    }
}

pub fn hooks_file(scope: &Scope) -> anyhow::Result<PathBuf> {
    match scope {
        Scope::Project(dir) => Ok(dir.join(protocol::project::CURSOR_PROJECT_HOOKS)),
        Scope::User => Ok(super::home_for("Cursor's hooks file")?.join(".cursor/hooks.json")),
    }
}

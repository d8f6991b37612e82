//! Gemini CLI's wiring: the `hooks` object of `settings.json` (user:
//! `~/.gemini/settings.json`; project: `<dir>/.gemini/settings.json`), in
//! Claude Code's layout with timeouts in milliseconds and a `name` per hook
//! (what `/hooks enable|disable` take). Sources: google-gemini/gemini-cli
//! `docs/hooks/index.md` and `docs/hooks/reference.md`.
//!
//! Gemini CLI allows comments in settings.json; hookctl refuses such a file
//! rather than drop them (add the entries from `hooks/gemini-cli/` by hand).

use super::{HookSpec, InstallOptions, Report, Scope, Wiring};
use protocol::wire::Harness;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

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

/// Gemini CLI, as hookctl wires it.
pub struct GeminiCli;

impl Wiring for GeminiCli {
    fn harness(&self) -> Harness {
        Harness::GeminiCli
    }

    fn hooks(&self) -> &'static [HookSpec] {
        HOOKS
    }

    fn file(&self, scope: &Scope) -> anyhow::Result<PathBuf> {
        settings_file(scope)
    }

    fn handler(&self, spec: &HookSpec, command: String) -> Value {
        json!({
            "name": format!("hookd-{}", spec.arg),
            "type": "command",
            "command": command,
            "timeout": spec.timeout,
        })
    }

    fn flat_entries(&self) -> bool {
        false
    }

    fn after_install(&self) -> &'static str {
        "Gemini CLI reads hooks when it starts: restart it. If /hooks panel says the \
         hooks system is disabled, enable it in /settings (Advanced, \"Enable Hooks System\")."
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
        (gemini_home().ok().map(|h| h.join(".gemini")), "gemini")
    }

    fn unwired_fails(&self) -> bool {
        false
    }

    fn runs_hooks_of(&self) -> Option<Harness> {
        None
    }

    fn doctor_problem(
        &self,
        _file: &Path,
        _project: Option<&Path>,
    ) -> Option<(String, &'static str)> {
        None
    }
}

pub fn settings_file(scope: &Scope) -> anyhow::Result<PathBuf> {
    match scope {
        Scope::Project(dir) => Ok(dir.join(protocol::project::GEMINI_CLI_PROJECT_SETTINGS)),
        Scope::User => Ok(gemini_home()?.join(".gemini/settings.json")),
    }
}

/// Gemini CLI's home: `$GEMINI_CLI_HOME`, else the user's home.
pub fn gemini_home() -> anyhow::Result<PathBuf> {
    match std::env::var_os("GEMINI_CLI_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => Ok(PathBuf::from(dir)),
        None => super::home_for("Gemini CLI's settings (GEMINI_CLI_HOME is not set either)"),
    }
}

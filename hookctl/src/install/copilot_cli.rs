//! GitHub Copilot CLI's wiring: a hooks file of hookd's own (user:
//! `~/.copilot/hooks/hookd.json`, or `$COPILOT_HOME/hooks/`; project:
//! `<dir>/.github/hooks/hookd.json`) in Copilot's native format:
//! `{"version": 1, "hooks": {"<event>": [{"type": "command", "bash": ...,
//! "timeoutSec": ...}]}}`, handlers straight in each event's list, no
//! matcher groups. Copilot reads every `*.json` of those folders and runs
//! them all, so the person's other hook files are never opened.
//!
//! Copilot's payloads do not name their event: the command line does.
//! Repository hooks run only in a folder Copilot trusts (it skips them
//! without a word otherwise); the user's always run.

use super::{HookSpec, InstallOptions, Report, Scope, Wiring};
use anyhow::Context;
use protocol::wire::Harness;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// The version of the hooks file format Copilot CLI reads.
const FORMAT_VERSION: u64 = 1;

/// One postToolUse per tool call rather than preToolUse too: either can
/// carry the resume prompt, and one process per call is enough.
const HOOKS: &[HookSpec] = &[
    HookSpec {
        event: "sessionStart",
        matcher: None,
        arg: "session-start",
        timeout: 30,
    },
    HookSpec {
        event: "userPromptSubmitted",
        matcher: None,
        arg: "user-prompt-submit",
        timeout: 10,
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
        event: "agentStop",
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

/// Copilot CLI, as hookctl wires it.
pub struct CopilotCli;

impl Wiring for CopilotCli {
    fn harness(&self) -> Harness {
        Harness::CopilotCli
    }

    fn hooks(&self) -> &'static [HookSpec] {
        HOOKS
    }

    fn file(&self, scope: &Scope) -> anyhow::Result<PathBuf> {
        hooks_file(scope)
    }

    fn handler(&self, spec: &HookSpec, command: String) -> Value {
        json!({ "type": "command", "bash": command, "timeoutSec": spec.timeout })
    }

    fn after_install(&self) -> &'static str {
        "Copilot CLI reads hooks when it starts: restart it. It runs a project's \
         .github/hooks only in a folder it trusts; `hookctl doctor` says so."
    }

    /// Every hooks file of the user's and the project's folders runs.
    fn runs_every_scope(&self) -> bool {
        true
    }

    /// The file's format version, first, as Copilot expects it.
    fn install_more(
        &self,
        root: &mut Map<String, Value>,
        _exe: &Path,
        _scope: &Scope,
        options: &InstallOptions,
        report: &mut Report,
    ) -> anyhow::Result<()> {
        super::no_statusline(self.harness(), options, report);
        if !root.contains_key("version") {
            root.shift_insert(0, "version".into(), Value::from(FORMAT_VERSION));
        }
        Ok(())
    }

    /// The version goes with the last hook, so that a file that held only
    /// hookd's is empty and goes whole.
    fn uninstall_more(
        &self,
        root: &mut Map<String, Value>,
        _scope: &Scope,
        _dry_run: bool,
        _report: &mut Report,
    ) -> anyhow::Result<()> {
        if root.len() == 1 && root.get("version") == Some(&Value::from(FORMAT_VERSION)) {
            root.shift_remove("version");
        }
        Ok(())
    }

    fn presence(&self) -> (Option<PathBuf>, &'static str) {
        (copilot_home().ok(), "copilot")
    }

    fn unwired_fails(&self) -> bool {
        false
    }

    fn flat_entries(&self) -> bool {
        true
    }

    /// Copilot CLI runs a repository's `.claude/settings.json` hooks too,
    /// but not the person's: doctor's user-level view has nothing to add.
    fn runs_hooks_of(&self) -> Option<Harness> {
        None
    }

    /// Copilot runs a repository's hooks only in a folder it trusts, and
    /// keeps that trust where hookctl cannot read it: said for every
    /// project's wiring.
    fn doctor_problem(
        &self,
        file: &Path,
        _project: Option<&Path>,
    ) -> Option<(String, &'static str)> {
        let project = project_of(file)?;
        Some((
            format!(
                "{} runs only while Copilot CLI trusts {}: in a folder it does not trust it skips \
                 the repository's hooks without a word",
                file.display(),
                project.display()
            ),
            "answer \"Yes\" when copilot asks to trust the folder (or start it with \
             --trust-folder), or wire your own hooks instead: hookctl install copilot-cli --user",
        ))
    }
}

pub fn hooks_file(scope: &Scope) -> anyhow::Result<PathBuf> {
    match scope {
        Scope::Project(dir) => Ok(dir.join(protocol::project::COPILOT_CLI_PROJECT_HOOKS)),
        Scope::User => Ok(copilot_home()?.join("hooks").join(super::OWN_FILE)),
    }
}

/// The project a project's hooks file belongs to.
fn project_of(file: &Path) -> Option<PathBuf> {
    let rel = Path::new(protocol::project::COPILOT_CLI_PROJECT_HOOKS);
    let depth = rel.components().count();
    let project = file.ancestors().nth(depth)?;
    (project.join(rel) == file).then(|| project.to_path_buf())
}

/// `$COPILOT_HOME`, else `~/.copilot`.
fn copilot_home() -> anyhow::Result<PathBuf> {
    if let Some(home) = std::env::var_os("COPILOT_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(|h| PathBuf::from(h).join(".copilot"))
        .context("cannot find Copilot CLI's hooks: neither COPILOT_HOME nor HOME is set")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_file_names_its_project_and_the_users_none() {
        let file = Path::new("/p/.github/hooks/hookd.json");
        assert_eq!(project_of(file), Some(PathBuf::from("/p")));
        assert_eq!(project_of(Path::new("/h/.copilot/hooks/hookd.json")), None);
        assert!(CopilotCli.doctor_problem(file, None).is_some());
        assert!(
            CopilotCli
                .doctor_problem(Path::new("/h/.copilot/hooks/hookd.json"), None)
                .is_none()
        );
    }
}

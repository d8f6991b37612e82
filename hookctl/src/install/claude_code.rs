//! Claude Code's wiring: hook entries in `settings.json` (user:
//! `~/.claude/settings.json`, or `$CLAUDE_CONFIG_DIR`; project:
//! `<dir>/.claude/settings.json`), the `statusLine` (unless the person has
//! their own), and the `/hookd-save` and `/hookd-resume` slash commands
//! (`commands/*.md` next to the settings file; named so that none hides
//! one of Claude Code's own). Claude Code reads all of
//! these when a session starts.

use super::{HookSpec, InstallOptions, Report, Scope, Wiring, runs_hookctl, shell_quote};
use anyhow::Context;
use protocol::wire::Harness;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

// The slash commands shipped in `hooks/claude-code/commands/`, embedded at build time.
include!(concat!(env!("OUT_DIR"), "/claude_commands.rs"));

/// Claude Code's timeouts are in seconds.
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
    // One process per reply that called tools, not one per call: PostToolBatch
    // follows every batch (one call or many, failed or not), while PostToolUse
    // would run once per call more and skips failed calls.
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
    // The compaction's summarizer ends as a subagent: its summary arrives here first.
    HookSpec {
        event: "SubagentStop",
        matcher: None,
        arg: "subagent-stop",
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

/// Claude Code, as hookctl wires it.
pub struct ClaudeCode;

impl Wiring for ClaudeCode {
    fn harness(&self) -> Harness {
        Harness::ClaudeCode
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
        "Claude Code reads hooks when a session starts: restart running sessions \
         (or review the hooks with /hooks in a session)."
    }

    fn runs_every_scope(&self) -> bool {
        false
    }

    fn install_more(
        &self,
        root: &mut Map<String, Value>,
        exe: &Path,
        scope: &Scope,
        options: &InstallOptions,
        report: &mut Report,
    ) -> anyhow::Result<()> {
        if !options.no_statusline {
            let (done, note) = put_statusline(root, exe, options.force);
            report.done.push(done);
            report.notes.extend(note);
        }
        report
            .done
            .extend(put_commands(scope, options.dry_run, options.force)?);
        Ok(())
    }

    fn uninstall_more(
        &self,
        root: &mut Map<String, Value>,
        scope: &Scope,
        dry_run: bool,
        report: &mut Report,
    ) -> anyhow::Result<()> {
        report.done.extend(take_statusline(root));
        report.done.extend(take_commands(scope, dry_run)?);
        Ok(())
    }

    fn presence(&self) -> (Option<PathBuf>, &'static str) {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        (home.map(|h| h.join(".claude")), "claude")
    }

    /// hookd is for Claude Code first: installed and not wired is a failure.
    fn unwired_fails(&self) -> bool {
        true
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

/// Claude Code's own directory for a scope.
fn claude_dir(scope: &Scope) -> anyhow::Result<PathBuf> {
    match scope {
        Scope::Project(dir) => Ok(dir.join(".claude")),
        Scope::User => std::env::var_os("CLAUDE_CONFIG_DIR")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude")))
            .context("cannot find Claude Code's settings: HOME is not set"),
    }
}

pub fn settings_file(scope: &Scope) -> anyhow::Result<PathBuf> {
    match scope {
        Scope::Project(dir) => Ok(dir.join(protocol::project::CLAUDE_CODE_PROJECT_SETTINGS)),
        Scope::User => Ok(claude_dir(scope)?.join("settings.json")),
    }
}

/// Makes `hookctl statusline` the statusLine, unless the person has one of
/// their own (then only with `force`). Returns what it did, for the report,
/// and when it kept theirs, how to add ours.
pub fn put_statusline(
    root: &mut Map<String, Value>,
    exe: &Path,
    force: bool,
) -> (String, Option<String>) {
    let command = format!("{} statusline", shell_quote(&exe.to_string_lossy()));
    let ours = json!({ "type": "command", "command": command });
    let theirs = root
        .get("statusLine")
        .filter(|v| statusline_command(v).is_none_or(|c| runs_hookctl(&c, "statusline").is_none()))
        .map(|v| statusline_command(v).unwrap_or_else(|| v.to_string()));
    if let Some(theirs) = theirs {
        if !force {
            return (
                format!("statusLine: kept yours (`{theirs}`)"),
                Some(format!(
                    "To see hookd's context figure in your statusLine, run `{command}` from your \
                     script with the same JSON on its stdin, and print its line with yours; or \
                     replace yours with hookd's: `hookctl install claude-code --force`."
                )),
            );
        }
        root.insert("statusLine".into(), ours);
        return (
            format!(
                "statusLine: replaced yours (`{theirs}`; the backup keeps it) with hookctl statusline"
            ),
            None,
        );
    }
    let before = root.insert("statusLine".into(), ours.clone());
    let done = if before.as_ref() == Some(&ours) {
        "statusLine: already hookctl statusline"
    } else {
        "statusLine: hookctl statusline (the context figure under the prompt)"
    };
    (done.to_owned(), None)
}

/// Removes the statusLine if it is ours.
pub fn take_statusline(root: &mut Map<String, Value>) -> Option<String> {
    let cmd = root.get("statusLine").and_then(statusline_command)?;
    runs_hookctl(&cmd, "statusline")?;
    root.shift_remove("statusLine");
    Some("statusLine: removed hookctl statusline".to_owned())
}

fn statusline_command(v: &Value) -> Option<String> {
    v["command"].as_str().map(str::to_owned)
}

/// Writes the slash commands that are missing (or differ, with `force`).
pub fn put_commands(scope: &Scope, dry_run: bool, force: bool) -> anyhow::Result<Vec<String>> {
    let dir = claude_dir(scope)?.join("commands");
    let mut done = take_retired(&dir, dry_run)?;
    for (name, text) in COMMANDS {
        let path = dir.join(name);
        let slash = slash_name(name);
        let state = match std::fs::read_to_string(&path) {
            Ok(existing) if existing == *text => {
                done.push(format!("{slash}: already {}", path.display()));
                continue;
            }
            Ok(_) if !force => {
                done.push(format!(
                    "{slash}: kept your {} (it differs from hookd's; --force replaces it)",
                    path.display()
                ));
                continue;
            }
            Ok(_) if dry_run => "would replace",
            Ok(_) => "replaced",
            Err(_) if dry_run => "would install",
            Err(_) => "installed",
        };
        if !dry_run {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            super::json_file::write_atomic(&path, text.as_bytes(), 0o644)?;
        }
        done.push(format!("{slash}: {state} {}", path.display()));
    }
    Ok(done)
}

/// Removes the slash commands that are still exactly hookd's, and those an
/// older hookd installed.
pub fn take_commands(scope: &Scope, dry_run: bool) -> anyhow::Result<Vec<String>> {
    let dir = claude_dir(scope)?.join("commands");
    let mut done = take_retired(&dir, dry_run)?;
    for (name, text) in COMMANDS {
        let path = dir.join(name);
        let slash = slash_name(name);
        match std::fs::read_to_string(&path) {
            Ok(existing) if existing == *text => {
                remove(&path, dry_run)?;
                let removed = if dry_run { "would remove" } else { "removed" };
                done.push(format!("{slash}: {removed} {}", path.display()));
            }
            Ok(_) => done.push(format!(
                "{slash}: left {} (changed since it was installed)",
                path.display()
            )),
            Err(_) => {}
        }
    }
    if !dry_run {
        // Only when empty: the directory may hold the person's own commands.
        let _ = std::fs::remove_dir(&dir);
    }
    Ok(done)
}

/// Removes the commands an older hookd installed under names that are now
/// Claude Code's own (`/resume`) or were renamed, when they are exactly as
/// it wrote them: a file of the same name with other words is the
/// person's, and stays without a word.
fn take_retired(dir: &Path, dry_run: bool) -> anyhow::Result<Vec<String>> {
    let mut done = Vec::new();
    for (name, text) in RETIRED {
        let path = dir.join(name);
        if std::fs::read_to_string(&path).is_ok_and(|existing| existing == *text) {
            remove(&path, dry_run)?;
            let removed = if dry_run { "would remove" } else { "removed" };
            done.push(format!(
                "{}: {removed} {} (an older hookd's; now {})",
                slash_name(name),
                path.display(),
                renamed(name)
            ));
        }
    }
    Ok(done)
}

/// What a retired command is called now.
fn renamed(retired: &str) -> String {
    slash_name(&format!("hookd-{}", retired.replace("save-state", "save")))
}

fn remove(path: &Path, dry_run: bool) -> anyhow::Result<()> {
    if !dry_run {
        std::fs::remove_file(path).with_context(|| format!("cannot remove {}", path.display()))?;
    }
    Ok(())
}

/// `hookd-save.md` → `/hookd-save`.
fn slash_name(file: &str) -> String {
    format!("/{}", file.trim_end_matches(".md"))
}

#[cfg(test)]
mod tests {
    /// Each retired command is named by the file an older hookd wrote, and
    /// its new name is one that ships.
    #[test]
    fn every_retired_command_has_a_successor() {
        assert_eq!(super::RETIRED.len(), 6);
        for (name, _) in super::RETIRED {
            let now = super::renamed(name);
            assert!(
                super::COMMANDS
                    .iter()
                    .any(|(shipped, _)| super::slash_name(shipped) == now),
                "{name} → {now}"
            );
        }
    }

    /// The daemon leaves the files `install --project` writes out of every
    /// resume prompt: its list must name each slash command shipped.
    #[test]
    fn every_shipped_command_is_one_of_hookds_own_files() {
        for (name, _) in super::COMMANDS {
            let rel = format!(".claude/commands/{name}");
            assert!(
                protocol::project::CLAUDE_CODE_PROJECT_COMMANDS.contains(&rel.as_str()),
                "add {rel} to protocol::project::CLAUDE_CODE_PROJECT_COMMANDS"
            );
        }
    }
}

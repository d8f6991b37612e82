//! What this machine puts on its sync refs, and nothing secret in it:
//!
//! - the saved-state commit, right after a save writes `.workflow/`
//!   ([`record_state`]): the state, the resume prompt and the progress
//!   summary, redacted;
//! - the exported checkpoints, before a push ([`export_checkpoints_under`]): each
//!   local checkpoint's tree less the files that hold secrets or are named
//!   like ones, on a chain of its own that none of the user's history joins;
//! - the memory's tree, before a memory push ([`export_memory`]): every
//!   task record, redacted, saying which machine it came from.

use super::ledger::LedgerChain;
use super::{Ledger, Machine, checkpoint_ref, memory_ref, state_ref};
use crate::git::export::{self as git_export, Chain, Verdict};
use crate::git::{GitError, trailer_lines, trailer_value};
use crate::secrets;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

pub const STATE_TITLE: &str = "hookd: saved state";
pub const CHECKPOINT_TITLE: &str = "hookd: checkpoint";
pub const MEMORY_TITLE: &str = "hookd: memory";
/// The files of a saved-state commit.
pub use crate::state::STATE_FILE;
pub const RESUME_PROMPT_FILE: &str = "resume_prompt.md";
pub const PROGRESS_SUMMARY_FILE: &str = "progress_summary.md";

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("sync export in {project}: {source}")]
    Git {
        project: String,
        #[source]
        source: GitError,
    },
    #[error("sync export of the memory from {dir}: {why}")]
    Memory { dir: String, why: String },
}

fn in_project(project: &Path) -> impl FnOnce(GitError) -> ExportError + '_ {
    move |source| ExportError::Git {
        project: project.display().to_string(),
        source,
    }
}

/// What a save wrote, as the saved-state commit takes it.
#[derive(Debug, Clone, Default)]
pub struct SavedFiles {
    /// `context_state.json` as written.
    pub state_json: Vec<u8>,
    pub resume_prompt: Option<String>,
    pub progress_summary: Option<String>,
    /// The local checkpoint the save made or kept.
    pub checkpoint_source: Option<String>,
    /// The harness's session id, when known.
    pub session: Option<String>,
    /// When the save was made, Unix milliseconds.
    pub saved_at_ms: u64,
}

/// Commits the saved state onto `refs/hookd/sync/<machine>/state/<branch>`,
/// redacted. `None` when the repository has no remote named `remote`: the
/// user elected no place for it, so nothing is made. The commit goes into
/// `ledger`; the ref's tip is its parent only when it is in `ledger`.
pub fn record_state(
    project: &Path,
    machine: &Machine,
    remote: &str,
    files: &SavedFiles,
    ledger: &Ledger,
) -> Result<Option<String>, ExportError> {
    let compose = |branch: &str| {
        let mut blobs = vec![(STATE_FILE, redact_json_bytes(&files.state_json))];
        if let Some(prompt) = &files.resume_prompt {
            blobs.push((
                RESUME_PROMPT_FILE,
                secrets::redact(prompt).into_owned().into_bytes(),
            ));
        }
        if let Some(summary) = files
            .progress_summary
            .as_deref()
            .filter(|s| !s.trim().is_empty())
        {
            blobs.push((
                PROGRESS_SUMMARY_FILE,
                secrets::redact(summary).into_owned().into_bytes(),
            ));
        }
        let mut trailers = Trailers::new(STATE_TITLE);
        trailers.add("Machine", &machine.id);
        trailers.add("Machine-Name", &machine.name);
        trailers.add("Project", &project.display().to_string());
        trailers.add("Branch", branch);
        trailers.add("Saved-At", &crate::time::rfc3339(files.saved_at_ms));
        if let Some(sha) = &files.checkpoint_source {
            trailers.add("Checkpoint-Source", sha);
        }
        if let Some(session) = &files.session {
            trailers.add("Session", session);
        }
        git_export::FlatCommit {
            reference: state_ref(&machine.id, branch),
            files: blobs,
            message: trailers.text,
        }
    };
    let chain = LedgerChain::new(ledger);
    git_export::commit_for_branch(project, remote, &chain, compose).map_err(in_project(project))
}

/// One exported checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exported {
    pub branch: String,
    pub reference: String,
    pub commit: String,
    /// The local checkpoint it was made from.
    pub source: String,
    /// Files left out, each with why.
    pub left_out: Vec<(String, String)>,
    /// How many files' contents were read to decide.
    pub files_read: usize,
}

/// What [`export_checkpoints_under`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportReport {
    pub exported: Vec<Exported>,
    /// Branches whose latest checkpoint was exported already.
    pub up_to_date: Vec<String>,
}

/// Exports every local checkpoint under `ref_prefix`
/// (`checkpoint.ref_prefix`, then `/<branch>`) whose tip is not on this
/// machine's sync refs yet. Each exported commit goes into `ledger`; a sync
/// ref's tip that is not in it is no previous export (neither parent nor
/// base): the chain starts anew.
pub fn export_checkpoints_under(
    project: &Path,
    machine: &Machine,
    ref_prefix: &str,
    ledger: &Ledger,
) -> Result<ExportReport, ExportError> {
    let mut report = ExportReport::default();
    let chain = LedgerChain::new(ledger);
    let local = git_export::local_checkpoints(project, ref_prefix).map_err(in_project(project))?;
    for checkpoint in local {
        let reference = checkpoint_ref(&machine.id, &checkpoint.branch);
        let last = git_export::tip_message(project, &reference).map_err(in_project(project))?;
        let last = last
            .filter(|(tip, _)| chain.continues(tip))
            .map(|(_, message)| trailer_lines(&message));
        let last_source = last
            .as_ref()
            .and_then(|t| first_value(t, "Source"))
            .map(str::to_owned);
        if last_source.as_deref() == Some(checkpoint.tip.as_str()) {
            report.up_to_date.push(checkpoint.branch);
            continue;
        }
        let previous = last_source.as_deref().map(|source| {
            let left_out = last
                .as_ref()
                .map(|t| {
                    t.iter()
                        .filter(|(k, _)| k == "Left-Out")
                        .filter_map(|(_, v)| v.rsplit_once(" ("))
                        .map(|(p, why)| (p.to_owned(), why.trim_end_matches(')').to_owned()))
                        .collect()
                })
                .unwrap_or_default();
            (source, left_out)
        });
        let local_trailers = trailer_lines(&checkpoint.message);
        let message = |left_out: &BTreeMap<String, String>| {
            checkpoint_message(machine, &checkpoint, &local_trailers, left_out)
        };
        let filtered = git_export::filter_checkpoint(
            project,
            &checkpoint.tip,
            &reference,
            previous,
            &SecretRules,
            &message,
            &chain,
        )
        .map_err(in_project(project))?;
        report.exported.push(Exported {
            branch: checkpoint.branch,
            reference,
            commit: filtered.commit,
            source: checkpoint.tip,
            left_out: filtered.left_out.into_iter().collect(),
            files_read: filtered.files_read,
        });
    }
    Ok(report)
}

/// The secret rules, as the checkpoint filter asks them.
struct SecretRules;

impl Verdict for SecretRules {
    fn by_name(&self, path: &str) -> Option<String> {
        secrets::is_secret_file(path).then(|| "secret file name".to_owned())
    }

    fn by_content(&self, path: &str, bytes: &[u8]) -> Option<String> {
        secrets::secret_in_file(path, bytes).map(|rule| format!("holds a {rule}"))
    }
}

fn checkpoint_message(
    machine: &Machine,
    checkpoint: &git_export::LocalCheckpoint,
    local: &[(String, String)],
    left_out: &BTreeMap<String, String>,
) -> String {
    let mut trailers = Trailers::new(CHECKPOINT_TITLE);
    trailers.add("Machine", &machine.id);
    trailers.add("Machine-Name", &machine.name);
    trailers.add("Source", &checkpoint.tip);
    trailers.add("Branch", &checkpoint.branch);
    trailers.add("Base", first_value(local, "Base").unwrap_or("unborn"));
    for key in ["Trigger", "Session", "Tokens"] {
        if let Some(value) = first_value(local, key) {
            trailers.add(key, value);
        }
    }
    for (path, why) in left_out {
        trailers.add("Left-Out", &format!("{path} ({why})"));
    }
    trailers.text
}

/// Commits this machine's task records, redacted, onto
/// `refs/hookd/memory/<machine>` in the bare repository `memory_repo`
/// (made when missing). `None` when they are what was committed last.
pub fn export_memory(
    memory_repo: &Path,
    machine: &Machine,
    tasks_dir: &Path,
) -> Result<Option<String>, ExportError> {
    let problem = |why: String| ExportError::Memory {
        dir: tasks_dir.display().to_string(),
        why,
    };
    let mut files = BTreeMap::new();
    let entries = match std::fs::read_dir(tasks_dir) {
        Ok(entries) => entries.flatten().collect::<Vec<_>>(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(problem(format!("cannot list it: {e}"))),
    };
    for entry in entries {
        let name = entry.file_name();
        let Some(task_id) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
            continue;
        };
        if !is_plain_name(task_id) || !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let Ok(bytes) = std::fs::read(entry.path()) else {
            continue;
        };
        // A record the store could not read either stays out.
        let Ok(mut record) = serde_json::from_slice::<Value>(&bytes) else {
            tracing::debug!(
                task = task_id,
                "sync: a task record that is not JSON stays out"
            );
            continue;
        };
        redact_json(&mut record);
        if let Value::Object(map) = &mut record {
            map.entry("machine")
                .or_insert_with(|| Value::String(machine.name.clone()));
        }
        let mut text = serde_json::to_vec_pretty(&record).expect("JSON values serialize");
        text.push(b'\n');
        files.insert(format!("tasks/{task_id}.json"), text);
    }
    let mut trailers = Trailers::new(MEMORY_TITLE);
    trailers.add("Machine", &machine.id);
    trailers.add("Machine-Name", &machine.name);
    git_export::commit_tree_in_bare(
        memory_repo,
        &memory_ref(&machine.id),
        &files,
        &trailers.text,
    )
    .map_err(|e| problem(e.to_string()))
}

/// A task id as a file name may carry it: no separators, no dot first.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// A commit message: its title, then one trailer block, every value redacted.
struct Trailers {
    text: String,
}

impl Trailers {
    fn new(title: &str) -> Trailers {
        Trailers {
            text: format!("{title}\n\n"),
        }
    }

    fn add(&mut self, key: &str, value: &str) {
        let value = trailer_value(&secrets::redact(value));
        self.text.push_str(&format!("Hookd-{key}: {value}\n"));
    }
}

fn first_value<'t>(trailers: &'t [(String, String)], key: &str) -> Option<&'t str> {
    trailers
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// JSON text with every string value redacted; text that is not JSON is
/// redacted as text.
fn redact_json_bytes(bytes: &[u8]) -> Vec<u8> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(mut value) => {
            redact_json(&mut value);
            let mut out = serde_json::to_vec_pretty(&value).expect("JSON values serialize");
            out.push(b'\n');
            out
        }
        Err(_) => secrets::redact(&String::from_utf8_lossy(bytes))
            .into_owned()
            .into_bytes(),
    }
}

/// Every string value in `value` redacted (keys are the schema's own).
pub fn redact_json(value: &mut Value) {
    match value {
        Value::String(text) => {
            if let std::borrow::Cow::Owned(redacted) = secrets::redact(text) {
                *text = redacted;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_json),
        Value::Object(map) => map.values_mut().for_each(redact_json),
        _ => {}
    }
}

#[cfg(test)]
mod tests;

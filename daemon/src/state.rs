//! `.workflow/context_state.json`: the captured workflow state, plus what
//! hookd adds (where each part came from, the task list, the checkpoint).
//! Every field is always present (null or empty when no source had it), so
//! templates and readers never meet a missing key. The JSON Schema lives in
//! `daemon/schema/context_state.schema.json`.

use crate::harness::Trigger;
pub use crate::harness::work::{TaskSource, TaskStatus};
use protocol::wire::FileChange;
use serde::{Deserialize, Serialize};

pub const STATE_FILE: &str = "context_state.json";
/// Where a copy of each earlier state is kept, beside the state file.
pub const HISTORY_DIR: &str = "history";

/// What asked for a capture. Written into the state as its text
/// (`pre-compact auto`) and read back into this type.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum SaveTrigger {
    Threshold(f64),
    PreCompact(Trigger),
    #[default]
    Manual,
    /// The session's file shows a compaction no PreCompact hook announced.
    UnannouncedCompaction,
}

impl SaveTrigger {
    /// The capture was made because the context was (being) compacted.
    pub fn is_compaction(&self) -> bool {
        matches!(
            self,
            SaveTrigger::PreCompact(_) | SaveTrigger::UnannouncedCompaction
        )
    }

    /// The first word of the capture's name: what it was for.
    pub fn capture_name(&self) -> &'static str {
        match self {
            SaveTrigger::Threshold(_) => "threshold",
            SaveTrigger::PreCompact(_) | SaveTrigger::UnannouncedCompaction => "compact",
            SaveTrigger::Manual => "save",
        }
    }

    /// In words a person reads: `before automatic compaction`.
    pub fn describe(&self) -> String {
        match self {
            SaveTrigger::Threshold(level) => {
                format!("at {:.0}% of the way to compaction", level * 100.0)
            }
            SaveTrigger::PreCompact(Trigger::Auto) => "before automatic compaction".into(),
            SaveTrigger::PreCompact(Trigger::Manual) => "before /compact".into(),
            SaveTrigger::PreCompact(Trigger::Other(how)) => format!("before compaction ({how})"),
            SaveTrigger::Manual => "with hookctl save".into(),
            SaveTrigger::UnannouncedCompaction => "after a compaction no hook announced".into(),
        }
    }
}

impl std::fmt::Display for SaveTrigger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SaveTrigger::Threshold(level) => write!(f, "threshold {level:.2}"),
            SaveTrigger::PreCompact(trigger) => write!(f, "pre-compact {trigger}"),
            SaveTrigger::Manual => f.write_str("manual"),
            SaveTrigger::UnannouncedCompaction => f.write_str("unannounced compaction"),
        }
    }
}

impl From<SaveTrigger> for String {
    fn from(t: SaveTrigger) -> String {
        t.to_string()
    }
}

impl TryFrom<String> for SaveTrigger {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        if let Some(level) = text.strip_prefix("threshold ") {
            return level
                .parse()
                .map(SaveTrigger::Threshold)
                .map_err(|_| format!("`{text}` is not a threshold capture"));
        }
        if let Some(trigger) = text.strip_prefix("pre-compact ") {
            return Ok(SaveTrigger::PreCompact(Trigger::from(trigger)));
        }
        match text.as_str() {
            "manual" => Ok(SaveTrigger::Manual),
            "unannounced compaction" => Ok(SaveTrigger::UnannouncedCompaction),
            _ => Err(format!("`{text}` is not a capture trigger hookd writes")),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContextState {
    /// `<what>_<YYYYMMDD_HHMMSS>` of the capture: `compact` (for a
    /// compaction), `threshold` or `save` (`hookctl save`).
    pub session_id: String,
    /// The harness's own session id.
    pub harness_session_id: Option<String>,
    pub harness: Option<String>,
    pub captured_at: String,
    /// What asked for the capture (`pre-compact auto`, `threshold 0.80`, `manual`, ...).
    pub trigger: SaveTrigger,
    pub project_dir: String,
    /// The directory the agent works in, relative to `project_dir` (`None`
    /// or "" at the root). Paths in the state stay relative to the root;
    /// the prompt writes them from here ([`crate::prompt::shown_path`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<String>,
    pub context_usage: ContextUsage,
    pub workflow_position: WorkflowPosition,
    pub active_work: ActiveWork,
    pub next_actions: Vec<NextAction>,
    pub modified_files: Vec<ModifiedFile>,
    /// Files git shows changed that this session's own file never touched:
    /// another session's work, or the person's. Kept apart from
    /// `modified_files` and out of the reload list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed_elsewhere: Vec<ModifiedFile>,
    pub decisions: Vec<Decision>,
    pub blockers: Vec<Blocker>,
    /// Approaches tried and dropped, from the compaction summary.
    #[serde(default)]
    pub rejected: Vec<Rejected>,
    /// The request that set the work: the session's first substantial one
    /// (an acknowledgement such as "yes, continue" never is).
    pub objective: Option<String>,
    /// What the person said must or must not be done, from the compaction
    /// summary's block; carried from capture to capture of the session
    /// until a summary lists one as lifted.
    #[serde(default)]
    pub constraints: Vec<String>,
    /// Later requests that changed the work, oldest first.
    #[serde(default)]
    pub later_requests: Vec<String>,
    pub recent_prompts: Vec<String>,
    /// The agent's task list (TodoWrite or TaskCreate/TaskUpdate), or the workflow file's.
    pub tasks: Vec<Task>,
    /// Completed tasks, current status, next steps, blockers, in words.
    pub progress_summary: String,
    pub git: Option<GitInfo>,
    pub checkpoint: Option<Checkpoint>,
    /// Which sources contributed (`workflow_state.yml`, `records.jsonl`,
    /// `transcript`, `git`, `summary`).
    pub sources: Vec<String>,
    /// Sources that could not be read, and why.
    pub problems: Vec<String>,
    /// Files to read again after compaction, scored for the task and fitted to the budget.
    #[serde(default)]
    pub context_to_reload: Option<ContextToReload>,
    /// The compaction summary's `hookd-state` block merged into this state.
    #[serde(default)]
    pub summary: Option<SummaryTaken>,
    /// The agent's last tool call before the capture, and how it ended.
    #[serde(default)]
    pub last_step: Option<LastStep>,
    /// Set when the state was saved on another machine and taken in here:
    /// where and when, from the synced commit (never from the state's text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synced_from: Option<SyncedFrom>,
}

/// Where a state saved on another machine came from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SyncedFrom {
    /// The machine's name (`laptop`).
    pub machine: String,
    /// The machine's id, as its refs carry it (`laptop-3f9c1a`).
    pub machine_id: String,
    /// The project's path on that machine.
    pub project: String,
    /// When it was saved there, RFC 3339 UTC.
    pub saved_at: String,
    /// The saved-state commit it came from.
    pub commit: String,
    /// The harness session that saved it there.
    #[serde(default)]
    pub session: Option<String>,
}

/// A tool call the session's file shows, as the resume prompt names it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastStep {
    pub tool: String,
    /// The file it named (relative to the project when inside it), else its
    /// command's first line or its pattern, clipped.
    pub target: Option<String>,
    /// `succeeded`, `failed: <first line of the error, clipped>` or `no result yet`.
    pub outcome: String,
    /// `target` is a file of the project, as a path from its root.
    #[serde(default)]
    pub file: bool,
}

/// Where the merged `hookd-state` block came from, and what was wrong with it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SummaryTaken {
    /// `subagent-stop`, `transcript` or `post-compact`: whichever delivered it first.
    pub from: String,
    pub taken_at: String,
    /// A fingerprint of the block, so the same summary is merged once.
    pub fingerprint: String,
    /// Parts of the block that were left out, and why.
    pub problems: Vec<String>,
}

/// Who said a decision or a blocker: the summary's give way to the others.
pub const SOURCE_SUMMARY: &str = "summary";
/// What the agent's own task list in its session file says.
pub const SOURCE_TRANSCRIPT: &str = "transcript";

/// The repository file a decision, blocker, next action or reflection was
/// read from, as the prompt names it, when it came from one: anyone who can
/// commit to the repository can write these, so the templates show their
/// text quoted under that name. `None` for what hookd established itself
/// (the session file, git, the compaction summary, `hookctl reflect`).
pub fn repository_file(source: &str) -> Option<String> {
    use crate::workflow::{RECORDS_FILE, WORKFLOW_DIR, WORKFLOW_FILE};
    [WORKFLOW_FILE, RECORDS_FILE]
        .contains(&source)
        .then(|| format!("{WORKFLOW_DIR}/{source}"))
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContextToReload {
    /// Tokens the files take at their levels.
    pub tokens_used: u64,
    /// Tokens the file tiers share (the budget less reserves and history).
    pub tokens_available: u64,
    /// Best first within each tier: primary, supporting, reference.
    pub files: Vec<ReloadFile>,
    /// Files the budget holds that the prompt does not list, for its length.
    pub more: usize,
    /// The room left that sized the list, and the strategy it implies, in
    /// words; `None` when a fixed budget (`budget.max_tokens`) did.
    #[serde(default)]
    pub room: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReloadFile {
    pub path: String,
    /// `primary`, `supporting` or `reference`.
    pub tier: String,
    /// `full`, `detailed`, `summary` or `stub`.
    pub level: String,
    pub tokens: u64,
    pub score: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContextUsage {
    pub tokens_used: Option<u64>,
    pub tokens_max: Option<u64>,
    /// `tokens_used / tokens_max`, 0.0 to 1.0 (or more).
    pub percentage: Option<f64>,
    /// The model's whole window, the figure the person sees shares of.
    #[serde(default)]
    pub window_tokens: Option<u64>,
    /// The threshold level behind the save, if a threshold asked for it.
    pub threshold_triggered: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkflowPosition {
    pub workflow_id: Option<String>,
    pub current_phase: Option<String>,
    pub active_task_id: Option<String>,
    pub layer: Option<u32>,
    pub total_layers: Option<u32>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ActiveWork {
    pub entity_id: Option<String>,
    pub entity_type: Option<String>,
    pub action: Option<String>,
    pub file_path: Option<String>,
    pub progress_notes: Option<String>,
    /// `workflow_state.yml` when the workflow file named the active task
    /// (its words, shown quoted); empty when the session file did.
    #[serde(default)]
    pub source: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NextAction {
    pub action: String,
    pub target: String,
    /// 1 = immediate.
    pub priority: u32,
    pub context_needed: Vec<String>,
    /// `workflow_state.yml`, `records.jsonl`, `summary` or `transcript`.
    #[serde(default)]
    pub source: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModifiedFile {
    pub path: String,
    /// created, modified, deleted, renamed, type changed, edited.
    pub action: String,
    pub summary: String,
}

impl From<&FileChange> for ModifiedFile {
    fn from(c: &FileChange) -> Self {
        ModifiedFile {
            path: c.path.clone(),
            action: c.action.clone(),
            summary: c.summary.clone(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub topic: String,
    pub decision: String,
    pub reasoning: Option<String>,
    pub timestamp: Option<String>,
    /// `workflow_state.yml`, `records.jsonl` or `summary`.
    #[serde(default)]
    pub source: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Rejected {
    pub approach: String,
    pub why: Option<String>,
    /// Always `summary` for now.
    pub source: String,
}

/// A blocker's status as hookd keeps it, from whatever words a source used:
/// `resolved` (also fixed, done, closed), `workaround`, else `unresolved`.
/// Every source goes through it, so "is it still open?" has one answer and
/// a repository's words never become the status shown.
pub fn blocker_status(said: &str) -> &'static str {
    match said.trim().to_lowercase().as_str() {
        "resolved" | "fixed" | "done" | "closed" => "resolved",
        "workaround" => "workaround",
        _ => "unresolved",
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Blocker {
    pub issue: String,
    /// unresolved, workaround, resolved.
    pub status: String,
    pub notes: Option<String>,
    /// `workflow_state.yml`, `records.jsonl` or `summary`.
    #[serde(default)]
    pub source: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    pub id: String,
    pub title: String,
    /// pending, in_progress, completed (or whatever the source said).
    pub status: TaskStatus,
    /// What the agent is doing for it, as it says (`Running the tests`).
    pub active_form: Option<String>,
    /// The detail the agent wrote for it (TaskCreate's `description`).
    #[serde(default)]
    pub description: Option<String>,
    /// `todos`, `tasks` or `workflow_state.yml`.
    pub source: TaskSource,
    /// Files its title or description names, relative to the project.
    #[serde(default)]
    pub files: Vec<TaskFile>,
}

/// A file a task names, and whether it is there yet.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskFile {
    pub path: String,
    /// Not in the project when the state was captured.
    pub to_create: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GitInfo {
    pub branch: String,
    /// None on an unborn branch.
    pub head: Option<String>,
    /// An operation in progress (merge, rebase, cherry-pick, ...), else
    /// `clean` when nothing changed against HEAD and `modified` when something did.
    pub state: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub sha: Option<String>,
    pub reference: Option<String>,
    /// Why there is no new commit (nothing changed, disabled, not a repository).
    pub note: Option<String>,
    /// Files left out: untracked ones for their size, and those with a
    /// filter driver (their bytes in the working tree are never stored).
    pub skipped: Vec<String>,
}

impl ContextState {
    pub fn to_json(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("the state serializes");
        bytes.push(b'\n');
        bytes
    }
}

/// A short, stable fingerprint of some text (FNV-1a, 64 bits, in hex): how
/// a summary block and a reflection are known again.
pub fn fingerprint(parts: &[&str]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.trim().to_lowercase().bytes().chain([0x1f]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{hash:016x}")
}

/// History files oldest first: by the time stamp after the capture's first
/// word (`save_20260118_143022_<session>.json`), whatever that word is.
pub fn sort_history(names: &mut [String]) {
    fn stamp(name: &str) -> &str {
        name.split_once('_')
            .map_or(name, |(_, rest)| rest.get(..15).unwrap_or(rest))
    }
    names.sort_by(|a, b| stamp(a).cmp(stamp(b)).then_with(|| a.cmp(b)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sources_blocker_status_reads_the_same() {
        let read: Vec<&str> = [
            "Fixed",
            " done",
            "RESOLVED",
            "workaround",
            "",
            "### do this",
        ]
        .into_iter()
        .map(blocker_status)
        .collect();
        assert_eq!(
            read,
            [
                "resolved",
                "resolved",
                "resolved",
                "workaround",
                "unresolved",
                "unresolved"
            ]
        );
    }

    #[test]
    fn triggers_in_words_and_names() {
        let words: Vec<String> = [
            SaveTrigger::Threshold(0.8),
            SaveTrigger::PreCompact("auto".into()),
            SaveTrigger::PreCompact("manual".into()),
            SaveTrigger::Manual,
            SaveTrigger::UnannouncedCompaction,
        ]
        .iter()
        .map(|t| format!("{}: {}", t.capture_name(), t.describe()))
        .collect();
        assert_eq!(
            words,
            [
                "threshold: at 80% of the way to compaction",
                "compact: before automatic compaction",
                "compact: before /compact",
                "save: with hookctl save",
                "compact: after a compaction no hook announced",
            ]
        );
    }
}

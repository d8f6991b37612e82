//! Saving a session's workflow state: what the 80/90/95% thresholds, the
//! PreCompact hook and `hookctl save` ask for.

use crate::sessions::SessionKey;
use crate::workflow::Workflow;
use protocol::config::Config;
use protocol::wire::ContextStatus;
use std::path::PathBuf;

/// What asked for a save.
#[derive(Debug, Clone, PartialEq)]
pub enum SaveTrigger {
    Threshold(f64),
    PreCompact(String),
    Manual,
    /// The transcript shows a compaction no PreCompact hook announced.
    UnannouncedCompaction,
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

#[derive(Debug, Clone)]
pub struct SaveRequest {
    pub session: SessionKey,
    pub project: PathBuf,
    pub transcript: Option<PathBuf>,
    pub context: Option<ContextStatus>,
    pub trigger: SaveTrigger,
    /// Also make a git checkpoint.
    pub checkpoint: bool,
}

#[derive(Debug, Clone, Default)]
pub struct SaveReport {
    pub state_file: Option<PathBuf>,
    /// The checkpoint commit, if one was made.
    pub checkpoint: Option<String>,
    /// Steps that failed, in words.
    pub problems: Vec<String>,
}

impl SaveReport {
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Runs a save. Blocking: call it from `spawn_blocking`.
pub fn save(request: &SaveRequest, config: &Config) -> SaveReport {
    let _ = config;
    let workflow = Workflow::new(&request.project);
    let mut report = SaveReport::default();
    let fields = serde_json::json!({
        "trigger": request.trigger.to_string(),
        "checkpoint_requested": request.checkpoint,
    });
    if let Err(e) = workflow
        .ensure(true)
        .and_then(|_| workflow.append_event("save", Some(&request.session), fields))
    {
        report.problems.push(format!(
            "cannot record the save in {}: {e}",
            workflow.dir().display()
        ));
    }
    report
}

//! The cross-task memory's shapes, shared by hookd (which keeps them) and
//! hookctl (which shows them): the seed's `task_memory` record with its
//! reflections, the Ω window's capacity with its presets, and the
//! `performance_tracking` figures.
//!
//! A task record on disk is exactly [`TaskRecord`] as JSON: the seed's
//! fields first, then what hookd adds (project, session, when it closed,
//! which decisions and blockers were already reflected). Every added field
//! is `#[serde(default)]`, so a record written by hand from the seed's
//! schema loads too.

use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

/// The seed's task types, classified from a task's description.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskType {
    Implementation,
    Debugging,
    Refactoring,
    Testing,
    Documentation,
    Architecture,
    Research,
}

impl TaskType {
    pub const ALL: [TaskType; 7] = [
        TaskType::Implementation,
        TaskType::Debugging,
        TaskType::Refactoring,
        TaskType::Testing,
        TaskType::Documentation,
        TaskType::Architecture,
        TaskType::Research,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TaskType::Implementation => "implementation",
            TaskType::Debugging => "debugging",
            TaskType::Refactoring => "refactoring",
            TaskType::Testing => "testing",
            TaskType::Documentation => "documentation",
            TaskType::Architecture => "architecture",
            TaskType::Research => "research",
        }
    }
}

impl fmt::Display for TaskType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskOutcome {
    Success,
    Partial,
    Failure,
}

impl TaskOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskOutcome::Success => "success",
            TaskOutcome::Partial => "partial",
            TaskOutcome::Failure => "failure",
        }
    }
}

impl fmt::Display for TaskOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The seed's four kinds of reflection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReflectionType {
    /// What went wrong and why.
    ErrorAnalysis,
    /// A change of approach (a decision, a workaround).
    StrategyChange,
    /// What worked.
    SuccessPattern,
    /// A limit of the code, the tools or the environment that was found.
    ConstraintDiscovery,
}

impl ReflectionType {
    pub const ALL: [ReflectionType; 4] = [
        ReflectionType::ErrorAnalysis,
        ReflectionType::StrategyChange,
        ReflectionType::SuccessPattern,
        ReflectionType::ConstraintDiscovery,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ReflectionType::ErrorAnalysis => "error_analysis",
            ReflectionType::StrategyChange => "strategy_change",
            ReflectionType::SuccessPattern => "success_pattern",
            ReflectionType::ConstraintDiscovery => "constraint_discovery",
        }
    }

    /// The kind in words, as the resume prompt names it.
    pub fn words(self) -> &'static str {
        match self {
            ReflectionType::ErrorAnalysis => "what went wrong",
            ReflectionType::StrategyChange => "a change of approach",
            ReflectionType::SuccessPattern => "what worked",
            ReflectionType::ConstraintDiscovery => "a constraint found",
        }
    }

    /// Accepts `error_analysis` and `error-analysis` alike.
    pub fn parse(name: &str) -> Option<ReflectionType> {
        let name = name.trim().replace('-', "_").to_ascii_lowercase();
        ReflectionType::ALL.into_iter().find(|t| t.as_str() == name)
    }
}

impl fmt::Display for ReflectionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a reflection helped, judged when its task closes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effectiveness {
    Helpful,
    #[default]
    Neutral,
    Unhelpful,
}

impl Effectiveness {
    pub fn as_str(self) -> &'static str {
        match self {
            Effectiveness::Helpful => "helpful",
            Effectiveness::Neutral => "neutral",
            Effectiveness::Unhelpful => "unhelpful",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reflection {
    /// 1 until the task's first compaction, then one more after each.
    pub iteration: u32,
    pub content: String,
    #[serde(rename = "type")]
    pub kind: ReflectionType,
    #[serde(default)]
    pub effectiveness: Effectiveness,
    /// RFC 3339.
    #[serde(default)]
    pub recorded_at: String,
    /// `decision`, `blocker` or `hookctl reflect`.
    #[serde(default)]
    pub source: String,
    /// Where its words came from: `records.jsonl` (`hookctl decision`,
    /// `blocker`, ...), `summary` (the compaction summary's own block),
    /// `hookctl reflect`, or `workflow_state.yml` (a file of the project's).
    /// Empty in records written before hookd kept it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub origin: String,
}

/// The origins whose reflections may be handed to another project's tasks:
/// what the user or the agent recorded, and the summary's token-checked
/// block. A project's own files speak only to that project.
pub const ORIGINS_THAT_TRAVEL: [&str; 3] = ["records.jsonl", "summary", "hookctl reflect"];

impl Reflection {
    /// Whether this reflection may reach a task in another project.
    pub fn travels(&self) -> bool {
        let origin = if self.origin.is_empty() && self.source == "hookctl reflect" {
            "hookctl reflect"
        } else {
            self.origin.as_str()
        };
        ORIGINS_THAT_TRAVEL.contains(&origin)
    }
}

/// One task: the seed's `task_memory`, plus what hookd needs to find it again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// A random (version 4) UUID.
    pub task_id: String,
    pub task_description: String,
    pub task_type: TaskType,
    /// When the task began (RFC 3339).
    pub timestamp: String,
    #[serde(default)]
    pub outcome: Option<TaskOutcome>,
    /// Compactions during the task.
    #[serde(default)]
    pub iterations: u32,
    /// Share of the task list completed when the task closed (0 to 1).
    #[serde(default)]
    pub final_quality: Option<f64>,
    /// Every reflection, oldest first (the Ω window shows only the last few).
    #[serde(default)]
    pub reflections: Vec<Reflection>,
    #[serde(default)]
    pub key_learnings: Vec<String>,
    #[serde(default)]
    pub tags: Vec<String>,

    /// The project the task was done in.
    #[serde(default)]
    pub project: Option<PathBuf>,
    /// `<harness>:<session id>` of the session lineage doing the task; none
    /// while a task declared with `hookctl task start` waits for a session.
    #[serde(default)]
    pub session: Option<String>,
    /// Where the description came from (`hookctl task start`, `first prompt`, ...).
    #[serde(default)]
    pub description_source: Option<String>,
    /// Last change (RFC 3339); age for `max_age_days` counts from here.
    #[serde(default)]
    pub updated_at: String,
    /// When the task was last closed (Stop, SessionEnd, `hookctl task`); a
    /// later reflection opens it again.
    #[serde(default)]
    pub closed_at: Option<String>,
    /// What decided the outcome (`3 of 4 tasks completed`, `hookctl task done`).
    #[serde(default)]
    pub outcome_source: Option<String>,
    /// The outcome was given with `hookctl task done|failed|partial`, and
    /// the task list no longer decides it.
    #[serde(default)]
    pub outcome_explicit: bool,
    /// Ω given for this task (`hookctl task start --memory N`).
    #[serde(default)]
    pub window: Option<u32>,
    /// Ω chosen by auto-scaling when the task began, and why.
    #[serde(default)]
    pub scaled_window: Option<u32>,
    #[serde(default)]
    pub scaled_because: Option<String>,
    /// Cross-task lessons for this task (`--no-cross-task` sets false).
    #[serde(default)]
    pub cross_task: Option<bool>,
    /// Similar past tasks whose lessons this task was given.
    #[serde(default)]
    pub lessons_from: Vec<String>,
    /// Decisions and blockers already turned into reflections.
    #[serde(default)]
    pub reflected: Vec<String>,
    /// Decisions and blockers recorded through hookctl during the task: a
    /// `records.jsonl` line hookd did not write (one a checkout brought)
    /// stays with its project.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recorded: Vec<String>,
    /// The machine the task was done on (its `sync.machine_name` or host
    /// name); none in records written before hookd synced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
}

/// Ω: how many of the current task's reflections each resume prompt keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Capacity(pub u32);

impl Capacity {
    /// The seed's presets.
    pub const PRESETS: [(&'static str, u32); 4] = [
        ("simple", 1),
        ("moderate", 3),
        ("complex", 5),
        ("maximum", 10),
    ];
    /// Largest Ω accepted (each reflection costs prompt space).
    pub const MAX: u32 = 50;

    /// `3`, or a preset name (`complex`).
    pub fn parse(text: &str) -> Result<Capacity, String> {
        let text = text.trim();
        let n = match text.parse::<u32>() {
            Ok(n) => n,
            Err(_) => Capacity::PRESETS
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(text))
                .map(|(_, n)| *n)
                .ok_or_else(|| {
                    format!(
                        "`{text}` is neither a number nor a preset ({})",
                        Capacity::preset_list()
                    )
                })?,
        };
        if n == 0 || n > Capacity::MAX {
            return Err(format!("{n} is not within 1..={}", Capacity::MAX));
        }
        Ok(Capacity(n))
    }

    /// `simple 1, moderate 3, complex 5, maximum 10`.
    pub fn preset_list() -> String {
        Capacity::PRESETS
            .iter()
            .map(|(name, n)| format!("{name} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The next preset above or below `n` (auto-scaling moves along these).
    pub fn step(n: u32, up: bool) -> u32 {
        let sizes = Capacity::PRESETS.map(|(_, n)| n);
        if up {
            sizes.into_iter().find(|s| *s > n).unwrap_or(n)
        } else {
            sizes.into_iter().rev().find(|s| *s < n).unwrap_or(n)
        }
    }
}

impl Default for Capacity {
    fn default() -> Self {
        Capacity(3)
    }
}

impl<'de> Deserialize<'de> for Capacity {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u64),
            Name(String),
        }
        let text = match Raw::deserialize(d)? {
            Raw::Number(n) => n.to_string(),
            Raw::Name(s) => s,
        };
        Capacity::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// `hookctl reflect`: one reflection on the current task.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReflectRequest {
    pub project: PathBuf,
    /// The agent session (default: the project's live session).
    #[serde(default)]
    pub session: Option<String>,
    pub content: String,
    /// Classified from the text when not given.
    #[serde(default)]
    pub kind: Option<ReflectionType>,
}

/// `hookctl task …`: the current task of a session (or the project's next one).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskRequest {
    pub project: PathBuf,
    #[serde(default)]
    pub session: Option<String>,
    pub action: TaskAction,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum TaskAction {
    /// Describe the current task (or, with no live session, the next one).
    Start {
        description: String,
        /// Ω for this task.
        #[serde(default)]
        window: Option<u32>,
        /// `Some(false)`: no lessons from similar tasks.
        #[serde(default)]
        cross_task: Option<bool>,
        #[serde(default)]
        tags: Vec<String>,
    },
    /// Close the task with this outcome (it wins over the task list).
    Finish { outcome: TaskOutcome },
    /// The current task and its Ω window.
    Show,
}

/// What a task request did, and the task now.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskReport {
    pub task: TaskRecord,
    /// Ω in force for this task.
    pub window: u32,
    /// Where Ω comes from (`hookctl task start --memory`, `config`, `auto-scaled`).
    pub window_from: String,
    /// Whether lessons from similar tasks are on for it.
    pub cross_task: bool,
    /// The task waits for the next session in its project.
    #[serde(default)]
    pub waiting_for_session: bool,
}

/// `hookctl memory …`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MemoryRequest {
    /// Whose configuration applies (`memory.dir` may differ per project).
    pub project: PathBuf,
    pub action: MemoryAction,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum MemoryAction {
    /// Stored tasks, newest first.
    List {
        #[serde(default)]
        limit: Option<usize>,
    },
    /// One task in full (an id or a unique prefix).
    Show { id: String },
    /// Stored tasks ranked by similarity to `text`.
    Search {
        text: String,
        #[serde(default)]
        limit: Option<usize>,
    },
    /// Delete one task.
    Forget { id: String },
    /// The `performance_tracking` figures.
    Stats,
}

/// One stored task, as `list` and `search` show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskSummary {
    pub task_id: String,
    pub task_description: String,
    pub task_type: TaskType,
    pub timestamp: String,
    #[serde(default)]
    pub updated_at: String,
    #[serde(default)]
    pub outcome: Option<TaskOutcome>,
    #[serde(default)]
    pub iterations: u32,
    #[serde(default)]
    pub reflections: usize,
    #[serde(default)]
    pub key_learnings: usize,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub project: Option<PathBuf>,
    #[serde(default)]
    pub session: Option<String>,
    #[serde(default)]
    pub closed: bool,
    /// `search`: similarity to the text, 0 to 1.
    #[serde(default)]
    pub score: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MemoryList {
    pub tasks: Vec<TaskSummary>,
    /// `search`: the threshold a retrieval needs (`memory.similarity_threshold`).
    #[serde(default)]
    pub threshold: Option<f64>,
    /// Entries that could not be read, and why.
    #[serde(default)]
    pub problems: Vec<String>,
}

/// Outcomes of a group of tasks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OutcomeCounts {
    pub tasks: usize,
    pub success: usize,
    pub partial: usize,
    pub failure: usize,
    /// No task list and no `hookctl task done|failed|partial`.
    pub unknown: usize,
    /// `success / (tasks - unknown)`, when any outcome is known.
    #[serde(default)]
    pub success_rate: Option<f64>,
    /// Mean compactions per task.
    #[serde(default)]
    pub mean_iterations: Option<f64>,
}

/// The seed's `performance_tracking`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MemoryStats {
    pub dir: PathBuf,
    pub tasks: usize,
    pub open_tasks: usize,
    pub reflections: usize,
    /// Retrievals that handed lessons to a task (`cross_task_retrieval_count`).
    pub cross_task_retrieval_count: u64,
    /// Retrievals that found nothing similar enough.
    pub retrievals_empty: u64,
    /// Past tasks whose lessons were handed over, counted per retrieval.
    pub tasks_injected: u64,
    /// Key learnings and reflections from past tasks handed over.
    pub lessons_injected: u64,
    /// The current task's reflections put in injected resume prompts (Ω window).
    pub reflections_injected: u64,
    /// Mean Ω in force over stored tasks (`memory_capacity_used`).
    #[serde(default)]
    pub mean_window: Option<f64>,
    /// Tasks that were given lessons from similar tasks (the seed's treatment)...
    pub with_lessons: OutcomeCounts,
    /// ...and closed tasks that were not (the baseline).
    pub without_lessons: OutcomeCounts,
    /// How often the past tasks that were retrieved had themselves ended in success.
    #[serde(default)]
    pub retrieved_success_rate: Option<f64>,
    /// `reflection_helpfulness`: helpful, neutral, unhelpful.
    pub helpful: usize,
    pub neutral: usize,
    pub unhelpful: usize,
    /// Entries that could not be read, and why.
    #[serde(default)]
    pub problems: Vec<String>,
    /// Tasks per machine they were done on, when more than one machine's
    /// are here (merged from a synced memory).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tasks_per_machine: BTreeMap<String, usize>,
}

/// When a reflection was made, in words: its iteration counts the task's
/// compactions from 1.
pub fn reflection_when(iteration: u32) -> String {
    match iteration.saturating_sub(1) {
        0 => "before any compaction".to_owned(),
        1 => "after 1 compaction".to_owned(),
        n => format!("after {n} compactions"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacities_are_numbers_or_presets() {
        assert_eq!(Capacity::parse("4"), Ok(Capacity(4)));
        assert_eq!(Capacity::parse("Complex"), Ok(Capacity(5)));
        assert_eq!(Capacity::parse("maximum"), Ok(Capacity(10)));
        assert!(Capacity::parse("0").unwrap_err().contains("1..=50"));
        assert!(Capacity::parse("huge").unwrap_err().contains("simple 1"));
        let c: Capacity = serde_yaml::from_str("simple").unwrap();
        assert_eq!(c, Capacity(1));
        let c: Capacity = serde_yaml::from_str("7").unwrap();
        assert_eq!(c, Capacity(7));
        assert!(serde_yaml::from_str::<Capacity>("-1").is_err());
        assert_eq!(serde_json::to_string(&Capacity(5)).unwrap(), "5");
    }

    #[test]
    fn auto_scaling_moves_along_the_presets() {
        assert_eq!(Capacity::step(3, true), 5);
        assert_eq!(Capacity::step(5, true), 10);
        assert_eq!(Capacity::step(10, true), 10);
        assert_eq!(Capacity::step(3, false), 1);
        assert_eq!(Capacity::step(1, false), 1);
        assert_eq!(Capacity::step(4, true), 5);
        assert_eq!(Capacity::step(4, false), 3);
    }

    #[test]
    fn a_record_in_the_seeds_own_shape_loads() {
        let text = r#"{
            "task_id": "6f1c2a4e-0b7d-4c55-9e0a-2b1f3c4d5e6f",
            "task_description": "Fix tests",
            "task_type": "debugging",
            "timestamp": "2026-01-01T00:00:00Z",
            "outcome": "success",
            "iterations": 2,
            "reflections": [{"iteration": 1, "content": "c", "type": "error_analysis", "effectiveness": "helpful"}],
            "key_learnings": ["k"],
            "tags": ["t"]
        }"#;
        let r: TaskRecord = serde_json::from_str(text).unwrap();
        assert_eq!(r.reflections[0].kind, ReflectionType::ErrorAnalysis);
        assert_eq!(r.outcome, Some(TaskOutcome::Success));
        assert!(r.session.is_none() && r.reflected.is_empty());
        assert_eq!(
            ReflectionType::parse("constraint-discovery"),
            Some(ReflectionType::ConstraintDiscovery)
        );
    }
}

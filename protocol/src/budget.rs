//! The context budget on the wire and on disk: which files an agent should
//! reload after compaction, how much of each, and why.
//!
//! [`BudgetPlan`] is also the budget record saved under
//! `.workflow/budget-records/`.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Where a file goes in the budget, by its relevance score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    Primary,
    Supporting,
    Reference,
    History,
}

impl Tier {
    pub const FILES: [Tier; 3] = [Tier::Primary, Tier::Supporting, Tier::Reference];

    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Primary => "primary",
            Tier::Supporting => "supporting",
            Tier::Reference => "reference",
            Tier::History => "history",
        }
    }
}

/// The five relevance factors, each in 0..=1.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Factors {
    pub task_alignment: f64,
    pub recency: f64,
    pub mention_density: f64,
    pub dependency_depth: f64,
    pub file_type: f64,
}

/// One file's relevance to a task, and the evidence behind it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FileScore {
    pub path: String,
    /// `source`, `test`, `requirements`, `docs`, `config` or `other`.
    pub file_type: String,
    pub factors: Factors,
    /// The weighted sum of the factors.
    pub total: f64,
    /// None below the inclusion threshold.
    pub tier: Option<Tier>,
    /// Task keywords found in the path.
    #[serde(default)]
    pub path_matches: Vec<String>,
    /// Task keywords found in the contents.
    #[serde(default)]
    pub content_matches: Vec<String>,
    /// Times the session's transcript named the file.
    #[serde(default)]
    pub mentions: u32,
    /// Import steps from the task's own files (0: one of them).
    #[serde(default)]
    pub depth: Option<u32>,
    #[serde(default)]
    pub age_days: Option<f64>,
    /// Why it is a candidate: `context_needed`, `modified`, `transcript`, `keyword`, `test`, `import`, `named`.
    #[serde(default)]
    pub reasons: Vec<String>,
}

/// A file given a place in the budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedFile {
    pub path: String,
    /// `full`, `detailed`, `summary` or `stub`.
    pub level: String,
    pub tokens: u64,
    pub relevance_score: f64,
    /// Cut short to fit (overflow strategy `truncate`).
    #[serde(default)]
    pub truncated: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TierPlan {
    /// Share of the available tokens, in percent.
    pub percentage: f64,
    pub allocated_tokens: u64,
    pub files: Vec<PlannedFile>,
    pub total_tokens: u64,
    /// For the history tier: what it holds.
    #[serde(default)]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Allocation {
    pub primary: TierPlan,
    pub supporting: TierPlan,
    pub reference: TierPlan,
    pub history: TierPlan,
}

impl Allocation {
    pub fn tier(&self, tier: Tier) -> &TierPlan {
        match tier {
            Tier::Primary => &self.primary,
            Tier::Supporting => &self.supporting,
            Tier::Reference => &self.reference,
            Tier::History => &self.history,
        }
    }

    pub fn tier_mut(&mut self, tier: Tier) -> &mut TierPlan {
        match tier {
            Tier::Primary => &mut self.primary,
            Tier::Supporting => &mut self.supporting,
            Tier::Reference => &mut self.reference,
            Tier::History => &mut self.history,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Overflow {
    pub occurred: bool,
    /// `truncate`, `summarize`, `prioritize` or `error`.
    pub strategy_applied: Option<String>,
    /// Files shortened, cut or left out to fit.
    pub files_affected: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Tokens used / tokens available.
    pub utilization: f64,
    /// Relevant content / total content: the token-weighted mean relevance
    /// of what was included.
    pub efficiency: f64,
}

/// A budgeted choice of context for a task (also the saved budget record).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BudgetPlan {
    pub timestamp: String,
    pub task: String,
    #[serde(default)]
    pub session: Option<String>,
    /// The whole budget, before reserves.
    pub total_budget: u64,
    /// Where the total came from: `config`, `--max-tokens` or `session window`.
    #[serde(default)]
    pub budget_source: String,
    pub reserve_for_output: u64,
    pub reserve_for_system: u64,
    /// Total minus the reserves: what the tiers share.
    pub available: u64,
    pub allocation: Allocation,
    pub overflow: Overflow,
    pub metrics: Metrics,
    /// Tokens used by all tiers.
    pub total_used: u64,
    /// Task keywords the scores were computed from.
    #[serde(default)]
    pub keywords: Vec<String>,
    /// Files scored.
    #[serde(default)]
    pub candidates: usize,
    /// The best files that scored below the inclusion threshold.
    #[serde(default)]
    pub below_threshold: Vec<FileScore>,
    /// Every included file's score, best first.
    #[serde(default)]
    pub scores: Vec<FileScore>,
    /// Time spent, milliseconds.
    #[serde(default)]
    pub elapsed_ms: u64,
    /// Summaries served from `.workflow/summaries/` / made fresh.
    #[serde(default)]
    pub summaries_cached: usize,
    #[serde(default)]
    pub summaries_made: usize,
}

/// `hookctl context-budget`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BudgetQuery {
    pub project: PathBuf,
    /// The task (default: the saved state's active task, objective and next actions).
    #[serde(default)]
    pub task: Option<String>,
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// Whose transcript counts mentions (default: the project's latest session).
    #[serde(default)]
    pub session: Option<String>,
    /// Save the plan under `.workflow/budget-records/`.
    #[serde(default)]
    pub record: bool,
}

/// `hookctl context-score`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScoreQuery {
    pub project: PathBuf,
    pub file: PathBuf,
    #[serde(default)]
    pub task: Option<String>,
    #[serde(default)]
    pub session: Option<String>,
}

/// `hookctl summarize`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SummaryQuery {
    pub project: PathBuf,
    pub file: PathBuf,
    /// `full`, `detailed`, `summary` or `stub`.
    pub level: String,
    /// Read from and write to `.workflow/summaries/`.
    #[serde(default)]
    pub cache: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryReply {
    pub path: String,
    pub level: String,
    pub tokens: u64,
    /// The whole file's tokens, for comparison.
    pub full_tokens: u64,
    pub text: String,
    pub cached: bool,
}

/// `hookctl context-report`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReportQuery {
    pub project: PathBuf,
    #[serde(default)]
    pub session: Option<String>,
}

/// Totals of the `context_transition` events in `.workflow/events.jsonl`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TransitionTotals {
    /// Compactions with token figures.
    pub compactions: u64,
    pub compacted_before_tokens: u64,
    pub compacted_after_tokens: u64,
    /// 1 - after / before over all compactions.
    pub compaction_ratio: Option<f64>,
    /// Resume prompts injected, and what their format saved against Markdown.
    pub resumes: u64,
    pub resume_markdown_tokens: u64,
    pub resume_tokens: u64,
    pub format_ratio: Option<f64>,
    /// Events by kind (`pipeline`, `threshold`, `compaction`, ...).
    pub events_by_kind: std::collections::BTreeMap<String, u64>,
    /// Each injected resume prompt, oldest first, and whether the agent
    /// followed it (the latest [`RESUMES_REPORTED`]).
    #[serde(default)]
    pub resumes_followed: Vec<ResumeOutcome>,
}

/// Resume prompts a context report lists.
pub const RESUMES_REPORTED: usize = 20;

/// One injected resume prompt in `events.jsonl`, and whether the agent's
/// first tool calls after it followed it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResumeOutcome {
    pub session: Option<String>,
    /// The epoch its compaction began (`None` in lines older hookd wrote).
    pub epoch: Option<u32>,
    pub marker: String,
    /// `None` until a tool call decided it.
    pub followed: Option<bool>,
    /// What matched, or the first tool call when nothing did.
    pub detail: Option<String>,
    /// The prompt did not arrive, even injected again.
    #[serde(default)]
    pub lost: bool,
}

impl ResumeOutcome {
    /// The verdict in words; `resumed, never arrived` for a prompt that did
    /// not reach the model, which nothing can follow.
    pub fn words(&self) -> &'static str {
        if self.lost {
            "resumed, never arrived"
        } else {
            followed_words(self.followed)
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ContextReport {
    pub session: Option<String>,
    /// The session's context now, if the daemon follows it.
    pub tokens_used: Option<u64>,
    pub tokens_max: Option<u64>,
    /// The model's whole window.
    #[serde(default)]
    pub window_tokens: Option<u64>,
    pub pressure: Option<f64>,
    /// The newest budget record (for the session, when one is named).
    pub record: Option<BudgetPlan>,
    pub record_file: Option<PathBuf>,
    pub records: usize,
    pub transitions: TransitionTotals,
}

/// `resumed and followed`, `resumed, went elsewhere` or `resumed, not yet
/// decided`: a resume prompt's verdict as people read it.
pub fn followed_words(followed: Option<bool>) -> &'static str {
    match followed {
        Some(true) => "resumed and followed",
        Some(false) => "resumed, went elsewhere",
        None => "resumed, not yet decided",
    }
}

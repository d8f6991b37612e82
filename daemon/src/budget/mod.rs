//! Seed 000's context budget: which files an agent should reload after
//! compaction, how much of each, scored for the task at hand and fitted to
//! a token budget. The pipeline puts the result in the saved state (and so
//! in the resume prompt); `hookctl context-budget | context-score |
//! summarize | context-report` show it.

pub mod files;
pub mod imports;
pub mod mentions;
pub mod outline;
pub mod plan;
pub mod report;
pub mod room;
pub mod score;
pub mod summary;
pub mod tokens;

use crate::state::{ContextToReload, ReloadFile};
use protocol::budget::{BudgetPlan, Tier};
use protocol::config::BudgetConfig;

/// The whole budget and where it came from: `--max-tokens`, then the
/// configured figure, then (with `max_tokens: 0`) the session's compaction
/// point, else the default.
pub fn total_budget(
    config: &BudgetConfig,
    flag: Option<u64>,
    session_window: Option<u64>,
) -> (u64, String) {
    if let Some(n) = flag {
        return (n, "--max-tokens".into());
    }
    if config.max_tokens > 0 {
        return (config.max_tokens, "budget.max_tokens".into());
    }
    match session_window {
        Some(n) => (n, "the session's compaction point".into()),
        None => (
            BudgetConfig::default().max_tokens,
            "default (no session window known)".into(),
        ),
    }
}

/// The resume prompt's "Context to Reload": the planned files, best tier
/// first, at most `max_files` of them; `room` says what sized it.
pub fn reload_section(
    plan: &BudgetPlan,
    max_files: usize,
    room: Option<&room::Room>,
) -> ContextToReload {
    let mut files = Vec::new();
    for tier in Tier::FILES {
        for f in &plan.allocation.tier(tier).files {
            files.push(ReloadFile {
                path: f.path.clone(),
                tier: tier.as_str().to_owned(),
                level: f.level.clone(),
                tokens: f.tokens,
                score: f.relevance_score,
            });
        }
    }
    let more = files.len().saturating_sub(max_files);
    files.truncate(max_files);
    ContextToReload {
        tokens_used: plan.total_used - plan.allocation.history.total_tokens,
        tokens_available: plan.available - plan.allocation.history.allocated_tokens,
        files,
        more,
        room: room.map(room::Room::describe),
    }
}

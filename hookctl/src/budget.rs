//! `hookctl context-budget | context-score | summarize | context-report`:
//! the context budget, asked of the daemon and shown to a person.

use crate::Context;
use protocol::budget::{
    BudgetPlan, BudgetQuery, ContextReport, FileScore, ReportQuery, ScoreQuery, SummaryQuery, Tier,
};
use protocol::figures::thousands;
use protocol::wire::Call;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const RULE: &str =
    "================================================================================";

fn ask<C: Call>(ctx: &Context, call: C) -> anyhow::Result<C::Reply> {
    let mut client = ctx.connect_for(true, crate::SLOW_COMMAND_TIMEOUT)?;
    Ok(client.call(call)?)
}

/// A file named on the command line, as an absolute path (relative to
/// where the person is, not to the project).
fn absolute(file: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(file).map_err(|e| anyhow::anyhow!("cannot resolve {}: {e}", file.display()))
}

fn pct(fraction: f64) -> String {
    format!("{:.1}%", fraction * 100.0)
}

pub fn budget(
    ctx: &Context,
    task: Option<String>,
    max_tokens: Option<u64>,
    session: Option<String>,
    show_allocation: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let query = BudgetQuery {
        project: ctx.project()?,
        task,
        max_tokens,
        session,
        record: true,
    };
    let plan = ask(ctx, query)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&plan)?);
    } else {
        print!("{}", allocation_table(&plan, show_allocation));
    }
    Ok(ExitCode::SUCCESS)
}

/// The plan as a table of tiers; with `detailed`, every file and its factors.
pub fn allocation_table(plan: &BudgetPlan, detailed: bool) -> String {
    let mut out = String::new();
    let task = plan.task.split_whitespace().collect::<Vec<_>>().join(" ");
    let _ = writeln!(out, "{RULE}\nCONTEXT BUDGET ALLOCATION\n{RULE}");
    let _ = writeln!(out, "Task: \"{task}\"");
    let _ = writeln!(
        out,
        "Keywords: {}",
        if plan.keywords.is_empty() {
            "none".into()
        } else {
            plan.keywords.join(", ")
        }
    );
    let _ = writeln!(
        out,
        "Total Budget: {} tokens ({})",
        thousands(plan.total_budget),
        plan.budget_source
    );
    let _ = writeln!(out, "\nALLOCATION:\nReserved:");
    let _ = writeln!(
        out,
        "  - Output generation: {} tokens",
        thousands(plan.reserve_for_output)
    );
    let _ = writeln!(
        out,
        "  - System prompts: {} tokens",
        thousands(plan.reserve_for_system)
    );
    let _ = writeln!(out, "  - Available: {} tokens", thousands(plan.available));
    let names = [
        (Tier::Primary, "PRIMARY"),
        (Tier::Supporting, "SUPPORTING"),
        (Tier::Reference, "REFERENCE"),
    ];
    let width = plan
        .allocation
        .primary
        .files
        .iter()
        .chain(&plan.allocation.supporting.files)
        .chain(&plan.allocation.reference.files)
        .map(|f| f.path.chars().count())
        .max()
        .unwrap_or(4)
        .clamp(30, 70);
    for (tier, name) in names {
        let t = plan.allocation.tier(tier);
        let share = if t.allocated_tokens == 0 {
            0.0
        } else {
            t.total_tokens as f64 / t.allocated_tokens as f64
        };
        let _ = writeln!(
            out,
            "\n{name} CONTEXT ({}% = {} tokens): {} files, {} tokens ({} of allocation)",
            t.percentage,
            thousands(t.allocated_tokens),
            t.files.len(),
            thousands(t.total_tokens),
            pct(share)
        );
        if detailed && !t.files.is_empty() {
            let _ = writeln!(
                out,
                "  {:<width$}  {:<8}  {:>7}  {:>9}",
                "File", "Level", "Tokens", "Relevance"
            );
            for f in &t.files {
                let cut = if f.truncated { " (cut)" } else { "" };
                let _ = writeln!(
                    out,
                    "  {:<width$}  {:<8}  {:>7}  {:>9.2}{cut}",
                    f.path,
                    f.level,
                    thousands(f.tokens),
                    f.relevance_score
                );
            }
        }
    }
    let h = &plan.allocation.history;
    let _ = writeln!(
        out,
        "\nHISTORY ({}% = {} tokens): {} tokens, {}",
        h.percentage,
        thousands(h.allocated_tokens),
        thousands(h.total_tokens),
        h.note.as_deref().unwrap_or("")
    );
    if detailed {
        let _ = writeln!(
            out,
            "\nSCORES (weights: alignment, recency, mentions, depth, type):"
        );
        let _ = writeln!(
            out,
            "  {:<width$}  align  recent  mention  depth  type   total  why",
            "File"
        );
        for s in plan.scores.iter().chain(&plan.below_threshold) {
            let f = &s.factors;
            let tier = s.tier.map_or("below threshold", |t| t.as_str());
            let _ = writeln!(
                out,
                "  {:<width$}  {:>5.2}  {:>6.2}  {:>7.2}  {:>5.2}  {:>4.2}  {:>6.3}  {tier}; {}",
                s.path,
                f.task_alignment,
                f.recency,
                f.mention_density,
                f.dependency_depth,
                f.file_type,
                s.total,
                s.reasons.join(", ")
            );
        }
    }
    let _ = writeln!(out, "\nSUMMARY:");
    let _ = writeln!(out, "Total Used: {} tokens", thousands(plan.total_used));
    let _ = writeln!(out, "Total Available: {} tokens", thousands(plan.available));
    let _ = writeln!(out, "Utilization: {}", pct(plan.metrics.utilization));
    let _ = writeln!(
        out,
        "Efficiency: {:.2} (token-weighted relevance of what was included)",
        plan.metrics.efficiency
    );
    if plan.overflow.occurred {
        let _ = writeln!(
            out,
            "Status: ⚠ Overflow, {} applied to {} files: {}",
            plan.overflow.strategy_applied.as_deref().unwrap_or("?"),
            plan.overflow.files_affected.len(),
            plan.overflow.files_affected.join(", ")
        );
    } else {
        let _ = writeln!(out, "Status: ✓ Within budget, no overflow handling needed");
    }
    let _ = writeln!(
        out,
        "Scored {} candidates in {} ms (summaries: {} cached, {} made)",
        plan.candidates, plan.elapsed_ms, plan.summaries_cached, plan.summaries_made
    );
    out
}

pub fn score(
    ctx: &Context,
    file: &Path,
    task: Option<String>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let query = ScoreQuery {
        project: ctx.project()?,
        file: absolute(file)?,
        task,
        session: None,
    };
    let score = ask(ctx, query)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&score)?);
    } else {
        print!("{}", score_lines(&score, &ctx.config().budget));
    }
    Ok(ExitCode::SUCCESS)
}

fn score_lines(s: &FileScore, config: &protocol::config::BudgetConfig) -> String {
    let w = &config.weights;
    let f = &s.factors;
    let list = |items: &[String]| {
        if items.is_empty() {
            "none".to_owned()
        } else {
            items.join(", ")
        }
    };
    let rows = [
        (
            "task_alignment",
            f.task_alignment,
            w.task_alignment,
            format!(
                "path: {}; contents: {}",
                list(&s.path_matches),
                list(&s.content_matches)
            ),
        ),
        (
            "recency",
            f.recency,
            w.recency,
            s.age_days.map_or("modification time unknown".into(), |d| {
                format!("modified {d:.1} days ago")
            }),
        ),
        (
            "mention_density",
            f.mention_density,
            w.mention_density,
            format!("named {} times by the session", s.mentions),
        ),
        (
            "dependency_depth",
            f.dependency_depth,
            w.dependency_depth,
            match s.depth {
                Some(0) => "one of the task's own files".to_owned(),
                Some(d) => format!("{d} import steps from the task's files"),
                None => "not reached through imports".to_owned(),
            },
        ),
        ("file_type", f.file_type, w.file_type, s.file_type.clone()),
    ];
    let mut out = format!("{} ({})\n", s.path, s.file_type);
    for (name, value, weight, why) in rows {
        let _ = writeln!(
            out,
            "  {name:<17} {value:.2} × {weight:.2} = {:.3}   {why}",
            value * weight
        );
    }
    let tier = match s.tier {
        Some(Tier::Primary) => format!("primary (≥ {})", config.primary_threshold),
        Some(Tier::Supporting) => format!("supporting (≥ {})", config.supporting_threshold),
        Some(t) => format!("{} (≥ {})", t.as_str(), config.include_threshold),
        None => format!("left out (below {})", config.include_threshold),
    };
    let _ = writeln!(out, "  {:<17} {:.3} → {tier}", "total", s.total);
    if !s.reasons.is_empty() {
        let _ = writeln!(out, "  candidate because: {}", s.reasons.join(", "));
    }
    out
}

pub fn summarize(
    ctx: &Context,
    file: &Path,
    level: String,
    cache: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let query = SummaryQuery {
        project: ctx.project()?,
        file: absolute(file)?,
        level,
        cache,
    };
    let summary = ask(ctx, query)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print!("{}", summary.text);
        if !summary.text.ends_with('\n') {
            println!();
        }
        ctx.note(&format!(
            "{} at level {}: ~{} of ~{} tokens{}",
            summary.path,
            summary.level,
            thousands(summary.tokens),
            thousands(summary.full_tokens),
            if summary.cached { " (cached)" } else { "" }
        ));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn report(ctx: &Context, session: Option<String>, json: bool) -> anyhow::Result<ExitCode> {
    let query = ReportQuery {
        project: ctx.project()?,
        session,
    };
    let report = ask(ctx, query)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report_lines(&report));
    }
    Ok(ExitCode::SUCCESS)
}

fn report_lines(r: &ContextReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{RULE}\nCONTEXT REPORT\n{RULE}");
    let _ = writeln!(
        out,
        "Session: {}",
        r.session
            .as_deref()
            .unwrap_or("none known for this project")
    );
    match (r.tokens_used, r.tokens_max, r.pressure) {
        (Some(used), Some(max), Some(_)) => {
            let _ = writeln!(
                out,
                "Context now: {}",
                protocol::figures::context_words(used, max, r.window_tokens.unwrap_or(0))
            );
        }
        _ => {
            let _ = writeln!(out, "Context now: unknown (no usage read for this session)");
        }
    }
    match (&r.record, &r.record_file) {
        (Some(plan), Some(file)) => {
            let _ = writeln!(
                out,
                "\nLATEST BUDGET ({} of {} records): {}",
                1,
                r.records,
                file.display()
            );
            let _ = writeln!(
                out,
                "Task: \"{}\" at {}",
                plan.task.split_whitespace().collect::<Vec<_>>().join(" "),
                plan.timestamp
            );
            let _ = writeln!(
                out,
                "Used {} of {} tokens; utilization {}, efficiency {:.2}",
                thousands(plan.total_used),
                thousands(plan.available),
                pct(plan.metrics.utilization),
                plan.metrics.efficiency
            );
            for tier in Tier::FILES {
                for f in &plan.allocation.tier(tier).files {
                    let _ = writeln!(
                        out,
                        "  {:<10}  {:<8}  {:>7}  {:.2}  {}",
                        tier.as_str(),
                        f.level,
                        thousands(f.tokens),
                        f.relevance_score,
                        f.path
                    );
                }
            }
            if plan.overflow.occurred {
                let _ = writeln!(
                    out,
                    "  overflow: {} for {}",
                    plan.overflow.strategy_applied.as_deref().unwrap_or("?"),
                    plan.overflow.files_affected.join(", ")
                );
            }
        }
        _ => {
            let _ = writeln!(
                out,
                "\nNo budget record yet (`hookctl context-budget` or a save makes one)."
            );
        }
    }
    let t = &r.transitions;
    let _ = writeln!(out, "\nCONTEXT TRANSITIONS (.workflow/events.jsonl):");
    let ratio = |r: Option<f64>| r.map_or("n/a".to_owned(), pct);
    let _ = writeln!(
        out,
        "Compactions: {}, {} → {} tokens (compression {})",
        t.compactions,
        thousands(t.compacted_before_tokens),
        thousands(t.compacted_after_tokens),
        ratio(t.compaction_ratio)
    );
    let _ = writeln!(
        out,
        "Resume prompts: {}, {} tokens as sent vs {} in Markdown (format saved {})",
        t.resumes,
        thousands(t.resume_tokens),
        thousands(t.resume_markdown_tokens),
        ratio(t.format_ratio)
    );
    if !t.resumes_followed.is_empty() {
        let _ = writeln!(out, "Resume prompts, followed or not:");
        for resume in &t.resumes_followed {
            let session = resume
                .session
                .as_deref()
                .map(|s| format!("session {} ", s.chars().take(8).collect::<String>()))
                .unwrap_or_default();
            let line = protocol::wire::followed_line(
                resume.epoch,
                resume.words(),
                resume.detail.as_deref(),
            );
            let _ = writeln!(out, "  {session}{line}");
        }
    }
    let kinds: Vec<String> = t
        .events_by_kind
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    let _ = writeln!(
        out,
        "Events: {}",
        if kinds.is_empty() {
            "none".into()
        } else {
            kinds.join(", ")
        }
    );
    out
}

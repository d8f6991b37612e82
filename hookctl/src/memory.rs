//! `hookctl memory list|show|search|forget|stats`: the tasks hookd's
//! cross-task memory keeps, and how retrieval has done.

use crate::Context;
use clap::Subcommand;
use protocol::memory::{MemoryAction, MemoryList, MemoryRequest, MemoryStats, OutcomeCounts};
use protocol::text::counted;
use protocol::wire::{Request, Response};
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum Action {
    /// Stored tasks, most recently changed first.
    List {
        /// At most this many tasks.
        #[arg(long, short = 'n')]
        limit: Option<usize>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// One task in full: reflections, key learnings, outcome.
    Show {
        /// A task id, or a unique prefix of one.
        id: String,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Stored tasks ranked by similarity to TEXT (those at or above the threshold are marked).
    Search {
        /// Words describing the task to compare with.
        text: String,
        /// At most this many tasks.
        #[arg(long, short = 'n')]
        limit: Option<usize>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Delete one task from the memory.
    Forget {
        /// A task id, or a unique prefix of one.
        id: String,
    },
    /// Retrievals, what they handed over, and how tasks ended with and without lessons.
    Stats {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(ctx: &Context, action: Action) -> anyhow::Result<ExitCode> {
    let (request, json) = match action {
        Action::List { limit, json } => (MemoryAction::List { limit }, json),
        Action::Show { id, json } => (MemoryAction::Show { id }, json),
        Action::Search { text, limit, json } => (MemoryAction::Search { text, limit }, json),
        Action::Forget { id } => (MemoryAction::Forget { id }, false),
        Action::Stats { json } => (MemoryAction::Stats, json),
    };
    let forget = matches!(request, MemoryAction::Forget { .. });
    let mut client = ctx.connect(true)?;
    let response = client.request(&Request::Memory(MemoryRequest {
        project: ctx.project()?,
        action: request,
    }))?;
    match response {
        Response::MemoryList(list) if json => println!("{}", serde_json::to_string_pretty(&list)?),
        Response::Task(task) if json => println!("{}", serde_json::to_string_pretty(&task)?),
        Response::MemoryStats(stats) if json => {
            println!("{}", serde_json::to_string_pretty(&stats)?)
        }
        Response::MemoryList(list) if forget => {
            for t in &list.tasks {
                println!("forgot task {} (\"{}\")", t.task_id, t.task_description);
            }
        }
        Response::MemoryList(list) => print_list(&list),
        Response::Task(report) => crate::task::print_task(&report),
        Response::MemoryStats(stats) => print_stats(&stats),
        other => return Err(crate::client::unexpected("a memory request", &other).into()),
    }
    Ok(ExitCode::SUCCESS)
}

fn print_list(list: &MemoryList) {
    if list.tasks.is_empty() {
        println!("no stored tasks");
    } else {
        println!(
            "{}{:<8}  {:<10}  {:<8} {:<14} {:>3} {:>3}  description",
            if list.threshold.is_some() {
                "score  "
            } else {
                ""
            },
            "task",
            "changed",
            "outcome",
            "type",
            "cmp",
            "ref",
        );
    }
    for t in &list.tasks {
        let score = t.score.map(|s| {
            let mark = if list.threshold.is_some_and(|th| s >= th) {
                "★"
            } else {
                " "
            };
            format!("{s:.2}{mark}  ")
        });
        let outcome = match (t.closed, t.outcome) {
            (_, Some(o)) => o.as_str(),
            (false, None) => "open",
            (true, None) => "unknown",
        };
        let description = if t.task_description.is_empty() {
            "(no description yet)".to_owned()
        } else {
            let d: String = t.task_description.chars().take(60).collect();
            if d.len() < t.task_description.len() {
                d + "…"
            } else {
                d
            }
        };
        println!(
            "{}{:<8}  {:<10}  {:<8} {:<14} {:>3} {:>3}  {description}",
            score.unwrap_or_default(),
            crate::display::short_id(&t.task_id),
            t.updated_at.get(..10).unwrap_or(&t.updated_at),
            outcome,
            t.task_type.as_str(),
            t.iterations,
            t.reflections,
        );
    }
    if !list.tasks.is_empty() {
        println!("(cmp: compactions during the task; ref: its reflections)");
    }
    if let Some(th) = list.threshold {
        println!("(★: at or above the similarity threshold, {th:.2})");
    }
    for p in &list.problems {
        eprintln!("problem: {p}");
    }
}

fn rate(c: &OutcomeCounts) -> String {
    let mut parts = vec![counted(c.tasks as u64, "task")];
    if let Some(r) = c.success_rate {
        parts.push(format!("{} succeeded", protocol::figures::percent(r)));
    }
    if let Some(i) = c.mean_iterations {
        parts.push(format!("{i:.1} compactions on average"));
    }
    parts.join(", ")
}

fn print_stats(s: &MemoryStats) {
    println!("memory: {}", s.dir.display());
    println!(
        "tasks: {} ({} open), reflections: {} ({} helpful, {} neutral, {} unhelpful)",
        s.tasks, s.open_tasks, s.reflections, s.helpful, s.neutral, s.unhelpful
    );
    println!(
        "cross-task retrievals: {} handed lessons over, {} found nothing similar",
        s.cross_task_retrieval_count, s.retrievals_empty
    );
    println!(
        "handed over: {}, {}; {} of current tasks in resume prompts",
        counted(s.tasks_injected, "past task"),
        counted(s.lessons_injected, "lesson"),
        counted(s.reflections_injected, "reflection")
    );
    if let Some(r) = s.retrieved_success_rate {
        println!(
            "past tasks handed over had succeeded: {}",
            protocol::figures::percent(r)
        );
    }
    if let Some(w) = s.mean_window {
        println!("reflections kept per resume prompt, on average: {w:.1}");
    }
    if !s.tasks_per_machine.is_empty() {
        let machines: Vec<String> = s
            .tasks_per_machine
            .iter()
            .map(|(m, n)| format!("{} {n}", protocol::text::one_line(m)))
            .collect();
        println!("tasks per machine: {}", machines.join(", "));
    }
    println!("closed tasks with lessons: {}", rate(&s.with_lessons));
    println!("closed tasks without:      {}", rate(&s.without_lessons));
    for p in &s.problems {
        eprintln!("problem: {p}");
    }
}

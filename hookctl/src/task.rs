//! `hookctl task start|done|failed|partial|show`: the current task of the
//! cross-task memory. `start` describes it (and sets its Ω and whether it
//! gets lessons from similar tasks); `done`, `failed` and `partial` close it
//! with that outcome, which then wins over the task list.

use crate::Context;
use clap::Subcommand;
use protocol::memory::{Capacity, TaskAction, TaskOutcome, TaskRecord, TaskReport, TaskRequest};
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum Action {
    /// Describe the current task (with no live session: the project's next one).
    Start {
        /// What the task is, in a sentence (similar past tasks are found by it).
        description: String,
        /// How many of this task's reflections each resume prompt keeps
        /// (a number, or simple 1, moderate 3, complex 5, maximum 10).
        #[arg(short, long, value_name = "N|PRESET", value_parser = parse_capacity)]
        memory: Option<u32>,
        /// No lessons from similar past tasks for this one.
        #[arg(long)]
        no_cross_task: bool,
        /// A tag to find the task by later; repeatable.
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Close the current task as a success.
    Done(Common),
    /// Close the current task as a failure.
    Failed(Common),
    /// Close the current task as partly done.
    Partial(Common),
    /// The current task, its reflections, and how many resume prompts keep.
    Show(Common),
}

#[derive(clap::Args)]
pub struct Common {
    /// The agent session (default: $CLAUDE_CODE_SESSION_ID, else the project's live session); one hookd does not follow is refused.
    #[arg(long)]
    session: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

fn parse_capacity(text: &str) -> Result<u32, String> {
    Capacity::parse(text).map(|c| c.0)
}

/// `--session`, else the agent's own session id when run from its Bash tool.
pub fn session_or_env(flag: Option<String>) -> Option<String> {
    flag.or_else(|| {
        std::env::var("CLAUDE_CODE_SESSION_ID")
            .ok()
            .filter(|s| !s.is_empty())
    })
}

/// `"fix the flaky login test" (debugging)`, or `(no description yet)`.
pub fn describe(task: &TaskRecord) -> String {
    if task.task_description.is_empty() {
        "no description yet".to_owned()
    } else {
        format!("\"{}\", {}", task.task_description, task.task_type)
    }
}

pub fn run(ctx: &Context, action: Action) -> anyhow::Result<ExitCode> {
    let (action, common) = match action {
        Action::Start {
            description,
            memory,
            no_cross_task,
            tags,
            common,
        } => (
            TaskAction::Start {
                description,
                window: memory,
                cross_task: no_cross_task.then_some(false),
                tags,
            },
            common,
        ),
        Action::Done(c) => (
            TaskAction::Finish {
                outcome: TaskOutcome::Success,
            },
            c,
        ),
        Action::Failed(c) => (
            TaskAction::Finish {
                outcome: TaskOutcome::Failure,
            },
            c,
        ),
        Action::Partial(c) => (
            TaskAction::Finish {
                outcome: TaskOutcome::Partial,
            },
            c,
        ),
        Action::Show(c) => (TaskAction::Show, c),
    };
    let project = ctx.project()?;
    let what = match &action {
        TaskAction::Start { .. } => "start",
        TaskAction::Finish { .. } => "finish",
        TaskAction::Show => "show",
    };
    let mut client = ctx.connect(true)?;
    let report = client.call(TaskRequest {
        project: project.clone(),
        session: session_or_env(common.session),
        action,
    })?;
    if common.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    match what {
        "start" => print_started(&report, &project),
        "finish" => print_closed(&report),
        _ => print_task(&report),
    }
    Ok(ExitCode::SUCCESS)
}

fn print_started(report: &TaskReport, project: &std::path::Path) {
    let task = &report.task;
    println!(
        "task {}: {}",
        crate::display::short_id(&task.task_id),
        describe(task)
    );
    println!(
        "resume prompts keep its last {} reflections ({})",
        report.window, report.window_from
    );
    if let Some(why) = &task.scaled_because {
        println!("auto-scaled: {why}");
    }
    println!(
        "lessons from similar past tasks: {}",
        if report.cross_task { "on" } else { "off" }
    );
    if report.waiting_for_session {
        println!(
            "no live agent session in {}: the next session there takes this task up",
            project.display()
        );
    }
}

fn print_closed(report: &TaskReport) {
    let task = &report.task;
    println!(
        "task {} ({}) closed: {}",
        crate::display::short_id(&task.task_id),
        describe(task),
        task.outcome.map_or("outcome unknown", TaskOutcome::as_str)
    );
    if task.key_learnings.is_empty() {
        println!("no key learnings (no reflections were recorded)");
    } else {
        println!("key learnings:");
        for l in &task.key_learnings {
            println!("  - {l}");
        }
    }
}

pub fn print_task(report: &TaskReport) {
    let task = &report.task;
    println!("task {}", task.task_id);
    println!("  description: {}", describe(task));
    if let Some(source) = &task.description_source {
        println!("  described by: {source}");
    }
    println!("  began: {}", task.timestamp);
    if let Some(p) = &task.project {
        println!("  project: {}", p.display());
    }
    println!(
        "  session: {}",
        task.session
            .as_deref()
            .unwrap_or("none yet (waits for the next one)")
    );
    println!("  compactions: {}", task.iterations);
    let state = match (&task.closed_at, task.outcome) {
        (Some(at), Some(o)) => format!("closed {at}: {o}"),
        (Some(at), None) => format!("closed {at}: outcome unknown"),
        (None, _) => "open".to_owned(),
    };
    println!("  state: {state}");
    if let Some(why) = &task.outcome_source {
        println!("  outcome from: {why}");
    }
    println!(
        "  resume prompts keep its last {} reflections ({}); lessons from similar tasks: {}",
        report.window,
        report.window_from,
        if report.cross_task { "on" } else { "off" }
    );
    if let Some(why) = &task.scaled_because {
        println!("  auto-scaled: {why}");
    }
    let shown = task
        .reflections
        .len()
        .saturating_sub(report.window as usize);
    println!(
        "  reflections: {} (the last {} go into resume prompts)",
        task.reflections.len(),
        task.reflections.len().min(report.window as usize)
    );
    for (i, r) in task.reflections.iter().enumerate() {
        let mark = if i >= shown { "▸" } else { " " };
        println!(
            "   {mark} [{}, {}, {}] {}",
            r.kind.words(),
            protocol::memory::reflection_when(r.iteration),
            r.effectiveness.as_str(),
            r.content
        );
    }
    if !task.key_learnings.is_empty() {
        println!("  key learnings:");
        for l in &task.key_learnings {
            println!("    - {l}");
        }
    }
}

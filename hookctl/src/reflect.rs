//! `hookctl reflect TEXT [--type T]`: a reflection on the current task, for
//! the cross-task memory (an agent can run it from Bash).

use crate::Context;
use protocol::memory::{ReflectRequest, ReflectionType};
use std::process::ExitCode;

pub fn run(
    ctx: &Context,
    text: String,
    kind: Option<ReflectionType>,
    session: Option<String>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let project = ctx.project()?;
    let mut client = ctx.connect(true)?;
    let report = client.call(ReflectRequest {
        project,
        session: crate::task::session_or_env(session),
        content: text,
        kind,
    })?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    let task = &report.task;
    let Some(last) = task.reflections.last() else {
        anyhow::bail!("hookd recorded no reflection");
    };
    println!(
        "recorded a reflection ({}) on task {} ({}), {}",
        last.kind.words(),
        crate::display::short_id(&task.task_id),
        crate::task::describe(task),
        protocol::memory::reflection_when(last.iteration)
    );
    println!(
        "{} reflection{} in all; resume prompts keep the last {}",
        task.reflections.len(),
        if task.reflections.len() == 1 { "" } else { "s" },
        report.window
    );
    Ok(ExitCode::SUCCESS)
}

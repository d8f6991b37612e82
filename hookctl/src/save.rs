//! `hookctl save`: capture the workflow state and checkpoint the working
//! tree now (what `/save-state` runs).

use crate::Context;
use protocol::wire::SaveQuery;
use std::path::Path;
use std::process::ExitCode;

pub fn run(
    ctx: &Context,
    session: Option<String>,
    checkpoint: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let project = ctx.project()?;
    // A checkpoint needs a repository; saving anyway would leave a
    // `.workflow/` in whatever directory this happened to run in.
    if checkpoint && !in_git_repository(&project) {
        eprintln!(
            "hookctl: {} is not in a git repository: nothing was saved.\n\
             Run `hookctl save` inside your project's repository (or pass --project DIR); \
             `hookctl save --no-checkpoint` saves the state without git.",
            project.display()
        );
        return Ok(ExitCode::FAILURE);
    }
    let mut client = ctx.connect_for(true, crate::SLOW_COMMAND_TIMEOUT)?;
    let summary = client.call(SaveQuery {
        project,
        session,
        checkpoint,
    })?;
    if json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        if let Some(file) = &summary.state_file {
            println!("state saved to {}", file.display());
        }
        if let Some(file) = &summary.resume_prompt_file {
            println!("resume prompt in {}", file.display());
        }
        match (&summary.checkpoint, &summary.checkpoint_note) {
            (Some(sha), None) => println!(
                "checkpoint {sha} on {} (git show --stat {sha})",
                summary.checkpoint_ref.as_deref().unwrap_or("?")
            ),
            (Some(sha), Some(note)) => println!("checkpoint {sha}: {note}"),
            // A failed checkpoint is among the problems, printed below.
            (None, Some(note))
                if checkpoint && !summary.problems.iter().any(|p| p.contains(note)) =>
            {
                println!("no checkpoint: {note}")
            }
            _ => {}
        }
        if summary.session.is_none() {
            println!("(no agent session seen in this project: saved from git and records only)");
        }
        for problem in &summary.problems {
            eprintln!("problem: {problem}");
        }
    }
    Ok(if summary.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Whether `dir` lies in a git work tree, found as hookd finds the project.
fn in_git_repository(dir: &Path) -> bool {
    protocol::project::work_tree_root(dir).is_some()
}

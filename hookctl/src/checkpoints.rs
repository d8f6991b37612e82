//! `hookctl checkpoints` and `hookctl checkpoint show | restore`: the git
//! WIP checkpoints hookd made, and getting files back from them.

use crate::Context;
use crate::display::{ago, short_id};
use clap::Subcommand;
use protocol::wire::{CheckpointQuery, CheckpointRev, RestoreQuery};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum Action {
    /// A checkpoint's message and the files it changed against its base.
    Show {
        /// Commit id (or unique prefix) of the checkpoint.
        sha: String,
        #[arg(long)]
        json: bool,
    },
    /// Write files from a checkpoint into the working tree: never the index,
    /// never a git dir, never through a symlink; files the checkpoint lacks
    /// stay.
    Restore {
        sha: String,
        /// Only this file, or the files under this directory (relative to
        /// the repository root); repeatable.
        #[arg(long = "path", value_name = "PATH")]
        paths: Vec<PathBuf>,
        /// Overwrite files with uncommitted changes.
        #[arg(long)]
        force: bool,
    },
}

pub fn list(ctx: &Context, limit: Option<usize>, json: bool) -> anyhow::Result<ExitCode> {
    let project = ctx.project()?;
    let mut client = ctx.connect(true)?;
    let list = client.call(CheckpointQuery { project, limit })?;
    if json {
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(ExitCode::SUCCESS);
    }
    if list.is_empty() {
        println!("no checkpoints yet");
    }
    for c in &list {
        println!(
            "{}  {:<10}  {:<24}  {:>3} files  session {}  {}",
            short_id(&c.sha),
            ago(c.time_ms),
            c.trigger.as_deref().unwrap_or("-"),
            c.files_changed,
            c.session.as_deref().map(short_id).unwrap_or("-"),
            c.reference,
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run(ctx: &Context, action: Action) -> anyhow::Result<ExitCode> {
    let project = ctx.project()?;
    let mut client = ctx.connect(true)?;
    match action {
        Action::Show { sha, json } => {
            let detail = client.call(CheckpointRev { project, rev: sha })?;
            if json {
                println!("{}", serde_json::to_string_pretty(&detail)?);
                return Ok(ExitCode::SUCCESS);
            }
            println!(
                "checkpoint {} on {}",
                detail.summary.sha, detail.summary.reference
            );
            println!("{}", detail.message.trim_end());
            println!();
            for f in &detail.files {
                println!("  {:<12} {}  {}", f.action, f.path, f.summary);
            }
        }
        Action::Restore { sha, paths, force } => {
            let done = client.call(RestoreQuery {
                project,
                rev: sha.clone(),
                paths,
                force,
            })?;
            if done.restored.is_empty() {
                println!(
                    "nothing to restore: the files already match {}",
                    short_id(&sha)
                );
            }
            for path in &done.restored {
                println!("restored {path}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

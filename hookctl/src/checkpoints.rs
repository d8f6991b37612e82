//! `hookctl checkpoints` and `hookctl checkpoint show | restore`: the git
//! WIP checkpoints hookd made, and getting files back from them.

use crate::Context;
use crate::display::{ago, short_id};
use clap::Subcommand;
use protocol::wire::{CheckpointQuery, CheckpointRev, FileChange, RestoreQuery};
use std::path::PathBuf;
use std::process::ExitCode;

/// One line per file, the action and path columns as wide as their widest.
pub fn file_table(files: &[FileChange]) -> String {
    let width = |text: &str| text.chars().count();
    let actions = files.iter().map(|f| width(&f.action)).max().unwrap_or(0);
    let paths = files.iter().map(|f| width(&f.path)).max().unwrap_or(0);
    files
        .iter()
        .map(|f| {
            let line = format!(
                "  {}{}  {}{}  {}",
                f.action,
                " ".repeat(actions - width(&f.action)),
                f.path,
                " ".repeat(paths - width(&f.path)),
                f.summary
            );
            line.trim_end().to_owned() + "\n"
        })
        .collect()
}

#[derive(Subcommand)]
pub enum Action {
    /// A checkpoint's message and the files it changed against its base.
    Show {
        /// Commit id (or unique prefix) of the checkpoint, as `hookctl checkpoints` lists it.
        sha: String,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Write files from a checkpoint into the working tree: never the index,
    /// never a git dir, never through a symlink; files the checkpoint lacks
    /// stay.
    Restore {
        /// Commit id (or unique prefix) of the checkpoint, as `hookctl checkpoints` lists it.
        sha: String,
        /// Only this file, or the files under this directory (relative to
        /// the current directory, as the resume prompt names them; to the
        /// project's root when run outside the project); repeatable.
        #[arg(long = "path", value_name = "PATH")]
        paths: Vec<PathBuf>,
        /// Overwrite files with uncommitted changes.
        #[arg(long)]
        force: bool,
    },
}

/// What a person sees before the first checkpoint, with how to make one.
pub const NO_CHECKPOINTS: &str = "no checkpoints yet: hookd makes one before each compaction \
and at 95% of the way to it; `hookctl save` makes one now";

pub fn list(ctx: &Context, limit: Option<usize>, json: bool) -> anyhow::Result<ExitCode> {
    let project = ctx.project()?;
    let mut client = ctx.connect(true)?;
    let list = client.call(CheckpointQuery { project, limit })?;
    if json {
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(ExitCode::SUCCESS);
    }
    if list.is_empty() {
        println!("{NO_CHECKPOINTS}");
    }
    for c in &list {
        // Another machine's checkpoint says whose it is.
        let machine = c
            .machine
            .as_deref()
            .map(|m| format!("  on machine {}", protocol::text::one_line(m)))
            .unwrap_or_default();
        println!(
            "{}  {:<10}  {:<24}  {:<11}  session {}  {}{machine}",
            short_id(&c.sha),
            ago(c.time_ms),
            c.trigger.as_deref().unwrap_or("-"),
            protocol::text::counted(c.files_changed as u64, "file"),
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
            print!("{}", file_table(&detail.files));
        }
        Action::Restore { sha, paths, force } => {
            // Paths are typed from where the person (or agent) is; the
            // daemon takes them from the repository's root.
            // Compared by name: both resolved first (a link in the project's
            // path, `/tmp` against `/private/tmp`), as the current
            // directory always is.
            let here = std::env::current_dir().ok();
            let root = project.canonicalize().unwrap_or_else(|_| project.clone());
            let paths = paths
                .iter()
                .map(|p| match &here {
                    Some(dir) => protocol::project::typed_in(&root, dir, p),
                    None => p.clone(),
                })
                .collect();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoint_files_line_up() {
        let file = |action: &str, path: &str, summary: &str| FileChange {
            path: path.into(),
            action: action.into(),
            added: None,
            removed: None,
            summary: summary.into(),
        };
        let table = file_table(&[
            file("modified", "src/main.rs", "+12 −3 lines"),
            file("created", "src/auth/login_route.rs", "+80 −0 lines"),
            file("deleted", "old.txt", "−4 lines"),
            file("type changed", "run.sh", ""),
        ]);
        insta::assert_snapshot!(table);
        assert_eq!(file_table(&[]), "");
    }
}

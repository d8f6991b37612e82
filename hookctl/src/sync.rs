//! `hookctl sync push|pull|status`, and the sync lines of `status` and
//! `doctor`.

use crate::Context;
use crate::display::ago;
use clap::Subcommand;
use protocol::sync::{SyncAction, SyncAttempt, SyncReport, SyncRequest, SyncTarget, shown_url};
use protocol::text::one_line;
use protocol::wire::{Call, Request};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Subcommand)]
pub enum Action {
    /// Push this repository's checkpoints and saved state to `sync.remote`, and the memory to `sync.memory_remote`, now.
    Push {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Fetch the other machines' checkpoints and saved state of this repository, and their memory, now.
    Pull {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Where sync goes (the remote and its URL), this machine's id, the last push and pull, the next retry.
    Status {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(ctx: &Context, action: Action) -> anyhow::Result<ExitCode> {
    let (action, json) = match action {
        Action::Push { json } => (SyncAction::Push, json),
        Action::Pull { json } => (SyncAction::Pull, json),
        Action::Status { json } => (SyncAction::Status, json),
    };
    // A push or a pull answers when git is done: each of its two runs is
    // bounded by sync.timeout_secs.
    let sync = ctx.user_config().sync;
    let wait = match action {
        SyncAction::Status => crate::COMMAND_TIMEOUT,
        _ => Duration::from_secs(sync.timeout_secs.saturating_mul(2).saturating_add(30)),
    };
    let mut client = ctx.connect_for(true, wait)?;
    let request = SyncRequest {
        action,
        project: ctx.project().ok(),
    };
    let response = client.request(&Request::Sync(request))?;
    let report = SyncRequest::reply(response)
        .map_err(|other| crate::client::unexpected(SyncRequest::WHAT, &other))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        for line in lines(&report) {
            println!("{line}");
        }
    }
    let failed = action != SyncAction::Status && report.failed();
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// What a person reads of `report`, each line cleaned.
pub fn lines(report: &SyncReport) -> Vec<String> {
    let mut out = Vec::new();
    match &report.remote {
        Some(remote) => out.push(format!("remote: {}", one_line(remote))),
        None => out.push("remote: none (sync.remote is not set: nothing is pushed)".into()),
    }
    if !report.machine.is_empty() {
        out.push(format!("machine: {}", one_line(&report.machine)));
    }
    for target in &report.repositories {
        let name = target.project.as_ref().map_or_else(
            || "repository".to_owned(),
            |p| one_line(&p.display().to_string()),
        );
        out.extend(target_lines(&name, target));
    }
    match (&report.memory_remote, &report.memory) {
        (Some(_), Some(memory)) => out.extend(target_lines("memory", memory)),
        (Some(url), None) => out.push(format!("memory: {}", shown_url(url))),
        (None, _) => out.push("memory: not synced (sync.memory_remote is not set)".into()),
    }
    out
}

fn target_lines(name: &str, target: &SyncTarget) -> Vec<String> {
    let mut out = Vec::new();
    match (&target.url, &target.problem) {
        (_, Some(problem)) => out.push(format!("{name}: nothing is pushed: {}", one_line(problem))),
        (Some(url), None) => out.push(format!("{name}: {}", shown_url(url))),
        (None, None) => out.push(format!("{name}: not pushed yet")),
    }
    let attempt = |what: &str, a: &SyncAttempt| {
        format!(
            "  last {what}: {} {}: {}",
            if a.ok { "ok" } else { "FAILED" },
            ago(a.at_ms),
            one_line(&a.detail)
        )
    };
    out.extend(target.last_push.as_ref().map(|a| attempt("push", a)));
    out.extend(target.last_pull.as_ref().map(|a| attempt("pull", a)));
    if let Some(at) = target.next_retry_ms {
        let secs = at.saturating_sub(crate::display::now_ms()) / 1000;
        out.push(format!(
            "  next retry: in {}",
            crate::display::duration(secs)
        ));
    }
    out
}

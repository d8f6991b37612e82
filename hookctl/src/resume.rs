//! `hookctl resume [--print]` and `hookctl validate`: the saved state
//! checked against the repository, and the resume prompt (what `/hookd-resume`
//! runs).

use crate::Context;
use protocol::wire::{CheckStatus, ResumeQuery, Validate};
use std::process::ExitCode;

pub fn run(
    ctx: &Context,
    session: Option<String>,
    render: bool,
    print: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let project = ctx.project()?;
    let mut client = ctx.connect_for(true, crate::SLOW_COMMAND_TIMEOUT)?;
    let query = ResumeQuery { project, session };
    let report = if render {
        client.call(query)?
    } else {
        client.call(Validate(query))?
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else if print && let Some(prompt) = &report.prompt {
        print!("{prompt}");
    } else {
        for c in &report.checks {
            let mark = match c.status {
                CheckStatus::Pass => "✓",
                CheckStatus::Warn => "⚠",
                CheckStatus::Fail => "✗",
            };
            println!("{mark} {}: {}", c.check, c.detail);
        }
        println!("{}", report.summary);
        if let Some(file) = &report.state_file {
            println!("state: {}", file.display());
        }
        if render && report.prompt.is_some() {
            println!(
                "resume prompt written to .workflow/resume_prompt.md (`hookctl resume --print` shows it)"
            );
        }
    }
    let failed =
        report.checks.iter().any(|c| c.status == CheckStatus::Fail) || report.state_file.is_none();
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

//! `hookctl decision | blocker | phase | next | note`: what an agent (from
//! Bash) or a person (from a terminal) wants the next state capture to know.

use crate::Context;
use protocol::wire::{Record, RecordRequest, Request};
use std::process::ExitCode;

pub fn run(ctx: &Context, record: Record) -> anyhow::Result<ExitCode> {
    let project = ctx.project()?;
    let what = describe(&record);
    let mut client = ctx.connect(true)?;
    client.request(&Request::Record(RecordRequest {
        project: project.clone(),
        session: std::env::var("CLAUDE_CODE_SESSION_ID")
            .ok()
            .filter(|s| !s.is_empty()),
        record,
    }))?;
    println!("recorded {what} for {}", project.display());
    Ok(ExitCode::SUCCESS)
}

fn describe(record: &Record) -> String {
    match record {
        Record::Decision { topic, .. } => format!("the decision on {topic}"),
        Record::Blocker { issue, status, .. } => format!(
            "blocker \"{issue}\" ({})",
            status.as_deref().unwrap_or("unresolved")
        ),
        Record::Phase { name } => format!("phase {name}"),
        Record::Next { action, .. } => format!("next action \"{action}\""),
        Record::NextDone { action } => format!("\"{action}\" as done"),
        Record::NextClear => "no next actions".to_owned(),
        Record::Note { .. } => "a progress note".to_owned(),
    }
}

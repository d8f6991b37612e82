//! `hookctl status`: the daemon and the sessions it follows.

use crate::Context;
use crate::client::ClientError;
use crate::display::{ago, bar, duration, percent, short_id, thousands};
use protocol::wire::{ContextStatus, Mark, SessionStatus, StatusQuery, StatusReport};
use std::process::ExitCode;

pub fn run(ctx: &Context, session: Option<String>, json: bool) -> anyhow::Result<ExitCode> {
    let mut client = match ctx.connect(false) {
        Ok(client) => client,
        Err(ClientError::NotRunning(path)) => {
            if json {
                println!(
                    "{}",
                    serde_json::json!({ "running": false, "socket": path })
                );
            } else {
                println!(
                    "hookd is not running (socket {}). `hookctl daemon start` starts it.",
                    path.display()
                );
            }
            return Ok(ExitCode::from(3));
        }
        Err(e) => return Err(e.into()),
    };
    let report = client.call(StatusQuery {
        session: session.clone(),
    })?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render(&report));
    }
    if session.is_some() && report.sessions.is_empty() {
        eprintln!(
            "hookctl: no session matches {}",
            session.unwrap_or_default()
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

pub fn render(report: &StatusReport) -> String {
    let d = &report.daemon;
    let mut out = format!(
        "hookd {} (protocol {}) · pid {} · up {} · {} events\nsocket {}\n",
        d.version,
        d.protocol,
        d.pid,
        duration(d.uptime_secs),
        d.events_handled,
        d.socket.display()
    );
    for w in &d.warnings {
        out += &format!("warning: {w}\n");
    }
    if report.sessions.is_empty() {
        out += "no sessions yet\n";
        return out;
    }
    out += &format!("{} session(s)\n", report.sessions.len());
    for s in &report.sessions {
        out += &session(s);
    }
    out
}

fn session(s: &SessionStatus) -> String {
    let project = s
        .project_dir
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "-".into());
    let mut out = format!(
        "\n{} {} {}  {}  {}\n",
        if s.ended { "○" } else { "●" },
        s.harness,
        short_id(&s.session_id),
        project,
        s.model.as_deref().unwrap_or("model unknown"),
    );
    match &s.context {
        Some(c) => {
            if let Some(why) = &c.invalid {
                out += &format!("    context  INVALID: {why}; the last good figure follows\n");
            }
            out += &context_lines(c);
        }
        None => out += "    context  unknown until the first reply\n",
    }
    let fired = if s.fired.is_empty() {
        "none".to_owned()
    } else {
        s.fired
            .iter()
            .map(|l| format!("{:.0}%", l * 100.0))
            .collect::<Vec<_>>()
            .join(" ")
    };
    out += &format!(
        "    epoch {} · fired {} · last save {} · checkpoint {}\n",
        s.epoch,
        fired,
        mark(s.last_save.as_ref()),
        mark(s.last_checkpoint.as_ref())
    );
    if let Some(resume) = &s.resume {
        out += &format!("    resume {}\n", mark(Some(resume)));
    }
    out += &format!(
        "    last event {} {} · {} events{}\n",
        s.last_event.as_deref().unwrap_or("-"),
        ago(s.last_event_at_ms),
        s.events_seen,
        if s.ended { " · ended" } else { "" }
    );
    if let Some(t) = &s.transcript_path {
        out += &format!("    transcript {}\n", t.display());
    }
    for note in &s.notes {
        out += &format!("    note: {note}\n");
    }
    out
}

fn context_lines(c: &ContextStatus) -> String {
    format!(
        "    context  {} / {} tokens  {} of the compaction point · {} of the {}-token window\n             {} {}  ({}, {})\n",
        thousands(c.tokens_used),
        thousands(c.tokens_max),
        percent(c.pressure),
        percent(c.window_fraction),
        thousands(c.window_tokens),
        bar(c.pressure, 20),
        c.advice.summary(),
        c.source,
        c.basis,
    )
}

fn mark(m: Option<&Mark>) -> String {
    match m {
        None => "never".into(),
        Some(m) => {
            let status = if m.ok { "" } else { " FAILED" };
            let detail = m
                .detail
                .as_deref()
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            format!("{} ({}{status}{detail})", ago(m.at_ms), m.what)
        }
    }
}

//! `hookctl status`: the daemon and the sessions it follows.

use crate::Context;
use crate::client::ClientError;
use crate::display::{ago, duration, short_id};
use protocol::wire::{Request, Response, StatusQuery, StatusReport};
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
    let Response::Status(report) = client.request(&Request::Status(StatusQuery { session }))?
    else {
        anyhow::bail!("hookd answered a status request with something else");
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render(&report));
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
        let project = s
            .project_dir
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "-".into());
        out += &format!(
            "  {} {}  {}  last {} {} · {} events{}\n",
            s.harness,
            short_id(&s.session_id),
            project,
            s.last_event.as_deref().unwrap_or("-"),
            ago(s.last_event_at_ms),
            s.events_seen,
            if s.ended { " · ended" } else { "" }
        );
    }
    out
}

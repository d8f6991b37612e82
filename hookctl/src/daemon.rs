//! `hookctl daemon start|stop|restart|status`.

use crate::Context;
use crate::client::{self, ClientError};
use clap::Subcommand;
use protocol::wire::StatusQuery;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// How long start and stop wait for the daemon.
const WAIT: Duration = Duration::from_secs(10);

#[derive(Subcommand)]
pub enum Action {
    /// Start hookd in the background (does nothing if it runs).
    Start,
    /// Ask hookd to stop, and wait until it has.
    Stop,
    /// Stop, then start.
    Restart,
    /// Say whether hookd runs, with its pid and version.
    Status,
    /// Keep hookd always up as a systemd user unit (Linux) or launchd agent (macOS).
    InstallService(crate::service::ServiceArgs),
    /// Stop and remove that service (autostart from hookctl goes on working).
    UninstallService(crate::service::ServiceArgs),
}

pub fn run(ctx: &Context, action: Action) -> anyhow::Result<ExitCode> {
    match action {
        Action::Start => start(ctx),
        Action::Stop => stop(ctx),
        Action::Restart => {
            stop(ctx)?;
            start(ctx)
        }
        Action::Status => status(ctx),
        Action::InstallService(args) => crate::service::install(ctx, args),
        Action::UninstallService(args) => crate::service::uninstall(args),
    }
}

fn start(ctx: &Context) -> anyhow::Result<ExitCode> {
    let deadline = Instant::now() + WAIT;
    match client::Client::connect(&ctx.socket.path, deadline) {
        Ok(mut c) => {
            let pid = c.call(StatusQuery::default()).map_or(0, |r| r.daemon.pid);
            println!(
                "hookd is already running (pid {pid}) on {}",
                ctx.socket.path.display()
            );
            return Ok(ExitCode::SUCCESS);
        }
        Err(ClientError::NotRunning(_)) => {}
        Err(e) => return Err(e.into()),
    }
    client::start_daemon(&ctx.socket, deadline)?;
    let mut c = client::Client::connect(&ctx.socket.path, deadline)?;
    let pid = c.call(StatusQuery::default()).map_or(0, |r| r.daemon.pid);
    println!("hookd started (pid {pid}) on {}", ctx.socket.path.display());
    Ok(ExitCode::SUCCESS)
}

fn stop(ctx: &Context) -> anyhow::Result<ExitCode> {
    match client::stop_daemon(&ctx.socket, WAIT)? {
        None => println!("hookd is not running on {}", ctx.socket.path.display()),
        Some(pid) => println!("hookd stopped (pid {pid})"),
    }
    Ok(ExitCode::SUCCESS)
}

fn status(ctx: &Context) -> anyhow::Result<ExitCode> {
    match client::Client::connect(&ctx.socket.path, Instant::now() + WAIT) {
        Ok(mut c) => {
            let report = c.call(StatusQuery::default())?;
            let d = report.daemon;
            println!(
                "hookd {} is running (pid {}, up {}s) on {}",
                d.version,
                d.pid,
                d.uptime_secs,
                d.socket.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(ClientError::NotRunning(path)) => {
            println!("hookd is not running on {}", path.display());
            Ok(ExitCode::from(3))
        }
        Err(e) => Err(e.into()),
    }
}

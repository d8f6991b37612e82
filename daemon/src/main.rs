//! `hookd run | start | stop`. The work is in the library.

use anyhow::Context;
use clap::{Parser, Subcommand};
use hookd::daemonize::{self, Forked};
use hookd::{Daemon, DaemonOptions, logging, pidlock};
use protocol::config::Layers;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// How long `hookd start` waits for the daemon to listen.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// How long `hookd stop` waits for the daemon to exit after SIGTERM.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Parser)]
#[command(
    name = "hookd",
    version,
    about = "Keeps AI coding agents' working state across context compaction"
)]
struct Cli {
    /// Socket path (default: $HOOKD_SOCKET, else $XDG_RUNTIME_DIR/hookd/hookd.sock, else a per-user directory).
    #[arg(long, global = true, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// State directory for sessions and logs (default: $HOOKD_STATE_DIR, else ~/.local/state/hookd).
    #[arg(long, global = true, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// More log detail: -v debug, -vv trace (HOOKD_LOG or RUST_LOG override this).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run in the foreground, logging to stderr as well as the log file.
    Run(RunArgs),
    /// Start in the background; returns once the daemon listens.
    Start(RunArgs),
    /// Stop the running daemon (SIGTERM), waiting for it to drain.
    Stop,
}

#[derive(clap::Args)]
struct RunArgs {
    /// Allow running as root with the socket in a directory others can write to.
    #[arg(long)]
    allow_shared_dir: bool,
    /// Exit after this many idle seconds (0: never). Overrides daemon.idle_timeout_secs.
    #[arg(long, value_name = "SECS")]
    idle_timeout: Option<u64>,
}

fn main() -> ExitCode {
    // Sessions, logs and state files hold the user's work: never world-readable.
    // SAFETY: umask only changes this process's file creation mask.
    unsafe { libc::umask(0o077) };
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Run(args) => run(&cli, args),
        Command::Start(args) => start(&cli, args),
        Command::Stop => stop(&cli),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("hookd: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn prepare(cli: &Cli, args: Option<&RunArgs>) -> anyhow::Result<DaemonOptions> {
    let socket = protocol::paths::socket_path(cli.socket.as_deref())?;
    let state_dir = match &cli.state_dir {
        Some(dir) => dir.clone(),
        None => protocol::paths::state_dir()
            .context("no state directory: pass --state-dir or set HOOKD_STATE_DIR")?,
    };
    let mut layers = Layers::from_process(None);
    if let Some(secs) = args.and_then(|a| a.idle_timeout) {
        layers.flags.push((
            "--idle-timeout".into(),
            "daemon.idle_timeout_secs".into(),
            secs.into(),
        ));
    }
    let log_dir = Some(state_dir.join("logs"));
    Ok(DaemonOptions {
        socket,
        state_dir,
        log_dir,
        layers,
        allow_shared_dir: args.is_some_and(|a| a.allow_shared_dir),
        test_events: hookd::test_events::TestEvents::from_env(),
    })
}

fn run(cli: &Cli, args: &RunArgs) -> anyhow::Result<ExitCode> {
    let prepared = prepare(cli, Some(args))?;
    let _log = logging::init(prepared.log_dir.as_deref(), cli.verbose, true)?;
    serve(prepared, None)
}

fn start(cli: &Cli, args: &RunArgs) -> anyhow::Result<ExitCode> {
    let prepared = prepare(cli, Some(args))?;
    let lock = prepared.socket.lock_file();
    if pidlock::is_held(&lock) {
        let pid = pidlock::read_pid(&lock).unwrap_or_else(|| "unknown".into());
        println!(
            "hookd is already running (pid {pid}) on {}",
            prepared.socket.path.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    // No thread may exist before this point.
    match daemonize::fork()? {
        Forked::Parent {
            child_pid,
            readiness,
        } => match readiness.wait(START_TIMEOUT) {
            Ok(()) => {
                println!(
                    "hookd started (pid {child_pid}) on {}",
                    prepared.socket.path.display()
                );
                Ok(ExitCode::SUCCESS)
            }
            Err(reason) => {
                eprintln!("hookd: could not start: {reason}");
                Ok(ExitCode::FAILURE)
            }
        },
        Forked::Daemon(notifier) => {
            let _log = logging::init(prepared.log_dir.as_deref(), cli.verbose, false)?;
            serve(prepared, Some(notifier))
        }
    }
}

fn serve(
    options: DaemonOptions,
    notifier: Option<daemonize::Notifier>,
) -> anyhow::Result<ExitCode> {
    // Hooks read transcripts on blocking threads: under a burst from many
    // sessions, more threads (each with its own malloc arena) only add memory.
    // SAFETY: glibc's mallopt only tunes the allocator, under its own lock.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(16)
        .enable_all()
        .build()?;
    // When the stop began, for the runtime's own shutdown below.
    let stopping_since = std::sync::Arc::new(std::sync::OnceLock::new());
    let mut drain = Duration::ZERO;
    let served = runtime.block_on(async {
        // Signals are caught before the socket exists.
        let started = hookd::shutdown::Signals::catch()
            .map_err(anyhow::Error::from)
            .and_then(|signals| Ok((signals, Daemon::bind(options)?)));
        let (signals, daemon) = match started {
            Ok(started) => started,
            Err(e) => {
                if let Some(n) = notifier {
                    n.failed(&e.to_string());
                }
                return Err(e);
            }
        };
        let socket = daemon.socket().to_path_buf();
        signals.on(daemon.shutdown_handle(), move || {
            let _ = std::fs::remove_file(&socket);
        });
        if let Some(n) = notifier {
            n.ready();
        }
        drain = Duration::from_millis(daemon.engine().config().config.daemon.drain_timeout_ms);
        let (shutdown, since) = (daemon.shutdown_handle(), stopping_since.clone());
        tokio::spawn(async move {
            shutdown.wait().await;
            let _ = since.set(Instant::now());
        });
        daemon.serve().await?;
        Ok(ExitCode::SUCCESS)
    });
    // Dropping the runtime would wait for every blocking task, and one may
    // be stuck for good (a read that never returns): what is left of the
    // drain time is all they get.
    let spent = stopping_since
        .get()
        .map_or(Duration::ZERO, |since: &Instant| since.elapsed());
    runtime.shutdown_timeout(drain.saturating_sub(spent));
    served
}

fn stop(cli: &Cli) -> anyhow::Result<ExitCode> {
    let socket = protocol::paths::socket_path(cli.socket.as_deref())?;
    let lock = socket.lock_file();
    if !pidlock::is_held(&lock) {
        println!("hookd is not running on {}", socket.path.display());
        return Ok(ExitCode::SUCCESS);
    }
    let pid: i32 = pidlock::read_pid(&lock)
        .and_then(|p| p.parse().ok())
        .with_context(|| format!("the lock {} is held but names no pid", lock.display()))?;
    // SAFETY: sending a signal has no memory-safety preconditions.
    if unsafe { libc::kill(pid, libc::SIGTERM) } != 0 {
        anyhow::bail!(
            "cannot signal pid {pid}: {}",
            std::io::Error::last_os_error()
        );
    }
    let deadline = Instant::now() + STOP_TIMEOUT;
    while pidlock::is_held(&lock) {
        if Instant::now() > deadline {
            anyhow::bail!(
                "hookd (pid {pid}) is still running after {}s; `kill -9 {pid}` ends it",
                STOP_TIMEOUT.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    println!("hookd stopped (pid {pid})");
    Ok(ExitCode::SUCCESS)
}

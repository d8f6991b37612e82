//! hookctl: the thin client of hookd. Harness hooks run `hookctl hook` on
//! every event; people run the other commands. It has no async runtime and
//! no heavy dependencies, because it starts after every tool call.

mod client;
mod completions;
mod config;
mod daemon;
mod display;
mod doctor;
mod hook;
mod install;
mod logs;
mod paths;
mod service;
mod status;
mod statusline;
mod watch;

use clap::{CommandFactory, Parser, Subcommand};
use protocol::config::{ClientConfig, Config, Layers};
use protocol::paths::SocketPath;
use protocol::wire::Harness;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// How long interactive commands wait for hookd (including autostart).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Parser)]
#[command(
    name = "hookctl",
    version,
    about = "Client of hookd: agent hooks, status and set-up"
)]
struct Cli {
    /// Socket path (default: $HOOKD_SOCKET, else $XDG_RUNTIME_DIR/hookd/hookd.sock, else a per-user directory).
    #[arg(long, global = true, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// Explain failures on stderr (hooks are otherwise silent when hookd is unreachable).
    #[arg(short, long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Handle a harness hook: payload JSON on stdin, the harness's answer on stdout.
    Hook {
        /// Event name in kebab case (post-tool-use, pre-compact, ...). Default: the payload's hook_event_name.
        event: Option<String>,
        /// Which harness sent the payload.
        #[arg(long, default_value = "claude-code", value_parser = parse_harness)]
        harness: Harness,
        /// Time budget in milliseconds (default: client.hook_timeout_ms and friends).
        #[arg(long, value_name = "MS")]
        timeout_ms: Option<u64>,
    },
    /// Show the daemon and the sessions it follows.
    Status {
        /// Only this session (id or unique prefix).
        #[arg(long)]
        session: Option<String>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Live view of the sessions, redrawn as they change.
    Watch {
        /// Only this session (id or unique prefix).
        #[arg(long)]
        session: Option<String>,
    },
    /// Claude Code statusLine command: statusLine JSON on stdin, one line out.
    Statusline,
    /// Start, stop or inspect the daemon.
    Daemon {
        #[command(subcommand)]
        action: daemon::Action,
    },
    /// Print the effective configuration and where each value comes from.
    Config {
        /// Project whose .hookd.yaml applies (default: $CLAUDE_PROJECT_DIR, else the current directory).
        #[arg(long, value_name = "DIR")]
        project: Option<PathBuf>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Wire hookd into a harness's hook settings (Claude Code, Codex, Gemini CLI).
    Install(install::InstallArgs),
    /// Take hookd's entries out of a harness's hook settings.
    Uninstall(install::UninstallArgs),
    /// Check that hookd can work here, with a fix for each problem.
    Doctor {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Print the daemon's log; -f follows it.
    Logs {
        /// Keep printing new lines as they are written.
        #[arg(short, long)]
        follow: bool,
        /// How many of the last lines to print first.
        #[arg(short = 'n', long, default_value_t = 50)]
        lines: usize,
    },
    /// Where hookd's files live (one of them by name: socket, config-dir, log-dir, ...).
    Paths {
        /// Print only this path.
        name: Option<String>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// A shell completion script on stdout.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
}

fn parse_harness(name: &str) -> Result<Harness, String> {
    Harness::parse(name).ok_or_else(|| {
        let known: Vec<&str> = Harness::ALL.iter().map(|h| h.as_str()).collect();
        format!("unknown harness `{name}` (known: {})", known.join(", "))
    })
}

/// What every command needs.
pub struct Context {
    pub socket: SocketPath,
    pub verbose: bool,
    pub project_root: Option<PathBuf>,
}

impl Context {
    /// The configuration; a broken config file must not break a hook, so
    /// errors fall back to the defaults (and are shown with -v).
    pub fn config(&self) -> Config {
        match protocol::config::load(&Layers::from_process(self.project_root.clone())) {
            Ok(effective) => effective.config,
            Err(e) => {
                self.note(&format!("{e}; using the default settings"));
                Config::default()
            }
        }
    }

    pub fn client_config(&self) -> ClientConfig {
        self.config().client
    }

    /// One line on stderr, only with -v.
    pub fn note(&self, message: &str) {
        if self.verbose {
            eprintln!("hookctl: {message}");
        }
    }

    /// Connects for an interactive command.
    pub fn connect(&self, autostart: bool) -> Result<client::Client, client::ClientError> {
        client::Client::connect_or_start(&self.socket, Instant::now() + COMMAND_TIMEOUT, autostart)
    }
}

/// The project a command is about: the harness's project variable, else the
/// working directory.
fn project_root() -> Option<PathBuf> {
    std::env::var_os("CLAUDE_PROJECT_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap exits 2 on usage errors, which a harness reads as "block": never.
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let socket = match protocol::paths::socket_path(cli.socket.as_deref()) {
        Ok(socket) => socket,
        Err(e) => {
            if matches!(cli.command, Command::Hook { .. }) {
                // Fail open.
                if cli.verbose {
                    eprintln!("hookctl: {e}");
                }
                return ExitCode::SUCCESS;
            }
            eprintln!("hookctl: {e}");
            return ExitCode::FAILURE;
        }
    };
    let ctx = Context {
        socket,
        verbose: cli.verbose,
        project_root: project_root(),
    };
    let result = match cli.command {
        Command::Hook {
            event,
            harness,
            timeout_ms,
        } => {
            return hook::run(
                &ctx,
                hook::HookArgs {
                    event,
                    harness,
                    timeout_ms,
                },
            );
        }
        Command::Status { session, json } => status::run(&ctx, session, json),
        Command::Watch { session } => watch::run(&ctx, session),
        Command::Statusline => statusline::run(&ctx),
        Command::Daemon { action } => daemon::run(&ctx, action),
        Command::Config { project, json } => config::run(&ctx, project, json),
        Command::Install(args) => install::install(args),
        Command::Uninstall(args) => install::uninstall(args),
        Command::Doctor { json } => doctor::run(&ctx, json),
        Command::Logs { follow, lines } => logs::run(&ctx, follow, lines),
        Command::Paths { name, json } => paths::run(&ctx, name, json),
        Command::Completions { shell } => completions::run(shell, Cli::command()),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("hookctl: {e:#}");
            ExitCode::FAILURE
        }
    }
}

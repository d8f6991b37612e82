//! hookctl: the thin client of hookd. Harness hooks run `hookctl hook` on
//! every event; people run the other commands. It has no async runtime and
//! no heavy dependencies, because it starts after every tool call.

// Every line hookctl prints may quote text from outside hookd (a model id,
// a file, branch or task name, a log line, an error about a file): these
// stand in for the standard macros in every module below, so that no
// escape sequence reaches the terminal whatever a command prints.
macro_rules! println {
    () => { $crate::display::out("\n") };
    ($($arg:tt)*) => {
        $crate::display::out(&::std::format!("{}\n", $crate::display::terminal(&::std::format!($($arg)*))))
    };
}
macro_rules! print {
    ($($arg:tt)*) => {
        $crate::display::out(&$crate::display::terminal(&::std::format!($($arg)*)))
    };
}
macro_rules! eprintln {
    () => { $crate::display::err("\n") };
    ($($arg:tt)*) => {
        $crate::display::err(&::std::format!("{}\n", $crate::display::terminal(&::std::format!($($arg)*))))
    };
}
mod budget;
mod checkpoints;
mod client;
mod completions;
mod config;
mod daemon;
mod display;
#[cfg(test)]
mod docs;
mod doctor;
mod hook;
mod install;
mod logs;
mod memory;
mod paths;
mod record;
mod reflect;
mod resume;
mod save;
mod service;
mod status;
mod statusline;
mod sync;
mod task;
mod templates;
mod trust;
mod watch;

use clap::{CommandFactory, Parser, Subcommand};
use protocol::config::{ClientConfig, Config, Layers};
use protocol::paths::SocketPath;
use protocol::wire::{Harness, Record};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// How long interactive commands wait for hookd (including autostart).
pub(crate) const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);
/// How long commands that run the state pipeline wait.
pub const SLOW_COMMAND_TIMEOUT: Duration = Duration::from_secs(120);

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
    /// Explain failures on stderr (hooks are otherwise silent when hookd is
    /// unreachable); with `status` and `watch`, also the figures behind each
    /// context (compaction point, epochs, retrieval strategy).
    #[arg(short, long, global = true)]
    verbose: bool,
    /// The project a command is about (default: the repository holding
    /// $CLAUDE_PROJECT_DIR or the current directory, else that directory).
    #[arg(long, global = true, value_name = "DIR")]
    project: Option<PathBuf>,
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
        #[arg(long, default_value_t = hook::DEFAULT_HARNESS, value_parser = parse_harness)]
        harness: Harness,
        /// Time budget in milliseconds (default: client.hook_timeout_ms and friends).
        #[arg(long, value_name = "MS")]
        timeout_ms: Option<u64>,
    },
    /// Show the daemon and the sessions it follows (-v: the figures behind them).
    ///
    /// The daemon (version, uptime, socket) and each session: harness, project,
    /// model, how far the context is on its way to compaction and the share of
    /// the window (Claude Code's own figure), a bar of the window with
    /// compaction marked, a sparkline of the recent replies with compactions
    /// (↓), saves (s) and checkpoints (✓) marked, compactions and thresholds
    /// passed, the last save and checkpoint, whether the agent followed each
    /// resume prompt, the transcript. -v adds the figures behind them: where
    /// the compaction point comes from, the levels passed since the last
    /// compaction, the room left for what hookd adds.
    Status {
        /// Only this session (id or unique prefix).
        #[arg(long)]
        session: Option<String>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Live view of the sessions, redrawn as they change (q or Ctrl-C leaves).
    Watch {
        /// Only this session (id or unique prefix).
        #[arg(long)]
        session: Option<String>,
    },
    /// Claude Code statusLine command: statusLine JSON on stdin, one line out.
    ///
    /// Prints `ctx 96% to compaction · 80% of window`: how far the context is on
    /// its way to compaction, coloured by the levels passed (not with NO_COLOR),
    /// then the share of the window exactly as Claude Code counts it (its
    /// used_percentage). Works from its input alone when hookd is away.
    Statusline,
    /// Record a decision for the next state capture.
    ///
    /// An agent can run this from Bash.
    Decision {
        /// What the decision is about (`Auth`, `Storage`).
        topic: String,
        /// What was decided.
        decision: String,
        /// Why it was decided.
        #[arg(long)]
        why: Option<String>,
    },
    /// Record a blocker, or a new status of one.
    Blocker {
        /// What blocks the work.
        issue: String,
        /// unresolved (default), workaround or resolved.
        #[arg(long)]
        status: Option<String>,
        /// More about it: what was tried, who can help.
        #[arg(long)]
        notes: Option<String>,
    },
    /// Record the workflow phase (DESIGNING, IMPLEMENTING, ...).
    Phase {
        /// The phase's name.
        name: String,
    },
    /// Record a next action; `--done ACTION` or `--clear` take them off.
    Next {
        /// What to do next (`write the login tests`).
        #[arg(required_unless_present_any = ["done", "clear"])]
        action: Option<String>,
        /// What it acts on.
        #[arg(long)]
        target: Option<String>,
        /// 1 is most urgent.
        #[arg(long)]
        priority: Option<u32>,
        /// A file to read before doing it; repeatable.
        #[arg(long = "needs", value_name = "FILE")]
        needs: Vec<String>,
        /// Mark this recorded action done.
        #[arg(long, value_name = "ACTION", conflicts_with_all = ["action", "clear"])]
        done: Option<String>,
        /// Forget every recorded next action.
        #[arg(long)]
        clear: bool,
    },
    /// Record a progress note.
    Note {
        /// The note.
        text: String,
    },
    /// Capture the workflow state and checkpoint the working tree now.
    ///
    /// Exits 1, saying why, when the checkpoint it asked for could not be made.
    /// Outside a git repository it saves nothing at all (--no-checkpoint saves
    /// the state alone).
    Save {
        /// The session to capture (default: the project's most recent).
        #[arg(long)]
        session: Option<String>,
        /// Capture the state only.
        #[arg(long)]
        no_checkpoint: bool,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Check the saved state against the repository and render the resume prompt.
    ///
    /// --print prints it: what /hookd-resume runs.
    Resume {
        /// Whose saved state (default: the project's latest).
        #[arg(long)]
        session: Option<String>,
        /// Print the resume prompt itself.
        #[arg(long)]
        print: bool,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Check the saved state against the repository: HEAD, changed files, workflow, active task.
    ///
    /// Only the checks of `resume`; exits 1 when one fails.
    Validate {
        /// Whose saved state (default: the project's latest).
        #[arg(long)]
        session: Option<String>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// The git checkpoints hookd made, newest first.
    Checkpoints {
        /// At most this many, newest first.
        #[arg(long)]
        limit: Option<usize>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Show or restore one checkpoint.
    Checkpoint {
        #[command(subcommand)]
        action: checkpoints::Action,
    },
    /// Score the project's files for a task and fit them to the context budget.
    ///
    /// Prints the allocation by tier and saves a record in
    /// .workflow/budget-records/.
    ContextBudget {
        /// The task (default: the saved state's active task, objective and next actions).
        task: Option<String>,
        /// The whole budget in tokens (default: budget.max_tokens).
        #[arg(long, value_name = "N")]
        max_tokens: Option<u64>,
        /// Whose transcript counts mentions (default: the project's latest session).
        #[arg(long)]
        session: Option<String>,
        /// Every file with its level, tokens and relevance factors.
        #[arg(long)]
        show_allocation: bool,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// One file's relevance to a task, factor by factor.
    ///
    /// Each factor, its weight and the evidence: keywords matched, days since
    /// the file changed, mentions, import distance.
    ContextScore {
        /// The file, relative to the project or absolute.
        file: PathBuf,
        /// The task (default: the saved state's).
        #[arg(long)]
        task: Option<String>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// A file at a summary level: full, detailed (structure), summary or stub.
    Summarize {
        /// The file, relative to the project or absolute.
        file: PathBuf,
        /// How much of it: full, detailed (its structure), summary or stub.
        #[arg(long, default_value = "summary", value_parser = ["full", "detailed", "summary", "stub"])]
        level: String,
        /// Read from and keep in .workflow/summaries/.
        #[arg(long)]
        cache: bool,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Context usage, the latest budget record, and the compactions and resumes so far.
    ///
    /// The session's context now; the latest budget record (what was included
    /// at which level, utilization, efficiency); the totals of the compactions
    /// and resume prompts in events.jsonl, with each resume prompt and whether
    /// the agent followed it.
    ContextReport {
        /// Whose context (default: the project's latest session).
        #[arg(long)]
        session: Option<String>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
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
    /// Trust a project's own templates and threshold messages (its .hookd.yaml
    /// and .workflow/templates/ as they are now); a file that changes needs trusting again.
    Trust {
        /// The project (default: $CLAUDE_PROJECT_DIR, else the current directory).
        dir: Option<PathBuf>,
    },
    /// Stop trusting a project's templates and threshold messages.
    Untrust {
        /// The project (default: $CLAUDE_PROJECT_DIR, else the current directory).
        dir: Option<PathBuf>,
    },
    /// Wire hookd into a harness: its hook settings (Claude Code, Codex, Gemini CLI, Qwen Code, Copilot CLI, Cursor), or its plugin (OpenCode).
    Install(install::InstallArgs),
    /// Take hookd's entries (OpenCode: its plugin) out of a harness.
    Uninstall(install::UninstallArgs),
    /// Check that hookd can work here, with a fix for each problem.
    ///
    /// Changes nothing; exits 0 only when no check fails.
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
    ///
    /// The names: socket, config-dir, config-file, templates-dir, state-dir,
    /// log-dir, data-dir.
    Paths {
        /// Print only this path.
        name: Option<String>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// A shell completion script on stdout.
    ///
    /// For example: hookctl completions bash >
    /// ~/.local/share/bash-completion/completions/hookctl
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Record a reflection on the current task for the cross-task memory (an agent can run this from Bash).
    Reflect {
        /// The reflection: what went wrong or right, and what to do differently.
        text: String,
        /// error_analysis, strategy_change, success_pattern or constraint_discovery (default: classified from the text).
        #[arg(long = "type", value_name = "TYPE", value_parser = parse_reflection_type)]
        kind: Option<protocol::memory::ReflectionType>,
        /// The agent session (default: $CLAUDE_CODE_SESSION_ID, else the project's live session); one hookd does not follow is refused.
        #[arg(long)]
        session: Option<String>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// The current task of the cross-task memory: describe, close or show it.
    Task {
        #[command(subcommand)]
        action: task::Action,
    },
    /// The cross-task memory: stored tasks, search, statistics.
    Memory {
        #[command(subcommand)]
        action: memory::Action,
    },
    /// Sync through git: push and pull checkpoints, saved state and memory; where they go.
    Sync {
        #[command(subcommand)]
        action: sync::Action,
    },
    /// The templates hookd renders, and your own versions of them (list, edit NAME, tidy).
    Templates {
        #[command(subcommand)]
        action: Option<templates::Action>,
    },
}

fn parse_reflection_type(name: &str) -> Result<protocol::memory::ReflectionType, String> {
    protocol::memory::ReflectionType::parse(name).ok_or_else(|| {
        let known: Vec<&str> = protocol::memory::ReflectionType::ALL
            .iter()
            .map(|t| t.as_str())
            .collect();
        format!(
            "unknown reflection type `{name}` (known: {})",
            known.join(", ")
        )
    })
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
    /// `--project`, if given.
    project_flag: Option<PathBuf>,
    /// The project, found on first use: hooks and the statusline never
    /// need it, and finding it walks the directories up.
    project_root: std::cell::OnceCell<Option<PathBuf>>,
}

impl Context {
    pub fn new(socket: SocketPath, verbose: bool, project_flag: Option<PathBuf>) -> Context {
        Context {
            socket,
            verbose,
            project_flag,
            project_root: std::cell::OnceCell::new(),
        }
    }

    /// The project a command is about (see [`project_root`]).
    pub fn project_root(&self) -> Option<PathBuf> {
        self.project_root
            .get_or_init(|| project_root(self.project_flag.clone()))
            .clone()
    }

    /// The configuration; a broken config file must not break a hook, so
    /// errors fall back to the defaults (and are shown with -v).
    pub fn config(&self) -> Config {
        Self::load(Layers::from_process(self.project_root()), self)
    }

    /// The user's own layers alone: what a project file may not set (the
    /// client's settings, the windows), without reading the project's files
    /// or the trust store. Hooks and the statusline run on this.
    pub fn user_config(&self) -> Config {
        Self::load(Layers::from_process(None), self)
    }

    pub fn client_config(&self) -> ClientConfig {
        self.user_config().client
    }

    fn load(layers: Layers, ctx: &Context) -> Config {
        if nothing_configured(&layers) {
            // What `load` would return, without its YAML round trip (it
            // tracks where every value came from, which a hook never shows).
            return Config::default();
        }
        match protocol::config::load(&layers) {
            Ok(effective) => effective.config,
            Err(e) => {
                ctx.note(&format!("{e}; using the default settings"));
                Config::default()
            }
        }
    }

    /// One line on stderr, only with -v.
    pub fn note(&self, message: &str) {
        if self.verbose {
            eprintln!("hookctl: {message}");
        }
    }

    /// Connects for an interactive command.
    pub fn connect(&self, autostart: bool) -> Result<client::Client, client::ClientError> {
        self.connect_for(autostart, COMMAND_TIMEOUT)
    }

    pub fn connect_for(
        &self,
        autostart: bool,
        wait: Duration,
    ) -> Result<client::Client, client::ClientError> {
        client::Client::connect_or_start(&self.socket, Instant::now() + wait, autostart)
    }

    /// The project, as an absolute path.
    pub fn project(&self) -> anyhow::Result<PathBuf> {
        let root = self
            .project_root()
            .ok_or_else(|| anyhow::anyhow!("no current directory; pass --project"))?;
        std::path::absolute(&root)
            .map_err(|e| anyhow::anyhow!("cannot resolve {}: {e}", root.display()))
    }
}

/// No configuration file exists and no variable or flag overrides anything.
/// A file we cannot even inspect counts as configured, so that loading it
/// reports the problem.
fn nothing_configured(layers: &Layers) -> bool {
    let absent = |path: Option<PathBuf>| {
        path.is_none_or(|p| {
            std::fs::metadata(p).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        })
    };
    layers.env.is_empty()
        && layers.flags.is_empty()
        && absent(layers.user_file.clone())
        && absent(layers.project_file())
}

/// The project a command is about: `--project`, else the repository that
/// holds the harness's project variable or the working directory (its work
/// tree root), else that directory.
fn project_root(flag: Option<PathBuf>) -> Option<PathBuf> {
    if flag.is_some() {
        return flag;
    }
    // A command typed in a subdirectory means the repository, as a hook
    // sent from there does.
    let named = std::env::var_os("CLAUDE_PROJECT_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())?;
    let named = std::path::absolute(&named).unwrap_or(named);
    Some(protocol::project::project_root(&named))
}

/// The command lines harnesses run after every tool call (`hookctl hook
/// EVENT`, `hookctl statusline`), recognised without building clap's
/// command tree, which is a measurable share of hookctl's start-up. Any
/// other form, a flag included, goes through clap.
fn parse_hot_path(args: &[std::ffi::OsString]) -> Option<Cli> {
    let word = |i: usize| args.get(i).and_then(|a| a.to_str());
    let command = match (args.len(), word(1)?) {
        (2, "statusline") => Command::Statusline,
        (2, "hook") => Command::Hook {
            event: None,
            harness: hook::DEFAULT_HARNESS,
            timeout_ms: None,
        },
        // `hook EVENT`, and `hook --harness NAME EVENT` as `hookctl install` wires other harnesses.
        (3, "hook") | (5, "hook") => {
            let harness = match args.len() {
                3 => hook::DEFAULT_HARNESS,
                _ if word(2)? == "--harness" => Harness::parse(word(3)?)?,
                _ => return None,
            };
            let event = word(args.len() - 1).filter(|e| !e.is_empty() && !e.starts_with('-'))?;
            Command::Hook {
                event: Some(event.to_owned()),
                harness,
                timeout_ms: None,
            }
        }
        _ => return None,
    };
    Some(Cli {
        socket: None,
        verbose: false,
        project: None,
        command,
    })
}

fn main() -> ExitCode {
    let started = Instant::now();
    let cli = match parse_command_line() {
        Ok(cli) => cli,
        Err(code) => return code,
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
    let ctx = Context::new(socket, cli.verbose, cli.project);
    match cli.command {
        // A hook answers on its own terms: its exit status is hook::run's.
        Command::Hook {
            event,
            harness,
            timeout_ms,
        } => hook::run(
            &ctx,
            hook::HookArgs {
                event,
                harness,
                timeout_ms,
                started,
            },
        ),
        command => exit_code(run_command(&ctx, command)),
    }
}

/// The command line, through the hot path when it is a hook's. A usage
/// error is printed and ends hookctl with 1, never clap's 2.
fn parse_command_line() -> Result<Cli, ExitCode> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(cli) = parse_hot_path(&args) {
        return Ok(cli);
    }
    Cli::try_parse_from(&args).map_err(|e| {
        // clap exits 2 on usage errors, which a harness reads as "block": never.
        let _ = e.print();
        if e.use_stderr() {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        }
    })
}

/// Runs every command but `hook`, which `main` answers before this.
fn run_command(ctx: &Context, command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Hook { .. } => unreachable!("main answers hooks itself"),
        Command::Status { session, json } => status::run(ctx, session, json),
        Command::Watch { session } => watch::run(ctx, session),
        Command::Decision {
            topic,
            decision,
            why,
        } => record::run(
            ctx,
            Record::Decision {
                topic,
                decision,
                reasoning: why,
            },
        ),
        Command::Blocker {
            issue,
            status,
            notes,
        } => record::run(
            ctx,
            Record::Blocker {
                issue,
                status,
                notes,
            },
        ),
        Command::Phase { name } => record::run(ctx, Record::Phase { name }),
        Command::Next {
            action,
            target,
            priority,
            needs,
            done,
            clear,
        } => {
            let record = match (action, done, clear) {
                (_, _, true) => Record::NextClear,
                (_, Some(action), _) => Record::NextDone { action },
                (Some(action), None, false) => Record::Next {
                    action,
                    target,
                    priority,
                    needs,
                },
                (None, None, false) => unreachable!("clap requires an action, --done or --clear"),
            };
            record::run(ctx, record)
        }
        Command::Note { text } => record::run(ctx, Record::Note { text }),
        Command::Save {
            session,
            no_checkpoint,
            json,
        } => save::run(ctx, session, !no_checkpoint, json),
        Command::Checkpoints { limit, json } => checkpoints::list(ctx, limit, json),
        Command::Resume {
            session,
            print,
            json,
        } => resume::run(ctx, session, true, print, json),
        Command::Validate { session, json } => resume::run(ctx, session, false, false, json),
        Command::Checkpoint { action } => checkpoints::run(ctx, action),
        Command::Statusline => statusline::run(ctx),
        Command::ContextBudget {
            task,
            max_tokens,
            session,
            show_allocation,
            json,
        } => budget::budget(ctx, task, max_tokens, session, show_allocation, json),
        Command::ContextScore { file, task, json } => budget::score(ctx, &file, task, json),
        Command::Summarize {
            file,
            level,
            cache,
            json,
        } => budget::summarize(ctx, &file, level, cache, json),
        Command::ContextReport { session, json } => budget::report(ctx, session, json),
        Command::Daemon { action } => daemon::run(ctx, action),
        Command::Config { project, json } => config::run(ctx, project, json),
        Command::Trust { dir } => trust::trust(ctx, dir),
        Command::Untrust { dir } => trust::untrust(ctx, dir),
        Command::Install(args) => install::install(args),
        Command::Uninstall(args) => install::uninstall(args),
        Command::Doctor { json } => doctor::run(ctx, json),
        Command::Logs { follow, lines } => logs::run(ctx, follow, lines),
        Command::Paths { name, json } => paths::run(ctx, name, json),
        Command::Completions { shell } => completions::run(shell, Cli::command()),
        Command::Reflect {
            text,
            kind,
            session,
            json,
        } => reflect::run(ctx, text, kind, session, json),
        Command::Task { action } => task::run(ctx, action),
        Command::Memory { action } => memory::run(ctx, action),
        Command::Sync { action } => sync::run(ctx, action),
        Command::Templates { action } => templates::run(action),
    }
}

/// The exit status for a command's result, after its output was written.
fn exit_code(result: anyhow::Result<ExitCode>) -> ExitCode {
    if let Some(why) = display::output_lost() {
        eprintln!("hookctl: could not write all of the output: {why}");
        return ExitCode::FAILURE;
    }
    match result {
        Ok(code) => code,
        // The reader went away (`hookctl … | head`): what it wanted it has.
        Err(e) if display::is_closed_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hookctl: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &[&str]) -> Vec<std::ffi::OsString> {
        line.iter().map(Into::into).collect()
    }

    /// The hot path must read a command line exactly as clap does.
    #[test]
    fn the_hot_path_agrees_with_clap() {
        let same = |line: &[&str]| {
            let fast = parse_hot_path(&args(line)).expect("on the hot path");
            let slow = Cli::try_parse_from(args(line)).unwrap();
            assert_eq!(
                (fast.socket, fast.verbose, fast.project),
                (slow.socket, slow.verbose, slow.project)
            );
            match (fast.command, slow.command) {
                (
                    Command::Hook {
                        event: a,
                        harness: h,
                        timeout_ms: t,
                    },
                    Command::Hook {
                        event: b,
                        harness: i,
                        timeout_ms: u,
                    },
                ) => assert_eq!((a, h, t), (b, i, u), "{line:?}"),
                (Command::Statusline, Command::Statusline) => {}
                _ => panic!("{line:?} parsed differently"),
            }
        };
        same(&["hookctl", "hook", "post-tool-use"]);
        same(&["hookctl", "hook", "PreCompact"]);
        same(&["hookctl", "hook"]);
        same(&["hookctl", "statusline"]);
        same(&["hookctl", "hook", "--harness", "codex", "post-tool-use"]);
        same(&["hookctl", "hook", "--harness", "gemini-cli", "AfterTool"]);
        for other in [
            &["hookctl", "hook", "--harness", "nonesuch", "post-tool-use"][..],
            &["hookctl", "hook", "--timeout-ms", "5", "post-tool-use"],
            &["hookctl", "hook", "--harness", "codex", "-v"],
            &["hookctl", "hook", "-v"][..],
            &["hookctl", "hook", "--help"],
            &["hookctl", "hook", "post-tool-use", "--timeout-ms", "5"],
            &["hookctl", "-v", "hook", "post-tool-use"],
            &["hookctl", "hook", ""],
            &["hookctl", "status"],
            &["hookctl"],
        ] {
            assert!(parse_hot_path(&args(other)).is_none(), "{other:?}");
        }
    }

    /// `--help` describes every flag, argument and subcommand.
    #[test]
    fn every_flag_and_argument_is_described() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if arg.is_hide_set() || matches!(id, "help" | "version") {
                    continue;
                }
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                let path = format!("{path} {}", sub.get_name());
                if sub.get_about().is_none() && sub.get_long_about().is_none() {
                    missing.push(path.clone());
                }
                walk(sub, &path, missing);
            }
        }
        let mut cmd = Cli::command();
        cmd.build();
        let mut missing = Vec::new();
        walk(&cmd, "hookctl", &mut missing);
        assert!(missing.is_empty(), "undescribed in --help: {missing:#?}");
    }

    /// The help of the commands whose words changed most.
    #[test]
    fn help_texts() {
        let mut cmd = Cli::command().term_width(100);
        cmd.build();
        let mut help = |path: &[&str]| {
            let mut c = &mut cmd;
            for name in path {
                c = c.find_subcommand_mut(name).unwrap();
            }
            c.render_help().to_string()
        };
        insta::assert_snapshot!("help_save", help(&["save"]));
        insta::assert_snapshot!("help_checkpoint_restore", help(&["checkpoint", "restore"]));
        insta::assert_snapshot!("help_status", help(&["status"]));
        insta::assert_snapshot!("help_install", help(&["install"]));
    }

    #[test]
    fn without_any_layer_the_defaults_are_what_load_gives() {
        let dir = tempfile::tempdir().unwrap();
        let layers = Layers {
            user_file: Some(dir.path().join("config.yaml")),
            project_root: Some(dir.path().to_path_buf()),
            ..Layers::default()
        };
        assert!(nothing_configured(&layers));
        let loaded = protocol::config::load(&layers).unwrap().config;
        assert_eq!(loaded, Config::default());
        std::fs::write(dir.path().join(protocol::config::PROJECT_FILE), "").unwrap();
        assert!(!nothing_configured(&layers));
        let with_env = Layers {
            env: vec![("HOOKD_CLIENT__AUTOSTART".into(), "false".into())],
            ..Layers::default()
        };
        assert!(!nothing_configured(&with_env));
    }
}

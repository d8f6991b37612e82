//! End-to-end support for the harnesses other than Claude Code: the real
//! Codex CLI (`$HOOKD_E2E_CODEX`, 0.169.0), Gemini CLI (`$HOOKD_E2E_GEMINI`,
//! 0.61.0), Qwen Code (`$HOOKD_E2E_QWEN`, 0.24.4), GitHub Copilot CLI
//! (`$HOOKD_E2E_COPILOT`, 1.0.102) and OpenCode (`$HOOKD_E2E_OPENCODE`,
//! 1.18.33) run headless against `hookd-mock-model`
//! ([`mock_model`](crate::mock_model)), with hookd wired by `hookctl install
//! codex|gemini-cli|qwen-code|copilot-cli|opencode` into a temporary HOME,
//! and a real git project.
//!
//! - **Which client**: unset, a scenario skips with a message, unless
//!   `HOOKD_E2E=require` (CI), which makes a missing or wrong client a failure,
//!   as for Claude Code ([`e2e`](crate::e2e)).
//! - **Isolation**: the mock runs under `unshare -rn`; every client run and
//!   every hookctl command joins that namespace with `nsenter`, so hookd
//!   (autostarted by the first hook) lives there too and nothing can reach
//!   past 127.0.0.1.
//! - **Evidence**: the mock's request log ([`ModelLog`]), each run's exit
//!   status, stdout, stderr and duration ([`AgentRun`]), the client's own
//!   session file (Codex's rollout, Gemini's chat file, Qwen Code's
//!   transcript, Copilot CLI's `events.jsonl`, OpenCode's database), `hookctl status
//!   --json`, `.workflow/events.jsonl` and git.
//!
//! Codex skips hooks it has not been told to trust, silently, so every run
//! passes `--dangerously-bypass-hook-trust` (what a person does once in the
//! TUI's hook review). Gemini runs with `GEMINI_CLI_TRUST_WORKSPACE=true`
//! (headless refuses an untrusted folder; not when its arguments hold
//! `--skip-trust`, which runs it there untrusted) and `-m gemini-2.5-flash` (without
//! it, 0.61.0 picks a preview model and adds routing calls). Qwen Code runs
//! `qwen --yolo -p …` with the `openai` auth type (`~/.qwen/settings.json`)
//! and the mock as its OpenAI base URL, with `--resume <session>` after the
//! first run. Copilot CLI runs `copilot -p … --allow-all-tools
//! --no-auto-update` with `COPILOT_OFFLINE=true` and the mock as its
//! provider (`COPILOT_PROVIDER_*`, no GitHub login), with `--continue` after
//! the first run; its hooks are user-level (`~/.copilot/hooks/`), which it
//! runs in any folder, trusted or not. OpenCode runs `opencode run …`
//! (`-s <session>` after the first run) with the mock as an `@ai-sdk/openai-compatible` provider in
//! `~/.config/opencode/opencode.json`, nothing fetched, updated or loaded
//! besides.

use crate::e2e::{MockServer, git_in, run_bounded};
use crate::mock_model::{Api, ModelLog, Reply};
use crate::{Sandbox, bin, stderr, stdout, wait_until};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub use crate::e2e::REQUIRE_ENV;

/// The first line of hookd's resume prompt (`templates/resume_prompt.md.hbs`):
/// counting it in a request counts the resume prompts the model got.
pub const RESUME_MARKER: &str = "Context Recovery - Resuming Previous Session";
/// The Gemini model every run asks for, and its window.
pub const GEMINI_MODEL: &str = "gemini-2.5-flash";
pub const GEMINI_WINDOW: u64 = 1_048_576;
/// Where Gemini CLI compresses: `model.compressionThreshold` (0.5 by
/// default) of the window.
pub const GEMINI_COMPRESSES_AT: u64 = GEMINI_WINDOW / 2;
/// The model name Codex and Qwen Code are configured with (the mock answers any).
pub const MOCK_MODEL: &str = "mock-model";
/// Qwen Code's window for a model it does not know (`mock-model`).
pub const QWEN_WINDOW: u64 = 200_000;
/// Where Qwen Code compacts by default: min(0.85 × window, window − the
/// 20,000 tokens it keeps for the summary − 13,000).
pub const QWEN_COMPACTS_AT: u64 = 167_000;
/// Copilot CLI's prompt limit (`COPILOT_PROVIDER_MAX_PROMPT_TOKENS`) unless
/// a scenario sets its own: the default for a model it does not know.
pub const COPILOT_WINDOW: u64 = 128_000;
/// Where Copilot CLI compacts in the background: 0.80 of its prompt limit.
pub fn copilot_compacts_at(window: u64) -> u64 {
    window * 80 / 100
}
/// OpenCode's model limits unless a scenario sets them
/// ([`AgentBuilder::opencode_limits`]): `limit.context` and `limit.output`.
pub const OPENCODE_CONTEXT: u64 = 200_000;
pub const OPENCODE_OUTPUT: u64 = 10_000;
/// Where OpenCode compacts with those limits (no `limit.input`): its
/// usable room, `limit.context − limit.output`.
pub const OPENCODE_COMPACTS_AT: u64 = OPENCODE_CONTEXT - OPENCODE_OUTPUT;
/// A client run that takes longer than this is killed and fails the test
/// (a run takes one to five seconds; OpenCode's ten to forty on a loaded
/// machine, most of it starting up).
const RUN_LIMIT: Duration = Duration::from_secs(120);
/// How long hookd may take to act on what a run left (status, events, git).
pub const SETTLE: Duration = Duration::from_secs(10);

/// One of the clients driven against `hookd-mock-model`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    Codex,
    Gemini,
    Qwen,
    Copilot,
    OpenCode,
}

impl Client {
    pub fn env_var(self) -> &'static str {
        match self {
            Client::Codex => "HOOKD_E2E_CODEX",
            Client::Gemini => "HOOKD_E2E_GEMINI",
            Client::Qwen => "HOOKD_E2E_QWEN",
            Client::Copilot => "HOOKD_E2E_COPILOT",
            Client::OpenCode => "HOOKD_E2E_OPENCODE",
        }
    }

    pub fn pinned_version(self) -> &'static str {
        match self {
            Client::Codex => "0.169.0",
            Client::Gemini => "0.61.0",
            Client::Qwen => "0.24.4",
            Client::Copilot => "1.0.102",
            Client::OpenCode => "1.18.33",
        }
    }

    /// hookd's name for the harness (`hookctl install <name>`, status's `harness`).
    pub fn harness(self) -> &'static str {
        match self {
            Client::Codex => "codex",
            Client::Gemini => "gemini-cli",
            Client::Qwen => "qwen-code",
            Client::Copilot => "copilot-cli",
            Client::OpenCode => "opencode",
        }
    }

    fn api(self) -> Api {
        match self {
            Client::Codex => Api::Codex,
            Client::Gemini => Api::Gemini,
            Client::Qwen | Client::Copilot | Client::OpenCode => Api::Chat,
        }
    }

    fn title(self) -> &'static str {
        match self {
            Client::Codex => "Codex CLI",
            Client::Gemini => "Gemini CLI",
            Client::Qwen => "Qwen Code",
            Client::Copilot => "Copilot CLI",
            Client::OpenCode => "OpenCode",
        }
    }

    /// The client binary, or `None` (with a message) when its scenarios skip.
    fn binary(self) -> Option<PathBuf> {
        static CODEX: OnceLock<Option<PathBuf>> = OnceLock::new();
        static GEMINI: OnceLock<Option<PathBuf>> = OnceLock::new();
        static QWEN: OnceLock<Option<PathBuf>> = OnceLock::new();
        static COPILOT: OnceLock<Option<PathBuf>> = OnceLock::new();
        static OPENCODE: OnceLock<Option<PathBuf>> = OnceLock::new();
        let cell = match self {
            Client::Codex => &CODEX,
            Client::Gemini => &GEMINI,
            Client::Qwen => &QWEN,
            Client::Copilot => &COPILOT,
            Client::OpenCode => &OPENCODE,
        };
        cell.get_or_init(|| self.find_binary()).clone()
    }

    fn find_binary(self) -> Option<PathBuf> {
        let (var, version, title) = (self.env_var(), self.pinned_version(), self.title());
        let required = std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "require");
        let Some(path) = std::env::var_os(var).filter(|p| !p.is_empty()) else {
            assert!(
                !required,
                "{REQUIRE_ENV}=require but {var} is not set: install {title} {version} \
                 (tests/tools/install-clients does) and point {var} at it"
            );
            eprintln!(
                "\n*** SKIPPED: end-to-end test without {title}. Set {var} to a {title} \
                 {version} binary to run it (tests/tools/install-clients prints it). ***\n"
            );
            return None;
        };
        let path = PathBuf::from(path);
        let out = Command::new(&path)
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {var}={}: {e}", path.display()));
        // `codex-cli 0.169.0`, `0.61.0`, `0.24.4`, `GitHub Copilot CLI 1.0.102.`, `1.18.33`.
        let said = stdout(&out);
        assert!(
            said.split_whitespace()
                .any(|w| w.trim_end_matches('.') == version),
            "{var}={} is `{}`; the scenarios encode {title} {version}",
            path.display(),
            said.trim()
        );
        Some(path)
    }
}

/// How hookd is wired for a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wiring {
    /// Installed, with a daemon the first hook starts on the sandbox's socket.
    Hookd,
    /// Installed, but the socket leads nowhere and autostart is off.
    DaemonAbsent,
    /// Installed, with a real daemon on the socket that is frozen (SIGSTOP)
    /// before the first run: connections are accepted, nothing answers.
    DaemonHung,
    /// Not installed at all: the client as it is without hookd.
    NoHooks,
}

/// Sets up an [`Agent`].
pub struct AgentBuilder {
    client: Client,
    name: String,
    replies: Vec<Reply>,
    summary: (String, u64),
    latency: Duration,
    wiring: Wiring,
    codex_window: u64,
    codex_compact_limit: Option<u64>,
    gemini_model: String,
    copilot_window: u64,
    opencode_limits: (u64, u64),
    client_args: Vec<String>,
}

impl AgentBuilder {
    /// The model's replies to the main requests, in order.
    pub fn replies(mut self, replies: Vec<Reply>) -> Self {
        self.replies = replies;
        self
    }

    /// The answer to the compaction (Codex) or compression (Gemini) request,
    /// and the tokens it reports.
    pub fn summary(mut self, text: &str, tokens: u64) -> Self {
        self.summary = (text.into(), tokens);
        self
    }

    /// How long the mock model thinks before each answer (none unless set).
    pub fn latency(mut self, latency: Duration) -> Self {
        self.latency = latency;
        self
    }

    pub fn wiring(mut self, wiring: Wiring) -> Self {
        self.wiring = wiring;
        self
    }

    /// Codex's `model_context_window` and `model_auto_compact_token_limit`.
    pub fn codex_limits(mut self, window: u64, compact_limit: Option<u64>) -> Self {
        self.codex_window = window;
        self.codex_compact_limit = compact_limit;
        self
    }

    /// The model Gemini CLI is asked for (`-m`); [`GEMINI_MODEL`] unless set.
    pub fn gemini_model(mut self, model: &str) -> Self {
        self.gemini_model = model.into();
        self
    }

    /// Copilot CLI's prompt limit (`COPILOT_PROVIDER_MAX_PROMPT_TOKENS`);
    /// [`COPILOT_WINDOW`] unless set.
    pub fn copilot_window(mut self, window: u64) -> Self {
        self.copilot_window = window;
        self
    }

    /// OpenCode's `limit.context` and `limit.output` for the mock's model;
    /// [`OPENCODE_CONTEXT`] and [`OPENCODE_OUTPUT`] unless set.
    pub fn opencode_limits(mut self, context: u64, output: u64) -> Self {
        self.opencode_limits = (context, output);
        self
    }

    /// Arguments every run of the client gets before its prompt (for Codex,
    /// before `resume`), as a person would type them.
    pub fn client_args(mut self, args: &[&str]) -> Self {
        self.client_args = args.iter().map(|a| a.to_string()).collect();
        self
    }

    /// Starts the mock and prepares HOME and the project, or `None` when the
    /// scenario skips (no client).
    pub fn start(self) -> Option<Agent> {
        let binary = self.client.binary()?;
        let sb = Sandbox::new();
        for dir in [sb.home(), sb.path().join("tmp")] {
            std::fs::create_dir_all(dir).unwrap();
        }
        crate::e2e::write_gitconfig(&sb.home());
        let script = json!({
            "replies": self.replies.iter().map(Reply::to_json).collect::<Vec<_>>(),
            "summary": {"text": self.summary.0, "tokens": self.summary.1},
            "latency_ms": self.latency.as_millis(),
        });
        let api = match self.client.api() {
            Api::Codex => "codex",
            Api::Gemini => "gemini",
            Api::Chat => "chat",
        };
        let mock = MockServer::start(
            sb.path(),
            &bin("hookd-mock-model"),
            &["--api", api],
            &script,
        );
        let project = sb.path().join("proj");
        let agent = Agent {
            name: self.name,
            client: self.client,
            project,
            binary,
            mock,
            wiring: self.wiring,
            client_args: self.client_args,
            runs: Vec::new(),
            session_id: None,
            gemini_model: self.gemini_model,
            copilot_window: self.copilot_window,
            sb: Some(sb),
        };
        crate::e2e::make_project(&agent.project, &agent.sandbox().home());
        match self.client {
            Client::Codex => agent.configure_codex(self.codex_window, self.codex_compact_limit),
            Client::Gemini => agent.configure_gemini(),
            Client::Qwen => agent.configure_qwen(),
            // Everything it needs comes from the environment of each run.
            Client::Copilot => {}
            Client::OpenCode => agent.configure_opencode(self.opencode_limits),
        }
        if self.wiring != Wiring::NoHooks {
            agent.install_hooks();
        }
        if self.wiring == Wiring::DaemonHung {
            agent.freeze_daemon();
        }
        Some(agent)
    }
}

/// One client run.
#[derive(Debug, Clone)]
pub struct AgentRun {
    pub index: usize,
    pub prompt: String,
    /// The exit code (`None`: killed by a signal).
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl AgentRun {
    /// The final answer as the client printed it.
    pub fn answer(&self) -> &str {
        self.stdout.trim()
    }
}

/// One scenario: a temporary HOME (with the client's home in it) and git
/// project, its own hookd socket, state and config, and the mock model.
pub struct Agent {
    pub name: String,
    pub client: Client,
    pub project: PathBuf,
    binary: PathBuf,
    mock: MockServer,
    wiring: Wiring,
    client_args: Vec<String>,
    pub runs: Vec<AgentRun>,
    session_id: Option<String>,
    gemini_model: String,
    copilot_window: u64,
    /// `None` only while being dropped.
    sb: Option<Sandbox>,
}

impl Agent {
    pub fn builder(client: Client, name: &str) -> AgentBuilder {
        AgentBuilder {
            client,
            name: name.into(),
            replies: Vec::new(),
            summary: ("E2E_SUMMARY of the work so far".into(), 2_000),
            latency: Duration::ZERO,
            wiring: Wiring::Hookd,
            codex_window: 200_000,
            codex_compact_limit: None,
            gemini_model: GEMINI_MODEL.into(),
            copilot_window: COPILOT_WINDOW,
            opencode_limits: (OPENCODE_CONTEXT, OPENCODE_OUTPUT),
            client_args: Vec::new(),
        }
    }

    pub fn sandbox(&self) -> &Sandbox {
        self.sb.as_ref().expect("sandbox")
    }

    fn codex_home(&self) -> PathBuf {
        self.sandbox().home().join(".codex")
    }

    fn gemini_dir(&self) -> PathBuf {
        self.sandbox().home().join(".gemini")
    }

    fn qwen_dir(&self) -> PathBuf {
        self.sandbox().home().join(".qwen")
    }

    fn copilot_dir(&self) -> PathBuf {
        self.sandbox().home().join(".copilot")
    }

    /// Copilot CLI's prompt limit in this scenario.
    pub fn copilot_window(&self) -> u64 {
        self.copilot_window
    }

    /// OpenCode's configuration folder (`$XDG_CONFIG_HOME/opencode`, HOME's
    /// `.config` with no XDG variable set).
    fn opencode_config_dir(&self) -> PathBuf {
        self.sandbox().home().join(".config/opencode")
    }

    /// OpenCode's database of sessions, messages and parts.
    pub fn opencode_db(&self) -> PathBuf {
        self.sandbox()
            .home()
            .join(".local/share/opencode/opencode.db")
    }

    /// `PATH` for everything the scenario runs, without any directory
    /// holding a hookd or hookctl (hooks run hookctl by its full path).
    fn path_var(&self) -> std::ffi::OsString {
        let inherited = std::env::var_os("PATH").unwrap_or_default();
        let dirs = std::env::split_paths(&inherited)
            .filter(|d| !d.join("hookd").exists() && !d.join("hookctl").exists());
        std::env::join_paths(dirs).unwrap()
    }

    /// The environment of hookctl and of the client (whose hooks inherit it):
    /// the sandbox's HOME, socket, state and config, nothing from this process.
    fn hookd_env(&self, cmd: &mut Command) {
        let sb = self.sandbox();
        cmd.env_clear()
            .env("PATH", self.path_var())
            .env("HOME", sb.home())
            .env("TMPDIR", sb.path().join("tmp"))
            .env("HOOKD_STATE_DIR", sb.state_dir())
            .env("HOOKD_CONFIG_DIR", sb.config_dir())
            .env("HOOKD_DATA_DIR", sb.path().join("data"))
            .env("HOOKD_LOG", "debug")
            .env("CODEX_HOME", self.codex_home())
            .env("GEMINI_CLI_HOME", sb.home())
            // OpenCode: no model list, update or built-in plugin fetched.
            .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
            .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
            .env("OPENCODE_DISABLE_DEFAULT_PLUGINS", "1");
        match self.wiring {
            Wiring::DaemonAbsent => {
                cmd.env("HOOKD_SOCKET", sb.path().join("nowhere/hookd.sock"))
                    .env("HOOKD_CLIENT__AUTOSTART", "false");
            }
            Wiring::DaemonHung => {
                cmd.env("HOOKD_SOCKET", sb.socket())
                    .env("HOOKD_CLIENT__AUTOSTART", "false");
            }
            Wiring::Hookd | Wiring::NoHooks => {
                cmd.env("HOOKD_SOCKET", sb.socket());
            }
        }
    }

    /// The pid of the daemon on the sandbox's socket, from its pid file.
    fn daemon_pid(&self) -> Option<i32> {
        let file = self.sandbox().socket().with_file_name("hookd.sock.pid");
        std::fs::read_to_string(file).ok()?.trim().parse().ok()
    }

    /// Starts the daemon, then stops it with SIGSTOP: the kernel still
    /// accepts connections on its socket, and no answer ever comes.
    fn freeze_daemon(&self) {
        let out = self.hookctl(&["daemon", "start"]);
        assert!(
            out.status.success(),
            "hookctl daemon start: {}",
            stderr(&out)
        );
        let pid = self.daemon_pid().expect("the daemon wrote its pid file");
        // SAFETY: signalling the daemon this scenario started.
        assert_eq!(
            unsafe { libc::kill(pid, libc::SIGSTOP) },
            0,
            "SIGSTOP {pid}"
        );
    }

    /// `$CODEX_HOME/config.toml`: the mock as the provider, the project
    /// trusted, the window and compaction point, no analytics (whose upload
    /// attempt costs every run five seconds without a network).
    fn configure_codex(&self, window: u64, compact_limit: Option<u64>) {
        let home = self.codex_home();
        std::fs::create_dir_all(&home).unwrap();
        let limit = compact_limit
            .map(|l| format!("model_auto_compact_token_limit = {l}\n"))
            .unwrap_or_default();
        let config = format!(
            "model = \"{MOCK_MODEL}\"\nmodel_provider = \"mock\"\ncheck_for_update_on_startup = false\n\
             model_context_window = {window}\n{limit}\n\
             [analytics]\nenabled = false\n\n\
             [model_providers.mock]\nname = \"Mock\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\n\
             wire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n\n\
             [projects.\"{project}\"]\ntrust_level = \"trusted\"\n",
            port = self.mock.port,
            project = self.project.display(),
        );
        std::fs::write(home.join("config.toml"), config).unwrap();
    }

    /// `~/.gemini/settings.json`: API-key auth (the key and base URL come
    /// from the environment), no update checks, no usage statistics.
    fn configure_gemini(&self) {
        std::fs::create_dir_all(self.gemini_dir()).unwrap();
        let settings = json!({
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
            "privacy": {"usageStatisticsEnabled": false},
        });
        std::fs::write(
            self.gemini_dir().join("settings.json"),
            serde_json::to_string_pretty(&settings).unwrap(),
        )
        .unwrap();
    }

    /// `~/.qwen/settings.json`: the `openai` auth type (the key, base URL
    /// and model come from the environment), no update checks, no usage
    /// statistics, no managed auto-memory (after a prompt it may ask the
    /// model to extract memories, a request no script plans for), and no
    /// ripgrep (the npm package ships it without its execute bit, and every
    /// run would say so on stderr).
    fn configure_qwen(&self) {
        std::fs::create_dir_all(self.qwen_dir()).unwrap();
        let settings = json!({
            "security": {"auth": {"selectedType": "openai"}},
            "general": {"enableAutoUpdate": false},
            "privacy": {"usageStatisticsEnabled": false},
            "memory": {"enableManagedAutoMemory": false},
            "tools": {"useRipgrep": false},
        });
        std::fs::write(
            self.qwen_dir().join("settings.json"),
            serde_json::to_string_pretty(&settings).unwrap(),
        )
        .unwrap();
    }

    /// `~/.config/opencode/opencode.json`: the mock as the
    /// `@ai-sdk/openai-compatible` provider (bundled: nothing downloaded) of
    /// the one model, for the session and its title, with its limits;
    /// every tool allowed, nothing shared or updated.
    fn configure_opencode(&self, (context, output): (u64, u64)) {
        let dir = self.opencode_config_dir();
        std::fs::create_dir_all(&dir).unwrap();
        let model = format!("mock/{MOCK_MODEL}");
        let config = json!({
            "$schema": "https://opencode.ai/config.json",
            "model": model,
            "small_model": model,
            "autoupdate": false,
            "share": "disabled",
            "permission": {"*": "allow"},
            "provider": {"mock": {
                "npm": "@ai-sdk/openai-compatible",
                "options": {
                    "baseURL": format!("http://127.0.0.1:{}/v1", self.mock.port),
                    "apiKey": "e2e-not-a-key",
                },
                "models": {MOCK_MODEL: {
                    "tool_call": true,
                    "limit": {"context": context, "output": output},
                }},
            }},
        });
        std::fs::write(
            dir.join("opencode.json"),
            serde_json::to_string_pretty(&config).unwrap(),
        )
        .unwrap();
    }

    /// The file `hookctl install <harness>` writes the hooks to (OpenCode:
    /// the plugin in `~/.config/opencode/plugin(s)/` that runs hookctl).
    pub fn hook_settings_file(&self) -> PathBuf {
        match self.client {
            Client::Codex => self.codex_home().join("hooks.json"),
            Client::Gemini => self.gemini_dir().join("settings.json"),
            Client::Qwen => self.qwen_dir().join("settings.json"),
            Client::Copilot => self.copilot_dir().join("hooks/hookd.json"),
            Client::OpenCode => {
                let mut plugins = Vec::new();
                for folder in ["plugin", "plugins"] {
                    walk(&self.opencode_config_dir().join(folder), &mut |p| {
                        let text = std::fs::read_to_string(p).unwrap_or_default();
                        if text.contains("hookctl") {
                            plugins.push(p.to_path_buf());
                        }
                    });
                }
                assert_eq!(
                    plugins.len(),
                    1,
                    "one plugin that runs hookctl in {}: {plugins:?}",
                    self.opencode_config_dir().display()
                );
                plugins.remove(0)
            }
        }
    }

    /// `hookctl install <harness>` into the user settings under the sandbox's
    /// HOME, then a check that every event hookd handles is wired.
    fn install_hooks(&self) {
        let out = self.hookctl(&["install", self.client.harness()]);
        assert!(
            out.status.success(),
            "hookctl install {}: {}{}",
            self.client.harness(),
            stdout(&out),
            stderr(&out)
        );
        if self.client == Client::OpenCode {
            // A plugin, not hook entries: that it is there and runs hookctl.
            self.hook_settings_file();
            return;
        }
        let events: &[&str] = match self.client {
            Client::Codex => &[
                "SessionStart",
                "UserPromptSubmit",
                "PostToolUse",
                "PreCompact",
                "PostCompact",
                "Stop",
            ],
            Client::Gemini => &[
                "SessionStart",
                "BeforeAgent",
                "AfterTool",
                "PreCompress",
                "AfterAgent",
                "SessionEnd",
            ],
            Client::Qwen => &[
                "SessionStart",
                "UserPromptSubmit",
                "PostToolBatch",
                "PreCompact",
                "PostCompact",
                "Stop",
            ],
            Client::Copilot => &[
                "sessionStart",
                "userPromptSubmitted",
                "postToolUse",
                "preCompact",
                "agentStop",
                "sessionEnd",
            ],
            Client::OpenCode => unreachable!("checked above"),
        };
        let file = self.hook_settings_file();
        let settings: Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        for event in events {
            assert!(
                settings["hooks"][event]
                    .to_string()
                    .contains("hookctl hook"),
                "{event} is not wired to hookctl in {}: {settings}",
                file.display()
            );
        }
        let auth = match self.client {
            Client::Codex | Client::Copilot => None,
            Client::Gemini => Some("gemini-api-key"),
            Client::Qwen => Some("openai"),
            Client::OpenCode => None,
        };
        if let Some(auth) = auth {
            assert_eq!(
                settings["security"]["auth"]["selectedType"], auth,
                "install kept the rest of settings.json"
            );
        }
    }

    /// Runs git in the project, with the scenario's HOME and fixed dates;
    /// returns its stdout.
    pub fn git(&self, args: &[&str]) -> String {
        git_in(&self.project, &self.sandbox().home(), args)
    }

    /// The refs under `refs/hookd/`, with their commits.
    pub fn hookd_refs(&self) -> Vec<String> {
        self.git(&["for-each-ref", "--format=%(refname)", "refs/hookd/"])
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Runs `hookctl <args>` inside the scenario's namespace.
    pub fn hookctl(&self, args: &[&str]) -> Output {
        let mut cmd = self.mock.enter(&bin("hookctl"));
        self.hookd_env(&mut cmd);
        cmd.args(args)
            .current_dir(&self.project)
            .stdin(Stdio::null())
            .output()
            .expect("run hookctl")
    }

    /// `hookctl status --json`.
    pub fn status(&self) -> Value {
        let out = self.hookctl(&["status", "--json"]);
        assert!(out.status.success(), "hookctl status: {}", stderr(&out));
        serde_json::from_slice(&out.stdout).expect("status JSON")
    }

    /// The session from `hookctl status --json`, if hookd knows it.
    pub fn session(&self, id: &str) -> Option<Value> {
        self.status()["sessions"]
            .as_array()?
            .iter()
            .find(|s| s["session_id"] == id)
            .cloned()
    }

    /// Waits (bounded) until hookd's view of the session satisfies `check`;
    /// returns the last view either way, and whether it did.
    pub fn session_until(&self, id: &str, check: impl Fn(&Value) -> bool) -> (Value, bool) {
        let mut last = Value::Null;
        let ok = wait_until(SETTLE, || {
            last = self.session(id).unwrap_or(Value::Null);
            check(&last)
        });
        (last, ok)
    }

    /// The project's `.workflow/events.jsonl` entries of one kind.
    pub fn events(&self, kind: &str) -> Vec<Value> {
        crate::workflow_events(&self.project)
            .into_iter()
            .filter(|e| e["kind"] == kind)
            .collect()
    }

    /// Pipeline runs so far: each starts with its `capture` step. With
    /// `trigger_prefix`, only the runs whose trigger starts with it
    /// (`threshold`, `pre-compact`, `unannounced`).
    pub fn pipeline_runs(&self, trigger_prefix: Option<&str>) -> Vec<Value> {
        self.events("pipeline")
            .into_iter()
            .filter(|e| e["step"] == "capture")
            .filter(|e| {
                trigger_prefix.is_none_or(|p| e["trigger"].as_str().unwrap_or("").starts_with(p))
            })
            .collect()
    }

    /// Every request the mock has received so far.
    pub fn log(&self) -> ModelLog {
        ModelLog::read(&self.mock.log, self.client.api())
    }

    /// The session the runs continue (Codex's session id, Gemini's `sessionId`).
    pub fn session_id(&self) -> &str {
        self.session_id
            .as_deref()
            .expect("no session yet: run the client first")
    }

    /// One headless run in the project: a new session the first time, the
    /// same session resumed after that. It must exit 0 without having asked
    /// the model more than the script holds.
    pub fn run(&mut self, prompt: &str) -> AgentRun {
        let run = self.run_unchecked(prompt);
        assert_eq!(
            run.code,
            Some(0),
            "{}: run {} ({prompt:?}) failed\nstdout: {}\nstderr: {}\n{}",
            self.name,
            run.index,
            run.stdout,
            run.stderr,
            self.diagnostics()
        );
        assert!(
            !self.log().exhausted(),
            "{}: run {} asked the model more than the script holds: {:?}",
            self.name,
            run.index,
            self.log().labels()
        );
        if self.client == Client::OpenCode {
            // OpenCode installs its plugin package into a config folder with
            // plugins unless the folder shows it installed (`hookctl install`
            // sees to that); offline, the run waits a minute and more for it.
            let log = self.opencode_log();
            let tried = log.lines().find(|l| l.contains("dependency install"));
            assert!(
                tried.is_none(),
                "{}: run {} tried to install OpenCode's plugin package: {}",
                self.name,
                run.index,
                tried.unwrap_or_default()
            );
        }
        run
    }

    /// [`run`](Self::run) without the checks: for comparing runs.
    pub fn run_unchecked(&mut self, prompt: &str) -> AgentRun {
        let index = self.runs.len() + 1;
        let mut cmd = self.mock.enter(&self.binary);
        self.hookd_env(&mut cmd);
        let base_url = format!("http://127.0.0.1:{}", self.mock.port);
        match self.client {
            Client::Codex => {
                cmd.env("MOCK_API_KEY", "e2e-not-a-key")
                    .env("NO_COLOR", "1")
                    .args(["exec", "--dangerously-bypass-hook-trust"])
                    .args(&self.client_args);
                if let Some(id) = &self.session_id {
                    cmd.args(["resume", id]);
                }
                cmd.arg(prompt);
            }
            Client::Gemini => {
                // `--skip-trust` runs headless in a folder Gemini does not
                // trust: the variable would trust it.
                if !self.client_args.iter().any(|a| a == "--skip-trust") {
                    cmd.env("GEMINI_CLI_TRUST_WORKSPACE", "true");
                }
                cmd.env("GEMINI_API_KEY", "e2e-not-a-key")
                    .env("GOOGLE_GEMINI_BASE_URL", &base_url)
                    .env("NO_COLOR", "1")
                    .args(&self.client_args)
                    .args(["-m", &self.gemini_model, "--yolo", "-p", prompt]);
                if self.session_id.is_some() {
                    cmd.args(["--resume", "latest"]);
                }
            }
            Client::Qwen => {
                cmd.env("OPENAI_API_KEY", "e2e-not-a-key")
                    .env("OPENAI_BASE_URL", format!("{base_url}/v1"))
                    .env("OPENAI_MODEL", MOCK_MODEL)
                    .env("NO_COLOR", "1")
                    .args(&self.client_args)
                    .args(["--yolo", "-p", prompt]);
                if let Some(id) = &self.session_id {
                    cmd.args(["--resume", id]);
                }
            }
            Client::Copilot => {
                cmd.env("COPILOT_OFFLINE", "true")
                    .env("COPILOT_PROVIDER_BASE_URL", format!("{base_url}/v1"))
                    .env("COPILOT_PROVIDER_API_KEY", "e2e-not-a-key")
                    .env("COPILOT_MODEL", MOCK_MODEL)
                    .env(
                        "COPILOT_PROVIDER_MAX_PROMPT_TOKENS",
                        self.copilot_window.to_string(),
                    )
                    .env("NO_COLOR", "1")
                    .args(&self.client_args)
                    .args(["-p", prompt, "--allow-all-tools", "--no-auto-update"]);
                if self.session_id.is_some() {
                    cmd.arg("--continue");
                }
            }
            Client::OpenCode => {
                cmd.env("NO_COLOR", "1").arg("run").args(&self.client_args);
                if let Some(id) = &self.session_id {
                    cmd.args(["-s", id]);
                }
                cmd.arg(prompt);
            }
        }
        let dir = self.sandbox().path().to_path_buf();
        let out_file = dir.join(format!("run{index}.stdout.txt"));
        let err_file = dir.join(format!("run{index}.stderr.txt"));
        let started = Instant::now();
        let status = run_bounded(&mut cmd, &self.project, &out_file, &err_file, RUN_LIMIT)
            .unwrap_or_else(|| {
                panic!(
                    "{}: run {index} ({prompt:?}) took over {RUN_LIMIT:?} and was killed\n{}",
                    self.name,
                    self.diagnostics()
                )
            });
        let run = AgentRun {
            index,
            prompt: prompt.into(),
            code: status.code(),
            stdout: std::fs::read_to_string(&out_file).unwrap_or_default(),
            stderr: std::fs::read_to_string(&err_file).unwrap_or_default(),
            elapsed: started.elapsed(),
        };
        eprintln!(
            "{}: run {index} ({}) exited {:?} in {:.2} s",
            self.name,
            self.client.harness(),
            run.code,
            run.elapsed.as_secs_f64()
        );
        if self.session_id.is_none() {
            self.session_id = self.find_session_id(&run);
        }
        self.runs.push(run.clone());
        run
    }

    fn find_session_id(&self, run: &AgentRun) -> Option<String> {
        match self.client {
            // `session id: 01a2…` in the run's header on stderr.
            Client::Codex => run
                .stderr
                .lines()
                .find_map(|l| l.strip_prefix("session id: "))
                .map(|s| s.trim().to_owned()),
            Client::Gemini | Client::Qwen => session_id_in(&self.session_file()?),
            // `~/.copilot/session-state/<id>/events.jsonl`.
            Client::Copilot => Some(
                self.session_file()?
                    .parent()?
                    .file_name()?
                    .to_string_lossy()
                    .into_owned(),
            ),
            // The newest session the run made (not a task's sub-session).
            Client::OpenCode => self
                .opencode_query(
                    "SELECT id FROM session WHERE parent_id IS NULL \
                     ORDER BY time_created DESC LIMIT 1",
                )
                .first()
                .and_then(|row| row[0].as_str().map(str::to_owned)),
        }
    }

    /// The client's own session file: Codex's rollout
    /// (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-…-<id>.jsonl`), Gemini's chat
    /// file (`~/.gemini/tmp/<project>/chats/session-….jsonl`, the newest),
    /// Qwen Code's transcript (`~/.qwen/projects/<project>/chats/<id>.jsonl`,
    /// the newest until the session is known), Copilot CLI's event log
    /// (`~/.copilot/session-state/<id>/events.jsonl`, the same), OpenCode's
    /// database (`~/.local/share/opencode/opencode.db`, every session's).
    pub fn session_file(&self) -> Option<PathBuf> {
        if self.client == Client::OpenCode {
            return Some(self.opencode_db()).filter(|db| db.is_file());
        }
        let (root, wanted): (PathBuf, PathFilter) = match self.client {
            Client::Codex => {
                let id = self.session_id.clone();
                (
                    self.codex_home().join("sessions"),
                    Box::new(move |p: &Path| {
                        let name = p.file_name().unwrap().to_string_lossy().into_owned();
                        name.starts_with("rollout-")
                            && name.ends_with(".jsonl")
                            && id.as_deref().is_none_or(|id| name.contains(id))
                    }),
                )
            }
            Client::Gemini => (
                self.gemini_dir().join("tmp"),
                Box::new(|p: &Path| {
                    let name = p.file_name().unwrap().to_string_lossy().into_owned();
                    p.parent().is_some_and(|d| d.ends_with("chats"))
                        && name.starts_with("session-")
                        && name.ends_with(".jsonl")
                }),
            ),
            Client::OpenCode => unreachable!("returned above"),
            Client::Qwen => {
                let id = self.session_id.clone();
                (
                    self.qwen_dir().join("projects"),
                    Box::new(move |p: &Path| {
                        let name = p.file_name().unwrap().to_string_lossy().into_owned();
                        p.parent().is_some_and(|d| d.ends_with("chats"))
                            && name.ends_with(".jsonl")
                            && id.as_deref().is_none_or(|id| name == format!("{id}.jsonl"))
                    }),
                )
            }
            Client::Copilot => {
                let id = self.session_id.clone();
                (
                    self.copilot_dir().join("session-state"),
                    Box::new(move |p: &Path| {
                        p.file_name().is_some_and(|n| n == "events.jsonl")
                            && id
                                .as_deref()
                                .is_none_or(|id| p.parent().is_some_and(|d| d.ends_with(id)))
                    }),
                )
            }
        };
        let mut found = Vec::new();
        walk(&root, &mut |p| {
            if wanted(p) {
                found.push(p.to_path_buf());
            }
        });
        found.sort_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok());
        found.pop()
    }

    /// Codex: the `token_count` records of the rollout, as
    /// `(last_token_usage.total_tokens, model_context_window)`.
    pub fn codex_token_counts(&self) -> Vec<(u64, Option<u64>)> {
        let file = self.session_file().expect("the rollout file");
        std::fs::read_to_string(file)
            .unwrap()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["type"] == "event_msg" && e["payload"]["type"] == "token_count")
            .filter_map(|e| {
                let info = &e["payload"]["info"];
                Some((
                    info["last_token_usage"]["total_tokens"].as_u64()?,
                    info["model_context_window"].as_u64(),
                ))
            })
            .collect()
    }

    /// Gemini: the replies in the chat file as it stands (its `$set`
    /// records replace the message list, e.g. when compressing), as
    /// `(tokens.input, tokens.cached, model)`.
    pub fn gemini_replies(&self) -> Vec<(u64, u64, String)> {
        let file = self.session_file().expect("the chat file");
        let mut messages: Vec<Value> = Vec::new();
        for line in std::fs::read_to_string(file).unwrap().lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if let Some(list) = v["$set"]["messages"].as_array() {
                messages = list.clone();
            } else if v["id"].is_string() && v["type"].is_string() {
                match messages.iter_mut().find(|m| m["id"] == v["id"]) {
                    Some(m) => *m = v,
                    None => messages.push(v),
                }
            }
        }
        messages
            .iter()
            .filter(|m| m["type"] == "gemini")
            .map(|m| {
                (
                    m["tokens"]["input"].as_u64().unwrap_or(0),
                    m["tokens"]["cached"].as_u64().unwrap_or(0),
                    m["model"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect()
    }

    /// Qwen Code: the transcript's records, in order.
    pub fn qwen_records(&self) -> Vec<Value> {
        let file = self.session_file().expect("the transcript");
        std::fs::read_to_string(file)
            .unwrap()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .collect()
    }

    /// Qwen Code: the `usageMetadata.promptTokenCount` of each `assistant`
    /// record of the transcript.
    pub fn qwen_prompt_tokens(&self) -> Vec<u64> {
        self.qwen_records()
            .iter()
            .filter(|r| r["type"] == "assistant")
            .filter_map(|r| r["usageMetadata"]["promptTokenCount"].as_u64())
            .collect()
    }

    /// Copilot CLI: the records of `events.jsonl`, in order.
    pub fn copilot_events(&self) -> Vec<Value> {
        let file = self.session_file().expect("events.jsonl");
        std::fs::read_to_string(file)
            .unwrap()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .collect()
    }

    /// Copilot CLI: the records of `events.jsonl` of one `type`
    /// (`session.usage_record`, `session.compaction_complete`, ...).
    pub fn copilot_events_of(&self, kind: &str) -> Vec<Value> {
        self.copilot_events()
            .into_iter()
            .filter(|e| e["type"] == kind)
            .collect()
    }

    /// Copilot CLI: each `session.usage_record` of `events.jsonl`, as
    /// `(usage.inputTokens, usage.maxPromptTokens)`.
    pub fn copilot_usage(&self) -> Vec<(u64, u64)> {
        self.copilot_events_of("session.usage_record")
            .iter()
            .filter_map(|e| {
                let usage = &e["data"]["usage"];
                Some((
                    usage["inputTokens"].as_u64()?,
                    usage["maxPromptTokens"].as_u64()?,
                ))
            })
            .collect()
    }

    /// Copilot CLI: every hook run `events.jsonl` records, in order, as its
    /// `hookType` and the time from its `hook.start` to its `hook.end` (the
    /// records' millisecond timestamps).
    pub fn copilot_hook_times(&self) -> Vec<(String, Duration)> {
        let events = self.copilot_events();
        let mut times = Vec::new();
        for start in events.iter().filter(|e| e["type"] == "hook.start") {
            let id = &start["data"]["hookInvocationId"];
            let Some(end) = events
                .iter()
                .find(|e| e["type"] == "hook.end" && e["data"]["hookInvocationId"] == *id)
            else {
                continue;
            };
            let (Some(from), Some(to)) = (
                seconds_of_day(&start["timestamp"]),
                seconds_of_day(&end["timestamp"]),
            ) else {
                continue;
            };
            // A hook that runs past midnight ends on the next day.
            let secs = if to >= from {
                to - from
            } else {
                to + 86_400.0 - from
            };
            times.push((
                start["data"]["hookType"].as_str().unwrap_or("").to_owned(),
                Duration::from_secs_f64(secs),
            ));
        }
        times
    }

    /// OpenCode: the rows `sql` selects from its database, each a JSON
    /// array, read with python3's sqlite3 (read-only, after the run).
    pub fn opencode_query(&self, sql: &str) -> Vec<Value> {
        const READ: &str = "import json, sqlite3, sys\n\
            db = sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True)\n\
            print(json.dumps([list(r) for r in db.execute(sys.argv[2])]))";
        let db = self.opencode_db();
        let out = Command::new("python3")
            .args(["-c", READ])
            .arg(&db)
            .arg(sql)
            .stdin(Stdio::null())
            .output()
            .expect("run python3 to read OpenCode's database");
        assert!(
            out.status.success(),
            "reading {} ({sql}): {}",
            db.display(),
            stderr(&out)
        );
        serde_json::from_slice(&out.stdout).expect("rows as JSON")
    }

    /// OpenCode: the session's assistant messages in order, each its
    /// `data` (`tokens {total, input, output, reasoning, cache}`, `agent`,
    /// `summary: true` for a compaction's summary).
    pub fn opencode_replies(&self) -> Vec<Value> {
        let id = self.session_id().replace('\'', "''");
        self.opencode_query(&format!(
            "SELECT data FROM message WHERE session_id = '{id}' ORDER BY time_created, id"
        ))
        .iter()
        .filter_map(|row| serde_json::from_str::<Value>(row[0].as_str()?).ok())
        .filter(|m| m["role"] == "assistant")
        .collect()
    }

    /// OpenCode: the `tokens.total` of each assistant message, the
    /// compaction's summary included.
    pub fn opencode_totals(&self) -> Vec<u64> {
        self.opencode_replies()
            .iter()
            .filter_map(|m| m["tokens"]["total"].as_u64())
            .collect()
    }

    /// OpenCode: its own log files (`~/.local/share/opencode/log/`), joined.
    pub fn opencode_log(&self) -> String {
        let mut text = String::new();
        walk(
            &self.sandbox().home().join(".local/share/opencode/log"),
            &mut |p| text.push_str(&std::fs::read_to_string(p).unwrap_or_default()),
        );
        text
    }

    /// The daemon's log, if it wrote one.
    pub fn daemon_log(&self) -> String {
        std::fs::read_dir(self.sandbox().state_dir().join("logs"))
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| std::fs::read_to_string(e.ok()?.path()).ok())
            .unwrap_or_default()
    }

    /// What helps when a scenario fails: the requests answered, the events
    /// hookd recorded and the daemon log's tail.
    pub fn diagnostics(&self) -> String {
        let log = self.log();
        let daemon_log = self.daemon_log();
        // Template rendering and inotify chatter drown what happened.
        let tail: Vec<&str> = daemon_log
            .lines()
            .rev()
            .filter(|l| !l.contains("handlebars::") && !l.contains("notify::"))
            .take(30)
            .collect();
        let events: Vec<String> = crate::workflow_events(&self.project)
            .iter()
            .map(|e| {
                format!(
                    "{} {} {}",
                    e["kind"].as_str().unwrap_or(""),
                    e["step"].as_str().or(e["source"].as_str()).unwrap_or(""),
                    e["trigger"].as_str().unwrap_or("")
                )
            })
            .collect();
        format!(
            "mock requests: {:?}\nevents.jsonl: {events:?}\nhookd log (last lines, newest first):\n{}",
            log.labels(),
            tail.join("\n")
        )
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if self.wiring == Wiring::DaemonHung
            && let Some(pid) = self.daemon_pid()
        {
            // SAFETY: waking the daemon this scenario froze, so that it can stop.
            unsafe { libc::kill(pid, libc::SIGCONT) };
        }
        if matches!(self.wiring, Wiring::Hookd | Wiring::DaemonHung) {
            // Stop the daemon the hooks (or the scenario) started, if any.
            let _ = self.hookctl(&["daemon", "stop"]);
        }
        let sb = self.sb.take().expect("sandbox");
        if std::thread::panicking() {
            eprintln!(
                "{}: kept for inspection: {}",
                self.name,
                sb.dir.keep().display()
            );
        }
    }
}

/// Which files of a directory tree are wanted.
type PathFilter = Box<dyn Fn(&Path) -> bool>;

fn walk(dir: &Path, f: &mut dyn FnMut(&Path)) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, f);
        } else {
            f(&path);
        }
    }
}

/// The time of day of an RFC 3339 UTC timestamp (`2026-11-26T10:12:36.012Z`),
/// in seconds.
fn seconds_of_day(timestamp: &Value) -> Option<f64> {
    let time = timestamp.as_str()?.split_once('T')?.1.strip_suffix('Z')?;
    let mut parts = time.split(':').map(|p| p.parse::<f64>().ok());
    let (h, m, s) = (parts.next()??, parts.next()??, parts.next()??);
    Some(h * 3_600.0 + m * 60.0 + s)
}

/// The `sessionId` a Gemini chat file or a Qwen Code transcript names
/// (a record's, or a Gemini `$set`'s).
fn session_id_in(file: &Path) -> Option<String> {
    std::fs::read_to_string(file)
        .ok()?
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| {
            v["sessionId"]
                .as_str()
                .or(v["$set"]["sessionId"].as_str())
                .map(str::to_owned)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copilot_timestamps_read_as_seconds_of_day() {
        assert_eq!(
            seconds_of_day(&json!("2026-11-26T10:12:36.012Z")),
            Some(10.0 * 3_600.0 + 12.0 * 60.0 + 36.012)
        );
        for bad in [
            json!("2026-11-26 10:12:36Z"),
            json!("10:12:36"),
            json!(1795687956),
        ] {
            assert_eq!(seconds_of_day(&bad), None, "{bad}");
        }
    }
}

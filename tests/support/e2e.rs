//! End-to-end support: the real `claude` binary against a scripted mock of
//! the Anthropic Messages API (`tests/e2e/mock_api.py`), with the real
//! hookd and hookctl wired into a real git repository.
//!
//! - **Which claude**: `$HOOKD_E2E_CLAUDE`, pinned to Claude Code 2.1.330.
//!   Unset, the scenarios skip with a message, unless `HOOKD_E2E=require`
//!   (CI), which makes a missing or wrong client a failure.
//! - **Isolation**: the mock runs under `unshare -rn`, a new user and
//!   network namespace whose only interface is loopback. Every claude run
//!   and every hookctl command joins that namespace with `nsenter`, so
//!   hookd (autostarted by a hook) lives there too and nothing a scenario
//!   starts can reach past 127.0.0.1. Where user namespaces are not
//!   allowed, the scenario runs unisolated and says so.
//! - **Evidence**: the mock logs every request body ([`MockLog`]); each
//!   claude run keeps its stream-json output ([`Run`]) and a debug file
//!   from which [`HookRun`]s (event, exit status, duration) are read; the
//!   transcript, `hookctl status --json`, `.workflow/events.jsonl` and git
//!   show the rest.

use crate::{Sandbox, bin, stderr, stdout, wait_until};
use serde_json::{Value, json};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Path of the claude binary to test.
pub const CLAUDE_ENV: &str = "HOOKD_E2E_CLAUDE";
/// `require`: a missing client fails the suite instead of skipping it.
pub const REQUIRE_ENV: &str = "HOOKD_E2E";
/// The Claude Code release whose behaviour the scenarios encode.
pub const PINNED_VERSION: &str = "2.1.330";
/// A 200k-window model.
pub use crate::SONNET;
/// Where Claude Code compacts that model: 200,000 − 20,000 − 13,000.
pub const COMPACTS_AT: u64 = 167_000;
/// A claude run that takes longer than this is killed and fails the test
/// (a run takes about a second).
const RUN_LIMIT: Duration = Duration::from_secs(60);
/// How long the mock may take to start listening.
const MOCK_START_LIMIT: Duration = Duration::from_secs(10);

/// The hook events hookd is wired to, in Claude Code's spelling.
pub const WIRED_EVENTS: [&str; 8] = [
    "SessionStart",
    "UserPromptSubmit",
    "PostToolBatch",
    "PreCompact",
    "PostCompact",
    "SubagentStop",
    "Stop",
    "SessionEnd",
];

/// The claude binary, or `None` (with a message) when the suite should skip.
fn claude_binary() -> Option<PathBuf> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND
        .get_or_init(|| match pinned_claude() {
            Ok(path) => Some(path),
            Err(ClaudeMissing::NotSet) => {
                let required = std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "require");
                assert!(
                    !required,
                    "{REQUIRE_ENV}=require but {CLAUDE_ENV} is not set: install Claude Code \
                     {PINNED_VERSION} (.ci/run does) and point {CLAUDE_ENV} at its `claude`"
                );
                eprintln!(
                    "\n*** SKIPPED: end-to-end test without Claude Code. Set {CLAUDE_ENV} to a \
                     Claude Code {PINNED_VERSION} `claude` binary to run it. ***\n"
                );
                None
            }
            Err(ClaudeMissing::Unusable(why)) => panic!("{why}"),
        })
        .clone()
}

/// Why there is no pinned Claude Code to run.
#[derive(Debug, Clone)]
pub enum ClaudeMissing {
    /// `$HOOKD_E2E_CLAUDE` is not set.
    NotSet,
    /// It is set, but does not run or is another release.
    Unusable(String),
}

/// The `claude` named by `$HOOKD_E2E_CLAUDE`, checked to be the pinned release.
pub fn pinned_claude() -> Result<PathBuf, ClaudeMissing> {
    let Some(path) = std::env::var_os(CLAUDE_ENV).filter(|p| !p.is_empty()) else {
        return Err(ClaudeMissing::NotSet);
    };
    let path = PathBuf::from(path);
    let out = Command::new(&path)
        .arg("--version")
        .env("DISABLE_AUTOUPDATER", "1")
        .output()
        .map_err(|e| {
            ClaudeMissing::Unusable(format!("cannot run {CLAUDE_ENV}={}: {e}", path.display()))
        })?;
    let version = stdout(&out);
    if !version.starts_with(PINNED_VERSION) {
        return Err(ClaudeMissing::Unusable(format!(
            "{CLAUDE_ENV}={} is `{}`; the scenarios encode Claude Code {PINNED_VERSION}",
            path.display(),
            version.trim()
        )));
    }
    Ok(path)
}

/// Whether this machine lets us make a user + network namespace.
fn namespaces_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        let works = |program: &str, args: &[&str]| {
            Command::new(program)
                .args(args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        let ok = works("unshare", &["-rn", "true"]) && works("nsenter", &["--version"]);
        if !ok {
            eprintln!(
                "\n*** WARNING: `unshare -rn` is not available here: the end-to-end scenarios \
                 run WITHOUT network isolation. ***\n"
            );
        }
        ok
    })
}

/// One scripted model reply: its content blocks and the context size its
/// `usage` reports.
#[derive(Debug, Clone)]
pub struct Reply {
    pub label: String,
    pub tokens: u64,
    pub content: Vec<Value>,
}

impl Reply {
    pub fn text(label: &str, tokens: u64, text: &str) -> Reply {
        Reply {
            label: label.into(),
            tokens,
            content: vec![json!({"type": "text", "text": text})],
        }
    }

    pub fn tool(label: &str, tokens: u64, name: &str, input: Value) -> Reply {
        Reply {
            label: label.into(),
            tokens,
            content: vec![json!({"type": "tool_use", "name": name, "input": input})],
        }
    }

    pub fn bash(label: &str, tokens: u64, command: &str) -> Reply {
        Reply::tool(
            label,
            tokens,
            "Bash",
            json!({"command": command, "description": "e2e step"}),
        )
    }

    fn to_json(&self) -> Value {
        json!({"label": self.label, "tokens": self.tokens, "content": self.content})
    }
}

/// A git identity in `home`, so that commits work without touching the user's.
pub fn write_gitconfig(home: &Path) {
    std::fs::write(
        home.join(".gitconfig"),
        "[user]\n\tname = hookd e2e\n\temail = e2e@hookd.invalid\n[init]\n\tdefaultBranch = main\n",
    )
    .unwrap();
}

/// A small git project with one commit, its git run with `home`.
pub fn make_project(project: &Path, home: &Path) {
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(
        project.join("README.md"),
        "# parser\n\nA small config parser.\n",
    )
    .unwrap();
    std::fs::write(project.join("src/lib.rs"), "pub fn parse(_: &str) {}\n").unwrap();
    std::fs::write(project.join(".gitignore"), "target/\n").unwrap();
    git_in(project, home, &["init", "-q", "-b", "main"]);
    git_in(project, home, &["add", "-A"]);
    git_in(project, home, &["commit", "-q", "-m", "initial"]);
}

/// Runs git in `project` with `home` and fixed dates; returns its stdout.
pub fn git_in(project: &Path, home: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(project)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    stdout(&out)
}

/// Makes `cmd` (a `claude`) one headless run of `prompt` against the
/// Messages API mock on `port`, in stream-json with its debug log in
/// `debug_file`; the environment keeps it off every other network service.
pub fn headless_claude(cmd: &mut Command, port: u16, prompt: &str, debug_file: &Path) {
    cmd.env("IS_SANDBOX", "1")
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .env("ANTHROPIC_API_KEY", "sk-e2e-not-a-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .arg("-p")
        .arg(prompt)
        .args(["--output-format", "stream-json", "--verbose"])
        .args(["--dangerously-skip-permissions", "--model", SONNET])
        .arg("--debug-file")
        .arg(debug_file);
}

/// The stream-json events a claude run wrote (unparsable lines skipped).
pub fn stream_events(out_file: &Path) -> Vec<Value> {
    std::fs::read_to_string(out_file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Runs a client in `project` (its own process group, output to files),
/// killing the group if it outlives `limit`. `None`: it was killed.
pub fn run_bounded(
    cmd: &mut Command,
    project: &Path,
    out_file: &Path,
    err_file: &Path,
    limit: Duration,
) -> Option<std::process::ExitStatus> {
    cmd.current_dir(project)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(out_file).unwrap())
        .stderr(std::fs::File::create(err_file).unwrap())
        .process_group(0);
    let started = Instant::now();
    let mut child = cmd.spawn().expect("start the client");
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if started.elapsed() > limit {
            // SAFETY: kill(2) on the process group we created for this run.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A mock model server: a child process, in its own network namespace
/// when possible, serving a script and logging every request it gets.
pub struct MockServer {
    child: std::process::Child,
    pub port: u16,
    pub log: PathBuf,
    isolated: bool,
}

impl MockServer {
    /// Starts `program` with `args`, then the script, log and port-file
    /// arguments every mock takes; waits until it says its port.
    pub fn start(dir: &Path, program: &Path, args: &[&str], script: &Value) -> MockServer {
        let script_file = dir.join("mock_script.json");
        std::fs::write(&script_file, script.to_string()).unwrap();
        let log = dir.join("mock_requests.jsonl");
        let port_file = dir.join("mock_port");
        let isolated = namespaces_available();
        let mut cmd = if isolated {
            let mut c = Command::new("unshare");
            c.arg("-rn").arg(program).args(args).arg("--loopback-up");
            c
        } else {
            let mut c = Command::new(program);
            c.args(args);
            c
        };
        let err = std::fs::File::create(dir.join("mock_stderr.txt")).unwrap();
        let child = cmd
            .arg("--script")
            .arg(&script_file)
            .arg("--log")
            .arg(&log)
            .arg("--port-file")
            .arg(&port_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("start the mock model server {}: {e}", program.display()));
        let mut mock = MockServer {
            child,
            port: 0,
            log,
            isolated,
        };
        let up = wait_until(MOCK_START_LIMIT, || {
            port_file.exists() || mock.child.try_wait().ok().flatten().is_some()
        });
        let port = std::fs::read_to_string(&port_file).ok();
        mock.port = port.and_then(|p| p.trim().parse().ok()).unwrap_or_else(|| {
            panic!(
                "the mock model server did not start (up: {up}): {}",
                std::fs::read_to_string(dir.join("mock_stderr.txt")).unwrap_or_default()
            )
        });
        mock
    }

    /// The scripted Anthropic Messages API (`tests/e2e/mock_api.py`): the
    /// replies to the main requests in order, and the compaction summary
    /// with the tokens it reports.
    pub fn messages_api(dir: &Path, replies: &[Reply], summary: &(String, u64)) -> MockServer {
        let script = json!({
            "replies": replies.iter().map(Reply::to_json).collect::<Vec<_>>(),
            "summary": {"text": summary.0, "tokens": summary.1},
        });
        MockServer::start(
            dir,
            Path::new("python3"),
            &[concat!(env!("CARGO_MANIFEST_DIR"), "/e2e/mock_api.py")],
            &script,
        )
    }

    /// Every request the Messages API mock has received so far.
    pub fn messages_log(&self) -> MockLog {
        MockLog::read(&self.log)
    }

    /// A command for `program` inside the mock's namespace.
    pub fn enter(&self, program: &Path) -> Command {
        if !self.isolated {
            return Command::new(program);
        }
        let mut cmd = Command::new("nsenter");
        cmd.arg("--target")
            .arg(self.child.id().to_string())
            .args(["--user", "--net", "--preserve-credentials", "--"])
            .arg(program);
        cmd
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A script of its own, for the requests that name `LANE-<name>`.
struct Lane {
    name: String,
    replies: Vec<Reply>,
    summaries: Vec<(String, u64)>,
}

/// Sets up a [`Scenario`].
pub struct ScenarioBuilder {
    name: String,
    replies: Vec<Reply>,
    summary: (String, u64),
    summaries: Vec<(String, u64)>,
    lanes: Vec<Lane>,
    env: Vec<(String, String)>,
    daemon_available: bool,
}

impl ScenarioBuilder {
    /// The model's replies to the main requests, in order.
    pub fn replies(mut self, replies: Vec<Reply>) -> Self {
        self.replies = replies;
        self
    }

    /// The answer to the compaction summary request, and the tokens it reports.
    pub fn summary(mut self, text: &str, tokens: u64) -> Self {
        self.summary = (text.into(), tokens);
        self
    }

    /// The answers to the compaction summary requests, in order (the last
    /// one again once they run out), in place of [`Self::summary`].
    pub fn summaries(mut self, summaries: &[(&str, u64)]) -> Self {
        self.summaries = summaries.iter().map(|(t, n)| (t.to_string(), *n)).collect();
        self
    }

    /// A script of its own for the requests whose messages name
    /// `LANE-<name>`: sessions that run at once each follow their own.
    pub fn lane(mut self, name: &str, replies: Vec<Reply>, summaries: &[(&str, u64)]) -> Self {
        let summaries = summaries.iter().map(|(t, n)| (t.to_string(), *n)).collect();
        self.lanes.push(Lane {
            name: name.into(),
            replies,
            summaries,
        });
        self
    }

    /// An environment variable for every claude run.
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// hookctl alone: no hookd next to it, on PATH or in `$HOOKD_BIN`.
    pub fn without_hookd(mut self) -> Self {
        self.daemon_available = false;
        self
    }

    /// Starts the mock and prepares the project, or `None` when the suite
    /// skips (no Claude Code).
    pub fn start(self) -> Option<Scenario> {
        let claude = claude_binary()?;
        let sb = Sandbox::new();
        for dir in [sb.home(), sb.path().join("tmp")] {
            std::fs::create_dir_all(dir).unwrap();
        }
        write_gitconfig(&sb.home());
        let bin_dir = if self.daemon_available {
            bin("hookctl").parent().unwrap().to_path_buf()
        } else {
            // A copy, so that hookctl finds no hookd beside it either.
            let dir = sb.path().join("bin");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::copy(bin("hookctl"), dir.join("hookctl")).unwrap();
            dir
        };
        let project = sb.path().join("proj");
        let mock = MockServer::start(
            sb.path(),
            Path::new("python3"),
            &[concat!(env!("CARGO_MANIFEST_DIR"), "/e2e/mock_api.py")],
            &self.script(&project),
        );
        let scenario = Scenario {
            name: self.name,
            claude,
            mock,
            env: self.env,
            bin_dir,
            project,
            runs: 0,
            sb: Some(sb),
        };
        scenario.make_project();
        scenario.wire_hooks();
        Some(scenario)
    }
}

impl ScenarioBuilder {
    /// The mock's script; `@PROJECT@` in a reply stands for the project's
    /// path, as the tools that take absolute paths need it.
    fn script(&self, project: &Path) -> Value {
        let summaries = |list: &[(String, u64)]| -> Value {
            list.iter()
                .map(|(text, tokens)| json!({"text": text, "tokens": tokens}))
                .collect()
        };
        let replies = |list: &[Reply]| -> Value { list.iter().map(Reply::to_json).collect() };
        let lanes: serde_json::Map<String, Value> = self
            .lanes
            .iter()
            .map(|lane| {
                (
                    lane.name.clone(),
                    json!({"replies": replies(&lane.replies), "summaries": summaries(&lane.summaries)}),
                )
            })
            .collect();
        let script = json!({
            "replies": replies(&self.replies),
            "summary": {"text": self.summary.0, "tokens": self.summary.1},
            "summaries": summaries(&self.summaries),
            "lanes": lanes,
        });
        let project = project.display().to_string();
        serde_json::from_str(&script.to_string().replace("@PROJECT@", &project)).unwrap()
    }
}

/// One end-to-end scenario: a temporary HOME and git project, its own hookd
/// socket, state and config, and the mock API.
pub struct Scenario {
    pub name: String,
    pub project: PathBuf,
    claude: PathBuf,
    mock: MockServer,
    env: Vec<(String, String)>,
    bin_dir: PathBuf,
    runs: usize,
    /// `None` only while being dropped.
    sb: Option<Sandbox>,
}

impl Scenario {
    pub fn builder(name: &str) -> ScenarioBuilder {
        ScenarioBuilder {
            name: name.into(),
            replies: Vec::new(),
            summary: ("<summary>E2E_SUMMARY</summary>".into(), 3_000),
            summaries: Vec::new(),
            lanes: Vec::new(),
            env: Vec::new(),
            daemon_available: true,
        }
    }

    pub fn sandbox(&self) -> &Sandbox {
        self.sb.as_ref().expect("sandbox")
    }

    /// `PATH` for everything the scenario runs: its hookctl directory first,
    /// then this process's `PATH` without any directory holding a hookd.
    fn path_var(&self) -> std::ffi::OsString {
        let inherited = std::env::var_os("PATH").unwrap_or_default();
        let dirs = std::iter::once(self.bin_dir.clone()).chain(
            std::env::split_paths(&inherited)
                .filter(|d| !d.join("hookd").exists() && !d.join("hookctl").exists()),
        );
        std::env::join_paths(dirs).unwrap()
    }

    /// The environment hookd's clients see: the sandbox's socket, state and
    /// config, and nothing from this process.
    fn hookd_env(&self, cmd: &mut Command) {
        let sb = self.sandbox();
        cmd.env_clear()
            .env("PATH", self.path_var())
            .env("HOME", sb.home())
            .env("TMPDIR", sb.path().join("tmp"))
            .env("HOOKD_SOCKET", sb.socket())
            .env("HOOKD_STATE_DIR", sb.state_dir())
            .env("HOOKD_CONFIG_DIR", sb.config_dir())
            .env("HOOKD_DATA_DIR", sb.path().join("data"))
            .env("HOOKD_LOG", "debug");
    }

    fn make_project(&self) {
        make_project(&self.project, &self.sandbox().home());
    }

    /// Wires hookd into the project's `.claude/settings.json` with
    /// `hookctl install claude-code --project DIR`, as a person would.
    fn wire_hooks(&self) {
        let project = self.project.display().to_string();
        let out = self.hookctl(&["install", "claude-code", "--project", &project]);
        assert!(out.status.success(), "hookctl install: {}", stderr(&out));
        let settings: Value = serde_json::from_str(
            &std::fs::read_to_string(self.project.join(".claude/settings.json")).unwrap(),
        )
        .unwrap();
        for event in WIRED_EVENTS {
            assert!(
                settings["hooks"][event]
                    .to_string()
                    .contains("hookctl hook"),
                "{event} is not wired to hookctl: {settings}"
            );
        }
    }

    /// Runs git in the project, with the scenario's HOME and fixed dates;
    /// returns its stdout.
    pub fn git(&self, args: &[&str]) -> String {
        git_in(&self.project, &self.sandbox().home(), args)
    }

    /// What a checkpoint must never change: HEAD, the index, the stash and
    /// the working tree's status.
    pub fn git_snapshot(&self) -> GitSnapshot {
        GitSnapshot {
            head: self.git(&["rev-parse", "HEAD"]),
            index: self.git(&["ls-files", "--stage"]),
            stash: self.git(&["stash", "list"]),
            status: self.git(&["status", "--porcelain", "--untracked-files=all"]),
        }
    }

    /// Runs `hookctl <args>` inside the scenario's namespace.
    pub fn hookctl(&self, args: &[&str]) -> Output {
        let mut cmd = self.mock.enter(&self.bin_dir.join("hookctl"));
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

    /// One session from `hookctl status --json`.
    pub fn session(&self, id: &str) -> Value {
        self.status()["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["session_id"] == id)
            .unwrap_or_else(|| panic!("hookd does not know session {id}"))
            .clone()
    }

    /// The project's `.workflow/events.jsonl` entries of one kind.
    pub fn events(&self, kind: &str) -> Vec<Value> {
        crate::workflow_events_of(&self.project, kind)
    }

    /// Every request the mock has received so far.
    pub fn log(&self) -> MockLog {
        self.mock.messages_log()
    }

    /// A session's transcript, one value per line (unparsable lines skipped).
    pub fn transcript(&self, session_id: &str) -> Vec<Value> {
        let projects = self.sandbox().home().join(".claude/projects");
        let file = std::fs::read_dir(&projects)
            .unwrap()
            .filter_map(|d| Some(d.ok()?.path().join(format!("{session_id}.jsonl"))))
            .find(|p| p.exists())
            .unwrap_or_else(|| panic!("no transcript for {session_id} in {}", projects.display()));
        std::fs::read_to_string(file)
            .unwrap()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// `claude -p PROMPT` in a new session.
    pub fn start_session(&mut self, prompt: &str) -> Run {
        self.claude(prompt, None)
    }

    /// `claude -p PROMPT --resume SESSION`.
    pub fn resume(&mut self, session: &str, prompt: &str) -> Run {
        self.claude(prompt, Some(session))
    }

    /// `claude -p "/compact INSTRUCTIONS" --resume SESSION`.
    pub fn compact(&mut self, session: &str, instructions: &str) -> Run {
        self.claude(&format!("/compact {instructions}"), Some(session))
    }

    /// One headless claude run in the project, with a hard time limit. It
    /// must exit 0 with a successful result.
    fn claude(&mut self, prompt: &str, resume: Option<&str>) -> Run {
        let project = self.project.clone();
        self.claude_in(&project, prompt, resume)
    }

    /// [`Self::claude`] started in `dir` (the project or a directory in it).
    pub fn claude_in(&mut self, dir: &Path, prompt: &str, resume: Option<&str>) -> Run {
        self.together(&[(dir, prompt, resume)]).remove(0)
    }

    /// Headless claude runs `(directory, prompt, session to resume)` started
    /// at once; each must exit 0 with a successful result.
    pub fn together(&mut self, runs: &[(&Path, &str, Option<&str>)]) -> Vec<Run> {
        let started: Vec<(usize, Command, RunFiles)> = runs
            .iter()
            .map(|(_, prompt, resume)| self.claude_command(prompt, *resume))
            .collect();
        let ended: Vec<(usize, Option<std::process::ExitStatus>, RunFiles, Duration)> =
            std::thread::scope(|scope| {
                let handles: Vec<_> = started
                    .into_iter()
                    .zip(runs)
                    .map(|((index, mut cmd, files), (dir, _, _))| {
                        scope.spawn(move || {
                            let clock = Instant::now();
                            let status =
                                run_bounded(&mut cmd, dir, &files.out, &files.err, RUN_LIMIT);
                            (index, status, files, clock.elapsed())
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
        ended
            .into_iter()
            .zip(runs)
            .map(|((index, status, files, elapsed), (_, prompt, _))| {
                self.finish_run(index, prompt, status, files, elapsed)
            })
            .collect()
    }

    /// The command for the next claude run, and where its output goes.
    fn claude_command(&mut self, prompt: &str, resume: Option<&str>) -> (usize, Command, RunFiles) {
        self.runs += 1;
        let index = self.runs;
        let dir = self.sandbox().path().to_path_buf();
        let files = RunFiles {
            out: dir.join(format!("run{index}.stdout.jsonl")),
            err: dir.join(format!("run{index}.stderr.txt")),
            debug: dir.join(format!("run{index}.debug.txt")),
        };
        let mut cmd = self.mock.enter(&self.claude);
        self.hookd_env(&mut cmd);
        headless_claude(&mut cmd, self.mock.port, prompt, &files.debug);
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        if let Some(session) = resume {
            cmd.args(["--resume", session]);
        }
        (index, cmd, files)
    }

    /// A finished claude run, which must have exited 0 with a successful result.
    fn finish_run(
        &self,
        index: usize,
        prompt: &str,
        status: Option<std::process::ExitStatus>,
        files: RunFiles,
        elapsed: Duration,
    ) -> Run {
        let status = status.unwrap_or_else(|| {
            panic!(
                "{}: claude run {index} ({prompt:?}) took over {RUN_LIMIT:?} and was killed\n{}",
                self.name,
                self.diagnostics()
            )
        });
        let events = stream_events(&files.out);
        let run = Run {
            index,
            session_id: String::new(),
            events,
            stderr: std::fs::read_to_string(&files.err).unwrap_or_default(),
            elapsed,
            debug_file: files.debug,
        };
        let result = run.events.iter().rev().find(|e| e["type"] == "result");
        let ok = status.success()
            && result.is_some_and(|r| r["is_error"] == false && r["subtype"] == "success");
        assert!(
            ok,
            "{}: claude run {index} ({prompt:?}) failed: {status}\nstderr: {}\nresult: {result:?}\n{}",
            self.name,
            run.stderr,
            self.diagnostics()
        );
        let session_id = result.unwrap()["session_id"]
            .as_str()
            .expect("result has a session_id")
            .to_owned();
        assert!(
            !self.log().exhausted(),
            "{}: run {index} asked the model more than the script holds: {:?}",
            self.name,
            self.log().labels()
        );
        Run { session_id, ..run }
    }

    /// What helps when a scenario fails: the requests answered and the
    /// daemon log's tail.
    pub fn diagnostics(&self) -> String {
        let log = self.log();
        let daemon_log = std::fs::read_dir(self.sandbox().state_dir().join("logs"))
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| std::fs::read_to_string(e.ok()?.path()).ok())
            .unwrap_or_default();
        let tail: Vec<&str> = daemon_log.lines().rev().take(30).collect();
        format!(
            "mock requests: {:?}\nhookd log (last lines, newest first):\n{}",
            log.labels(),
            tail.join("\n")
        )
    }
}

impl Drop for Scenario {
    fn drop(&mut self) {
        // Stop the daemon the hooks started, if any.
        let _ = self.hookctl(&["daemon", "stop"]);
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

/// Where one claude run's output goes.
struct RunFiles {
    out: PathBuf,
    err: PathBuf,
    debug: PathBuf,
}

/// Git state a checkpoint must leave alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitSnapshot {
    pub head: String,
    pub index: String,
    pub stash: String,
    pub status: String,
}

/// One claude run: its stream-json output and where its debug log is.
#[derive(Debug)]
pub struct Run {
    pub index: usize,
    /// The session the run ended in (from its `result`).
    pub session_id: String,
    /// The stream-json events.
    pub events: Vec<Value>,
    pub stderr: String,
    pub elapsed: Duration,
    debug_file: PathBuf,
}

impl Run {
    /// Stream events of one type and subtype (`("system", "compact_boundary")`).
    pub fn stream(&self, kind: &str, subtype: &str) -> Vec<&Value> {
        self.events
            .iter()
            .filter(|e| e["type"] == kind && e["subtype"] == subtype)
            .collect()
    }

    /// Every hookctl hook Claude Code ran, from its debug log.
    pub fn hooks(&self) -> Vec<HookRun> {
        hook_runs(&self.debug_file, |command| command.contains("hookctl"))
    }
}

/// The command hooks Claude Code ran, from its debug log, of those whose
/// command `is_ours` says it is.
pub fn hook_runs(debug_file: &Path, is_ours: impl Fn(&str) -> bool) -> Vec<HookRun> {
    std::fs::read_to_string(debug_file)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| HookRun::parse_for(line, &is_ours))
        .collect()
}

/// A hook as Claude Code's debug log reports it:
/// `Hooks: PostToolUse:Bash [hookctl hook post-tool-use] finished with status 0 (4ms)`, or
/// `PreCompact:manual [hookctl hook pre-compact] completed with status 0` (no duration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookRun {
    /// `PostToolUse`, `SessionStart`, ...
    pub event: String,
    /// What follows the event name: the tool, the source or the trigger.
    pub qualifier: Option<String>,
    pub command: String,
    pub status: i32,
    /// Claude Code records a duration for some events only.
    pub duration_ms: Option<u64>,
}

impl HookRun {
    #[cfg(test)]
    fn parse(line: &str) -> Option<HookRun> {
        HookRun::parse_for(line, |command| command.contains("hookctl"))
    }

    /// A hook line whose command (the bracketed part) `is_ours` accepts.
    fn parse_for(line: &str, is_ours: impl Fn(&str) -> bool) -> Option<HookRun> {
        let (open, close) = line.match_indices(" [").find_map(|(open, _)| {
            let close = open + line[open..].find("] ")?;
            is_ours(&line[open + 2..close]).then_some((open, close))
        })?;
        let head = line[..open].rsplit("] ").next()?;
        let head = head.strip_prefix("Hooks: ").unwrap_or(head);
        let (event, qualifier) = match head.split_once(':') {
            Some((e, q)) => (e, Some(q.to_owned())),
            None => (head, None),
        };
        let tail = &line[close + 2..];
        let status_at = tail.find("with status ")? + "with status ".len();
        let status: i32 = tail[status_at..]
            .split(|c: char| !c.is_ascii_digit() && c != '-')
            .next()?
            .parse()
            .ok()?;
        let duration_ms = tail
            .rfind('(')
            .and_then(|i| tail[i + 1..].strip_suffix("ms)"))
            .and_then(|d| d.parse().ok());
        Some(HookRun {
            event: event.to_owned(),
            qualifier,
            command: line[open + 2..close].to_owned(),
            status,
            duration_ms,
        })
    }
}

/// One request the mock received.
#[derive(Debug, Clone)]
pub struct ApiRequest {
    pub n: u64,
    /// `main`, `summary`, `count_tokens` or `other`.
    pub kind: String,
    /// The label of the reply the mock gave.
    pub label: String,
    /// When the mock received it: seconds since the Unix epoch.
    pub received: f64,
    pub body: Value,
    text: String,
}

impl ApiRequest {
    /// All the text of the request's messages (not the system prompt), as
    /// the model would read it.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// How many times `needle` occurs in the messages.
    pub fn count(&self, needle: &str) -> usize {
        self.text.matches(needle).count()
    }

    pub fn contains(&self, needle: &str) -> bool {
        self.text.contains(needle)
    }

    /// The text of the first message.
    pub fn first_message_text(&self) -> String {
        let mut out = String::new();
        if let Some(m) = self.body["messages"].get(0) {
            collect_text(&m["content"], &mut out);
        }
        out
    }
}

fn collect_text(content: &Value, out: &mut String) {
    match content {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::Array(blocks) => {
            for block in blocks {
                if let Some(text) = block["text"].as_str() {
                    out.push_str(text);
                    out.push('\n');
                } else if !block["content"].is_null() {
                    collect_text(&block["content"], out);
                } else if !block["input"].is_null() {
                    out.push_str(&block["input"].to_string());
                    out.push('\n');
                }
            }
        }
        _ => {}
    }
}

/// The mock's request log.
#[derive(Debug, Clone)]
pub struct MockLog {
    pub requests: Vec<ApiRequest>,
}

impl MockLog {
    fn read(path: &Path) -> MockLog {
        MockLog::read_from(path, 0).0
    }

    /// The requests logged from byte `offset` of the log on, and the offset
    /// after the last whole line read.
    pub fn read_from(path: &Path, offset: u64) -> (MockLog, u64) {
        use std::io::{Read, Seek, SeekFrom};
        let mut bytes = Vec::new();
        if let Ok(mut file) = std::fs::File::open(path) {
            file.seek(SeekFrom::Start(offset))
                .expect("seek the mock log");
            file.read_to_end(&mut bytes).expect("read the mock log");
        }
        let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let requests = String::from_utf8_lossy(&bytes[..whole])
            .lines()
            .map(|line| {
                let v: Value = serde_json::from_str(line).expect("mock log line");
                let mut text = String::new();
                for m in v["body"]["messages"].as_array().into_iter().flatten() {
                    collect_text(&m["content"], &mut text);
                }
                ApiRequest {
                    n: v["n"].as_u64().unwrap(),
                    kind: v["kind"].as_str().unwrap().to_owned(),
                    label: v["label"].as_str().unwrap().to_owned(),
                    received: v["t"].as_f64().unwrap_or_default(),
                    body: v["body"].clone(),
                    text,
                }
            })
            .collect();
        (MockLog { requests }, offset + whole as u64)
    }

    /// The labels of the replies given, in order.
    pub fn labels(&self) -> Vec<&str> {
        self.requests.iter().map(|r| r.label.as_str()).collect()
    }

    /// Whether a request came after the script ran out.
    pub fn exhausted(&self) -> bool {
        self.requests
            .iter()
            .any(|r| r.label == "MOCK_SCRIPT_EXHAUSTED")
    }

    /// The one request answered with the reply labelled `label`.
    pub fn answered_with(&self, label: &str) -> &ApiRequest {
        let found: Vec<&ApiRequest> = self.requests.iter().filter(|r| r.label == label).collect();
        assert_eq!(
            found.len(),
            1,
            "one request answered with {label:?}: {:?}",
            self.labels()
        );
        found[0]
    }

    pub fn of_kind(&self, kind: &str) -> Vec<&ApiRequest> {
        self.requests.iter().filter(|r| r.kind == kind).collect()
    }

    /// The first request whose messages contain `needle`.
    pub fn first_containing(&self, needle: &str) -> Option<&ApiRequest> {
        self.requests.iter().find(|r| r.contains(needle))
    }

    pub fn last(&self) -> &ApiRequest {
        self.requests.last().expect("no request yet")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hook_lines_of_the_debug_log() {
        let finished = HookRun::parse(
            "2026-11-21T20:43:42.952Z [DEBUG] Hooks: PostToolUse:Bash [hookctl hook post-tool-use] finished with status 0 (29ms)",
        )
        .unwrap();
        assert_eq!(finished.event, "PostToolUse");
        assert_eq!(finished.qualifier.as_deref(), Some("Bash"));
        assert_eq!(finished.command, "hookctl hook post-tool-use");
        assert_eq!((finished.status, finished.duration_ms), (0, Some(29)));
        let completed = HookRun::parse(
            "2026-11-21T20:43:42.952Z [DEBUG] PreCompact:manual [hookctl hook pre-compact] completed with status 1",
        )
        .unwrap();
        assert_eq!(completed.event, "PreCompact");
        assert_eq!((completed.status, completed.duration_ms), (1, None));
        let plain = HookRun::parse(
            "2026-11-21T20:43:42.952Z [DEBUG] Hooks: Stop [hookctl hook stop] finished with status 0 (3ms)",
        )
        .unwrap();
        assert_eq!((plain.event.as_str(), plain.qualifier), ("Stop", None));
        let by_path = HookRun::parse(
            "2026-11-21T20:43:42.952Z [DEBUG] Hooks: Stop [/opt/hookd/bin/hookctl hook stop] finished with status 0 (3ms)",
        )
        .unwrap();
        assert_eq!(by_path.command, "/opt/hookd/bin/hookctl hook stop");
        assert!(HookRun::parse("[DEBUG] Hooks: checkForNewResponses returning 0").is_none());
        assert!(
            HookRun::parse("[DEBUG] Hooks: Checking first line: {\"a\":\"[hookd: 72%] \"}")
                .is_none()
        );
    }
}

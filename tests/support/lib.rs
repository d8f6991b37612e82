//! Shared test support: a real daemon in-process on a temporary socket, the
//! real binaries with an isolated environment, and the recorded Claude Code
//! fixtures.
//!
//! The binaries are the ones `cargo build --workspace` put next to the test
//! executable; `tests/run` builds them before running the tests.

pub mod e2e;
pub mod e2e_agents;
mod events;
mod file_tree;
mod git_repo;
mod hook_answer;
pub mod mock_chat;
pub mod mock_codex;
pub mod mock_gemini;
pub mod mock_model;
mod normalize;
mod scenario;
pub mod sync_refs;

pub use events::{EVENT_DEADLINE, EventStream};
pub use file_tree::FileTree;
pub use git_repo::{
    Fingerprint, GitRepo, REF_PREFIX, UserRefs, checkpoint_meta, git_command, snapshot,
    snapshot_options,
};
pub use hook_answer::HookAnswer;
pub use hookd::test_events::TestEvent;
pub use normalize::{Normalizer, sorted_keys};
pub use scenario::{Scenario, ScenarioBuilder, output_text, saved_state};

use hookd::engine::Engine;
use hookd::{Daemon, DaemonOptions, Shutdown};
use protocol::paths::{SocketPath, SocketSource};
use serde_json::Value;
use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Path of a workspace binary (`hookd`, `hookctl`) built for this profile.
pub fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    // target/<profile>/deps/<test>-<hash> → target/<profile>/<name>; a
    // binary of ours (hookd-bench) is in target/<profile> itself.
    let parent = exe.parent().expect("target directory");
    let dir = if parent.ends_with("deps") {
        parent.parent().expect("target directory")
    } else {
        parent
    };
    let path = dir.join(name);
    assert!(
        path.is_file(),
        "{} is missing: build the workspace first (tests/run does)",
        path.display()
    );
    path
}

/// The Claude Code 2.1.330 fixtures (hook payloads, transcripts).
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/claude-code-2.1.330")
}

/// A recorded hook payload by its name in `hook_payloads.json`
/// (`"PostToolUse"`, `"SessionStart(source=compact)"`, ...).
pub fn payload(name: &str) -> Value {
    let text = std::fs::read_to_string(fixtures_dir().join("hook_payloads.json"))
        .expect("hook_payloads.json");
    let all: Value = serde_json::from_str(&text).expect("fixture JSON");
    all["payloads"][name]["stdin"].clone()
}

/// A temporary home for one test: socket, state and config directories,
/// kept short because Unix socket paths are limited to ~107 bytes.
///
/// Dropping it (a panic included) first kills every daemon that still holds
/// a lock in it, so no test leaves a `hookd` running on a deleted directory.
pub struct Sandbox {
    // Declared first: dropped before the directory is deleted.
    _reaper: Reaper,
    /// The named events of the daemons this sandbox runs.
    pub events: EventStream,
    pub dir: tempfile::TempDir,
}

/// Kills the daemons whose pid locks lie in a directory, when dropped.
struct Reaper {
    root: PathBuf,
}

impl Drop for Reaper {
    fn drop(&mut self) {
        let mut locks = Vec::new();
        pid_locks(&self.root, 4, &mut locks);
        for lock in locks {
            reap(&lock);
        }
    }
}

/// Files called `*.pid` down to `depth` levels below `dir` (git dirs skipped).
fn pid_locks(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() && depth > 0 && entry.file_name() != ".git" {
            pid_locks(&path, depth - 1, out);
        } else if kind.is_file() && path.extension().is_some_and(|e| e == "pid") {
            out.push(path);
        }
    }
}

/// Kills the process holding the pid lock `lock`, if one does (never this
/// test process, whose in-process daemons stop through their own guard), and
/// waits until the lock is free.
fn reap(lock: &Path) {
    use hookd::pidlock;
    if !pidlock::is_held(lock) {
        return;
    }
    let Some(pid) = pidlock::read_pid(lock).and_then(|p| p.parse::<i32>().ok()) else {
        return;
    };
    if pid <= 0 || pid == std::process::id() as i32 {
        return;
    }
    eprintln!(
        "test guard: killing hookd (pid {pid}) left holding {}",
        lock.display()
    );
    // SAFETY: kill(2) on the pid recorded by a daemon that holds its lock right now.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    wait_until(Duration::from_secs(5), || !pidlock::is_held(lock));
}

/// A child process (a `hookd run`, say) killed and reaped when dropped,
/// a panic included. Derefs to the [`std::process::Child`].
pub struct ChildGuard(pub std::process::Child);

impl ChildGuard {
    pub fn spawn(cmd: &mut Command) -> ChildGuard {
        ChildGuard(cmd.spawn().expect("spawn"))
    }
}

impl std::ops::Deref for ChildGuard {
    type Target = std::process::Child;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for ChildGuard {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

impl Default for Sandbox {
    fn default() -> Self {
        Sandbox::new()
    }
}

impl Sandbox {
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("hk")
            .tempdir_in("/tmp")
            .expect("temp dir");
        // The socket's directory, as a person who sets HOOKD_SOCKET has it:
        // hookctl never creates a directory it was told to use.
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(dir.path().join("run"))
            .expect("socket dir");
        Sandbox {
            _reaper: Reaper {
                root: dir.path().to_path_buf(),
            },
            events: EventStream::bind(&dir.path().join("events.sock")),
            dir,
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn socket(&self) -> PathBuf {
        self.path().join("run/hookd.sock")
    }

    pub fn state_dir(&self) -> PathBuf {
        self.path().join("state")
    }

    pub fn config_dir(&self) -> PathBuf {
        self.path().join("config")
    }

    pub fn home(&self) -> PathBuf {
        self.path().join("home")
    }

    /// A command for a workspace binary with only this sandbox's environment.
    pub fn command(&self, name: &str) -> Command {
        let mut cmd = Command::new(bin(name));
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home())
            .env("HOOKD_SOCKET", self.socket())
            .env("HOOKD_STATE_DIR", self.state_dir())
            .env("HOOKD_CONFIG_DIR", self.config_dir())
            .env("HOOKD_DATA_DIR", self.path().join("data"))
            .env("HOOKD_BIN", bin("hookd"))
            .env(hookd::test_events::ENV, self.events.path())
            .current_dir(self.path())
            .stdin(Stdio::null());
        cmd
    }

    /// Runs `hookctl hook <event>` with `stdin` and returns its output.
    pub fn hook(&self, event: &str, stdin: &[u8]) -> Output {
        let mut cmd = self.command("hookctl");
        cmd.arg("hook").arg(event);
        run_with_stdin(cmd, stdin)
    }

    /// Runs `hookctl <args>`.
    pub fn hookctl(&self, args: &[&str]) -> Output {
        self.command("hookctl")
            .args(args)
            .output()
            .expect("run hookctl")
    }

    /// Runs `hookctl <args>` in `dir`.
    pub fn hookctl_in(&self, dir: &Path, args: &[&str]) -> Output {
        self.command("hookctl")
            .current_dir(dir)
            .args(args)
            .output()
            .expect("run hookctl")
    }

    /// Runs `hookd <args>`.
    pub fn hookd(&self, args: &[&str]) -> Output {
        self.command("hookd")
            .args(args)
            .output()
            .expect("run hookd")
    }

    /// Blocks until a daemon of this sandbox sends `event` (its detail
    /// starting with `detail`): see [`EventStream::wait_for`].
    pub fn wait_for(&self, event: TestEvent, detail: &str) -> String {
        self.events.wait_for(event, detail)
    }

    /// Blocks until `holds`, looking again at each `event`: see
    /// [`EventStream::wait_until_after`].
    pub fn wait_until_after(&self, event: TestEvent, what: &str, holds: impl FnMut() -> bool) {
        self.events.wait_until_after(event, what, holds)
    }

    /// What varies from run to run in this sandbox's outputs, to normalize.
    pub fn normalizer(&self) -> Normalizer {
        let bin_dir = bin("hookctl")
            .parent()
            .expect("the binaries' directory")
            .display()
            .to_string();
        Normalizer::new(self.path(), &self.socket()).with(bin_dir, "[BIN]")
    }

    /// `text` normalized for a snapshot.
    pub fn normalize(&self, text: &str) -> String {
        self.normalizer().normalize(text)
    }

    /// The cross-task memory's directory: where `$HOOKD_DATA_DIR` (set for
    /// the binaries) puts it.
    pub fn memory_dir(&self) -> PathBuf {
        self.path().join("data/memory")
    }

    pub fn daemon_options(&self) -> DaemonOptions {
        let socket = SocketPath {
            path: self.socket(),
            source: SocketSource::Flag,
        };
        // An in-process daemon sees the test's environment, not the sandbox's.
        DaemonOptions::new(socket, self.state_dir())
            .test_events_to(self.events.path())
            .set("memory.dir", self.memory_dir().display().to_string())
    }
}

/// Runs a command with `stdin` piped in.
pub fn run_with_stdin(mut cmd: Command, stdin: &[u8]) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut pipe = child.stdin.take().expect("stdin pipe");
    let data = stdin.to_vec();
    // A writer thread: the child may exit before reading everything.
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&data);
    });
    let out = child.wait_with_output().expect("wait");
    let _ = writer.join();
    out
}

/// The model the tests' transcripts and sessions use.
pub const SONNET: &str = "claude-sonnet-4-5-20250929";

/// The permission bits of `path`.
pub fn file_mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The `additionalContext` of a hook's JSON output, or "".
pub fn additional_context(out: &Value) -> String {
    out["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A real daemon serving in this process, on its own runtime thread.
pub struct TestDaemon {
    pub socket: PathBuf,
    engine: Arc<Engine>,
    shutdown: Shutdown,
    thread: Option<JoinHandle<()>>,
}

impl TestDaemon {
    pub fn start(options: DaemonOptions) -> TestDaemon {
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let daemon = Daemon::bind(options).expect("bind the test daemon");
                tx.send((
                    daemon.socket().to_path_buf(),
                    daemon.engine().clone(),
                    daemon.shutdown_handle(),
                ))
                .unwrap();
                daemon.serve().await.expect("serve");
            });
        });
        let (socket, engine, shutdown) = rx.recv().expect("daemon started");
        TestDaemon {
            socket,
            engine,
            shutdown,
            thread: Some(thread),
        }
    }

    /// How many hook events the daemon has handled.
    pub fn events_handled(&self) -> u64 {
        self.engine
            .status(&Default::default())
            .daemon
            .events_handled
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Stops the daemon and waits until it has cleaned up.
    pub fn stop(mut self) {
        self.shutdown.trigger("test");
        if let Some(t) = self.thread.take() {
            t.join().expect("daemon thread");
        }
    }
}

impl Drop for TestDaemon {
    fn drop(&mut self) {
        self.shutdown.trigger("test");
        if let Some(t) = self.thread.take() {
            // Never a second panic while a failing test unwinds.
            let _ = t.join();
        }
    }
}

/// Polls `check` every few milliseconds until it holds or `within` passes.
pub fn wait_until(within: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if check() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Whether a process is alive (and not a zombie we could still reap).
pub fn process_alive(pid: i32) -> bool {
    // A killed daemon whose parent is gone stays a zombie until init reaps it: dead all the same.
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(") ")
                .map(|(_, rest)| rest.starts_with('Z'))
        })
        .unwrap_or(false);
    // SAFETY: signal 0 only checks for existence.
    !zombie && unsafe { libc::kill(pid, 0) == 0 }
}

/// A Claude Code transcript a test writes as a session would: lines in the
/// real 2.1.330 format (taken from the fixtures), with the figures the test
/// chooses.
pub struct Transcript {
    pub path: PathBuf,
    pub session_id: String,
    pub model: String,
    replies: u32,
}

impl Transcript {
    pub fn create(path: PathBuf, session_id: &str, model: &str) -> Transcript {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, b"").unwrap();
        Transcript {
            path,
            session_id: session_id.into(),
            model: model.into(),
            replies: 0,
        }
    }

    fn fixture_line(file: &str, pick: impl Fn(&Value) -> bool) -> Value {
        let text = std::fs::read_to_string(fixtures_dir().join("transcripts").join(file)).unwrap();
        text.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|v| pick(v))
            .expect("fixture line")
    }

    pub fn append(&self, entry: &Value) {
        append_line(&self.path, entry);
    }

    /// An assistant reply whose context is `tokens` (split as Claude Code
    /// reports it), asking for a tool call [`Transcript::tool_use_id`].
    pub fn reply(&mut self, tokens: u64) {
        let entry = self.reply_entry(tokens);
        self.append(&entry);
    }

    /// The next reply's transcript line, for a test that writes it itself.
    pub fn reply_entry(&mut self, tokens: u64) -> Value {
        self.replies += 1;
        let mut entry = Self::fixture_line("basic.90fcfea3.jsonl", |v| {
            v["type"] == "assistant" && v["message"]["content"][0]["type"] == "tool_use"
        });
        entry["sessionId"] = Value::from(self.session_id.clone());
        entry["uuid"] = Value::from(format!("reply-{}", self.replies));
        entry["message"]["id"] = Value::from(format!("msg_test_{}", self.replies));
        entry["message"]["model"] = Value::from(self.model.clone());
        entry["message"]["content"][0]["id"] = Value::from(self.tool_use_id());
        let usage = &mut entry["message"]["usage"];
        usage["input_tokens"] = Value::from(tokens / 100);
        usage["cache_creation_input_tokens"] = Value::from(tokens / 10);
        usage["cache_read_input_tokens"] = Value::from(tokens - tokens / 100 - tokens / 10);
        entry
    }

    /// The tool call the latest reply asked for.
    pub fn tool_use_id(&self) -> String {
        format!("toolu_test_{}", self.replies)
    }

    /// The person's prompt.
    pub fn prompt(&self, text: &str) {
        let mut entry = Self::fixture_line("basic.90fcfea3.jsonl", |v| {
            v["type"] == "user" && v["message"]["content"].is_string()
        });
        entry["sessionId"] = Value::from(self.session_id.clone());
        entry["message"]["content"] = Value::from(text);
        self.append(&entry);
    }

    /// A reply calling one tool, as Claude Code writes it (usage included).
    pub fn tool_use(&mut self, id: &str, name: &str, input: Value, tokens: u64) {
        self.replies += 1;
        let mut entry = Self::fixture_line("basic.90fcfea3.jsonl", |v| {
            v["type"] == "assistant" && v["message"]["content"][0]["type"] == "tool_use"
        });
        entry["sessionId"] = Value::from(self.session_id.clone());
        entry["uuid"] = Value::from(format!("reply-{}", self.replies));
        entry["message"]["id"] = Value::from(format!("msg_test_{}", self.replies));
        entry["message"]["model"] = Value::from(self.model.clone());
        entry["message"]["content"] =
            serde_json::json!([{"type": "tool_use", "id": id, "name": name, "input": input}]);
        let usage = &mut entry["message"]["usage"];
        usage["input_tokens"] = Value::from(tokens);
        usage["cache_creation_input_tokens"] = Value::from(0);
        usage["cache_read_input_tokens"] = Value::from(0);
        self.append(&entry);
    }

    /// A TodoWrite call with these items (content, status, active form)
    /// and its result, as Claude Code records the agent's todo list.
    pub fn todo_write(&mut self, id: &str, items: &[(&str, &str, &str)], tokens: u64) {
        let todos: Vec<Value> = items
            .iter()
            .map(|(content, status, active)| {
                serde_json::json!({"content": content, "status": status, "activeForm": active})
            })
            .collect();
        self.tool_use(
            id,
            "TodoWrite",
            serde_json::json!({ "todos": todos }),
            tokens,
        );
        self.tool_result(
            id,
            "Todos have been modified successfully.",
            serde_json::json!({}),
        );
    }

    /// The result of a tool call, with Claude Code's `toolUseResult`.
    pub fn tool_result(&self, id: &str, text: &str, tool_use_result: Value) {
        let mut entry = Self::fixture_line("basic.90fcfea3.jsonl", |v| {
            v["type"] == "user" && v["message"]["content"].is_array()
        });
        entry["sessionId"] = Value::from(self.session_id.clone());
        entry["message"]["content"] = serde_json::json!([{"tool_use_id": id, "type": "tool_result", "content": text, "is_error": false}]);
        entry["toolUseResult"] = tool_use_result;
        self.append(&entry);
    }

    /// What Claude Code writes when a hook's additionalContext reaches the model.
    pub fn context_arrived(&self, event: &str, text: &str) {
        let mut entry = Self::fixture_line("compact_manual.b38af9dc.jsonl", |v| {
            v["attachment"]["type"] == "hook_additional_context"
        });
        entry["sessionId"] = Value::from(self.session_id.clone());
        entry["attachment"]["content"] = serde_json::json!([text]);
        entry["attachment"]["hookEvent"] = Value::from(event);
        entry["attachment"]["hookName"] = Value::from(event);
        self.append(&entry);
    }

    /// A `compact_boundary` entry, as Claude Code writes one.
    pub fn boundary(&self, trigger: &str, pre: u64, post: u64) -> String {
        let entry = self.boundary_entry(trigger, pre, post);
        self.append(&entry);
        entry["uuid"].as_str().unwrap_or_default().to_owned()
    }

    /// The boundary's transcript line, for a test that writes it itself.
    pub fn boundary_entry(&self, trigger: &str, pre: u64, post: u64) -> Value {
        let mut entry = Self::fixture_line("compact_auto.e251d151.jsonl", |v| {
            v["subtype"] == "compact_boundary"
        });
        entry["uuid"] = Value::from(format!("boundary-{}-{pre}", self.replies));
        entry["sessionId"] = Value::from(self.session_id.clone());
        entry["compactMetadata"]["trigger"] = Value::from(trigger);
        entry["compactMetadata"]["preTokens"] = Value::from(pre);
        entry["compactMetadata"]["postTokens"] = Value::from(post);
        entry
    }

    /// A fixture payload rewritten to this session, transcript and project;
    /// a tool hook names the latest reply's tool call.
    pub fn payload(&self, name: &str, project: &Path) -> Vec<u8> {
        let mut p = payload(name);
        p["session_id"] = Value::from(self.session_id.clone());
        p["transcript_path"] = Value::from(self.path.display().to_string());
        p["cwd"] = Value::from(project.display().to_string());
        if p["tool_use_id"].is_string() {
            p["tool_use_id"] = Value::from(self.tool_use_id());
        }
        if let Some(call) = p["tool_calls"].get_mut(0) {
            call["tool_use_id"] = Value::from(self.tool_use_id());
        }
        serde_json::to_vec(&p).unwrap()
    }
}

/// Appends one JSON line to a file (made if missing), as a harness appends
/// to its session file.
pub fn append_line(path: &Path, entry: &Value) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    writeln!(f, "{entry}").unwrap();
}

/// The JSON a hook printed, or `Null` for no output.
pub fn hook_json(out: &Output) -> Value {
    let text = stdout(out);
    if text.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).expect("hook output is JSON")
    }
}

/// The lines of a project's `.workflow/events.jsonl` of one kind.
pub fn workflow_events_of(project: &Path, kind: &str) -> Vec<Value> {
    workflow_events(project)
        .into_iter()
        .filter(|e| e["kind"] == kind)
        .collect()
}

/// The lines of a project's `.workflow/events.jsonl`.
pub fn workflow_events(project: &Path) -> Vec<Value> {
    std::fs::read_to_string(project.join(".workflow/events.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("events.jsonl line"))
        .collect()
}

/// Validates a JSON document against a JSON Schema file of the repository.
pub fn assert_valid(schema_path: &Path, document: &Value) {
    // Compiling a schema costs far more than using it: once per file.
    type Compiled = std::collections::HashMap<PathBuf, Arc<jsonschema::Validator>>;
    static COMPILED: std::sync::LazyLock<std::sync::Mutex<Compiled>> =
        std::sync::LazyLock::new(Default::default);
    let validator = COMPILED
        .lock()
        .unwrap()
        .entry(schema_path.to_path_buf())
        .or_insert_with(|| {
            let schema: Value =
                serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
            Arc::new(jsonschema::validator_for(&schema).expect("a valid schema"))
        })
        .clone();
    let errors: Vec<String> = validator
        .iter_errors(document)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "not valid against {}: {errors:#?}\n{document:#}",
        schema_path.display()
    );
}

/// `daemon/schema/context_state.schema.json`.
pub fn state_schema() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../daemon/schema/context_state.schema.json")
}

/// Fails a test that must run as root: one named `*_as_root`, which
/// tests/run leaves out (as skipped) without root, so that it never passes
/// by not running.
pub fn assert_root(why: &str) {
    // SAFETY: geteuid(2) cannot fail.
    let uid = unsafe { libc::geteuid() };
    assert_eq!(
        uid, 0,
        "needs root {why} (tests/run leaves *_as_root out without it)"
    );
}

//! One agent session told as a test: a sandbox, a project (a plain
//! directory or a real git repository), a real daemon serving it in this
//! process, and the session's transcript in Claude Code's format. Each step
//! of the story is a method, so that a test reads as what happens:
//!
//! ```ignore
//! let s = Scenario::build().repository(|repo| repo.commit_all("initial")).start();
//! s.transcript.reply(140_000);
//! let answer = s.hook("PostToolUse", "post-tool-use");
//! assert_eq!(s.status().context.unwrap().tokens_used, 140_000);
//! ```

use crate::{
    GitRepo, HookAnswer, Normalizer, SONNET, Sandbox, TestDaemon, Transcript, stderr, stdout,
};
use protocol::wire::{SessionStatus, StatusReport};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

pub struct Scenario {
    // Declared first: the daemon stops before its sandbox goes.
    daemon: Option<TestDaemon>,
    pub sb: Sandbox,
    /// Settings the daemon runs with, beside the sandbox's.
    settings: Vec<(String, serde_yaml::Value)>,
    /// The project the session works in: `proj/` in the sandbox.
    pub project: PathBuf,
    repo: Option<GitRepo>,
    /// The session's transcript.
    pub transcript: Transcript,
}

/// What a scenario starts from; [`ScenarioBuilder::start`] starts the daemon.
pub struct ScenarioBuilder {
    sb: Sandbox,
    settings: Vec<(String, serde_yaml::Value)>,
    repo: Option<GitRepo>,
    session: String,
    model: String,
}

impl Scenario {
    /// A scenario in a new sandbox: a plain project directory and session
    /// `s1-session` on Sonnet, until told otherwise.
    pub fn build() -> ScenarioBuilder {
        ScenarioBuilder::in_sandbox(Sandbox::new())
    }

    /// The project's repository; the scenario must have one.
    pub fn repo(&self) -> &GitRepo {
        self.repo
            .as_ref()
            .expect("a scenario built with .repository(…)")
    }

    /// Another session's transcript, `claude/<id>.jsonl`, on Sonnet.
    pub fn session(&self, id: &str) -> Transcript {
        Transcript::create(
            self.sb.path().join(format!("claude/{id}.jsonl")),
            id,
            SONNET,
        )
    }

    /// `hookctl hook <event>` with the fixture payload `fixture` for this
    /// session; it must exit 0. Returns its answer.
    pub fn hook(&self, fixture: &str, event: &str) -> HookAnswer {
        self.hook_of(&self.transcript, fixture, event, |_| {})
    }

    /// [`Scenario::hook`] for the session of `transcript`, with the payload
    /// changed by `edit` first.
    pub fn hook_of(
        &self,
        transcript: &Transcript,
        fixture: &str,
        event: &str,
        edit: impl FnOnce(&mut Value),
    ) -> HookAnswer {
        let mut payload: Value =
            serde_json::from_slice(&transcript.payload(fixture, &self.project)).unwrap();
        edit(&mut payload);
        let out = self.sb.hook(event, &serde_json::to_vec(&payload).unwrap());
        assert_eq!(out.status.code(), Some(0), "{event}: {}", stderr(&out));
        if event == "pre-compact" {
            HookAnswer::text_of(&out)
        } else {
            let text = stdout(&out);
            let answer = HookAnswer::parse(&text);
            assert!(
                !answer.is_text(),
                "{event} printed what is not JSON: {text}"
            );
            answer
        }
    }

    /// The agent's next turn: a reply whose context is `tokens`, then the
    /// PostToolUse hook of the tool it called. Returns the hook's answer.
    pub fn turn(&mut self, tokens: u64) -> HookAnswer {
        self.transcript.reply(tokens);
        self.hook("PostToolUse", "post-tool-use")
    }

    /// A manual compaction from `pre_tokens` down to `post_tokens`, as
    /// Claude Code runs it: PreCompact, the `compact_boundary` in the
    /// transcript, SessionStart(compact). Returns SessionStart's answer.
    pub fn compact(&self, pre_tokens: u64, post_tokens: u64) -> HookAnswer {
        self.compact_of(&self.transcript, pre_tokens, post_tokens)
    }

    /// [`Scenario::compact`] for the session of `transcript`.
    pub fn compact_of(
        &self,
        transcript: &Transcript,
        pre_tokens: u64,
        post_tokens: u64,
    ) -> HookAnswer {
        self.hook_of(
            transcript,
            "PreCompact(trigger=manual)",
            "pre-compact",
            |_| {},
        );
        transcript.boundary("manual", pre_tokens, post_tokens);
        self.hook_of(
            transcript,
            "SessionStart(source=compact)",
            "session-start",
            |_| {},
        )
    }

    /// The project's `events.jsonl` lines of this kind.
    pub fn events(&self, kind: &str) -> Vec<Value> {
        crate::workflow_events_of(&self.project, kind)
    }

    /// `hookctl status --json`: the first session's report, as hookctl
    /// reads it off the wire.
    pub fn status(&self) -> SessionStatus {
        let report = self.status_report();
        report
            .sessions
            .into_iter()
            .next()
            .expect("hookctl status --json lists a session")
    }

    /// `hookctl status --json`, the whole report.
    pub fn status_report(&self) -> StatusReport {
        let out = self.sb.hookctl(&["status", "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "hookctl status --json is not a status report ({e}): {}",
                stdout(&out)
            )
        })
    }

    /// `hookctl <args>` run in the project, its stdout and stderr (when
    /// not empty) and a failing exit code, normalized for a snapshot.
    pub fn hookctl_normalized(&self, args: &[&str]) -> String {
        let out = self.hookctl(args);
        self.normalize(&output_text(&out))
    }

    /// What varies in this scenario's outputs: the sandbox's, and the
    /// repository's commits (hookd's checkpoints included), whole or short.
    pub fn normalizer(&self) -> Normalizer {
        let normalizer = self.sb.normalizer();
        let Some(repo) = &self.repo else {
            return normalizer;
        };
        // A repository without a commit yet lists none.
        let listed = repo.command().args(["rev-list", "--all"]).output();
        let commits = listed.map(|out| stdout(&out)).unwrap_or_default();
        normalizer.with_commits(commits.split_whitespace())
    }

    /// Text normalized for this scenario's snapshots.
    pub fn normalize(&self, text: &str) -> String {
        self.normalizer().normalize(text)
    }

    /// The project's saved state, `.workflow/context_state.json`.
    pub fn state(&self) -> Value {
        crate::saved_state(&self.project)
    }

    /// The project's `.workflow/resume_prompt.md`.
    pub fn resume_prompt(&self) -> String {
        std::fs::read_to_string(self.project.join(".workflow/resume_prompt.md"))
            .expect("resume_prompt.md")
    }

    /// [`Scenario::resume_prompt`] normalized for a snapshot.
    pub fn resume_prompt_normalized(&self) -> String {
        self.normalize(&self.resume_prompt())
    }

    /// A hook's answer normalized for a snapshot.
    pub fn answer_normalized(&self, answer: &HookAnswer) -> String {
        answer.normalized(&self.normalizer())
    }

    /// `hookctl <args>` run in the project.
    pub fn hookctl(&self, args: &[&str]) -> Output {
        self.sb.hookctl_in(&self.project, args)
    }

    /// The in-process daemon's engine.
    pub fn engine(&self) -> &std::sync::Arc<hookd::engine::Engine> {
        self.daemon.as_ref().expect("a running daemon").engine()
    }

    /// Stops the daemon and starts another on the same sandbox.
    pub fn restart_daemon(&mut self) {
        self.daemon.take().expect("a running daemon").stop();
        self.daemon = Some(TestDaemon::start(daemon_options(&self.sb, &self.settings)));
    }
}

fn daemon_options(sb: &Sandbox, settings: &[(String, serde_yaml::Value)]) -> hookd::DaemonOptions {
    settings
        .iter()
        .fold(sb.daemon_options(), |options, (key, value)| {
            options.set(key, value.clone())
        })
}

impl ScenarioBuilder {
    /// A scenario in a sandbox the test has prepared (a memory to load, say).
    pub fn in_sandbox(sb: Sandbox) -> ScenarioBuilder {
        ScenarioBuilder {
            sb,
            settings: Vec::new(),
            repo: None,
            session: "s1-session".into(),
            model: SONNET.into(),
        }
    }

    /// The project is a git repository; `prepare` makes its history and
    /// the work not committed yet.
    pub fn repository(mut self, prepare: impl FnOnce(&GitRepo)) -> ScenarioBuilder {
        let repo = GitRepo::init(&self.project());
        prepare(&repo);
        self.repo = Some(repo);
        self
    }

    /// The session's id (its transcript is `claude/<id>.jsonl`).
    pub fn session(mut self, id: &str) -> ScenarioBuilder {
        self.session = id.into();
        self
    }

    pub fn model(mut self, model: &str) -> ScenarioBuilder {
        self.model = model.into();
        self
    }

    /// A daemon setting (a configuration key and its value).
    pub fn setting(mut self, key: &str, value: impl Into<serde_yaml::Value>) -> ScenarioBuilder {
        self.settings.push((key.into(), value.into()));
        self
    }

    fn project(&self) -> PathBuf {
        self.sb.path().join("proj")
    }

    /// Starts the daemon; the transcript is empty until the test writes it.
    pub fn start(self) -> Scenario {
        let project = self.project();
        std::fs::create_dir_all(&project).unwrap();
        let transcript = Transcript::create(
            self.sb
                .path()
                .join(format!("claude/{}.jsonl", self.session)),
            &self.session,
            &self.model,
        );
        let daemon = TestDaemon::start(daemon_options(&self.sb, &self.settings));
        Scenario {
            daemon: Some(daemon),
            sb: self.sb,
            settings: self.settings,
            project,
            repo: self.repo,
            transcript,
        }
    }
}

/// A command's stdout, then its stderr and exit code when they say
/// something: the whole of what a person saw.
pub fn output_text(out: &std::process::Output) -> String {
    let mut text = stdout(out);
    let err = stderr(out);
    if !err.is_empty() {
        text.push_str("--- stderr\n");
        text.push_str(&err);
    }
    if !out.status.success() {
        let code = out
            .status
            .code()
            .map_or("by a signal".into(), |c| c.to_string());
        text.push_str(&format!("--- exit {code}\n"));
    }
    text
}

/// The saved state of a project, `.workflow/context_state.json`.
pub fn saved_state(project: &Path) -> Value {
    let text = std::fs::read_to_string(project.join(".workflow/context_state.json"))
        .expect("context_state.json");
    serde_json::from_str(&text).unwrap()
}

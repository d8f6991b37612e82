//! The messages hookctl and hookd exchange.
//!
//! A connection starts with the client's [`Hello`]; the daemon answers with
//! its own `Hello` (or an error when the protocol numbers differ), and then
//! each [`Request`] gets exactly one [`Response`]. New fields carry
//! `#[serde(default)]` so that a field added within one protocol number does
//! not break older peers.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// First message on every connection, in both directions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// Crate version of the sender, for messages to people.
    pub version: String,
    /// Wire protocol number; both sides must have the same.
    pub protocol: u32,
}

impl Hello {
    pub fn current() -> Self {
        Hello {
            version: crate::VERSION.to_owned(),
            protocol: crate::PROTOCOL_VERSION,
        }
    }
}

/// The agent harnesses hookd understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Harness {
    ClaudeCode,
    Codex,
    GeminiCli,
    QwenCode,
    CopilotCli,
    /// One word, as OpenCode spells itself.
    #[serde(rename = "opencode")]
    OpenCode,
    Cursor,
}

/// Each harness, its name on the wire and the command line (as serde
/// writes it), and its name for people. Every list of harnesses comes from here.
const HARNESSES: [(Harness, &str, &str); 7] = [
    (Harness::ClaudeCode, "claude-code", "Claude Code"),
    (Harness::Codex, "codex", "Codex"),
    (Harness::GeminiCli, "gemini-cli", "Gemini CLI"),
    (Harness::QwenCode, "qwen-code", "Qwen Code"),
    (Harness::CopilotCli, "copilot-cli", "Copilot CLI"),
    (Harness::OpenCode, "opencode", "OpenCode"),
    (Harness::Cursor, "cursor", "Cursor"),
];

impl Harness {
    pub const ALL: [Harness; HARNESSES.len()] = {
        let mut all = [Harness::ClaudeCode; HARNESSES.len()];
        let mut i = 0;
        while i < all.len() {
            all[i] = HARNESSES[i].0;
            i += 1;
        }
        all
    };

    fn row(self) -> &'static (Harness, &'static str, &'static str) {
        // Every harness has its row: the test below checks the table.
        &HARNESSES[self as usize]
    }

    /// `claude-code`: the name on the wire and on hookctl's command line.
    pub fn as_str(self) -> &'static str {
        self.row().1
    }

    /// `Claude Code`: the name a person knows.
    pub fn name(self) -> &'static str {
        self.row().2
    }

    pub fn parse(name: &str) -> Option<Harness> {
        Harness::ALL.into_iter().find(|h| h.as_str() == name)
    }
}

/// Whether a hook payload is Cursor's by its own top-level fields:
/// `cursor_version`, or `conversation_id` with `workspace_roots`. Claude
/// Code sends none of them, and Cursor runs Claude Code's hooks with its
/// own payloads, so this (never the environment, which a Claude Code
/// started from Cursor's terminal shares) says whose a payload is.
pub fn is_cursor_payload(
    cursor_version: Option<&serde_json::Value>,
    conversation_id: Option<&serde_json::Value>,
    workspace_roots: Option<&serde_json::Value>,
) -> bool {
    cursor_version.is_some_and(serde_json::Value::is_string)
        || (conversation_id.is_some_and(serde_json::Value::is_string)
            && workspace_roots.is_some_and(serde_json::Value::is_array))
}

impl std::fmt::Display for Harness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Environment variables of a hook process that change what hookd decides.
/// `HOOKD_*` variables (configuration overrides) are forwarded as well.
pub const FORWARDED_ENV: &[&str] = &[
    "CLAUDE_PROJECT_DIR",
    "CLAUDE_CODE_SESSION_ID",
    "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE",
    "CLAUDE_CODE_AUTO_COMPACT_WINDOW",
    "CLAUDE_CODE_MAX_CONTEXT_TOKENS",
    "DISABLE_AUTO_COMPACT",
    "DISABLE_COMPACT",
    "CODEX_HOME",
    "GEMINI_PROJECT_DIR",
    "GEMINI_CLI_TRUST_WORKSPACE",
    "GEMINI_RESTRICTED_MODE",
    "GEMINI_CLI_TRUSTED_FOLDERS_PATH",
    "COPILOT_HOME",
];

/// Whether an environment variable travels with a request.
pub fn is_forwarded_env(name: &str) -> bool {
    FORWARDED_ENV.contains(&name) || name.starts_with("HOOKD_")
}

/// One request. Externally tagged, so raw payloads can ride inside.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    /// A harness ran a hook: decide what the harness should see.
    Hook(HookRequest),
    /// The daemon and its sessions.
    Status(StatusQuery),
    /// Stop the daemon: stop accepting, drain, clean up.
    Shutdown,
    /// Liveness check, answered with [`Response::Pong`].
    Ping,
    /// Like `Status`, but the daemon keeps the connection and sends a new
    /// `Status` whenever a session changes.
    Watch(StatusQuery),
    /// Claude Code's statusLine input: the daemon records the window it
    /// names and answers with its view of the session's context.
    StatusLine(StatusLineRequest),
    /// Record a decision, blocker, phase, next action or note for a project.
    Record(RecordRequest),
    /// Capture the workflow state now (and checkpoint, if asked).
    Save(SaveQuery),
    /// The project's git checkpoints, newest first.
    Checkpoints(CheckpointQuery),
    /// One checkpoint in detail.
    CheckpointShow(CheckpointRev),
    /// Put files from a checkpoint back into the working tree.
    CheckpointRestore(RestoreQuery),
    /// Load, validate and render the saved state as a resume prompt.
    Resume(ResumeQuery),
    /// Load and validate the saved state, without rendering it.
    Validate(ResumeQuery),
    /// Score the project's files for a task and fit them to the context budget.
    ContextBudget(crate::budget::BudgetQuery),
    /// One file's relevance to a task, factor by factor.
    ContextScore(crate::budget::ScoreQuery),
    /// A file at a summary level.
    Summarize(crate::budget::SummaryQuery),
    /// Context usage, the latest budget record and the context transitions.
    ContextReport(crate::budget::ReportQuery),
    /// Cross-task memory: record a reflection on the current task.
    Reflect(crate::memory::ReflectRequest),
    /// Cross-task memory: describe, close or show the current task.
    Task(crate::memory::TaskRequest),
    /// Cross-task memory: list, show, search, forget stored tasks; statistics.
    Memory(crate::memory::MemoryRequest),
    /// Sync through git: push, pull, or how it goes.
    Sync(crate::sync::SyncRequest),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ResumeQuery {
    pub project: PathBuf,
    /// Whose state (default: whatever the project saved last).
    #[serde(default)]
    pub session: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    Pass,
    Warn,
    Fail,
}

/// One check of a saved state against the repository as it is now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    /// `git_status_matches`, `workflow_exists`, `task_valid`.
    pub check: String,
    pub status: CheckStatus,
    pub detail: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ResumeReport {
    #[serde(default)]
    pub state_file: Option<PathBuf>,
    #[serde(default)]
    pub captured_at: Option<String>,
    #[serde(default)]
    pub checks: Vec<Check>,
    /// The resume prompt (for `Resume`).
    #[serde(default)]
    pub prompt: Option<String>,
    /// A few lines for a person: progress, next action, files to read, warnings.
    pub summary: String,
}

/// Something an agent or a person wants the next capture to know.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    Decision {
        topic: String,
        decision: String,
        #[serde(default)]
        reasoning: Option<String>,
    },
    Blocker {
        issue: String,
        /// `unresolved` (default), `workaround`, `resolved`.
        #[serde(default)]
        status: Option<String>,
        #[serde(default)]
        notes: Option<String>,
    },
    Phase {
        name: String,
    },
    Next {
        action: String,
        #[serde(default)]
        target: Option<String>,
        /// 1 is most urgent.
        #[serde(default)]
        priority: Option<u32>,
        /// Files to read before doing it.
        #[serde(default)]
        needs: Vec<String>,
    },
    /// A recorded next action is done.
    NextDone {
        action: String,
    },
    /// Forget all recorded next actions.
    NextClear,
    Note {
        text: String,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RecordRequest {
    pub project: PathBuf,
    #[serde(default)]
    pub session: Option<String>,
    pub record: Record,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SaveQuery {
    pub project: PathBuf,
    /// The session to capture (default: the project's most recent one).
    #[serde(default)]
    pub session: Option<String>,
    pub checkpoint: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckpointQuery {
    pub project: PathBuf,
    #[serde(default)]
    pub limit: Option<usize>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckpointRev {
    pub project: PathBuf,
    /// A commit id (or unique prefix), or any revision git understands.
    pub rev: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RestoreQuery {
    pub project: PathBuf,
    pub rev: String,
    /// Only these paths (relative to the repository root); all when empty.
    #[serde(default)]
    pub paths: Vec<PathBuf>,
    /// Overwrite uncommitted changes.
    #[serde(default)]
    pub force: bool,
}

/// What a save did.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SaveSummary {
    #[serde(default)]
    pub session: Option<String>,
    #[serde(default)]
    pub state_file: Option<PathBuf>,
    #[serde(default)]
    pub resume_prompt_file: Option<PathBuf>,
    /// The checkpoint commit.
    #[serde(default)]
    pub checkpoint: Option<String>,
    #[serde(default)]
    pub checkpoint_ref: Option<String>,
    /// Why there is no new checkpoint (nothing changed, not a repository, ...).
    #[serde(default)]
    pub checkpoint_note: Option<String>,
    /// Steps that failed.
    #[serde(default)]
    pub problems: Vec<String>,
    /// Steps left out by design, each with why.
    #[serde(default)]
    pub skipped: Vec<String>,
    /// What is wrong around the save (a broken configuration file, and
    /// what was used instead).
    #[serde(default)]
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointSummary {
    pub sha: String,
    pub reference: String,
    pub time_ms: u64,
    #[serde(default)]
    pub session: Option<String>,
    #[serde(default)]
    pub trigger: Option<String>,
    #[serde(default)]
    pub tokens: Option<String>,
    /// The HEAD the checkpoint was taken on.
    #[serde(default)]
    pub base: Option<String>,
    /// Files that differ from the checkpoint's base.
    pub files_changed: usize,
    /// The machine that made it, for a checkpoint another machine synced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    pub path: String,
    /// `created`, `modified`, `deleted`, `renamed`, `type changed`.
    pub action: String,
    #[serde(default)]
    pub added: Option<usize>,
    #[serde(default)]
    pub removed: Option<usize>,
    /// One line: `+12 −3 lines`, `binary`, `renamed from x`.
    pub summary: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckpointDetail {
    pub summary: CheckpointSummary,
    pub message: String,
    pub files: Vec<FileChange>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RestoreSummary {
    pub restored: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct StatusLineRequest {
    /// The statusLine JSON, unparsed.
    pub payload: Box<RawValue>,
    /// Allow-listed environment (see [`FORWARDED_ENV`]).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// What a hook process hands over.
#[derive(Debug, Serialize, Deserialize)]
pub struct HookRequest {
    pub harness: Harness,
    /// The event as given on hookctl's command line (kebab case). `None`: the
    /// payload's `hook_event_name` decides.
    #[serde(default)]
    pub event: Option<String>,
    /// The harness's stdin JSON object, unparsed.
    pub payload: Box<RawValue>,
    /// Allow-listed environment of the hook (see [`FORWARDED_ENV`]).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// hookctl's working directory, for payloads that carry no `cwd`.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StatusQuery {
    /// Only this session (an id or a unique prefix of one).
    #[serde(default)]
    pub session: Option<String>,
}

/// One reply.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Response {
    /// The daemon's half of the handshake.
    Hello(Hello),
    /// What hookctl writes back to the harness.
    Hook(HookReply),
    /// Answer to [`Request::Status`].
    Status(Box<StatusReport>),
    /// Answer to [`Request::Ping`].
    Pong,
    /// Answer to [`Request::StatusLine`].
    Context(Box<ContextStatus>),
    /// Answer to [`Request::Save`].
    Saved(Box<SaveSummary>),
    /// Answer to [`Request::Checkpoints`].
    Checkpoints(Vec<CheckpointSummary>),
    /// Answer to [`Request::CheckpointShow`].
    Checkpoint(Box<CheckpointDetail>),
    /// Answer to [`Request::CheckpointRestore`].
    Restored(RestoreSummary),
    /// Answer to [`Request::Resume`] and [`Request::Validate`].
    Resume(Box<ResumeReport>),
    /// Answer to [`Request::ContextBudget`].
    Budget(Box<crate::budget::BudgetPlan>),
    /// Answer to [`Request::ContextScore`].
    Score(Box<crate::budget::FileScore>),
    /// Answer to [`Request::Summarize`].
    Summary(Box<crate::budget::SummaryReply>),
    /// Answer to [`Request::ContextReport`].
    Report(Box<crate::budget::ContextReport>),
    /// The request was done and has nothing to report.
    Ok,
    /// The request failed.
    Error(ErrorReply),
    /// Answer to [`Request::Reflect`], [`Request::Task`] and `memory show`: a task.
    Task(Box<crate::memory::TaskReport>),
    /// Answer to `memory list`, `search` and `forget` (the forgotten task).
    MemoryList(Box<crate::memory::MemoryList>),
    /// Answer to `memory stats`.
    MemoryStats(Box<crate::memory::MemoryStats>),
    /// Answer to [`Request::Sync`].
    Sync(Box<crate::sync::SyncReport>),
}

/// What the harness sees from a hook.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookReply {
    #[serde(default)]
    pub stdout: String,
    #[serde(default)]
    pub stderr: String,
    #[serde(default)]
    pub exit_code: i32,
}

impl HookReply {
    /// No output, exit 0: the harness carries on as if there were no hook.
    pub fn silent() -> Self {
        HookReply::default()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The peers speak different protocol numbers.
    ProtocolMismatch,
    /// The request could not be understood.
    BadRequest,
    /// A hook payload was not what the harness should send.
    BadPayload,
    /// The thing asked about does not exist.
    NotFound,
    /// The configuration is invalid.
    Config,
    /// The daemon is shutting down or at its connection limit.
    Unavailable,
    /// Anything else; the message says what.
    Internal,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct ErrorReply {
    pub kind: ErrorKind,
    pub message: String,
}

impl ErrorReply {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ErrorReply {
            kind,
            message: message.into(),
        }
    }
}

/// The daemon and its sessions, for `hookctl status`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StatusReport {
    pub daemon: DaemonInfo,
    #[serde(default)]
    pub sessions: Vec<SessionStatus>,
    /// Sync, when `sync.remote` or `sync.memory_remote` is set.
    #[serde(default)]
    pub sync: Option<crate::sync::SyncReport>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DaemonInfo {
    pub version: String,
    pub protocol: u32,
    pub pid: u32,
    /// Unix time in milliseconds.
    pub started_at_ms: u64,
    pub uptime_secs: u64,
    pub socket: PathBuf,
    pub state_dir: PathBuf,
    #[serde(default)]
    pub log_dir: Option<PathBuf>,
    /// Hook events handled since start.
    #[serde(default)]
    pub events_handled: u64,
    /// Problems the daemon wants a person to see (bad config, watch limits).
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// One agent session as the daemon knows it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SessionStatus {
    pub harness: String,
    pub session_id: String,
    #[serde(default)]
    pub project_dir: Option<PathBuf>,
    #[serde(default)]
    pub transcript_path: Option<PathBuf>,
    /// Kebab-case name of the latest event.
    #[serde(default)]
    pub last_event: Option<String>,
    #[serde(default)]
    pub last_event_at_ms: u64,
    #[serde(default)]
    pub events_seen: u64,
    #[serde(default)]
    pub ended: bool,
    #[serde(default)]
    pub model: Option<String>,
    /// How full the context is; `None` until a transcript or statusLine said.
    #[serde(default)]
    pub context: Option<ContextStatus>,
    /// Context epochs: 1 until the first compaction, then one more each time.
    #[serde(default)]
    pub epoch: u32,
    /// Threshold levels already fired in this epoch.
    #[serde(default)]
    pub fired: Vec<f64>,
    #[serde(default)]
    pub last_save: Option<Mark>,
    #[serde(default)]
    pub last_checkpoint: Option<Mark>,
    /// Whether the last resume prompt was seen to reach the model.
    #[serde(default)]
    pub resume: Option<Mark>,
    /// Things a person should know (a missing transcript, say).
    #[serde(default)]
    pub notes: Vec<String>,
    /// The context over the session's recent replies, oldest first.
    #[serde(default)]
    pub history: Vec<ContextPoint>,
    /// Whether the agent followed each resume prompt, by compaction, oldest first.
    #[serde(default)]
    pub resumes_followed: Vec<ResumeFollowed>,
}

/// Whether the agent's first tool calls after a resume prompt arrived
/// followed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResumeFollowed {
    /// The epoch the compaction began.
    pub epoch: u32,
    /// `None` while no tool call decided it.
    pub followed: Option<bool>,
    /// What matched, or the first tool call when nothing did.
    #[serde(default)]
    pub detail: Option<String>,
}

impl ResumeFollowed {
    pub fn words(&self) -> &'static str {
        crate::budget::followed_words(self.followed)
    }
}

/// `after compaction N: <words> (<detail>)`, one resume prompt's verdict as
/// `hookctl status` and `context-report` print it. An epoch counts from 1
/// and each compaction starts the next, so epoch N follows compaction N−1.
pub fn followed_line(epoch: Option<u32>, words: &str, detail: Option<&str>) -> String {
    let when = match epoch {
        Some(epoch) => format!("after compaction {}", epoch.saturating_sub(1)),
        None => "after a compaction".to_owned(),
    };
    let detail = detail.map(|d| format!(" ({d})")).unwrap_or_default();
    format!("{when}: {words}{detail}")
}

/// One reading of a session's context, for the picture of its recent turns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextPoint {
    pub at_ms: u64,
    pub tokens: u64,
    /// What happened at this reading, if anything worth marking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark: Option<PointMark>,
}

/// What happened at a reading. Ordered by how much it says: a point keeps
/// the strongest of its marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PointMark {
    /// The workflow state was saved.
    Save,
    /// The state was saved and the working tree checkpointed.
    Checkpoint,
    /// The context was compacted just before this reading.
    Compaction,
}

/// How full one session's context is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextStatus {
    pub tokens_used: u64,
    /// Where the harness compacts: the thresholds' denominator.
    pub tokens_max: u64,
    /// The model's whole window (the statusLine's denominator).
    pub window_tokens: u64,
    /// `tokens_used / tokens_max` (may exceed 1).
    pub pressure: f64,
    /// `tokens_used / window_tokens`.
    pub window_fraction: f64,
    /// How `tokens_max` was found.
    pub basis: String,
    /// Where `tokens_used` comes from: `reply`, `compaction`, `statusline`.
    pub source: String,
    pub advice: crate::pressure::Advice,
    pub updated_at_ms: u64,
    /// The latest figure could not be used (why); the others are then the
    /// last good figure's, and no threshold fires until a good one comes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid: Option<String>,
    /// Where the harness compacts cannot be known yet (`tokens_max` is then
    /// the window, a stand-in): no level fires, and no screen says the
    /// session does not compact by itself.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub point_unknown: bool,
}

/// Something that happened at a time: a save, a checkpoint, a resume.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mark {
    pub at_ms: u64,
    /// What caused it (`threshold 0.80`, `pre-compact auto`, `manual`).
    pub what: String,
    pub ok: bool,
    /// A commit, a file, or what went wrong.
    #[serde(default)]
    pub detail: Option<String>,
    /// A step left out by design, and why (it went well all the same).
    #[serde(default)]
    pub skipped: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_takes_only_its_own_answer_and_says_what_came_instead() {
        let error = Response::Error(ErrorReply::new(ErrorKind::NotFound, "no such checkpoint"));
        assert!(matches!(
            SaveQuery::reply(Response::Pong),
            Err(Response::Pong)
        ));
        let Err(other) = StatusQuery::reply(error) else {
            panic!("an error is not a status");
        };
        assert_eq!(other.describe(), "an error: no such checkpoint");
        assert!(matches!(
            Validate(ResumeQuery {
                project: "/p".into(),
                session: None
            })
            .request(),
            Request::Validate(_)
        ));
        assert!(Validate::reply(Response::Resume(Box::default())).is_ok());
    }
    use crate::frame::{decode, encode};

    #[test]
    fn hook_request_keeps_the_payload_byte_for_byte() {
        let payload = r#"{"session_id": "s1",  "hook_event_name":"Stop"}"#;
        let req = Request::Hook(HookRequest {
            harness: Harness::ClaudeCode,
            event: Some("stop".into()),
            payload: RawValue::from_string(payload.into()).unwrap(),
            env: BTreeMap::new(),
            cwd: None,
        });
        let frame = encode(&req).unwrap();
        let Request::Hook(back) = decode::<Request>(&frame[4..]).unwrap() else {
            panic!("not a hook")
        };
        assert_eq!(back.payload.get(), payload);
        assert_eq!(back.harness, Harness::ClaudeCode);
    }

    #[test]
    fn harness_names_round_trip() {
        let distinct: std::collections::HashSet<Harness> = Harness::ALL.into_iter().collect();
        assert_eq!(distinct.len(), Harness::ALL.len());
        for h in Harness::ALL {
            assert_eq!(h.row().0, h, "the table's rows follow the enum's order");
            assert_eq!(Harness::parse(h.as_str()), Some(h));
            assert_eq!(
                serde_json::to_string(&h).unwrap(),
                format!("\"{}\"", h.as_str())
            );
        }
    }

    #[test]
    fn a_status_without_history_still_reads() {
        // What a daemon from before the history sent.
        let old = r#"{"harness":"claude-code","session_id":"s"}"#;
        let status: SessionStatus = serde_json::from_str(old).unwrap();
        assert!(status.history.is_empty());
        let point: ContextPoint =
            serde_json::from_str(r#"{"at_ms":1,"tokens":2,"mark":"checkpoint"}"#).unwrap();
        assert_eq!(point.mark, Some(PointMark::Checkpoint));
        assert!(
            PointMark::Compaction > PointMark::Checkpoint
                && PointMark::Checkpoint > PointMark::Save
        );
    }

    #[test]
    fn forwarded_env_is_an_allow_list() {
        assert!(is_forwarded_env("CLAUDE_PROJECT_DIR"));
        assert!(is_forwarded_env("HOOKD_CLIENT__HOOK_TIMEOUT_MS"));
        assert!(!is_forwarded_env("ANTHROPIC_API_KEY"));
        assert!(!is_forwarded_env("PATH"));
    }
}

/// A request whose answer is one kind of [`Response`]: a hookctl command
/// asks with [`Call::request`] and gets [`Call::Reply`] or an error that
/// says what came back instead.
pub trait Call {
    type Reply;
    /// What was asked, for messages: "a save", "a status request".
    const WHAT: &'static str;
    fn request(self) -> Request;
    /// The answer, or the response that came instead of it.
    fn reply(response: Response) -> Result<Self::Reply, Response>;
}

/// `Call` for requests with one query type and one answer.
macro_rules! calls {
    ($($query:ty => $request:ident, $response:ident($reply:ty), $what:literal;)*) => {$(
        impl Call for $query {
            type Reply = $reply;
            const WHAT: &'static str = $what;
            fn request(self) -> Request {
                Request::$request(self)
            }
            fn reply(response: Response) -> Result<$reply, Response> {
                match response {
                    Response::$response(reply) => Ok(reply),
                    other => Err(other),
                }
            }
        }
    )*};
}

calls! {
    StatusQuery => Status, Status(Box<StatusReport>), "a status request";
    SaveQuery => Save, Saved(Box<SaveSummary>), "a save";
    CheckpointQuery => Checkpoints, Checkpoints(Vec<CheckpointSummary>), "a checkpoint list";
    CheckpointRev => CheckpointShow, Checkpoint(Box<CheckpointDetail>), "a checkpoint request";
    RestoreQuery => CheckpointRestore, Restored(RestoreSummary), "a restore";
    ResumeQuery => Resume, Resume(Box<ResumeReport>), "a resume";
    crate::budget::BudgetQuery => ContextBudget, Budget(Box<crate::budget::BudgetPlan>), "a context budget request";
    crate::budget::ScoreQuery => ContextScore, Score(Box<crate::budget::FileScore>), "a score request";
    crate::budget::SummaryQuery => Summarize, Summary(Box<crate::budget::SummaryReply>), "a summary request";
    crate::budget::ReportQuery => ContextReport, Report(Box<crate::budget::ContextReport>), "a context report request";
    crate::memory::ReflectRequest => Reflect, Task(Box<crate::memory::TaskReport>), "a reflection";
    crate::memory::TaskRequest => Task, Task(Box<crate::memory::TaskReport>), "a task request";
    crate::sync::SyncRequest => Sync, Sync(Box<crate::sync::SyncReport>), "a sync request";
}

/// `hookctl validate`: the checks of a resume, without its prompt.
pub struct Validate(pub ResumeQuery);

impl Call for Validate {
    type Reply = Box<ResumeReport>;
    const WHAT: &'static str = "a validation";
    fn request(self) -> Request {
        Request::Validate(self.0)
    }
    fn reply(response: Response) -> Result<Self::Reply, Response> {
        ResumeQuery::reply(response)
    }
}

impl Response {
    /// What kind of answer this is, for messages about an unexpected one.
    pub fn describe(&self) -> String {
        let name = match self {
            Response::Hello(_) => "a handshake",
            Response::Hook(_) => "a hook answer",
            Response::Status(_) => "a status report",
            Response::Pong => "a pong",
            Response::Context(_) => "a context figure",
            Response::Saved(_) => "a save summary",
            Response::Checkpoints(_) => "a checkpoint list",
            Response::Checkpoint(_) => "a checkpoint",
            Response::Restored(_) => "a restore summary",
            Response::Resume(_) => "a resume report",
            Response::Budget(_) => "a context budget",
            Response::Score(_) => "a file score",
            Response::Summary(_) => "a file summary",
            Response::Report(_) => "a context report",
            Response::Ok => "a plain OK",
            Response::Error(e) => return format!("an error: {}", e.message),
            Response::Task(_) => "a task",
            Response::MemoryList(_) => "a memory list",
            Response::MemoryStats(_) => "memory statistics",
            Response::Sync(_) => "a sync report",
        };
        name.to_owned()
    }
}

//! The engine shell around the session machine, with a real project
//! directory and a real session file: how often a unit of work takes the
//! registry's lock, and the order in which it carries out what the machine
//! decided.

use super::*;
use crate::events::{LogEvent, Resume};
use protocol::config::{Effective, Layers};
use protocol::wire::{Harness, HookReply, HookRequest, StatusLineRequest};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

const SESSION: &str = "s1";

struct Setup {
    _dir: tempfile::TempDir,
    engine: Arc<Engine>,
    project: PathBuf,
    transcript: PathBuf,
    replies: u32,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("proj");
    let state_dir = dir.path().join("state");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&state_dir).unwrap();
    let transcript = dir.path().join("s1.jsonl");
    std::fs::write(&transcript, "").unwrap();
    let identity = Identity {
        pid: std::process::id(),
        started_at_ms: now_ms(),
        socket: dir.path().join("hookd.sock"),
        state_dir,
        log_dir: None,
        test_events: Default::default(),
    };
    // No user file: only the defaults and each hook's environment.
    let settings = Settings::new(Layers::default(), Effective::defaults(), None);
    let engine = Arc::new(Engine::new(identity, settings, Shutdown::default()));
    Setup {
        _dir: dir,
        engine,
        project,
        transcript,
        replies: 0,
    }
}

impl Setup {
    fn key(&self) -> SessionKey {
        SessionKey {
            harness: Harness::ClaudeCode,
            id: SESSION.into(),
        }
    }

    fn append(&self, line: Value) {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.transcript)
            .unwrap();
        writeln!(file, "{line}").unwrap();
    }

    /// A reply whose context is `tokens`, calling one tool on `target`.
    fn reply(&mut self, tokens: u64, target: &str) {
        self.replies += 1;
        let n = self.replies;
        self.append(json!({
            "type": "assistant",
            "sessionId": SESSION,
            "uuid": format!("reply-{n}"),
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {
                "id": format!("msg_{n}"),
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "tool_use", "id": format!("toolu_{n}"), "name": "Read", "input": {"file_path": target}}],
                "usage": {"input_tokens": tokens, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 5},
            },
        }));
    }

    /// Runs one Claude Code hook; returns its answer and how many times it
    /// took the registry's lock.
    async fn hook(&self, event: &str, extra: Value) -> (HookReply, u64) {
        let mut payload = json!({
            "session_id": SESSION,
            "transcript_path": self.transcript,
            "cwd": self.project,
            "hook_event_name": event,
        });
        if let (Value::Object(payload), Value::Object(extra)) = (&mut payload, extra) {
            payload.extend(extra);
        }
        let request = Request::Hook(HookRequest {
            harness: Harness::ClaudeCode,
            event: None,
            payload: serde_json::value::to_raw_value(&payload).unwrap(),
            env: environment(),
            cwd: None,
        });
        settle(&self.engine).await;
        let before = self.locks();
        let Response::Hook(reply) = self.engine.handle(request, None).await else {
            panic!("not a hook answer")
        };
        (reply, self.locks() - before)
    }

    fn locks(&self) -> u64 {
        self.engine.registry_locks.load(Ordering::Relaxed)
    }

    fn session<T>(&self, f: impl FnOnce(&Session) -> T) -> T {
        f(self
            .engine
            .registry()
            .get(&self.key())
            .expect("the session"))
    }

    fn events(&self) -> Vec<LogEvent> {
        let file = self.project.join(".workflow").join("events.jsonl");
        let text = std::fs::read_to_string(file).unwrap_or_default();
        text.lines()
            .filter_map(|line| LogEvent::read(line.as_bytes()))
            .map(|line| line.event)
            .collect()
    }
}

/// The person's memory stays out of these tests.
fn environment() -> BTreeMap<String, String> {
    [("HOOKD_MEMORY__ENABLED".to_owned(), "false".to_owned())].into()
}

/// Waits until work the last request left running (a new session's flush)
/// has stopped taking the lock for a while. The tests stay below the
/// levels that save in the background, whose lock could come at any time.
async fn settle(engine: &Engine) {
    let mut seen = engine.registry_locks.load(Ordering::Relaxed);
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = engine.registry_locks.load(Ordering::Relaxed);
        if now == seen {
            return;
        }
        seen = now;
    }
}

fn context(reply: &HookReply) -> String {
    serde_json::from_str::<Value>(&reply.stdout)
        .map(|v| v["hookSpecificOutput"]["additionalContext"].to_string())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_quiet_hook_takes_the_registry_lock_once() {
    let mut t = setup();
    t.hook("SessionStart", json!({"source": "startup"})).await;
    t.reply(20_000, "src/a.rs");
    let (reply, locks) = t.hook("PostToolUse", json!({"tool_name": "Read"})).await;
    assert_eq!(locks, 1);
    assert!(!context(&reply).contains("Context at"), "{reply:?}");
    assert_eq!(
        t.session(|s| s.usage.as_ref().map(|u| u.tokens)),
        Some(20_000)
    );
}

#[tokio::test]
async fn words_decided_under_the_lock_are_said_and_their_line_is_written_before_the_answer() {
    let mut t = setup();
    t.hook("SessionStart", json!({"source": "startup"})).await;
    // 75% of the way to Claude Code's compaction point for a 200k window.
    t.reply(125_000, "src/a.rs");
    let (reply, locks) = t.hook("PostToolUse", json!({"tool_name": "Read"})).await;
    assert_eq!(locks, 1, "a level that only warns saves nothing");
    assert!(context(&reply).contains("Context at 70%"), "{reply:?}");
    assert!(
        t.events()
            .iter()
            .any(|e| matches!(e, LogEvent::Threshold { level, .. } if *level == 0.7)),
        "{:?}",
        t.events()
    );
}

#[tokio::test]
async fn a_pre_compact_save_comes_before_the_answer_and_a_resume_follows_it() {
    let mut t = setup();
    t.hook("SessionStart", json!({"source": "startup"})).await;
    t.reply(125_000, "src/a.rs");
    t.hook("PostToolUse", json!({"tool_name": "Read"})).await;

    let (reply, locks) = t.hook("PreCompact", json!({"trigger": "manual"})).await;
    assert!(
        locks <= 2,
        "PreCompact took the registry's lock {locks} times"
    );
    // The save finished before the answer, which carries its instructions.
    let state = t.project.join(".workflow").join(crate::state::STATE_FILE);
    assert!(state.is_file());
    assert!(!reply.stdout.is_empty(), "{reply:?}");
    let (save, token) = t.session(|s| (s.last_save.clone(), s.summary_token.clone()));
    assert_eq!(save.map(|m| m.what), Some("pre-compact manual".to_owned()));
    assert!(token.is_some(), "the compaction's summary token is kept");

    let (reply, locks) = t.hook("SessionStart", json!({"source": "compact"})).await;
    assert!(
        locks <= 2,
        "SessionStart(compact) took the lock {locks} times"
    );
    let (epoch, pending) = t.session(|s| (s.epoch, s.resume_pending.clone()));
    let pending = pending.expect("the prompt waits for its arrival check");
    assert!(context(&reply).contains(&pending.marker), "{reply:?}");
    // The line names the epoch the session took the prompt in.
    let resumed = t.events().into_iter().find_map(|e| match e {
        LogEvent::Resume(Resume::Injected { epoch, marker, .. }) => Some((epoch, marker)),
        _ => None,
    });
    assert_eq!(resumed, Some((epoch, pending.marker.clone())));
    assert_eq!(epoch, 2);
}

#[tokio::test]
async fn an_arrived_prompt_is_judged_by_the_calls_after_it_in_the_same_hook() {
    let mut t = setup();
    t.hook("SessionStart", json!({"source": "startup"})).await;
    t.reply(125_000, "src/a.rs");
    t.hook("PreCompact", json!({"trigger": "manual"})).await;
    let (reply, _) = t.hook("SessionStart", json!({"source": "compact"})).await;
    let marker = t.session(|s| s.resume_pending.clone().unwrap().marker);
    // Claude Code writes the injected context, then the agent's next call.
    t.append(json!({
        "type": "attachment",
        "attachment": {"type": "hook_additional_context", "content": [context(&reply)]},
    }));
    t.reply(30_000, "src/a.rs");

    let (reply, locks) = t.hook("PostToolUse", json!({"tool_name": "Read"})).await;
    assert!(
        locks <= 2,
        "the arrival and follow checks took {locks} locks"
    );
    assert!(
        !context(&reply).contains(&marker),
        "an arrived prompt is not injected again"
    );
    let (pending, followed, resume) = t.session(|s| {
        (
            s.resume_pending.clone(),
            s.followed.clone(),
            s.resume.clone(),
        )
    });
    assert_eq!(pending, None);
    assert_eq!(resume.map(|m| m.what), Some("arrived".to_owned()));
    assert_eq!(
        followed.len(),
        1,
        "judged in the hook that found it arrived"
    );
    let events = t.events();
    let arrival = events
        .iter()
        .position(|e| matches!(e, LogEvent::ResumeArrival { arrived: true, .. }));
    let verdict = events
        .iter()
        .position(|e| matches!(e, LogEvent::ResumeFollowed { .. }));
    assert!(arrival.is_some() && arrival < verdict, "{events:?}");
}

#[tokio::test]
async fn a_prompt_that_did_not_arrive_goes_in_again_in_its_place() {
    let mut t = setup();
    t.hook("SessionStart", json!({"source": "startup"})).await;
    t.reply(125_000, "src/a.rs");
    t.hook("PreCompact", json!({"trigger": "manual"})).await;
    t.hook("SessionStart", json!({"source": "compact"})).await;
    let marker = t.session(|s| s.resume_pending.clone().unwrap().marker);
    t.reply(30_000, "src/a.rs");

    let (reply, locks) = t.hook("PostToolUse", json!({"tool_name": "Read"})).await;
    assert!(locks <= 2, "{locks}");
    assert!(context(&reply).contains(&marker), "{reply:?}");
    assert!(t.session(|s| s.resume_pending.as_ref().unwrap().reinjected));
    assert!(t.events().iter().any(|e| matches!(
        e,
        LogEvent::ResumeArrival { arrived: false, action, .. } if action == "injected again"
    )));
}

#[tokio::test]
async fn a_file_change_and_a_statusline_take_the_lock_once() {
    let mut t = setup();
    t.hook("SessionStart", json!({"source": "startup"})).await;
    settle(&t.engine).await;
    t.reply(40_000, "src/a.rs");
    let config = t.engine.config().config.clone();
    let before = t.locks();
    t.engine.on_file_change(&t.key(), &config).await;
    assert_eq!(t.locks() - before, 1);
    assert_eq!(
        t.session(|s| s.usage.as_ref().map(|u| u.tokens)),
        Some(40_000)
    );

    let input = json!({
        "session_id": SESSION,
        "context_window": {"context_window_size": 200_000, "total_input_tokens": 50_000},
    });
    let before = t.locks();
    let response = t.engine.handle(
        Request::StatusLine(StatusLineRequest {
            payload: serde_json::value::to_raw_value(&input).unwrap(),
            env: environment(),
        }),
        None,
    );
    assert!(matches!(response.await, Response::Context(_)));
    assert_eq!(t.locks() - before, 1);
    assert_eq!(t.session(|s| s.statusline_window), Some(200_000));
}

/// A guard held across an `.await` (a write to `events.jsonl` under the
/// registry's lock) would make the request's future not `Send`: the
/// server could not spawn it, and this would not compile.
#[test]
fn no_registry_guard_is_held_across_an_await() {
    fn sendable<T: Send>(_: &T) {}
    let t = setup();
    let request = Request::Ping;
    let future = t.engine.handle(request, None);
    sendable(&future);
}

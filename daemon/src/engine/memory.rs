//! Where the cross-task memory meets hooks and requests. The work is in
//! [`crate::memory`]; here it is only called at the right events, off the
//! async threads, and its problems become warnings instead of failures.
//!
//! | event | memory |
//! |---|---|
//! | SessionStart (startup, clear) | the session takes up its task; lessons of similar tasks as `additionalContext` when the task is already described |
//! | UserPromptSubmit | the first real prompt describes a task nothing described; lessons as `additionalContext` |
//! | Stop, SessionEnd | the task closes with its outcome |
//!
//! A hook waits for the lessons only: the writes (the task, the statistics,
//! the project's events) and the close go on after its answer.
//!
//! Subagents' hooks are left alone: their work is part of the session's task.

use super::{Engine, SessionView};
use crate::harness::{Event, HookEvent, Outcome, StartSource};
use crate::memory;
use crate::sessions::SessionKey;
use crate::test_events::TestEvent;
use protocol::config::Config;
use protocol::wire::{ErrorKind, ErrorReply, Request, Response};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where memory work hands the lessons a hook answers with.
type Answer = Box<dyn FnOnce(Option<String>) + Send>;

impl Engine {
    /// The memory's part of a hook.
    pub(super) async fn memory_on_hook(
        self: &Arc<Self>,
        view: &SessionView,
        event: &HookEvent,
        config: &Config,
        outcome: &mut Outcome,
    ) {
        if event.agent_id.is_some() || !config.memory.enabled {
            return;
        }
        let Some(project) = view.project.clone() else {
            return;
        };
        let transcript = view.transcript.clone();
        let (config, key) = (config.clone(), view.key.clone());
        let resources = self.resources.clone();
        match &event.event {
            Event::SessionStart {
                source: Some(StartSource::Startup | StartSource::Clear),
            } => {
                let work = move |answer: Answer| {
                    memory::session_started(&resources.memories, &config, &project, &key, answer)
                };
                self.memory_answer(work, outcome).await;
            }
            Event::Prompt { text } => {
                let Some(prompt) = text.clone() else {
                    return;
                };
                let work = move |answer: Answer| {
                    let memories = &resources.memories;
                    memory::prompted(memories, &config, &project, &key, &prompt, answer)
                };
                self.memory_answer(work, outcome).await;
            }
            Event::Stop { .. } | Event::SessionEnd { .. } => {
                let why = event.name().kebab().into_owned();
                // The answer does not need the close: it goes on after it.
                let work = move || {
                    let memories = &resources.memories;
                    memory::close(
                        memories,
                        &config,
                        &project,
                        &key,
                        transcript.as_deref(),
                        &why,
                    )
                    .map(drop)
                };
                self.report_when_done(tokio::task::spawn_blocking(work));
            }
            // Load the memory before a hook with a tight budget needs it
            // (a daemon restarted mid-session sees tool hooks first).
            Event::SessionStart { .. }
            | Event::PreToolUse { .. }
            | Event::PostToolUse { .. }
            | Event::ToolBatch
            | Event::PreCompact { .. }
            | Event::PostCompact { .. }
            | Event::SubagentStop { .. }
            | Event::Other(_) => {
                if !resources.memories.is_open(&config) {
                    tokio::task::spawn_blocking(move || {
                        if let Err(e) = resources.memories.open(&config) {
                            tracing::warn!("memory: {e}");
                        }
                    });
                }
            }
        }
    }

    /// Runs `work` off the async threads and waits only for the lessons it
    /// hands to its [`Answer`]: the writes after that go on after the hook's
    /// answer.
    async fn memory_answer(
        self: &Arc<Self>,
        work: impl FnOnce(Answer) -> Result<(), String> + Send + 'static,
        outcome: &mut Outcome,
    ) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let answer: Answer = Box::new(move |lessons| {
            let _ = tx.send(lessons);
        });
        self.report_when_done(tokio::task::spawn_blocking(move || work(answer)));
        // Dropped unsent when the work failed first: it reports that itself.
        if let Ok(Some(lessons)) = rx.await {
            outcome.add_context(lessons);
        }
    }

    /// Memory work that goes on after the hook's answer: its problems
    /// become warnings when it ends.
    fn report_when_done(self: &Arc<Self>, work: tokio::task::JoinHandle<Result<(), String>>) {
        let engine = self.clone();
        tokio::spawn(async move {
            match work.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => engine.memory_problem(e),
                Err(e) => engine.memory_problem(format!("the memory task failed: {e}")),
            }
            engine.identity.test_events.emit(TestEvent::MemoryDone, "");
        });
    }

    fn memory_problem(&self, problem: String) {
        tracing::warn!("memory: {problem}");
        self.add_warning(format!("memory: {problem}"));
    }

    /// The session a memory request is about: the one named (an id or a
    /// unique prefix), else the project's most recent live session. A named
    /// one hookd does not know is an error, never another session's task.
    fn memory_session(
        &self,
        project: &Path,
        session: Option<&str>,
    ) -> Result<Option<SessionKey>, Response> {
        let registry = self.registry();
        if let Some(id) = session {
            return match registry.matching(Some(id)).first() {
                Some(s) => Ok(Some(s.key.clone())),
                None => Err(Response::Error(ErrorReply::new(
                    ErrorKind::NotFound,
                    format!(
                        "no session `{}` is known to hookd: `hookctl status` lists the sessions it follows",
                        protocol::text::clip(&protocol::text::one_line(id), 80)
                    ),
                ))),
            };
        }
        Ok(registry
            .matching(None)
            .into_iter()
            .find(|s| {
                !s.ended
                    && s.project_dir
                        .as_deref()
                        .is_some_and(|p| project.starts_with(p))
            })
            .map(|s| s.key.clone()))
    }

    /// `hookctl reflect`, `hookctl task …`, `hookctl memory …`.
    pub(super) async fn memory_request(self: &Arc<Self>, request: Request) -> Response {
        let project: PathBuf = match &request {
            Request::Reflect(r) => r.project.clone(),
            Request::Task(t) => t.project.clone(),
            Request::Memory(m) => m.project.clone(),
            _ => {
                return Response::Error(ErrorReply::new(
                    ErrorKind::BadRequest,
                    "not a memory request",
                ));
            }
        };
        let (config, _) = self
            .settings
            .for_request(Some(&project), &Default::default());
        let config = config.config.clone();
        let session = match &request {
            Request::Reflect(r) => self.memory_session(&project, r.session.as_deref()),
            Request::Task(t) => self.memory_session(&project, t.session.as_deref()),
            _ => Ok(None),
        };
        let session = match session {
            Ok(session) => session,
            Err(refused) => return refused,
        };
        let resources = self.resources.clone();
        let work = move || -> Result<Response, String> {
            let memories = &resources.memories;
            match request {
                Request::Reflect(r) => memory::reflect_now(
                    memories,
                    &config,
                    &project,
                    session.as_ref(),
                    &r.content,
                    r.kind,
                )
                .map(|t| Response::Task(Box::new(t))),
                Request::Task(t) => {
                    memory::task_request(memories, &config, &project, session.as_ref(), t.action)
                        .map(|t| Response::Task(Box::new(t)))
                }
                Request::Memory(m) => memory::memory_request(memories, &config, m.action),
                _ => unreachable!("checked above"),
            }
        };
        match tokio::task::spawn_blocking(work).await {
            Ok(Ok(response)) => response,
            Ok(Err(message)) => {
                let kind = if message.starts_with("no ") {
                    ErrorKind::NotFound
                } else {
                    ErrorKind::BadRequest
                };
                Response::Error(ErrorReply::new(kind, message))
            }
            Err(e) => Response::Error(ErrorReply::new(
                ErrorKind::Internal,
                format!("the memory request failed: {e}"),
            )),
        }
    }
}

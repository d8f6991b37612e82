//! The daemon's core: what it knows about each session and how it answers
//! each request. The socket server hands requests in; tests can call
//! [`Engine::handle`] directly.

mod budget;
mod hook;
mod memory;
mod resume;

use crate::capture::records;
use crate::git::{self, GitError};
use crate::harness::statusline;
use crate::harness::{self};
use crate::pipeline::{self, SaveReport, SaveRequest, SaveTrigger};
use crate::sessions::{Registry, Session, SessionKey};
use crate::settings::Settings;
use crate::shutdown::Shutdown;
use crate::time::now_ms;
use crate::watch::TranscriptWatcher;
use crate::workflow::Workflow;
use protocol::config::{Config, Effective};
use protocol::pressure::Advice;
use protocol::wire::{
    ContextStatus, DaemonInfo, ErrorKind, ErrorReply, Mark, RecordRequest, Request, Response,
    RestoreSummary, SaveQuery, SaveSummary, StatusLineRequest, StatusQuery, StatusReport,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{mpsc, watch};

/// Facts about this daemon process that do not change while it runs.
#[derive(Debug, Clone)]
pub struct Identity {
    pub pid: u32,
    pub started_at_ms: u64,
    pub socket: PathBuf,
    pub state_dir: PathBuf,
    pub log_dir: Option<PathBuf>,
}

pub struct Engine {
    identity: Identity,
    settings: Settings,
    sessions: Mutex<Registry>,
    registry_file: PathBuf,
    /// The registry changed since it was last written.
    dirty: AtomicBool,
    /// Bumped on every change `watch` clients should see.
    changes: watch::Sender<u64>,
    watcher: TranscriptWatcher,
    watch_rx: Mutex<Option<mpsc::UnboundedReceiver<PathBuf>>>,
    events_handled: AtomicU64,
    last_activity_ms: AtomicU64,
    shutdown: Shutdown,
    warnings: Mutex<Vec<String>>,
}

/// Something to record in a project's `events.jsonl`, gathered under the
/// registry lock and written after it is released.
struct ProjectEvent {
    project: PathBuf,
    kind: &'static str,
    session: SessionKey,
    fields: Value,
}

impl Engine {
    pub fn new(identity: Identity, settings: Settings, shutdown: Shutdown) -> Self {
        let registry_file = identity.state_dir.join(crate::sessions::REGISTRY_FILE);
        let (registry, registry_problem) = Registry::load(&registry_file);
        let (watcher, watch_rx, watch_problem) = TranscriptWatcher::start();
        let engine = Engine {
            last_activity_ms: AtomicU64::new(identity.started_at_ms),
            identity,
            settings,
            sessions: Mutex::new(registry),
            registry_file,
            dirty: AtomicBool::new(false),
            changes: watch::channel(0).0,
            watcher,
            watch_rx: Mutex::new(Some(watch_rx)),
            events_handled: AtomicU64::new(0),
            shutdown,
            warnings: Mutex::new(Vec::new()),
        };
        for problem in [registry_problem, watch_problem].into_iter().flatten() {
            tracing::warn!("{problem}");
            engine.add_warning(problem);
        }
        let active: Vec<(SessionKey, PathBuf)> = engine
            .registry()
            .iter()
            .filter(|s| !s.ended)
            .filter_map(|s| Some((s.key.clone(), s.transcript_path.clone()?)))
            .collect();
        for (key, path) in active {
            engine.follow(&key, &path);
        }
        engine
    }

    fn registry(&self) -> MutexGuard<'_, Registry> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn config(&self) -> &Effective {
        self.settings.daemon()
    }

    pub fn shutdown(&self) -> &Shutdown {
        &self.shutdown
    }

    /// Records a problem for `hookctl status` to show.
    pub fn add_warning(&self, warning: String) {
        let mut warnings = self.warnings.lock().unwrap_or_else(|p| p.into_inner());
        if !warnings.contains(&warning) {
            warnings.push(warning);
        }
    }

    /// Milliseconds since the epoch of the last request.
    pub fn last_activity_ms(&self) -> u64 {
        self.last_activity_ms.load(Ordering::Relaxed)
    }

    /// A receiver that changes whenever a session does.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn touch(&self) {
        self.dirty.store(true, Ordering::Relaxed);
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Writes the registry if it changed. Called periodically and at shutdown.
    pub fn flush(&self) {
        if !self.dirty.swap(false, Ordering::Relaxed) {
            return;
        }
        let result = self.registry().save(&self.registry_file);
        if let Err(e) = result {
            self.dirty.store(true, Ordering::Relaxed);
            tracing::warn!(file = %self.registry_file.display(), error = %e, "cannot save the session registry");
        }
    }

    /// Ends idle sessions and forgets old ones.
    pub fn expire_sessions(&self) {
        let config = &self.settings.daemon().config.sessions;
        let removed = self.registry().expire(
            now_ms(),
            config.idle_expiry_secs * 1000,
            config.keep_ended_secs * 1000,
            config.max_sessions,
        );
        for key in &removed {
            self.watcher.unfollow(key);
        }
        if !removed.is_empty() {
            self.touch();
        }
    }

    fn follow(&self, key: &SessionKey, transcript: &Path) {
        match self.watcher.follow(key, transcript) {
            Ok(()) | Err(None) => {}
            Err(Some(problem)) => {
                tracing::warn!("{problem}");
                self.add_warning(problem);
            }
        }
    }

    /// Answers one request.
    pub async fn handle(self: &Arc<Self>, request: Request) -> Response {
        self.last_activity_ms.store(now_ms(), Ordering::Relaxed);
        match request {
            Request::Ping => Response::Pong,
            Request::Shutdown => {
                self.shutdown.trigger("shutdown request");
                Response::Ok
            }
            Request::Status(query) | Request::Watch(query) => {
                Response::Status(Box::new(self.status(&query)))
            }
            Request::StatusLine(request) => self.statusline(request),
            Request::Hook(hook) => self.hook(hook).await,
            Request::Record(request) => self.record_request(request),
            Request::Resume(query) => self.resume_request(query, true).await,
            Request::Validate(query) => self.resume_request(query, false).await,
            Request::Save(query) => self.save_now(query).await,
            Request::Checkpoints(query) => {
                let (config, _) = self
                    .settings
                    .for_request(Some(&query.project), &Default::default());
                let limit = query.limit.unwrap_or(50);
                let prefix = config.config.checkpoint.ref_prefix.clone();
                blocking(move || {
                    git::list_checkpoints(&query.project, &prefix, limit).map(Response::Checkpoints)
                })
                .await
            }
            Request::CheckpointShow(rev) => {
                let (config, _) = self
                    .settings
                    .for_request(Some(&rev.project), &Default::default());
                let prefix = config.config.checkpoint.ref_prefix.clone();
                blocking(move || {
                    git::show(&rev.project, &rev.rev, &prefix)
                        .map(|d| Response::Checkpoint(Box::new(d)))
                })
                .await
            }
            Request::ContextBudget(query) => self.budget_request(query).await,
            Request::ContextScore(query) => self.score_request(query).await,
            Request::Summarize(query) => self.summarize_request(query).await,
            Request::ContextReport(query) => self.report_request(query).await,
            Request::CheckpointRestore(q) => {
                blocking(move || {
                    git::restore(&q.project, &q.rev, &q.paths, q.force)
                        .map(|restored| Response::Restored(RestoreSummary { restored }))
                })
                .await
            }
            // Cross-task memory.
            request @ (Request::Reflect(_) | Request::Task(_) | Request::Memory(_)) => {
                self.memory_request(request).await
            }
        }
    }

    /// `hookctl decision | blocker | phase | next | note`.
    fn record_request(&self, request: RecordRequest) -> Response {
        let (config, _) = self
            .settings
            .for_request(Some(&request.project), &Default::default());
        let workflow = Workflow::new(&request.project);
        let session = request
            .session
            .or_else(|| self.latest_session(&request.project).map(|k| k.id));
        let result = workflow
            .ensure(config.config.capture.exclude_workflow_dir)
            .and_then(|dir| records::append(&dir, &request.record, session.as_deref()));
        match result {
            Ok(()) => Response::Ok,
            Err(e) => Response::Error(ErrorReply::new(
                ErrorKind::Internal,
                format!("nothing recorded: {e}"),
            )),
        }
    }

    /// `hookctl save`: the whole pipeline, now.
    async fn save_now(self: &Arc<Self>, query: SaveQuery) -> Response {
        let key = match &query.session {
            Some(id) => self
                .registry()
                .matching(Some(id))
                .first()
                .map(|s| s.key.clone()),
            None => self.latest_session(&query.project),
        };
        let (config, _) = self
            .settings
            .for_request(Some(&query.project), &Default::default());
        let request = key
            .as_ref()
            .and_then(|k| {
                self.save_request(k, &config.config, SaveTrigger::Manual, query.checkpoint)
            })
            .unwrap_or_else(|| SaveRequest {
                session: None,
                project: query.project.clone(),
                transcript: None,
                context: None,
                trigger: SaveTrigger::Manual,
                checkpoint: query.checkpoint,
            });
        let mut report = self.run_pipeline(request, config.config.clone()).await;
        // The checkpoint was asked for (and not switched off in the
        // configuration): not getting one is a failure, with its reason.
        if query.checkpoint && config.config.checkpoint.enabled && report.checkpoint.is_none() {
            let why = report
                .checkpoint_note
                .clone()
                .unwrap_or_else(|| "no reason was given".into());
            if !report.problems.contains(&why) {
                report.problems.push(format!("no checkpoint: {why}"));
            }
        }
        Response::Saved(Box::new(SaveSummary {
            session: key.map(|k| k.id),
            state_file: report.state_file,
            resume_prompt_file: report.resume_prompt_file,
            checkpoint: report.checkpoint,
            checkpoint_ref: report.checkpoint_ref,
            checkpoint_note: report.checkpoint_note,
            problems: report.problems,
        }))
    }

    /// The most recent session working in `project` (or a directory above it).
    fn latest_session(&self, project: &Path) -> Option<SessionKey> {
        let registry = self.registry();
        registry
            .matching(None)
            .into_iter()
            .find(|s| {
                s.project_dir
                    .as_deref()
                    .is_some_and(|p| project.starts_with(p))
            })
            .map(|s| s.key.clone())
    }

    /// Runs a save in the background and records how it went.
    fn spawn_save(self: &Arc<Self>, request: SaveRequest, config: Config) {
        let engine = self.clone();
        tokio::spawn(async move {
            engine.run_pipeline(request, config).await;
        });
    }

    /// Runs the pipeline off the async threads and notes the result on the session.
    async fn run_pipeline(self: &Arc<Self>, request: SaveRequest, config: Config) -> SaveReport {
        let what = request.trigger.to_string();
        let key = request.session.clone();
        let wants_checkpoint = request.checkpoint;
        let report = tokio::task::spawn_blocking(move || pipeline::save(&request, &config))
            .await
            .unwrap_or_else(|e| SaveReport {
                problems: vec![format!("the save failed: {e}")],
                ..SaveReport::default()
            });
        for problem in &report.problems {
            tracing::warn!(trigger = %what, "{problem}");
        }
        if let Some(key) = key {
            let now = now_ms();
            let mut registry = self.registry();
            if let Some(s) = registry.get_mut(&key) {
                let detail = report
                    .state_file
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .or_else(|| report.problems.first().cloned());
                s.last_save = Some(Mark {
                    at_ms: now,
                    what: what.clone(),
                    ok: report.ok(),
                    detail,
                });
                if wants_checkpoint {
                    s.last_checkpoint = Some(Mark {
                        at_ms: now,
                        what,
                        ok: report.checkpoint.is_some(),
                        detail: report
                            .checkpoint
                            .clone()
                            .or_else(|| report.checkpoint_note.clone()),
                    });
                }
            }
        }
        self.touch();
        report
    }

    /// Writes gathered events into the projects' `events.jsonl`.
    fn record(&self, events: Vec<ProjectEvent>, config: &Config) {
        for e in events {
            let workflow = Workflow::new(&e.project);
            if let Err(err) = workflow
                .ensure(config.capture.exclude_workflow_dir)
                .and_then(|_| workflow.append_event(e.kind, Some(&e.session), e.fields))
            {
                tracing::debug!(project = %e.project.display(), error = %err, "cannot append to events.jsonl");
            }
        }
    }

    /// Claude Code's statusLine: note the window it names, answer with our view.
    fn statusline(&self, request: StatusLineRequest) -> Response {
        let Ok(input) = serde_json::from_str::<Value>(request.payload.get()) else {
            return Response::Error(ErrorReply::new(
                ErrorKind::BadPayload,
                "the statusLine input is not JSON",
            ));
        };
        let statusline::Input {
            session_id,
            window,
            tokens,
            model,
            project,
            transcript,
        } = statusline::parse(&input);
        let (config, _) = self.settings.for_request(project.as_deref(), &request.env);
        let now = now_ms();
        let mut registry = self.registry();
        let session = match session_id {
            Some(id) => registry.entry(
                SessionKey {
                    harness: statusline::HARNESS,
                    id,
                },
                now,
            ),
            None => {
                let mut scratch = Session::new(
                    SessionKey {
                        harness: statusline::HARNESS,
                        id: String::new(),
                    },
                    now,
                );
                scratch.statusline_window = window;
                scratch.model = model;
                scratch.usage = tokens.map(|t| match t {
                    Ok(tokens) => harness::Usage {
                        tokens,
                        ..Default::default()
                    },
                    Err(why) => harness::Usage::invalidated(None, why),
                });
                let context = context_of(&scratch, &config.config)
                    .unwrap_or_else(|| empty_context(&scratch, &config.config));
                return Response::Context(Box::new(context));
            }
        };
        if window.is_some() {
            session.statusline_window = window;
        }
        if model.is_some() {
            session.model = model;
        }
        if project.is_some() && session.project_dir.is_none() {
            session.project_dir = project;
        }
        if let Some(path) = transcript {
            session.transcript_path.get_or_insert(path);
        }
        session.knobs = protocol::pressure::Knobs::from_env(|name| request.env.get(name).cloned());
        match tokens {
            Some(Ok(tokens)) => {
                let usage = session.usage.get_or_insert_with(Default::default);
                usage.tokens = tokens;
                usage.from_boundary = false;
                usage.invalid = None;
                session.usage_source = "statusline".into();
                session.usage_at_ms = now;
            }
            Some(Err(why)) => {
                session.usage = Some(harness::Usage::invalidated(session.usage.take(), why));
            }
            None => {}
        }
        let context = context_of(session, &config.config)
            .unwrap_or_else(|| empty_context(session, &config.config));
        drop(registry);
        self.touch();
        Response::Context(Box::new(context))
    }

    pub fn status(&self, query: &StatusQuery) -> StatusReport {
        let now = now_ms();
        let sessions = {
            let registry = self.registry();
            registry
                .matching(query.session.as_deref())
                .into_iter()
                .map(|s| {
                    let (config, _) = self
                        .settings
                        .for_request(s.project_dir.as_deref(), &Default::default());
                    s.status(context_of(s, &config.config))
                })
                .collect()
        };
        StatusReport {
            daemon: DaemonInfo {
                version: protocol::VERSION.to_owned(),
                protocol: protocol::PROTOCOL_VERSION,
                pid: self.identity.pid,
                started_at_ms: self.identity.started_at_ms,
                uptime_secs: now.saturating_sub(self.identity.started_at_ms) / 1000,
                socket: self.identity.socket.clone(),
                state_dir: self.identity.state_dir.clone(),
                log_dir: self.identity.log_dir.clone(),
                events_handled: self.events_handled.load(Ordering::Relaxed),
                warnings: self
                    .warnings
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone(),
            },
            sessions,
        }
    }

    /// Follows transcripts between hooks: refreshes the sessions whose
    /// files changed. Runs until the watcher's channel closes.
    pub async fn watch_transcripts(self: Arc<Self>) {
        let Some(mut rx) = self
            .watch_rx
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        else {
            return;
        };
        while let Some(batch) = crate::watch::next_batch(&mut rx).await {
            for path in batch {
                for key in self.watcher.sessions_for(&path) {
                    let project = self
                        .registry()
                        .get(&key)
                        .and_then(|s| s.project_dir.clone());
                    let (config, _) = self
                        .settings
                        .for_request(project.as_deref(), &Default::default());
                    self.on_file_change(&key, &config.config).await;
                    self.touch();
                }
            }
        }
    }
}

/// Runs blocking git work off the async threads; errors become replies.
async fn blocking(work: impl FnOnce() -> Result<Response, GitError> + Send + 'static) -> Response {
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => {
            let kind = match e {
                GitError::UnknownRevision(_)
                | GitError::NotARepository { .. }
                | GitError::NotInCheckpoint { .. } => ErrorKind::NotFound,
                GitError::WouldOverwrite(_)
                | GitError::Bare { .. }
                | GitError::WorkTreeElsewhere { .. }
                | GitError::UnsafePath { .. }
                | GitError::ForeignRef(_) => ErrorKind::BadRequest,
                _ => ErrorKind::Internal,
            };
            Response::Error(ErrorReply::new(kind, e.to_string()))
        }
        Err(e) => Response::Error(ErrorReply::new(
            ErrorKind::Internal,
            format!("the git task failed: {e}"),
        )),
    }
}

/// How full a session's context is, by the rules of its harness.
pub fn context_of(session: &Session, config: &Config) -> Option<ContextStatus> {
    let usage = session.usage.as_ref()?;
    Some(context_for(session, config, usage.tokens))
}

fn empty_context(session: &Session, config: &Config) -> ContextStatus {
    context_for(session, config, 0)
}

fn context_for(session: &Session, config: &Config, tokens: u64) -> ContextStatus {
    let point = harness::compaction_point(session, &config.window);
    let pressure = tokens as f64 / point.tokens.max(1) as f64;
    ContextStatus {
        tokens_used: tokens,
        tokens_max: point.tokens,
        window_tokens: point.window,
        pressure,
        window_fraction: tokens as f64 / point.window.max(1) as f64,
        basis: point.basis,
        source: if session.usage_source.is_empty() {
            "none".into()
        } else {
            session.usage_source.clone()
        },
        advice: Advice::for_pressure(pressure),
        updated_at_ms: session.usage_at_ms,
        invalid: session.usage.as_ref().and_then(|u| u.invalid.clone()),
    }
}

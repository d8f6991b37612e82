//! The daemon's core: what it knows about each session and how it answers
//! each request. The socket server hands requests in; tests can call
//! [`Engine::handle`] directly.

mod budget;
mod memory;
mod resume;

use crate::capture::records;
use crate::git::{self, GitError};
use crate::harness::statusline;
use crate::harness::{self, EventKind, Outcome, SessionReading};
use crate::monitor;
use crate::pipeline::{self, SaveReport, SaveRequest, SaveTrigger};
use crate::sessions::{EpochStart, Registry, Session, SessionKey};
use crate::settings::Settings;
use crate::shutdown::Shutdown;
use crate::time::now_ms;
use crate::watch::TranscriptWatcher;
use crate::workflow::Workflow;
use protocol::config::{Config, Effective};
use protocol::pressure::Advice;
use protocol::wire::{
    ContextStatus, DaemonInfo, ErrorKind, ErrorReply, HookRequest, Mark, RecordRequest, Request,
    Response, RestoreSummary, SaveQuery, SaveSummary, StatusLineRequest, StatusQuery, StatusReport,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

/// Claude Code writes its transcript in batches every 100 ms, so a tool hook
/// can arrive before the reply that asked for the tool is on disk. A hook
/// naming its tool call waits at most this long for that reply (three flush
/// intervals; well inside the 1 s hook budget).
const REPLY_WAIT: Duration = Duration::from_millis(300);
/// How often that wait looks at the transcript.
const REPLY_POLL: Duration = Duration::from_millis(10);

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
            // Cross-task memory (issue 11).
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

    async fn hook(self: &Arc<Self>, request: HookRequest) -> Response {
        let event = match harness::parse(&request) {
            Ok(event) => event,
            Err(e) => {
                return Response::Error(ErrorReply::new(ErrorKind::BadPayload, e.to_string()));
            }
        };
        self.events_handled.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(
            harness = %event.harness,
            event = %event.kind.kebab(),
            session = event.session_id.as_deref().unwrap_or("-"),
            "hook"
        );
        tracing::trace!(payload = request.payload.get(), "hook payload");
        let (config, config_problem) = self
            .settings
            .for_request(event.project_dir.as_deref(), &event.env);
        let mut outcome = Outcome {
            notes: event.problems.clone(),
            ..Outcome::default()
        };
        if let Some(problem) = config_problem {
            self.add_warning(problem.clone());
            outcome.notes.push(problem);
        }

        let now = now_ms();
        let (key, new_session) = {
            let mut registry = self.registry();
            let known = registry.len();
            let observed = registry.observe(&event, now).map(|s| s.key.clone());
            let new_session = registry.len() > known;
            for gone in registry.evict_over(config.config.sessions.max_sessions) {
                self.watcher.unfollow(&gone);
            }
            match observed {
                Some(key) => (key, new_session),
                None => {
                    tracing::debug!(event = %event.kind.kebab(), "hook without a session id");
                    return Response::Hook(harness::render(&event, outcome));
                }
            }
        };
        // A subagent's hooks talk to the subagent, not to the session's model.
        let checks = event.agent_id.is_none()
            && config
                .config
                .monitor
                .check_on
                .iter()
                .any(|e| *e == event.kind.kebab());
        let mut read_ahead = None;
        if let Some(path) = &event.transcript_path {
            self.follow(&key, path);
            // Only a threshold check needs the latest figure (and a subagent's
            // tool calls are in its own transcript).
            let may_lag = harness::reply_may_lag_tool_hooks(key.harness);
            if let Some(id) = event.tool_use_id.as_deref().filter(|_| checks && may_lag) {
                read_ahead = self.wait_for_reply(&key, path, id).await;
            }
        }
        let mut project_events = Vec::new();
        // A compaction shows up in the transcript, or through its hooks (Claude
        // Code writes the boundary after SessionStart(compact)); either may be
        // the first word of one that no PreCompact announced.
        let mut unannounced = match read_ahead {
            Some(reading) => self.apply_reading(&key, &config.config, reading),
            None => self.refresh(&key, &config.config).await,
        };
        match &event.kind {
            EventKind::SessionStart if event.source.as_deref() == Some("compact") => {
                unannounced |=
                    self.hook_epoch(&key, "session-start compact", None, &mut project_events);
            }
            EventKind::PostCompact => {
                let what = format!("post-compact {}", event.trigger.as_deref().unwrap_or(""));
                unannounced |= self.hook_epoch(
                    &key,
                    what.trim(),
                    event.trigger.as_deref(),
                    &mut project_events,
                );
                self.record_compact_summary(&key, &event, &mut project_events);
            }
            EventKind::SessionEnd => self.watcher.unfollow(&key),
            _ => {}
        }
        let resuming = event.kind == EventKind::SessionStart
            && event
                .source
                .as_ref()
                .is_some_and(|s| config.config.resume.on_sources.contains(s));
        if unannounced {
            // No PreCompact hook ran: capture what we still can. A resume needs it first.
            if let Some(request) = self.save_request(
                &key,
                &config.config,
                SaveTrigger::UnannouncedCompaction,
                true,
            ) {
                if resuming {
                    self.run_pipeline(request, config.config.clone()).await;
                } else {
                    self.spawn_save(request, config.config.clone());
                }
            }
        }
        let due = self
            .registry()
            .get(&key)
            .is_some_and(|s| harness::compaction_is_due(s, &config.config.window));
        if event.kind == EventKind::PreCompact && due {
            let trigger = event.trigger.clone().unwrap_or_else(|| "manual".into());
            if let Some(request) =
                self.save_request(&key, &config.config, SaveTrigger::PreCompact(trigger), true)
            {
                let report = self.run_pipeline(request, config.config.clone()).await;
                outcome.plain_stdout = report.instructions;
            }
            if let Some(s) = self.registry().get_mut(&key) {
                s.compaction_announced_ms = Some(now);
                s.announced_trigger = event.trigger.clone();
            }
        }
        // A compaction only the session's file showed: its resume prompt
        // goes in with the first prompt or tool call after it.
        let resume_due = matches!(
            event.kind,
            EventKind::UserPromptSubmit | EventKind::PostToolUse
        ) && self
            .registry()
            .get_mut(&key)
            .is_some_and(|s| std::mem::take(&mut s.resume_due));
        if resume_due {
            self.resume_on_start(
                &key,
                "compact",
                &config.config,
                &mut outcome,
                &mut project_events,
            )
            .await;
        }
        if resuming {
            let source = event.source.clone().unwrap_or_default();
            self.resume_on_start(
                &key,
                &source,
                &config.config,
                &mut outcome,
                &mut project_events,
            )
            .await;
        }
        // Cross-task memory (issue 11): tasks begin, get lessons, and close.
        self.memory_on_hook(&key, &event, &config.config, &mut outcome)
            .await;
        // An injection is looked for from the next hook on, not this one's.
        if checks && !resume_due {
            self.check_arrival(&key, &mut outcome, &mut project_events)
                .await;
        }
        if checks {
            self.check_thresholds(&key, &config.config, &mut outcome, &mut project_events);
        }
        if event.kind == EventKind::SessionStart
            && let Some(project) = &event.project_dir
        {
            // What keeps hookd from this project, said once per session.
            for warning in project_problems(project, &config) {
                self.add_warning(warning.clone());
                outcome.say(format!("hookd: {warning}"));
            }
        }
        self.record(project_events, &config.config);
        self.touch();
        if new_session {
            // A session must survive a crash from its first event on.
            let engine = self.clone();
            let _ = tokio::task::spawn_blocking(move || engine.flush()).await;
        }
        Response::Hook(harness::render(&event, outcome))
    }

    /// Waits (at most [`REPLY_WAIT`]) until the transcript holds the reply
    /// that asked for tool call `tool_use_id`, so that the figure read next
    /// is that reply's and not the one before. Once it is there, the same
    /// trip to a blocking thread reads what is new, for `apply_reading`:
    /// every hook would otherwise pay a second one.
    async fn wait_for_reply(
        &self,
        key: &SessionKey,
        path: &Path,
        tool_use_id: &str,
    ) -> Option<Result<SessionReading, String>> {
        let (cursor, usage, followed) = {
            let registry = self.registry();
            let s = registry.get(key)?;
            (s.cursor.clone(), s.usage.clone(), s.transcript_path.clone())
        };
        let from = cursor.as_ref().map(|c| c.offset);
        let harness = key.harness;
        let id = tool_use_id.to_owned();
        let deadline = Instant::now() + REPLY_WAIT;
        loop {
            let (path, id, cursor, usage, followed) = (
                path.to_path_buf(),
                id.clone(),
                cursor.clone(),
                usage.clone(),
                followed.clone(),
            );
            let found = tokio::task::spawn_blocking(move || {
                let found = harness::reply_written(harness, &path, from, &id)?;
                Ok::<_, std::io::Error>(found.then(|| {
                    followed.filter(|f| *f == path).map(|f| {
                        harness::read_session_file(harness, &f, cursor.as_ref(), usage.as_ref())
                    })
                }))
            })
            .await;
            match found {
                Ok(Ok(None)) if Instant::now() < deadline => tokio::time::sleep(REPLY_POLL).await,
                Ok(Ok(None)) => {
                    tracing::debug!(session = %key, tool_use_id, "the reply for this tool call is not in the transcript yet; reading what is there");
                    return None;
                }
                Ok(Ok(Some(reading))) => return reading,
                // The transcript cannot be read: `refresh` reports that.
                _ => return None,
            }
        }
    }

    /// Reads what is new in the session's file (its harness knows the
    /// format) and applies it. Returns whether it showed a compaction no
    /// PreCompact hook announced.
    async fn refresh(self: &Arc<Self>, key: &SessionKey, config: &Config) -> bool {
        let snapshot = {
            let registry = self.registry();
            let Some(s) = registry.get(key) else {
                return false;
            };
            let Some(path) = s.transcript_path.clone() else {
                return false;
            };
            (path, s.cursor.clone(), s.usage.clone())
        };
        let (path, cursor, usage) = snapshot;
        let harness = key.harness;
        let reading = tokio::task::spawn_blocking(move || {
            harness::read_session_file(harness, &path, cursor.as_ref(), usage.as_ref())
        })
        .await
        .map_err(|e| format!("session file reader failed: {e}"))
        .and_then(|r| r);
        self.apply_reading(key, config, reading)
    }

    /// Applies a reading of the session's file. Returns whether it showed a
    /// compaction no PreCompact hook announced.
    fn apply_reading(
        self: &Arc<Self>,
        key: &SessionKey,
        config: &Config,
        reading: Result<SessionReading, String>,
    ) -> bool {
        let now = now_ms();
        let mut project_events = Vec::new();
        let mut unannounced = false;
        {
            let mut registry = self.registry();
            let Some(s) = registry.get_mut(key) else {
                return false;
            };
            let reading = match reading {
                Ok(reading) => reading,
                Err(e) => {
                    s.transcript_problem = Some(e);
                    return false;
                }
            };
            let boundaries = reading.reading.boundaries.clone();
            let Some(began) = s.take_reading(reading, now) else {
                return false;
            };
            if let Some(project) = &s.project_dir {
                for boundary in &boundaries {
                    if let (Some(before), Some(after)) = (boundary.pre_tokens, boundary.post_tokens)
                    {
                        project_events.push(ProjectEvent {
                            project: project.clone(),
                            kind: crate::budget::report::TRANSITION,
                            session: key.clone(),
                            fields: crate::budget::report::transition(
                                "compaction",
                                boundary.trigger.as_deref().unwrap_or("unknown"),
                                before,
                                after,
                                json!({ "boundary": boundary.uuid }),
                            ),
                        });
                    }
                }
            }
            for (boundary, announced) in began {
                unannounced |= !announced;
                if harness::resumes_at_next_turn(key.harness) {
                    s.resume_due = true;
                }
                project_events.extend(s.project_dir.clone().map(|project| ProjectEvent {
                    project,
                    kind: "compaction",
                    session: key.clone(),
                    fields: json!({
                        "trigger": boundary.trigger,
                        "pre_tokens": boundary.pre_tokens,
                        "post_tokens": boundary.post_tokens,
                        "announced": announced,
                        "epoch": s.epoch,
                        "source": "transcript",
                    }),
                }));
            }
        }
        self.record(project_events, config);
        unannounced
    }

    /// A save of `key`'s work, if we know its project.
    fn save_request(
        &self,
        key: &SessionKey,
        config: &Config,
        trigger: SaveTrigger,
        checkpoint: bool,
    ) -> Option<SaveRequest> {
        let registry = self.registry();
        let s = registry.get(key)?;
        Some(SaveRequest {
            session: Some(key.clone()),
            project: s.project_dir.clone()?,
            transcript: s.transcript_path.clone(),
            context: context_of(s, config),
            trigger,
            checkpoint,
        })
    }

    /// A SessionStart(compact) or PostCompact hook: a compaction happened.
    /// Returns whether it began an epoch no PreCompact announced.
    fn hook_epoch(
        &self,
        key: &SessionKey,
        what: &str,
        trigger: Option<&str>,
        project_events: &mut Vec<ProjectEvent>,
    ) -> bool {
        let mut registry = self.registry();
        let Some(s) = registry.get_mut(key) else {
            return false;
        };
        let announced = s.compaction_announced_ms.is_some();
        if !s.begin_epoch(&EpochStart::Hook(what.to_owned()), now_ms()) {
            return false;
        }
        s.compaction_announced_ms = None;
        let trigger = trigger
            .map(str::to_owned)
            .or_else(|| s.announced_trigger.take());
        project_events.extend(s.project_dir.clone().map(|project| ProjectEvent {
            project,
            kind: "compaction",
            session: key.clone(),
            fields: json!({ "epoch": s.epoch, "trigger": trigger, "source": what, "announced": announced }),
        }));
        !announced
    }

    fn check_thresholds(
        self: &Arc<Self>,
        key: &SessionKey,
        config: &Config,
        outcome: &mut Outcome,
        project_events: &mut Vec<ProjectEvent>,
    ) {
        let now = now_ms();
        let (firing, context, save) = {
            let mut registry = self.registry();
            let Some(s) = registry.get_mut(key) else {
                return;
            };
            // A figure that cannot be right fires nothing, and moves no epoch.
            let Some(context) = context_of(s, config).filter(|c| c.invalid.is_none()) else {
                return;
            };
            if monitor::dropped_enough(s.peak_pressure, context.pressure, config.monitor.reset_drop)
            {
                let from = s.peak_pressure;
                if s.begin_epoch(
                    &EpochStart::Drop {
                        from,
                        to: context.pressure,
                    },
                    now,
                ) {
                    project_events.extend(s.project_dir.clone().map(|project| ProjectEvent {
                        project,
                        kind: "epoch",
                        session: key.clone(),
                        fields: json!({ "epoch": s.epoch, "reason": "usage dropped", "from": from, "to": context.pressure }),
                    }));
                }
            }
            s.peak_pressure = s.peak_pressure.max(context.pressure);
            let Some(firing) =
                monitor::check(&config.monitor.thresholds, context.pressure, &s.fired)
            else {
                return;
            };
            s.fired.extend(firing.crossed.iter().copied());
            let save = monitor::saves(firing.threshold.action).and_then(|checkpoint| {
                Some(SaveRequest {
                    session: Some(key.clone()),
                    project: s.project_dir.clone()?,
                    transcript: s.transcript_path.clone(),
                    context: Some(context.clone()),
                    trigger: SaveTrigger::Threshold(firing.threshold.level),
                    checkpoint: checkpoint || config.capture.checkpoint_on_threshold_save,
                })
            });
            (firing, context, save)
        };
        let text = monitor::message(&firing.threshold, &context);
        if config.monitor.system_message {
            outcome.system_message = Some(text.clone());
        }
        if config.monitor.additional_context {
            outcome.add_context(text);
        }
        tracing::info!(session = %key, level = firing.threshold.level, pressure = context.pressure, "threshold");
        if let Some(project) = self.registry().get(key).and_then(|s| s.project_dir.clone()) {
            project_events.push(ProjectEvent {
                project,
                kind: "threshold",
                session: key.clone(),
                fields: json!({
                    "level": firing.threshold.level,
                    "crossed": firing.crossed,
                    "action": firing.threshold.action,
                    "tokens_used": context.tokens_used,
                    "tokens_max": context.tokens_max,
                    "pressure": context.pressure,
                }),
            });
        }
        if let Some(request) = save {
            self.spawn_save(request, config.clone());
        }
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
                s.mark_save_in_history();
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
                    if self.refresh(&key, &config.config).await
                        && let Some(request) = self.save_request(
                            &key,
                            &config.config,
                            SaveTrigger::UnannouncedCompaction,
                            true,
                        )
                    {
                        self.spawn_save(request, config.config.clone());
                    }
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
/// Why hookd cannot keep this project's state, and which of its settings
/// it ignored.
fn project_problems(project: &Path, config: &Effective) -> Vec<String> {
    let mut out = config.warnings.clone();
    match Workflow::new(project).open() {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => out.push(format!(
            "{e}; hookd keeps no state for this project until that is fixed"
        )),
        _ => {}
    }
    out
}

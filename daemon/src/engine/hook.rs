//! One hook, end to end: decode it, read the session's file, let the
//! session machine decide under one registry lock, then carry out what it
//! decided (saves, resume prompts, words, `events.jsonl` lines) and answer
//! in the harness's format.

use super::{ConfigSource, Engine, ProjectEvent, SessionView};
use crate::events::{LogEvent, Resume, SummaryTaken};
use crate::harness::{self, Event, HookEvent, Outcome, SessionReading};
use crate::pipeline::SaveRequest;
use crate::session_machine::{self, Effect, SaveReason};
use crate::sessions::{FollowWatch, PendingResume, Session, SessionKey};
use crate::state::SaveTrigger;
use crate::time::now_ms;
use protocol::config::{Config, Effective};
use protocol::wire::ResumeFollowed;
use protocol::wire::{ErrorKind, ErrorReply, HookRequest, Response};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// How much of a session's file after a resume prompt is read for the
/// agent's first calls.
const FOLLOW_WINDOW_BYTES: u64 = 1024 * 1024;
/// How long a hook waits for where its harness process compacts (/proc and
/// a few small files, a millisecond or so when all is well).
const LAUNCH_POINT_DEADLINE: std::time::Duration = std::time::Duration::from_secs(1);

impl Engine {
    /// `peer_pid`: the hook's process, where the OS says which it is.
    pub(super) async fn hook(
        self: &Arc<Self>,
        request: HookRequest,
        peer_pid: Option<u32>,
    ) -> Response {
        let event = match harness::parse(&request) {
            Ok(event) => event,
            Err(e) => {
                return Response::Error(ErrorReply::new(ErrorKind::BadPayload, e.to_string()));
            }
        };
        self.events_handled.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(
            harness = %event.harness,
            event = %event.name().kebab(),
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
        self.note_config_problem(event.project_dir.as_deref(), config_problem, &mut outcome);

        let launch = self.launch_point(&event, peer_pid).await;
        let Some(id) = event.session_id.clone() else {
            tracing::debug!(event = %event.name().kebab(), "hook without a session id");
            return Response::Hook(harness::render(&event, outcome));
        };
        let key = SessionKey {
            harness: event.harness,
            id,
        };
        if let Some(path) = &event.transcript_path {
            self.follow(&key, path);
        }
        // What is on disk now: a hook never waits for the harness to write.
        let reading = self.read_file(&key, event.transcript_path.as_deref()).await;
        let now = now_ms();
        // The registry's lock, once to decide: the hook's own fields, the
        // reading, and what the effects will need of the session.
        let (effects, view, new_session) = {
            let mut registry = self.registry();
            let known = registry.len();
            session_machine::observe(registry.entry(key.clone(), now), &event, launch, now);
            let new_session = registry.len() > known;
            for gone in registry.evict_over(config.config.sessions.max_sessions) {
                self.watcher.unfollow(&gone);
                self.read_points().remove(&gone);
            }
            let Some(s) = registry.get_mut(&key) else {
                return Response::Hook(harness::render(&event, outcome));
            };
            let effects = session_machine::on_hook(s, &event, reading, &config.config, now);
            self.note_read_point(s);
            (effects, SessionView::of(s, &config.config), new_session)
        };
        let mut done = Done::default();
        let mut records = self
            .carry_out(
                &view,
                &event,
                effects,
                &config.config,
                &mut outcome,
                &mut done,
            )
            .await;
        // Once more at most: what the effects did.
        if !done.is_empty() {
            let injected_epoch = self
                .registry()
                .get_mut(&key)
                .and_then(|s| done.take_into(s, now_ms(), &mut records));
            if let Some(epoch) = injected_epoch {
                for record in &mut records {
                    if let LogEvent::Resume(Resume::Injected { epoch: at, .. }) = record {
                        *at = epoch;
                    }
                }
            }
        }
        // An ended session stays followed until it expires: Claude Code
        // writes the last lines of its transcript as it exits, after
        // SessionEnd.
        if let Event::SessionStart { .. } = event.event
            && let Some(project) = &event.project_dir
        {
            // What keeps hookd from this project, said once per session.
            for warning in project_problems(project, &config) {
                self.add_warning(warning.clone());
                outcome.say(format!("hookd: {warning}"));
            }
        }
        self.record(project_events(&view, records), &config.config)
            .await;
        self.touch();
        if new_session {
            // A session must survive a crash from its first event on; the
            // answer does not wait for the disk.
            let engine = self.clone();
            tokio::task::spawn_blocking(move || engine.flush());
        }
        Response::Hook(harness::render(&event, outcome))
    }

    /// A broken configuration is said to the person once while it lasts
    /// (status shows it all along); every hook notes it for the harness's
    /// verbose mode. A project's file is named, not quoted: its words are
    /// the repository's.
    fn note_config_problem(
        &self,
        project: Option<&Path>,
        config_problem: Option<String>,
        outcome: &mut Outcome,
    ) {
        match config_problem {
            Some(problem) => {
                let source = if self.settings.user_problem().is_some() {
                    ConfigSource::User
                } else if self
                    .settings
                    .for_request(project, &Default::default())
                    .1
                    .is_none()
                {
                    // Fine without the hook's `HOOKD_*` variables: one of them.
                    ConfigSource::Environment
                } else {
                    ConfigSource::Project(project.map(Path::to_path_buf))
                };
                if self.newly_broken(&source, &problem) {
                    outcome.say(match source {
                        // The person's own words: quoted.
                        ConfigSource::User | ConfigSource::Environment => {
                            format!("hookd: your configuration is broken: {problem}")
                        }
                        ConfigSource::Project(_) => format!(
                            "hookd: this project's {} is not used (`hookctl config` says why); \
                             hookd goes on with your own configuration",
                            protocol::config::PROJECT_FILE
                        ),
                    });
                }
                outcome.notes.push(problem);
            }
            None => self.fixed(project),
        }
    }

    /// The session's file changed between hooks: take the reading in,
    /// under one lock.
    pub(super) async fn on_file_change(self: &Arc<Self>, key: &SessionKey, config: &Config) {
        let Some(reading) = self.read_file(key, None).await else {
            return;
        };
        let (effects, view) = {
            let mut registry = self.registry();
            let Some(s) = registry.get_mut(key) else {
                return;
            };
            let effects = session_machine::on_file_change(s, reading, config, now_ms());
            self.note_read_point(s);
            (effects, SessionView::of(s, config))
        };
        let mut records = Vec::new();
        for effect in effects {
            match effect {
                Effect::Record(event) => records.push(event),
                Effect::Save {
                    reason, checkpoint, ..
                } => self.save_in_background(&view, config, trigger_for(reason), checkpoint),
                // Not awaited: the merge waits for the project's lock, which
                // a save holds through its checkpoint, and the watcher
                // serves every session.
                Effect::TakeSummaryFromFile => {
                    let (engine, view, config) = (self.clone(), view.clone(), config.clone());
                    tokio::spawn(async move {
                        let Some((fields, merged)) =
                            engine.take_summary_from_file(&view, &config).await
                        else {
                            return;
                        };
                        if let Some((token, fingerprint)) = merged
                            && let Some(s) = engine.registry().get_mut(&view.key)
                        {
                            session_machine::on_summary_merged(s, &token, &fingerprint);
                        }
                        let records = vec![LogEvent::Summary(fields)];
                        engine.record(project_events(&view, records), &config).await;
                    });
                }
                _ => {}
            }
        }
        self.record(project_events(&view, records), config).await;
    }

    /// Where the harness process that ran the hook compacts: /proc and
    /// small files, read off the async threads, once per process.
    async fn launch_point(
        &self,
        event: &HookEvent,
        peer_pid: Option<u32>,
    ) -> Option<harness::Launch> {
        let adapter = harness::adapter(event.harness);
        if !adapter.has_launch_point() {
            return None;
        }
        let (event, resources) = (event.clone(), self.resources.clone());
        let work = tokio::task::spawn_blocking(move || {
            adapter.launch_point(&event, peer_pid, &resources.launch_points)
        });
        match tokio::time::timeout(LAUNCH_POINT_DEADLINE, work).await {
            Ok(found) => found.ok().flatten(),
            Err(_) => {
                // A stalled mount or /proc read holds its thread, not the
                // hook; the session keeps the point it had.
                static SAID: std::sync::Once = std::sync::Once::new();
                SAID.call_once(|| {
                    tracing::warn!(
                        "reading where the harness compacts took over {:?} (/proc or its settings files); hooks go on without it",
                        LAUNCH_POINT_DEADLINE
                    );
                });
                None
            }
        }
    }

    /// What is new in the session's file, read by its harness's rules from
    /// where the last reading stopped (`hook_path`: the file a hook names,
    /// which may be a new one).
    async fn read_file(
        &self,
        key: &SessionKey,
        hook_path: Option<&Path>,
    ) -> Option<Result<SessionReading, String>> {
        let (path, cursor, usage) = {
            let points = self.read_points();
            let point = points.get(key);
            let path = hook_path
                .map(Path::to_path_buf)
                .or_else(|| point.and_then(|p| p.transcript.clone()))?;
            // Another file is read from its start.
            let cursor = point
                .filter(|p| p.transcript.as_deref() == Some(path.as_path()))
                .and_then(|p| p.cursor.clone());
            (path, cursor, point.and_then(|p| p.usage.clone()))
        };
        let adapter = harness::adapter(key.harness);
        let reading = tokio::task::spawn_blocking(move || {
            adapter.read_session_file(&path, cursor.as_ref(), usage.as_ref())
        })
        .await
        .map_err(|e| format!("session file reader failed: {e}"))
        .and_then(|r| r);
        Some(reading)
    }

    /// Carries out the machine's decisions in the order a hook's answer is
    /// built: saves it waits for, resume prompts, the memory's lessons, the
    /// arrival check, words, background saves. Never takes the registry's
    /// lock: what the session must take in goes to `done`. Returns the
    /// lines for `events.jsonl`, the resume's own first.
    async fn carry_out(
        self: &Arc<Self>,
        view: &SessionView,
        event: &HookEvent,
        effects: Vec<Effect>,
        config: &Config,
        outcome: &mut Outcome,
        done: &mut Done,
    ) -> Vec<LogEvent> {
        let mut resume_records = Vec::new();
        let mut records = Vec::new();
        let mut later = Vec::new();
        for effect in effects {
            match effect {
                Effect::Save {
                    reason,
                    checkpoint,
                    first: true,
                } => {
                    let pre_compact = matches!(reason, SaveReason::PreCompact(_));
                    let trigger = trigger_for(reason);
                    if let Some(request) = save_request(view, trigger, checkpoint) {
                        let (report, mut saved) = self.run_save(request, config.clone()).await;
                        self.announce_saved(&saved);
                        if pre_compact {
                            saved.compaction_token = Some(report.summary_token);
                            outcome.plain_stdout = report.instructions;
                        }
                        done.saved.push(saved);
                    }
                }
                Effect::Resume { source } => {
                    let (lines, injected) =
                        self.resume_on_start(view, &source, config, outcome).await;
                    resume_records.extend(lines);
                    done.injected = injected.or(done.injected.take());
                }
                Effect::TakeSummary { summary, from } => {
                    if let Some((fields, merged)) =
                        self.take_summary(view, summary, from, config).await
                    {
                        records.push(LogEvent::Summary(fields));
                        done.merged = merged.or(done.merged.take());
                    }
                }
                Effect::TakeSummaryFromFile => {
                    if let Some((fields, merged)) = self.take_summary_from_file(view, config).await
                    {
                        records.push(LogEvent::Summary(fields));
                        done.merged = merged.or(done.merged.take());
                    }
                }
                Effect::Record(event) => records.push(event),
                other => later.push(other),
            }
        }
        self.memory_on_hook(view, event, config, outcome).await;
        self.offer_synced_on_start(view, event, config, outcome)
            .await;
        // Whether the prompt pending when the hook decided arrived now.
        let mut arrived = false;
        for effect in later {
            match effect {
                Effect::CheckArrival => {
                    let Some(pending) = &view.resume_pending else {
                        continue;
                    };
                    let found = self.arrived(view, pending).await;
                    for effect in session_machine::arrival_effects(pending, found, now_ms()) {
                        match effect {
                            Effect::Say { person, model } => say(outcome, person, model),
                            Effect::Record(event) => records.push(event),
                            _ => {}
                        }
                    }
                    arrived = found;
                    done.arrival = Some((pending.marker.clone(), found));
                }
                Effect::CheckFollowed => {
                    // Judged once the prompt arrived.
                    if (view.resume_pending.is_none() || arrived)
                        && let Some(watch) = &view.follow_watch
                        && let Some((verdict, record)) =
                            self.check_followed(view, watch, config).await
                    {
                        // Its line goes out only if the session takes it.
                        done.followed = Some((watch.marker.clone(), verdict, record));
                    }
                }
                Effect::Say { person, model } => {
                    if let Some(text) = person.as_deref().or(model.as_deref()) {
                        tracing::info!(session = %view.key, "{text}");
                    }
                    say(outcome, person, model);
                }
                Effect::Save {
                    reason, checkpoint, ..
                } => self.save_in_background(view, config, trigger_for(reason), checkpoint),
                Effect::Record(_)
                | Effect::Resume { .. }
                | Effect::TakeSummary { .. }
                | Effect::TakeSummaryFromFile => {}
            }
        }
        resume_records.extend(records);
        resume_records
    }

    /// Whether the agent's first tool calls after the resume prompt arrived
    /// followed it: read from the session's file, within the capture's
    /// scan window. The verdict and its line, when there is one yet.
    async fn check_followed(
        &self,
        view: &SessionView,
        watch: &FollowWatch,
        config: &Config,
    ) -> Option<(ResumeFollowed, LogEvent)> {
        let path = view.transcript.clone()?;
        // The first calls after the prompt follow it closely: a window from
        // where the file stood, never the whole file, on every hook until
        // they come.
        let max_bytes = config
            .capture
            .transcript_scan_bytes
            .min(FOLLOW_WINDOW_BYTES);
        let adapter = harness::adapter(view.key.harness);
        let (marker, from) = (watch.marker.clone(), watch.from_offset);
        let calls = tokio::task::spawn_blocking(move || {
            adapter.calls_after_marker(&path, max_bytes, &marker, from)
        })
        .await
        .ok()
        .and_then(Result::ok)
        .flatten();
        session_machine::follow_verdict(watch, view.project.as_deref(), &watch.marker, calls)
    }

    /// Whether the injected resume prompt has reached the session's file.
    /// Harnesses write their files in batches (Claude Code every 100 ms):
    /// the injection gets time to land before it is called lost.
    async fn arrived(&self, view: &SessionView, pending: &PendingResume) -> bool {
        let Some(path) = view.transcript.clone() else {
            return false;
        };
        let adapter = harness::adapter(view.key.harness);
        loop {
            let (path, marker) = (path.clone(), pending.marker.clone());
            let found = tokio::task::spawn_blocking(move || {
                adapter.injected_context_arrived(&path, &marker)
            })
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or(false);
            if found
                || now_ms().saturating_sub(pending.injected_at_ms)
                    >= super::resume::ARRIVAL_SETTLE_MS
            {
                return found;
            }
            tokio::time::sleep(super::resume::ARRIVAL_POLL).await;
        }
    }

    /// Merges a compaction summary into the session's saved state. The line
    /// for `events.jsonl` says how it went; with it, when it was merged
    /// with the session's token, that token and the block's fingerprint.
    async fn take_summary(
        &self,
        view: &SessionView,
        summary: String,
        from: &'static str,
        config: &Config,
    ) -> Option<(SummaryTaken, Option<(String, String)>)> {
        let request = crate::pipeline::SummaryRequest {
            session: view.key.clone(),
            project: view.project.clone()?,
            summary,
            from,
            token: view.summary_token.clone(),
        };
        let (config, resources) = (config.clone(), self.resources.clone());
        let (fields, token) = tokio::task::spawn_blocking(move || {
            let fields = crate::pipeline::take_summary(&request, &config, &resources);
            (fields, request.token)
        })
        .await
        .ok()?;
        // The token lets one block in: the one just merged.
        let merged = match (fields.merged, token, fields.fingerprint.clone()) {
            (true, Some(token), Some(fingerprint)) => Some((token.token, fingerprint)),
            _ => None,
        };
        Some((fields, merged))
    }

    /// The compaction summary the session's file keeps, merged like one a
    /// hook brought; nothing when the file holds none (yet).
    async fn take_summary_from_file(
        &self,
        view: &SessionView,
        config: &Config,
    ) -> Option<(SummaryTaken, Option<(String, String)>)> {
        let path = view.transcript.clone()?;
        let adapter = harness::adapter(view.key.harness);
        let summary =
            tokio::task::spawn_blocking(move || adapter.compaction_summary_in_file(&path))
                .await
                .ok()?
                .ok()??;
        self.take_summary(view, summary, "transcript", config).await
    }

    fn save_in_background(
        self: &Arc<Self>,
        view: &SessionView,
        config: &Config,
        trigger: SaveTrigger,
        checkpoint: bool,
    ) {
        if let Some(request) = save_request(view, trigger, checkpoint) {
            self.spawn_save(request, config.clone());
        }
    }
}

/// What a hook's effects did, for the session to take in under the
/// registry's second lock.
#[derive(Debug, Default)]
pub(super) struct Done {
    saved: Vec<session_machine::Saved>,
    injected: Option<session_machine::Injected>,
    /// The marker of the prompt looked for, and whether it was found.
    arrival: Option<(String, bool)>,
    /// The verdict on the prompt with this marker, and its line.
    followed: Option<(String, ResumeFollowed, LogEvent)>,
    /// The summary token a merged block used, and its fingerprint.
    merged: Option<(String, String)>,
}

impl Done {
    fn is_empty(&self) -> bool {
        self.saved.is_empty()
            && self.injected.is_none()
            && self.arrival.is_none()
            && self.followed.is_none()
            && self.merged.is_none()
    }

    /// Hands each result to the session machine, in the order they were
    /// produced: a prompt injected now outlives the verdicts on the one
    /// before. Returns the injected prompt's epoch; adds to `records` the
    /// lines of verdicts the session took.
    fn take_into(self, s: &mut Session, now: u64, records: &mut Vec<LogEvent>) -> Option<u32> {
        for saved in self.saved {
            session_machine::on_saved(s, saved, now);
        }
        if let Some((token, fingerprint)) = self.merged {
            session_machine::on_summary_merged(s, &token, &fingerprint);
        }
        if let Some((marker, found)) = self.arrival {
            session_machine::on_arrival(s, &marker, found, now);
        }
        if let Some((marker, verdict, record)) = self.followed
            && session_machine::on_followed(s, &marker, verdict)
        {
            records.push(record);
        }
        self.injected
            .map(|injected| session_machine::on_resume_injected(s, injected, now))
    }
}

/// A save of the session's work, if its project is known.
pub(super) fn save_request(
    view: &SessionView,
    trigger: SaveTrigger,
    checkpoint: bool,
) -> Option<SaveRequest> {
    Some(SaveRequest {
        session: Some(view.key.clone()),
        project: view.project.clone()?,
        working_dir: view.working_dir.clone(),
        transcript: view.transcript.clone(),
        context: view.context.clone(),
        trigger,
        checkpoint,
    })
}

/// `events` as lines of the session's project (none without one).
fn project_events(view: &SessionView, events: Vec<LogEvent>) -> Vec<ProjectEvent> {
    let Some(project) = &view.project else {
        return Vec::new();
    };
    events
        .into_iter()
        .map(|event| ProjectEvent {
            project: project.clone(),
            session: view.key.clone(),
            event,
        })
        .collect()
}

/// The pipeline's trigger for a save the machine asked for.
fn trigger_for(reason: SaveReason) -> SaveTrigger {
    match reason {
        SaveReason::Threshold(level) => SaveTrigger::Threshold(level),
        SaveReason::PreCompact(trigger) => SaveTrigger::PreCompact(trigger),
        SaveReason::UnannouncedCompaction => SaveTrigger::UnannouncedCompaction,
    }
}

fn say(outcome: &mut Outcome, person: Option<String>, model: Option<String>) {
    if let Some(text) = person {
        outcome.say(text);
    }
    if let Some(text) = model {
        outcome.add_context(text);
    }
}

/// Why hookd cannot keep this project's state, and which of its settings
/// it ignored.
fn project_problems(project: &Path, config: &Effective) -> Vec<String> {
    let mut out = config.warnings.clone();
    match crate::workflow::Workflow::new(project).open() {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => out.push(format!(
            "{e}; hookd keeps no state for this project until that is fixed"
        )),
        _ => {}
    }
    out
}

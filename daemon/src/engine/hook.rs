//! One hook, end to end: decode it, read the session's file, let the
//! session machine decide under one registry lock, then carry out what it
//! decided (saves, resume prompts, words, `events.jsonl` lines) and answer
//! in the harness's format.

use super::{ConfigSource, Engine, ProjectEvent, context_of};
use crate::harness::{self, Event, HookEvent, Outcome, SessionReading};
use crate::pipeline::{SaveRequest, SaveTrigger};
use crate::session_machine::{self, Effect};
use crate::sessions::{SessionKey, SummaryToken};
use crate::time::now_ms;
use protocol::config::{Config, Effective};
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
        // A broken configuration is said to the person once while it lasts
        // (status shows it all along); every hook notes it for the
        // harness's verbose mode. A project's file is named, not quoted:
        // its words are the repository's.
        let project = event.project_dir.as_deref();
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

        let launch = self.launch_point(&event, peer_pid).await;
        let now = now_ms();
        let (key, new_session) = {
            let mut registry = self.registry();
            let known = registry.len();
            let observed = registry.observe(&event, now).map(|s| {
                if let Some(launch) = launch {
                    s.take_launch(launch);
                }
                s.key.clone()
            });
            let new_session = registry.len() > known;
            for gone in registry.evict_over(config.config.sessions.max_sessions) {
                self.watcher.unfollow(&gone);
            }
            match observed {
                Some(key) => (key, new_session),
                None => {
                    tracing::debug!(event = %event.name().kebab(), "hook without a session id");
                    return Response::Hook(harness::render(&event, outcome));
                }
            }
        };
        if let Some(path) = &event.transcript_path {
            self.follow(&key, path);
        }
        // What is on disk now: a hook never waits for the harness to write.
        let reading = self.read_file(&key).await;
        let (effects, project) = {
            let mut registry = self.registry();
            let Some(s) = registry.get_mut(&key) else {
                return Response::Hook(harness::render(&event, outcome));
            };
            let effects = session_machine::on_hook(s, &event, reading, &config.config, now);
            (effects, s.project_dir.clone())
        };
        let records = self
            .carry_out(&key, &event, effects, &config.config, &mut outcome)
            .await;
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
        self.record(
            project.map_or_else(Vec::new, |project| {
                records
                    .into_iter()
                    .map(|(kind, fields)| ProjectEvent {
                        project: project.clone(),
                        kind,
                        session: key.clone(),
                        fields,
                    })
                    .collect()
            }),
            &config.config,
        );
        self.touch();
        if new_session {
            // A session must survive a crash from its first event on; the
            // answer does not wait for the disk.
            let engine = self.clone();
            tokio::task::spawn_blocking(move || engine.flush());
        }
        Response::Hook(harness::render(&event, outcome))
    }

    /// The session's file changed between hooks: take the reading in.
    pub(super) async fn on_file_change(self: &Arc<Self>, key: &SessionKey, config: &Config) {
        let Some(reading) = self.read_file(key).await else {
            return;
        };
        let (effects, project) = {
            let mut registry = self.registry();
            let Some(s) = registry.get_mut(key) else {
                return;
            };
            let effects = session_machine::on_file_change(s, reading, config, now_ms());
            (effects, s.project_dir.clone())
        };
        let mut records = Vec::new();
        for effect in effects {
            match effect {
                Effect::Record { kind, fields } => {
                    records.extend(project.clone().map(|project| ProjectEvent {
                        project,
                        kind,
                        session: key.clone(),
                        fields,
                    }))
                }
                Effect::Save {
                    trigger,
                    checkpoint,
                    ..
                } => self.save_in_background(key, config, trigger, checkpoint),
                // Not awaited: the merge waits for the project's lock, which
                // a save holds through its checkpoint, and the watcher
                // serves every session.
                Effect::TakeSummaryFromFile => {
                    let (engine, key, config) = (self.clone(), key.clone(), config.clone());
                    let project = project.clone();
                    tokio::spawn(async move {
                        let Some(fields) = engine.take_summary_from_file(&key, &config).await
                        else {
                            return;
                        };
                        let records = project.map(|project| ProjectEvent {
                            project,
                            kind: "summary",
                            session: key,
                            fields,
                        });
                        engine.record(records.into_iter().collect(), &config);
                    });
                }
                _ => {}
            }
        }
        self.record(records, config);
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

    /// What is new in the session's file, read by its harness's rules.
    async fn read_file(&self, key: &SessionKey) -> Option<Result<SessionReading, String>> {
        let (path, cursor, usage) = {
            let registry = self.registry();
            let s = registry.get(key)?;
            (
                s.transcript_path.clone()?,
                s.cursor.clone(),
                s.usage.clone(),
            )
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
    /// arrival check, words, background saves. Returns the lines for
    /// `events.jsonl`.
    async fn carry_out(
        self: &Arc<Self>,
        key: &SessionKey,
        event: &HookEvent,
        effects: Vec<Effect>,
        config: &Config,
        outcome: &mut Outcome,
    ) -> Vec<(&'static str, serde_json::Value)> {
        let mut records = Vec::new();
        let mut later = Vec::new();
        let mut project_events = Vec::new();
        for effect in effects {
            match effect {
                Effect::Save {
                    trigger,
                    checkpoint,
                    first: true,
                } => {
                    let pre_compact = matches!(trigger, SaveTrigger::PreCompact(_));
                    if let Some(request) = self.save_request(key, config, trigger, checkpoint) {
                        let report = self.run_pipeline(request, config.clone()).await;
                        if pre_compact {
                            // A new compaction: only its own token lets a block in.
                            if let Some(s) = self.registry().get_mut(key) {
                                s.summary_token = report.summary_token.map(|token| SummaryToken {
                                    token,
                                    epoch: s.epoch,
                                    used_by: None,
                                });
                            }
                            outcome.plain_stdout = report.instructions;
                        }
                    }
                }
                Effect::Resume { source } => {
                    self.resume_on_start(key, &source, config, outcome, &mut project_events)
                        .await;
                }
                Effect::TakeSummary { summary, from } => {
                    if let Some(fields) = self.take_summary(key, summary, from, config).await {
                        records.push(("summary", fields));
                    }
                }
                Effect::TakeSummaryFromFile => {
                    if let Some(fields) = self.take_summary_from_file(key, config).await {
                        records.push(("summary", fields));
                    }
                }
                Effect::Record { kind, fields } => records.push((kind, fields)),
                other => later.push(other),
            }
        }
        self.memory_on_hook(key, event, config, outcome).await;
        for effect in later {
            match effect {
                Effect::CheckArrival => {
                    let found = self.arrived(key).await;
                    let decided = self
                        .registry()
                        .get_mut(key)
                        .map(|s| session_machine::on_arrival(s, found, now_ms()))
                        .unwrap_or_default();
                    for effect in decided {
                        match effect {
                            Effect::Say { person, model } => say(outcome, person, model),
                            Effect::Record { kind, fields } => records.push((kind, fields)),
                            _ => {}
                        }
                    }
                }
                Effect::CheckFollowed => records.extend(self.check_followed(key, config).await),
                Effect::Say { person, model } => {
                    if let Some(text) = person.as_deref().or(model.as_deref()) {
                        tracing::info!(session = %key, "{text}");
                    }
                    say(outcome, person, model);
                }
                Effect::Save {
                    trigger,
                    checkpoint,
                    ..
                } => self.save_in_background(key, config, trigger, checkpoint),
                Effect::Record { .. }
                | Effect::Resume { .. }
                | Effect::TakeSummary { .. }
                | Effect::TakeSummaryFromFile => {}
            }
        }
        // The resume's own lines, after the ones that led to it.
        self.record(project_events, config);
        records
    }

    /// Whether the agent's first tool calls after the resume prompt arrived
    /// followed it: read from the session's file, within the capture's
    /// scan window, once the prompt arrived. The lines for `events.jsonl`.
    async fn check_followed(
        &self,
        key: &SessionKey,
        config: &Config,
    ) -> Vec<(&'static str, serde_json::Value)> {
        let Some((marker, from, path)) = self.registry().get(key).and_then(|s| {
            let watch = s
                .follow_watch
                .as_ref()
                .filter(|_| s.resume_pending.is_none())?;
            let path = s.transcript_path.clone()?;
            Some((watch.marker.clone(), watch.from_offset, path))
        }) else {
            return Vec::new();
        };
        // The first calls after the prompt follow it closely: a window from
        // where the file stood, never the whole file, on every hook until
        // they come.
        let max_bytes = config
            .capture
            .transcript_scan_bytes
            .min(FOLLOW_WINDOW_BYTES);
        let adapter = harness::adapter(key.harness);
        let read_after = marker.clone();
        let calls = tokio::task::spawn_blocking(move || {
            adapter.calls_after_marker(&path, max_bytes, &read_after, from)
        })
        .await
        .ok()
        .and_then(Result::ok)
        .flatten();
        self.registry()
            .get_mut(key)
            .map(|s| session_machine::on_follow_reading(s, &marker, calls))
            .unwrap_or_default()
            .into_iter()
            .filter_map(|effect| match effect {
                Effect::Record { kind, fields } => Some((kind, fields)),
                _ => None,
            })
            .collect()
    }

    /// Whether the injected resume prompt has reached the session's file.
    /// Harnesses write their files in batches (Claude Code every 100 ms):
    /// the injection gets time to land before it is called lost.
    async fn arrived(&self, key: &SessionKey) -> bool {
        let Some((pending, path)) = self
            .registry()
            .get(key)
            .and_then(|s| Some((s.resume_pending.clone()?, s.transcript_path.clone()?)))
        else {
            return false;
        };
        let adapter = harness::adapter(key.harness);
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

    /// Merges a compaction summary into the session's saved state; the
    /// line for `events.jsonl` says how it went.
    async fn take_summary(
        &self,
        key: &SessionKey,
        summary: String,
        from: &'static str,
        config: &Config,
    ) -> Option<serde_json::Value> {
        let (project, token) = {
            let registry = self.registry();
            let s = registry.get(key)?;
            (s.project_dir.clone()?, s.live_summary_token())
        };
        let request = crate::pipeline::SummaryRequest {
            session: key.clone(),
            project,
            summary,
            from,
            token,
        };
        let (config, resources) = (config.clone(), self.resources.clone());
        let fields = tokio::task::spawn_blocking(move || {
            let fields = crate::pipeline::take_summary(&request, &config, &resources);
            (fields, request.token)
        })
        .await
        .ok();
        let (fields, token) = fields?;
        // The token lets one block in: the one just merged.
        if fields["merged"] == true
            && let (Some(token), Some(fingerprint)) = (token, fields["fingerprint"].as_str())
            && let Some(s) = self.registry().get_mut(key)
            && let Some(live) = s.summary_token.as_mut()
            && live.token == token.token
        {
            live.used_by = Some(fingerprint.to_owned());
        }
        Some(fields)
    }

    /// The compaction summary the session's file keeps, merged like one a
    /// hook brought; nothing when the file holds none (yet).
    async fn take_summary_from_file(
        &self,
        key: &SessionKey,
        config: &Config,
    ) -> Option<serde_json::Value> {
        let path = self.registry().get(key)?.transcript_path.clone()?;
        let adapter = harness::adapter(key.harness);
        let summary =
            tokio::task::spawn_blocking(move || adapter.compaction_summary_in_file(&path))
                .await
                .ok()?
                .ok()??;
        self.take_summary(key, summary, "transcript", config).await
    }

    fn save_in_background(
        self: &Arc<Self>,
        key: &SessionKey,
        config: &Config,
        trigger: SaveTrigger,
        checkpoint: bool,
    ) {
        if let Some(request) = self.save_request(key, config, trigger, checkpoint) {
            self.spawn_save(request, config.clone());
        }
    }

    /// A save of `key`'s work, if we know its project.
    pub(super) fn save_request(
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
            working_dir: s.working_dir.clone(),
            transcript: s.transcript_path.clone(),
            context: context_of(s, config),
            trigger,
            checkpoint,
        })
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

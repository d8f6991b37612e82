//! Running the pre-compact pipeline for the engine, and writing what it
//! gathered into the projects' `events.jsonl`.

use super::{Engine, ProjectEvent};
use crate::pipeline::{self, SaveReport, SaveRequest};
use crate::session_machine::{self, CheckpointTaken, Saved};
use crate::test_events::{TestEvent, TestEvents};
use crate::time::now_ms;
use crate::workflow::Workflow;
use protocol::config::Config;
use std::sync::Arc;

impl Engine {
    /// Runs a save in the background and records how it went.
    pub(super) fn spawn_save(self: &Arc<Self>, request: SaveRequest, config: Config) {
        let engine = self.clone();
        tokio::spawn(async move {
            engine.run_pipeline(request, config).await;
        });
    }

    /// Runs the pipeline and has the session take in how it went: one
    /// registry lock, at the end.
    pub(super) async fn run_pipeline(
        self: &Arc<Self>,
        request: SaveRequest,
        config: Config,
    ) -> SaveReport {
        let key = request.session.clone();
        let (report, saved) = self.run_save(request, config).await;
        if let Some(key) = key
            && let Some(s) = self.registry().get_mut(&key)
        {
            session_machine::on_saved(s, saved.clone(), now_ms());
        }
        self.announce_saved(&saved);
        self.touch();
        report
    }

    /// Runs the pipeline off the async threads, without the registry: the
    /// report, and what the session takes in of it.
    pub(super) async fn run_save(
        &self,
        request: SaveRequest,
        config: Config,
    ) -> (SaveReport, Saved) {
        let what = request.trigger.to_string();
        let wants_checkpoint = request.checkpoint;
        let project = request.project.clone();
        let resources = self.resources.clone();
        let report =
            tokio::task::spawn_blocking(move || pipeline::save(&request, &config, &resources))
                .await
                .unwrap_or_else(|e| SaveReport {
                    problems: vec![format!("the save failed: {e}")],
                    ..SaveReport::default()
                });
        for problem in &report.problems {
            tracing::warn!(trigger = %what, "{problem}");
        }
        if report.checkpoint.is_some() {
            self.sync_after_checkpoint(&project);
        }
        let saved = Saved {
            what,
            ok: report.ok(),
            // What went wrong comes first; the file only when all went well.
            detail: match report.problems.first() {
                Some(problem) => Some(problem.clone()),
                None => report.state_file.as_ref().map(|p| p.display().to_string()),
            },
            skipped: report.skipped.first().cloned(),
            checkpoint: wants_checkpoint.then(|| CheckpointTaken {
                made: report.checkpoint.is_some(),
                detail: report
                    .checkpoint
                    .clone()
                    .or_else(|| report.checkpoint_note.clone()),
            }),
            compaction_token: None,
        };
        (report, saved)
    }

    /// Tells a test waiting on it that a save ended (after the session took
    /// it in, for a save of the background).
    pub(super) fn announce_saved(&self, saved: &Saved) {
        let events = &self.identity.test_events;
        events.emit(TestEvent::Saved, &saved.what);
        if let Some(checkpoint) = &saved.checkpoint {
            let result = if checkpoint.made { "ok" } else { "failed" };
            events.emit(TestEvent::Checkpoint, result);
        }
    }

    /// Writes gathered events into the projects' `events.jsonl`, in their
    /// order, off the async threads; the caller waits for the disk.
    pub(super) async fn record(&self, events: Vec<ProjectEvent>, config: &Config) {
        if events.is_empty() {
            return;
        }
        let exclude = config.capture.exclude_workflow_dir;
        let test_events = self.identity.test_events.clone();
        let written =
            tokio::task::spawn_blocking(move || write_events(events, exclude, &test_events)).await;
        if let Err(e) = written {
            tracing::debug!(error = %e, "the events.jsonl writer failed");
        }
    }
}

/// Appends each event to its project's `events.jsonl`. Blocking.
fn write_events(events: Vec<ProjectEvent>, exclude_from_git: bool, test_events: &TestEvents) {
    for e in events {
        let workflow = Workflow::new(&e.project);
        if let Err(err) = workflow
            .ensure(exclude_from_git)
            .and_then(|_| workflow.append_event(Some(&e.session), &e.event))
        {
            tracing::debug!(project = %e.project.display(), error = %err, "cannot append to events.jsonl");
        }
        test_events.emit(TestEvent::Recorded, e.event.kind());
    }
}

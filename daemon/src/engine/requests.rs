//! Requests a person makes through hookctl that are neither hooks nor
//! budget, memory or resume questions: records and saves.

use super::{Engine, SessionView};
use crate::capture::records;
use crate::pipeline::SaveRequest;
use crate::sessions::SessionKey;
use crate::state::SaveTrigger;
use crate::workflow::Workflow;
use protocol::wire::{ErrorKind, ErrorReply, RecordRequest, Response, SaveQuery, SaveSummary};
use std::path::Path;
use std::sync::Arc;

impl Engine {
    /// `hookctl decision | blocker | phase | next | note`. The memory
    /// notes first that hookd wrote the record (see `memory::attest_record`).
    pub(super) async fn record_request(&self, mut request: RecordRequest) -> Response {
        request.record = records::without_private(request.record);
        let (config, _) = self
            .settings
            .for_request(Some(&request.project), &Default::default());
        let key = self.session_for(&request.project, request.session.as_deref());
        let session = request
            .session
            .or_else(|| key.as_ref().map(|k| k.id.clone()));
        let resources = self.resources.clone();
        let result = tokio::task::spawn_blocking(move || {
            let config = &config.config;
            let project = &request.project;
            crate::memory::attest_record(
                &resources.memories,
                config,
                project,
                key.as_ref(),
                &request.record,
            );
            Workflow::new(project)
                .ensure(config.capture.exclude_workflow_dir)
                .and_then(|dir| records::append(&dir, &request.record, session.as_deref()))
        })
        .await
        .map_err(std::io::Error::other)
        .and_then(|r| r);
        match result {
            Ok(()) => Response::Ok,
            Err(e) => Response::Error(ErrorReply::new(
                ErrorKind::Internal,
                format!("nothing recorded: {e}"),
            )),
        }
    }

    /// `hookctl save`: the whole pipeline, now.
    pub(super) async fn save_now(self: &Arc<Self>, query: SaveQuery) -> Response {
        let key = self.session_for(&query.project, query.session.as_deref());
        let (config, config_problem) = self
            .settings
            .for_request(Some(&query.project), &Default::default());
        let view = key.as_ref().and_then(|k| {
            let registry = self.registry();
            registry.get(k).map(|s| SessionView::of(s, &config.config))
        });
        let request = view
            .as_ref()
            .and_then(|view| super::hook::save_request(view, SaveTrigger::Manual, query.checkpoint))
            .unwrap_or_else(|| SaveRequest {
                session: None,
                project: query.project.clone(),
                working_dir: None,
                transcript: None,
                context: None,
                trigger: SaveTrigger::Manual,
                checkpoint: query.checkpoint,
            });
        let mut report = self.run_pipeline(request, config.config.clone()).await;
        // The checkpoint was asked for (and not switched off in the
        // configuration): not getting one is a failure, with its reason. A
        // save that stopped before the checkpoint step has said why already.
        if query.checkpoint && config.config.checkpoint.enabled && report.checkpoint.is_none() {
            let why = match &report.checkpoint_note {
                Some(note) => Some(note.clone()),
                None if report.problems.is_empty() => Some("no reason was given".into()),
                None => None,
            };
            if let Some(why) = why
                && !report.problems.contains(&why)
            {
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
            skipped: report.skipped,
            warnings: config_problem.into_iter().collect(),
        }))
    }

    /// The session a person named (an id or a unique prefix), else the
    /// most recent one working in `project`.
    pub(super) fn session_for(&self, project: &Path, named: Option<&str>) -> Option<SessionKey> {
        match named {
            Some(id) => self
                .registry()
                .matching(Some(id))
                .first()
                .map(|s| s.key.clone()),
            None => self.latest_session(project),
        }
    }

    /// The most recent session working in `project` (or a directory above it).
    pub(super) fn latest_session(&self, project: &Path) -> Option<SessionKey> {
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
}

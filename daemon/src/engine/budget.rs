//! `hookctl context-budget | context-score | summarize | context-report`:
//! the context budget on request, for the project's latest session (or the
//! one named) and its saved state.

use super::{Engine, empty_context};
use crate::budget::{self, plan, summary};
use crate::project_fs::Dir;
use crate::resume::{self, Loaded};
use crate::sessions::SessionKey;
use crate::time::now_ms;
use crate::workflow::Workflow;
use protocol::budget::{
    BudgetQuery, ContextReport, ReportQuery, ScoreQuery, SummaryQuery, SummaryReply,
};
use protocol::config::Config;
use protocol::wire::{ErrorKind, ErrorReply, Response};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What the daemon knows of the session a request is about.
struct SessionFacts {
    key: Option<SessionKey>,
    transcript: Option<PathBuf>,
    /// Its compaction point.
    window: Option<u64>,
    /// The model's whole window.
    window_tokens: Option<u64>,
    tokens_used: Option<u64>,
    pressure: Option<f64>,
}

fn error(kind: ErrorKind, message: impl Into<String>) -> Response {
    Response::Error(ErrorReply::new(kind, message.into()))
}

/// The project-relative path of `file`, or an error that says why not.
fn project_file(project: &Path, file: &Path) -> Result<String, Response> {
    let shown = file.display();
    budget::files::inside(project, &file.to_string_lossy()).ok_or_else(|| {
        error(
            ErrorKind::NotFound,
            format!(
                "{shown} is not a file inside the project {} (only the project's own files are read)",
                project.display()
            ),
        )
    })
}

async fn off_thread(work: impl FnOnce() -> Response + Send + 'static) -> Response {
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| {
        error(
            ErrorKind::Internal,
            format!("the context budget task failed: {e}"),
        )
    })
}

fn saved_state(
    project: &Path,
    resources: &crate::resources::Resources,
) -> Option<crate::state::ContextState> {
    match resume::load(&Workflow::new(project), None, &resources.saved_states) {
        Loaded::Found { state, .. } => Some(*state),
        _ => None,
    }
}

fn cache_dir(project: &Path, config: &Config) -> Option<Dir> {
    if !config.budget.cache_summaries {
        return None;
    }
    let workflow = Workflow::new(project)
        .ensure(config.capture.exclude_workflow_dir)
        .ok()?;
    workflow
        .create_dir(summary::CACHE_DIR)
        .ok()
        .map(|(dir, _)| dir)
}

impl Engine {
    /// The project's configuration; a person asking gets told when it is broken.
    fn config_for(&self, project: &Path) -> Result<Config, Response> {
        match self
            .settings
            .for_request(Some(project), &Default::default())
        {
            (_, Some(problem)) => Err(error(
                ErrorKind::Config,
                format!("{problem} (`hookctl config` shows every setting and where it comes from)"),
            )),
            (effective, None) => Ok(effective.config.clone()),
        }
    }

    fn session_facts(
        &self,
        project: &Path,
        session: Option<&str>,
        config: &Config,
    ) -> SessionFacts {
        let key = self.session_for(project, session);
        let registry = self.registry();
        let s = key.as_ref().and_then(|k| registry.get(k));
        let context =
            s.map(|s| super::context_of(s, config).unwrap_or_else(|| empty_context(s, config)));
        // Without usage read from the transcript, only the window is known.
        let measured = context
            .as_ref()
            .filter(|_| s.is_some_and(|s| s.usage.is_some()));
        SessionFacts {
            key: key.clone(),
            transcript: s.and_then(|s| s.transcript_path.clone()),
            window: context.as_ref().map(|c| c.tokens_max),
            window_tokens: context.as_ref().map(|c| c.window_tokens),
            tokens_used: measured.map(|c| c.tokens_used),
            pressure: measured.map(|c| c.pressure),
        }
    }

    /// `hookctl context-budget`.
    pub(super) async fn budget_request(self: &Arc<Self>, query: BudgetQuery) -> Response {
        let config = match self.config_for(&query.project) {
            Ok(config) => config,
            Err(reply) => return reply,
        };
        let facts = self.session_facts(&query.project, query.session.as_deref(), &config);
        let resources = self.resources.clone();
        let repositories = resources.repositories.clone();
        off_thread(move || {
            let state = saved_state(&query.project, &resources);
            let task = query
                .task
                .clone()
                .or_else(|| state.as_ref().map(plan::task_of))
                .filter(|t| !t.trim().is_empty());
            let Some(task) = task else {
                return error(
                    ErrorKind::BadRequest,
                    "no task: name one (`hookctl context-budget \"add OAuth support to the client\"`), \
                     or save the workflow state first (`hookctl save`)",
                );
            };
            let (total, source) = budget::total_budget(&config.budget, query.max_tokens, facts.window);
            let now = now_ms();
            let input = plan::PlanInput {
                project: &query.project,
                task,
                state: state.as_ref(),
                transcript: facts.transcript.as_deref(),
                files: None,
                changed: None,
                left_out: left_out(state.as_ref()),
                total_budget: total,
                budget_source: source,
                session: facts.key.as_ref().map(|k| k.id.clone()),
                config: &config.budget,
                cache_dir: cache_dir(&query.project, &config),
                now_ms: now,
                repositories: &repositories,
                repository: &crate::git::Access::ByPath,
            };
            match plan::plan(&input) {
                Ok(result) => {
                    if query.record {
                        let saved = Workflow::new(&query.project)
                            .ensure(config.capture.exclude_workflow_dir)
                            .and_then(|dir| plan::save_record(&dir, &result, now, config.budget.records_keep));
                        if let Err(e) = saved {
                            tracing::warn!(error = %e, "cannot save the budget record");
                        }
                    }
                    Response::Budget(Box::new(result))
                }
                Err(e) => error(ErrorKind::BadRequest, e.to_string()),
            }
        })
        .await
    }

    /// `hookctl context-score`.
    pub(super) async fn score_request(self: &Arc<Self>, query: ScoreQuery) -> Response {
        let config = match self.config_for(&query.project) {
            Ok(config) => config,
            Err(reply) => return reply,
        };
        let facts = self.session_facts(&query.project, query.session.as_deref(), &config);
        let resources = self.resources.clone();
        let repositories = resources.repositories.clone();
        off_thread(move || {
            let rel = match project_file(&query.project, &query.file) {
                Ok(rel) => rel,
                Err(reply) => return reply,
            };
            let state = saved_state(&query.project, &resources);
            let task = query
                .task
                .clone()
                .or_else(|| state.as_ref().map(plan::task_of))
                .unwrap_or_default();
            let input = plan::PlanInput {
                project: &query.project,
                task,
                state: state.as_ref(),
                transcript: facts.transcript.as_deref(),
                files: None,
                changed: None,
                left_out: left_out(state.as_ref()),
                total_budget: 0,
                budget_source: String::new(),
                session: facts.key.as_ref().map(|k| k.id.clone()),
                config: &config.budget,
                cache_dir: None,
                now_ms: now_ms(),
                repositories: &repositories,
                repository: &crate::git::Access::ByPath,
            };
            Response::Score(Box::new(plan::score_one(&input, &rel)))
        })
        .await
    }

    /// `hookctl summarize`.
    pub(super) async fn summarize_request(self: &Arc<Self>, query: SummaryQuery) -> Response {
        let config = match self.config_for(&query.project) {
            Ok(config) => config,
            Err(reply) => return reply,
        };
        off_thread(move || {
            let Some(level) = summary::Level::parse(&query.level) else {
                return error(
                    ErrorKind::BadRequest,
                    format!(
                        "unknown level `{}`: use full, detailed, summary or stub",
                        query.level
                    ),
                );
            };
            let rel = match project_file(&query.project, &query.file) {
                Ok(rel) => rel,
                Err(reply) => return reply,
            };
            let cache = if query.cache {
                cache_dir(&query.project, &config)
            } else {
                None
            };
            match summary::summarize(&query.project, &rel, level, cache.as_ref()) {
                Ok(s) => Response::Summary(Box::new(SummaryReply {
                    full_tokens: summary::full_tokens(&query.project, &rel) as u64,
                    path: s.path,
                    level: s.level.as_str().to_owned(),
                    tokens: s.tokens as u64,
                    text: s.text,
                    cached: s.cached,
                })),
                Err(e) => error(ErrorKind::Internal, format!("cannot read {rel}: {e}")),
            }
        })
        .await
    }

    /// `hookctl context-report`.
    pub(super) async fn report_request(self: &Arc<Self>, query: ReportQuery) -> Response {
        let config = match self.config_for(&query.project) {
            Ok(config) => config,
            Err(reply) => return reply,
        };
        let facts = self.session_facts(&query.project, query.session.as_deref(), &config);
        off_thread(move || {
            let workflow = Workflow::new(&query.project);
            let session = facts
                .key
                .as_ref()
                .map(|k| k.id.clone())
                .or(query.session.clone());
            let only = query.session.as_ref().and(session.as_deref());
            let transitions =
                match budget::report::totals(&workflow.path(crate::workflow::EVENTS_FILE), only) {
                    Ok(t) => t,
                    Err(e) => {
                        return error(
                            ErrorKind::Internal,
                            format!(
                                "cannot read {}: {e}",
                                workflow.path(crate::workflow::EVENTS_FILE).display()
                            ),
                        );
                    }
                };
            let latest = plan::latest_record(&workflow, only);
            Response::Report(Box::new(ContextReport {
                session,
                tokens_used: facts.tokens_used,
                tokens_max: facts.window.filter(|_| facts.tokens_used.is_some()),
                window_tokens: facts.window_tokens.filter(|_| facts.tokens_used.is_some()),
                pressure: facts.pressure,
                records: plan::record_count(&workflow),
                record_file: latest.as_ref().map(|(p, _)| p.clone()),
                record: latest.map(|(_, r)| r),
                transitions,
            }))
        })
        .await
    }
}

/// Another session's changes, as the saved state found them: not this
/// session's files to reload.
fn left_out(state: Option<&crate::state::ContextState>) -> Vec<String> {
    state
        .map(|s| s.changed_elsewhere.iter().map(|m| m.path.clone()).collect())
        .unwrap_or_default()
}

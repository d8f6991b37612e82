//! After a compaction: inject the resume prompt, and make sure it arrived.
//!
//! On SessionStart (source `compact`, and `resume` when configured) the saved
//! state is loaded, validated and rendered, and goes to the model as
//! additional context with a unique marker. Public reports say SessionStart
//! output sometimes does not reach the model, so on the next prompt or tool
//! call we look for the marker in the transcript; if it is missing we inject
//! the prompt once more through that hook, and record how it went.

use super::{Engine, SessionView};
use crate::events::{self, LogEvent, Transition};
use crate::git;
use crate::harness::{Outcome, StartSource};
use crate::resources::Resources;
use crate::resume::{self, Loaded};
use crate::session_machine::Injected;
use crate::sessions::FollowWatch;
use crate::state::{ContextState, TaskStatus};
use crate::sync::Machine;
use crate::sync::import::{self, SyncedState};
use crate::time::now_ms;
use crate::workflow::Workflow;
use protocol::config::Config;
use protocol::wire::{ContextStatus, ErrorKind, ErrorReply, Response, ResumeQuery, ResumeReport};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// How long after an injection its absence from the transcript means it was lost.
pub(super) const ARRIVAL_SETTLE_MS: u64 = 400;
pub(super) const ARRIVAL_POLL: std::time::Duration = std::time::Duration::from_millis(25);

/// A marker no two injections share.
fn new_marker() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mixed =
        now_ms().wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (u64::from(std::process::id()) << 32) ^ n;
    format!("[hookd-resume {:012x}]", mixed & 0xFFFF_FFFF_FFFF)
}

/// What a resume found and made.
struct Prepared {
    report: ResumeReport,
    /// The rendered prompt's format and sizes.
    fitted: Option<crate::prompt::Fitted>,
    /// Why nothing is injected, when nothing is.
    not_used: Option<String>,
    problems: Vec<String>,
    /// What following the prompt means (no epoch or marker yet).
    follow: Option<FollowWatch>,
}

/// What the resume prompt asks the agent to pick up: the reload list's
/// files, the first next action's target and "read first" files, the task
/// in progress.
fn follow_watch(state: &ContextState) -> FollowWatch {
    let next = state.next_actions.first();
    let mut files: Vec<String> = state
        .context_to_reload
        .iter()
        .flat_map(|r| r.files.iter().map(|f| f.path.clone()))
        .chain(
            next.into_iter()
                .flat_map(|n| n.context_needed.iter().cloned()),
        )
        .chain(state.active_work.file_path.clone())
        .filter(|f| !f.trim().is_empty())
        .collect();
    let mut seen = std::collections::HashSet::new();
    files.retain(|f| seen.insert(f.clone()));
    let task = state
        .tasks
        .iter()
        .find(|t| t.status == TaskStatus::InProgress)
        .or_else(|| {
            let id = state.active_work.entity_id.as_ref()?;
            state.tasks.iter().find(|t| &t.id == id)
        });
    FollowWatch {
        epoch: 0,
        marker: String::new(),
        from_offset: None,
        files,
        next_target: next
            .map(|n| n.target.trim().to_owned())
            .filter(|t| !t.is_empty()),
        task_id: task
            .map(|t| t.id.clone())
            .or_else(|| state.active_work.entity_id.clone()),
        task_title: task.map(|t| t.title.clone()).filter(|t| !t.is_empty()),
    }
}

/// What a resume is asked for.
struct Ask {
    project: PathBuf,
    /// The session whose lineage's state is wanted.
    session: Option<String>,
    transcript: Option<PathBuf>,
    /// Set when the prompt is injected: it is looked for afterwards.
    marker: Option<String>,
    /// Render the prompt, or only validate the state.
    render: bool,
    /// The session's context now, which sizes what the prompt holds.
    now: Option<ContextStatus>,
    /// Offer another machine's newer synced state for this branch
    /// (`hookctl resume` and `validate`; a compaction resumes its own).
    offer_synced: bool,
}

/// The newest state another machine synced for the branch checked out in
/// `project`, when the user turned sync on; with `unless_offered`, none
/// when every tip a pull brought was offered already (told from the refs
/// alone, before any commit or file is read).
pub(super) fn synced_state(
    resources: &Resources,
    project: &Path,
    config: &Config,
    unless_offered: bool,
) -> Option<SyncedState> {
    config.sync.remote.as_ref()?;
    let state_dir = resources.state_dir.as_ref()?;
    let machine = match Machine::for_sync(state_dir, &config.sync) {
        Ok(machine) => machine,
        Err(why) => {
            tracing::warn!("{why}; synced states are not offered");
            return None;
        }
    };
    let pulled = match crate::sync::Ledger::in_state_dir(state_dir).read() {
        Ok(pulled) => pulled,
        Err(why) => {
            tracing::warn!("{why}; synced states are not offered");
            return None;
        }
    };
    let offered = unless_offered.then(|| import::offered(state_dir));
    let at = project.to_path_buf();
    let found = resources
        .repositories
        .bounded(project, git::GIT_DEADLINE, move |_| {
            let branch = git::head_info(&at)?.branch;
            if let Some(offered) = &offered
                && !import::something_to_offer(&at, &branch, &machine, &pulled, offered)?
            {
                return Ok(None);
            }
            import::newest_state(&at, &branch, &machine, &pulled)
        });
    match found {
        Ok(found) => found,
        // Nothing syncs outside a repository.
        Err(git::GitError::NotARepository { .. }) => None,
        Err(e) => {
            tracing::warn!(project = %project.display(), error = %e, "cannot read the synced states");
            None
        }
    }
}

/// The state to resume: this machine's own, or another machine's newer
/// one for the branch (written to `.workflow/` when `take_in`, so that the
/// rest of hookd sees it).
fn choose(
    local: Loaded,
    synced: Option<SyncedState>,
    project: &Path,
    resources: &Resources,
    take_in: bool,
    config: &Config,
) -> (Loaded, Option<String>) {
    let own = match &local {
        Loaded::Found { state, .. } => Some(&**state),
        _ => None,
    };
    let Some(synced) = synced.filter(|s| import::is_newer(s, own)) else {
        return (local, None);
    };
    let mut note = None;
    let path = if take_in {
        let lock = resources.projects.for_path(project);
        let _held = lock.lock().unwrap_or_else(|p| p.into_inner());
        let exclude = config.capture.exclude_workflow_dir;
        match import::take_in(project, &resources.saved_states, &synced, exclude) {
            Ok(()) => Workflow::new(project).path(crate::state::STATE_FILE),
            Err(why) => {
                note = Some(format!("the synced state was not written here: {why}"));
                PathBuf::from(format!("{}@{}", sync_ref(&synced), short(&synced.commit)))
            }
        }
    } else {
        PathBuf::from(format!("{}@{}", sync_ref(&synced), short(&synced.commit)))
    };
    let loaded = Loaded::Found {
        state: Box::new(synced.state),
        path,
    };
    (loaded, note)
}

fn sync_ref(synced: &SyncedState) -> String {
    crate::sync::state_ref(&synced.machine_id, &synced.branch)
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// load → validate → render, for a project (and a session's lineage).
fn prepare(ask: Ask, config: Config, resources: &Resources) -> Prepared {
    let Ask {
        project,
        session,
        transcript,
        marker,
        render,
        now,
        offer_synced,
    } = ask;
    let workflow = Workflow::new(&project);
    let local = resume::load(&workflow, session.as_deref(), &resources.saved_states);
    let synced = offer_synced
        .then(|| synced_state(resources, &project, &config, false))
        .flatten();
    let (loaded, take_in_note) = choose(local, synced, &project, resources, render, &config);
    let (state, path) = match loaded {
        Loaded::Found { state, path } => (state, path),
        Loaded::Missing => {
            let report = ResumeReport {
                summary: resume::NO_STATE.into(),
                ..ResumeReport::default()
            };
            return Prepared {
                report,
                fitted: None,
                not_used: Some("no saved state".into()),
                problems: Vec::new(),
                follow: None,
            };
        }
        Loaded::Unusable(why) => {
            let report = ResumeReport {
                summary: format!("hookd: {why}"),
                ..ResumeReport::default()
            };
            return Prepared {
                report,
                fitted: None,
                not_used: Some(why),
                problems: Vec::new(),
                follow: None,
            };
        }
    };
    // A session of this machine's did not write another machine's state.
    let transcript = transcript.filter(|_| state.synced_from.is_none());
    let checks = resume::validate(
        &resources.repositories,
        &project,
        &state,
        transcript.as_deref(),
        &config,
    );
    let (fitted, problems) = if render {
        let (fitted, problems) = resume::render(
            &resources.memories,
            &project,
            &state,
            &checks,
            marker.as_deref(),
            &config,
            now.as_ref(),
        );
        (Some(fitted), problems)
    } else {
        (None, Vec::new())
    };
    let prompt = fitted.as_ref().map(|f| f.text.clone());
    let mut summary = resume::summary(&state, &checks);
    if let Some(note) = take_in_note {
        summary += &format!("\n{note}");
    }
    let report = ResumeReport {
        state_file: Some(path),
        captured_at: Some(state.captured_at.clone()),
        summary,
        checks,
        prompt,
    };
    Prepared {
        report,
        fitted,
        not_used: None,
        problems,
        follow: Some(follow_watch(&state)),
    }
}

impl Engine {
    /// SessionStart(compact | resume): hand the model its resume prompt.
    /// Returns the lines for `events.jsonl` (a `resume` line carries the
    /// epoch the hook decided in) and the prompt injected, for the session
    /// to take in.
    pub(super) async fn resume_on_start(
        self: &Arc<Self>,
        view: &SessionView,
        source: &StartSource,
        config: &Config,
        outcome: &mut Outcome,
    ) -> (Vec<LogEvent>, Option<Injected>) {
        let mut lines = Vec::new();
        let Some(project) = view.project.clone() else {
            return (lines, None);
        };
        let (key, transcript, now) = (&view.key, view.transcript.clone(), view.context.clone());
        let marker = new_marker();
        let work = {
            let (project, session, config, marker) = (
                project.clone(),
                key.id.clone(),
                config.clone(),
                marker.clone(),
            );
            let resources = self.resources.clone();
            move || {
                let ask = Ask {
                    project,
                    session: Some(session),
                    transcript,
                    marker: Some(marker),
                    render: true,
                    now,
                    offer_synced: false,
                };
                prepare(ask, config, &resources)
            }
        };
        let Ok(prepared) = tokio::task::spawn_blocking(work).await else {
            return (lines, None);
        };
        let report = prepared.report;
        match (prepared.not_used, report.prompt) {
            (None, Some(prompt)) => {
                outcome.add_context(prompt.clone());
                if config.resume.system_message {
                    outcome.system_message = Some(report.summary.clone());
                }
                let injected = Injected {
                    source: source.clone(),
                    marker: marker.clone(),
                    prompt,
                    // Without a session file there is nothing to look in,
                    // for the prompt or for the calls that followed it.
                    verify_arrival: config.resume.verify_arrival && view.transcript.is_some(),
                    follow: prepared.follow.filter(|_| view.transcript.is_some()),
                };
                if let Some(f) = &prepared.fitted {
                    lines.push(LogEvent::ContextTransition(Transition::resume(
                        f.format,
                        f.markdown_tokens as u64,
                        f.tokens as u64,
                        marker.clone(),
                    )));
                }
                lines.push(LogEvent::Resume(events::Resume::Injected {
                    source: source.clone(),
                    epoch: view.epoch,
                    injected: true,
                    format: prepared.fitted.as_ref().map(|f| f.format.to_owned()),
                    marker,
                    state_file: report.state_file.map(|p| p.display().to_string()),
                    captured_at: report.captured_at,
                    checks: report.checks,
                    template_problems: prepared.problems,
                }));
                (lines, Some(injected))
            }
            (why, _) => {
                // Only a compaction promises a state; a plain resume without one says nothing.
                if *source == StartSource::Compact {
                    outcome.system_message = Some(report.summary.clone());
                }
                lines.push(LogEvent::Resume(events::Resume::NotInjected {
                    source: source.clone(),
                    injected: false,
                    reason: why,
                }));
                (lines, None)
            }
        }
    }

    /// `hookctl resume` and `hookctl validate`.
    pub(super) async fn resume_request(
        self: &Arc<Self>,
        query: ResumeQuery,
        render: bool,
    ) -> Response {
        let (config, _) = self
            .settings
            .for_request(Some(&query.project), &Default::default());
        let session = self.session_for(&query.project, query.session.as_deref());
        let (transcript, now) = session
            .as_ref()
            .and_then(|k| {
                self.registry().get(k).map(|s| {
                    (
                        s.transcript_path.clone(),
                        super::context_of(s, &config.config),
                    )
                })
            })
            .unwrap_or_default();
        let project = query.project.clone();
        let only_session = query.session.clone();
        let resources = self.resources.clone();
        let work = move || {
            let ask = Ask {
                project,
                session: only_session,
                transcript,
                marker: None,
                render,
                now,
                offer_synced: true,
            };
            prepare(ask, config.config.clone(), &resources)
        };
        match tokio::task::spawn_blocking(work).await {
            Ok(prepared) => {
                let mut report = prepared.report;
                if render && let Some(prompt) = &report.prompt {
                    let workflow = Workflow::new(&query.project);
                    if let Err(e) = workflow
                        .write_atomic(crate::pipeline::RESUME_PROMPT_FILE, prompt.as_bytes())
                    {
                        report.summary += &format!(
                            "\n(cannot write {}: {e})",
                            crate::pipeline::RESUME_PROMPT_FILE
                        );
                    }
                }
                Response::Resume(Box::new(report))
            }
            Err(e) => Response::Error(ErrorReply::new(
                ErrorKind::Internal,
                format!("the resume failed: {e}"),
            )),
        }
    }
}

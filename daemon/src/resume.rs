//! The seed's resume workflow, after a compaction (or on `hookctl resume`):
//! find the state saved for this session, check it against the repository
//! as it is now, and render the resume prompt with the results on top.

use crate::budget::room::Room;
use crate::capture::workflow_file;
use crate::git::{self, GitError, Repositories, SnapshotOptions};
use crate::memory::Memories;
use crate::project_fs::Dir;
use crate::prompt;
use crate::render::{Renderer, clean_text};
use crate::saved_states::{Known, SavedStates};
use crate::state::{ContextState, HISTORY_DIR, STATE_FILE};
use crate::state::{TaskSource, TaskStatus};
use crate::workflow::Workflow;
use protocol::config::Config;
use protocol::wire::{Check, CheckStatus, ContextStatus};
use std::path::{Path, PathBuf};

/// Unexpected changes named in a check before "and N more".
const CHANGES_SHOWN: usize = 8;

/// What a person reads when nothing was saved, with how to save.
pub const NO_STATE: &str = "No saved state for this project yet: hookd saves one before each compaction, and `hookctl save` saves one now.";

pub enum Loaded {
    Missing,
    /// There is a file, but it cannot be trusted: why.
    Unusable(String),
    Found {
        state: Box<ContextState>,
        path: PathBuf,
    },
}

/// The state saved for `session` in this project: the project's latest if
/// it is that session's (or nobody's), else that session's newest in the
/// history. Only a file whose content hookd recorded in `saved` counts:
/// `.workflow/` is in the repository, and anyone who can commit can put a
/// state there.
pub fn load(workflow: &Workflow, session: Option<&str>, saved: &SavedStates) -> Loaded {
    let path = workflow.path(STATE_FILE);
    let dir = match workflow.open() {
        Ok(dir) => dir,
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Loaded::Missing;
        }
        Err(e) => return Loaded::Unusable(format!("cannot use {e}")),
    };
    let known = saved.known(workflow.project());
    let latest = match read_state(&dir, STATE_FILE, &known) {
        Ok(Some(state)) => state,
        Ok(None) => return Loaded::Missing,
        Err(why) => return Loaded::Unusable(why),
    };
    if latest.project_dir != workflow.project().display().to_string() {
        return Loaded::Unusable(format!(
            "{} was saved for {}, not for this project; not used",
            path.display(),
            latest.project_dir
        ));
    }
    let Some(id) = session else {
        return Loaded::Found {
            state: Box::new(latest),
            path,
        };
    };
    if latest.harness_session_id.as_deref().is_none_or(|s| s == id) {
        return Loaded::Found {
            state: Box::new(latest),
            path,
        };
    }
    // Another session saved since: look for this session's own last capture.
    if let Ok(history) = dir.open_dir(HISTORY_DIR) {
        let mut names = history.names().unwrap_or_default();
        crate::state::sort_history(&mut names);
        for name in names.into_iter().rev() {
            if let Ok(Some(state)) = read_state(&history, &name, &known)
                && state.harness_session_id.as_deref() == Some(id)
            {
                return Loaded::Found {
                    state: Box::new(state),
                    path: history.path().join(name),
                };
            }
        }
    }
    Loaded::Unusable(format!(
        "{} belongs to session {}, and nothing was saved for this one; not used",
        path.display(),
        latest.harness_session_id.unwrap_or_default()
    ))
}

/// A state file in `dir`: `None` when there is none, an error saying what
/// is wrong with one that cannot be read or that hookd did not write
/// (its content is not among those `known`).
pub(crate) fn read_state(
    dir: &Dir,
    name: &str,
    known: &Known,
) -> Result<Option<ContextState>, String> {
    let path = dir.path().join(name);
    let bytes = match dir.read(name, crate::workflow::MAX_FILE_BYTES) {
        Ok(Some(b)) => b,
        Ok(None) => return Ok(None),
        Err(e) => return Err(format!("cannot read {e}")),
    };
    let state = serde_json::from_slice(&bytes).map_err(|e| {
        format!(
            "{} is corrupt (line {}, column {}: {e}); not used",
            path.display(),
            e.line(),
            e.column()
        )
    })?;
    if !known.holds(&bytes) {
        return Err(format!(
            "{} was not written by hookd on this machine (a copy that came with the repository?); \
             not used. `hookctl save` saves a state of hookd's own",
            path.display()
        ));
    }
    Ok(Some(state))
}

fn check(name: &str, status: CheckStatus, detail: impl Into<String>) -> Check {
    Check {
        check: name.to_owned(),
        status,
        detail: detail.into(),
    }
}

/// validate_state: `git_status_matches`, `workflow_exists`, `task_valid`.
pub fn validate(
    repositories: &Repositories,
    project: &Path,
    state: &ContextState,
    transcript: Option<&Path>,
    config: &Config,
) -> Vec<Check> {
    vec![
        git_status_matches(repositories, project, state, config),
        workflow_exists(project, state),
        task_valid(project, state, transcript, config),
    ]
}

fn short(sha: &str) -> &str {
    sha.get(..10).unwrap_or(sha)
}

fn git_status_matches(
    repositories: &Repositories,
    project: &Path,
    state: &ContextState,
    config: &Config,
) -> Check {
    const NAME: &str = "git_status_matches";
    // Bounded like every git call made while a hook waits.
    let at = project.to_path_buf();
    let now = match repositories.bounded(project, git::GIT_DEADLINE, move |_| git::head_info(&at)) {
        Ok(now) => now,
        Err(GitError::NotARepository { .. }) if state.git.is_none() => {
            return check(
                NAME,
                CheckStatus::Pass,
                "not a git repository: nothing to compare",
            );
        }
        Err(e) => return check(NAME, CheckStatus::Fail, e.to_string()),
    };
    let Some(then) = &state.git else {
        return check(
            NAME,
            CheckStatus::Warn,
            "the state was saved without git information",
        );
    };
    if now.branch != then.branch {
        return check(
            NAME,
            CheckStatus::Fail,
            format!(
                "the state was saved on branch {}, but HEAD is now on {}",
                then.branch, now.branch
            ),
        );
    }
    let mut problems = Vec::new();
    if now.head != then.head {
        problems.push(format!(
            "HEAD moved from {} to {}",
            then.head.as_deref().map(short).unwrap_or("(unborn)"),
            now.head.as_deref().map(short).unwrap_or("(unborn)")
        ));
    }
    let opts = SnapshotOptions {
        include_untracked: config.checkpoint.include_untracked,
        max_file_bytes: config.checkpoint.max_file_bytes,
    };
    let checkpoint = state.checkpoint.as_ref().and_then(|c| c.sha.clone());
    let (at, rev) = (project.to_path_buf(), checkpoint.clone());
    let changed = repositories
        .bounded(project, git::GIT_DEADLINE, move |repositories| {
            git::changed_since(&repositories, &at, rev.as_deref(), &opts)
        })
        // hookd writes its own files after the capture; when `.workflow/` was
        // there before hookd (so git was never told to ignore it), they are
        // still nobody's work.
        .map(|paths| {
            paths
                .into_iter()
                .filter(|p| !protocol::project::is_hookd_file(p))
                .collect::<Vec<_>>()
        });
    let unexpected = match &checkpoint {
        // The checkpoint is the working tree as it was: any difference is unexpected.
        Some(_) => changed,
        // Without one, compare the set of changed files with the saved set.
        None => changed.map(|now_changed| {
            let saved: Vec<&str> = state
                .modified_files
                .iter()
                .map(|m| m.path.as_str())
                .collect();
            let mut diff: Vec<String> = now_changed
                .iter()
                .filter(|p| !saved.contains(&p.as_str()))
                .cloned()
                .collect();
            diff.extend(
                saved
                    .iter()
                    .filter(|p| !now_changed.iter().any(|n| n == *p))
                    .map(|p| p.to_string()),
            );
            diff
        }),
    };
    match unexpected {
        Ok(paths) if !paths.is_empty() => {
            let mut list = paths
                .iter()
                .take(CHANGES_SHOWN)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ");
            if paths.len() > CHANGES_SHOWN {
                list += &format!(" and {} more", paths.len() - CHANGES_SHOWN);
            }
            problems.push(format!("files changed since the capture: {list}"));
        }
        Ok(_) => {}
        Err(e) => problems.push(format!("cannot compare the working tree: {e}")),
    }
    if problems.is_empty() {
        let head = now.head.as_deref().map(short).unwrap_or("(unborn)");
        check(
            NAME,
            CheckStatus::Pass,
            format!(
                "HEAD is still {head} on {}, and the working tree is as saved",
                now.branch
            ),
        )
    } else {
        check(NAME, CheckStatus::Warn, problems.join("; "))
    }
}

fn workflow_exists(project: &Path, state: &ContextState) -> Check {
    const NAME: &str = "workflow_exists";
    let workflow = Workflow::new(project);
    if !workflow.dir().is_dir() {
        return check(
            NAME,
            CheckStatus::Fail,
            format!("{} is gone", workflow.dir().display()),
        );
    }
    if !state
        .sources
        .iter()
        .any(|s| s == crate::workflow::WORKFLOW_FILE)
    {
        return check(
            NAME,
            CheckStatus::Pass,
            "no workflow file was in use; .workflow/ is in place",
        );
    }
    match workflow_file::load(&workflow) {
        Ok(None) => check(
            NAME,
            CheckStatus::Fail,
            format!(
                "{} is gone",
                workflow.path(crate::workflow::WORKFLOW_FILE).display()
            ),
        ),
        Ok(Some(file)) if file.workflow_id != state.workflow_position.workflow_id => check(
            NAME,
            CheckStatus::Warn,
            format!(
                "the workflow is now {}, not {}",
                file.workflow_id.as_deref().unwrap_or("unnamed"),
                state
                    .workflow_position
                    .workflow_id
                    .as_deref()
                    .unwrap_or("unnamed")
            ),
        ),
        Ok(Some(_)) => check(NAME, CheckStatus::Pass, "the workflow file is still there"),
        Err(e) => check(NAME, CheckStatus::Fail, e),
    }
}

fn task_valid(
    project: &Path,
    state: &ContextState,
    transcript: Option<&Path>,
    config: &Config,
) -> Check {
    const NAME: &str = "task_valid";
    let Some(id) = &state.workflow_position.active_task_id else {
        return check(NAME, CheckStatus::Pass, "no active task was recorded");
    };
    let saved = state.tasks.iter().find(|t| &t.id == id);
    let from_file = saved.is_some_and(|t| t.source == TaskSource::WorkflowFile)
        || crate::state::repository_file(&state.active_work.source).is_some();
    // (id, title, status) of the tasks as they stand now.
    let current: Option<Vec<(String, String, TaskStatus)>> = if from_file {
        workflow_file::load(&Workflow::new(project))
            .ok()
            .flatten()
            .map(|f| {
                f.tasks
                    .into_iter()
                    .map(|t| {
                        (
                            t.id,
                            t.title,
                            t.status.map(TaskStatus::from).unwrap_or_default(),
                        )
                    })
                    .collect()
            })
    } else {
        // A state that names no harness has a file no reader may guess at.
        let harness = state
            .harness
            .as_deref()
            .and_then(protocol::wire::Harness::parse);
        transcript
            .zip(harness)
            .and_then(|(t, harness)| {
                crate::harness::adapter(harness)
                    .read_work(t, config.capture.transcript_scan_bytes, 0)
                    .ok()
            })
            .map(|facts| {
                facts
                    .tasks
                    .into_iter()
                    .map(|t| (t.id, t.title, t.status))
                    .collect()
            })
    };
    let Some(current) = current else {
        return check(
            NAME,
            CheckStatus::Warn,
            format!("cannot read the current task list to check task {id}"),
        );
    };
    let title = saved
        .map(|t| t.title.as_str())
        .filter(|t| !t.is_empty())
        .unwrap_or(id);
    // The workflow file's words are shown quoted under its name.
    let named = match from_file
        .then(|| crate::state::repository_file(crate::workflow::WORKFLOW_FILE))
        .flatten()
    {
        Some(file) => format!("\"{title}\" (quoted from {file})"),
        None => format!("\"{title}\""),
    };
    // Todo lists have no ids of their own (ours are positions): match them by title.
    let by_id = saved.is_none_or(|t| t.source != TaskSource::Todos);
    let found = current
        .iter()
        .find(|(i, t, _)| if by_id { i == id } else { t == title });
    match found {
        Some((_, _, TaskStatus::Completed)) => check(
            NAME,
            CheckStatus::Warn,
            format!("{named} was completed after the capture"),
        ),
        Some((_, _, status)) => check(
            NAME,
            CheckStatus::Pass,
            format!("{named} is still open ({status})"),
        ),
        None => check(
            NAME,
            CheckStatus::Warn,
            format!("{named} is no longer in the task list"),
        ),
    }
}

/// The room the session has for the resume prompt: its figure `now` when
/// that is after the compaction the state was saved for (the context
/// shrank since), else the room the capture expected. `None` when the
/// figures are unknown or the configuration does not size by the room
/// (`budget.fit_to_room`).
pub fn room(state: &ContextState, now: Option<&ContextStatus>, config: &Config) -> Option<Room> {
    if !config.budget.fit_to_room {
        return None;
    }
    let saved = &state.context_usage;
    let compacted = state.trigger.is_compaction();
    if let Some(now) = now.filter(|n| n.invalid.is_none() && n.tokens_max > 0) {
        let shrank = saved
            .tokens_used
            .is_some_and(|before| now.tokens_used < before);
        if !compacted || shrank {
            return Some(Room::at(now.tokens_max, now.tokens_used));
        }
    }
    let point = saved.tokens_max.filter(|p| *p > 0)?;
    Some(if compacted {
        Room::after_compaction(point)
    } else {
        Room::at(point, saved.tokens_used.unwrap_or(0))
    })
}

/// The resume prompt with the checks on top and `marker` at the end, sized
/// for the room the session has (`now`: its figure at this moment).
pub fn render(
    memories: &Memories,
    project: &Path,
    state: &ContextState,
    checks: &[Check],
    marker: Option<&str>,
    config: &Config,
    now: Option<&ContextStatus>,
) -> (prompt::Fitted, Vec<String>) {
    let mut renderer = Renderer::for_project(Some(project), config);
    let mut view = prompt::resume_view(&mut renderer, state, checks, marker);
    let room = room(state, now, config);
    if let Some(room) = &room {
        prompt::fit_reload(&mut view, room, config.budget.prompt_files);
    }
    // Cross-task memory: the Ω window and similar tasks' lessons (counted when injected).
    crate::memory::fill_section(
        memories,
        &mut view,
        &mut renderer,
        config,
        state,
        marker.is_some(),
        room.as_ref(),
    );
    let fitted = prompt::fit(
        &mut renderer,
        view,
        config.resume.max_chars,
        config.resume.format,
    );
    (fitted, renderer.problems)
}

/// display_summary: progress, the next action, files to read, warnings.
pub fn summary(state: &ContextState, checks: &[Check]) -> String {
    let mut parts = vec![format!(
        "Saved state from {} ({})",
        state.captured_at,
        state.trigger.describe()
    )];
    if let Some(from) = &state.synced_from {
        parts[0] = format!(
            "Saved state from machine {} in {} at {} ({})",
            from.machine,
            from.project,
            prompt::saved_at_words(&from.saved_at),
            state.trigger.describe()
        );
    }
    if !state.tasks.is_empty() {
        let done = state
            .tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Completed)
            .count();
        parts.push(format!(
            "{done} of {} tasks done ({}%)",
            state.tasks.len(),
            done * 100 / state.tasks.len()
        ));
    }
    if let Some(next) = state.next_actions.first() {
        parts.push(
            format!("next: {} {}", next.action, next.target)
                .trim_end()
                .to_owned(),
        );
        if !next.context_needed.is_empty() {
            let files: Vec<String> = next
                .context_needed
                .iter()
                .map(|f| prompt::shown_path(state, f))
                .collect();
            parts.push(format!("read first: {}", files.join(", ")));
        }
    } else if let Some(file) = &state.active_work.file_path {
        parts.push(format!("read first: {}", prompt::shown_path(state, file)));
    }
    if let Some(step) = &state.last_step {
        // A file is named from where the agent works, as in the prompt.
        let target = step
            .target
            .as_deref()
            .map(|t| match step.file {
                true => prompt::shown_path(state, t),
                false => t.to_owned(),
            })
            .map(|t| format!(" {}", protocol::text::clip(&t, 60)))
            .unwrap_or_default();
        parts.push(format!(
            "last step: {}{target}: {}",
            step.tool,
            protocol::text::clip(&step.outcome, 60)
        ));
    }
    // Task names, actions and files are outside text: one line each, no escapes.
    let mut text = parts
        .iter()
        .map(|p| clean_text(p))
        .collect::<Vec<_>>()
        .join(" · ");
    for c in checks.iter().filter(|c| c.status != CheckStatus::Pass) {
        let mark = if c.status == CheckStatus::Fail {
            "✗"
        } else {
            "⚠"
        };
        text += &format!("\n{mark} {}: {}", c.check, clean_text(&c.detail));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{NextAction, SaveTrigger, Task};

    #[test]
    fn the_summary_names_progress_next_action_and_problems() {
        let state = ContextState {
            captured_at: "2026-11-21T20:00:00Z".into(),
            trigger: crate::state::SaveTrigger::PreCompact("auto".into()),
            tasks: vec![
                Task {
                    id: "1".into(),
                    title: "a".into(),
                    status: TaskStatus::Completed,
                    ..Task::default()
                },
                Task {
                    id: "2".into(),
                    title: "b".into(),
                    status: TaskStatus::Pending,
                    ..Task::default()
                },
            ],
            next_actions: vec![NextAction {
                action: "write".into(),
                target: "tests".into(),
                priority: 1,
                context_needed: vec!["src/a.rs".into()],
                source: String::new(),
            }],
            ..ContextState::default()
        };
        let checks = vec![
            check(
                "git_status_matches",
                CheckStatus::Warn,
                "HEAD moved from a to b",
            ),
            check("task_valid", CheckStatus::Pass, "fine"),
        ];
        let text = summary(&state, &checks);
        assert!(
            text.starts_with("Saved state from 2026-11-21T20:00:00Z (before automatic compaction)"),
            "{text}"
        );
        assert!(
            text.contains("1 of 2 tasks done (50%)")
                && text.contains("next: write tests")
                && text.contains("read first: src/a.rs"),
            "{text}"
        );
        assert!(
            text.contains("⚠ git_status_matches: HEAD moved") && !text.contains("task_valid"),
            "{text}"
        );
    }

    /// A state file counts only when hookd recorded its content: the
    /// latest, and each history copy.
    #[test]
    fn only_a_state_hookd_recorded_is_loaded() {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("proj");
        std::fs::create_dir(&project).unwrap();
        let saved = SavedStates::in_dir(tmp.path().join("state"));
        let workflow = Workflow::new(&project);
        let dir = workflow.ensure(false).unwrap();
        let state = |session: Option<&str>, objective: &str| {
            ContextState {
                project_dir: project.display().to_string(),
                harness_session_id: session.map(Into::into),
                objective: Some(objective.into()),
                ..ContextState::default()
            }
            .to_json()
        };
        let objective = |loaded: Loaded| match loaded {
            Loaded::Found { state, .. } => state.objective.unwrap_or_default(),
            Loaded::Unusable(why) => format!("unusable: {why}"),
            Loaded::Missing => "missing".into(),
        };
        // Nobody's state, as a repository would ship it.
        dir.write_atomic(STATE_FILE, &state(None, "forged"))
            .unwrap();
        let why = objective(load(&workflow, Some("a"), &saved));
        assert!(
            why.starts_with("unusable: ")
                && why.contains("context_state.json was not written by hookd on this machine")
                && why.contains("hookctl save"),
            "{why}"
        );
        let own = state(None, "own");
        saved.record(&project, &own).unwrap();
        dir.write_atomic(STATE_FILE, &own).unwrap();
        assert_eq!(objective(load(&workflow, Some("a"), &saved)), "own");

        // Another session saved last: this session's newest recorded copy counts.
        let theirs = state(Some("b"), "theirs");
        saved.record(&project, &theirs).unwrap();
        dir.write_atomic(STATE_FILE, &theirs).unwrap();
        let (history, _) = dir.create_dir(HISTORY_DIR).unwrap();
        history
            .write_atomic(
                "save_20261125_120000_a.json",
                &state(Some("a"), "forged copy"),
            )
            .unwrap();
        assert!(
            objective(load(&workflow, Some("a"), &saved)).contains("belongs to session b"),
            "a copy hookd did not write is no copy of this session's"
        );
        let mine = state(Some("a"), "mine");
        saved.record(&project, &mine).unwrap();
        history
            .write_atomic("save_20261125_110000_a.json", &mine)
            .unwrap();
        assert_eq!(objective(load(&workflow, Some("a"), &saved)), "mine");
        assert_eq!(objective(load(&workflow, None, &saved)), "theirs");
    }

    /// After a compaction the room is the session's own figure once the
    /// context shrank, else the capture's estimate; a save mid-session is
    /// sized by the figure now.
    #[test]
    fn the_room_is_the_sessions_figure_after_the_compaction() {
        let status = |used: u64| ContextStatus {
            tokens_used: used,
            tokens_max: 167_000,
            window_tokens: 200_000,
            pressure: used as f64 / 167_000.0,
            window_fraction: used as f64 / 200_000.0,
            basis: String::new(),
            source: "reply".into(),
            advice: protocol::pressure::Advice::for_pressure(used as f64 / 167_000.0),
            updated_at_ms: 0,
            invalid: None,
            point_unknown: false,
        };
        let mut config = Config::default();
        let mut state = ContextState {
            trigger: SaveTrigger::PreCompact("auto".into()),
            ..ContextState::default()
        };
        state.context_usage.tokens_used = Some(160_000);
        state.context_usage.tokens_max = Some(167_000);
        let before = status(161_000);
        assert_eq!(
            room(&state, Some(&before), &config),
            Some(Room::after_compaction(167_000))
        );
        let after = status(12_000);
        assert_eq!(
            room(&state, Some(&after), &config),
            Some(Room::at(167_000, 12_000))
        );
        assert_eq!(
            room(&state, None, &config),
            Some(Room::after_compaction(167_000))
        );
        state.trigger = SaveTrigger::Manual;
        assert_eq!(
            room(&state, Some(&before), &config),
            Some(Room::at(167_000, 161_000))
        );
        assert_eq!(room(&ContextState::default(), None, &config), None);
        config.budget.fit_to_room = false;
        assert_eq!(
            room(&state, Some(&before), &config),
            None,
            "not sized by the room"
        );
    }

    /// The summary a person reads after `hookctl resume` or `validate`, and
    /// at the start of the session after a compaction.
    #[test]
    fn summaries() {
        let saved = ContextState {
            captured_at: "2026-11-21T20:00:00Z".into(),
            trigger: SaveTrigger::Manual,
            ..ContextState::default()
        };
        let compacted = ContextState {
            trigger: SaveTrigger::PreCompact("auto".into()),
            tasks: vec![
                Task {
                    id: "1".into(),
                    title: "Add the login route".into(),
                    status: TaskStatus::Completed,
                    ..Task::default()
                },
                Task {
                    id: "2".into(),
                    title: "Test the login route".into(),
                    status: TaskStatus::InProgress,
                    ..Task::default()
                },
            ],
            next_actions: vec![NextAction {
                action: "write".into(),
                target: "the login tests".into(),
                priority: 1,
                context_needed: vec!["app/api/auth/login/route.ts".into()],
                source: String::new(),
            }],
            ..saved.clone()
        };
        let checks = vec![
            check(
                "git_status_matches",
                CheckStatus::Warn,
                "HEAD moved from 1a2b3c4d5e to 5e4d3c2b1a",
            ),
            check(
                "workflow_exists",
                CheckStatus::Pass,
                "no workflow file to check",
            ),
            check(
                "task_valid",
                CheckStatus::Fail,
                "\"Test the login route\" is no longer in the task list",
            ),
        ];
        let text = format!(
            "after hookctl save, all checks passed:\n{}\n\nafter a compaction, with problems:\n{}\n\nnothing saved:\n{}\n",
            summary(&saved, &[]),
            summary(&compacted, &checks),
            NO_STATE
        );
        assert!(!text.contains("restored"), "nothing was restored: {text}");
        insta::assert_snapshot!(text);
    }
}

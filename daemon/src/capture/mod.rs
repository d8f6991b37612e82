//! capture_workflow_state: gathers what is known about the work into a
//! [`ContextState`], from the most trusted source down:
//!
//! 1. the project's own `.workflow/workflow_state.yml`;
//! 2. records made with `hookctl decision | blocker | phase | next | note`;
//! 3. the transcript: the task list, edited files, the person's requests;
//! 4. git: what changed against HEAD, with line counts.
//!
//! A missing source leaves its fields empty; nothing is made up.

pub mod records;
pub mod state;
pub mod workflow_file;

use crate::git::{self, GitError, Repositories, Snapshot, SnapshotOptions};
use crate::harness::claude_code::work::{self, TaskSource, WorkFacts};
use crate::workflow::Workflow;
use protocol::config::Config;
use protocol::wire::{ContextStatus, FileChange};
use state::{
    ActiveWork, Blocker, ContextState, ContextUsage, Decision, GitInfo, ModifiedFile, NextAction,
    Task,
};
use std::path::Path;

pub struct Input<'a> {
    /// The first word of the capture's name (`compact`, `threshold`, `save`).
    pub name: &'a str,
    pub project: &'a Path,
    pub harness: Option<&'a str>,
    pub harness_session: Option<&'a str>,
    pub transcript: Option<&'a Path>,
    pub context: Option<&'a ContextStatus>,
    pub trigger: state::SaveTrigger,
    /// The threshold level that asked for this save, if one did.
    pub threshold: Option<f64>,
    pub config: &'a Config,
    pub now_ms: u64,
    /// The lock on hookd's private index and the last changes found.
    pub repositories: &'a Repositories,
}

pub struct Captured {
    pub state: ContextState,
    /// The working tree as a tree object, for the checkpoint.
    pub snapshot: Option<Snapshot>,
    /// Why there is no snapshot, when there is none.
    pub snapshot_note: Option<String>,
    pub changes: Vec<FileChange>,
}

pub fn capture(input: &Input) -> Captured {
    let workflow = Workflow::new(input.project);
    let mut state = ContextState {
        session_id: format!(
            "{}_{}",
            input.name,
            crate::time::compact_stamp(input.now_ms)
        ),
        harness_session_id: input.harness_session.map(str::to_owned),
        harness: input.harness.map(str::to_owned),
        captured_at: crate::time::rfc3339(input.now_ms),
        trigger: input.trigger.clone(),
        project_dir: input.project.display().to_string(),
        ..ContextState::default()
    };
    if let Some(c) = input.context {
        state.context_usage = ContextUsage {
            tokens_used: Some(c.tokens_used),
            tokens_max: Some(c.tokens_max),
            percentage: Some((c.pressure * 10_000.0).round() / 10_000.0),
            threshold_triggered: input.threshold,
        };
    } else {
        state.context_usage.threshold_triggered = input.threshold;
    }

    let workflow_file = match workflow_file::load(&workflow) {
        Ok(file) => file,
        Err(problem) => {
            state.problems.push(problem);
            None
        }
    };
    let records = match records::load(&workflow) {
        Ok(r) => r,
        Err(e) => {
            state.problems.push(format!(
                "cannot read {}: {e}",
                workflow.path(records::RECORDS_FILE).display()
            ));
            records::Records::default()
        }
    };
    state.problems.extend(records.problems.iter().cloned());
    let facts = match input.transcript {
        Some(path) => match work::read(
            path,
            input.config.capture.transcript_scan_bytes,
            input.config.capture.recent_prompts,
        ) {
            Ok(facts) => Some(facts),
            Err(e) => {
                state.problems.push(format!(
                    "cannot read the transcript {}: {e}",
                    path.display()
                ));
                None
            }
        },
        None => None,
    };
    let opts = SnapshotOptions {
        include_untracked: input.config.checkpoint.include_untracked,
        max_file_bytes: input.config.checkpoint.max_file_bytes,
    };
    let (snapshot, snapshot_note, changes) =
        match git::snapshot(input.repositories, input.project, &opts) {
            Ok(snapshot) => match git::changes(input.repositories, input.project, &snapshot) {
                Ok(changes) => (Some(snapshot), None, changes),
                Err(e) => {
                    state.problems.push(e.to_string());
                    (Some(snapshot), None, Vec::new())
                }
            },
            Err(e @ (GitError::NotARepository { .. } | GitError::Bare { .. })) => {
                (None, Some(e.to_string()), Vec::new())
            }
            Err(e) => {
                state.problems.push(e.to_string());
                (None, Some(e.to_string()), Vec::new())
            }
        };

    if workflow_file.is_some() {
        state.sources.push(workflow_file::WORKFLOW_FILE.into());
    }
    if records != records::Records::default() {
        state.sources.push(records::RECORDS_FILE.into());
    }
    if facts.is_some() {
        state.sources.push("transcript".into());
    }
    if snapshot.is_some() {
        state.sources.push("git".into());
    }
    assemble(
        &mut state,
        input.project,
        workflow_file.as_ref(),
        &records,
        facts.as_ref(),
        snapshot.as_ref(),
        &changes,
    );
    Captured {
        state,
        snapshot,
        snapshot_note,
        changes,
    }
}

fn assemble(
    state: &mut ContextState,
    project: &Path,
    wf: Option<&workflow_file::WorkflowFile>,
    records: &records::Records,
    facts: Option<&WorkFacts>,
    snapshot: Option<&Snapshot>,
    changes: &[FileChange],
) {
    // The task list: the workflow file's, else the agent's.
    state.tasks = match wf.filter(|w| !w.tasks.is_empty()) {
        Some(w) => w
            .tasks
            .iter()
            .map(|t| Task {
                id: t.id.clone(),
                title: t.title.clone(),
                status: t.status.clone().unwrap_or_else(|| "pending".into()),
                active_form: None,
                source: workflow_file::WORKFLOW_FILE.into(),
            })
            .collect(),
        None => facts
            .map(|f| {
                let source = match f.task_source {
                    Some(TaskSource::Tasks) => "tasks",
                    _ => "todos",
                };
                f.tasks
                    .iter()
                    .map(|t| Task {
                        id: t.id.clone(),
                        title: t.title.clone(),
                        status: t.status.clone(),
                        active_form: t.active_form.clone(),
                        source: source.into(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
    };
    let active_task = wf
        .and_then(|w| w.active_task.clone())
        .and_then(|id| {
            state
                .tasks
                .iter()
                .find(|t| t.id == id)
                .cloned()
                .or(Some(Task {
                    id,
                    ..Task::default()
                }))
        })
        .or_else(|| {
            state
                .tasks
                .iter()
                .find(|t| t.status == "in_progress")
                .cloned()
        });

    let position = &mut state.workflow_position;
    position.workflow_id = wf.and_then(|w| w.workflow_id.clone());
    position.current_phase = wf
        .and_then(|w| w.phase.clone())
        .or_else(|| records.phase.clone());
    position.active_task_id = active_task.as_ref().map(|t| t.id.clone());
    position.layer = wf.and_then(|w| w.layer);
    position.total_layers = wf.and_then(|w| w.total_layers);

    state.active_work = ActiveWork {
        entity_id: active_task.as_ref().map(|t| t.id.clone()),
        entity_type: active_task.as_ref().map(|_| "task".to_owned()),
        action: active_task.as_ref().and_then(|t| {
            t.active_form
                .clone()
                .or_else(|| (!t.title.is_empty()).then(|| t.title.clone()))
        }),
        file_path: facts
            .and_then(WorkFacts::last_edited)
            .map(|p| relative(project, p)),
        progress_notes: (!records.notes.is_empty()).then(|| {
            records
                .notes
                .iter()
                .rev()
                .take(3)
                .rev()
                .cloned()
                .collect::<Vec<_>>()
                .join("; ")
        }),
    };

    // Next actions: recorded ones first, then the workflow's and the agent's open tasks.
    let mut next: Vec<(u32, NextAction)> = records
        .next_actions
        .iter()
        .enumerate()
        .map(|(i, a)| {
            (
                if a.priority > 0 {
                    a.priority
                } else {
                    50 + i as u32
                },
                a.clone(),
            )
        })
        .collect();
    let wf_files = |id: &str| {
        wf.and_then(|w| w.tasks.iter().find(|t| t.id == id))
            .map(|t| t.files.clone())
            .unwrap_or_default()
    };
    for (i, task) in state
        .tasks
        .iter()
        .filter(|t| t.status == "pending")
        .enumerate()
    {
        let (action, target) = split_action(&task.title);
        let mut context_needed = wf_files(&task.id);
        context_needed.extend(files_mentioned(project, &task.title));
        context_needed.dedup();
        next.push((
            100 + i as u32,
            NextAction {
                action,
                target,
                priority: 0,
                context_needed,
            },
        ));
    }
    next.sort_by_key(|(rank, _)| *rank);
    state.next_actions = next
        .into_iter()
        .enumerate()
        .map(|(i, (_, a))| NextAction {
            priority: i as u32 + 1,
            ..a
        })
        .collect();

    let edits = |path: &str| {
        facts
            .and_then(|f| f.edited.iter().find(|e| relative(project, &e.path) == path))
            .map(|e| e.edits)
    };
    state.modified_files = if snapshot.is_some() {
        changes
            .iter()
            .map(|c| {
                let mut m = ModifiedFile::from(c);
                if let Some(n) = edits(&c.path) {
                    m.summary += &format!(
                        "; edited by the agent ({n} edit{})",
                        if n == 1 { "" } else { "s" }
                    );
                }
                m
            })
            .collect()
    } else {
        facts
            .map(|f| {
                f.edited
                    .iter()
                    .map(|e| ModifiedFile {
                        path: relative(project, &e.path),
                        action: "edited".into(),
                        summary: format!(
                            "edited by the agent ({} edit{})",
                            e.edits,
                            if e.edits == 1 { "" } else { "s" }
                        ),
                    })
                    .collect()
            })
            .unwrap_or_default()
    };

    state.decisions = wf
        .map(|w| {
            w.decisions
                .iter()
                .map(|d| Decision {
                    topic: d.topic.clone(),
                    decision: d.decision.clone(),
                    reasoning: d.reasoning.clone(),
                    timestamp: d.timestamp.clone(),
                })
                .collect()
        })
        .unwrap_or_default();
    state.decisions.extend(records.decisions.iter().cloned());
    state.blockers = wf
        .map(|w| {
            w.blockers
                .iter()
                .map(|b| Blocker {
                    issue: b.issue.clone(),
                    status: b.status.clone().unwrap_or_else(|| "unresolved".into()),
                    notes: b.notes.clone(),
                })
                .collect()
        })
        .unwrap_or_default();
    for b in &records.blockers {
        state.blockers.retain(|x| x.issue != b.issue);
        state.blockers.push(b.clone());
    }

    if let Some(f) = facts {
        state.recent_prompts = f.prompts.clone();
        state.objective = f.prompts.last().cloned();
    }
    state.git = snapshot.map(|s| GitInfo {
        branch: s.branch.clone(),
        head: s.head.map(|h| h.to_string()),
        state: git_state(&s.state, changes),
    });
}

/// The repository's state in the capture: an operation in progress (merge,
/// rebase, ...) by its name; otherwise `clean` only when nothing changed
/// against HEAD, else `modified`.
fn git_state(operation: &str, changes: &[FileChange]) -> String {
    match operation {
        "clean" if !changes.is_empty() => "modified".to_owned(),
        other => other.to_owned(),
    }
}

/// `Add token refresh` → (`add`, `token refresh`).
fn split_action(title: &str) -> (String, String) {
    let title = title.trim();
    match title.split_once(char::is_whitespace) {
        Some((verb, rest)) => (verb.to_lowercase(), rest.trim().to_owned()),
        None => ("do".to_owned(), title.to_owned()),
    }
}

/// Words of `text` that name existing files of the project.
fn files_mentioned(project: &Path, text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || matches!(c, '`' | '\'' | '"' | ',' | '(' | ')'))
        .map(|w| w.trim_end_matches([':', '.', ';']))
        .filter(|w| w.contains('/') || w.contains('.'))
        .filter(|w| !w.starts_with('-') && !w.contains(".."))
        .filter(|w| project.join(w).is_file())
        .map(str::to_owned)
        .collect()
}

/// A path relative to the project when it lies inside it.
fn relative(project: &Path, path: &str) -> String {
    Path::new(path)
        .strip_prefix(project)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| path.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_git_state_is_clean_only_when_nothing_changed() {
        let change = FileChange {
            path: "a.rs".into(),
            action: "modified".into(),
            added: Some(1),
            removed: Some(0),
            summary: "+1 −0 lines".into(),
        };
        assert_eq!(git_state("clean", &[]), "clean");
        assert_eq!(
            git_state("clean", std::slice::from_ref(&change)),
            "modified"
        );
        assert_eq!(git_state("rebase", &[change]), "rebase");
    }

    #[test]
    fn actions_are_split_from_task_titles_without_inventing() {
        assert_eq!(
            split_action("Add token refresh"),
            ("add".into(), "token refresh".into())
        );
        assert_eq!(split_action("Refactor"), ("do".into(), "Refactor".into()));
    }

    #[test]
    fn only_existing_files_are_named_as_context() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/auth.rs"), "").unwrap();
        let found = files_mentioned(
            dir.path(),
            "Fix `src/auth.rs` and src/missing.rs, see docs.",
        );
        assert_eq!(found, vec!["src/auth.rs"]);
        assert_eq!(relative(Path::new("/p"), "/p/src/a.rs"), "src/a.rs");
        assert_eq!(
            relative(Path::new("/p"), "/elsewhere/a.rs"),
            "/elsewhere/a.rs"
        );
    }
}

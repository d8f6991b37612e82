//! capture_workflow_state: gathers what is known about the work into a
//! [`ContextState`], from the most trusted source down:
//!
//! 1. the project's own `.workflow/workflow_state.yml`;
//! 2. records made with `hookctl decision | blocker | phase | next | note`;
//! 3. the session's own file, read by its harness's format: the task list,
//!    the files the agent wrote, the person's requests;
//! 4. git: what changed against HEAD, with line counts and the definitions
//!    each change added, removed or edited.
//!
//! A missing source leaves its fields empty; nothing is made up. After the
//! capture, the compaction summary's `hookd-state` block is merged in
//! ([`summary_block`]), below all of these.

pub mod records;
pub mod summary_block;
pub mod workflow_file;
mod yaml;

use crate::git::{self, GitError, OpenRepository, Repositories, Snapshot, SnapshotOptions};
use crate::harness::work::{TaskSource, TaskStatus, WorkFacts};
use crate::project_fs::Dir;
use crate::state::{
    ActiveWork, Blocker, ContextState, ContextUsage, Decision, GitInfo, LastStep, ModifiedFile,
    NextAction, SOURCE_TRANSCRIPT, Task,
};
use crate::workflow::Workflow;
use protocol::config::Config;
use protocol::wire::{ContextStatus, FileChange, Harness};
use std::path::Path;

pub struct Input<'a> {
    /// The first word of the capture's name (`compact`, `threshold`, `save`).
    pub name: &'a str,
    pub project: &'a Path,
    /// The directory the agent works in (absolute), at or below `project`.
    pub working_dir: Option<&'a Path>,
    pub harness: Option<Harness>,
    pub harness_session: Option<&'a str>,
    pub transcript: Option<&'a Path>,
    pub context: Option<&'a ContextStatus>,
    pub trigger: crate::state::SaveTrigger,
    /// The threshold level that asked for this save, if one did.
    pub threshold: Option<f64>,
    pub config: &'a Config,
    pub now_ms: u64,
    /// The lock on hookd's private index and the last changes found.
    pub repositories: &'a Repositories,
    /// The project's repository, opened once for the whole save, or why
    /// it could not be.
    pub repository: Result<&'a OpenRepository, &'a GitError>,
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
        harness: input.harness.map(|h| h.as_str().to_owned()),
        captured_at: crate::time::rfc3339(input.now_ms),
        trigger: input.trigger.clone(),
        project_dir: input.project.display().to_string(),
        working_dir: input
            .working_dir
            .and_then(|dir| protocol::project::relative_to_root(input.project, dir))
            .filter(|rel| !rel.is_empty()),
        ..ContextState::default()
    };
    if let Some(c) = input.context {
        state.context_usage = ContextUsage {
            tokens_used: Some(c.tokens_used),
            tokens_max: Some(c.tokens_max),
            percentage: Some((c.pressure * 10_000.0).round() / 10_000.0),
            window_tokens: Some(c.window_tokens).filter(|w| *w > 0),
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
                workflow.path(crate::workflow::RECORDS_FILE).display()
            ));
            records::Records::default()
        }
    };
    state.problems.extend(records.problems.iter().cloned());
    let facts = read_session_work(input, &mut state.problems);
    let opts = SnapshotOptions {
        include_untracked: input.config.checkpoint.include_untracked,
        max_file_bytes: input.config.checkpoint.max_file_bytes,
    };
    // The caller holds the project's lock: git runs under a deadline.
    let failed = |e: &GitError| (e.is_no_work_tree(), e.to_string());
    let from_git = match input.repository {
        Ok(repo) => {
            let repo = repo.clone();
            input
                .repositories
                .bounded(input.project, git::GIT_DEADLINE, move |repositories| {
                    let snapshot = repo.snapshot(&repositories, &opts)?;
                    let changes = repo.changes(&repositories, &snapshot);
                    let definitions = match &changes {
                        Ok(changes) => changed_definitions(&repo, &snapshot, changes),
                        Err(_) => Default::default(),
                    };
                    Ok((snapshot, changes, definitions))
                })
                .map_err(|e| failed(&e))
        }
        Err(e) => Err(failed(e)),
    };
    let (snapshot, snapshot_note, changes, definitions) = match from_git {
        Ok((snapshot, Ok(changes), definitions)) => (Some(snapshot), None, changes, definitions),
        Ok((snapshot, Err(e), _)) => {
            state.problems.push(e.to_string());
            (Some(snapshot), None, Vec::new(), Default::default())
        }
        // Not a repository: nothing to snapshot, and nothing wrong.
        Err((true, why)) => (None, Some(why), Vec::new(), Default::default()),
        Err((false, why)) => {
            state.problems.push(why.clone());
            (None, Some(why), Vec::new(), Default::default())
        }
    };

    if workflow_file.is_some() {
        state.sources.push(crate::workflow::WORKFLOW_FILE.into());
    }
    if records != records::Records::default() {
        state.sources.push(crate::workflow::RECORDS_FILE.into());
    }
    let base = PathBase::new(input.project, state.working_dir.as_deref());
    // The session's file counts as a source only when it told something.
    let facts = facts.filter(|f| !f.is_empty());
    // What this session's own file touched, when it told anything: git's
    // other changes are someone else's.
    let touched = facts.as_ref().map(|f| base.touched_by(f));
    if facts.is_some() {
        state.sources.push("transcript".into());
    }
    if snapshot.is_some() {
        state.sources.push("git".into());
    }
    assemble(
        &mut state,
        &base,
        workflow_file.as_ref(),
        &records,
        facts.as_ref(),
        snapshot.as_ref().map(|s| (s, &definitions)),
        &changes,
        touched.as_ref(),
    );
    Captured {
        state,
        snapshot,
        snapshot_note,
        changes,
    }
}

#[allow(clippy::too_many_arguments)]
fn assemble(
    state: &mut ContextState,
    base: &PathBase,
    wf: Option<&workflow_file::WorkflowFile>,
    records: &records::Records,
    facts: Option<&WorkFacts>,
    // The snapshot, and the definitions each changed file's change touched.
    snapshot: Option<(&Snapshot, &std::collections::HashMap<String, String>)>,
    changes: &[FileChange],
    // The files this session's own file touched, when it was read.
    touched: Option<&std::collections::HashSet<String>>,
) {
    // hookd's own files (its state, its configuration, the harness wiring
    // it installed) are nobody's work.
    let changes: Vec<&FileChange> = changes
        .iter()
        .filter(|c| !protocol::project::is_hookd_file(&c.path))
        .collect();
    let (ours, elsewhere): (Vec<&FileChange>, Vec<&FileChange>) = changes
        .iter()
        .partition(|c| touched.is_none_or(|t| t.contains(&c.path)));
    state.tasks = tasks_of(wf, facts);
    let (active_task, active_source) = active_task_of(wf, &state.tasks);
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
        file_path: file_worked_on(base, facts, &ours),
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
        source: active_source,
    };

    plan_next_actions(state, base, wf, records);
    record_modified_files(state, base, facts, snapshot, touched, (&ours, &elsewhere));
    record_decisions_and_blockers(state, wf, records);
    if let Some(f) = facts {
        record_requests_and_last_step(state, base, f);
    }
    state.git = snapshot.map(|(s, _)| GitInfo {
        branch: s.branch.clone(),
        head: s.head.map(|h| h.to_string()),
        state: git_state(&s.state, &changes),
    });
}

/// The task list: the workflow file's, else the agent's.
fn tasks_of(wf: Option<&workflow_file::WorkflowFile>, facts: Option<&WorkFacts>) -> Vec<Task> {
    match wf.filter(|w| !w.tasks.is_empty()) {
        Some(w) => w
            .tasks
            .iter()
            .map(|t| Task {
                id: t.id.clone(),
                title: t.title.clone(),
                status: t.status.clone().map(TaskStatus::from).unwrap_or_default(),
                active_form: None,
                description: None,
                source: TaskSource::WorkflowFile,
                files: Vec::new(),
            })
            .collect(),
        None => facts
            .map(|f| {
                let source = f.task_source.unwrap_or_default();
                f.tasks
                    .iter()
                    .map(|t| Task {
                        id: t.id.clone(),
                        title: t.title.clone(),
                        status: t.status.clone(),
                        active_form: t.active_form.clone(),
                        description: t.description.clone(),
                        source,
                        files: Vec::new(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// The task being worked on: the one the workflow file names, else the
/// first in progress; and where it was named (empty when not by a file).
fn active_task_of(
    wf: Option<&workflow_file::WorkflowFile>,
    tasks: &[Task],
) -> (Option<Task>, String) {
    let named_by_workflow = wf.and_then(|w| w.active_task.clone()).map(|id| {
        tasks.iter().find(|t| t.id == id).cloned().unwrap_or(Task {
            id,
            ..Task::default()
        })
    });
    let active_source = if named_by_workflow.is_some() {
        crate::workflow::WORKFLOW_FILE.to_owned()
    } else {
        String::new()
    };
    let active_task = named_by_workflow.or_else(|| {
        tasks
            .iter()
            .find(|t| t.status == TaskStatus::InProgress)
            .cloned()
    });
    (active_task, active_source)
}

/// The next actions: recorded ones first (by their priority), then one for
/// each task in progress, then the pending ones; each task's files are set
/// on the way.
fn plan_next_actions(
    state: &mut ContextState,
    base: &PathBase,
    wf: Option<&workflow_file::WorkflowFile>,
    records: &records::Records,
) {
    let project = base.project;
    // Next actions: recorded ones first (by their priority), then one for
    // each task in progress, then the pending ones; the summary's block,
    // merged later, goes before them all. The files the project's own files
    // name to read first are their words: only those that name a file of
    // the project are kept, as a name.
    let root = Dir::open(project).ok();
    let project_files = |files: &[String]| -> Vec<String> {
        files
            .iter()
            .map(|f| base.from_session(f))
            .filter(|f| {
                root.as_ref()
                    .is_some_and(|r| r.file_at(Path::new(f)).is_some())
            })
            .collect()
    };
    let mut recorded: Vec<(u32, NextAction)> = records
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
                NextAction {
                    context_needed: project_files(&a.context_needed),
                    ..a.clone()
                },
            )
        })
        .collect();
    recorded.sort_by_key(|(rank, _)| *rank);
    let wf_files = |id: &str| -> Vec<String> {
        wf.and_then(|w| w.tasks.iter().find(|t| t.id == id))
            .map(|t| project_files(&t.files))
            .unwrap_or_default()
    };
    for task in &mut state.tasks {
        task.files = task_files(base, task, &wf_files(&task.id));
    }
    let task_action = |task: &Task, action: String, target: String| NextAction {
        action,
        target,
        priority: 0,
        // Only files there are can be read first.
        context_needed: task
            .files
            .iter()
            .filter(|f| !f.to_create)
            .map(|f| f.path.clone())
            .collect(),
        source: match task.source {
            TaskSource::WorkflowFile => crate::workflow::WORKFLOW_FILE.into(),
            TaskSource::Todos | TaskSource::Tasks => SOURCE_TRANSCRIPT.into(),
        },
    };
    let in_progress = state
        .tasks
        .iter()
        .filter(|t| t.status == TaskStatus::InProgress && !t.title.trim().is_empty())
        .map(|t| task_action(t, FINISH.to_owned(), t.title.trim().to_owned()));
    let pending = state
        .tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Pending)
        .map(|t| {
            let (action, target) = split_action(&t.title);
            task_action(t, action, target)
        });
    state.next_actions = recorded
        .into_iter()
        .map(|(_, a)| a)
        .chain(in_progress)
        .chain(pending)
        .enumerate()
        .map(|(i, a)| NextAction {
            priority: i as u32 + 1,
            ..a
        })
        .collect();
}

/// The files this session changed (with what changed in them and what the
/// agent's own writes did), and those changed by someone else.
fn record_modified_files(
    state: &mut ContextState,
    base: &PathBase,
    facts: Option<&WorkFacts>,
    snapshot: Option<(&Snapshot, &std::collections::HashMap<String, String>)>,
    touched: Option<&std::collections::HashSet<String>>,
    (ours, elsewhere): (&[&FileChange], &[&FileChange]),
) {
    let by_agent = |path: &str| {
        facts
            .and_then(|f| f.edited.iter().find(|e| base.from_session(&e.path) == path))
            .map(written_by_agent)
    };
    state.changed_elsewhere = if snapshot.is_some() && touched.is_some() {
        elsewhere.iter().map(|c| ModifiedFile::from(*c)).collect()
    } else {
        Vec::new()
    };
    state.modified_files = if let Some((_, definitions)) = snapshot {
        ours.iter()
            .map(|c| {
                let mut m = ModifiedFile::from(*c);
                if let Some(what) = definitions.get(&c.path) {
                    m.summary += &format!("; {what}");
                }
                if let Some(words) = by_agent(&c.path) {
                    m.summary += &format!("; {words}");
                }
                m
            })
            .collect()
    } else {
        facts
            .map(|f| {
                f.edited
                    .iter()
                    .map(|e| (base.from_session(&e.path), e))
                    .filter(|(path, _)| !protocol::project::is_hookd_file(path))
                    .map(|(path, e)| ModifiedFile {
                        path,
                        action: if e.created { "created" } else { "edited" }.into(),
                        summary: written_by_agent(e),
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
}

/// Decisions and blockers: the workflow file's, then those recorded
/// through hookctl (a recorded blocker replaces one of the same issue).
fn record_decisions_and_blockers(
    state: &mut ContextState,
    wf: Option<&workflow_file::WorkflowFile>,
    records: &records::Records,
) {
    state.decisions = wf
        .map(|w| {
            w.decisions
                .iter()
                .map(|d| Decision {
                    topic: d.topic.clone(),
                    decision: d.decision.clone(),
                    reasoning: d.reasoning.clone(),
                    timestamp: d.timestamp.clone(),
                    source: crate::workflow::WORKFLOW_FILE.into(),
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
                    status: crate::state::blocker_status(b.status.as_deref().unwrap_or("")).into(),
                    notes: b.notes.clone(),
                    source: crate::workflow::WORKFLOW_FILE.into(),
                })
                .collect()
        })
        .unwrap_or_default();
    for b in &records.blockers {
        state.blockers.retain(|x| x.issue != b.issue);
        state.blockers.push(b.clone());
    }
}

/// What the session's file says about the work, or why it says nothing.
fn read_session_work(input: &Input, problems: &mut Vec<String>) -> Option<WorkFacts> {
    match (input.transcript, input.harness) {
        (Some(path), Some(harness)) => match crate::harness::adapter(harness).read_work(
            path,
            input.config.capture.transcript_scan_bytes,
            input.config.capture.recent_prompts,
        ) {
            Ok(facts) => Some(facts),
            // A client that writes its file in batches (Copilot CLI) may
            // not have written it yet moments into a session.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                problems.push(format!(
                    "the session file {} did not exist yet when the state was saved \
                     (its client had not written it); the state holds what the records and git show",
                    path.display()
                ));
                None
            }
            Err(e) => {
                problems.push(format!(
                    "cannot read the session file {}: {e}",
                    path.display()
                ));
                None
            }
        },
        // Each harness writes its own format: one is never read as another's.
        (Some(path), None) => {
            problems.push(format!(
                "the session file {} was not read: no hook of the session has said which \
                 harness writes it; save again after its next hook",
                path.display()
            ));
            None
        }
        (None, _) => None,
    }
}

/// What the session's file says of the requests and the last step.
fn record_requests_and_last_step(state: &mut ContextState, base: &PathBase, f: &WorkFacts) {
    let project = base.project;
    state.recent_prompts = f.prompts.clone();
    // The requests that set the work; the latest prompt when none did.
    let mut requests = f.requests.iter().cloned();
    state.objective = requests.next().or_else(|| f.prompts.last().cloned());
    state.later_requests = requests.collect();
    // A target that names a file of the project is kept as a path from
    // the root, as every other path of the state; a command is kept as is.
    let root = Dir::open(project).ok();
    state.last_step = f.last_call.as_ref().map(|call| {
        let file = call
            .target
            .as_deref()
            .map(|t| base.from_session(t))
            .filter(|p| {
                root.as_ref()
                    .is_some_and(|r| r.file_at(Path::new(p)).is_some())
            });
        LastStep {
            tool: call.tool.clone(),
            target: file.clone().or_else(|| call.target.clone()),
            outcome: call.outcome_words(),
            file: file.is_some(),
        }
    });
}

/// What the agent's own writes did to a file, in words.
fn written_by_agent(file: &crate::harness::work::EditedFile) -> String {
    let edits = |n: u32| protocol::text::counted(n, "edit");
    match (file.created, file.edits.saturating_sub(1)) {
        (true, 0) => "created by the agent".to_owned(),
        (true, more) => format!("created by the agent, then edited ({})", edits(more)),
        (false, n) => format!("edited by the agent ({})", edits(n + 1)),
    }
}

/// Changed files whose definitions are compared, at most.
const MAX_OUTLINED_FILES: usize = 24;
/// Larger files are not outlined (the line counts stay).
const MAX_OUTLINED_BYTES: u64 = 256 * 1024;
/// Definitions named per file, at most.
const MAX_DEFINITIONS_NAMED: usize = 8;

/// For changed source files: the definitions added, removed or edited, in
/// words, by path. Both versions come from git's objects (HEAD and the
/// snapshot), so no link in the working tree is followed.
fn changed_definitions(
    repo: &OpenRepository,
    snapshot: &Snapshot,
    changes: &[FileChange],
) -> std::collections::HashMap<String, String> {
    use crate::budget::outline::{self, Lang};
    let outlined: Vec<(&FileChange, Lang)> = changes
        .iter()
        .filter(|c| matches!(c.action.as_str(), "modified" | "created" | "deleted"))
        .filter_map(|c| Some((c, Lang::of_path(&c.path)?)))
        .take(MAX_OUTLINED_FILES)
        .collect();
    let paths: Vec<&str> = outlined.iter().map(|(c, _)| c.path.as_str()).collect();
    let Ok(versions) = repo.versions(snapshot, &paths, MAX_OUTLINED_BYTES) else {
        return Default::default();
    };
    outlined
        .iter()
        .zip(versions)
        // Both sides must be readable, but for a created or deleted file.
        .filter(|((change, _), (old, new))| match change.action.as_str() {
            "created" => new.is_some(),
            "deleted" => old.is_some(),
            _ => old.is_some() && new.is_some(),
        })
        .filter_map(|((change, lang), (old, new))| {
            let changes = outline::changed_definitions(old.as_deref(), new.as_deref(), *lang);
            (!changes.is_empty())
                .then(|| (change.path.clone(), changes.describe(MAX_DEFINITIONS_NAMED)))
        })
        .collect()
}

/// The repository's state in the capture: an operation in progress (merge,
/// rebase, ...) by its name; otherwise `clean` only when nothing changed
/// against HEAD, else `modified`.
fn git_state<C>(operation: &str, changes: &[C]) -> String {
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

/// The action of the next step made from a task in progress.
pub const FINISH: &str = "finish";

/// Most file names taken from one text.
const MAX_FILES_MENTIONED: usize = 12;

/// The files a task names: the workflow file's own list for it, then the
/// project's files its title and description name, then the names of files
/// not in the project yet, marked to create, when they plainly are paths
/// (see [`looks_like_a_path`]).
fn task_files(base: &PathBase, task: &Task, listed: &[String]) -> Vec<crate::state::TaskFile> {
    let texts: Vec<&str> = std::iter::once(task.title.as_str())
        .chain(task.description.as_deref())
        .collect();
    let existing = listed
        .iter()
        .cloned()
        .chain(texts.iter().flat_map(|t| files_mentioned(base, t)));
    let root = Dir::open(base.project).ok();
    // A repository file's words name no file to create: the list is shown
    // outside their quotation.
    let texts_to_create: &[&str] = if task.source == TaskSource::WorkflowFile {
        &[]
    } else {
        &texts
    };
    let missing = texts_to_create
        .iter()
        .flat_map(|t| path_words(t))
        .map(|w| base.from_session(w))
        .filter(|p| looks_like_a_path(p))
        .filter(|p| root.as_ref().is_some_and(|r| absent(r, Path::new(p))));
    let mut files: Vec<crate::state::TaskFile> = Vec::new();
    for (path, to_create) in existing
        .map(|p| (p, false))
        .chain(missing.map(|p| (p, true)))
    {
        if files.len() < MAX_FILES_MENTIONED && !files.iter().any(|f| f.path == path) {
            files.push(crate::state::TaskFile { path, to_create });
        }
    }
    files
}

/// Nothing at all is at `rel` below `root` (not a file, a directory or a
/// link), so that a task naming it means to create it.
fn absent(root: &Dir, rel: &Path) -> bool {
    let Some(name) = rel.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    match root.open_path(rel.parent().unwrap_or(Path::new(""))) {
        Ok(dir) => !dir.exists(name),
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

/// The words of a text that may name a file, at most a few dozen.
fn path_words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || matches!(c, '`' | '\'' | '"' | ',' | '(' | ')'))
        .map(|w| w.trim_end_matches([':', '.', ';']))
        .filter(|w| w.contains('/') || w.contains('.'))
        .filter(|w| !w.starts_with('-'))
        .take(MAX_FILES_MENTIONED * 8)
}

/// Extensions a file to create is recognised by when its name has no `/`.
const SOURCE_EXTENSIONS: [&str; 30] = [
    "rs", "py", "ts", "tsx", "js", "jsx", "mjs", "go", "java", "kt", "c", "h", "cc", "cpp", "hpp",
    "cs", "rb", "php", "swift", "sh", "sql", "md", "txt", "json", "yaml", "yml", "toml", "html",
    "css", "proto",
];

/// A name that can only be a relative path inside the project: no `..`,
/// not absolute, no URL, plain characters, and either a directory part
/// with a file name that has an extension, or a known extension.
fn looks_like_a_path(path: &str) -> bool {
    let plain = path
        .chars()
        .all(|c| c.is_alphanumeric() || matches!(c, '/' | '.' | '_' | '-'));
    let inside = Path::new(path)
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    let name = path.rsplit('/').next().unwrap_or(path);
    let Some((stem, extension)) = name.rsplit_once('.') else {
        return false;
    };
    plain
        && inside
        && !path.contains("//")
        && !stem.is_empty()
        && !extension.is_empty()
        && extension.chars().all(|c| c.is_ascii_alphanumeric())
        && (path.contains('/') || SOURCE_EXTENSIONS.contains(&extension))
}

/// Words of `text` that name existing files of the project (relative, or
/// absolute inside it), as paths relative to the project. Only names: the
/// files are never read.
fn files_mentioned(base: &PathBase, text: &str) -> Vec<String> {
    let Ok(root) = Dir::open(base.project) else {
        return Vec::new();
    };
    let mut found: Vec<String> = Vec::new();
    for word in path_words(text) {
        // From the working directory first, as the agent writes them; else
        // from the root, as a person may.
        let from_working = base.from_session(word);
        let path = if root.file_at(Path::new(&from_working)).is_some() {
            from_working
        } else {
            base.from_root(word)
        };
        if found.len() < MAX_FILES_MENTIONED
            && !found.contains(&path)
            && root.file_at(Path::new(&path)).is_some()
        {
            found.push(path);
        }
    }
    found
}

/// The file the agent was working on: the last one its tool calls wrote
/// that is still a file of the project, else the changed file (by git)
/// written last.
fn file_worked_on(
    base: &PathBase,
    facts: Option<&WorkFacts>,
    changes: &[&FileChange],
) -> Option<String> {
    let root = Dir::open(base.project).ok()?;
    // `file_at` refuses absolute paths, `..` and links.
    let exists = |path: &str| root.file_at(Path::new(path)).is_some();
    let from_tools = facts.and_then(|f| {
        f.edited
            .iter()
            .rev()
            .map(|e| base.from_session(&e.path))
            .find(|p| exists(p))
    });
    from_tools.or_else(|| {
        changes
            .iter()
            .filter(|c| c.action != "deleted")
            .filter_map(|c| Some((root.file_at(Path::new(&c.path))?, &c.path)))
            .max_by_key(|(modified, _)| *modified)
            .map(|(_, path)| path.clone())
    })
}

/// Paths as a session names them (absolute, or relative to the directory
/// it works in) turned into the state's one base: relative to the project
/// root.
pub struct PathBase<'a> {
    pub project: &'a Path,
    /// The directory the session works in (the root, or one below it).
    working: std::path::PathBuf,
}

impl<'a> PathBase<'a> {
    pub fn new(project: &'a Path, working_dir: Option<&str>) -> Self {
        // Only a path below the root counts: anything else is the root.
        let below = working_dir.map(Path::new).filter(|dir| {
            dir.components()
                .all(|c| matches!(c, std::path::Component::Normal(_)))
        });
        PathBase {
            project,
            working: below.map_or_else(|| project.to_path_buf(), |dir| project.join(dir)),
        }
    }

    /// `path` as the session wrote it, relative to the root when it lies
    /// inside the project; otherwise as it was.
    pub fn from_session(&self, path: &str) -> String {
        Self::shown(protocol::project::typed_in(
            self.project,
            &self.working,
            Path::new(path),
        ))
    }

    /// `path` taken as relative to the root (or absolute).
    pub fn from_root(&self, path: &str) -> String {
        Self::shown(protocol::project::typed_in(
            self.project,
            self.project,
            Path::new(path),
        ))
    }

    fn shown(path: std::path::PathBuf) -> String {
        path.to_string_lossy().into_owned()
    }

    /// The root-relative paths this session's file wrote or read.
    fn touched_by(&self, facts: &WorkFacts) -> std::collections::HashSet<String> {
        facts
            .edited
            .iter()
            .map(|e| e.path.as_str())
            .chain(facts.read.iter().map(String::as_str))
            .map(|p| self.from_session(p))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository with one commit of `files`.
    fn repository(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(dir.path()).unwrap();
        let mut index = repo.index().unwrap();
        for (path, text) in files {
            let full = dir.path().join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(&full, text).unwrap();
            index.add_path(Path::new(path)).unwrap();
        }
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let who = git2::Signature::now("t", "t@t.invalid").unwrap();
        repo.commit(Some("HEAD"), &who, &who, "init", &tree, &[])
            .unwrap();
        dir
    }

    fn capture_with(project: &Path, harness: Harness, session_file: Option<&Path>) -> ContextState {
        capture_by(project, Some(harness), session_file)
    }

    fn capture_by(
        project: &Path,
        harness: Option<Harness>,
        session_file: Option<&Path>,
    ) -> ContextState {
        let config = Config::default();
        let opened = OpenRepository::open(project);
        capture(&Input {
            name: "save",
            project,
            working_dir: None,
            repositories: &Repositories::default(),
            repository: opened.as_ref(),
            harness,
            harness_session: Some("s1"),
            transcript: session_file,
            context: None,
            trigger: crate::state::SaveTrigger::Manual,
            threshold: None,
            config: &config,
            now_ms: 0,
        })
        .state
    }

    /// A session no hook has named the harness of has a file no reader may
    /// guess at: it is not read, and the state says why.
    #[test]
    fn a_session_file_of_no_known_harness_is_not_read() {
        let dir = repository(&[("a.txt", "a\n")]);
        let elsewhere = tempfile::tempdir().unwrap();
        let transcript = elsewhere.path().join("t.jsonl");
        let prompt =
            r#"{"type":"user","message":{"role":"user","content":"Make the shapes configurable"}}"#;
        std::fs::write(&transcript, format!("{prompt}\n")).unwrap();
        let known = capture_by(dir.path(), Some(Harness::ClaudeCode), Some(&transcript));
        assert!(String::from_utf8_lossy(&known.to_json()).contains("shapes configurable"));
        let unknown = capture_by(dir.path(), None, Some(&transcript));
        assert!(!String::from_utf8_lossy(&unknown.to_json()).contains("shapes configurable"));
        assert!(
            unknown
                .problems
                .iter()
                .any(|p| p.contains("was not read: no hook of the session has said which harness")),
            "{:?}",
            unknown.problems
        );
    }

    /// A client that had not written its file yet leaves the state to the
    /// records and git, and the state says so.
    #[test]
    fn a_session_file_not_written_yet_is_named_as_such() {
        let dir = repository(&[("a.txt", "a\n")]);
        let elsewhere = tempfile::tempdir().unwrap();
        let transcript = elsewhere.path().join("events.jsonl");
        let state = capture_by(dir.path(), Some(Harness::CopilotCli), Some(&transcript));
        assert!(
            state
                .problems
                .iter()
                .any(|p| p.contains("did not exist yet when the state was saved")),
            "{:?}",
            state.problems
        );
    }

    /// What a real session leaves: a task whose description names files
    /// (only the project's own, never through a link), a file written by
    /// Bash, and a change git sees, described by the definitions it touched.
    #[test]
    fn the_capture_says_what_changed_and_where_the_work_was() {
        let dir = repository(&[(
            "src/lib.rs",
            "fn keep() -> u32 {\n    1\n}\n\nfn old() {}\n\nstruct Shape;\n",
        )]);
        let project = dir.path();
        std::fs::write(
            project.join("src/lib.rs"),
            "fn keep() -> u32 {\n    2\n}\n\nstruct Shape;\n\nfn added() {}\n",
        )
        .unwrap();
        std::os::unix::fs::symlink("/etc/hostname", project.join("src/link.rs")).unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let transcript = elsewhere.path().join("t.jsonl");
        let lines = [
            r#"{"type":"user","message":{"role":"user","content":"Make the shapes configurable"}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"c1","name":"TaskCreate","input":{"subject":"Wire the config","description":"Touch src/lib.rs, src/link.rs, /etc/hostname and src/../src/lib.rs"}}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"c1","content":"Task #1 created successfully: Wire the config"}]}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"r1","name":"Read","input":{"file_path":"src/lib.rs"}}]}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"b1","name":"Bash","input":{"command":"echo done >> notes.txt && echo x > /tmp/elsewhere.txt"}}]}}"#,
            r#"{"type":"user","message":{"role":"user","content":"go on"}}"#,
        ];
        std::fs::write(&transcript, lines.join("\n")).unwrap();
        std::fs::write(project.join("notes.txt"), "done\n").unwrap();
        let state = capture_with(project, Harness::ClaudeCode, Some(&transcript));
        assert!(
            state.sources.iter().any(|s| s == "transcript"),
            "{:?}",
            state.sources
        );
        assert_eq!(
            state.objective.as_deref(),
            Some("Make the shapes configurable")
        );
        assert_eq!(state.tasks[0].source, TaskSource::Tasks);
        assert_eq!(
            state.tasks[0].description.as_deref(),
            Some("Touch src/lib.rs, src/link.rs, /etc/hostname and src/../src/lib.rs")
        );
        assert_eq!(state.next_actions[0].context_needed, ["src/lib.rs"]);
        assert_eq!(state.active_work.file_path.as_deref(), Some("notes.txt"));
        let lib = state
            .modified_files
            .iter()
            .find(|m| m.path == "src/lib.rs")
            .expect("src/lib.rs changed");
        assert_eq!(
            lib.summary,
            "+3 −3 lines; added fn added; edited fn keep; removed fn old"
        );
    }

    /// The task in progress comes before the pending ones, after what was
    /// recorded with `hookctl next`; each task carries the files it names,
    /// those not written yet marked to create.
    #[test]
    fn next_actions_put_the_task_in_progress_before_the_pending_ones() {
        let dir = repository(&[("src/jwt.rs", "pub fn sign() {}\n")]);
        let project = dir.path();
        std::fs::create_dir_all(project.join(".workflow")).unwrap();
        std::fs::write(
            project.join(".workflow/records.jsonl"),
            r#"{"ts":"2026-11-21T20:00:00Z","kind":"next","action":"run","target":"the auth tests"}"#,
        )
        .unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let transcript = elsewhere.path().join("t.jsonl");
        let lines = [
            r#"{"type":"user","message":{"role":"user","content":"Add JWT auth to the API"}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"c1","name":"TaskCreate","input":{"subject":"Implement JWT signing","description":"Sign tokens in src/jwt.rs; write the design to notes/jwt_design.md first, e.g. the claims."}}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"c1","content":"Task #1 created successfully: Implement JWT signing"}]}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"c2","name":"TaskCreate","input":{"subject":"Add token refresh endpoint","description":"POST /auth/refresh"}}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"c2","content":"Task #2 created successfully: Add token refresh endpoint"}]}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"u1","name":"TaskUpdate","input":{"taskId":"1","status":"in_progress"}}]}}"#,
        ];
        std::fs::write(&transcript, lines.join("\n")).unwrap();
        let state = capture_with(project, Harness::ClaudeCode, Some(&transcript));
        let next: Vec<(u32, &str, &str)> = state
            .next_actions
            .iter()
            .map(|a| (a.priority, a.action.as_str(), a.target.as_str()))
            .collect();
        assert_eq!(
            next,
            [
                (1, "run", "the auth tests"),
                (2, FINISH, "Implement JWT signing"),
                (3, "add", "token refresh endpoint"),
            ]
        );
        assert_eq!(state.next_actions[1].context_needed, ["src/jwt.rs"]);
        let files: Vec<(&str, bool)> = state.tasks[0]
            .files
            .iter()
            .map(|f| (f.path.as_str(), f.to_create))
            .collect();
        assert_eq!(
            files,
            [("src/jwt.rs", false), ("notes/jwt_design.md", true)],
            "`/auth/refresh` and `e.g` name no file"
        );
        assert!(state.tasks[1].files.is_empty(), "{:?}", state.tasks[1]);
    }

    #[test]
    fn only_plain_relative_names_count_as_files_to_create() {
        for path in ["notes/jwt_design.md", "src/auth/refresh.rs", "schema.sql"] {
            assert!(looks_like_a_path(path), "{path}");
        }
        for word in [
            "e.g",
            "v1.2",
            "auth/refresh",
            "../up.rs",
            "/etc/passwd.txt",
            "https://x.invalid/a.md",
            "Node.Js",
            "a//b.rs",
            "x.",
        ] {
            assert!(!looks_like_a_path(word), "{word}");
        }
    }

    /// Git's changes count as the session's work only where its own file
    /// wrote or read them; the rest are listed apart, and hookd's own files
    /// are nobody's.
    #[test]
    fn changes_the_session_never_touched_are_kept_apart() {
        let dir = repository(&[("ours.rs", "fn a() {}\n"), ("theirs.rs", "fn b() {}\n")]);
        let project = dir.path();
        std::fs::write(project.join("ours.rs"), "fn a() { 1; }\n").unwrap();
        std::fs::write(project.join("theirs.rs"), "fn b() { 2; }\n").unwrap();
        std::fs::write(project.join(".hookd.yaml"), "resume:\n  enabled: true\n").unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let transcript = elsewhere.path().join("t.jsonl");
        let edit = format!(
            r#"{{"type":"assistant","message":{{"content":[{{"type":"tool_use","id":"e1","name":"Edit","input":{{"file_path":"{}"}}}}]}}}}"#,
            project.join("ours.rs").display()
        );
        std::fs::write(&transcript, edit).unwrap();
        let state = capture_with(project, Harness::ClaudeCode, Some(&transcript));
        let paths =
            |files: &[ModifiedFile]| files.iter().map(|m| m.path.clone()).collect::<Vec<_>>();
        assert_eq!(paths(&state.modified_files), ["ours.rs"]);
        assert_eq!(paths(&state.changed_elsewhere), ["theirs.rs"]);
    }

    /// Without git, the session's own file says whether the agent created a
    /// file or changed one that was there.
    #[test]
    fn without_git_a_file_the_agent_created_is_listed_as_created() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("plain");
        std::fs::create_dir_all(&project).unwrap();
        let transcript = dir.path().join("t.jsonl");
        let new = project.join("new.md");
        let old = project.join("old.md");
        let lines = [
            format!(
                r#"{{"type":"assistant","message":{{"content":[{{"type":"tool_use","id":"w1","name":"Write","input":{{"file_path":"{}"}}}}]}}}}"#,
                new.display()
            ),
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"w1","content":"ok"}]},"toolUseResult":{"type":"create"}}"#.to_owned(),
            format!(
                r#"{{"type":"assistant","message":{{"content":[{{"type":"tool_use","id":"e1","name":"Edit","input":{{"file_path":"{}"}}}}]}}}}"#,
                old.display()
            ),
        ];
        std::fs::write(&transcript, lines.join("\n")).unwrap();
        let state = capture_with(&project, Harness::ClaudeCode, Some(&transcript));
        let listed: Vec<(&str, &str, &str)> = state
            .modified_files
            .iter()
            .map(|m| (m.path.as_str(), m.action.as_str(), m.summary.as_str()))
            .collect();
        assert_eq!(
            listed,
            [
                ("new.md", "created", "created by the agent"),
                ("old.md", "edited", "edited by the agent (1 edit)")
            ]
        );
    }

    /// A session file that tells nothing is no source; git alone names the
    /// file worked on.
    #[test]
    fn a_session_file_counts_only_when_it_gave_something() {
        let dir = repository(&[("a.py", "def a():\n    pass\n")]);
        let project = dir.path();
        std::fs::write(project.join("a.py"), "def a():\n    return 1\n").unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let rollout = elsewhere.path().join("rollout.jsonl");
        std::fs::write(&rollout, "{\"type\":\"session_meta\",\"payload\":{}}\n").unwrap();
        let state = capture_with(project, Harness::Codex, Some(&rollout));
        assert_eq!(state.sources, ["git"]);
        assert_eq!(state.active_work.file_path.as_deref(), Some("a.py"));
        assert_eq!(state.modified_files[0].summary, "+1 −1 lines; edited fn a");
    }

    #[test]
    fn the_git_state_is_clean_only_when_nothing_changed() {
        let change = FileChange {
            path: "a.rs".into(),
            action: "modified".into(),
            added: Some(1),
            removed: Some(0),
            summary: "+1 −0 lines".into(),
        };
        assert_eq!(git_state::<FileChange>("clean", &[]), "clean");
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
            &PathBase::new(dir.path(), None),
            "Fix `src/auth.rs` and src/missing.rs, see docs.",
        );
        assert_eq!(found, vec!["src/auth.rs"]);
    }

    /// Whatever base the session's file uses (absolute, or relative to the
    /// directory it works in), the state keeps one: the project root.
    #[test]
    fn paths_of_a_session_in_a_subdirectory_are_kept_relative_to_the_root() {
        let base = PathBase::new(Path::new("/p"), Some("pkg/sub"));
        assert_eq!(base.from_session("/p/src/a.rs"), "src/a.rs");
        assert_eq!(base.from_session("notes/a.md"), "pkg/sub/notes/a.md");
        assert_eq!(base.from_session("./notes/../b.md"), "pkg/sub/b.md");
        assert_eq!(base.from_session("../../src/x.rs"), "src/x.rs");
        assert_eq!(
            base.from_session("../../../etc/passwd"),
            "../../../etc/passwd"
        );
        assert_eq!(base.from_session("/elsewhere/a.rs"), "/elsewhere/a.rs");
        assert_eq!(base.from_root("src/x.rs"), "src/x.rs");
        let at_root = PathBase::new(Path::new("/p"), None);
        assert_eq!(at_root.from_session("notes/a.md"), "notes/a.md");
    }
}

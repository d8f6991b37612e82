//! The pre-compact pipeline: capture the workflow state, summarize progress,
//! checkpoint the working tree, plan the context budget, render the resume
//! prompt. PreCompact, the 95% force-save, `hookctl save` and an unannounced
//! compaction run every step; the 80% and 90% saves skip the checkpoint
//! unless configured.
//!
//! Each step that fails is recorded and the others still run. Every file is
//! written atomically; each step's outcome goes to `events.jsonl`.

use crate::budget;
use crate::capture::{self, summary_block};
use crate::events::{LogEvent, SummaryCounts, SummaryTaken};
use crate::git::{self, CheckpointMeta, CommitOutcome, SkipReason};
use crate::project_fs::Dir;
use crate::prompt;
use crate::render::{self, Renderer};
use crate::resources::Resources;
use crate::sessions::{SessionKey, SummaryToken};
use crate::state::SaveTrigger;
use crate::state::{Checkpoint, ContextState, HISTORY_DIR, STATE_FILE, sort_history};
use crate::workflow::Workflow;
use protocol::budget::BudgetPlan;
use protocol::config::Config;
use protocol::wire::ContextStatus;
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;

pub const RESUME_PROMPT_FILE: &str = "resume_prompt.md";
pub const MODIFIED_FILES_FILE: &str = "modified_files.json";
/// Temp files older than this were left by a crash, not by a writer at work.
const STALE_TEMP_AGE: std::time::Duration = std::time::Duration::from_secs(60);

#[derive(Debug, Clone)]
pub struct SaveRequest {
    /// The session whose work it is, if one is known.
    pub session: Option<SessionKey>,
    pub project: PathBuf,
    /// The directory the agent works in, at or below `project`.
    pub working_dir: Option<PathBuf>,
    pub transcript: Option<PathBuf>,
    pub context: Option<ContextStatus>,
    pub trigger: SaveTrigger,
    /// Also make a git checkpoint.
    pub checkpoint: bool,
}

#[derive(Debug, Clone, Default)]
pub struct SaveReport {
    pub state_file: Option<PathBuf>,
    pub resume_prompt_file: Option<PathBuf>,
    /// The checkpoint commit (new, or the unchanged previous one).
    pub checkpoint: Option<String>,
    pub checkpoint_ref: Option<String>,
    /// Why no new checkpoint was made, when none was.
    pub checkpoint_note: Option<String>,
    /// PreCompact's words for the summarizer.
    pub instructions: Option<String>,
    /// The token those words ask the summary's block to carry.
    pub summary_token: Option<String>,
    /// Steps that failed, in words.
    pub problems: Vec<String>,
    /// Steps left out by design, each with why.
    pub skipped: Vec<String>,
}

impl SaveReport {
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Runs the pipeline. Blocking: call it from `spawn_blocking`.
pub fn save(request: &SaveRequest, config: &Config, resources: &Resources) -> SaveReport {
    let mut report = SaveReport::default();
    let lock = resources.projects.for_path(&request.project);
    let _held = lock.lock().unwrap_or_else(|p| p.into_inner());
    // Opened once, under the project's lock: every git step of this save
    // shares it.
    let repository = resources
        .repositories
        .open(&request.project, git::GIT_DEADLINE);
    // A save someone asked for by hand outside any repository would only
    // leave a `.workflow/` in a stray directory, with no checkpoint.
    if request.trigger == SaveTrigger::Manual
        && request.checkpoint
        && let Err(e) = &repository
        && e.is_no_work_tree()
    {
        report.problems.push(format!("{e}: nothing was saved"));
        return report;
    }
    let workflow = Workflow::new(&request.project);
    // Excluded below, where the save can see whether the repository tracks it.
    let dir = match workflow.ensure(false) {
        Ok(dir) => dir,
        Err(e) => {
            report.problems.push(format!("cannot use {e}"));
            return report;
        }
    };
    // Not when the repository tracks files there: they are the project's,
    // and so would be new ones a teammate adds.
    if config.capture.exclude_workflow_dir
        && let Ok(repo) = &repository
        && repo.tracks_under(".workflow/") != Some(true)
    {
        workflow.keep_out_of_git();
    }
    // A daemon killed mid-write leaves its temp files behind; the real files are whole.
    dir.sweep_temp_files(STALE_TEMP_AGE);
    if let Ok(history) = dir.open_dir(HISTORY_DIR) {
        history.sweep_temp_files(STALE_TEMP_AGE);
    }
    let mut run = Run {
        request,
        config,
        resources,
        workflow,
        dir,
        repository,
        report,
    };
    let captured = run.capture();
    let mut state = captured.state;
    let mut renderer = run.progress_summary(&mut state);
    state.checkpoint = Some(run.checkpoint(captured.snapshot.as_ref(), captured.snapshot_note));
    crate::fault::pause("after checkpoint");
    if config.budget.enabled {
        run.context_budget(&mut state, &captured.changes);
    }
    run.write_state(&state, &captured.changes);
    run.resume_prompt(&state, &mut renderer);
    run.sync_state(&state);
    run.report
}

/// What the pipeline's steps share: a [`save`] in progress.
struct Run<'a> {
    request: &'a SaveRequest,
    config: &'a Config,
    resources: &'a Resources,
    workflow: Workflow,
    /// `.workflow/`, open.
    dir: Dir,
    /// The project's repository, opened once, or why it could not be.
    repository: Result<git::OpenRepository, git::GitError>,
    report: SaveReport,
}

/// What the capture step found, for the steps after it.
struct CaptureStep {
    state: ContextState,
    snapshot: Option<git::Snapshot>,
    snapshot_note: Option<String>,
    changes: Vec<protocol::wire::FileChange>,
}

impl Run<'_> {
    /// A step's outcome, as a line of `events.jsonl`.
    fn step(&self, name: &str, started: Instant, ok: bool, detail: Option<String>) {
        let event = LogEvent::Pipeline {
            step: name.to_owned(),
            ok,
            ms: started.elapsed().as_millis() as u64,
            detail,
            trigger: self.request.trigger.to_string(),
        };
        let session = self.request.session.as_ref();
        if let Err(e) = self.workflow.append_event(session, &event) {
            tracing::debug!(error = %e, "cannot append to events.jsonl");
        }
    }

    /// Step 1, capture_workflow_state: with what earlier summaries said,
    /// and the cross-task memory it feeds.
    fn capture(&mut self) -> CaptureStep {
        let (request, config, resources) = (self.request, self.config, self.resources);
        let session = request.session.as_ref();
        let started = Instant::now();
        let threshold = match request.trigger {
            SaveTrigger::Threshold(level) => Some(level),
            _ => None,
        };
        let captured = capture::capture(&capture::Input {
            name: request.trigger.capture_name(),
            project: &request.project,
            working_dir: request.working_dir.as_deref(),
            harness: session.map(|k| k.harness),
            harness_session: session.map(|k| k.id.as_str()),
            transcript: request.transcript.as_deref(),
            context: request.context.as_ref(),
            trigger: request.trigger.clone(),
            threshold,
            config,
            now_ms: crate::time::now_ms(),
            repositories: &resources.repositories,
            repository: self.repository.as_ref(),
        });
        let mut state = captured.state;
        // What earlier summaries of this session said stays until superseded:
        // from its own last state, in the history when another session saved since.
        if let Some(id) = state.harness_session_id.clone()
            && let crate::resume::Loaded::Found { state: earlier, .. } =
                crate::resume::load(&self.workflow, Some(&id), &resources.saved_states)
            && earlier.harness_session_id.as_deref() == Some(id.as_str())
        {
            summary_block::carry_over(&mut state, &earlier);
        }
        self.step(
            "capture",
            started,
            state.problems.is_empty(),
            state.problems.first().cloned(),
        );
        // Cross-task memory: new decisions and blockers become reflections.
        let started = Instant::now();
        if let Some(problem) = crate::memory::after_capture(&resources.memories, config, &state) {
            self.step("memory", started, false, Some(problem));
        }
        CaptureStep {
            state,
            snapshot: captured.snapshot,
            snapshot_note: captured.snapshot_note,
            changes: captured.changes,
        }
    }

    /// Step 2, generate_progress_summary. The renderer (the project's
    /// templates) is made within it, so its time counts in this step's;
    /// the resume prompt's step uses it after.
    fn progress_summary(&self, state: &mut ContextState) -> Renderer {
        let started = Instant::now();
        let mut renderer = Renderer::for_project(Some(&self.request.project), self.config);
        state.progress_summary =
            renderer.render(render::PROGRESS_SUMMARY, &prompt::progress_view(state));
        self.step("progress_summary", started, true, None);
        renderer
    }

    /// 3. git_checkpoint: a commit of the snapshot, when one is asked for.
    fn checkpoint(
        &mut self,
        snapshot: Option<&git::Snapshot>,
        snapshot_note: Option<String>,
    ) -> Checkpoint {
        let (request, config, resources) = (self.request, self.config, self.resources);
        let session = request.session.as_ref();
        let started = Instant::now();
        let checkpoint = match (
            snapshot,
            &self.repository,
            request.checkpoint && config.checkpoint.enabled,
        ) {
            (_, _, false) => {
                let why = if request.checkpoint {
                    "checkpoints are disabled (checkpoint.enabled)"
                } else {
                    "not asked for"
                };
                Checkpoint {
                    note: Some(why.into()),
                    ..Checkpoint::default()
                }
            }
            (Some(snapshot), Ok(repo), true) => {
                let meta = CheckpointMeta {
                    session: session.map(|k| k.id.clone()),
                    trigger: request.trigger.to_string(),
                    tokens: request
                        .context
                        .as_ref()
                        .map(|c| format!("{}/{}", c.tokens_used, c.tokens_max)),
                };
                let skipped = snapshot
                    .skipped
                    .iter()
                    .map(|s| match &s.reason {
                        SkipReason::TooLarge(bytes) => format!("{} ({bytes} bytes)", s.path),
                        SkipReason::Filter(driver) => {
                            format!("{} (filter {driver}, not stored)", s.path)
                        }
                    })
                    .collect();
                let (repo, snapshot_taken) = (repo.clone(), snapshot.clone());
                let ref_prefix = config.checkpoint.ref_prefix.clone();
                // Under the project's lock: git runs under a deadline.
                let committed = resources.repositories.bounded(
                    &request.project,
                    git::GIT_DEADLINE,
                    move |_| repo.commit_checkpoint(&snapshot_taken, &meta, &ref_prefix),
                );
                match committed {
                    Ok(CommitOutcome::Created { sha, reference }) => Checkpoint {
                        sha: Some(sha),
                        reference: Some(reference),
                        note: None,
                        skipped,
                    },
                    Ok(CommitOutcome::Unchanged { sha, reference }) => Checkpoint {
                        sha: Some(sha),
                        reference: Some(reference),
                        note: Some("nothing changed since the last checkpoint".into()),
                        skipped,
                    },
                    Err(e) => {
                        self.report.problems.push(e.to_string());
                        Checkpoint {
                            note: Some(e.to_string()),
                            ..Checkpoint::default()
                        }
                    }
                }
            }
            // No snapshot (no repository, or git failed): the capture said why.
            (_, _, true) => Checkpoint {
                note: snapshot_note,
                ..Checkpoint::default()
            },
        };
        let checkpoint_ok = checkpoint.sha.is_some() || !request.checkpoint;
        self.step(
            "checkpoint",
            started,
            checkpoint_ok,
            checkpoint.sha.clone().or_else(|| checkpoint.note.clone()),
        );
        if request.checkpoint {
            self.report.checkpoint.clone_from(&checkpoint.sha);
            self.report.checkpoint_ref.clone_from(&checkpoint.reference);
            self.report.checkpoint_note.clone_from(&checkpoint.note);
        }
        checkpoint
    }

    /// 4. context_budget: which files the agent should read again.
    fn context_budget(&mut self, state: &mut ContextState, changes: &[protocol::wire::FileChange]) {
        let config = self.config;
        let started = Instant::now();
        let room = crate::resume::room(state, None, config);
        let planned = match room {
            Some(room) if room.reload_tokens() == 0 => Ok(None),
            _ => self.plan_budget(state, changes, room).map(Some),
        };
        let (ok, detail) = match planned {
            // By design: the context is all but full, so nothing more goes in.
            Ok(None) => {
                let why = format!(
                    "files to reload left out: {}",
                    room.map(|r| r.describe()).unwrap_or_default()
                );
                self.report.skipped.push(why.clone());
                (true, Some(format!("skipped: {why}")))
            }
            Ok(Some((plan, record))) => {
                let max_files = room.map_or(config.budget.prompt_files, |r| {
                    r.reload_files(config.budget.prompt_files)
                });
                state.context_to_reload =
                    Some(budget::reload_section(&plan, max_files, room.as_ref()));
                let detail = format!(
                    "{} files, {} of {} tokens, {} candidates{}",
                    state
                        .context_to_reload
                        .as_ref()
                        .map_or(0, |c| c.files.len() + c.more),
                    plan.total_used,
                    plan.available,
                    plan.candidates,
                    record
                        .map(|r| format!("; record {}", r.display()))
                        .unwrap_or_default()
                );
                (true, Some(detail))
            }
            Err(why) => {
                self.report.problems.push(why.clone());
                (false, Some(why))
            }
        };
        self.step("context_budget", started, ok, detail);
    }

    /// The state itself, the changed files, and the history.
    fn write_state(&mut self, state: &ContextState, changes: &[protocol::wire::FileChange]) {
        let (request, config, resources) = (self.request, self.config, self.resources);
        let dir = &self.dir;
        let state_path = self.workflow.path(STATE_FILE);
        let state_bytes = state.to_json();
        if let Err(problem) = resources
            .saved_states
            .record(&request.project, &state_bytes)
        {
            self.report.problems.push(problem);
        }
        match dir.write_atomic(STATE_FILE, &state_bytes) {
            Ok(()) => self.report.state_file = Some(state_path),
            Err(e) => self
                .report
                .problems
                .push(format!("cannot write {}: {e}", state_path.display())),
        }
        let modified = serde_json::to_vec_pretty(&json!({
            "captured_at": state.captured_at,
            "session_id": state.session_id,
            "files": changes,
        }))
        .expect("file changes serialize");
        if let Err(e) = dir.write_atomic(MODIFIED_FILES_FILE, &modified) {
            self.report
                .problems
                .push(format!("cannot write {MODIFIED_FILES_FILE}: {e}"));
        }
        if let Err(e) = keep_history(dir, state, &state_bytes, config.capture.history_keep) {
            self.report
                .problems
                .push(format!("cannot keep history: {e}"));
        }
    }

    /// 5. generate_resume_prompt, and the summarizer's instructions.
    fn resume_prompt(&mut self, state: &ContextState, renderer: &mut Renderer) {
        let (request, config, resources) = (self.request, self.config, self.resources);
        let started = Instant::now();
        match write_resume_prompt(&self.dir, state, renderer, config, resources) {
            Ok(()) => self.report.resume_prompt_file = Some(self.workflow.path(RESUME_PROMPT_FILE)),
            Err(problem) => self.report.problems.push(problem),
        }
        if config.capture.precompact_instructions
            && matches!(request.trigger, SaveTrigger::PreCompact(_))
        {
            let list = renderer.render(
                render::PRECOMPACT_INSTRUCTIONS,
                &prompt::instructions_view(state),
            );
            let token = summary_block::new_token();
            if token.is_none() {
                self.report
                    .problems
                    .push("the OS gave no random bytes for the summary block's token; this compaction's block will not be merged".into());
            }
            self.report.instructions = Some(instructions(
                state.checkpoint.as_ref(),
                &list,
                token.as_deref(),
            ));
            self.report.summary_token = token;
        }
        self.report
            .problems
            .extend(renderer.problems.iter().cloned());
        self.step(
            "resume_prompt",
            started,
            renderer.problems.is_empty(),
            renderer.problems.first().cloned(),
        );
    }
}

impl Run<'_> {
    /// Step 6, sync_state: the saved state as sync pushes it (redacted), on this
    /// machine's ref, when the user named a remote and the repository has
    /// it. Never a problem of the save's: a failure is logged.
    fn sync_state(&self, state: &ContextState) {
        let (request, config, resources) = (self.request, self.config, self.resources);
        let (Some(remote), Some(state_dir), Ok(_)) = (
            config.sync.remote.clone(),
            resources.state_dir.as_deref(),
            &self.repository,
        ) else {
            return;
        };
        let started = Instant::now();
        let machine = match crate::sync::Machine::for_sync(state_dir, &config.sync) {
            Ok(machine) => machine,
            Err(why) => {
                tracing::warn!("sync: {why}");
                self.step("sync_state", started, false, Some(why));
                return;
            }
        };
        let files = crate::sync::export::SavedFiles {
            state_json: state.to_json(),
            resume_prompt: self
                .dir
                .read(RESUME_PROMPT_FILE, 1 << 20)
                .ok()
                .flatten()
                .map(|b| String::from_utf8_lossy(&b).into_owned()),
            progress_summary: Some(state.progress_summary.clone()),
            checkpoint_source: state.checkpoint.as_ref().and_then(|c| c.sha.clone()),
            session: state.harness_session_id.clone(),
            saved_at_ms: crate::time::now_ms(),
        };
        let project = request.project.clone();
        let ledger = crate::sync::Ledger::in_state_dir(state_dir);
        let recorded =
            resources
                .repositories
                .bounded(&request.project, git::GIT_DEADLINE, move |_| {
                    Ok(crate::sync::export::record_state(
                        &project, &machine, &remote, &files, &ledger,
                    ))
                });
        let (ok, detail) = match recorded {
            Ok(Ok(Some(sha))) => (true, Some(sha)),
            Ok(Ok(None)) => (
                true,
                Some(format!(
                    "no remote named {remote_shown}",
                    remote_shown = config.sync.remote.as_deref().unwrap_or("")
                )),
            ),
            Ok(Err(e)) => (false, Some(e.to_string())),
            Err(e) => (false, Some(e.to_string())),
        };
        if !ok {
            tracing::warn!(
                "sync: the saved state was not recorded: {}",
                detail.as_deref().unwrap_or("")
            );
        }
        self.step("sync_state", started, ok, detail);
    }
}

/// `.workflow/resume_prompt.md`, rendered from `state`.
fn write_resume_prompt(
    dir: &Dir,
    state: &ContextState,
    renderer: &mut Renderer,
    config: &Config,
    resources: &Resources,
) -> Result<(), String> {
    let mut view = prompt::resume_view(renderer, state, &[], None);
    let room = crate::resume::room(state, None, config);
    crate::memory::fill_section(
        &resources.memories,
        &mut view,
        renderer,
        config,
        state,
        false,
        room.as_ref(),
    );
    let text = prompt::fit(
        renderer,
        view,
        config.resume.max_chars,
        config.resume.format,
    )
    .text;
    dir.write_atomic(RESUME_PROMPT_FILE, text.as_bytes())
        .map_err(|e| {
            format!(
                "cannot write {}: {e}",
                dir.path().join(RESUME_PROMPT_FILE).display()
            )
        })
}

/// The project's saved state, if there is a readable one hookd wrote.
fn read_state(dir: &Dir, known: &crate::saved_states::Known) -> Result<ContextState, String> {
    crate::resume::read_state(dir, STATE_FILE, known)?
        .ok_or_else(|| "no saved state to merge into".to_owned())
}

/// A compaction summary, for [`take_summary`].
#[derive(Debug, Clone)]
pub struct SummaryRequest {
    pub session: SessionKey,
    pub project: PathBuf,
    pub summary: String,
    /// Which hook or file delivered it (`subagent-stop`, `post-compact`, `transcript`).
    pub from: &'static str,
    /// The token PreCompact gave this compaction, if it gave one.
    pub token: Option<SummaryToken>,
}

/// Merges the summary's `hookd-state` block into the session's saved state
/// and renders the resume prompt again from the merged state, so that the
/// resume after the compaction holds what the summary said. Only the block
/// PreCompact asked for counts (the summary's last, with its token); the
/// line says how many others were ignored. Its decisions, rejected
/// approaches and resolved blockers become reflections of the task.
/// Returns the line for `events.jsonl`. Blocking: call it from `spawn_blocking`.
pub fn take_summary(
    request: &SummaryRequest,
    config: &Config,
    resources: &Resources,
) -> SummaryTaken {
    let mut fields = SummaryTaken {
        from: request.from.to_owned(),
        summary_chars: request.summary.chars().count(),
        ..SummaryTaken::default()
    };
    let token = request.token.as_ref();
    let parsed = summary_block::parse(&request.summary, token.map(|t| t.token.as_str()));
    if parsed.ignored > 0 {
        fields.ignored_blocks = Some(parsed.ignored);
    }
    let Some(block) = parsed.state else {
        fields.why =
            Some(parsed.why_not.unwrap_or_else(|| {
                format!("the summary has no {} block", summary_block::INFO_STRING)
            }));
        return fields;
    };
    if let Some(used_by) = token.and_then(|t| t.used_by.as_ref()) {
        fields.why = Some(
            if *used_by == block.fingerprint {
                "this summary was merged already"
            } else {
                "this compaction's token was used already by another summary"
            }
            .to_owned(),
        );
        return fields;
    }
    fields.fingerprint = Some(block.fingerprint.clone());
    fields.problems = Some(block.problems.clone());
    let why_not = (|| {
        let workflow = Workflow::new(&request.project);
        let dir = workflow
            .open()
            .map_err(|_| "no saved state to merge into".to_owned())?;
        let lock = resources.projects.for_path(&request.project);
        let _held = lock.lock().unwrap_or_else(|p| p.into_inner());
        let known = resources.saved_states.known(&request.project);
        let mut state = read_state(&dir, &known)?;
        if state.harness_session_id.as_deref() != Some(request.session.id.as_str())
            || state.project_dir != request.project.display().to_string()
        {
            return Err("the saved state is another session's".to_owned());
        }
        if state
            .summary
            .as_ref()
            .is_some_and(|s| s.fingerprint == block.fingerprint)
        {
            return Err("this summary was merged already".to_owned());
        }
        if !summary_block::merge(&mut state, &block) {
            return Err(format!(
                "the {} block holds nothing usable",
                summary_block::INFO_STRING
            ));
        }
        state.summary = Some(crate::state::SummaryTaken {
            from: request.from.to_owned(),
            taken_at: crate::time::rfc3339(crate::time::now_ms()),
            fingerprint: block.fingerprint.clone(),
            problems: block.problems.clone(),
        });
        let mut renderer = Renderer::for_project(Some(&request.project), config);
        state.progress_summary =
            renderer.render(render::PROGRESS_SUMMARY, &prompt::progress_view(&state));
        let bytes = state.to_json();
        // Unrecorded, the merged state would not be resumed: keep the one before.
        resources.saved_states.record(&request.project, &bytes)?;
        dir.write_atomic(STATE_FILE, &bytes)
            .map_err(|e| format!("cannot write {}: {e}", workflow.path(STATE_FILE).display()))?;
        if let Err(e) = keep_history(&dir, &state, &bytes, config.capture.history_keep) {
            tracing::debug!(error = %e, "cannot keep history");
        }
        write_resume_prompt(&dir, &state, &mut renderer, config, resources)?;
        if let Some(problem) = crate::memory::after_summary(&resources.memories, config, &state) {
            tracing::debug!("{problem}");
        }
        Ok(SummaryCounts {
            decisions: block.decisions.len(),
            rejected: block.rejected.len(),
            blockers: block.blockers.len(),
            next_actions: block.next_actions.len(),
            constraints: block.constraints.len(),
            lifted_constraints: block.lifted_constraints.len(),
        })
    })();
    match why_not {
        Ok(counts) => {
            fields.merged = true;
            fields.taken = Some(counts);
        }
        Err(why) => fields.why = Some(why),
    }
    fields
}

/// What PreCompact asks the summary to end with, after the info string
/// with its token, in the state's own field names; read back by
/// [`summary_block`]. Every compaction pays for these words, so they are few.
pub const BLOCK_FIELDS: &str = "of YAML, each key only if it applies: \
decisions [{topic, decision, reasoning}], rejected [{approach, why}], \
blockers [{issue, status: unresolved|workaround|resolved, notes}], constraints [text], \
lifted_constraints [text], active_task, progress_notes, \
next_actions [{action, target, priority, context_needed: [files]}].";

/// PreCompact's answer, which Claude Code also shows the person under
/// "Compacted": two lines. Its first words are hookd's own, so that no
/// template can make the text parse as a hook decision; the template adds
/// what to keep, and hookd's request for the `hookd-state` block with this
/// compaction's token closes it (no token: no block asked for).
fn instructions(checkpoint: Option<&Checkpoint>, list: &str, token: Option<&str>) -> String {
    let checkpointed = checkpoint
        .and_then(|c| c.sha.as_deref())
        .map(|sha| format!(", checkpoint {}", sha.get(..12).unwrap_or(sha)))
        .unwrap_or_default();
    let list = list.split_whitespace().collect::<Vec<_>>().join(" ");
    let block = token
        .map(|token| {
            format!(
                "End it with one fenced code block, info string `{} {token}`, {BLOCK_FIELDS}\n",
                summary_block::INFO_STRING
            )
        })
        .unwrap_or_default();
    format!(
        "hookd saved the workflow state (.workflow/context_state.json{checkpointed}). \
         Keep in your summary: {list}.\n{block}"
    )
}

/// Plans the context budget for the captured state's task and saves the
/// budget record. Files come from git's index and the captured changes, so
/// the working tree is not walked a second time.
impl Run<'_> {
    fn plan_budget(
        &self,
        state: &ContextState,
        changes: &[protocol::wire::FileChange],
        room: Option<budget::room::Room>,
    ) -> Result<(BudgetPlan, Option<PathBuf>), String> {
        let (request, config, workflow) = (self.request, self.config, &self.dir);
        let repositories = &self.resources.repositories;
        let repository = git::Access::of(&self.repository);
        let task = budget::plan::task_of(state);
        let (project, repo) = (request.project.clone(), repository.clone());
        let mut files = repositories
            .bounded(&request.project, git::GIT_DEADLINE, move |_| {
                Ok(budget::files::list_in(&repo, &project, false))
            })
            .map_err(|e| format!("context budget: {e}"))?;
        files.extend(
            changes
                .iter()
                .filter(|c| c.action == "created" && request.project.join(&c.path).is_file())
                .map(|c| c.path.clone()),
        );
        files.sort();
        files.dedup();
        let (total, source) = match room {
            // The reload list's share of the room, on top of the reserves the plan keeps.
            Some(room) => (
                room.reload_tokens()
                    + config.budget.reserve_for_output
                    + config.budget.reserve_for_system,
                format!("the room left ({})", room.describe()),
            ),
            None => budget::total_budget(
                &config.budget,
                None,
                request.context.as_ref().map(|c| c.tokens_max),
            ),
        };
        let now = crate::time::now_ms();
        let input = budget::plan::PlanInput {
            project: &request.project,
            task,
            state: Some(state),
            transcript: request.transcript.as_deref(),
            files: Some(files),
            changed: Some(changes.iter().map(|c| c.path.clone()).collect()),
            // Another session's changes (or the person's) are not this one's to reload.
            left_out: state
                .changed_elsewhere
                .iter()
                .map(|m| m.path.clone())
                .collect(),
            total_budget: total,
            budget_source: source,
            session: request.session.as_ref().map(|k| k.id.clone()),
            config: &config.budget,
            cache_dir: config
                .budget
                .cache_summaries
                .then(|| workflow.create_dir(budget::summary::CACHE_DIR).ok())
                .flatten()
                .map(|(dir, _)| dir),
            now_ms: now,
            repositories,
            repository: &repository,
        };
        let plan = budget::plan::plan(&input).map_err(|e| format!("context budget: {e}"))?;
        let record = budget::plan::save_record(workflow, &plan, now, config.budget.records_keep)
            .map_err(|e| tracing::debug!(error = %e, "cannot save the budget record"))
            .ok();
        Ok((plan, record))
    }
}

/// Keeps a copy of each capture (`bytes`, the state file's content) in
/// `.workflow/history/`, the newest `keep`.
fn keep_history(
    workflow: &Dir,
    state: &ContextState,
    bytes: &[u8],
    keep: usize,
) -> std::io::Result<()> {
    if keep == 0 {
        return Ok(());
    }
    let (dir, _) = workflow.create_dir(HISTORY_DIR)?;
    let who: String = state
        .harness_session_id
        .as_deref()
        .unwrap_or("nosession")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name = format!("{}_{who}.json", state.session_id);
    dir.write_atomic(&name, bytes)?;
    let mut files: Vec<String> = dir
        .names()?
        .into_iter()
        .filter(|n| n.ends_with(".json") && dir.is_file(n))
        .collect();
    sort_history(&mut files);
    let excess = files.len().saturating_sub(keep);
    for old in &files[..excess] {
        dir.remove(old)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_is_ordered_by_time_whatever_the_capture_was_for() {
        let mut names: Vec<String> = [
            "threshold_20260118_143022_s1.json",
            "compact_20260118_143500_s1.json",
            "save_20260118_120000_s1.json",
            "compact_20250101_000000_nosession.json",
        ]
        .map(String::from)
        .to_vec();
        sort_history(&mut names);
        assert_eq!(
            names,
            [
                "compact_20250101_000000_nosession.json",
                "save_20260118_120000_s1.json",
                "threshold_20260118_143022_s1.json",
                "compact_20260118_143500_s1.json",
            ]
        );
    }

    fn git(dir: &std::path::Path, args: &[&str]) {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t.invalid"])
            .args(args)
            .current_dir(dir)
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {out:?}");
    }

    /// A repository with one commit of `lib.rs`, in a temporary directory.
    fn committed_repo() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("repo");
        std::fs::create_dir(&project).unwrap();
        git(&project, &["init", "-q"]);
        std::fs::write(project.join("lib.rs"), "pub fn one() {}\n").unwrap();
        git(&project, &["add", "."]);
        git(&project, &["commit", "-q", "-m", "init"]);
        (dir, project)
    }

    /// A save of `project` with a checkpoint, for no session.
    fn request_in(project: &std::path::Path, trigger: SaveTrigger) -> SaveRequest {
        SaveRequest {
            session: None,
            project: project.to_path_buf(),
            working_dir: None,
            transcript: None,
            context: None,
            trigger,
            checkpoint: true,
        }
    }

    /// Every git step of a save (snapshot, changes, definitions, checkpoint,
    /// the budget's file list and history) shares one opened repository.
    #[test]
    fn a_save_opens_the_repository_once() {
        let (dir, project) = committed_repo();
        std::fs::write(project.join("lib.rs"), "pub fn two() {}\n").unwrap();
        let request = request_in(&project, SaveTrigger::Manual);
        let config = Config::default();
        assert!(
            config.budget.enabled,
            "the budget's git steps are part of a save"
        );
        let resources = Resources::in_state_dir(&dir.path().join("state"));
        let report = save(&request, &config, &resources);
        assert!(report.ok(), "{:?}", report.problems);
        assert!(report.checkpoint.is_some(), "{report:?}");
        assert_eq!(git::times_opened(&project), 1);
    }

    /// A project that is no repository is asked once: the budget's steps
    /// do not try to open it again by its path.
    #[test]
    fn a_save_outside_a_repository_asks_git_once() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("plain");
        std::fs::create_dir(&project).unwrap();
        std::fs::write(project.join("lib.rs"), "pub fn one() {}\n").unwrap();
        let request = request_in(
            &project,
            SaveTrigger::PreCompact(crate::harness::Trigger::Auto),
        );
        let resources = Resources::in_state_dir(&dir.path().join("state"));
        let report = save(&request, &Config::default(), &resources);
        assert!(report.state_file.is_some(), "{report:?}");
        assert_eq!(git::times_opened(&project), 1);
    }

    /// A `.workflow/` that was there before hookd excluded it is kept out
    /// of git's status and of the checkpoint all the same.
    #[test]
    fn a_workflow_dir_made_earlier_is_kept_out_of_the_checkpoint() {
        let (dir, project) = committed_repo();
        std::fs::create_dir(project.join(".workflow")).unwrap();
        std::fs::write(project.join(".workflow/notes.md"), "mine\n").unwrap();
        let request = request_in(&project, SaveTrigger::Manual);
        let resources = Resources::in_state_dir(&dir.path().join("state"));
        let report = save(&request, &Config::default(), &resources);
        let checkpoint = report.checkpoint.expect("a checkpoint");
        let listed = std::process::Command::new("git")
            .args(["ls-tree", "-r", "--name-only", &checkpoint])
            .current_dir(&project)
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&listed.stdout), "lib.rs\n");
        let exclude = std::fs::read_to_string(project.join(".git/info/exclude")).unwrap();
        assert!(exclude.lines().any(|l| l == ".workflow/"), "{exclude}");
    }

    /// A `.workflow/` the repository tracks files in is the project's:
    /// hookd adds no exclude line that would hide a teammate's new file.
    #[test]
    fn a_tracked_workflow_dir_is_not_excluded() {
        let (dir, project) = committed_repo();
        std::fs::create_dir(project.join(".workflow")).unwrap();
        std::fs::write(project.join(".workflow/plan.md"), "ours\n").unwrap();
        git(&project, &["add", "."]);
        git(&project, &["commit", "-q", "-m", "plan"]);
        let request = request_in(&project, SaveTrigger::Manual);
        let resources = Resources::in_state_dir(&dir.path().join("state"));
        let report = save(&request, &Config::default(), &resources);
        assert!(report.checkpoint.is_some(), "{report:?}");
        let exclude =
            std::fs::read_to_string(project.join(".git/info/exclude")).unwrap_or_default();
        assert!(!exclude.lines().any(|l| l == ".workflow/"), "{exclude}");
    }

    /// What Claude Code shows the person under "Compacted": two lines.
    #[test]
    fn the_summarizers_instructions_are_two_lines() {
        let checkpoint = Checkpoint {
            sha: Some("f3523529f0893337a2a746e3e46abbf0be1e8ed6".into()),
            ..Checkpoint::default()
        };
        let list = Renderer::built_in().render(
            render::PRECOMPACT_INSTRUCTIONS,
            &serde_json::json!({
                "constraints": ["no new dependencies"],
                "active_task": "Implement JWT signing",
                "active_work": {"file_path": "src/auth/jwt.rs"}
            }),
        );
        let text = instructions(
            Some(&checkpoint),
            &list,
            Some("0123456789abcdef0123456789abcdef"),
        );
        assert_eq!(text.lines().count(), 2, "{text}");
        insta::assert_snapshot!(text);
    }
}

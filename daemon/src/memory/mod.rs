//! Cross-task memory: what was learned on one task reaches the next similar
//! one, across compactions and sessions (the seed's Reflexion memory).
//!
//! - A **task** is the work of one session lineage in one project (a
//!   session keeps its id through compactions and `--resume`; `/clear` or a
//!   new `claude` starts another). Its description is, in this order, what
//!   `hookctl task start` said, the workflow file's active task, or the
//!   session's first real prompt; its type is classified from that
//!   ([`classify`]); its iterations are its compactions.
//! - **Reflections** come from each capture's new decisions and blockers
//!   ([`reflect`]) and from `hookctl reflect`. All stay on disk; every resume
//!   prompt shows the last Ω of them (the **window**).
//! - At **Stop** and **SessionEnd** the task closes: its outcome comes from
//!   the task list unless `hookctl task done|failed|partial` gave one, its
//!   reflections are judged and its key learnings distilled.
//! - **Retrieval**: when a task's description becomes known (SessionStart,
//!   or its first prompt) and in each resume prompt, the most similar past
//!   tasks ([`lexical`]) hand over their key learnings and helpful
//!   reflections within a token budget.
//!
//! Nothing here may break a hook: every failure is logged, and shown where
//! a person looks: `hookctl status` (a hook's memory work failed),
//! `hookctl memory stats` (files that could not be read), the project's
//! `events.jsonl` (a capture's memory step failed).
//! The daemon is the only writer of the memory directory; all its work here
//! is blocking and runs off the async threads.

pub mod classify;
mod lessons;
pub mod lexical;
pub mod merge;
pub mod reflect;
mod requests;
pub mod store;

pub use lessons::fill_section;
pub use requests::{memory_request, reflect_now, task_request};

use crate::capture::workflow_file;
use crate::events::{LogEvent, MemoryEvent, Reflected, TaskBegun, TaskClosed, TaskClosedNoticed};
use crate::sessions::SessionKey;
use crate::state::{Blocker, ContextState, Decision, SOURCE_SUMMARY};
use crate::time::{now_ms, rfc3339};
use crate::workflow::Workflow;
use protocol::config::Config;
use protocol::memory::{Capacity, Reflection, TaskOutcome, TaskRecord, TaskType};
use protocol::wire::Harness;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use store::{Entry, Store};

/// A task declared with `hookctl task start` and no live session waits this
/// long for the next session in its project.
const WAITING_TASK_MS: u64 = 24 * 3600 * 1000;
/// Old tasks are pruned at most this often.
const PRUNE_EVERY_MS: u64 = 3600 * 1000;
/// Auto-scaling looks at this many of the latest closed tasks of the same type.
const SCALE_LOOKBACK: usize = 2;
/// Longest task description kept, in characters.
const MAX_DESCRIPTION_CHARS: usize = 300;
/// Prompts with fewer content words than this describe no task ("go on").
const MIN_DESCRIPTION_TERMS: usize = 2;

type Shared = Arc<Mutex<Store>>;

/// The open memories by directory, each loaded at its first use: the
/// engine owns them (in [`crate::resources::Resources`]) and passes them in.
#[derive(Default)]
pub struct Memories(Mutex<HashMap<PathBuf, Shared>>, Mutex<Option<String>>);

/// Where the memory lives: `memory.dir`, else `memory/` in the data directory.
pub fn dir(config: &Config) -> Option<PathBuf> {
    config
        .memory
        .dir
        .clone()
        .or_else(|| Some(protocol::paths::data_dir()?.join("memory")))
}

impl Memories {
    /// The memory for this configuration, loaded at the first call.
    pub fn open(&self, config: &Config) -> Result<Shared, String> {
        let dir = dir(config).ok_or_else(|| {
            "no data directory for the memory: set HOOKD_DATA_DIR or memory.dir".to_owned()
        })?;
        let mut stores = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = stores.get(&dir) {
            return Ok(s.clone());
        }
        let mut store = Store::open(&dir)
            .map_err(|e| format!("cannot open the memory in {}: {e}", dir.display()))?;
        store.machine = self.machine();
        prune_if_due(&mut store, config);
        tracing::info!(
            dir = %dir.display(),
            tasks = store.len(),
            ms = store.load_ms,
            problems = store.problems().len(),
            "memory loaded"
        );
        let shared = Arc::new(Mutex::new(store));
        stores.insert(dir, shared.clone());
        Ok(shared)
    }

    /// Names this machine: the tasks it begins carry the name, and lessons
    /// of tasks from elsewhere name theirs.
    pub fn set_machine(&self, name: &str) {
        *self.1.lock().unwrap_or_else(|p| p.into_inner()) = Some(name.to_owned());
        for store in self.0.lock().unwrap_or_else(|p| p.into_inner()).values() {
            lock(store).machine = Some(name.to_owned());
        }
    }

    fn machine(&self) -> Option<String> {
        self.1.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Whether the memory for this configuration is loaded already.
    pub fn is_open(&self, config: &Config) -> bool {
        dir(config).is_some_and(|d| {
            self.0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains_key(&d)
        })
    }
}

fn lock(shared: &Shared) -> MutexGuard<'_, Store> {
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

/// A random (version 4) UUID.
fn new_id() -> String {
    use std::io::Read;
    let mut b = [0u8; 16];
    let random = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b));
    if random.is_err() {
        use std::hash::{BuildHasher, Hasher};
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        for half in 0..2 {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u64(now_ms());
            h.write_u64(COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
            h.write_u32(std::process::id());
            b[half * 8..half * 8 + 8].copy_from_slice(&h.finish().to_le_bytes());
        }
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// Fingerprints of the decisions and blockers a project holds now. A new
/// task starts from these, so that only what is decided or runs into during
/// it becomes its reflections (`records.jsonl` and the workflow file are
/// shared by every session of the project).
fn baseline(project: &Path) -> Vec<String> {
    let workflow = Workflow::new(project);
    let file = workflow_file::load(&workflow)
        .ok()
        .flatten()
        .unwrap_or_default();
    let records = crate::capture::records::load(&workflow).unwrap_or_default();
    let mut decisions: Vec<Decision> = file
        .decisions
        .into_iter()
        .map(|d| Decision {
            topic: d.topic,
            decision: d.decision,
            reasoning: d.reasoning,
            timestamp: d.timestamp,
            source: crate::workflow::WORKFLOW_FILE.into(),
        })
        .collect();
    decisions.extend(records.decisions);
    let mut blockers: Vec<Blocker> = file
        .blockers
        .into_iter()
        .map(|b| Blocker {
            issue: b.issue,
            status: b.status.unwrap_or_else(|| "unresolved".into()),
            notes: b.notes,
            source: crate::workflow::WORKFLOW_FILE.into(),
        })
        .collect();
    for b in records.blockers {
        blockers.retain(|x| x.issue != b.issue);
        blockers.push(b);
    }
    reflect::candidates(&decisions, &blockers, &[])
        .into_iter()
        .map(|n| n.fingerprint)
        .collect()
}

fn new_task(
    store: &Store,
    project: Option<&Path>,
    session: Option<&SessionKey>,
    now: u64,
) -> TaskRecord {
    TaskRecord {
        task_id: new_id(),
        task_description: String::new(),
        task_type: TaskType::Implementation,
        timestamp: rfc3339(now),
        outcome: None,
        iterations: 0,
        final_quality: None,
        reflections: Vec::new(),
        key_learnings: Vec::new(),
        tags: Vec::new(),
        project: project.map(Path::to_path_buf),
        session: session.map(ToString::to_string),
        description_source: None,
        updated_at: rfc3339(now),
        closed_at: None,
        outcome_source: None,
        outcome_explicit: false,
        window: None,
        scaled_window: None,
        scaled_because: None,
        cross_task: None,
        lessons_from: Vec::new(),
        reflected: project.map(baseline).unwrap_or_default(),
        recorded: Vec::new(),
        machine: store.machine.clone(),
    }
}

/// The session a captured state belongs to.
fn session_of(state: &ContextState) -> Option<SessionKey> {
    let harness = Harness::parse(state.harness.as_deref()?)?;
    Some(SessionKey {
        harness,
        id: state.harness_session_id.clone()?,
    })
}

/// Ω for a task, and where it comes from.
pub fn window_of(task: &TaskRecord, config: &Config) -> (u32, &'static str) {
    match (task.window, task.scaled_window) {
        (Some(w), _) => (w, "hookctl task start --memory"),
        (None, Some(w)) => (w, "auto-scaled"),
        (None, None) => (config.memory.window.0, "config memory.window"),
    }
}

fn cross_task_on(task: &TaskRecord, config: &Config) -> bool {
    config.memory.cross_task && task.cross_task.unwrap_or(true)
}

fn save(store: &mut Store, task: &mut TaskRecord, config: &Config) -> Result<(), String> {
    let now = now_ms();
    task.updated_at = rfc3339(now);
    let (window, _) = window_of(task, config);
    store
        .save(task, now, window)
        .map_err(|e| format!("cannot save task {}: {e}", task.task_id))
}

fn max_age_ms(config: &Config) -> u64 {
    config.memory.max_age_days.saturating_mul(24 * 3600 * 1000)
}

fn prune_if_due(store: &mut Store, config: &Config) {
    let now = now_ms();
    if now.saturating_sub(store.last_prune_ms) < PRUNE_EVERY_MS {
        return;
    }
    let gone = store.prune(now, max_age_ms(config));
    if gone > 0 {
        tracing::info!(
            tasks = gone,
            days = config.memory.max_age_days,
            "memory: pruned old tasks"
        );
    }
}

/// Records a memory event in the project's `events.jsonl`.
fn event(project: Option<&Path>, session: Option<&SessionKey>, event: MemoryEvent) {
    let Some(project) = project else {
        return;
    };
    let workflow = Workflow::new(project);
    if let Err(e) = workflow
        .ensure(true)
        .and_then(|_| workflow.append_event(session, &LogEvent::Memory(event)))
    {
        tracing::debug!(project = %project.display(), error = %e, "cannot append to events.jsonl");
    }
}

/// A description worth keeping: a few content words, not a slash command.
fn usable_description(text: &str) -> Option<String> {
    let text = text.trim();
    if text.starts_with('/') || lexical::terms(text).len() < MIN_DESCRIPTION_TERMS {
        return None;
    }
    Some(reflect::clip(
        &protocol::text::one_line(text),
        MAX_DESCRIPTION_CHARS,
    ))
}

/// The workflow file's active task title, if the project keeps one.
fn workflow_task(project: &Path) -> Option<String> {
    let workflow = Workflow::new(project);
    let file = workflow_file::load(&workflow).ok().flatten()?;
    let id = file.active_task.as_ref()?;
    let task = file.tasks.iter().find(|t| &t.id == id)?;
    usable_description(&task.title)
}

/// Sets a task's description, type and tags; auto-scales Ω when asked to.
fn describe(
    store: &Store,
    task: &mut TaskRecord,
    text: String,
    source: &str,
    extra_tags: &[String],
    config: &Config,
) {
    task.task_type = classify::task_type(&text);
    task.task_description = text;
    task.description_source = Some(source.to_owned());
    let mut tags = vec![task.task_type.as_str().to_owned()];
    if let Some(name) = task
        .project
        .as_deref()
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
    {
        tags.push(name.to_owned());
    }
    for t in extra_tags.iter().chain(task.tags.iter()) {
        let t = t.trim().to_owned();
        if !t.is_empty() && !tags.contains(&t) && TaskType::ALL.iter().all(|k| k.as_str() != t) {
            tags.push(t);
        }
    }
    task.tags = tags;
    if config.memory.auto_scale && task.window.is_none() {
        task.scaled_window = None;
        task.scaled_because = None;
        if let Some((w, why)) = auto_scale(store, task, config.memory.window.0) {
            tracing::info!(task = %task.task_id, window = w, reason = %why, "memory: reflections kept per resume prompt auto-scaled");
            task.scaled_window = Some(w);
            task.scaled_because = Some(why);
        }
    }
}

/// Ω one preset up after `SCALE_LOOKBACK` failed tasks of the same type in
/// a row; one down after as many that succeeded without a compaction.
fn auto_scale(store: &Store, task: &TaskRecord, base: u32) -> Option<(u32, String)> {
    let mut recent: Vec<&Entry> = store
        .entries()
        .filter(|e| e.closed && e.task_type == task.task_type && e.task_id != task.task_id)
        .collect();
    recent.sort_by_key(|e| std::cmp::Reverse(e.updated_ms));
    recent.truncate(SCALE_LOOKBACK);
    if recent.len() < SCALE_LOOKBACK {
        return None;
    }
    let kind = task.task_type;
    if recent
        .iter()
        .all(|e| e.outcome == Some(TaskOutcome::Failure))
    {
        let w = Capacity::step(base, true);
        return (w != base).then(|| {
            (
                w,
                format!(
                    "the last {SCALE_LOOKBACK} {kind} tasks failed: reflections kept {base} → {w}"
                ),
            )
        });
    }
    if recent
        .iter()
        .all(|e| e.outcome == Some(TaskOutcome::Success) && e.iterations == 0)
    {
        let w = Capacity::step(base, false);
        return (w != base).then(|| {
            (
                w,
                format!(
                    "the last {SCALE_LOOKBACK} {kind} tasks succeeded without a compaction: reflections kept {base} → {w}"
                ),
            )
        });
    }
    None
}

/// The task of a session lineage, if it has one.
fn task_of(store: &mut Store, session: &SessionKey) -> Option<TaskRecord> {
    let id = store.by_session(&session.to_string())?.to_owned();
    store.load(&id)
}

/// The newest task of a project matching `pick`.
fn newest_in(store: &Store, project: &Path, pick: impl Fn(&Entry) -> bool) -> Option<String> {
    store
        .entries()
        .filter(|e| e.project.as_deref() == Some(project) && pick(e))
        .max_by_key(|e| e.updated_ms)
        .map(|e| e.task_id.clone())
}

/// A task declared for the project that still waits for a session, taken
/// up by `session`.
fn take_waiting_task(
    store: &mut Store,
    project: &Path,
    session: &SessionKey,
) -> Option<TaskRecord> {
    let now = now_ms();
    let id = newest_in(store, project, |e| {
        e.session.is_none() && !e.closed && now.saturating_sub(e.updated_ms) <= WAITING_TASK_MS
    })?;
    let mut task = store.load(&id)?;
    task.session = Some(session.to_string());
    Some(task)
}

/// The session's task; with `create`, one is made (taking up a waiting one first).
fn task_for(
    store: &mut Store,
    project: &Path,
    session: &SessionKey,
    create: bool,
) -> Option<TaskRecord> {
    if let Some(task) = task_of(store, session) {
        return Some(task);
    }
    if !create {
        return None;
    }
    if let Some(task) = take_waiting_task(store, project, session) {
        return Some(task);
    }
    Some(new_task(store, Some(project), Some(session), now_ms()))
}

/// SessionStart(startup | clear): a new session lineage takes up the task
/// declared for the project, or one the workflow file names; when its
/// description is known, it gets the lessons of similar past tasks.
/// `answer` gets those lessons as soon as they are found, before anything
/// is written: the hook need not wait for the writes.
pub fn session_started(
    memories: &Memories,
    config: &Config,
    project: &Path,
    session: &SessionKey,
    answer: impl FnOnce(Option<String>),
) -> Result<(), String> {
    if !config.memory.enabled {
        return Ok(());
    }
    let shared = memories.open(config)?;
    let mut store = lock(&shared);
    let task = match task_of(&mut store, session) {
        Some(task) => task,
        None => match take_waiting_task(&mut store, project, session) {
            Some(task) => task,
            None => {
                let Some(text) = workflow_task(project) else {
                    // Nothing says what the task is yet: its first prompt will.
                    return Ok(());
                };
                let mut task = new_task(&store, Some(project), Some(session), now_ms());
                describe(
                    &store,
                    &mut task,
                    text,
                    crate::workflow::WORKFLOW_FILE,
                    &[],
                    config,
                );
                task
            }
        },
    };
    begin(&mut store, task, config, project, session, answer)
}

/// UserPromptSubmit: the first real prompt of a session describes its task
/// when nothing else did, and brings the lessons of similar past tasks
/// (to `answer`, as [`session_started`] does).
pub fn prompted(
    memories: &Memories,
    config: &Config,
    project: &Path,
    session: &SessionKey,
    prompt: &str,
    answer: impl FnOnce(Option<String>),
) -> Result<(), String> {
    if !config.memory.enabled {
        return Ok(());
    }
    let shared = memories.open(config)?;
    let mut store = lock(&shared);
    let existing = task_of(&mut store, session);
    if existing
        .as_ref()
        .is_some_and(|t| !t.task_description.is_empty())
    {
        return Ok(());
    }
    let mut task = match existing.or_else(|| take_waiting_task(&mut store, project, session)) {
        Some(task) => task,
        None if usable_description(prompt).is_some() => {
            new_task(&store, Some(project), Some(session), now_ms())
        }
        None => return Ok(()),
    };
    if task.task_description.is_empty() {
        let Some(text) = usable_description(prompt) else {
            return Ok(());
        };
        describe(&store, &mut task, text, "first prompt", &[], config);
    }
    begin(&mut store, task, config, project, session, answer)
}

/// A session takes up `task`: its lessons go to `answer` first, then the
/// task is saved and the beginning recorded. The store stays locked until
/// the writes are done, so the next memory call sees the task.
fn begin(
    store: &mut Store,
    mut task: TaskRecord,
    config: &Config,
    project: &Path,
    session: &SessionKey,
    answer: impl FnOnce(Option<String>),
) -> Result<(), String> {
    let handover = lessons::hand_over(store, &task, config);
    answer(handover.as_ref().and_then(|h| h.text.clone()));
    if let Some(handover) = handover {
        handover.record(store, &mut task);
    }
    save(store, &mut task, config)?;
    event(
        Some(project),
        Some(session),
        MemoryEvent::Begin(TaskBegun::Noticed {
            task_id: task.task_id.clone(),
            description: task.task_description.clone(),
            window: window_of(&task, config).0,
            scaled_because: task.scaled_because.clone(),
        }),
    );
    Ok(())
}

/// After a capture (the pipeline's first step): the capture's new decisions
/// and blockers become reflections of the session's task, and a compaction
/// counts as an iteration. Returns what went wrong, if anything did.
pub fn after_capture(memories: &Memories, config: &Config, state: &ContextState) -> Option<String> {
    take_in(memories, config, state, true)
}

/// A compaction summary merged into the saved state: what it says was
/// decided, did not work or was resolved becomes reflections of the task.
pub fn after_summary(memories: &Memories, config: &Config, state: &ContextState) -> Option<String> {
    take_in(memories, config, state, false)
}

/// A state's decisions, blockers and rejected approaches into the task's
/// reflections; `capture`: a new capture (a compaction's counts as an iteration).
fn take_in(
    memories: &Memories,
    config: &Config,
    state: &ContextState,
    capture: bool,
) -> Option<String> {
    if !config.memory.enabled {
        return None;
    }
    let project = PathBuf::from(&state.project_dir);
    let session = session_of(state);
    let result = (|| {
        let shared = memories.open(config)?;
        let mut store = lock(&shared);
        let task = match &session {
            Some(s) => task_for(&mut store, &project, s, true),
            None => newest_in(&store, &project, |e| !e.closed).and_then(|id| store.load(&id)),
        };
        let Some(mut task) = task else {
            return Ok(());
        };
        let stored_session = store.entry(&task.task_id).map(|e| e.session.clone());
        let described = task.task_description.is_empty() && {
            let from_file = state
                .sources
                .iter()
                .any(|s| s == crate::workflow::WORKFLOW_FILE)
                .then(|| workflow_task(&project))
                .flatten();
            let text = from_file
                .map(|t| (t, crate::workflow::WORKFLOW_FILE))
                .or_else(|| {
                    state
                        .recent_prompts
                        .iter()
                        .find_map(|p| usable_description(p))
                        .map(|t| (t, "first prompt"))
                });
            match text {
                Some((text, source)) => {
                    describe(&store, &mut task, text, source, &[], config);
                    true
                }
                None => false,
            }
        };
        // A summary tells of the iteration its compaction just counted.
        let iteration = if capture {
            task.iterations + 1
        } else {
            task.iterations.max(1)
        };
        let blockers: Vec<Blocker> = state
            .blockers
            .iter()
            .filter(|b| b.source != SOURCE_SUMMARY || b.status == "resolved")
            .cloned()
            .collect();
        let new = reflect::from_capture(&task, &state.decisions, &blockers, &state.rejected);
        let added = new.len();
        for n in new {
            let origin = attested(&task, n.origin, &n.fingerprint);
            task.reflected.push(n.fingerprint);
            task.reflections.push(Reflection {
                iteration,
                content: n.content,
                kind: n.kind,
                effectiveness: Default::default(),
                recorded_at: state.captured_at.clone(),
                source: n.source.to_owned(),
                origin,
            });
        }
        let compaction = capture && state.trigger.is_compaction();
        if compaction {
            task.iterations += 1;
        }
        if added > 0 {
            task.closed_at = None;
        }
        let changed =
            added > 0 || compaction || described || stored_session.as_ref() != Some(&task.session);
        let worth = !task.task_description.is_empty() || !task.reflections.is_empty();
        if changed && worth {
            save(&mut store, &mut task, config)?;
        }
        if added > 0 {
            event(
                Some(&project),
                session.as_ref(),
                MemoryEvent::Reflect(Reflected::Found {
                    task_id: task.task_id.clone(),
                    added,
                    iteration,
                    from: if capture { "capture" } else { "summary" }.to_owned(),
                }),
            );
        }
        Ok::<(), String>(())
    })();
    result.err().inspect(|e| tracing::warn!("memory: {e}"))
}

/// Where a reflection's words came from: a `records.jsonl` entry counts as
/// recorded only when hookd wrote it for this task.
fn attested(task: &TaskRecord, origin: String, fingerprint: &str) -> String {
    if origin == crate::workflow::RECORDS_FILE && !task.recorded.iter().any(|f| f == fingerprint) {
        NOT_THROUGH_HOOKCTL.to_owned()
    } else {
        origin
    }
}

/// The origin of a `records.jsonl` entry hookd did not write.
const NOT_THROUGH_HOOKCTL: &str = "records.jsonl, not through hookctl";

/// The repository file a reflection's words came from, as the prompt names
/// it ([`crate::state::repository_file`]), hookd's own
/// `records.jsonl` lines and the others alike.
pub(crate) fn origin_file(origin: &str) -> Option<String> {
    let origin = match origin {
        NOT_THROUGH_HOOKCTL => crate::workflow::RECORDS_FILE,
        other => other,
    };
    crate::state::repository_file(origin)
}
/// Recorded fingerprints a task keeps, the latest.
const MAX_RECORDED: usize = 500;

/// `hookctl decision | blocker`, before the record is appended: the task
/// of `session` (else the project's open one) notes that this decision or
/// blocker was recorded through hookd. Returns what went wrong, if anything.
pub fn attest_record(
    memories: &Memories,
    config: &Config,
    project: &Path,
    session: Option<&SessionKey>,
    record: &protocol::wire::Record,
) -> Option<String> {
    use protocol::wire::Record;
    if !config.memory.enabled {
        return None;
    }
    let (decisions, blockers) = match record {
        Record::Decision {
            topic, decision, ..
        } => (
            vec![Decision {
                topic: topic.clone(),
                decision: decision.clone(),
                ..Decision::default()
            }],
            Vec::new(),
        ),
        Record::Blocker { issue, status, .. } => (
            Vec::new(),
            vec![Blocker {
                issue: issue.clone(),
                status: status.clone().unwrap_or_else(|| "unresolved".into()),
                ..Blocker::default()
            }],
        ),
        _ => return None,
    };
    let result = (|| {
        let shared = memories.open(config)?;
        let mut store = lock(&shared);
        let task = match session {
            Some(s) => task_for(&mut store, project, s, true),
            None => newest_in(&store, project, |e| !e.closed).and_then(|id| store.load(&id)),
        };
        let Some(mut task) = task else {
            return Ok(());
        };
        for n in reflect::candidates(&decisions, &blockers, &[]) {
            if !task.recorded.contains(&n.fingerprint) {
                task.recorded.push(n.fingerprint);
            }
        }
        let excess = task.recorded.len().saturating_sub(MAX_RECORDED);
        task.recorded.drain(..excess);
        save(&mut store, &mut task, config)
    })();
    result.err().inspect(|e| tracing::warn!("memory: {e}"))
}

/// The statuses of the task list as it stands: the workflow file's, else
/// the agent's todo list in the transcript.
fn task_list(
    config: &Config,
    harness: Harness,
    project: &Path,
    transcript: Option<&Path>,
) -> Vec<String> {
    if let Ok(Some(file)) = workflow_file::load(&Workflow::new(project))
        && !file.tasks.is_empty()
    {
        return file
            .tasks
            .into_iter()
            .map(|t| t.status.unwrap_or_else(|| "pending".into()))
            .collect();
    }
    transcript
        .and_then(|t| {
            crate::harness::adapter(harness)
                .read_work(t, config.capture.transcript_scan_bytes, 0)
                .ok()
        })
        .map(|facts| facts.tasks.into_iter().map(|t| t.status.into()).collect())
        .unwrap_or_default()
}

/// Judges and saves a closing task.
fn finish(store: &mut Store, task: &mut TaskRecord, config: &Config) -> Result<(), String> {
    reflect::close(task, config.memory.max_learnings);
    task.closed_at = Some(rfc3339(now_ms()));
    save(store, task, config)
}

/// Stop and SessionEnd: the session's task closes, with the outcome its
/// task list implies unless one was given by hand. A task that never got a
/// description or a reflection is not kept.
pub fn close(
    memories: &Memories,
    config: &Config,
    project: &Path,
    session: &SessionKey,
    transcript: Option<&Path>,
    why: &str,
) -> Result<Option<TaskRecord>, String> {
    if !config.memory.enabled {
        return Ok(None);
    }
    let shared = memories.open(config)?;
    let mut store = lock(&shared);
    let Some(mut task) = task_of(&mut store, session) else {
        return Ok(None);
    };
    if task.task_description.is_empty() && task.reflections.is_empty() {
        let _ = store.forget(&task.task_id);
        return Ok(None);
    }
    if !task.outcome_explicit {
        let statuses = task_list(config, session.harness, project, transcript);
        let statuses: Vec<&str> = statuses.iter().map(String::as_str).collect();
        match classify::outcome_of(&statuses) {
            Some((outcome, quality, because)) => {
                task.outcome = Some(outcome);
                task.final_quality = Some(quality);
                task.outcome_source = Some(because);
            }
            None => {
                task.outcome = None;
                task.outcome_source = Some("no task list".into());
            }
        }
    }
    finish(&mut store, &mut task, config)?;
    prune_if_due(&mut store, config);
    event(
        Some(project),
        Some(session),
        MemoryEvent::Close(TaskClosed::Noticed(TaskClosedNoticed {
            task_id: task.task_id.clone(),
            on: why.to_string(),
            outcome: task.outcome,
            because: task.outcome_source.clone(),
            key_learnings: task.key_learnings.len(),
        })),
    );
    Ok(Some(task))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::store::tests::task;

    fn closed(store: &mut Store, n: u64, outcome: TaskOutcome, iterations: u32) {
        let mut t = task(
            &format!("00000000-0000-4000-8000-{n:012x}"),
            "fix the flaky login test",
        );
        t.task_type = TaskType::Debugging;
        t.outcome = Some(outcome);
        t.iterations = iterations;
        t.closed_at = Some("2026-11-01T10:00:00Z".into());
        store.save(&t, 1000 + n, 3).unwrap();
    }

    fn scaled(store: &Store) -> (Option<u32>, Option<String>) {
        let mut config = Config::default();
        config.memory.auto_scale = true;
        let mut t = new_task(
            &Store::open(tempfile::tempdir().unwrap().path()).unwrap(),
            None,
            None,
            0,
        );
        describe(
            store,
            &mut t,
            "fix the flaky signup test".into(),
            "test",
            &[],
            &config,
        );
        (t.scaled_window, t.scaled_because)
    }

    /// Every file under `dir`, with its length.
    fn files_in(dir: &Path) -> Vec<(PathBuf, u64)> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                found.extend(files_in(&path));
            } else {
                found.push((path.clone(), entry.metadata().unwrap().len()));
            }
        }
        found.sort();
        found
    }

    #[test]
    fn words_from_the_repositorys_files_are_named_by_their_file() {
        for origin in ["records.jsonl", NOT_THROUGH_HOOKCTL] {
            assert_eq!(
                origin_file(origin).as_deref(),
                Some(".workflow/records.jsonl")
            );
        }
        assert_eq!(
            origin_file("workflow_state.yml").as_deref(),
            Some(".workflow/workflow_state.yml")
        );
        assert_eq!(origin_file("summary"), None);
        assert_eq!(origin_file("hookctl reflect"), None);
    }

    #[test]
    fn a_first_prompt_gets_its_lessons_before_anything_is_written() {
        let memory_dir = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let mut config = Config::default();
        config.memory.dir = Some(memory_dir.path().to_owned());
        let memories = Memories::default();
        {
            let shared = memories.open(&config).unwrap();
            let mut store = lock(&shared);
            closed(&mut store, 1, TaskOutcome::Success, 1);
            let mut past = store.load("00000000-0000-4000-8000-000000000001").unwrap();
            past.reflections = vec![Reflection {
                iteration: 1,
                content: "the login test needs a fake clock".into(),
                kind: protocol::memory::ReflectionType::SuccessPattern,
                effectiveness: protocol::memory::Effectiveness::Helpful,
                recorded_at: String::new(),
                source: "hookctl reflect".into(),
                origin: "hookctl reflect".into(),
            }];
            past.key_learnings = reflect::learnings(&past.reflections, 5);
            store.save(&past, now_ms(), 3).unwrap();
        }
        let before = files_in(memory_dir.path());
        let session = SessionKey {
            harness: protocol::wire::Harness::ClaudeCode,
            id: "s1".into(),
        };
        let mut answered = None;
        prompted(
            &memories,
            &config,
            project.path(),
            &session,
            "fix the flaky login test in the auth module",
            |lessons| {
                assert_eq!(
                    files_in(memory_dir.path()),
                    before,
                    "nothing written before the answer"
                );
                answered = Some(lessons);
            },
        )
        .unwrap();
        let lessons = answered.expect("answered").expect("lessons found");
        assert!(lessons.contains("fake clock"), "{lessons}");
        assert_ne!(files_in(memory_dir.path()), before, "written after it");
        let shared = memories.open(&config).unwrap();
        let task = task_of(&mut lock(&shared), &session).expect("the task is saved");
        assert_eq!(task.lessons_from, ["00000000-0000-4000-8000-000000000001"]);
    }

    #[test]
    fn auto_scaling_follows_the_last_two_tasks_of_the_same_type() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        closed(&mut store, 1, TaskOutcome::Failure, 2);
        assert_eq!(scaled(&store), (None, None), "one failure is no streak");
        closed(&mut store, 2, TaskOutcome::Failure, 3);
        let (w, why) = scaled(&store);
        assert_eq!(w, Some(5));
        assert!(
            why.unwrap()
                .contains("the last 2 debugging tasks failed: reflections kept 3 → 5")
        );
        closed(&mut store, 3, TaskOutcome::Success, 0);
        assert_eq!(scaled(&store), (None, None), "a success breaks the streak");
        closed(&mut store, 4, TaskOutcome::Success, 0);
        let (w, why) = scaled(&store);
        assert_eq!(w, Some(1));
        assert!(
            why.unwrap()
                .contains("succeeded without a compaction: reflections kept 3 → 1")
        );
        let mut off = Config::default();
        off.memory.auto_scale = false;
        let mut t = new_task(
            &Store::open(tempfile::tempdir().unwrap().path()).unwrap(),
            None,
            None,
            0,
        );
        describe(
            &store,
            &mut t,
            "fix the flaky signup test".into(),
            "test",
            &[],
            &off,
        );
        assert_eq!(t.scaled_window, None);
    }

    #[test]
    fn only_a_few_words_describe_a_task() {
        assert_eq!(usable_description("hi"), None);
        assert_eq!(usable_description("/compact keep the tests"), None);
        assert_eq!(
            usable_description("  fix the\n flaky   login test "),
            Some("fix the flaky login test".into())
        );
        let long = "word ".repeat(200);
        assert_eq!(
            usable_description(&long).unwrap().chars().count(),
            MAX_DESCRIPTION_CHARS
        );
    }

    #[test]
    fn ids_are_version_4_uuids() {
        let a = new_id();
        assert!(store::valid_id(&a), "{a}");
        assert_eq!(&a[14..15], "4");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"), "{a}");
        assert_ne!(a, new_id());
    }
}

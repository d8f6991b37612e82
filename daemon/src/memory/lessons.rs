//! Lessons from similar past tasks, and the resume prompt's Memory section
//! (the current task's Ω window with those lessons).

use super::reflect;
use super::store::{self, Entry, Store};
use super::{
    Memories, cross_task_on, event, lock, max_age_ms, newest_in, save, session_of, task_of,
    window_of,
};
use crate::budget::room::Room;
use crate::events::MemoryEvent;
use crate::render::{self, Renderer};
use crate::state::ContextState;
use crate::time::now_ms;
use crate::workflow::WORKFLOW_FILE;
use protocol::config::Config;
use protocol::memory::{Reflection, TaskOutcome, TaskRecord};
use serde_json::{Value, json};
use std::path::PathBuf;

/// Bytes per token for estimates (o200k measured 3.64 on docs and code;
/// Claude's tokenizer is not public).
const BYTES_PER_TOKEN: f64 = 3.6;
/// The memory section may take at most this share (1/N) of a resume prompt.
const RESUME_SHARE: usize = 4;
/// A past task's helpful reflections handed over at most, besides its learnings.
const REFLECTIONS_PER_TASK: usize = 3;

/// A past task's lessons, as the memory section template sees them.
struct Lessons {
    tasks: Vec<Value>,
    ids: Vec<String>,
    items: usize,
    successes: usize,
}

fn tokens(text: &str) -> usize {
    (text.len() as f64 / BYTES_PER_TOKEN).ceil() as usize
}

/// The most similar past tasks' key learnings and helpful reflections,
/// within `budget` tokens; the task itself is never its own lesson.
fn lessons(
    store: &mut Store,
    task: &TaskRecord,
    config: &Config,
    budget: usize,
    top_k: usize,
) -> Lessons {
    let m = &config.memory;
    let found: Vec<(Entry, f64)> = store
        .similar(&store::Wanted {
            description: &task.task_description,
            tags: &task.tags.join(" "),
            exclude: &[task.task_id.as_str()],
            threshold: m.similarity_threshold,
            top_k,
            now_ms: now_ms(),
            max_age_ms: max_age_ms(config),
        })
        .into_iter()
        .map(|(e, s)| (e.clone(), s))
        .collect();
    let mut out = Lessons {
        tasks: Vec::new(),
        ids: Vec::new(),
        items: 0,
        successes: 0,
    };
    let mut used = 0;
    for (entry, score) in found {
        // Another project's task hands over only what its user, its agent
        // or a summary's own block said, never its files' words.
        // A task from another machine is another project's, whatever its path.
        let elsewhere = entry
            .machine
            .as_ref()
            .filter(|m| store.machine.as_ref() != Some(*m));
        let same_project =
            entry.project.is_some() && entry.project == task.project && elsewhere.is_none();
        let record = if same_project {
            None
        } else {
            store.load(&entry.task_id)
        };
        let description = match &record {
            Some(r) if r.description_source.as_deref() == Some(WORKFLOW_FILE) => {
                format!(
                    "a {} task described by its project's {WORKFLOW_FILE}",
                    entry.task_type
                )
            }
            _ => entry.task_description.clone(),
        };
        let outcome = entry.outcome.map_or("outcome unknown", TaskOutcome::as_str);
        let date = entry.timestamp.get(..10).unwrap_or(&entry.timestamp);
        let header = format!(
            "{description} ({}, {outcome}, {}, {date})",
            entry.task_type,
            protocol::text::counted(entry.iterations, "compaction")
        );
        let mut cost = tokens(&header) + 4;
        if used + cost > budget {
            break;
        }
        let travelling: Vec<Reflection> = record
            .iter()
            .flat_map(|r| r.reflections.iter().filter(|r| r.travels()).cloned())
            .collect();
        let key_learnings = if same_project {
            entry.key_learnings.clone()
        } else {
            reflect::learnings(&travelling, m.max_learnings)
        };
        // Nothing of it may leave its project: a less similar task may still teach.
        if key_learnings.is_empty() && !same_project {
            continue;
        }
        let mut learnings = Vec::new();
        for l in &key_learnings {
            let c = tokens(l) + 2;
            if used + cost + c > budget {
                break;
            }
            cost += c;
            learnings.push(l.clone());
        }
        let mut shown_reflections = Vec::new();
        if m.inject_reflections
            && entry.helpful > 0
            && learnings.len() == key_learnings.len()
            && let Some(reflections) = if same_project {
                store.load(&entry.task_id).map(|r| r.reflections)
            } else {
                Some(travelling)
            }
        {
            for r in reflections
                .iter()
                .rev()
                .filter(|r| r.effectiveness == protocol::memory::Effectiveness::Helpful)
                .filter(|r| {
                    !key_learnings
                        .iter()
                        .any(|l| l.contains(clip_start(&r.content)))
                })
                .take(REFLECTIONS_PER_TASK)
            {
                let c = tokens(&r.content) + 6;
                if used + cost + c > budget {
                    break;
                }
                cost += c;
                shown_reflections.push(json!({"type": r.kind.as_str(), "type_words": r.kind.words(), "content": r.content}));
            }
        }
        if learnings.is_empty() && shown_reflections.is_empty() {
            break;
        }
        used += cost;
        out.items += learnings.len() + shown_reflections.len();
        if entry.outcome == Some(TaskOutcome::Success) {
            out.successes += 1;
        }
        out.ids.push(entry.task_id.clone());
        out.tasks.push(json!({
            "task_id": entry.task_id,
            "description": description,
            "task_type": entry.task_type.as_str(),
            "outcome": outcome,
            "iterations": entry.iterations,
            "compactions": protocol::text::counted(entry.iterations, "compaction"),
            "date": date,
            "similarity": (score * 100.0).round() / 100.0,
            // A template of an earlier release says `project` whatever it is.
            "project": entry
                .project
                .as_ref()
                .map_or_else(|| "no project".to_owned(), |p| p.display().to_string()),
            "has_project": entry.project.is_some(),
            // Named only when it is not this one.
            "machine": elsewhere,
            "learnings": learnings,
            "reflections": shown_reflections,
        }));
    }
    out
}

/// The first 60 characters of a reflection, to see whether a learning holds it.
fn clip_start(text: &str) -> &str {
    match text.char_indices().nth(60) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

/// Counts a retrieval that reached the model, and notes on the task what it was given.
fn count_injection(store: &mut Store, task: &mut TaskRecord, found: &Lessons, config: &Config) {
    if note_injection(store, task, found)
        && let Err(e) = save(store, task, config)
    {
        store.report(e);
    }
}

/// Counts an injection in the statistics and notes the lessons' tasks on
/// `task`. Returns whether `task` changed (and needs saving).
fn note_injection(store: &mut Store, task: &mut TaskRecord, found: &Lessons) -> bool {
    if found.ids.is_empty() {
        store.count(|c| c.retrievals_empty += 1);
        return false;
    }
    store.count(|c| {
        c.retrievals += 1;
        c.tasks_injected += found.ids.len() as u64;
        c.lessons_injected += found.items as u64;
        c.injected_success += found.successes as u64;
    });
    let before = task.lessons_from.len();
    for id in &found.ids {
        if !task.lessons_from.contains(id) {
            task.lessons_from.push(id.clone());
        }
    }
    task.lessons_from.len() != before
}

/// The lessons handed to a task when its description becomes known, found
/// but not yet recorded: the hook can answer with [`Handover::text`] before
/// [`Handover::record`] writes anything.
pub(super) struct Handover {
    found: Lessons,
    /// The memory section with its startup introduction; `None` when
    /// nothing similar is stored.
    pub text: Option<String>,
}

/// `None` when cross-task memory is off for the task or it has no
/// description yet.
pub(super) fn hand_over(store: &mut Store, task: &TaskRecord, config: &Config) -> Option<Handover> {
    if !cross_task_on(task, config) || task.task_description.is_empty() {
        return None;
    }
    let found = lessons(
        store,
        task,
        config,
        config.memory.max_tokens,
        config.memory.top_k,
    );
    let text = (!found.tasks.is_empty()).then(|| {
        let mut renderer = Renderer::for_project(task.project.as_deref(), config);
        let view = json!({
            "startup": true,
            "description": task.task_description,
            "window": [],
            "similar": found.tasks,
        });
        renderer.render(render::MEMORY_SECTION, &view)
    });
    Some(Handover { found, text })
}

impl Handover {
    /// Counts the hand-over in the statistics and the project's events, and
    /// notes the lessons' tasks on `task` (which the caller then saves).
    pub(super) fn record(self, store: &mut Store, task: &mut TaskRecord) {
        note_injection(store, task, &self.found);
        event(
            task.project.as_deref(),
            None,
            MemoryEvent::Retrieve {
                task_id: task.task_id.clone(),
                description: task.task_description.clone(),
                found: self.found.ids,
                items: self.found.items,
            },
        );
    }
}

/// Fills the resume prompt's `memory_section`: the last Ω reflections of
/// the session's task, and the lessons of similar past tasks, together at
/// most a quarter of the prompt; as many similar tasks as the session's
/// `room` allows (`memory.top_k` when it is not known). `injected`: this
/// prompt goes to the model now (and counts in the statistics).
pub fn fill_section(
    memories: &Memories,
    view: &mut Value,
    renderer: &mut Renderer,
    config: &Config,
    state: &ContextState,
    injected: bool,
    room: Option<&Room>,
) {
    if !config.memory.enabled {
        return;
    }
    let project = PathBuf::from(&state.project_dir);
    let session = session_of(state);
    let shared = match memories.open(config) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("memory: {e}");
            event(
                Some(&project),
                session.as_ref(),
                MemoryEvent::ResumeSection { problem: e },
            );
            return;
        }
    };
    let mut store = lock(&shared);
    let task = match &session {
        Some(s) => task_of(&mut store, s),
        None => newest_in(&store, &project, |e| !e.closed).and_then(|id| store.load(&id)),
    };
    let Some(mut task) = task else {
        return;
    };
    let (omega, from) = window_of(&task, config);
    // "Key Decisions Made" shows the state's decisions already: their
    // reflections, word for word the same, are not said twice.
    let said: std::collections::HashSet<String> = reflect::candidates(&state.decisions, &[], &[])
        .into_iter()
        .map(|new| new.content)
        .collect();
    let unsaid: Vec<&Reflection> = task
        .reflections
        .iter()
        .filter(|r| !(r.source == "decision" && said.contains(&r.content)))
        .collect();
    let window: Vec<Value> = unsaid
        .iter()
        .rev()
        .take(omega as usize)
        .rev()
        .map(|r| {
            // Words a file of the project gave are shown quoted, under its name.
            let from = super::origin_file(&r.origin);
            json!({"type": r.kind.as_str(), "type_words": r.kind.words(), "iteration": r.iteration, "when": protocol::memory::reflection_when(r.iteration), "content": r.content, "from": from})
        })
        .collect();
    let cap = config.resume.max_chars / RESUME_SHARE;
    let mut found = if cross_task_on(&task, config) && !task.task_description.is_empty() {
        let budget = ((cap as f64) / BYTES_PER_TOKEN) as usize;
        let top_k = room.map_or(config.memory.top_k, |r| r.lessons(config.memory.top_k));
        lessons(
            &mut store,
            &task,
            config,
            budget.min(config.memory.max_tokens),
            top_k,
        )
    } else {
        Lessons {
            tasks: Vec::new(),
            ids: Vec::new(),
            items: 0,
            successes: 0,
        }
    };
    if window.is_empty() && found.tasks.is_empty() {
        return;
    }
    let view_of = |similar: &[Value]| {
        json!({
            "startup": false,
            "description": task.task_description,
            "window": window,
            "window_len": window.len(),
            "window_size": omega,
            "window_from": from,
            "reflections_total": unsaid.len(),
            "similar": similar,
        })
    };
    let mut text = renderer.render(render::MEMORY_SECTION, &view_of(&found.tasks));
    // The window is at most Ω short reflections; lessons give way first.
    while text.chars().count() > cap && !found.tasks.is_empty() {
        found.tasks.pop();
        found.ids.pop();
        text = renderer.render(render::MEMORY_SECTION, &view_of(&found.tasks));
    }
    found.items = found
        .tasks
        .iter()
        .map(|t| {
            t["learnings"].as_array().map_or(0, Vec::len)
                + t["reflections"].as_array().map_or(0, Vec::len)
        })
        .sum();
    found.successes = found
        .tasks
        .iter()
        .filter(|t| t["outcome"] == "success")
        .count();
    if injected {
        let shown = window.len() as u64;
        store.count(|c| c.reflections_injected += shown);
        if cross_task_on(&task, config) && !task.task_description.is_empty() {
            count_injection(&mut store, &mut task, &found, config);
        }
    }
    view["memory_section"] = Value::String(text);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::store::tests::task;
    use protocol::memory::{Effectiveness, ReflectionType};
    use std::path::Path;

    /// A closed task of `project` whose one helpful reflection came from `origin`.
    fn past(
        store: &mut Store,
        n: u64,
        description: &str,
        project: &str,
        origin: &str,
        lesson: &str,
    ) {
        let mut t = task(&format!("00000000-0000-4000-8000-{n:012x}"), description);
        t.project = Some(PathBuf::from(project));
        t.reflections = vec![Reflection {
            iteration: 1,
            content: lesson.into(),
            kind: ReflectionType::SuccessPattern,
            effectiveness: Effectiveness::Helpful,
            recorded_at: String::new(),
            source: "blocker".into(),
            origin: origin.into(),
        }];
        t.key_learnings = reflect::learnings(&t.reflections, 5);
        t.closed_at = Some("2026-11-01T10:00:00Z".into());
        store.save(&t, now_ms(), 3).unwrap();
    }

    #[test]
    fn another_projects_files_teach_nothing_and_each_lesson_names_its_project() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        let file = "workflow_state.yml";
        past(
            &mut store,
            1,
            "fix the flaky login test",
            "/p/one",
            file,
            "FILE_WORDS run it",
        );
        past(
            &mut store,
            2,
            "fix the flaky login form test",
            "/p/two",
            "records.jsonl",
            "mock the clock",
        );
        past(
            &mut store,
            3,
            "fix the flaky login test again",
            "/p/here",
            file,
            "OWN_WORDS",
        );
        let mut current = task(
            "00000000-0000-4000-8000-0000000000ff",
            "fix the flaky login test",
        );
        current.project = Some(Path::new("/p/here").to_owned());
        let found = lessons(&mut store, &current, &Config::default(), 2000, 3);
        let text = serde_json::to_string(&found.tasks).unwrap();
        assert!(!text.contains("FILE_WORDS"), "{text}");
        assert!(
            text.contains("mock the clock") && text.contains("/p/two"),
            "{text}"
        );
        assert!(
            text.contains("OWN_WORDS"),
            "a project's own words stay with it: {text}"
        );
        assert_eq!(
            found.ids.len(),
            2,
            "the task with nothing to give is skipped: {text}"
        );
    }
}

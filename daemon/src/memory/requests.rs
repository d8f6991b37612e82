//! `hookctl reflect`, `hookctl task …` and `hookctl memory …`.

use super::store::{Entry, Store};
use super::{
    Memories, classify, cross_task_on, describe, event, finish, lock, new_task, newest_in, reflect,
    save, task_for, task_of, usable_description, window_of,
};
use crate::events::{MemoryEvent, Reflected, TaskBegun, TaskClosed, TaskClosedByHand};
use crate::sessions::SessionKey;
use crate::time::{now_ms, rfc3339};
use protocol::config::Config;
use protocol::memory::{
    Capacity, MemoryAction, MemoryList, MemoryStats, OutcomeCounts, Reflection, ReflectionType,
    TaskAction, TaskOutcome, TaskRecord, TaskReport,
};
use protocol::wire::Response;
use std::path::Path;

/// Tasks `hookctl memory list` shows when no limit is given.
const DEFAULT_LIST_LIMIT: usize = 50;

/// `hookctl reflect`: one reflection on the session's task.
pub fn reflect_now(
    memories: &Memories,
    config: &Config,
    project: &Path,
    session: Option<&SessionKey>,
    content: &str,
    kind: Option<ReflectionType>,
) -> Result<TaskReport, String> {
    enabled(config)?;
    let content = content.trim();
    if content.is_empty() {
        return Err("a reflection needs some text".into());
    }
    let shared = memories.open(config)?;
    let mut store = lock(&shared);
    let task = match session {
        Some(s) => task_for(&mut store, project, s, true),
        None => newest_in(&store, project, |e| !e.closed).and_then(|id| store.load(&id)),
    };
    let Some(mut task) = task else {
        return Err(format!(
            "no agent session or open task in {}: run this from the agent's session, or describe the task first with `hookctl task start \"…\"`",
            project.display()
        ));
    };
    let kind = kind.unwrap_or_else(|| classify::reflection_type(content));
    task.reflections.push(Reflection {
        iteration: task.iterations + 1,
        content: reflect::clip(content, reflect::MAX_REFLECTION_CHARS),
        kind,
        effectiveness: Default::default(),
        recorded_at: rfc3339(now_ms()),
        source: "hookctl reflect".into(),
        origin: "hookctl reflect".into(),
    });
    task.closed_at = None;
    save(&mut store, &mut task, config)?;
    event(
        Some(project),
        session,
        MemoryEvent::Reflect(Reflected::ByHand {
            task_id: task.task_id.clone(),
            reflection_type: kind.as_str().to_owned(),
            from: "hookctl reflect".into(),
        }),
    );
    Ok(report(task, config))
}

fn enabled(config: &Config) -> Result<(), String> {
    if config.memory.enabled {
        Ok(())
    } else {
        Err("the memory is off (memory.enabled is false)".into())
    }
}

fn report(task: TaskRecord, config: &Config) -> TaskReport {
    let (window, from) = window_of(&task, config);
    TaskReport {
        window,
        window_from: from.to_owned(),
        cross_task: cross_task_on(&task, config),
        waiting_for_session: task.session.is_none(),
        task,
    }
}

/// `hookctl task start | done | failed | partial | show`.
pub fn task_request(
    memories: &Memories,
    config: &Config,
    project: &Path,
    session: Option<&SessionKey>,
    action: TaskAction,
) -> Result<TaskReport, String> {
    enabled(config)?;
    let shared = memories.open(config)?;
    let mut store = lock(&shared);
    match action {
        TaskAction::Start {
            description,
            window,
            cross_task,
            tags,
        } => {
            let Some(text) = usable_description(&description) else {
                return Err(format!(
                    "`{description}` does not say what the task is: give a few words"
                ));
            };
            if let Some(w) = window {
                Capacity::parse(&w.to_string()).map_err(|e| format!("--memory: {e}"))?;
            }
            let mut task = match session {
                Some(s) => task_for(&mut store, project, s, true).expect("created when missing"),
                None => new_task(&store, Some(project), None, now_ms()),
            };
            task.window = window.or(task.window);
            task.cross_task = cross_task.or(task.cross_task);
            describe(&store, &mut task, text, "hookctl task start", &tags, config);
            task.closed_at = None;
            save(&mut store, &mut task, config)?;
            event(
                Some(project),
                session,
                MemoryEvent::Begin(TaskBegun::ByHand {
                    task_id: task.task_id.clone(),
                    description: task.task_description.clone(),
                    window: window_of(&task, config).0,
                    from: "hookctl task start".into(),
                }),
            );
            Ok(report(task, config))
        }
        TaskAction::Finish { outcome } => {
            let task = match session {
                Some(s) => task_of(&mut store, s),
                None => None,
            };
            let task = task.or_else(|| {
                newest_in(&store, project, |e| !e.closed).and_then(|id| store.load(&id))
            });
            let Some(mut task) = task else {
                return Err(format!("no open task in {}", project.display()));
            };
            task.outcome = Some(outcome);
            task.outcome_explicit = true;
            task.outcome_source = Some(format!("hookctl task {}", finish_word(outcome)));
            finish(&mut store, &mut task, config)?;
            event(
                Some(project),
                session,
                MemoryEvent::Close(TaskClosed::ByHand(TaskClosedByHand {
                    task_id: task.task_id.clone(),
                    on: "hookctl task".into(),
                    outcome: Some(outcome),
                    key_learnings: task.key_learnings.len(),
                })),
            );
            Ok(report(task, config))
        }
        TaskAction::Show => {
            let task = match session {
                Some(s) => task_of(&mut store, s),
                None => None,
            };
            let task = task.or_else(|| {
                newest_in(&store, project, |e| !e.closed)
                    .or_else(|| newest_in(&store, project, |_| true))
                    .and_then(|id| store.load(&id))
            });
            task.map(|t| report(t, config)).ok_or_else(|| {
                format!(
                    "no task recorded for {} yet (one begins with the session's first prompt, or `hookctl task start \"…\"`)",
                    project.display()
                )
            })
        }
    }
}

fn finish_word(outcome: TaskOutcome) -> &'static str {
    match outcome {
        TaskOutcome::Success => "done",
        TaskOutcome::Partial => "partial",
        TaskOutcome::Failure => "failed",
    }
}

/// `hookctl memory list | show | search | forget | stats`.
pub fn memory_request(
    memories: &Memories,
    config: &Config,
    action: MemoryAction,
) -> Result<Response, String> {
    let shared = memories.open(config)?;
    let mut store = lock(&shared);
    let problems = store.problems().to_vec();
    match action {
        MemoryAction::List { limit } => {
            let mut entries: Vec<&Entry> = store.entries().collect();
            entries.sort_by_key(|e| std::cmp::Reverse(e.updated_ms));
            entries.truncate(limit.unwrap_or(DEFAULT_LIST_LIMIT));
            Ok(Response::MemoryList(Box::new(MemoryList {
                tasks: entries.into_iter().map(|e| e.summary(None)).collect(),
                threshold: None,
                problems,
            })))
        }
        MemoryAction::Search { text, limit } => {
            let hits = store.search(&text);
            Ok(Response::MemoryList(Box::new(MemoryList {
                tasks: hits
                    .into_iter()
                    .take(limit.unwrap_or(10))
                    .map(|(e, s)| e.summary(Some((s * 1000.0).round() / 1000.0)))
                    .collect(),
                threshold: Some(config.memory.similarity_threshold),
                problems,
            })))
        }
        MemoryAction::Show { id } => {
            let id = store.resolve(&id)?;
            store
                .read(&id)
                .map(|t| Response::Task(Box::new(report(t, config))))
        }
        MemoryAction::Forget { id } => {
            let id = store.resolve(&id)?;
            let entry = store
                .forget(&id)
                .map_err(|e| format!("cannot forget task {id}: {e}"))?
                .ok_or_else(|| format!("no stored task {id}"))?;
            Ok(Response::MemoryList(Box::new(MemoryList {
                tasks: vec![entry.summary(None)],
                threshold: None,
                problems,
            })))
        }
        MemoryAction::Stats => Ok(Response::MemoryStats(Box::new(stats(&store)))),
    }
}

fn outcomes<'a>(entries: impl Iterator<Item = &'a Entry>) -> OutcomeCounts {
    let mut c = OutcomeCounts::default();
    let mut iterations = 0u64;
    for e in entries {
        c.tasks += 1;
        iterations += u64::from(e.iterations);
        match e.outcome {
            Some(TaskOutcome::Success) => c.success += 1,
            Some(TaskOutcome::Partial) => c.partial += 1,
            Some(TaskOutcome::Failure) => c.failure += 1,
            None => c.unknown += 1,
        }
    }
    let known = c.tasks - c.unknown;
    c.success_rate = (known > 0).then(|| c.success as f64 / known as f64);
    c.mean_iterations = (c.tasks > 0).then(|| iterations as f64 / c.tasks as f64);
    c
}

fn stats(store: &Store) -> MemoryStats {
    let entries: Vec<&Entry> = store.entries().collect();
    let reflections: usize = entries.iter().map(|e| e.reflections).sum();
    let helpful: usize = entries.iter().map(|e| e.helpful).sum();
    let unhelpful: usize = entries.iter().map(|e| e.unhelpful).sum();
    let windows: Vec<u32> = entries
        .iter()
        .map(|e| e.window)
        .filter(|w| *w > 0)
        .collect();
    let c = &store.counters;
    MemoryStats {
        dir: store.dir().to_path_buf(),
        tasks: entries.len(),
        open_tasks: entries.iter().filter(|e| !e.closed).count(),
        reflections,
        cross_task_retrieval_count: c.retrievals,
        retrievals_empty: c.retrievals_empty,
        tasks_injected: c.tasks_injected,
        lessons_injected: c.lessons_injected,
        reflections_injected: c.reflections_injected,
        mean_window: (!windows.is_empty())
            .then(|| windows.iter().map(|w| f64::from(*w)).sum::<f64>() / windows.len() as f64),
        with_lessons: outcomes(
            entries
                .iter()
                .copied()
                .filter(|e| e.closed && !e.lessons_from.is_empty()),
        ),
        without_lessons: outcomes(
            entries
                .iter()
                .copied()
                .filter(|e| e.closed && e.lessons_from.is_empty()),
        ),
        retrieved_success_rate: (c.tasks_injected > 0)
            .then(|| c.injected_success as f64 / c.tasks_injected as f64),
        helpful,
        neutral: reflections.saturating_sub(helpful + unhelpful),
        unhelpful,
        problems: store.problems().to_vec(),
        tasks_per_machine: per_machine(store, &entries),
    }
}

/// Tasks per machine, when more than one machine's are here; a task that
/// names none was begun here before hookd named machines.
fn per_machine(store: &Store, entries: &[&Entry]) -> std::collections::BTreeMap<String, usize> {
    let here = store.machine.as_deref().unwrap_or("this machine");
    let mut counts = std::collections::BTreeMap::new();
    for e in entries {
        *counts
            .entry(e.machine.as_deref().unwrap_or(here).to_owned())
            .or_insert(0) += 1;
    }
    if counts.len() < 2 {
        counts.clear();
    }
    counts
}

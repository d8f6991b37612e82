//! The memory on disk, one directory per user (`<data dir>/memory/`, 0700):
//!
//! - `tasks/<task_id>.json`: one [`TaskRecord`] per task, written atomically;
//! - `index.jsonl`: one line per change of a task's summary (its
//!   description, type, outcome, learnings, tags and counts), the latest
//!   line winning, and `{"task_id": …, "forgotten": true}` for a forgotten
//!   one. Appending a line is one `write`; when dead lines outnumber live
//!   ones the file is rewritten atomically with one line per task;
//! - `stats.json`: the retrieval counters, written atomically.
//!
//! The daemon loads the index once (lazily, at the first need), keeps it in
//! memory with the lexical index built from it, and updates both as tasks
//! change, so a retrieval never reads more than the few records it hands
//! over. A line or record that cannot be read is skipped and reported; a
//! record missing from the index (a crash between the two writes) is found
//! by listing `tasks/` and indexed again.

use super::lexical::{Lexical, Similarity};
use crate::fsutil;
use protocol::memory::{Effectiveness, TaskOutcome, TaskRecord, TaskSummary, TaskType};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::time::Instant;

pub const INDEX_FILE: &str = "index.jsonl";
pub const TASKS_DIR: &str = "tasks";
pub const STATS_FILE: &str = "stats.json";
/// Problems kept for `hookctl memory stats`; older ones are dropped.
const MAX_PROBLEMS: usize = 50;
/// Rewrite the index once it holds this many dead lines (and more dead than live).
const COMPACT_AFTER_DEAD_LINES: usize = 64;

/// One task's line in `index.jsonl`: what retrieval, listing and statistics need.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub task_id: String,
    pub task_description: String,
    pub task_type: TaskType,
    pub timestamp: String,
    /// Last change, Unix milliseconds.
    pub updated_ms: u64,
    #[serde(default)]
    pub outcome: Option<TaskOutcome>,
    #[serde(default)]
    pub iterations: u32,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub key_learnings: Vec<String>,
    #[serde(default)]
    pub project: Option<PathBuf>,
    #[serde(default)]
    pub session: Option<String>,
    #[serde(default)]
    pub closed: bool,
    #[serde(default)]
    pub reflections: usize,
    #[serde(default)]
    pub helpful: usize,
    #[serde(default)]
    pub unhelpful: usize,
    /// Ω in force when the task last changed.
    #[serde(default)]
    pub window: u32,
    /// Past tasks whose lessons it was given.
    #[serde(default)]
    pub lessons_from: Vec<String>,
    /// The machine the task was done on, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
}

impl Entry {
    pub fn of(task: &TaskRecord, updated_ms: u64, window: u32) -> Entry {
        let count = |e: Effectiveness| {
            task.reflections
                .iter()
                .filter(|r| r.effectiveness == e)
                .count()
        };
        Entry {
            task_id: task.task_id.clone(),
            task_description: task.task_description.clone(),
            task_type: task.task_type,
            timestamp: task.timestamp.clone(),
            updated_ms,
            outcome: task.outcome,
            iterations: task.iterations,
            tags: task.tags.clone(),
            key_learnings: task.key_learnings.clone(),
            project: task.project.clone(),
            session: task.session.clone(),
            closed: task.closed_at.is_some(),
            reflections: task.reflections.len(),
            helpful: count(Effectiveness::Helpful),
            unhelpful: count(Effectiveness::Unhelpful),
            window,
            lessons_from: task.lessons_from.clone(),
            machine: task.machine.clone(),
        }
    }

    pub fn summary(&self, score: Option<f64>) -> TaskSummary {
        TaskSummary {
            task_id: self.task_id.clone(),
            task_description: self.task_description.clone(),
            task_type: self.task_type,
            timestamp: self.timestamp.clone(),
            updated_at: crate::time::rfc3339(self.updated_ms),
            outcome: self.outcome,
            iterations: self.iterations,
            reflections: self.reflections,
            key_learnings: self.key_learnings.len(),
            tags: self.tags.clone(),
            project: self.project.clone(),
            session: self.session.clone(),
            closed: self.closed,
            score,
        }
    }

    /// Whether the task has anything to hand to another task.
    pub fn has_lessons(&self) -> bool {
        !self.key_learnings.is_empty() || self.helpful > 0
    }

    /// What the lexical index sees besides the description.
    fn aux_text(&self) -> String {
        let mut text = self.tags.join(" ");
        for l in &self.key_learnings {
            text.push(' ');
            text.push_str(l);
        }
        text
    }
}

/// Counters kept across daemon runs (`stats.json`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Counters {
    pub retrievals: u64,
    pub retrievals_empty: u64,
    pub tasks_injected: u64,
    pub lessons_injected: u64,
    pub reflections_injected: u64,
    /// Of the past tasks handed over, how many had ended in success.
    pub injected_success: u64,
}

/// What a retrieval asks for.
pub struct Wanted<'a> {
    pub description: &'a str,
    pub tags: &'a str,
    /// Never these tasks (the asking task itself).
    pub exclude: &'a [&'a str],
    pub threshold: f64,
    pub top_k: usize,
    pub now_ms: u64,
    pub max_age_ms: u64,
}

pub struct Store {
    dir: PathBuf,
    entries: HashMap<String, Entry>,
    /// Session key → its task (the newest, if a lineage ever had two).
    by_session: HashMap<String, String>,
    lexical: Lexical,
    /// Lines in `index.jsonl`, live or dead.
    lines: usize,
    pub counters: Counters,
    problems: Vec<String>,
    pub last_prune_ms: u64,
    /// How long loading took, for the log.
    pub load_ms: u64,
    /// This machine's name, which new tasks carry.
    pub machine: Option<String>,
}

fn problem(out: &mut Vec<String>, text: String) {
    tracing::warn!("memory: {text}");
    if out.len() >= MAX_PROBLEMS {
        out.remove(0);
    }
    out.push(text);
}

/// One index line: an entry, or the id of a forgotten task.
enum Line {
    Entry(Box<Entry>),
    Forgotten(String),
}

fn parse_line(line: &str) -> Result<Line, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
    if value["forgotten"] == true {
        return value["task_id"]
            .as_str()
            .map(|id| Line::Forgotten(id.to_owned()))
            .ok_or_else(|| "a forgotten task without a task_id".to_owned());
    }
    serde_json::from_value::<Entry>(value)
        .map(|e| Line::Entry(Box::new(e)))
        .map_err(|e| e.to_string())
}

/// A task id is a UUID: nothing else names a file in `tasks/`.
pub fn valid_id(id: &str) -> bool {
    id.len() == 36
        && id.chars().enumerate().all(|(i, c)| {
            matches!(i, 8 | 13 | 18 | 23) == (c == '-') && (c == '-' || c.is_ascii_hexdigit())
        })
}

impl Store {
    /// Loads (or creates) the memory in `dir`.
    pub fn open(dir: &Path) -> io::Result<Store> {
        let started = Instant::now();
        protocol::paths::ensure_private_dir(&dir.join(TASKS_DIR))?;
        fsutil::sweep_temp_files(dir, std::time::Duration::from_secs(60));
        fsutil::sweep_temp_files(&dir.join(TASKS_DIR), std::time::Duration::from_secs(60));
        let mut store = Store {
            dir: dir.to_path_buf(),
            entries: HashMap::new(),
            by_session: HashMap::new(),
            lexical: Lexical::default(),
            lines: 0,
            counters: Counters::default(),
            problems: Vec::new(),
            last_prune_ms: 0,
            load_ms: 0,
            machine: None,
        };
        let index = dir.join(INDEX_FILE);
        let text = match std::fs::read(&index) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e),
        };
        let mut forgotten = HashSet::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            store.lines += 1;
            match parse_line(line) {
                Ok(Line::Entry(e)) if valid_id(&e.task_id) => {
                    forgotten.remove(&e.task_id);
                    store.entries.insert(e.task_id.clone(), *e);
                }
                Ok(Line::Entry(e)) => problem(
                    &mut store.problems,
                    format!(
                        "{} line {}: `{}` is not a task id; skipped",
                        index.display(),
                        n + 1,
                        e.task_id
                    ),
                ),
                Ok(Line::Forgotten(id)) => {
                    store.entries.remove(&id);
                    forgotten.insert(id);
                }
                Err(why) => problem(
                    &mut store.problems,
                    format!(
                        "{} line {} is corrupt ({why}); skipped",
                        index.display(),
                        n + 1
                    ),
                ),
            }
        }
        store.reconcile(&forgotten)?;
        for e in store.entries.values() {
            store
                .lexical
                .upsert(&e.task_id, &e.task_description, &e.aux_text());
            if let Some(s) = &e.session {
                let newer = store
                    .by_session
                    .get(s)
                    .and_then(|id| store.entries.get(id))
                    .is_none_or(|other| other.updated_ms <= e.updated_ms);
                if newer {
                    store.by_session.insert(s.clone(), e.task_id.clone());
                }
            }
        }
        let stats = dir.join(STATS_FILE);
        match std::fs::read(&stats) {
            Ok(bytes) => match serde_json::from_slice(&bytes) {
                Ok(c) => store.counters = c,
                Err(e) => problem(
                    &mut store.problems,
                    format!(
                        "{} is corrupt ({e}); the counters start again",
                        stats.display()
                    ),
                ),
            },
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => problem(
                &mut store.problems,
                format!("cannot read {}: {e}", stats.display()),
            ),
        }
        store.maybe_compact();
        store.load_ms = started.elapsed().as_millis() as u64;
        Ok(store)
    }

    /// Matches the index with `tasks/`: records the index lacks are read and
    /// indexed; entries without a record are dropped; forgotten records
    /// still on disk are deleted.
    fn reconcile(&mut self, forgotten: &HashSet<String>) -> io::Result<()> {
        let tasks = self.dir.join(TASKS_DIR);
        let mut on_disk = HashSet::new();
        for entry in std::fs::read_dir(&tasks)?.flatten() {
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
                continue;
            };
            if valid_id(id) {
                on_disk.insert(id.to_owned());
            }
        }
        for id in forgotten.intersection(&on_disk) {
            let _ = std::fs::remove_file(self.record_path(id));
        }
        let missing: Vec<String> = self
            .entries
            .keys()
            .filter(|id| !on_disk.contains(*id))
            .cloned()
            .collect();
        for id in missing {
            self.entries.remove(&id);
            let path = self.record_path(&id);
            problem(
                &mut self.problems,
                format!(
                    "task {id} is in the index but {} is gone; skipped",
                    path.display()
                ),
            );
        }
        let orphans: Vec<String> = on_disk
            .into_iter()
            .filter(|id| !self.entries.contains_key(id) && !forgotten.contains(id))
            .collect();
        for id in orphans {
            match self.read(&id) {
                Ok(task) => {
                    let updated = crate::time::parse_rfc3339(&task.updated_at).unwrap_or(0);
                    let entry = Entry::of(&task, updated, task.window.unwrap_or(0));
                    self.append_line(&entry);
                    self.entries.insert(id, entry);
                }
                Err(why) => problem(&mut self.problems, why),
            }
        }
        Ok(())
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    pub fn report(&mut self, text: String) {
        problem(&mut self.problems, text);
    }

    fn record_path(&self, id: &str) -> PathBuf {
        self.dir.join(TASKS_DIR).join(format!("{id}.json"))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.entries.values()
    }

    pub fn entry(&self, id: &str) -> Option<&Entry> {
        self.entries.get(id)
    }

    /// Reads a task record; the error names the file and what is wrong.
    pub fn read(&self, id: &str) -> Result<TaskRecord, String> {
        let path = self.record_path(id);
        let bytes =
            std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let task: TaskRecord = serde_json::from_slice(&bytes).map_err(|e| {
            format!(
                "{} is corrupt (line {}, column {}: {e}); skipped",
                path.display(),
                e.line(),
                e.column()
            )
        })?;
        if task.task_id != id {
            return Err(format!(
                "{} holds task {}, not {id}; skipped",
                path.display(),
                task.task_id
            ));
        }
        Ok(task)
    }

    /// Reads a record, reporting (and skipping) it when it is unreadable.
    pub fn load(&mut self, id: &str) -> Option<TaskRecord> {
        match self.read(id) {
            Ok(task) => Some(task),
            Err(why) => {
                problem(&mut self.problems, why);
                None
            }
        }
    }

    /// The task of a session lineage.
    pub fn by_session(&self, session: &str) -> Option<&str> {
        self.by_session.get(session).map(String::as_str)
    }

    /// An id, or a unique prefix of one.
    pub fn resolve(&self, prefix: &str) -> Result<String, String> {
        let prefix = prefix.trim().to_ascii_lowercase();
        if prefix.is_empty() {
            return Err("no task id given".into());
        }
        let mut found: Vec<&String> = self
            .entries
            .keys()
            .filter(|id| id.starts_with(&prefix))
            .collect();
        match found.len() {
            0 => Err(format!("no stored task has an id starting with {prefix}")),
            1 => Ok(found.remove(0).clone()),
            n => Err(format!(
                "{n} tasks have ids starting with {prefix}; give more of it"
            )),
        }
    }

    /// Writes a task (record, then its index line) and updates the in-memory indexes.
    pub fn save(&mut self, task: &TaskRecord, now_ms: u64, window: u32) -> io::Result<()> {
        let mut bytes = serde_json::to_vec_pretty(task).map_err(io::Error::other)?;
        bytes.push(b'\n');
        fsutil::write_atomic(&self.record_path(&task.task_id), &bytes)?;
        let entry = Entry::of(task, now_ms, window);
        if self.entries.get(&task.task_id) != Some(&entry) {
            self.append_line(&entry);
            self.lexical
                .upsert(&entry.task_id, &entry.task_description, &entry.aux_text());
            if let Some(old) = self
                .entries
                .get(&task.task_id)
                .and_then(|e| e.session.clone())
                .filter(|s| Some(s) != entry.session.as_ref())
                && self.by_session.get(&old) == Some(&task.task_id)
            {
                self.by_session.remove(&old);
            }
            if let Some(s) = &entry.session {
                self.by_session.insert(s.clone(), task.task_id.clone());
            }
            self.entries.insert(task.task_id.clone(), entry);
            self.maybe_compact();
        }
        Ok(())
    }

    fn append_line(&mut self, entry: &Entry) {
        let line = serde_json::to_string(entry).expect("an index entry serializes");
        let path = self.dir.join(INDEX_FILE);
        match fsutil::append_line(&path, &line) {
            Ok(()) => self.lines += 1,
            Err(e) => problem(
                &mut self.problems,
                format!(
                    "cannot append to {}: {e}; the record is saved and will be indexed again at the next start",
                    path.display()
                ),
            ),
        }
    }

    /// Deletes a task: its record, then a tombstone in the index.
    pub fn forget(&mut self, id: &str) -> io::Result<Option<Entry>> {
        let Some(entry) = self.entries.remove(id) else {
            return Ok(None);
        };
        match std::fs::remove_file(self.record_path(id)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                self.entries.insert(id.to_owned(), entry);
                return Err(e);
            }
        }
        let line = serde_json::json!({ "task_id": id, "forgotten": true }).to_string();
        fsutil::append_line(&self.dir.join(INDEX_FILE), &line)?;
        self.lines += 1;
        self.lexical.remove(id);
        if let Some(s) = &entry.session
            && self.by_session.get(s).map(String::as_str) == Some(id)
        {
            self.by_session.remove(s);
        }
        self.maybe_compact();
        Ok(Some(entry))
    }

    /// Forgets tasks untouched for longer than `max_age_ms`; returns how many.
    pub fn prune(&mut self, now_ms: u64, max_age_ms: u64) -> usize {
        let old: Vec<String> = self
            .entries
            .values()
            .filter(|e| now_ms.saturating_sub(e.updated_ms) > max_age_ms)
            .map(|e| e.task_id.clone())
            .collect();
        let mut gone = 0;
        for id in old {
            match self.forget(&id) {
                Ok(Some(_)) => gone += 1,
                Ok(None) => {}
                Err(e) => problem(&mut self.problems, format!("cannot prune task {id}: {e}")),
            }
        }
        self.last_prune_ms = now_ms;
        gone
    }

    fn maybe_compact(&mut self) {
        let dead = self.lines.saturating_sub(self.entries.len());
        if dead < COMPACT_AFTER_DEAD_LINES || dead <= self.entries.len() {
            return;
        }
        let mut entries: Vec<&Entry> = self.entries.values().collect();
        entries.sort_by_key(|e| e.updated_ms);
        let mut text = String::new();
        for e in &entries {
            text.push_str(&serde_json::to_string(e).expect("an index entry serializes"));
            text.push('\n');
        }
        let path = self.dir.join(INDEX_FILE);
        match fsutil::write_atomic(&path, text.as_bytes()) {
            Ok(()) => self.lines = entries.len(),
            Err(e) => problem(
                &mut self.problems,
                format!("cannot rewrite {}: {e}", path.display()),
            ),
        }
    }

    /// Stored tasks most similar to a description, best first: at most
    /// `top_k`, each at least `threshold`, none older than `max_age_ms`, none
    /// in `exclude`, and only those with lessons to hand over.
    pub fn similar(&self, want: &Wanted) -> Vec<(&Entry, f64)> {
        self.lexical
            .rank(want.description, want.tags)
            .into_iter()
            .take_while(|(_, score)| *score >= want.threshold)
            .filter_map(|(id, score)| Some((self.entries.get(id)?, score)))
            .filter(|(e, _)| !want.exclude.contains(&e.task_id.as_str()))
            .filter(|(e, _)| want.now_ms.saturating_sub(e.updated_ms) <= want.max_age_ms)
            .filter(|(e, _)| e.has_lessons())
            .take(want.top_k)
            .collect()
    }

    /// Every stored task ranked against `text` (for `hookctl memory search`).
    pub fn search(&self, text: &str) -> Vec<(&Entry, f64)> {
        self.lexical
            .rank(text, "")
            .into_iter()
            .filter_map(|(id, score)| Some((self.entries.get(id)?, score)))
            .collect()
    }

    /// Updates the counters and writes them.
    pub fn count(&mut self, change: impl FnOnce(&mut Counters)) {
        change(&mut self.counters);
        let path = self.dir.join(STATS_FILE);
        let bytes = serde_json::to_vec_pretty(&self.counters).expect("counters serialize");
        if let Err(e) = fsutil::write_atomic(&path, &bytes) {
            problem(
                &mut self.problems,
                format!("cannot write {}: {e}", path.display()),
            );
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::memory::reflect::tests::record;

    pub(crate) fn task(id: &str, description: &str) -> TaskRecord {
        let mut t = record();
        t.task_id = id.into();
        t.task_description = description.into();
        t
    }

    const A: &str = "00000000-0000-4000-8000-00000000000a";
    const B: &str = "00000000-0000-4000-8000-00000000000b";

    #[test]
    fn tasks_survive_a_reopen_and_forgotten_ones_stay_gone() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(dir.path()).unwrap();
        let mut a = task(A, "fix the flaky login test");
        a.session = Some("claude-code:s1".into());
        a.key_learnings = vec!["Worked: mock the clock".into()];
        s.save(&a, 1000, 3).unwrap();
        s.save(&task(B, "write the release notes"), 2000, 3)
            .unwrap();
        s.save(&a, 1000, 3).unwrap();
        assert_eq!(s.lines, 2, "an unchanged task adds no line");
        s.forget(B).unwrap();
        assert!(
            !dir.path()
                .join(TASKS_DIR)
                .join(format!("{B}.json"))
                .exists()
        );
        let s = Store::open(dir.path()).unwrap();
        assert!(s.problems().is_empty(), "{:?}", s.problems());
        assert_eq!(s.len(), 1);
        assert_eq!(s.by_session("claude-code:s1"), Some(A));
        assert_eq!(s.read(A).unwrap(), a);
        let want = |exclude, now_ms, max_age_ms| Wanted {
            description: "fix the flaky signup test",
            tags: "",
            exclude,
            threshold: 0.3,
            top_k: 3,
            now_ms,
            max_age_ms,
        };
        let found = s.similar(&want(&[], 1000, u64::MAX));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0.task_id, A);
        assert!(s.similar(&want(&[A], 1000, u64::MAX)).is_empty());
        assert!(s.similar(&want(&[], 100_000, 1000)).is_empty(), "too old");
        assert_eq!(s.resolve("00000000-0000-4000-8000-00000000000").unwrap(), A);
        assert!(s.resolve("ff").unwrap_err().contains("no stored task"));
    }

    #[test]
    fn a_record_the_index_lacks_is_indexed_again_and_a_lost_one_reported() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(dir.path()).unwrap();
        s.save(&task(A, "fix the flaky login test"), 1000, 3)
            .unwrap();
        s.save(&task(B, "write the release notes"), 1000, 3)
            .unwrap();
        // A crash after the record but before its index line; another record lost.
        std::fs::write(dir.path().join(INDEX_FILE), "").unwrap();
        let mut b = task(B, "write the release notes");
        b.updated_at = "2026-01-01T00:00:00Z".into();
        std::fs::write(
            dir.path().join(TASKS_DIR).join(format!("{B}.json")),
            serde_json::to_vec(&b).unwrap(),
        )
        .unwrap();
        std::fs::remove_file(dir.path().join(TASKS_DIR).join(format!("{A}.json"))).unwrap();
        let s = Store::open(dir.path()).unwrap();
        assert_eq!(s.len(), 1);
        assert!(s.entry(B).is_some());
        let again = Store::open(dir.path()).unwrap();
        assert_eq!(again.lines, 1, "the orphan was indexed once");
    }

    #[test]
    fn many_changes_are_compacted_into_one_line_per_task() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(dir.path()).unwrap();
        let mut a = task(A, "fix the flaky login test");
        for i in 0..200 {
            a.iterations = i;
            s.save(&a, 1000 + u64::from(i), 3).unwrap();
        }
        let lines = std::fs::read_to_string(dir.path().join(INDEX_FILE))
            .unwrap()
            .lines()
            .count();
        assert!(lines < 100, "{lines} lines");
        let s = Store::open(dir.path()).unwrap();
        assert_eq!(s.entry(A).unwrap().iterations, 199);
    }

    #[test]
    fn old_tasks_are_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(dir.path()).unwrap();
        s.save(&task(A, "old"), 1000, 3).unwrap();
        s.save(&task(B, "new"), 50_000, 3).unwrap();
        assert_eq!(s.prune(60_000, 20_000), 1);
        assert!(s.entry(A).is_none() && s.entry(B).is_some());
    }

    #[test]
    fn ids_are_uuids_and_nothing_else() {
        assert!(valid_id(A));
        assert!(!valid_id("../../etc/passwd"));
        assert!(!valid_id("00000000-0000-4000-8000-00000000000g"));
        assert!(!valid_id("000000000000-4000-8000-00000000000a0"));
    }
}

/// The closing figure of the cross-task memory: loading 10,000 tasks and
/// retrieving among them. A measurement, not a timed assertion:
/// `cargo test --release -p hookd --lib ten_thousand -- --ignored --nocapture`.
#[cfg(test)]
mod scale {
    use super::tests::task;
    use super::*;
    use crate::memory::lexical::tests::{Lcg, generated_task};
    use std::time::{Duration, Instant};

    #[test]
    #[ignore = "a measurement; run it in release with --ignored --nocapture"]
    fn ten_thousand_tasks() {
        const TASKS: usize = 10_000;
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(TASKS_DIR)).unwrap();
        let mut rng = Lcg(11);
        let mut index = String::new();
        let mut write = |id: String, description: String, learnings: Vec<String>| {
            let mut t = task(&id, &description);
            t.key_learnings = learnings;
            t.closed_at = Some("2026-11-01T10:00:00Z".into());
            t.tags = vec!["implementation".into(), "proj".into()];
            std::fs::write(
                dir.path().join(TASKS_DIR).join(format!("{id}.json")),
                serde_json::to_vec(&t).unwrap(),
            )
            .unwrap();
            index.push_str(&serde_json::to_string(&Entry::of(&t, 1000, 3)).unwrap());
            index.push('\n');
        };
        for n in 0..TASKS {
            let learnings = vec![format!("Worked: {}", generated_task(&mut rng))];
            write(
                format!("00000000-0000-4000-8000-{:012x}", n + 10),
                generated_task(&mut rng),
                learnings,
            );
        }
        let similar = "00000000-0000-4000-8000-000000000001";
        write(
            similar.into(),
            "fix the flaky login test".into(),
            vec!["Worked: mock the clock".into()],
        );
        std::fs::write(dir.path().join(INDEX_FILE), &index).unwrap();

        let started = Instant::now();
        let store = Store::open(dir.path()).unwrap();
        let load = started.elapsed();
        assert_eq!(store.len(), TASKS + 1);
        assert!(store.problems().is_empty(), "{:?}", store.problems());

        let mut queries: Vec<String> = (0..99).map(|_| generated_task(&mut rng)).collect();
        queries.push("fix the flaky signup test".into());
        let mut times: Vec<Duration> = Vec::new();
        let mut found = 0;
        for q in &queries {
            let started = Instant::now();
            let hits = store.similar(&Wanted {
                description: q,
                tags: "implementation proj",
                exclude: &[],
                threshold: 0.30,
                top_k: 3,
                now_ms: 1000,
                max_age_ms: u64::MAX,
            });
            times.push(started.elapsed());
            found += hits.len();
            if q.starts_with("fix the flaky") {
                assert_eq!(hits[0].0.task_id, similar);
            }
        }
        times.sort();
        let mean = times.iter().sum::<Duration>() / times.len() as u32;
        println!(
            "{} tasks ({} KiB index): load {load:?}; retrieval over {} queries: mean {mean:?}, median {:?}, max {:?} ({found} hits)",
            TASKS + 1,
            index.len() / 1024,
            queries.len(),
            times[times.len() / 2],
            times[times.len() - 1],
        );
    }
}

#[cfg(test)]
mod fuzz {
    use super::tests::task;
    use super::*;
    use proptest::prelude::*;

    const GOOD: &str = "00000000-0000-4000-8000-000000000001";

    proptest! {
        /// Torn, foreign and hostile index lines are skipped and reported by
        /// number; good entries still load.
        #[test]
        fn any_index_lines_load_without_panicking(lines in proptest::collection::vec("\\PC{0,120}", 0..30)) {
            let dir = tempfile::tempdir().unwrap();
            let mut s = Store::open(dir.path()).unwrap();
            s.save(&task(GOOD, "fix the flaky login test"), 1000, 3).unwrap();
            let mut text = std::fs::read_to_string(dir.path().join(INDEX_FILE)).unwrap();
            for l in &lines {
                text.push_str(l);
                text.push('\n');
            }
            std::fs::write(dir.path().join(INDEX_FILE), &text).unwrap();
            let s = Store::open(dir.path()).unwrap();
            prop_assert!(s.entry(GOOD).is_some());
            let bad = lines.iter().filter(|l| !l.trim().is_empty()).count();
            prop_assert!(s.problems().len() <= bad);
            for p in s.problems() {
                prop_assert!(p.contains(INDEX_FILE), "{p}");
            }
        }

        /// A record file of any bytes is skipped and reported, never used, and
        /// the others load.
        #[test]
        fn any_record_bytes_are_skipped_and_reported(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let dir = tempfile::tempdir().unwrap();
            let mut s = Store::open(dir.path()).unwrap();
            s.save(&task(GOOD, "fix the flaky login test"), 1000, 3).unwrap();
            let bad = "00000000-0000-4000-8000-000000000002";
            std::fs::write(dir.path().join(TASKS_DIR).join(format!("{bad}.json")), &bytes).unwrap();
            let mut s = Store::open(dir.path()).unwrap();
            prop_assert!(s.entry(GOOD).is_some());
            prop_assert!(s.entry(bad).is_none());
            prop_assert_eq!(s.problems().len(), 1);
            prop_assert!(s.problems()[0].contains(bad));
            prop_assert!(s.load(GOOD).is_some());
        }
    }
}

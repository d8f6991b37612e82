//! A project's `.workflow/` directory: the saved state, the resume prompt,
//! and `events.jsonl`, the append-only record of what hookd did and saw.
//!
//! Every write goes through [`project_fs::Dir`] handles: `.workflow/` (and
//! anything in it) that is a symlink, belongs to another user or is
//! writable by others is refused, never followed or written into.

use crate::events::LogEvent;
use crate::project_fs::Dir;
use crate::sessions::SessionKey;
use std::io;
use std::path::{Path, PathBuf};

pub const WORKFLOW_DIR: &str = ".workflow";
pub const EVENTS_FILE: &str = "events.jsonl";
/// The workflow file a person or a tool keeps (see `capture::workflow_file`).
pub const WORKFLOW_FILE: &str = "workflow_state.yml";
/// What was recorded through hookctl (see `capture::records`).
pub const RECORDS_FILE: &str = "records.jsonl";
/// The most hookd reads of one file it keeps in `.workflow/`.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

#[derive(Debug, Clone)]
pub struct Workflow {
    project: PathBuf,
    dir: PathBuf,
}

impl Workflow {
    pub fn new(project: &Path) -> Workflow {
        Workflow {
            project: project.to_path_buf(),
            dir: project.join(WORKFLOW_DIR),
        }
    }

    pub fn project(&self) -> &Path {
        &self.project
    }

    /// The directory's path, for messages; open it with [`Workflow::open`].
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The directory, when it exists and is safe to use.
    pub fn open(&self) -> io::Result<Dir> {
        let dir = Dir::open(&self.project)?.open_dir(WORKFLOW_DIR)?;
        dir.check_private()?;
        Ok(dir)
    }

    /// Creates the directory (never the project itself, never inside a git
    /// directory); the first time, also keeps it out of git
    /// (`.git/info/exclude`) when asked to.
    pub fn ensure(&self, exclude_from_git: bool) -> io::Result<Dir> {
        if crate::git::project_is_inside_git_dir(&self.project) {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} is inside a git directory; hookd keeps no state there",
                    self.project.display()
                ),
            ));
        }
        let (dir, created) = Dir::open(&self.project)?.create_dir(WORKFLOW_DIR)?;
        dir.check_private()?;
        if created && exclude_from_git {
            self.keep_out_of_git();
        }
        Ok(dir)
    }

    /// Adds `.workflow/` to the repository's `info/exclude` unless it is
    /// there: out of `git status`, and of checkpoints. A directory made
    /// before hookd excluded it (by hand, or with exclusion off) is asked
    /// for by each save.
    pub fn keep_out_of_git(&self) {
        if let Err(e) = crate::git::exclude(&self.project, &format!("{WORKFLOW_DIR}/")) {
            tracing::debug!(project = %self.project.display(), error = %e, "could not add .workflow/ to git's exclude file");
        }
    }

    /// Replaces the file `name` in the existing directory.
    pub fn write_atomic(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.open()?.write_atomic(name, bytes)
    }

    /// The file `name`, read without following links; `None` when absent
    /// (or when `.workflow/` is).
    pub fn read(&self, name: &str) -> io::Result<Option<Vec<u8>>> {
        match self.open() {
            Ok(dir) => dir.read(name, MAX_FILE_BYTES),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Appends one line to `events.jsonl` (`docs/events.md`). Blocking:
    /// call it off the async threads.
    pub fn append_event(&self, session: Option<&SessionKey>, event: &LogEvent) -> io::Result<()> {
        let ts = crate::time::rfc3339_millis(crate::time::now_ms());
        self.open()?
            .append_line(EVENTS_FILE, &event.line(&ts, session))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::wire::Harness;

    #[test]
    fn events_are_appended_as_json_lines() {
        let dir = tempfile::tempdir().unwrap();
        let wf = Workflow::new(dir.path());
        wf.ensure(false).unwrap();
        let key = SessionKey {
            harness: Harness::ClaudeCode,
            id: "s1".into(),
        };
        for level in [0.7, 0.8] {
            let event = LogEvent::Threshold {
                level,
                crossed: vec![level],
                action: protocol::config::Action::LogWarning,
                tokens_used: 1,
                tokens_max: 2,
                pressure: 0.5,
            };
            wf.append_event(Some(&key), &event).unwrap();
        }
        let text = std::fs::read_to_string(wf.path(EVENTS_FILE)).unwrap();
        let events: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(events.len(), 2);
        assert_eq!(events[1]["level"], 0.8);
        assert_eq!(events[1]["session"], "s1");
        assert_eq!(events[1]["kind"], "threshold");
        assert!(events[1]["ts"].as_str().unwrap().ends_with('Z'));
    }

    #[test]
    fn a_symlinked_workflow_dir_is_refused() {
        let project = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), project.path().join(WORKFLOW_DIR)).unwrap();
        let wf = Workflow::new(project.path());
        assert!(wf.ensure(false).is_err());
        assert!(wf.append_event(None, &LogEvent::Unknown).is_err());
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn nothing_is_created_in_a_git_dir() {
        let dir = tempfile::tempdir().unwrap();
        git2::Repository::init_bare(dir.path()).unwrap();
        assert!(crate::git::project_is_inside_git_dir(dir.path()));
        assert!(Workflow::new(dir.path()).ensure(false).is_err());
        assert!(!dir.path().join(WORKFLOW_DIR).exists());
        let work = tempfile::tempdir().unwrap();
        git2::Repository::init(work.path()).unwrap();
        assert!(!crate::git::project_is_inside_git_dir(work.path()));
    }
}

//! A project's `.workflow/` directory: the saved state, the resume prompt,
//! and `events.jsonl`, the append-only record of what hookd did and saw.

use crate::fsutil;
use crate::sessions::SessionKey;
use serde_json::{Map, Value};
use std::io;
use std::path::{Path, PathBuf};

pub const WORKFLOW_DIR: &str = ".workflow";
pub const EVENTS_FILE: &str = "events.jsonl";

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

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Creates the directory (never the project itself); the first time,
    /// also keeps it out of git (`.git/info/exclude`) when asked to.
    pub fn ensure(&self, exclude_from_git: bool) -> io::Result<()> {
        if self.dir.is_dir() {
            return Ok(());
        }
        match std::fs::create_dir(&self.dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(()),
            Err(e) => return Err(e),
        }
        if exclude_from_git
            && let Err(e) = crate::git::exclude(&self.project, &format!("{WORKFLOW_DIR}/"))
        {
            tracing::debug!(project = %self.project.display(), error = %e, "could not add .workflow/ to git's exclude file");
        }
        Ok(())
    }

    pub fn write_atomic(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        fsutil::write_atomic(&self.path(name), bytes)
    }

    /// Appends one event: `{"ts", "kind", "harness", "session", ...fields}`.
    pub fn append_event(
        &self,
        kind: &str,
        session: Option<&SessionKey>,
        fields: Value,
    ) -> io::Result<()> {
        let mut event = Map::new();
        event.insert(
            "ts".into(),
            Value::String(crate::time::rfc3339_millis(crate::time::now_ms())),
        );
        event.insert("kind".into(), Value::String(kind.into()));
        if let Some(key) = session {
            event.insert("harness".into(), Value::String(key.harness.as_str().into()));
            event.insert("session".into(), Value::String(key.id.clone()));
        }
        if let Value::Object(extra) = fields {
            event.extend(extra);
        }
        fsutil::append_line(&self.path(EVENTS_FILE), &Value::Object(event).to_string())
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
        wf.append_event("threshold", Some(&key), serde_json::json!({"level": 0.7}))
            .unwrap();
        wf.append_event("threshold", Some(&key), serde_json::json!({"level": 0.8}))
            .unwrap();
        let text = std::fs::read_to_string(wf.path(EVENTS_FILE)).unwrap();
        let events: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(events.len(), 2);
        assert_eq!(events[1]["level"], 0.8);
        assert_eq!(events[1]["session"], "s1");
        assert_eq!(events[1]["kind"], "threshold");
        assert!(events[1]["ts"].as_str().unwrap().ends_with('Z'));
    }
}

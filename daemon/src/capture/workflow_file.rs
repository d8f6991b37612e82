//! `.workflow/workflow_state.yml`: a project's own workflow, when it keeps
//! one. hookd only reads it; it is the most trusted source of a capture.
//!
//! ```yaml
//! workflow_id: workflow_20250118_100000
//! phase: IMPLEMENTING          # or current_phase
//! layer: 2
//! total_layers: 4
//! active_task: task_api_login   # or active_task_id
//! tasks:
//!   - id: task_api_login
//!     title: Implement the login route
//!     status: in_progress       # pending | in_progress | completed | blocked
//!     files: [app/api/auth/login/route.ts]
//! decisions:
//!   - {topic: Auth, decision: JWT in httpOnly cookies, reasoning: works with SSR}
//! blockers:
//!   - {issue: Rate limiter missing, status: unresolved, notes: ask ops}
//! ```
//!
//! Unknown keys are ignored (other tools may write more); a key of the
//! wrong type is an error naming the key and the line.

use crate::capture::yaml;
use crate::workflow::Workflow;
use serde::Deserialize;

use crate::workflow::WORKFLOW_FILE;

#[derive(Debug, Default, Clone, PartialEq, Deserialize)]
#[serde(default)]
pub struct WorkflowFile {
    pub workflow_id: Option<String>,
    #[serde(alias = "current_phase")]
    pub phase: Option<String>,
    pub layer: Option<u32>,
    pub total_layers: Option<u32>,
    #[serde(alias = "active_task_id")]
    pub active_task: Option<String>,
    pub tasks: Vec<WorkflowTask>,
    pub decisions: Vec<WorkflowDecision>,
    pub blockers: Vec<WorkflowBlocker>,
}

#[derive(Debug, Default, Clone, PartialEq, Deserialize)]
#[serde(default)]
pub struct WorkflowTask {
    pub id: String,
    #[serde(alias = "name")]
    pub title: String,
    pub status: Option<String>,
    pub files: Vec<String>,
}

#[derive(Debug, Default, Clone, PartialEq, Deserialize)]
#[serde(default)]
pub struct WorkflowDecision {
    pub topic: String,
    pub decision: String,
    pub reasoning: Option<String>,
    pub timestamp: Option<String>,
}

#[derive(Debug, Default, Clone, PartialEq, Deserialize)]
#[serde(default)]
pub struct WorkflowBlocker {
    pub issue: String,
    pub status: Option<String>,
    pub notes: Option<String>,
}

/// The project's workflow file: `Ok(None)` when there is none, `Err` with a
/// message naming the file, key and line when it cannot be read. A file
/// over [`yaml::MAX_FILE_BYTES`], or nested too deep, is not parsed: it is
/// read at every capture and Stop, and the repository may hold any file.
pub fn load(workflow: &Workflow) -> Result<Option<WorkflowFile>, String> {
    let path = workflow.path(WORKFLOW_FILE);
    let bytes = match workflow.read(WORKFLOW_FILE) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    if bytes.len() > yaml::MAX_FILE_BYTES {
        return Err(format!(
            "{} is {} KiB, more than the {} KiB hookd reads of a workflow file, so it was not read; keep finished tasks and old decisions out of it",
            path.display(),
            bytes.len().div_ceil(1024),
            yaml::MAX_FILE_BYTES / 1024
        ));
    }
    let text = String::from_utf8_lossy(&bytes);
    if text.trim().is_empty() {
        return Ok(Some(WorkflowFile::default()));
    }
    yaml::from_str::<WorkflowFile>(&text)
        .map(Some)
        .map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A project with an empty `.workflow/`.
    pub(super) fn workflow() -> (tempfile::TempDir, Workflow) {
        let project = tempfile::tempdir().unwrap();
        let wf = Workflow::new(project.path());
        wf.ensure(false).unwrap();
        (project, wf)
    }

    #[test]
    fn the_documented_example_reads() {
        let (_project, wf) = workflow();
        let doc: String = include_str!("workflow_file.rs")
            .lines()
            .skip_while(|l| !l.contains("```yaml"))
            .skip(1)
            .take_while(|l| !l.contains("```"))
            .map(|l| {
                l.trim_start_matches("//!")
                    .strip_prefix(' ')
                    .unwrap_or("")
                    .to_owned()
                    + "\n"
            })
            .collect();
        std::fs::write(wf.path(WORKFLOW_FILE), doc).unwrap();
        let w = load(&wf).unwrap().unwrap();
        assert_eq!(w.phase.as_deref(), Some("IMPLEMENTING"));
        assert_eq!(w.layer, Some(2));
        assert_eq!(w.active_task.as_deref(), Some("task_api_login"));
        assert_eq!(w.tasks[0].files, vec!["app/api/auth/login/route.ts"]);
        assert_eq!(w.decisions[0].decision, "JWT in httpOnly cookies");
        assert_eq!(w.blockers[0].status.as_deref(), Some("unresolved"));
    }

    #[test]
    fn a_file_too_large_or_too_deep_is_refused_with_its_name() {
        let (_project, wf) = workflow();
        let started = std::time::Instant::now();
        std::fs::write(
            wf.path(WORKFLOW_FILE),
            format!("phase: X\nworkflow_id: {}\n", "[".repeat(60_000)),
        )
        .unwrap();
        let err = load(&wf).unwrap_err();
        assert!(
            err.contains(WORKFLOW_FILE) && err.contains("more than 64") && err.contains("line 2"),
            "{err}"
        );
        let flat = "decisions:\n".to_owned()
            + &"  - {topic: a, decision: b}\n".repeat(yaml::MAX_FILE_BYTES / 20);
        std::fs::write(wf.path(WORKFLOW_FILE), flat).unwrap();
        let err = load(&wf).unwrap_err();
        assert!(
            err.contains(WORKFLOW_FILE) && err.contains("more than the 256 KiB"),
            "{err}"
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn errors_name_the_key_and_line() {
        let (_project, wf) = workflow();
        std::fs::write(wf.path(WORKFLOW_FILE), "phase: X\nlayer: two\n").unwrap();
        let err = load(&wf).unwrap_err();
        assert!(
            err.contains("layer") && err.contains("line 2") && err.contains(WORKFLOW_FILE),
            "{err}"
        );
        std::fs::remove_file(wf.path(WORKFLOW_FILE)).unwrap();
        assert_eq!(load(&wf).unwrap(), None);
    }
}

#[cfg(test)]
mod fuzz {
    use super::tests::workflow;
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any text at all: a workflow file or an error that names it, never a panic.
        #[test]
        fn any_text_loads_or_says_why(text in "(\\PC|\n|:|-| ){0,300}") {
            let (_project, wf) = workflow();
            std::fs::write(wf.path(WORKFLOW_FILE), &text).unwrap();
            if let Err(e) = load(&wf) {
                prop_assert!(e.contains(WORKFLOW_FILE), "{e}");
            }
        }
    }
}

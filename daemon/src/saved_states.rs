//! Which state files hookd itself wrote, so that one that came with a
//! repository is never taken for hookd's own. `.workflow/` lives in the
//! project, where anyone who can commit can put a `context_state.json`; this
//! record lives in hookd's private state directory: one small file per
//! project (named by the SHA-256 of its canonical path) holding the SHA-256
//! of each state file content hookd wrote there, the newest
//! [`KEPT_PER_PROJECT`].

use protocol::trust::hash;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The record's directory in hookd's state directory.
pub const DIR: &str = "saved-states";
/// Digests kept per project. A history copy older than this many saves is
/// no longer resumed; history keeps 20 by default.
pub const KEPT_PER_PROJECT: usize = 256;
/// A project's record is 256 lines of 67 bytes; anything much larger is not ours.
const MAX_RECORD_BYTES: u64 = 1024 * 1024;

#[derive(Debug, Default)]
pub struct SavedStates {
    /// Where the records are; `None` records nothing and knows nothing.
    dir: Option<PathBuf>,
    /// One read-modify-write at a time, whichever session saves.
    recording: Mutex<()>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct ProjectRecord {
    /// The project's canonical path, for a person reading the file.
    project: PathBuf,
    /// Oldest first.
    digests: Vec<String>,
}

/// The digests recorded for one project: read once per load, asked per file.
#[derive(Debug, Default)]
pub struct Known(HashSet<String>);

impl Known {
    /// Whether hookd wrote a state file with exactly this content.
    pub fn holds(&self, content: &[u8]) -> bool {
        self.0.contains(&hash(content))
    }
}

impl SavedStates {
    /// Records kept in `dir` (created private on the first record).
    pub fn in_dir(dir: PathBuf) -> SavedStates {
        SavedStates {
            dir: Some(dir),
            recording: Mutex::default(),
        }
    }

    /// The project's record file, keyed by its canonical path however a
    /// harness names it.
    fn file_for(&self, project: &Path) -> Option<(PathBuf, PathBuf)> {
        let dir = self.dir.as_ref()?;
        let canonical = std::fs::canonicalize(project).unwrap_or_else(|_| project.to_path_buf());
        let name = format!("{}.json", hash(canonical.as_os_str().as_bytes()));
        Some((canonical, dir.join(name)))
    }

    /// What hookd recorded for `project`; nothing when the record is
    /// missing or unreadable (then no saved state is used).
    pub fn known(&self, project: &Path) -> Known {
        let Some((_, file)) = self.file_for(project) else {
            return Known::default();
        };
        match read_record(&file) {
            Ok(record) => Known(record.digests.into_iter().collect()),
            Err(e) => {
                tracing::warn!(file = %file.display(), error = %e, "cannot read the record of saved states");
                Known::default()
            }
        }
    }

    /// Records that hookd writes a state file with `content` in `project`.
    /// Called before the file is written, so that no reader ever finds a
    /// file of ours not yet recorded.
    pub fn record(&self, project: &Path, content: &[u8]) -> Result<(), String> {
        let Some((canonical, file)) = self.file_for(project) else {
            return Err(
                "hookd has no state directory to record the state it saves; it will not resume it"
                    .into(),
            );
        };
        let failed = |e: &dyn std::fmt::Display| {
            format!(
                "cannot record the state saved for {} in {}: {e}; it will not be resumed (check that directory)",
                project.display(),
                file.display()
            )
        };
        let _one_writer = self.recording.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(dir) = file.parent() {
            protocol::paths::ensure_private_dir(dir).map_err(|e| failed(&e))?;
        }
        let mut record = read_record(&file).unwrap_or_else(|e| {
            // Starting afresh costs only the states saved before.
            tracing::warn!(file = %file.display(), error = %e, "the record of saved states is unreadable; starting a new one");
            ProjectRecord::default()
        });
        let digest = hash(content);
        record.digests.retain(|d| *d != digest);
        record.digests.push(digest);
        let excess = record.digests.len().saturating_sub(KEPT_PER_PROJECT);
        record.digests.drain(..excess);
        record.project = canonical;
        let bytes = serde_json::to_vec_pretty(&record).map_err(|e| failed(&e))?;
        crate::fsutil::write_atomic(&file, &bytes).map_err(|e| failed(&e))
    }
}

/// The record in `file`; an empty one when there is none.
fn read_record(file: &Path) -> io::Result<ProjectRecord> {
    let opened = match std::fs::File::open(file) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(ProjectRecord::default()),
        Err(e) => return Err(e),
    };
    let mut bytes = Vec::new();
    opened.take(MAX_RECORD_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_RECORD_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("is larger than {MAX_RECORD_BYTES} bytes"),
        ));
    }
    serde_json::from_slice(&bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn setup() -> (tempfile::TempDir, SavedStates, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("proj");
        std::fs::create_dir(&project).unwrap();
        let saved = SavedStates::in_dir(tmp.path().join("state").join(DIR));
        (tmp, saved, project)
    }

    #[test]
    fn only_recorded_content_of_that_project_is_known() {
        let (tmp, saved, project) = setup();
        assert!(!saved.known(&project).holds(b"one"), "nothing recorded yet");
        saved.record(&project, b"one").unwrap();
        let known = saved.known(&project);
        assert!(known.holds(b"one"));
        assert!(!known.holds(b"one "), "the exact bytes, not a look-alike");
        let other = tmp.path().join("other");
        std::fs::create_dir(&other).unwrap();
        assert!(!saved.known(&other).holds(b"one"), "another project's");
        // The same project, named another way.
        assert!(saved.known(&tmp.path().join("proj/../proj")).holds(b"one"));
        let dir = tmp.path().join("state").join(DIR);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "private: {mode:o}");
    }

    #[test]
    fn the_newest_digests_are_kept() {
        let (_tmp, saved, project) = setup();
        for i in 0..KEPT_PER_PROJECT + 3 {
            saved
                .record(&project, format!("state {i}").as_bytes())
                .unwrap();
        }
        // Recording the oldest kept again makes it the newest.
        saved.record(&project, b"state 3").unwrap();
        saved.record(&project, b"state new").unwrap();
        let known = saved.known(&project);
        assert!(!known.holds(b"state 0") && !known.holds(b"state 4"));
        assert!(known.holds(b"state 3") && known.holds(b"state 5"));
        assert!(known.holds(b"state new"));
        assert_eq!(known.0.len(), KEPT_PER_PROJECT);
    }

    #[test]
    fn a_corrupt_record_knows_nothing_and_is_started_again() {
        let (_tmp, saved, project) = setup();
        saved.record(&project, b"one").unwrap();
        let (_, file) = saved.file_for(&project).unwrap();
        std::fs::write(&file, b"{\"digests\": [").unwrap();
        assert!(!saved.known(&project).holds(b"one"));
        saved.record(&project, b"two").unwrap();
        assert!(saved.known(&project).holds(b"two"));
    }

    #[test]
    fn without_a_directory_nothing_is_recorded_or_known() {
        let saved = SavedStates::default();
        let err = saved.record(Path::new("/p"), b"one").unwrap_err();
        assert!(err.contains("no state directory"), "{err}");
        assert!(!saved.known(Path::new("/p")).holds(b"one"));
    }

    #[test]
    fn concurrent_saves_lose_no_record() {
        let (_tmp, saved, project) = setup();
        let saved = Arc::new(saved);
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let (saved, project) = (saved.clone(), project.clone());
                std::thread::spawn(move || {
                    for i in 0..10 {
                        saved
                            .record(&project, format!("{t}/{i}").as_bytes())
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let known = saved.known(&project);
        assert_eq!(known.0.len(), 80);
    }
}

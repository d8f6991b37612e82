//! All notify code: one watcher follows every active transcript, so that
//! `status` and `watch` stay live between hooks and a compaction shows up
//! even when no PreCompact hook announced it.
//!
//! We watch each transcript's directory, not the file (a watch on the file
//! would follow a replaced file's old inode), ignore access events (our own
//! reads would otherwise wake us up again), and coalesce bursts of writes.

use crate::sessions::SessionKey;
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher as _};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::mpsc;

/// Writes within this window after the first one are handled together.
pub const DEBOUNCE: Duration = Duration::from_millis(50);

pub struct TranscriptWatcher {
    inner: Mutex<Inner>,
}

struct Inner {
    watcher: Option<RecommendedWatcher>,
    /// Watched directories and how many transcripts each holds.
    dirs: HashMap<PathBuf, usize>,
    /// Followed transcripts and the sessions that write them.
    files: HashMap<PathBuf, HashSet<SessionKey>>,
}

impl TranscriptWatcher {
    /// Starts the watcher. Changed transcript paths arrive on the receiver.
    /// Without a watcher (an inotify limit, say) hooks still work: the
    /// warning says how to fix it.
    pub fn start() -> (
        TranscriptWatcher,
        mpsc::UnboundedReceiver<PathBuf>,
        Option<String>,
    ) {
        let (tx, rx) = mpsc::unbounded_channel();
        let handler = move |result: notify::Result<notify::Event>| {
            // Runs on notify's thread: never panic, never block.
            let Ok(event) = result else { return };
            if matches!(event.kind, EventKind::Access(_)) {
                return;
            }
            for path in event.paths {
                let _ = tx.send(path);
            }
        };
        let (watcher, warning) = match notify::recommended_watcher(handler) {
            Ok(w) => (Some(w), None),
            Err(e) => (None, Some(explain(&e, Path::new("(watcher)")))),
        };
        let inner = Inner {
            watcher,
            dirs: HashMap::new(),
            files: HashMap::new(),
        };
        (
            TranscriptWatcher {
                inner: Mutex::new(inner),
            },
            rx,
            warning,
        )
    }

    /// Follows `transcript` for `session`. An error says why it cannot be
    /// watched (`None` inside: the directory does not exist yet, try later).
    pub fn follow(&self, session: &SessionKey, transcript: &Path) -> Result<(), Option<String>> {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let Some(dir) = transcript.parent().map(Path::to_path_buf) else {
            return Ok(());
        };
        if inner
            .files
            .get(transcript)
            .is_some_and(|s| s.contains(session))
        {
            return Ok(());
        }
        if !inner.dirs.contains_key(&dir) {
            let Some(watcher) = inner.watcher.as_mut() else {
                return Ok(());
            };
            match watcher.watch(&dir, RecursiveMode::NonRecursive) {
                Ok(()) => {}
                Err(e) if matches!(e.kind, notify::ErrorKind::PathNotFound) => return Err(None),
                Err(e) if matches!(&e.kind, notify::ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::NotFound) =>
                {
                    return Err(None);
                }
                Err(e) => return Err(Some(explain(&e, &dir))),
            }
        }
        let sessions = inner.files.entry(transcript.to_path_buf()).or_default();
        let new_file = sessions.is_empty();
        sessions.insert(session.clone());
        if new_file {
            *inner.dirs.entry(dir).or_insert(0) += 1;
        }
        Ok(())
    }

    /// Stops following whatever `session` wrote.
    pub fn unfollow(&self, session: &SessionKey) {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let emptied: Vec<PathBuf> = inner
            .files
            .iter_mut()
            .filter_map(|(path, sessions)| {
                (sessions.remove(session) && sessions.is_empty()).then(|| path.clone())
            })
            .collect();
        for path in emptied {
            inner.files.remove(&path);
            let Some(dir) = path.parent().map(Path::to_path_buf) else {
                continue;
            };
            let last = match inner.dirs.get_mut(&dir) {
                Some(count) => {
                    *count -= 1;
                    *count == 0
                }
                None => false,
            };
            if last {
                inner.dirs.remove(&dir);
                if let Some(w) = inner.watcher.as_mut() {
                    let _ = w.unwatch(&dir);
                }
            }
        }
    }

    /// The sessions writing `path`, if we follow it.
    pub fn sessions_for(&self, path: &Path) -> Vec<SessionKey> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner
            .files
            .get(path)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    pub fn watched_dirs(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .dirs
            .len()
    }
}

/// Waits for the next batch of changed paths: the first one, then whatever
/// else arrives within [`DEBOUNCE`]. `None` when the watcher is gone.
pub async fn next_batch(rx: &mut mpsc::UnboundedReceiver<PathBuf>) -> Option<HashSet<PathBuf>> {
    let first = rx.recv().await?;
    let mut batch = HashSet::from([first]);
    let deadline = tokio::time::Instant::now() + DEBOUNCE;
    while let Ok(Some(path)) = tokio::time::timeout_at(deadline, rx.recv()).await {
        batch.insert(path);
    }
    Some(batch)
}

/// A watch error in words a person can act on.
fn explain(error: &notify::Error, dir: &Path) -> String {
    match &error.kind {
        notify::ErrorKind::MaxFilesWatch => format!(
            "cannot watch {}: the inotify watch limit is reached; raise it with \
             `sudo sysctl fs.inotify.max_user_watches=524288` (hooks still work; live updates between hooks stop)",
            dir.display()
        ),
        notify::ErrorKind::Io(e) if e.raw_os_error() == Some(libc::EMFILE) => {
            "cannot start a file watcher: too many inotify instances; raise the limit with \
             `sudo sysctl fs.inotify.max_user_instances=512` (hooks still work; live updates between hooks stop)"
                .to_owned()
        }
        _ => format!(
            "cannot watch {}: {error} (hooks still work; live updates between hooks stop)",
            dir.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::wire::Harness;

    fn key(id: &str) -> SessionKey {
        SessionKey {
            harness: Harness::ClaudeCode,
            id: id.into(),
        }
    }

    #[tokio::test]
    async fn appends_are_seen_and_bursts_coalesced() {
        let dir = tempfile::tempdir().unwrap();
        let transcript = dir.path().join("s.jsonl");
        std::fs::write(&transcript, b"").unwrap();
        let (watcher, mut rx, warning) = TranscriptWatcher::start();
        assert!(warning.is_none(), "{warning:?}");
        watcher.follow(&key("a"), &transcript).unwrap();
        watcher.follow(&key("b"), &transcript).unwrap();
        assert_eq!(
            watcher.follow(&key("c"), &dir.path().join("absent/s.jsonl")),
            Err(None)
        );
        assert_eq!(watcher.watched_dirs(), 1);
        for i in 0..20 {
            crate::fsutil::append_line(&transcript, &format!("{{\"n\":{i}}}")).unwrap();
        }
        let batch = tokio::time::timeout(Duration::from_secs(5), next_batch(&mut rx))
            .await
            .unwrap()
            .unwrap();
        assert!(batch.contains(&transcript), "{batch:?}");
        let mut sessions = watcher.sessions_for(&transcript);
        sessions.sort();
        assert_eq!(sessions, vec![key("a"), key("b")]);
        watcher.unfollow(&key("a"));
        assert_eq!(watcher.watched_dirs(), 1);
        watcher.unfollow(&key("b"));
        assert_eq!(watcher.watched_dirs(), 0);
        assert!(watcher.sessions_for(&transcript).is_empty());
    }

    #[test]
    fn limit_errors_say_how_to_fix_them() {
        let e = notify::Error::new(notify::ErrorKind::MaxFilesWatch);
        assert!(explain(&e, Path::new("/x")).contains("max_user_watches"));
    }
}

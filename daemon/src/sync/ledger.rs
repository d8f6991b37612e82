//! The sync ledger: the commits hookd itself put on sync refs, and only
//! those are trusted. A sync ref is an ordinary ref of the project's
//! repository, so anything that can run `git update-ref` there (an agent, a
//! script in the repository) can point one anywhere: at the user's HEAD,
//! whose history may hold a committed `.env`, or at a forged state. So a
//! ref's tip is used only when hookd wrote it (a saved-state commit or an
//! exported checkpoint this machine made) or moved a ref to it in a pull
//! (another machine's tip, as the remote holds it):
//!
//! - a push sends only this machine's refs whose tips are in the ledger;
//! - an export continues a chain only from a tip in the ledger;
//! - another machine's state or checkpoint is read only when its tip is.
//!
//! The ledger is one file in hookd's state directory, a commit id a line,
//! nothing of any project in it; lines are appended with one write each
//! under a lock, and when it grows past [`KEPT`] lines the oldest are
//! dropped by rewriting it atomically.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The ledger's file in hookd's state directory.
pub const LEDGER_FILE: &str = "sync-ledger";

/// Commit ids kept; the oldest beyond are forgotten (a ref whose tip is
/// forgotten is treated as one hookd did not write: its chain starts anew).
pub const KEPT: usize = 100_000;

/// Lines allowed past [`KEPT`] before the file is rewritten, so that the
/// rewrite is rare.
const SLACK: usize = KEPT / 10;

/// One writer at a time within the daemon (appends and the rewrite).
static WRITING: Mutex<()> = Mutex::new(());

/// The ledger of hookd's state directory.
#[derive(Debug, Clone)]
pub struct Ledger {
    path: PathBuf,
}

/// The commit ids of a ledger as read once.
#[derive(Debug, Clone, Default)]
pub struct Trusted(HashSet<String>);

impl Trusted {
    pub fn contains(&self, sha: &str) -> bool {
        self.0.contains(sha)
    }
}

impl Ledger {
    pub fn in_state_dir(state_dir: &Path) -> Ledger {
        Ledger {
            path: state_dir.join(LEDGER_FILE),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records `sha` as a commit hookd wrote or pulled.
    pub fn record(&self, sha: &str) -> Result<(), String> {
        if !is_commit_id(sha) {
            return Err(format!("`{sha}` is not a commit id"));
        }
        let _one = WRITING.lock().unwrap_or_else(|p| p.into_inner());
        crate::fsutil::append_line(&self.path, sha)
            .map_err(|e| format!("cannot write {}: {e}", self.path.display()))?;
        self.prune().map_err(|e| {
            format!(
                "cannot drop the oldest lines of {}: {e}",
                self.path.display()
            )
        })
    }

    /// Every commit id in the ledger (none when it does not exist yet).
    pub fn read(&self) -> Result<Trusted, String> {
        let text = match std::fs::read(&self.path) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(format!("cannot read {}: {e}", self.path.display())),
        };
        Ok(Trusted(
            text.lines()
                .filter(|l| is_commit_id(l))
                .map(str::to_owned)
                .collect(),
        ))
    }

    /// Keeps the newest [`KEPT`] lines once the file holds more than
    /// [`KEPT`] + [`SLACK`]. The caller holds [`WRITING`].
    fn prune(&self) -> io::Result<()> {
        // A line is at least 41 bytes: no read while the file is small.
        let size = std::fs::metadata(&self.path)?.len();
        if size < ((KEPT + SLACK) * 41) as u64 {
            return Ok(());
        }
        let text = std::fs::read_to_string(&self.path)?;
        let lines: Vec<&str> = text.lines().filter(|l| is_commit_id(l)).collect();
        if lines.len() <= KEPT + SLACK {
            return Ok(());
        }
        let kept: String = lines[lines.len() - KEPT..]
            .iter()
            .map(|l| format!("{l}\n"))
            .collect();
        crate::fsutil::write_atomic(&self.path, kept.as_bytes())
    }
}

/// A chain of this machine's sync refs as the export builds it: it
/// continues only a tip in the ledger, and records every commit it makes.
pub struct LedgerChain<'a> {
    ledger: &'a Ledger,
    trusted: Trusted,
}

impl<'a> LedgerChain<'a> {
    /// The ledger as it is now (a ledger that cannot be read trusts nothing:
    /// the chain starts anew, which loses nothing but the link).
    pub fn new(ledger: &'a Ledger) -> LedgerChain<'a> {
        let trusted = ledger.read().unwrap_or_else(|why| {
            tracing::warn!("sync: {why}; this machine's sync refs start new chains");
            Trusted::default()
        });
        LedgerChain { ledger, trusted }
    }
}

impl crate::git::export::Chain for LedgerChain<'_> {
    fn continues(&self, tip: &str) -> bool {
        self.trusted.contains(tip)
    }

    fn made(&self, commit: &str) -> Result<(), String> {
        self.ledger.record(commit)
    }
}

/// A SHA-1 or SHA-256 commit id, lowercase hex as git writes it.
fn is_commit_id(text: &str) -> bool {
    matches!(text.len(), 40 | 64) && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_commit_is_trusted_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::in_state_dir(dir.path());
        assert!(!ledger.read().unwrap().contains(&"a".repeat(40)));
        ledger.record(&"a".repeat(40)).unwrap();
        ledger.record(&"b".repeat(64)).unwrap();
        let trusted = ledger.read().unwrap();
        assert!(trusted.contains(&"a".repeat(40)));
        assert!(trusted.contains(&"b".repeat(64)));
        assert!(!trusted.contains(&"c".repeat(40)));
        for bad in [
            "",
            "HEAD",
            "refs/heads/main",
            &"A".repeat(40),
            &"a".repeat(39),
        ] {
            assert!(ledger.record(bad).is_err(), "{bad}");
        }
        assert_eq!(
            std::fs::read_to_string(ledger.path()).unwrap(),
            format!("{}\n{}\n", "a".repeat(40), "b".repeat(64))
        );
    }

    /// Past its bound the ledger keeps the newest lines only.
    #[test]
    fn the_oldest_lines_are_dropped_past_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::in_state_dir(dir.path());
        let sha = |n: usize| format!("{n:040x}");
        let full: String = (0..KEPT + SLACK).map(|n| format!("{}\n", sha(n))).collect();
        std::fs::write(ledger.path(), full).unwrap();
        ledger.record(&sha(KEPT + SLACK)).unwrap();
        let trusted = ledger.read().unwrap();
        assert_eq!(trusted.0.len(), KEPT);
        assert!(!trusted.contains(&sha(0)));
        assert!(trusted.contains(&sha(KEPT + SLACK)));
        assert!(trusted.contains(&sha(SLACK + 1)));
    }
}

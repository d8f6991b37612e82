//! The sync ledger: the commits hookd itself put on sync refs, and only
//! those are trusted. A sync ref is an ordinary ref of the project's
//! repository, so anything that can run `git update-ref` there (an agent, a
//! script in the repository) can point one anywhere: at the user's HEAD,
//! whose history may hold a committed `.env`, or at a forged state. So a
//! ref's tip is used only when hookd wrote it (a saved-state commit or an
//! exported checkpoint this machine made) or moved a ref to it in a pull
//! (another machine's tip, as the remote holds it):
//!
//! - a push sends only this machine's refs whose tips hookd made;
//! - an export continues a chain only from a tip hookd made;
//! - another machine's state or checkpoint is read only when a pull
//!   brought its tip.
//!
//! The two kinds never stand in for each other: a remote can advertise any
//! commit (the user's HEAD, named in a pushed trailer) as another
//! machine's tip, and a pull takes it in, but that makes it no commit of
//! this machine's to build on or push.
//!
//! The ledger is one file in hookd's state directory, a kind and a commit
//! id a line (`made <id>`, `pulled <id>`), nothing of any project in it;
//! a line already there is not written again, lines are appended with one
//! write each under a lock, and when it grows past [`KEPT`] lines the
//! oldest are dropped by rewriting it atomically.

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

/// How a commit came into the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// hookd made it on one of this machine's sync refs.
    Made,
    /// A pull moved another machine's sync ref to it.
    Pulled,
}

impl Kind {
    fn word(self) -> &'static str {
        match self {
            Kind::Made => "made",
            Kind::Pulled => "pulled",
        }
    }
}

/// The commit ids of a ledger as read once, by kind.
#[derive(Debug, Clone, Default)]
pub struct Trusted {
    made: HashSet<String>,
    pulled: HashSet<String>,
}

impl Trusted {
    /// A commit hookd made on this machine's sync refs.
    pub fn made(&self, sha: &str) -> bool {
        self.made.contains(sha)
    }

    /// Another machine's tip a pull brought.
    pub fn pulled(&self, sha: &str) -> bool {
        self.pulled.contains(sha)
    }

    fn has(&self, kind: Kind, sha: &str) -> bool {
        match kind {
            Kind::Made => self.made(sha),
            Kind::Pulled => self.pulled(sha),
        }
    }
}

impl Ledger {
    pub fn in_state_dir(state_dir: &Path) -> Ledger {
        Ledger {
            path: state_dir.join(LEDGER_FILE),
        }
    }

    /// Records `sha` as a commit of this `kind`, unless it is already.
    pub fn record(&self, kind: Kind, sha: &str) -> Result<(), String> {
        if !is_commit_id(sha) {
            return Err(format!("`{sha}` is not a commit id"));
        }
        let _one = WRITING.lock().unwrap_or_else(|p| p.into_inner());
        if self.read()?.has(kind, sha) {
            return Ok(());
        }
        crate::fsutil::append_line(&self.path, &format!("{} {sha}", kind.word()))
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
        let mut trusted = Trusted::default();
        for (kind, sha) in text.lines().filter_map(entry) {
            match kind {
                Kind::Made => trusted.made.insert(sha.to_owned()),
                Kind::Pulled => trusted.pulled.insert(sha.to_owned()),
            };
        }
        Ok(trusted)
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
        let lines: Vec<&str> = text.lines().filter(|l| entry(l).is_some()).collect();
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
        self.trusted.made(tip)
    }

    fn made(&self, commit: &str) -> Result<(), String> {
        self.ledger.record(Kind::Made, commit)
    }
}

/// One line of the ledger: its kind and commit id.
fn entry(line: &str) -> Option<(Kind, &str)> {
    let (word, sha) = line.split_once(' ')?;
    let kind = match word {
        "made" => Kind::Made,
        "pulled" => Kind::Pulled,
        _ => return None,
    };
    is_commit_id(sha).then_some((kind, sha))
}

/// A SHA-1 or SHA-256 commit id, lowercase hex as git writes it.
pub fn is_commit_id(text: &str) -> bool {
    matches!(text.len(), 40 | 64) && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_commit_is_trusted_as_its_kind_only_and_once() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::in_state_dir(dir.path());
        let (a, b) = ("a".repeat(40), "b".repeat(64));
        assert!(!ledger.read().unwrap().made(&a));
        ledger.record(Kind::Made, &a).unwrap();
        ledger.record(Kind::Pulled, &b).unwrap();
        ledger.record(Kind::Pulled, &b).unwrap();
        let trusted = ledger.read().unwrap();
        assert!(trusted.made(&a) && !trusted.pulled(&a));
        assert!(
            trusted.pulled(&b) && !trusted.made(&b),
            "a pull makes nothing of ours"
        );
        assert!(!trusted.made(&"c".repeat(40)));
        for bad in [
            "",
            "HEAD",
            "refs/heads/main",
            &"A".repeat(40),
            &"a".repeat(39),
        ] {
            assert!(ledger.record(Kind::Made, bad).is_err(), "{bad}");
        }
        assert_eq!(
            std::fs::read_to_string(&ledger.path).unwrap(),
            format!("made {a}\npulled {b}\n")
        );
    }

    /// Past its bound the ledger keeps the newest lines only.
    #[test]
    fn the_oldest_lines_are_dropped_past_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::in_state_dir(dir.path());
        let sha = |n: usize| format!("{n:040x}");
        let full: String = (0..KEPT + SLACK)
            .map(|n| format!("made {}\n", sha(n)))
            .collect();
        std::fs::write(&ledger.path, full).unwrap();
        ledger.record(Kind::Made, &sha(KEPT + SLACK)).unwrap();
        let trusted = ledger.read().unwrap();
        assert_eq!(trusted.made.len(), KEPT);
        assert!(!trusted.made(&sha(0)));
        assert!(trusted.made(&sha(KEPT + SLACK)));
        assert!(trusted.made(&sha(SLACK + 1)));
    }
}

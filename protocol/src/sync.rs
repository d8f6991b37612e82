//! `hookctl sync push|pull|status`: what is asked, and what the daemon
//! says about sync (also part of `hookctl status` and `doctor`).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SyncAction {
    /// Push this repository's sync refs (and the memory), now.
    Push,
    /// Fetch the other machines' sync refs (and the memory), now.
    Pull,
    /// Where things go and how the last pushes and pulls went.
    Status,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SyncRequest {
    pub action: SyncAction,
    /// The project (its work tree root) asked about; none: the memory and
    /// every repository the daemon pushed for.
    #[serde(default)]
    pub project: Option<PathBuf>,
}

/// One push or pull, as it went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncAttempt {
    /// Unix time in milliseconds.
    pub at_ms: u64,
    pub ok: bool,
    /// What was done, or what went wrong.
    pub detail: String,
    /// Where to (empty when no URL was found).
    #[serde(default)]
    pub url: String,
}

/// Sync as one repository (or the memory) sees it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SyncTarget {
    /// The project's work tree root; none for the memory.
    #[serde(default)]
    pub project: Option<PathBuf>,
    /// The URL pushes go to, when one was found.
    #[serde(default)]
    pub url: Option<String>,
    /// Why nothing is pushed here, with its fix.
    #[serde(default)]
    pub problem: Option<String>,
    #[serde(default)]
    pub last_push: Option<SyncAttempt>,
    #[serde(default)]
    pub last_pull: Option<SyncAttempt>,
    /// When a failed push is tried again (Unix time in milliseconds).
    #[serde(default)]
    pub next_retry_ms: Option<u64>,
}

/// The answer to every sync request.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SyncReport {
    /// `sync.remote`: none means sync is off.
    #[serde(default)]
    pub remote: Option<String>,
    /// `sync.memory_remote`.
    #[serde(default)]
    pub memory_remote: Option<String>,
    /// What this machine's refs carry (`laptop-3f9c1a`).
    #[serde(default)]
    pub machine: String,
    /// The repositories asked about (or every one the daemon pushed for).
    #[serde(default)]
    pub repositories: Vec<SyncTarget>,
    /// The memory's sync, when `sync.memory_remote` is set.
    #[serde(default)]
    pub memory: Option<SyncTarget>,
}

impl SyncReport {
    /// Whether a push or pull this report answers failed anywhere.
    pub fn failed(&self) -> bool {
        self.repositories
            .iter()
            .chain(self.memory.as_ref())
            .any(|t| {
                t.problem.is_some()
                    || [&t.last_push, &t.last_pull]
                        .into_iter()
                        .flatten()
                        .any(|a| !a.ok)
            })
    }
}

/// The secret a URL carries in its userinfo, if any: the password of
/// `scheme://user:password@host/…`, or the whole userinfo of
/// `https://TOKEN@host/…` (over ssh a lone userinfo is a login name).
pub fn url_secret(url: &str) -> Option<&str> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
    let (userinfo, _) = authority.rsplit_once('@')?;
    match userinfo.split_once(':') {
        Some((_, password)) => Some(password),
        None if scheme.eq_ignore_ascii_case("ssh") || scheme.starts_with("git+ssh") => None,
        None => Some(userinfo),
    }
    .filter(|secret| !secret.is_empty() && *secret != MASK)
}

/// What a secret of a URL is shown as.
const MASK: &str = "***";

/// `text` with the secret `url` carries (see [`url_secret`]) replaced by
/// `***` wherever it appears in a URL (before an `@`): git's own words may
/// quote the URL.
pub fn masked(text: &str, url: &str) -> String {
    match url_secret(url) {
        Some(secret) => text.replace(&format!("{secret}@"), &format!("{MASK}@")),
        None => text.to_owned(),
    }
}

/// A URL as shown to a person: on one line, and a password or token in it
/// (`https://user:token@host/repo.git`, `https://token@host/repo.git`)
/// replaced by `***`.
pub fn shown_url(url: &str) -> String {
    crate::text::one_line(&masked(url, url))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_in_a_url_is_never_shown() {
        assert_eq!(
            shown_url("https://me:ghp_secret@github.com/me/sync.git"),
            "https://me:***@github.com/me/sync.git"
        );
        assert_eq!(
            shown_url("ssh://git@host:22/r.git"),
            "ssh://git@host:22/r.git"
        );
        assert_eq!(shown_url("git@host:r.git"), "git@host:r.git");
        assert_eq!(
            shown_url("https://ghp_token123@github.com/me/sync.git"),
            "https://***@github.com/me/sync.git"
        );
        assert_eq!(
            shown_url("ssh://me:pw@host/r.git"),
            "ssh://me:***@host/r.git"
        );
        assert_eq!(
            shown_url("https://***@github.com/r.git"),
            "https://***@github.com/r.git",
            "shown twice, the same"
        );
        assert_eq!(
            masked(
                "fatal: unable to access 'https://me:pw9@h/r.git/': refused",
                "https://me:pw9@h/r.git"
            ),
            "fatal: unable to access 'https://me:***@h/r.git/': refused"
        );
        assert_eq!(shown_url("file:///tmp/r\n.git"), "file:///tmp/r .git");
    }
}

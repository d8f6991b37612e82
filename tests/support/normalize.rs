//! Whole outputs made stable enough to snapshot: what varies from run to
//! run (the sandbox's paths, times, durations, pids, commit ids) replaced by
//! placeholders, as `[TEMP]`, `[SOCKET]`, `[TIME]`, `[DURATION]`, `[PID]`,
//! `[SHA]` (a full commit id; a short one only of the commits a test names,
//! with [`Normalizer::with_commits`]), `[STAMP]`, `[MARKER]`, `[TOKEN]`, `[DATE]`.

use regex::Regex;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// The placeholders, in the order they are applied: a longer path before
/// the directory holding it, times before the numbers in them.
pub struct Normalizer {
    paths: Vec<(String, &'static str)>,
    /// Commits made in this run, by any abbreviation of 7 digits or more.
    commits: Option<Regex>,
}

static ISO_TIME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u)\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?").unwrap()
});
// A backup's name: its time, and a count when two fall in the same second.
static COMPACT_TIME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?-u)\b\d{8}T\d{6}Z?(-\d+)?\b").unwrap());
// A day alone (a task's, a log file's), once the times holding one are gone.
static DATE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?-u)\b\d{4}-\d\d-\d\d\b").unwrap());
static CLOCK: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?-u)\b\d\d:\d\d:\d\d\b").unwrap());
static EPOCH_MS: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?-u)\b1\d{12}\b").unwrap());
static DURATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u)\b\d+(\.\d+)?(ns|us|ms|s|m|h|d)( \d+(\.\d+)?(ms|s|m))?\b").unwrap()
});
static PID: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"(?i-u)(\bpid"?[:=]?\s*)\d+"#).unwrap());
// The arrival marker's nonce differs each time a prompt is made.
static RESUME_MARKER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?-u)\[hookd-resume [0-9a-f]+\]").unwrap());
// The one-time token PreCompact asks the summary's `hookd-state` block for.
static STATE_TOKEN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?-u)\bhookd-state [0-9a-f]{16,}\b").unwrap());
// When a saved state or a budget record was made, in its id or file name.
static STAMP: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?-u)\d{8}_\d{6}(_\d{3})?").unwrap());
static FULL_SHA: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?-u)\b[0-9a-f]{40}\b").unwrap());

impl Normalizer {
    /// Normalizes the paths of a sandbox rooted at `root` whose socket is
    /// `socket`.
    pub fn new(root: &Path, socket: &Path) -> Normalizer {
        let mut paths = Vec::new();
        let mut add = |path: PathBuf, placeholder: &'static str| {
            let canonical = path.canonicalize().unwrap_or_else(|_| path.clone());
            for p in [canonical, path] {
                let text = p.display().to_string();
                if !paths.iter().any(|(known, _)| *known == text) {
                    paths.push((text, placeholder));
                }
            }
        };
        add(socket.to_path_buf(), "[SOCKET]");
        add(root.to_path_buf(), "[TEMP]");
        Normalizer {
            paths,
            commits: None,
        }
    }

    /// Also replaces these commits' ids, whole or abbreviated, by `[SHA]`
    /// (eight hex digits alone may as well be a session's id).
    pub fn with_commits<'a>(mut self, shas: impl IntoIterator<Item = &'a str>) -> Normalizer {
        let prefixes: Vec<&str> = shas
            .into_iter()
            .filter(|sha| sha.len() >= 7 && sha.bytes().all(|b| b.is_ascii_hexdigit()))
            .map(|sha| &sha[..7])
            .collect();
        if !prefixes.is_empty() {
            let pattern = format!(r"(?-u)\b({})[0-9a-f]*\b", prefixes.join("|"));
            self.commits = Some(Regex::new(&pattern).expect("hex prefixes"));
        }
        self
    }

    /// Also replaces `literal` (a directory of this machine's, say) by `placeholder`.
    pub fn with(mut self, literal: impl Into<String>, placeholder: &'static str) -> Normalizer {
        self.paths.insert(0, (literal.into(), placeholder));
        self
    }

    /// `text` with every varying part replaced by its placeholder.
    pub fn normalize(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (path, placeholder) in &self.paths {
            out = out.replace(path.as_str(), placeholder);
        }
        let out = RESUME_MARKER.replace_all(&out, "[hookd-resume [MARKER]]");
        let out = STATE_TOKEN.replace_all(&out, "hookd-state [TOKEN]");
        let out = STAMP.replace_all(&out, "[STAMP]");
        let out = ISO_TIME.replace_all(&out, "[TIME]");
        let out = COMPACT_TIME.replace_all(&out, "[TIME]");
        let out = DATE.replace_all(&out, "[DATE]");
        let out = CLOCK.replace_all(&out, "[TIME]");
        let out = EPOCH_MS.replace_all(&out, "[TIME]");
        let out = PID.replace_all(&out, "${1}[PID]");
        let out = match &self.commits {
            Some(commits) => commits.replace_all(&out, "[SHA]").into_owned(),
            None => out.into_owned(),
        };
        let out = FULL_SHA.replace_all(&out, "[SHA]");
        let out = DURATION.replace_all(&out, "[DURATION]");
        out.into_owned()
    }
}

/// `value` with every object's keys in sorted order, to print: serde_json
/// keeps a map's insertion order only where a crate of the build asks it
/// to, so the order printed would otherwise be the build's.
pub fn sorted_keys(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted_keys(&map[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted_keys).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_times_pids_and_shas_become_placeholders() {
        let n = Normalizer::new(
            Path::new("/tmp/hkAbC"),
            Path::new("/tmp/hkAbC/run/hookd.sock"),
        );
        let text = "hookd (pid 4242) on /tmp/hkAbC/run/hookd.sock, state /tmp/hkAbC/state, \
                    up 3s, saved 2026-11-26T04:38:19.123Z (backup-20261126T045102Z-2) at 1764131899123, \
                    checkpoint 3f2a9c1d0b5e7f8a9c1d0b5e7f8a9c1d0b5e7f8a (3f2a9c1), 95% of 200000, \
                    session 90fcfea3";
        assert_eq!(
            n.normalize(text),
            "hookd (pid [PID]) on [SOCKET], state [TEMP]/state, up [DURATION], saved [TIME] (backup-[TIME]) \
             at [TIME], checkpoint [SHA] (3f2a9c1), 95% of 200000, session 90fcfea3"
        );
        let n = n.with_commits(["3f2a9c1d0b5e7f8a9c1d0b5e7f8a9c1d0b5e7f8a"]);
        assert_eq!(
            n.normalize("at 3f2a9c1, 3f2a9c1d0, compact_20261126_045425_r1"),
            "at [SHA], [SHA], compact_[STAMP]_r1"
        );
        assert_eq!(
            n.normalize("info string `hookd-state 65b14ff2c57d1f9fe035d63d4d634456`"),
            "info string `hookd-state [TOKEN]`"
        );
        assert_eq!(
            n.normalize("closed 2026-11-01 (hookd.2026-11-25.log)"),
            "closed [DATE] (hookd.[DATE].log)"
        );
        assert_eq!(
            n.normalize("INFO hookd::server: listening pid=31751"),
            "INFO hookd::server: listening pid=[PID]"
        );
    }
}

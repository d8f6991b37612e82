//! A harness's JSON settings file, edited without losing anything: read
//! (refusing invalid JSON with its line and column), rewritten atomically
//! after a backup, and shown as a diff for `--dry-run`.

use anyhow::{Context, bail};
use serde_json::{Map, Value};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Lines of unchanged context around each change in a diff.
const DIFF_CONTEXT: usize = 2;

pub struct JsonFile {
    pub path: PathBuf,
    /// The text as read; `None` when the file does not exist.
    pub original: Option<String>,
    /// The top-level object (empty for a missing or empty file).
    pub value: Map<String, Value>,
}

impl JsonFile {
    /// Reads `path`. A missing or empty file is an empty object; anything
    /// else that is not a JSON object is an error that says where.
    pub fn load(path: &Path) -> anyhow::Result<JsonFile> {
        let original = match std::fs::read_to_string(path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let text = original.as_deref().unwrap_or("");
        let value = if text.trim().is_empty() {
            Map::new()
        } else {
            match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(map)) => map,
                Ok(_) => bail!(
                    "{} is JSON but not an object ({{ ... }}); nothing was changed. \
                     Fix it by hand, or move it aside and run this again",
                    path.display()
                ),
                Err(e) => bail!(
                    "{} is not valid JSON: {} (line {}, column {}); nothing was changed. \
                     Fix the file (comments are not allowed) or move it aside, then run this again",
                    path.display(),
                    error_without_position(&e),
                    e.line(),
                    e.column()
                ),
            }
        };
        Ok(JsonFile {
            path: path.to_path_buf(),
            original,
            value,
        })
    }

    /// Whether `value` differs from what was read.
    pub fn differs(&self, value: &Map<String, Value>) -> bool {
        *value != self.value || self.original.is_none() && !value.is_empty()
    }

    /// A unified-style diff from the file as read to `value`, as it would be
    /// written.
    pub fn diff(&self, value: &Map<String, Value>) -> String {
        let before = if self.original.is_some() {
            pretty(&self.value)
        } else {
            String::new()
        };
        diff_lines(&before, &pretty(value), &self.path)
    }

    /// Backs the file up (when it exists) and writes `value` in its place
    /// atomically. Returns the backup's path.
    pub fn write(&self, value: &Map<String, Value>) -> anyhow::Result<Option<PathBuf>> {
        // A symlinked settings file (a dotfiles repository) keeps its link.
        let target = std::fs::canonicalize(&self.path).unwrap_or_else(|_| self.path.clone());
        let dir = target
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let mut mode = 0o644;
        let backup = if self.original.is_some() {
            mode = std::fs::metadata(&target)
                .map(|m| m.permissions().mode() & 0o7777)
                .unwrap_or(mode);
            let backup = backup_path(&target);
            std::fs::copy(&target, &backup).with_context(|| {
                format!(
                    "cannot back {} up to {}",
                    target.display(),
                    backup.display()
                )
            })?;
            Some(backup)
        } else {
            None
        };
        write_atomic(&target, pretty(value).as_bytes(), mode)?;
        Ok(backup)
    }
}

/// serde_json's message without its own " at line L column C" (we say it
/// our way).
fn error_without_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

/// Two-space indentation, as Claude Code and Gemini CLI write their files.
pub fn pretty(value: &Map<String, Value>) -> String {
    let mut text = serde_json::to_string_pretty(value).expect("a JSON map serializes");
    text.push('\n');
    text
}

/// The backups [`JsonFile::write`] made of `target`, oldest first.
pub fn backups_of(target: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (target.parent(), target.file_name()) else {
        return Vec::new();
    };
    let prefix = format!("{}.hookd-backup-", name.to_string_lossy());
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// `settings.json.hookd-backup-20261121T203045Z`, unique in its directory.
fn backup_path(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stamp = utc_stamp(crate::display::now_ms() / 1000);
    let mut candidate = target.with_file_name(format!("{name}.hookd-backup-{stamp}"));
    let mut n = 1;
    while candidate.exists() {
        n += 1;
        candidate = target.with_file_name(format!("{name}.hookd-backup-{stamp}-{n}"));
    }
    candidate
}

/// `20261121T203045Z` for a Unix time in seconds.
fn utc_stamp(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Days to civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Writes `bytes` to `path` through a temporary file in the same directory:
/// written, flushed to disk, then renamed over the old file, so a crash
/// leaves the old file or the new one, never half of one.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.hookd-{}.tmp", std::process::id()));
    let result = (|| -> std::io::Result<()> {
        // A file, or a link a repository planted, left at that name goes
        // first: a new file only, never one opened through a link.
        match std::fs::remove_file(&tmp) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.set_permissions(std::fs::Permissions::from_mode(mode))?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        // The rename itself reaches the disk with the directory.
        File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.with_context(|| format!("cannot write {}", path.display()))
}

/// Lines removed (`-`) and added (`+`) from `before` to `after`, with a
/// little context, in the shape of `diff -u`.
pub fn diff_lines(before: &str, after: &str, path: &Path) -> String {
    let a: Vec<&str> = before.lines().collect();
    let b: Vec<&str> = after.lines().collect();
    // Longest common subsequence table, from the end.
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut ops: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(('-', a[i]));
            i += 1;
        } else {
            ops.push(('+', b[j]));
            j += 1;
        }
    }
    let mut out = format!("--- {0}\n+++ {0}\n", path.display());
    let changed = |k: usize| ops.get(k).is_some_and(|(sign, _)| *sign != ' ');
    let mut last_shown: Option<usize> = None;
    for (k, (sign, line)) in ops.iter().enumerate() {
        if !(k.saturating_sub(DIFF_CONTEXT)..=k + DIFF_CONTEXT).any(changed) {
            continue;
        }
        if last_shown.is_some_and(|prev| k > prev + 1) {
            out += "@@\n";
        }
        out += &format!("{sign}{line}\n");
        last_shown = Some(k);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_json_is_refused_with_its_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, "{\n  \"a\": 1,\n  \"b\": \n}\n").unwrap();
        let err = JsonFile::load(&path).err().unwrap().to_string();
        assert!(err.contains("line 4, column 1"), "{err}");
        assert!(err.contains("nothing was changed"), "{err}");
        std::fs::write(&path, "[1]").unwrap();
        let err = JsonFile::load(&path).err().unwrap().to_string();
        assert!(err.contains("not an object"), "{err}");
        std::fs::write(&path, "  \n").unwrap();
        assert!(JsonFile::load(&path).unwrap().value.is_empty());
        assert!(
            JsonFile::load(&dir.path().join("missing.json"))
                .unwrap()
                .original
                .is_none()
        );
    }

    /// A link planted where the temporary file goes is replaced, never
    /// written through.
    #[test]
    fn a_link_at_the_temporary_name_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, "keep me\n").unwrap();
        let target = dir.path().join("hookd.js");
        let tmp = dir
            .path()
            .join(format!(".hookd.js.hookd-{}.tmp", std::process::id()));
        std::os::unix::fs::symlink(&outside, &tmp).unwrap();
        write_atomic(&target, b"plugin\n", 0o644).unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep me\n");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "plugin\n");
        assert!(!std::fs::symlink_metadata(&target).unwrap().is_symlink());
        assert!(!tmp.exists() && std::fs::symlink_metadata(&tmp).is_err());
    }

    #[test]
    fn writes_back_up_keep_the_mode_and_follow_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        std::fs::write(&real, "{\"keep\": true}").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.path().join("settings.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let file = JsonFile::load(&link).unwrap();
        let mut value = file.value.clone();
        value.insert("new".into(), Value::from(1));
        let backup = file.write(&value).unwrap().unwrap();
        assert_eq!(std::fs::read_to_string(backup).unwrap(), "{\"keep\": true}");
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(
            std::fs::read_to_string(&real).unwrap(),
            "{\n  \"keep\": true,\n  \"new\": 1\n}\n"
        );
        let mode = std::fs::metadata(&real).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn diffs_show_what_changes_with_context() {
        let before = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let after = "a\nb\nc\nd\nX\nf\ng\nh\n";
        let d = diff_lines(before, after, Path::new("f.json"));
        assert_eq!(d, "--- f.json\n+++ f.json\n c\n d\n-e\n+X\n f\n g\n");
        assert_eq!(
            diff_lines("", "{}\n", Path::new("n")),
            "--- n\n+++ n\n+{}\n"
        );
    }

    #[test]
    fn utc_stamps() {
        assert_eq!(utc_stamp(0), "19700101T000000Z");
        assert_eq!(utc_stamp(1_795_300_245), "20261121T223045Z");
    }
}

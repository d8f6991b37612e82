//! Files in hookd's own directories (state, memory) that must never be
//! seen half-written. A path here is split into its directory and its name,
//! and the write goes through [`project_fs::Dir`], the one writer of files
//! hookd has: temp file, fsync, rename.

use crate::project_fs::Dir;
use std::io;
use std::path::Path;

/// The directory holding `path`, opened, and `path`'s name in it.
fn split(path: &Path) -> io::Result<(Dir, &str)> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| io::Error::other(format!("{} has no file name", path.display())))?;
    Ok((Dir::open(dir)?, name))
}

/// Writes `bytes` to `path` so that readers see the old or the new file,
/// never a mix, even if we crash halfway.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let (dir, name) = split(path)?;
    dir.write_atomic(name, bytes)
}

/// Removes temp files a crashed writer left in `dir` when older than `min_age`.
pub fn sweep_temp_files(dir: &Path, min_age: std::time::Duration) {
    if let Ok(dir) = Dir::open(dir) {
        dir.sweep_temp_files(min_age);
    }
}

/// Appends one line with one `write` call; whole lines or nothing.
pub fn append_line(path: &Path, line: &str) -> io::Result<()> {
    let (dir, name) = split(path)?;
    dir.append_line(name, line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_writes_replace_whole_files_and_leave_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        append_line(&dir.path().join("log"), "a").unwrap();
        append_line(&dir.path().join("log"), "b").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("log")).unwrap(),
            "a\nb\n"
        );
    }
}

//! The pidfile as an OS lock held for the daemon's whole life: while it is
//! held, no second daemon can own the socket next to it.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Read, Seek, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub struct PidLock {
    file: File,
    path: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("another hookd is already running (pid {pid}): it holds the lock {path}")]
    Held { path: PathBuf, pid: String },
    #[error("cannot lock {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

impl PidLock {
    /// Takes the lock and writes our pid into the file.
    pub fn acquire(path: &Path) -> Result<PidLock, LockError> {
        let io_err = |source| LockError::Io {
            path: path.to_path_buf(),
            source,
        };
        loop {
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(path)
                .map_err(io_err)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => {
                    return Err(LockError::Held {
                        path: path.to_path_buf(),
                        pid: read_pid(path).unwrap_or_else(|| "unknown".into()),
                    });
                }
                Err(TryLockError::Error(e)) => return Err(io_err(e)),
            }
            // A daemon that was shutting down may have unlinked the file after we
            // opened it: then we hold a lock on a file nobody else will see. Retry.
            let ours = file.metadata().map_err(io_err)?;
            match std::fs::metadata(path) {
                Ok(current) if current.ino() == ours.ino() && current.dev() == ours.dev() => {}
                _ => continue,
            }
            file.set_len(0).map_err(io_err)?;
            file.rewind().map_err(io_err)?;
            writeln!(file, "{}", std::process::id()).map_err(io_err)?;
            file.sync_data().map_err(io_err)?;
            return Ok(PidLock {
                file,
                path: path.to_path_buf(),
            });
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the pidfile, then lets go of the lock.
    pub fn release(self) {
        let _ = std::fs::remove_file(&self.path);
        drop(self.file);
    }
}

/// The pid recorded in a pidfile, if any.
pub fn read_pid(path: &Path) -> Option<String> {
    let mut text = String::new();
    File::open(path).ok()?.read_to_string(&mut text).ok()?;
    let pid = text.trim();
    (!pid.is_empty() && pid.chars().all(|c| c.is_ascii_digit())).then(|| pid.to_owned())
}

/// Whether some process holds the lock at `path` right now.
pub fn is_held(path: &Path) -> bool {
    let Ok(file) = File::open(path) else {
        return false;
    };
    matches!(file.try_lock_shared(), Err(TryLockError::WouldBlock))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_naming_the_path_and_pid() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("hookd.sock.pid");
        let lock = PidLock::acquire(&path).unwrap();
        assert!(is_held(&path));
        assert_eq!(read_pid(&path), Some(std::process::id().to_string()));
        let err = PidLock::acquire(&path).unwrap_err().to_string();
        assert!(
            err.contains(&path.display().to_string())
                && err.contains(&std::process::id().to_string()),
            "{err}"
        );
        lock.release();
        assert!(!path.exists());
        assert!(!is_held(&path));
        PidLock::acquire(&path).unwrap().release();
    }
}

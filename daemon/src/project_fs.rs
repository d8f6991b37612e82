//! The one way hookd writes files: inside a project or a git directory,
//! and in its own state and memory directories (through `fsutil`).
//!
//! A repository is untrusted: any component of a path in it may be a
//! symlink to somewhere else. So nothing here opens a path string. A [`Dir`]
//! is an open directory handle, and every file or directory below it is
//! reached one component at a time with `openat(O_NOFOLLOW)`: a symlink
//! anywhere is refused, never followed. Temp names, renames and deletions
//! stay inside the handle's directory.

use rustix::fs::{AtFlags, Mode, OFlags};
use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Makes temp names unique among threads of this process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Mode of the files hookd creates: private to the user.
const FILE_MODE: u32 = 0o600;
/// Mode of the directories hookd creates.
const DIR_MODE: u32 = 0o700;

/// An open directory, and the path it was reached by (for messages only).
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

fn refused(path: &Path, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("{}: {why}", path.display()),
    )
}

/// One path component: a plain name, never `..`, `.`, empty or with a `/`.
fn checked_name<'a>(dir: &Path, name: &'a str) -> io::Result<&'a str> {
    let mut parts = Path::new(name).components();
    match (parts.next(), parts.next()) {
        (Some(Component::Normal(_)), None) if !name.contains('/') => Ok(name),
        _ => Err(refused(
            &dir.join(name),
            "not a plain file name inside the directory",
        )),
    }
}

/// What `openat` says when the last component is a symlink (or not a directory).
fn explain(path: &Path, e: io::Error) -> io::Error {
    match e.raw_os_error() {
        Some(libc::ELOOP) | Some(libc::EMLINK) => refused(
            path,
            "is a symlink; hookd never follows links inside a project",
        ),
        Some(libc::ENOTDIR) => io::Error::new(
            io::ErrorKind::NotADirectory,
            format!("{}: is not a directory", path.display()),
        ),
        Some(libc::ENXIO) => refused(path, "is not a regular file"),
        _ => io::Error::new(e.kind(), format!("{}: {e}", path.display())),
    }
}

impl Dir {
    /// Opens `path` itself (a project root or a git directory named by the
    /// harness or by git, or one of hookd's own directories), following links
    /// on the way to it: those are the user's own layout, not the
    /// repository's content.
    pub fn open(path: &Path) -> io::Result<Dir> {
        let fd = rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| explain(path, e.into()))?;
        Ok(Dir {
            fd,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory `name` inside this one; refused when it is a symlink.
    pub fn open_dir(&self, name: &str) -> io::Result<Dir> {
        let name = checked_name(&self.path, name)?;
        let path = self.path.join(name);
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| {
            // With O_DIRECTORY, Linux reports a symlink as "not a directory".
            let link = self
                .lstat(name)
                .is_some_and(|s| rustix::fs::FileType::from_raw_mode(s.st_mode).is_symlink());
            if link {
                io::Error::from_raw_os_error(libc::ELOOP)
            } else {
                e.into()
            }
        })
        .map_err(|e| explain(&path, e))?;
        Ok(Dir { fd, path })
    }

    /// Like [`Dir::open_dir`], creating the directory (mode 0700) when absent.
    /// Returns the directory and whether it was created now.
    pub fn create_dir(&self, name: &str) -> io::Result<(Dir, bool)> {
        let name = checked_name(&self.path, name)?;
        let created = match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(DIR_MODE)) {
            Ok(()) => true,
            Err(rustix::io::Errno::EXIST) => false,
            Err(e) => return Err(explain(&self.path.join(name), e.into())),
        };
        Ok((self.open_dir(name)?, created))
    }

    /// The directory at a relative path below this one, each component opened
    /// without following links.
    pub fn open_path(&self, rel: &Path) -> io::Result<Dir> {
        let mut dir: Option<Dir> = None;
        for part in rel.components() {
            let Component::Normal(name) = part else {
                return Err(refused(&self.path.join(rel), "leaves the directory"));
            };
            let name = name
                .to_str()
                .ok_or_else(|| refused(&self.path.join(rel), "is not a UTF-8 path"))?;
            let next = dir.as_ref().unwrap_or(self).open_dir(name)?;
            dir = Some(next);
        }
        match dir {
            Some(d) => Ok(d),
            None => Dir::reopen(self),
        }
    }

    fn reopen(&self) -> io::Result<Dir> {
        Ok(Dir {
            fd: self.fd.try_clone()?,
            path: self.path.clone(),
        })
    }

    /// Whether this directory belongs to the user hookd runs as.
    pub fn is_own(&self) -> bool {
        rustix::fs::fstat(&self.fd)
            .is_ok_and(|stat| stat.st_uid == rustix::process::geteuid().as_raw())
    }

    /// Refuses a directory another user could write into: owned by someone
    /// else, or writable by group or others.
    pub fn check_private(&self) -> io::Result<()> {
        let stat = rustix::fs::fstat(&self.fd)?;
        if stat.st_uid != rustix::process::geteuid().as_raw() {
            return Err(refused(
                &self.path,
                "is owned by another user; hookd writes only into directories you own",
            ));
        }
        if stat.st_mode & 0o022 != 0 {
            return Err(refused(
                &self.path,
                &format!(
                    "is writable by other users (mode {:o}); run `chmod go-w {}`",
                    stat.st_mode & 0o7777,
                    self.path.display()
                ),
            ));
        }
        Ok(())
    }

    fn open_file(&self, name: &str, flags: OFlags) -> io::Result<File> {
        let name = checked_name(&self.path, name)?;
        let path = self.path.join(name);
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            flags | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
            Mode::from_raw_mode(FILE_MODE),
        )
        .map_err(|e| explain(&path, e.into()))?;
        let stat = rustix::fs::fstat(&fd)?;
        if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
            return Err(refused(&path, "is not a regular file"));
        }
        Ok(File::from(fd))
    }

    /// Reads the file `name`; `None` when it does not exist. A symlink, a
    /// FIFO or a file over `max_bytes` is an error.
    pub fn read(&self, name: &str, max_bytes: u64) -> io::Result<Option<Vec<u8>>> {
        let mut file = match self.open_file(name, OFlags::RDONLY) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let len = file.metadata()?.len();
        if len > max_bytes {
            return Err(refused(
                &self.path.join(name),
                &format!("is larger than {max_bytes} bytes"),
            ));
        }
        let mut bytes = Vec::with_capacity(len as usize);
        Read::by_ref(&mut file)
            .take(max_bytes + 1)
            .read_to_end(&mut bytes)?;
        if bytes.len() as u64 > max_bytes {
            return Err(refused(
                &self.path.join(name),
                &format!("is larger than {max_bytes} bytes"),
            ));
        }
        Ok(Some(bytes))
    }

    /// Writes `bytes` to `name` so that readers see the old or the new file,
    /// never a mix, even if we crash halfway: a temp file in this directory,
    /// fsync, rename over the old name (a symlink there is replaced, not
    /// followed), fsync of the directory.
    pub fn write_atomic(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.write_via_temp(name, bytes, true)
    }

    /// Like [`Dir::write_atomic`] without waiting for the disk: for caches.
    pub fn write_cache(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.write_via_temp(name, bytes, false)
    }

    fn write_via_temp(&self, name: &str, bytes: &[u8], durable: bool) -> io::Result<()> {
        let name = checked_name(&self.path, name)?;
        let tmp = format!(
            ".{name}.tmp.{}.{}",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let result = (|| {
            let mut file = self.open_file(&tmp, OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL)?;
            // A file replaced keeps its mode (new ones are private).
            if let Some(old) = self.lstat(name).filter(|s| {
                rustix::fs::FileType::from_raw_mode(s.st_mode) == rustix::fs::FileType::RegularFile
            }) {
                rustix::fs::fchmod(&file, Mode::from_raw_mode(old.st_mode & 0o777))?;
            }
            file.write_all(bytes)?;
            if durable {
                file.sync_all()?;
            }
            crate::fault::pause("before rename");
            rustix::fs::renameat(&self.fd, tmp.as_str(), &self.fd, name)
                .map_err(|e| explain(&self.path.join(name), e.into()))?;
            if durable {
                // The rename itself must reach the disk for the new name to survive a crash.
                rustix::fs::fsync(&self.fd)?;
            }
            Ok(())
        })();
        if result.is_err() {
            let _ = rustix::fs::unlinkat(&self.fd, tmp.as_str(), AtFlags::empty());
        }
        result
    }

    /// Appends one line with one `write` call, so concurrent writers do not
    /// interleave within a line. A line left torn by an earlier failure (a
    /// full disk, a crash) is cut off first, and a failed write is undone:
    /// the file holds whole lines or nothing.
    pub fn append_line(&self, name: &str, line: &str) -> io::Result<()> {
        let mut file = self.open_file(name, OFlags::RDWR | OFlags::APPEND | OFlags::CREATE)?;
        // One appender at a time (threads and processes alike): another's
        // write still under way would look like a torn tail and be cut.
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)?;
        let len = repair_torn_tail(&file)?;
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
        if let Err(e) = file.write_all(&buf) {
            let _ = file.set_len(len);
            return Err(e);
        }
        Ok(())
    }

    /// Deletes the file `name` in this directory (a symlink is removed, not followed).
    pub fn remove(&self, name: &str) -> io::Result<()> {
        let name = checked_name(&self.path, name)?;
        rustix::fs::unlinkat(&self.fd, name, AtFlags::empty())
            .map_err(|e| explain(&self.path.join(name), e.into()))
    }

    /// The names in this directory (not `.` and `..`), unsorted.
    pub fn names(&self) -> io::Result<Vec<String>> {
        let mut out = Vec::new();
        for entry in rustix::fs::Dir::read_from(&self.fd)? {
            let entry = entry?;
            let name = OsStr::from_bytes(entry.file_name().to_bytes());
            if name == "." || name == ".." {
                continue;
            }
            if let Some(name) = name.to_str() {
                out.push(name.to_owned());
            }
        }
        Ok(out)
    }

    /// Whether anything (a symlink included) is named `name` here.
    pub fn exists(&self, name: &str) -> bool {
        self.lstat(name).is_some()
    }

    /// Whether `name` here is a regular file (not following a symlink).
    pub fn is_file(&self, name: &str) -> bool {
        self.lstat(name)
            .is_some_and(|s| rustix::fs::FileType::from_raw_mode(s.st_mode).is_file())
    }

    /// When the relative path `rel` below this directory names a regular
    /// file (no link followed on the way, nothing leaving the directory):
    /// its modification time.
    pub fn file_at(&self, rel: &Path) -> Option<std::time::SystemTime> {
        let name = rel.file_name()?.to_str()?;
        let parent = rel.parent().unwrap_or(Path::new(""));
        let dir = self.open_path(parent).ok()?;
        let stat = dir.lstat(name)?;
        if !rustix::fs::FileType::from_raw_mode(stat.st_mode).is_file() {
            return None;
        }
        let since_epoch = std::time::Duration::new(
            u64::try_from(stat.st_mtime).unwrap_or(0),
            u32::try_from(stat.st_mtime_nsec).unwrap_or(0),
        );
        Some(std::time::UNIX_EPOCH + since_epoch)
    }

    fn lstat(&self, name: &str) -> Option<rustix::fs::Stat> {
        let name = checked_name(&self.path, name).ok()?;
        rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW).ok()
    }

    /// Removes temp files a crashed writer left here (named as
    /// [`Dir::write_atomic`] names them) when older than `min_age`.
    pub fn sweep_temp_files(&self, min_age: std::time::Duration) {
        let Ok(names) = self.names() else { return };
        let now = std::time::SystemTime::now();
        for name in names {
            if !(name.starts_with('.') && name.contains(".tmp.")) {
                continue;
            }
            let Some(stat) = self.lstat(&name) else {
                continue;
            };
            let modified =
                std::time::UNIX_EPOCH + std::time::Duration::from_secs(stat.st_mtime.max(0) as u64);
            if now.duration_since(modified).is_ok_and(|age| age >= min_age) {
                let _ = self.remove(&name);
            }
        }
    }

    pub fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// What stands at a name in a directory, read without following a symlink.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    Missing,
    File {
        bytes: Vec<u8>,
        executable: bool,
    },
    Link {
        target: Vec<u8>,
    },
    /// A directory, fifo, socket or device.
    Other,
}

/// What [`Dir::place`] puts at a name.
#[derive(Debug, Clone, Copy)]
pub enum NewEntry<'a> {
    /// A file, mode 0755 when executable, else 0644.
    File {
        bytes: &'a [u8],
        executable: bool,
    },
    Link {
        target: &'a [u8],
    },
}

/// Why [`Dir::dirs_below`] could not reach a directory: at which of the
/// path's components (counted from 1), and what stood there.
#[derive(Debug)]
pub enum Blocked {
    Link {
        depth: usize,
    },
    NotADirectory {
        depth: usize,
    },
    Io {
        depth: usize,
        op: &'static str,
        source: io::Error,
    },
}

/// A name from outside (a tree's entry, bytes): one plain component.
fn checked_bytes<'a>(dir: &Path, name: &'a [u8]) -> io::Result<&'a [u8]> {
    if name.is_empty() || name == b"." || name == b".." || name.contains(&b'/') || name.contains(&0)
    {
        return Err(refused(
            &dir.join(OsStr::from_bytes(name)),
            "not a plain file name inside the directory",
        ));
    }
    Ok(name)
}

impl Dir {
    /// The directory at the components `dirs` below this one, each opened
    /// without following a symlink. `None` when one is missing, unless
    /// `create`: then those missing are made (0755, the mode git gives
    /// directories; 0700 until open, so nobody slips in between).
    pub fn dirs_below(&self, dirs: &[Vec<u8>], create: bool) -> Result<Option<Dir>, Blocked> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mut current = self.reopen().map_err(|source| Blocked::Io {
            depth: 0,
            op: "open the work tree",
            source,
        })?;
        for (i, name) in dirs.iter().enumerate() {
            let depth = i + 1;
            let name = checked_bytes(&current.path, name).map_err(|source| Blocked::Io {
                depth,
                op: "open a directory of the work tree",
                source,
            })?;
            let path = current.path.join(OsStr::from_bytes(name));
            let fd = match rustix::fs::openat(&current.fd, name, flags, Mode::empty()) {
                Ok(fd) => fd,
                Err(rustix::io::Errno::NOENT) if create => {
                    match rustix::fs::mkdirat(&current.fd, name, Mode::from_raw_mode(DIR_MODE)) {
                        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                        Err(e) => {
                            return Err(Blocked::Io {
                                depth,
                                op: "make a directory",
                                source: e.into(),
                            });
                        }
                    }
                    let fd = rustix::fs::openat(&current.fd, name, flags, Mode::empty())
                        .map_err(|e| current.blocked(name, depth, e))?;
                    rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o755)).map_err(|e| {
                        Blocked::Io {
                            depth,
                            op: "make a directory",
                            source: e.into(),
                        }
                    })?;
                    fd
                }
                Err(rustix::io::Errno::NOENT) => return Ok(None),
                Err(e) => return Err(current.blocked(name, depth, e)),
            };
            current = Dir { fd, path };
        }
        Ok(Some(current))
    }

    /// Why the directory `name` here could not be opened.
    fn blocked(&self, name: &[u8], depth: usize, e: rustix::io::Errno) -> Blocked {
        let is_link = rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode).is_symlink());
        match e {
            _ if is_link => Blocked::Link { depth },
            rustix::io::Errno::NOTDIR | rustix::io::Errno::LOOP => Blocked::NotADirectory { depth },
            e => Blocked::Io {
                depth,
                op: "open a directory of the work tree",
                source: e.into(),
            },
        }
    }

    /// What stands at `name` here, never following a symlink.
    pub fn entry(&self, name: &[u8]) -> io::Result<Entry> {
        let name = checked_bytes(&self.path, name)?;
        let stat = match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => stat,
            Err(rustix::io::Errno::NOENT) => return Ok(Entry::Missing),
            Err(e) => return Err(e.into()),
        };
        match rustix::fs::FileType::from_raw_mode(stat.st_mode) {
            rustix::fs::FileType::RegularFile => {
                let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
                let fd = rustix::fs::openat(&self.fd, name, flags, Mode::empty())?;
                let mut bytes = Vec::new();
                File::from(fd).read_to_end(&mut bytes)?;
                Ok(Entry::File {
                    bytes,
                    executable: stat.st_mode & 0o111 != 0,
                })
            }
            rustix::fs::FileType::Symlink => {
                let target = rustix::fs::readlinkat(&self.fd, name, Vec::new())?;
                Ok(Entry::Link {
                    target: target.into_bytes(),
                })
            }
            _ => Ok(Entry::Other),
        }
    }

    /// Puts `new` at `name` here: made under a temporary name, then renamed
    /// over whatever stood there (a symlink is replaced, never written
    /// through).
    pub fn place(&self, name: &[u8], new: NewEntry) -> io::Result<()> {
        let name = checked_bytes(&self.path, name)?;
        let temp = format!(
            ".hookd-restore.{}.{}",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let unmade = |e: io::Error| {
            let _ = rustix::fs::unlinkat(&self.fd, temp.as_str(), AtFlags::empty());
            e
        };
        match new {
            NewEntry::Link { target } => rustix::fs::symlinkat(target, &self.fd, temp.as_str())?,
            NewEntry::File { bytes, executable } => {
                let flags = OFlags::WRONLY
                    | OFlags::CREATE
                    | OFlags::EXCL
                    | OFlags::NOFOLLOW
                    | OFlags::CLOEXEC;
                let fd = rustix::fs::openat(
                    &self.fd,
                    temp.as_str(),
                    flags,
                    Mode::from_raw_mode(FILE_MODE),
                )?;
                let mut file = File::from(fd);
                let bits = if executable { 0o755 } else { 0o644 };
                file.write_all(bytes)
                    .and_then(|()| Ok(rustix::fs::fchmod(&file, Mode::from_raw_mode(bits))?))
                    .map_err(unmade)?;
            }
        }
        rustix::fs::renameat(&self.fd, temp.as_str(), &self.fd, name).map_err(|e| unmade(e.into()))
    }
}

/// Cuts a last line that has no newline (what a failed append leaves) and
/// returns the file's length after the cut.
fn repair_torn_tail(file: &File) -> io::Result<u64> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(0);
    }
    let mut last = [0u8; 1];
    file.read_exact_at(&mut last, len - 1)?;
    if last[0] == b'\n' {
        return Ok(len);
    }
    // Look back in chunks for the end of the last whole line.
    const CHUNK: u64 = 64 * 1024;
    let mut end = len;
    let mut buf = vec![0u8; CHUNK as usize];
    while end > 0 {
        let start = end.saturating_sub(CHUNK);
        let chunk = &mut buf[..(end - start) as usize];
        file.read_exact_at(chunk, start)?;
        if let Some(i) = memchr::memrchr(b'\n', chunk) {
            let keep = start + i as u64 + 1;
            file.set_len(keep)?;
            return Ok(keep);
        }
        end = start;
    }
    file.set_len(0)?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn file_at_finds_the_projects_own_files_only() {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("p");
        std::fs::create_dir_all(project.join("src")).unwrap();
        std::fs::write(project.join("src/lib.rs"), "x").unwrap();
        std::fs::write(tmp.path().join("outside.rs"), "x").unwrap();
        std::os::unix::fs::symlink(tmp.path(), project.join("up")).unwrap();
        std::os::unix::fs::symlink(project.join("src/lib.rs"), project.join("link.rs")).unwrap();
        let dir = Dir::open(&project).unwrap();
        assert!(dir.file_at(Path::new("src/lib.rs")).is_some());
        for refused in [
            "../outside.rs",
            "src/../src/lib.rs",
            "up/outside.rs",
            "link.rs",
            "src",
        ] {
            assert!(dir.file_at(Path::new(refused)).is_none(), "{refused}");
        }
        let absolute = tmp.path().join("outside.rs");
        assert!(dir.file_at(&absolute).is_none());
    }

    #[test]
    fn concurrent_appenders_never_cut_each_others_lines() {
        let tmp = tempfile::tempdir().unwrap();
        let writers: Vec<_> = (0..8)
            .map(|w| {
                let path = tmp.path().to_path_buf();
                std::thread::spawn(move || {
                    let dir = Dir::open(&path).unwrap();
                    for n in 0..200 {
                        let line = format!("{w}:{n}:{}", "x".repeat(8000));
                        dir.append_line("events.jsonl", &line).unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        let text = std::fs::read_to_string(tmp.path().join("events.jsonl")).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 8 * 200);
        assert!(lines.iter().all(|l| l.len() > 8000 && l.ends_with('x')));
    }

    #[test]
    fn writes_replace_whole_files_and_leave_no_temp() {
        let root = tempfile::tempdir().unwrap();
        let dir = Dir::open(root.path()).unwrap();
        dir.write_atomic("state.json", b"one").unwrap();
        dir.write_atomic("state.json", b"two").unwrap();
        assert_eq!(
            std::fs::read(root.path().join("state.json")).unwrap(),
            b"two"
        );
        assert_eq!(dir.names().unwrap(), vec!["state.json".to_owned()]);
        assert_eq!(dir.read("state.json", 10).unwrap().unwrap(), b"two");
        assert!(dir.read("absent", 10).unwrap().is_none());
        assert!(dir.read("state.json", 2).is_err(), "over the size limit");
    }

    #[test]
    fn symlinks_are_never_followed() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("bashrc");
        std::fs::write(&target, "keep\n").unwrap();
        std::os::unix::fs::symlink(&target, root.path().join("events.jsonl")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("history")).unwrap();
        let dir = Dir::open(root.path()).unwrap();

        let e = dir.append_line("events.jsonl", "$(touch x)").unwrap_err();
        assert!(e.to_string().contains("symlink"), "{e}");
        assert!(dir.read("events.jsonl", 100).is_err());
        let e = dir.open_dir("history").unwrap_err();
        assert!(e.to_string().contains("symlink"), "{e}");
        assert!(dir.create_dir("history").is_err());
        assert!(dir.open_path(Path::new("history/x")).is_err());
        assert!(dir.open_dir("..").is_err());
        assert!(dir.write_atomic("../x", b"").is_err());
        // Renaming over a link replaces the link itself.
        dir.write_atomic("events.jsonl", b"mine\n").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep\n");
        dir.remove("history").unwrap();
        assert!(outside.path().join("bashrc").exists());
    }

    #[test]
    fn directories_others_can_write_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let (dir, created) = Dir::open(root.path())
            .unwrap()
            .create_dir(".workflow")
            .unwrap();
        assert!(created);
        dir.check_private().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = dir.check_private().unwrap_err();
        assert!(e.to_string().contains("writable by other users"), "{e}");
    }

    #[test]
    fn a_torn_last_line_is_cut_before_the_next_append() {
        let root = tempfile::tempdir().unwrap();
        let dir = Dir::open(root.path()).unwrap();
        std::fs::write(root.path().join("log"), "{\"a\":1}\n{\"kind\":\"x\"").unwrap();
        dir.append_line("log", "{\"b\":2}").unwrap();
        assert_eq!(
            std::fs::read_to_string(root.path().join("log")).unwrap(),
            "{\"a\":1}\n{\"b\":2}\n"
        );
        std::fs::write(root.path().join("torn"), "no newline at all").unwrap();
        dir.append_line("torn", "c").unwrap();
        assert_eq!(
            std::fs::read_to_string(root.path().join("torn")).unwrap(),
            "c\n"
        );
    }
}

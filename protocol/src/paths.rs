//! Where hookd's files live. The socket path is chosen here and nowhere else,
//! in this order:
//!
//! 1. the `--socket` flag;
//! 2. the `HOOKD_SOCKET` environment variable;
//! 3. `$XDG_RUNTIME_DIR/hookd/hookd.sock`;
//! 4. `<state dir>/run/hookd.sock` (`~/.local/state/hookd/run/` on Linux),
//!    or `/tmp/hookd-<uid>/hookd.sock` when that path would be too long for a
//!    Unix socket (used only when it is a real directory of ours, mode 0700).
//!
//! The daemon's lock file and autostart lock sit next to the socket, so every
//! socket has exactly one daemon.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

/// Environment variable naming the socket.
pub const SOCKET_ENV: &str = "HOOKD_SOCKET";
/// Environment variable overriding the state directory (sessions, logs).
pub const STATE_DIR_ENV: &str = "HOOKD_STATE_DIR";
/// Environment variable overriding the config directory (`config.yaml`, templates).
pub const CONFIG_DIR_ENV: &str = "HOOKD_CONFIG_DIR";
/// Environment variable overriding the data directory (cross-task memory).
pub const DATA_DIR_ENV: &str = "HOOKD_DATA_DIR";
/// Environment variable naming the socket a test listens on for the
/// daemon's named events. A daemon hookctl starts never inherits it: the
/// agent's environment, which a project can shape, is not the test's.
pub const TEST_EVENTS_ENV: &str = "HOOKD_TEST_EVENTS";

const SOCKET_NAME: &str = "hookd.sock";

/// Longest socket path we create: `sun_path` holds 108 bytes on Linux and
/// 104 on macOS, including the terminating NUL.
pub const MAX_SOCKET_PATH_BYTES: usize = if cfg!(target_os = "linux") { 107 } else { 103 };

/// Where a socket path came from, for `hookctl status` and `doctor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketSource {
    Flag,
    Env,
    XdgRuntimeDir,
    Fallback,
}

impl std::fmt::Display for SocketSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SocketSource::Flag => "--socket",
            SocketSource::Env => SOCKET_ENV,
            SocketSource::XdgRuntimeDir => "$XDG_RUNTIME_DIR",
            SocketSource::Fallback => "per-user default",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketPath {
    pub path: PathBuf,
    pub source: SocketSource,
}

impl SocketPath {
    /// The daemon's lock file: held for the daemon's whole life.
    pub fn lock_file(&self) -> PathBuf {
        sibling(&self.path, ".pid")
    }

    /// The autostart lock: keeps a burst of hooks from starting two daemons.
    pub fn start_lock_file(&self) -> PathBuf {
        sibling(&self.path, ".start")
    }

    /// True when we chose the directory ourselves (and so may create and
    /// tighten it); a path the user named is used as it is.
    pub fn dir_is_ours(&self) -> bool {
        matches!(
            self.source,
            SocketSource::XdgRuntimeDir | SocketSource::Fallback
        )
    }
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().map(OsString::from).unwrap_or_default();
    name.push(suffix);
    path.with_file_name(name)
}

#[derive(Debug, thiserror::Error)]
pub enum PathError {
    #[error(
        "socket path {path} is {len} bytes, longer than the {max} a Unix socket allows; \
         choose a shorter one with --socket or {SOCKET_ENV}"
    )]
    TooLong {
        path: PathBuf,
        len: usize,
        max: usize,
    },
    #[error("cannot find a home directory for the socket; set {SOCKET_ENV} or XDG_RUNTIME_DIR")]
    NoHome,
}

/// The socket path, resolved from the process environment.
pub fn socket_path(flag: Option<&Path>) -> Result<SocketPath, PathError> {
    resolve_socket_path(flag, |name| std::env::var_os(name), state_dir_default())
}

/// The socket path, with the environment and default state directory given
/// (so tests can check the order without touching the process environment).
pub fn resolve_socket_path(
    flag: Option<&Path>,
    env: impl Fn(&str) -> Option<OsString>,
    default_state_dir: Option<PathBuf>,
) -> Result<SocketPath, PathError> {
    let non_empty = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let chosen = if let Some(flag) = flag {
        SocketPath {
            path: flag.to_path_buf(),
            source: SocketSource::Flag,
        }
    } else if let Some(path) = non_empty(SOCKET_ENV) {
        SocketPath {
            path,
            source: SocketSource::Env,
        }
    } else if let Some(runtime) = non_empty("XDG_RUNTIME_DIR") {
        SocketPath {
            path: runtime.join("hookd").join(SOCKET_NAME),
            source: SocketSource::XdgRuntimeDir,
        }
    } else {
        let state = non_empty(STATE_DIR_ENV)
            .or(default_state_dir)
            .ok_or(PathError::NoHome)?;
        SocketPath {
            path: state.join("run").join(SOCKET_NAME),
            source: SocketSource::Fallback,
        }
    };
    let len = chosen.path.as_os_str().len();
    if len <= MAX_SOCKET_PATH_BYTES {
        return Ok(chosen);
    }
    if chosen.dir_is_ours() {
        // A deep home directory can overflow sun_path; /tmp/hookd-<uid> cannot.
        let short = short_fallback_dir().join(SOCKET_NAME);
        return Ok(SocketPath {
            path: short,
            source: SocketSource::Fallback,
        });
    }
    Err(PathError::TooLong {
        path: chosen.path,
        len,
        max: MAX_SOCKET_PATH_BYTES,
    })
}

fn short_fallback_dir() -> PathBuf {
    fallback_dir_in(&std::env::temp_dir())
}

/// `<tmp>/hookd-<uid>`: the short fallback directory under `tmp`.
fn fallback_dir_in(tmp: &Path) -> PathBuf {
    tmp.join(format!("hookd-{}", effective_uid()))
}

/// Makes the socket's directory ready: one hookd chose is created or made
/// private; one the user named is used as it is, and created only if missing.
pub fn ensure_socket_dir(socket: &SocketPath) -> io::Result<()> {
    prepare_socket_dir(socket, &std::env::temp_dir())
}

/// [`ensure_socket_dir`] with the shared temporary directory given, so that
/// tests need not touch the real `/tmp`.
fn prepare_socket_dir(socket: &SocketPath, tmp: &Path) -> io::Result<()> {
    let dir = socket.path.parent().unwrap_or(Path::new("/"));
    if dir == fallback_dir_in(tmp) {
        ensure_private_dir_in_shared(dir)
    } else if socket.dir_is_ours() || !dir.exists() {
        ensure_private_dir(dir)
    } else {
        Ok(())
    }
}

/// Creates `dir` (mode 0700) in a directory everyone can write, where anyone
/// may have put a link or a directory of their own first. Only a real
/// directory (not a link) of ours that no one else can read or write is
/// accepted; its mode is never changed, so no link is ever followed.
fn ensure_private_dir_in_shared(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
        _ => {}
    }
    let meta = std::fs::symlink_metadata(dir)?;
    let problem = if meta.file_type().is_symlink() {
        "is a symbolic link, not a directory".to_owned()
    } else if !meta.is_dir() {
        "is not a directory".to_owned()
    } else if meta.uid() != effective_uid() {
        format!(
            "belongs to uid {}, not to you (uid {})",
            meta.uid(),
            effective_uid()
        )
    } else if meta.mode() & 0o077 != 0 {
        format!(
            "is mode {:o}: others could reach or replace hookd's socket",
            meta.mode() & 0o777
        )
    } else {
        return Ok(());
    };
    Err(io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "{} {problem}; hookd will not use it. Remove it if it is yours (rm -r {}), \
             or choose another socket directory with {SOCKET_ENV} or XDG_RUNTIME_DIR",
            dir.display(),
            dir.display()
        ),
    ))
}

/// The effective user id of this process.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

fn project_dirs() -> Option<directories::ProjectDirs> {
    directories::ProjectDirs::from("dev", "hookd", "hookd")
}

fn state_dir_default() -> Option<PathBuf> {
    let dirs = project_dirs()?;
    Some(
        dirs.state_dir()
            .unwrap_or_else(|| dirs.data_local_dir())
            .to_path_buf(),
    )
}

fn env_dir(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Daemon state: the session registry and logs (`HOOKD_STATE_DIR`, else the
/// platform's state directory, else its local data directory).
pub fn state_dir() -> Option<PathBuf> {
    env_dir(STATE_DIR_ENV).or_else(state_dir_default)
}

/// User configuration: `config.yaml` and template overrides.
pub fn config_dir() -> Option<PathBuf> {
    env_dir(CONFIG_DIR_ENV).or_else(|| Some(project_dirs()?.config_dir().to_path_buf()))
}

/// Long-lived user data: cross-task memory.
pub fn data_dir() -> Option<PathBuf> {
    env_dir(DATA_DIR_ENV).or_else(|| Some(project_dirs()?.data_dir().to_path_buf()))
}

/// Creates `dir` (and its parents) for private use: mode 0700, owned by us.
/// An existing directory owned by someone else is refused, never used.
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let meta = std::fs::metadata(dir)?;
    if meta.uid() != effective_uid() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} belongs to uid {}, not to us (uid {})",
                dir.display(),
                meta.uid(),
                effective_uid()
            ),
        ));
    }
    if meta.mode() & 0o077 != 0 {
        // chmod follows links: tighten only a real directory.
        if std::fs::symlink_metadata(dir)?.file_type().is_symlink() {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} is a symbolic link to a directory of mode {:o}; hookd does not \
                     change modes through a link: chmod 700 its target yourself",
                    dir.display(),
                    meta.mode() & 0o777
                ),
            ));
        }
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        move |name| map.get(name).cloned()
    }

    fn state() -> Option<PathBuf> {
        Some(PathBuf::from("/home/u/.local/state/hookd"))
    }

    #[test]
    fn flag_wins_over_everything() {
        let e = env(&[
            ("HOOKD_SOCKET", "/e.sock"),
            ("XDG_RUNTIME_DIR", "/run/user/1"),
        ]);
        let p = resolve_socket_path(Some(Path::new("/f.sock")), e, state()).unwrap();
        assert_eq!(
            p,
            SocketPath {
                path: "/f.sock".into(),
                source: SocketSource::Flag
            }
        );
    }

    #[test]
    fn env_comes_second() {
        let e = env(&[
            ("HOOKD_SOCKET", "/e.sock"),
            ("XDG_RUNTIME_DIR", "/run/user/1"),
        ]);
        let p = resolve_socket_path(None, e, state()).unwrap();
        assert_eq!(p.path, PathBuf::from("/e.sock"));
        assert_eq!(p.source, SocketSource::Env);
    }

    #[test]
    fn runtime_dir_third_then_state_dir() {
        let p =
            resolve_socket_path(None, env(&[("XDG_RUNTIME_DIR", "/run/user/1")]), state()).unwrap();
        assert_eq!(p.path, PathBuf::from("/run/user/1/hookd/hookd.sock"));
        let p = resolve_socket_path(None, env(&[("XDG_RUNTIME_DIR", "")]), state()).unwrap();
        assert_eq!(
            p.path,
            PathBuf::from("/home/u/.local/state/hookd/run/hookd.sock")
        );
        assert_eq!(p.source, SocketSource::Fallback);
    }

    #[test]
    fn long_default_paths_fall_back_to_tmp() {
        let deep = PathBuf::from(format!("/home/{}/state", "d".repeat(120)));
        let p = resolve_socket_path(None, env(&[]), Some(deep)).unwrap();
        assert!(
            p.path.starts_with(std::env::temp_dir()),
            "{}",
            p.path.display()
        );
        assert!(p.path.as_os_str().len() <= MAX_SOCKET_PATH_BYTES);
    }

    #[test]
    fn long_explicit_paths_are_an_error_that_says_what_to_do() {
        let long = format!("/tmp/{}.sock", "s".repeat(120));
        let err = resolve_socket_path(Some(Path::new(&long)), env(&[]), state()).unwrap_err();
        assert!(err.to_string().contains("--socket"), "{err}");
    }

    #[test]
    fn lock_files_sit_next_to_the_socket() {
        let p = SocketPath {
            path: "/run/user/1/hookd/hookd.sock".into(),
            source: SocketSource::Fallback,
        };
        assert_eq!(
            p.lock_file(),
            PathBuf::from("/run/user/1/hookd/hookd.sock.pid")
        );
        assert_eq!(
            p.start_lock_file(),
            PathBuf::from("/run/user/1/hookd/hookd.sock.start")
        );
    }

    #[test]
    fn the_tmp_fallback_must_be_a_private_directory_of_ours() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let set_mode = |p: &Path, m: u32| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap()
        };
        // Stands in for /tmp.
        let tmp = tempfile::tempdir().unwrap();
        let dir = fallback_dir_in(tmp.path());
        let socket = SocketPath {
            path: dir.join(SOCKET_NAME),
            source: SocketSource::Fallback,
        };

        // A link planted in its place: refused, and its target left alone.
        let target = tmp.path().join("someone-elses");
        std::fs::create_dir(&target).unwrap();
        set_mode(&target, 0o755);
        std::os::unix::fs::symlink(&target, &dir).unwrap();
        let err = prepare_socket_dir(&socket, tmp.path()).unwrap_err();
        assert!(err.to_string().contains("is a symbolic link"), "{err}");
        assert!(
            err.to_string().contains("HOOKD_SOCKET"),
            "says what to do: {err}"
        );
        assert_eq!(mode(&target), 0o755, "never chmod-ed through the link");
        std::fs::remove_file(&dir).unwrap();

        // A directory others can write: refused, not tightened.
        std::fs::create_dir(&dir).unwrap();
        set_mode(&dir, 0o777);
        let err = prepare_socket_dir(&socket, tmp.path()).unwrap_err();
        assert!(err.to_string().contains("mode 777"), "{err}");
        assert_eq!(mode(&dir), 0o777);
        std::fs::remove_dir(&dir).unwrap();

        // A file in its place.
        std::fs::write(&dir, b"").unwrap();
        let err = prepare_socket_dir(&socket, tmp.path()).unwrap_err();
        assert!(err.to_string().contains("not a directory"), "{err}");
        std::fs::remove_file(&dir).unwrap();

        // Someone else's directory (only root can make one to test with).
        if effective_uid() == 0 {
            std::fs::create_dir(&dir).unwrap();
            set_mode(&dir, 0o700);
            std::os::unix::fs::chown(&dir, Some(4242), None).unwrap();
            let err = prepare_socket_dir(&socket, tmp.path()).unwrap_err();
            assert!(err.to_string().contains("belongs to uid 4242"), "{err}");
            std::fs::remove_dir(&dir).unwrap();
        }

        // Absent: created private, and accepted again as it is.
        prepare_socket_dir(&socket, tmp.path()).unwrap();
        assert_eq!(mode(&dir), 0o700);
        prepare_socket_dir(&socket, tmp.path()).unwrap();
    }

    #[test]
    fn private_dirs_are_never_chmod_ed_through_a_link() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("target");
        std::fs::create_dir(&target).unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755)).unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = ensure_private_dir(&link).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o755);
        // A link to a directory that is private already is fine.
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o700)).unwrap();
        ensure_private_dir(&link).unwrap();
    }

    #[test]
    fn private_dirs_are_0700() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b");
        ensure_private_dir(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        ensure_private_dir(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }
}

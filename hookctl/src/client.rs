//! The connection to hookd: connect, handshake, one request and its reply,
//! and starting the daemon when none answers. All socket code of hookctl
//! lives here; every step honours a deadline.

use interprocess::ConnectWaitMode;
use interprocess::local_socket::traits::Stream as _;
use interprocess::local_socket::{ConnectOptions, GenericFilePath, Stream, ToFsName};
use protocol::frame::{self, FrameError};
use protocol::paths::{SocketPath, ensure_socket_dir};
use protocol::wire::{Call, ErrorKind, ErrorReply, Hello, Request, Response};
use std::ffi::CString;
use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::time::{Duration, Instant};

/// Environment variable naming the hookd binary to autostart.
pub const HOOKD_BIN_ENV: &str = "HOOKD_BIN";

/// How often autostart checks whether the daemon is up.
const START_POLL: Duration = Duration::from_millis(2);

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("hookd is not running on {0}")]
    NotRunning(PathBuf),
    #[error("could not start hookd: {0}")]
    Autostart(String),
    #[error("hookd did not answer in time")]
    Timeout,
    #[error("{0}")]
    Mismatch(String),
    #[error("hookd answered: {0}")]
    Daemon(ErrorReply),
    #[error("{0}")]
    Unexpected(String),
    #[error(transparent)]
    Frame(FrameError),
    #[error("cannot reach hookd: {0}")]
    Io(io::Error),
}

/// hookd answered `what` with something that does not answer it.
pub fn unexpected(what: &str, got: &Response) -> ClientError {
    ClientError::Unexpected(format!("hookd answered {what} with {}", got.describe()))
}

impl From<FrameError> for ClientError {
    fn from(e: FrameError) -> Self {
        if e.is_timeout() {
            ClientError::Timeout
        } else {
            ClientError::Frame(e)
        }
    }
}

pub struct Client {
    stream: Stream,
    deadline: Instant,
}

impl Client {
    /// Connects and shakes hands, or says why not.
    pub fn connect(socket: &Path, deadline: Instant) -> Result<Client, ClientError> {
        let mut client = Client::open(socket, deadline)?;
        if let Err(sent) = frame::write_frame(&mut client.stream, &Hello::current()) {
            // A hookd that refused us may have closed before reading: its reason is waiting.
            client.read_hello()?;
            return Err(sent.into());
        }
        client.read_hello()?;
        Ok(client)
    }

    /// Connects, starting hookd first when none answers and `autostart` is on.
    pub fn connect_or_start(
        socket: &SocketPath,
        deadline: Instant,
        autostart: bool,
    ) -> Result<Client, ClientError> {
        match Client::connect(&socket.path, deadline) {
            Err(ClientError::NotRunning(_)) if autostart => {
                autostart_daemon(socket, deadline)?;
                Client::connect(&socket.path, deadline)
            }
            other => other,
        }
    }

    /// One request on a new connection (starting hookd if allowed), with the
    /// request sent right behind the handshake instead of after its answer:
    /// one round trip to hookd instead of two, which every hook pays. A hookd
    /// of another protocol version answers the handshake with an error and
    /// closes without reading the request, so nothing is misread.
    ///
    /// hookd greets before it starts the work, so a greeting that has not come
    /// within `greeting_within` means a hookd that is stopped or wedged (the
    /// kernel still accepts its connections): waiting on for the answer's whole
    /// budget, up to half a minute for PreCompact, would only stall the agent.
    pub fn one_request(
        socket: &SocketPath,
        deadline: Instant,
        greeting_within: Duration,
        autostart: bool,
        request: &Request,
    ) -> Result<Response, ClientError> {
        let mut client = match Client::open(&socket.path, deadline) {
            Err(ClientError::NotRunning(_)) if autostart => {
                autostart_daemon(socket, deadline)?;
                Client::open(&socket.path, deadline)?
            }
            other => other?,
        };
        let mut both = Vec::new();
        frame::encode_into(&mut both, &Hello::current())?;
        frame::encode_into(&mut both, request)?;
        if let Err(sent) = io::Write::write_all(&mut client.stream, &both) {
            // A hookd that refused the handshake has closed: its reason is waiting to be read.
            client.read_hello()?;
            return Err(ClientError::Io(sent));
        }
        let greeting = Some(remaining(deadline)?.min(greeting_within));
        client
            .stream
            .set_recv_timeout(greeting)
            .map_err(ClientError::Io)?;
        client.read_hello()?;
        client.set_timeouts()?;
        client.read_reply()
    }

    /// The socket connected, with the deadline on every read and write.
    fn open(socket: &Path, deadline: Instant) -> Result<Client, ClientError> {
        let name = socket
            .to_fs_name::<GenericFilePath>()
            .map_err(ClientError::Io)?;
        let stream = ConnectOptions::new()
            .name(name)
            .wait_mode(ConnectWaitMode::Timeout(remaining(deadline)?))
            .connect_sync()
            .map_err(|e| match e.kind() {
                io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused => {
                    ClientError::NotRunning(socket.to_path_buf())
                }
                io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => ClientError::Timeout,
                _ => ClientError::Io(e),
            })?;
        let mut client = Client { stream, deadline };
        client.set_timeouts()?;
        Ok(client)
    }

    /// hookd's answer to our `Hello`.
    fn read_hello(&mut self) -> Result<(), ClientError> {
        match frame::read_message::<_, Response>(&mut self.stream)? {
            Response::Hello(theirs) if theirs.protocol == protocol::PROTOCOL_VERSION => Ok(()),
            Response::Hello(theirs) => Err(ClientError::Mismatch(format!(
                "hookd {} speaks protocol {}, but hookctl {} speaks protocol {}: \
                 restart the daemon (`hookctl daemon restart`) so both are the same version",
                theirs.version,
                theirs.protocol,
                protocol::VERSION,
                protocol::PROTOCOL_VERSION
            ))),
            Response::Error(e) if e.kind == ErrorKind::ProtocolMismatch => {
                Err(ClientError::Mismatch(e.message))
            }
            Response::Error(e) => Err(ClientError::Daemon(e)),
            other => Err(unexpected("the handshake", &other)),
        }
    }

    /// The reply to a request; an `Error` reply becomes `Err`.
    fn read_reply(&mut self) -> Result<Response, ClientError> {
        match frame::read_message::<_, Response>(&mut self.stream)? {
            Response::Error(e) => Err(ClientError::Daemon(e)),
            response => Ok(response),
        }
    }

    /// Asks `call` and returns its answer; any other answer is an error
    /// that says what came back.
    pub fn call<C: Call>(&mut self, call: C) -> Result<C::Reply, ClientError> {
        let response = self.request(&call.request())?;
        C::reply(response).map_err(|other| unexpected(C::WHAT, &other))
    }

    /// Sends one request and returns its reply; an `Error` reply becomes `Err`.
    pub fn request(&mut self, request: &Request) -> Result<Response, ClientError> {
        self.set_timeouts()?;
        frame::write_frame(&mut self.stream, request)?;
        self.read_reply()
    }

    /// Sends `request` and yields every reply that follows, with no deadline
    /// (for `watch`). Ends when hookd closes the connection.
    pub fn stream(
        &mut self,
        request: &Request,
    ) -> Result<impl Iterator<Item = Result<Response, ClientError>> + '_, ClientError> {
        self.set_timeouts()?;
        frame::write_frame(&mut self.stream, request)?;
        self.stream
            .set_recv_timeout(None)
            .map_err(ClientError::Io)?;
        Ok(std::iter::from_fn(move || {
            match frame::read_message::<_, Response>(&mut self.stream) {
                Ok(Response::Error(e)) => Some(Err(ClientError::Daemon(e))),
                Ok(response) => Some(Ok(response)),
                Err(FrameError::Closed) => None,
                Err(e) => Some(Err(e.into())),
            }
        }))
    }

    fn set_timeouts(&mut self) -> Result<(), ClientError> {
        let left = Some(remaining(self.deadline)?);
        self.stream
            .set_recv_timeout(left)
            .map_err(ClientError::Io)?;
        self.stream
            .set_send_timeout(left)
            .map_err(ClientError::Io)?;
        Ok(())
    }
}

fn remaining(deadline: Instant) -> Result<Duration, ClientError> {
    deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
        .ok_or(ClientError::Timeout)
}

/// [`start_daemon`] for a command that found no daemon. A socket directory
/// the person named (`HOOKD_SOCKET`, `--socket`) that does not exist is left
/// alone: a hook must not turn a stale or mistyped path into a directory
/// tree, so it fails open instead. `hookctl daemon start` still creates it.
fn autostart_daemon(socket: &SocketPath, deadline: Instant) -> Result<(), ClientError> {
    let dir = socket.path.parent().unwrap_or(Path::new("/"));
    if !socket.dir_is_ours() && !dir.is_dir() {
        return Err(ClientError::Autostart(format!(
            "{} does not exist (the socket named by {} is in it); \
             create it, or run `hookctl daemon start`",
            dir.display(),
            socket.source
        )));
    }
    start_daemon(socket, deadline)
}

/// Starts hookd for `socket` unless another hookctl is already doing it, and
/// waits until it listens. Budget: the caller's deadline (for hooks, the
/// hook's time budget); `hookd start` itself waits at most 10 s.
///
/// Leaves nothing behind: the autostart lock is removed before it is
/// released, and when hookd could not be started at all, a socket directory
/// of ours that is left empty goes too.
pub fn start_daemon(socket: &SocketPath, deadline: Instant) -> Result<(), ClientError> {
    let start_lock = StartLock::acquire(socket, deadline)?;
    let outcome = run_hookd_start(socket, deadline);
    let still_starting = matches!(outcome, Err(ClientError::Timeout));
    drop(start_lock);
    if outcome.is_err() && !still_starting && socket.dir_is_ours() {
        // Fails, as it should, while anything (another hook's lock) is in it.
        let _ = std::fs::remove_dir(socket.path.parent().unwrap_or(Path::new("/")));
    }
    outcome
}

/// Runs `hookd start` unless hookd already answers, and waits for it.
fn run_hookd_start(socket: &SocketPath, deadline: Instant) -> Result<(), ClientError> {
    // Whoever held the lock before us may have started it already (of
    // whatever version: a handshake would only say more).
    if Client::open(&socket.path, deadline).is_ok() {
        return Ok(());
    }
    let hookd = find_hookd().ok_or_else(|| {
        ClientError::Autostart(format!(
            "no hookd binary next to hookctl or on PATH (set {HOOKD_BIN_ENV} to its path)"
        ))
    })?;
    let mut child = Command::new(&hookd)
        .arg("start")
        .arg("--socket")
        .arg(&socket.path)
        .env_remove(protocol::paths::TEST_EVENTS_ENV)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| ClientError::Autostart(format!("cannot run {}: {e}", hookd.display())))?;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => {
                let mut why = String::new();
                if let Some(mut err) = child.stderr.take() {
                    let _ = io::Read::read_to_string(&mut err, &mut why);
                }
                let why = why.trim().trim_start_matches("hookd: ");
                return Err(ClientError::Autostart(if why.is_empty() {
                    status.to_string()
                } else {
                    why.to_owned()
                }));
            }
            // `hookd start` goes on and the next hook finds the daemon it starts.
            Ok(None) if Instant::now() >= deadline => return Err(ClientError::Timeout),
            Ok(None) => std::thread::sleep(START_POLL),
            Err(e) => return Err(ClientError::Autostart(e.to_string())),
        }
    }
}

/// The autostart lock, held: only its holder runs `hookd start`. The file
/// is unlinked while still locked, so whoever opened it meanwhile finds,
/// once it gets the lock, that it locked a file no longer there, and tries
/// again on a new one; two hooks therefore never both hold the lock.
struct StartLock {
    path: PathBuf,
    _file: File,
}

/// The path of the autostart lock this process holds (a leaked C string),
/// or null: what the hook's watchdog removes when it ends the process.
static HELD_START_LOCK: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());

/// Removes the autostart lock this process holds, if any. Async-signal-safe
/// (an atomic load and unlink(2)): for a watchdog that ends the process
/// while `hookd start` is still under way.
pub fn remove_held_start_lock() {
    let path = HELD_START_LOCK.load(Ordering::SeqCst);
    if !path.is_null() {
        // SAFETY: a NUL-terminated string leaked while the lock is held, never freed.
        unsafe { libc::unlink(path) };
    }
}

/// Runs `f` with SIGALRM (the hook's watchdog) held back, so the watchdog
/// never sees the lock half released.
fn without_watchdog<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: sigset operations on a local set; the old mask is restored.
    unsafe {
        let mut alarm: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut alarm);
        libc::sigaddset(&mut alarm, libc::SIGALRM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &alarm, &mut old);
        let out = f();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        out
    }
}

impl StartLock {
    fn acquire(socket: &SocketPath, deadline: Instant) -> Result<StartLock, ClientError> {
        let path = socket.start_lock_file();
        let dir = socket.path.parent().unwrap_or(Path::new("/"));
        loop {
            ensure_socket_dir(socket).map_err(|e| {
                ClientError::Autostart(format!("cannot create {}: {e}", dir.display()))
            })?;
            match lock_for_start(&path, deadline) {
                Ok(file) if is_same_file(&file, &path) => {
                    if let Ok(c_path) = CString::new(path.as_os_str().as_bytes()) {
                        let leaked = c_path.into_raw();
                        without_watchdog(|| HELD_START_LOCK.store(leaked, Ordering::SeqCst));
                    }
                    return Ok(StartLock { path, _file: file });
                }
                // Removed (with its directory, perhaps) by the hook that held it.
                Ok(_) | Err(LockError::Gone) if Instant::now() < deadline => {
                    std::thread::sleep(START_POLL)
                }
                Ok(_) | Err(LockError::Gone) => return Err(ClientError::Timeout),
                Err(LockError::Failed(e)) => return Err(e),
            }
        }
    }
}

impl Drop for StartLock {
    fn drop(&mut self) {
        // Before the file closes, which releases the lock.
        let leaked = without_watchdog(|| {
            let _ = std::fs::remove_file(&self.path);
            HELD_START_LOCK.swap(std::ptr::null_mut(), Ordering::SeqCst)
        });
        if !leaked.is_null() {
            // SAFETY: made by `CString::into_raw` in `acquire`; no one reads it any more.
            drop(unsafe { CString::from_raw(leaked) });
        }
    }
}

/// True when `path` still names the file `file` has open.
fn is_same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
        _ => false,
    }
}

enum LockError {
    /// The lock file or its directory vanished before it could be opened.
    Gone,
    Failed(ClientError),
}

fn lock_for_start(path: &Path, deadline: Instant) -> Result<File, LockError> {
    let file = match OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(LockError::Gone),
        Err(e) => {
            return Err(LockError::Failed(ClientError::Autostart(format!(
                "cannot open {}: {e}",
                path.display()
            ))));
        }
    };
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(START_POLL)
            }
            Err(TryLockError::WouldBlock) => return Err(LockError::Failed(ClientError::Timeout)),
            Err(TryLockError::Error(e)) => {
                return Err(LockError::Failed(ClientError::Autostart(format!(
                    "cannot lock {}: {e}",
                    path.display()
                ))));
            }
        }
    }
}

/// `$HOOKD_BIN`, else `hookd` next to this executable, else on `PATH`.
pub fn find_hookd() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os(HOOKD_BIN_ENV).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(bin));
    }
    let sibling = std::env::current_exe().ok()?.with_file_name("hookd");
    if sibling.is_file() {
        return Some(sibling);
    }
    find_on_path("hookd")
}

/// The first executable file called `name` in `PATH`.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Asks the daemon on `socket` to stop and waits (at most `wait`) until it
/// is gone. Returns its pid, or `None` when none was running.
pub fn stop_daemon(socket: &SocketPath, wait: Duration) -> anyhow::Result<Option<u32>> {
    let deadline = Instant::now() + wait;
    let mut c = match Client::connect(&socket.path, deadline) {
        Ok(c) => c,
        Err(ClientError::NotRunning(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let pid = c
        .call(protocol::wire::StatusQuery::default())
        .map(|report| report.daemon.pid)
        .unwrap_or_default();
    c.request(&Request::Shutdown)?;
    drop(c);
    // The daemon removes its socket first and releases its lock last.
    let lock = socket.lock_file();
    while lock.exists() || socket.path.exists() {
        if Instant::now() > deadline {
            anyhow::bail!(
                "hookd (pid {pid}) is still shutting down after {}s",
                wait.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(Some(pid))
}

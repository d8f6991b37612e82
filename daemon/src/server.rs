//! The local socket: binding it safely, the handshake, one task per
//! connection, and the drain on shutdown. All interprocess code lives here.

use crate::engine::{Engine, Identity};
use crate::pidlock::{LockError, PidLock};
use crate::shutdown::Shutdown;
use crate::test_events::TestEvent;
use crate::time::now_ms;
use interprocess::local_socket::tokio::{Listener, Stream, prelude::*};
use interprocess::local_socket::{GenericFilePath, ListenerOptions};
use interprocess::os::unix::local_socket::ListenerOptionsExt;
use protocol::config::Layers;
use protocol::frame::{FrameError, decode, read_frame_async, write_frame_async};
use protocol::paths::{SocketPath, effective_uid, ensure_private_dir, ensure_socket_dir};
use protocol::wire::{ErrorKind, ErrorReply, Hello, Request, Response, StatusQuery};
use std::io;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

/// Everything a daemon needs to start.
#[derive(Debug, Clone)]
pub struct DaemonOptions {
    pub socket: SocketPath,
    /// Session registry and logs.
    pub state_dir: PathBuf,
    pub log_dir: Option<PathBuf>,
    /// The daemon's configuration layers (user file, environment, flags);
    /// each request adds its project's file and its hook's environment.
    pub layers: Layers,
    /// Run as root with the socket in a directory others can write to.
    pub allow_shared_dir: bool,
    /// Where the named events a test waits for go (nowhere by default).
    pub test_events: crate::test_events::TestEvents,
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error("a daemon is already answering on {0}; it was left running")]
    LiveSocket(PathBuf),
    #[error("{0} exists and is not a socket; refusing to replace it (choose another --socket)")]
    NotASocket(PathBuf),
    #[error(
        "refusing to run as root with the socket in {0}, which other users can write to; \
         choose a private directory, or pass --allow-shared-dir if you mean it"
    )]
    SharedDirectory(PathBuf),
    #[error("cannot {op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

fn io_error<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> StartError + 'a {
    move |source| StartError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

/// A bound daemon, ready to serve.
pub struct Daemon {
    listener: Listener,
    lock: PidLock,
    socket: PathBuf,
    engine: Arc<Engine>,
    shutdown: Shutdown,
}

impl Daemon {
    /// Takes the lock, clears a stale socket and binds. Must run inside a
    /// tokio runtime.
    pub fn bind(opts: DaemonOptions) -> Result<Daemon, StartError> {
        let socket = opts.socket.path.clone();
        let dir = socket.parent().unwrap_or(Path::new("/"));
        // Our own directory is made private; a directory the user named is
        // used as it is, and created private only if missing.
        ensure_socket_dir(&opts.socket).map_err(io_error("create the socket directory", dir))?;
        if effective_uid() == 0 && !opts.allow_shared_dir && writable_by_others(dir) {
            return Err(StartError::SharedDirectory(dir.to_path_buf()));
        }
        ensure_private_dir(&opts.state_dir)
            .map_err(io_error("create the state directory", &opts.state_dir))?;

        let lock = PidLock::acquire(&opts.socket.lock_file())?;
        clear_stale_socket(&socket)?;
        let listener = listen_at(&socket)?;

        let shutdown = Shutdown::default();
        let identity = Identity {
            pid: std::process::id(),
            started_at_ms: now_ms(),
            socket: socket.clone(),
            state_dir: opts.state_dir.clone(),
            log_dir: opts.log_dir.clone(),
            test_events: opts.test_events.clone(),
        };
        let (config, config_problem) = crate::load_daemon_config(&opts.layers);
        let trust_store = opts.state_dir.join(protocol::trust::STORE_FILE);
        let settings = crate::settings::Settings::new(opts.layers, config, Some(trust_store));
        let engine = Arc::new(Engine::new(identity, settings, shutdown.clone()));
        // Logged only: status says the configuration's problem while it lasts.
        if let Some(problem) = config_problem {
            tracing::error!("{problem}");
        }
        tracing::info!(socket = %socket.display(), pid = std::process::id(), "listening");
        opts.test_events.emit(TestEvent::Listening, "");
        Ok(Daemon {
            listener,
            lock,
            socket,
            engine,
            shutdown,
        })
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    pub fn shutdown_handle(&self) -> Shutdown {
        self.shutdown.clone()
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Serves until shutdown, then drains and cleans up.
    pub async fn serve(self) -> anyhow::Result<()> {
        let Daemon {
            listener,
            lock,
            socket,
            engine,
            shutdown,
        } = self;
        let daemon_config = engine.config().config.daemon.clone();
        let slots = Arc::new(Semaphore::new(daemon_config.max_connections));
        let request_timeout = Duration::from_millis(daemon_config.request_timeout_ms);
        let mut connections = JoinSet::new();
        if daemon_config.idle_timeout_secs > 0 {
            tokio::spawn(idle_watch(
                engine.clone(),
                Duration::from_secs(daemon_config.idle_timeout_secs),
            ));
        }
        tokio::spawn(engine.clone().watch_transcripts());
        tokio::spawn(housekeeping(engine.clone()));

        loop {
            tokio::select! {
                _ = shutdown.wait() => break,
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
                accepted = listener.accept() => match accepted {
                    Ok(conn) => {
                        let slot = tokio::select! {
                            _ = shutdown.wait() => break,
                            slot = slots.clone().acquire_owned() => match slot {
                                Ok(slot) => slot,
                                Err(_) => break,
                            },
                        };
                        let (engine, shutdown) = (engine.clone(), shutdown.clone());
                        connections.spawn(async move {
                            if let Err(e) = serve_connection(conn, &engine, &shutdown, request_timeout).await {
                                tracing::debug!(error = %e, "connection ended with an error");
                            }
                            drop(slot);
                        });
                    }
                    Err(e) => {
                        // Out of file descriptors and the like: back off, keep serving.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
            }
        }

        // Stop accepting first: new hooks then find no socket and fail open.
        drop(listener);
        let _ = std::fs::remove_file(&socket);
        let drain = Duration::from_millis(daemon_config.drain_timeout_ms);
        let in_flight = connections.len();
        if tokio::time::timeout(drain, async {
            while connections.join_next().await.is_some() {}
        })
        .await
        .is_err()
        {
            tracing::warn!(
                left = connections.len(),
                "drain time limit reached; dropping connections"
            );
            connections.shutdown().await;
        }
        engine.stop_sync();
        engine.flush();
        tracing::info!(drained = in_flight, "stopped");
        lock.release();
        Ok(())
    }
}

/// Longest socket path worth trying: `sun_path` holds 104 bytes on macOS,
/// 108 on Linux, the terminating NUL included.
const MAX_SOCKET_PATH: usize = 103;

/// A listener on `socket` whose file appears only once it accepts.
///
/// `bind()` creates the socket file and `listen()` only then makes it accept:
/// a client that sees the file in between is refused as if no daemon were
/// there (a hook then fails open, `hookd start` may already have said the
/// daemon is up). So the listener is bound under a staging name and linked
/// into place (a link never replaces a file that appeared meanwhile).
fn listen_at(socket: &Path) -> Result<Listener, StartError> {
    let mut staging = socket.as_os_str().to_owned();
    staging.push(".new");
    let staging = PathBuf::from(staging);
    if staging.as_os_str().len() > MAX_SOCKET_PATH {
        return bind_listener(socket);
    }
    // One a killed daemon left; the pid lock says no daemon is using it.
    if std::fs::symlink_metadata(&staging).is_ok_and(|m| m.file_type().is_socket()) {
        std::fs::remove_file(&staging).map_err(io_error("remove", &staging))?;
    }
    let listener = bind_listener(&staging)?;
    let linked = std::fs::hard_link(&staging, socket);
    let _ = std::fs::remove_file(&staging);
    match linked {
        Ok(()) => Ok(listener),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(StartError::Io {
            op: "put the socket in place at",
            path: socket.to_path_buf(),
            source: e,
        }),
        // A file system without hard links: bind in place after all.
        Err(_) => {
            drop(listener);
            bind_listener(socket)
        }
    }
}

fn bind_listener(path: &Path) -> Result<Listener, StartError> {
    let name = path
        .to_fs_name::<GenericFilePath>()
        .map_err(io_error("name the socket", path))?;
    ListenerOptions::new()
        .name(name)
        .mode(0o600)
        .reclaim_name(false)
        .create_tokio()
        .map_err(io_error("listen on", path))
}

fn writable_by_others(dir: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(dir).is_ok_and(|m| m.permissions().mode() & 0o022 != 0)
}

/// Removes a socket file only when nothing answers on it.
fn clear_stale_socket(path: &Path) -> Result<(), StartError> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(StartError::Io {
                op: "inspect",
                path: path.to_path_buf(),
                source: e,
            });
        }
        Ok(meta) if !meta.file_type().is_socket() => {
            return Err(StartError::NotASocket(path.to_path_buf()));
        }
        Ok(_) => {}
    }
    let name = path
        .to_fs_name::<GenericFilePath>()
        .map_err(io_error("name the socket", path))?;
    use interprocess::local_socket::traits::Stream as _;
    match interprocess::local_socket::Stream::connect(name) {
        Ok(_) => Err(StartError::LiveSocket(path.to_path_buf())),
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
            tracing::info!(socket = %path.display(), "removing a stale socket");
            std::fs::remove_file(path).map_err(io_error("remove the stale socket", path))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StartError::Io {
            op: "check the socket",
            path: path.to_path_buf(),
            source: e,
        }),
    }
}

/// How long after a change the session registry is written: a burst of
/// changes makes one write.
const FLUSH_EVERY: Duration = Duration::from_secs(1);
/// How often idle sessions are expired.
const EXPIRE_EVERY: Duration = Duration::from_secs(60);

/// Writes the registry after changes and expires idle sessions. Woken by
/// changes, not by a clock: an idle daemon sleeps (one timer a minute).
async fn housekeeping(engine: Arc<Engine>) {
    let mut changes = engine.subscribe();
    let mut expire = tokio::time::interval(EXPIRE_EVERY);
    loop {
        tokio::select! {
            _ = engine.shutdown().wait() => return,
            changed = changes.changed() => {
                if changed.is_err() {
                    return;
                }
                tokio::select! {
                    _ = engine.shutdown().wait() => return,
                    _ = tokio::time::sleep(FLUSH_EVERY) => {}
                }
                changes.borrow_and_update();
                let e = engine.clone();
                let _ = tokio::task::spawn_blocking(move || e.flush()).await;
            }
            _ = expire.tick() => engine.expire_sessions(),
        }
    }
}

async fn idle_watch(engine: Arc<Engine>, idle: Duration) {
    loop {
        let idle_ms = idle.as_millis() as u64;
        let since = now_ms().saturating_sub(engine.last_activity_ms());
        if since >= idle_ms {
            engine.shutdown().trigger("idle timeout");
            return;
        }
        tokio::time::sleep(Duration::from_millis(idle_ms - since)).await;
    }
}

/// The peer must be the same user as the daemon (where the OS says who it is).
fn check_peer(conn: &Stream) -> Result<(), String> {
    match conn.peer_creds() {
        Ok(creds) => match creds.euid() {
            Some(uid) if uid != effective_uid() => Err(format!(
                "connection refused: uid {uid} is not the daemon's user (uid {})",
                effective_uid()
            )),
            _ => Ok(()),
        },
        // No credentials on this platform: the 0600 socket in a 0700 directory still guards it.
        Err(_) => Ok(()),
    }
}

async fn send(conn: &Stream, response: &Response) -> Result<(), FrameError> {
    let mut writer = conn;
    write_frame_async(&mut writer, response).await
}

/// `watch`: a status now, then one whenever something changes, until the
/// client hangs up or the daemon stops.
async fn stream_status<R: AsyncBufRead + Unpin>(
    conn: &Stream,
    reader: &mut R,
    engine: &Arc<Engine>,
    shutdown: &Shutdown,
    query: StatusQuery,
) -> Result<(), FrameError> {
    let mut changes = engine.subscribe();
    loop {
        changes.borrow_and_update();
        send(conn, &Response::Status(Box::new(engine.status(&query)))).await?;
        tokio::select! {
            _ = shutdown.wait() => return Ok(()),
            changed = changes.changed() => if changed.is_err() { return Ok(()) },
            // Anything from the client (or its hanging up) ends the stream.
            _ = reader.fill_buf() => return Ok(()),
        }
        // Coalesce bursts: at most a few updates a second.
        tokio::time::sleep(WATCH_MIN_INTERVAL).await;
    }
}

/// Least time between two `watch` updates.
const WATCH_MIN_INTERVAL: Duration = Duration::from_millis(100);

async fn serve_connection(
    conn: Stream,
    engine: &Arc<Engine>,
    shutdown: &Shutdown,
    request_timeout: Duration,
) -> Result<(), FrameError> {
    if let Err(message) = check_peer(&conn) {
        tracing::warn!("{message}");
        return send(
            &conn,
            &Response::Error(ErrorReply::new(ErrorKind::Unavailable, message)),
        )
        .await;
    }
    let peer_pid = conn
        .peer_creds()
        .ok()
        .and_then(|c| c.pid())
        .and_then(|pid| u32::try_from(pid).ok())
        .filter(|pid| *pid > 0);
    let mut reader = BufReader::new(&conn);
    let Some(frame) = next_frame(&mut reader, shutdown, request_timeout).await? else {
        return Ok(());
    };
    let hello: Hello = decode(&frame)?;
    if hello.protocol != protocol::PROTOCOL_VERSION {
        let message = format!(
            "hookctl {} speaks protocol {}, but the running hookd {} speaks protocol {}: \
             restart the daemon (`hookctl daemon restart`) so both are the same version",
            hello.version,
            hello.protocol,
            protocol::VERSION,
            protocol::PROTOCOL_VERSION
        );
        return send(
            &conn,
            &Response::Error(ErrorReply::new(ErrorKind::ProtocolMismatch, message)),
        )
        .await;
    }
    send(&conn, &Response::Hello(Hello::current())).await?;

    while let Some(frame) = next_frame(&mut reader, shutdown, request_timeout).await? {
        let response = match decode::<Request>(&frame) {
            Ok(Request::Watch(query)) => {
                return stream_status(&conn, &mut reader, engine, shutdown, query).await;
            }
            Ok(request) => engine.handle(request, peer_pid).await,
            Err(e) => {
                let reply = Response::Error(ErrorReply::new(ErrorKind::BadRequest, e.to_string()));
                return send(&conn, &reply).await;
            }
        };
        send(&conn, &response).await?;
    }
    Ok(())
}

/// The next frame, or `None` when the client is done, idle too long, or the
/// daemon is stopping. A request whose first byte has arrived is in flight:
/// shutdown lets it finish (within the request timeout).
async fn next_frame<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    shutdown: &Shutdown,
    request_timeout: Duration,
) -> Result<Option<Vec<u8>>, FrameError> {
    let waiting = tokio::time::timeout(request_timeout, reader.fill_buf());
    tokio::select! {
        _ = shutdown.wait() => return Ok(None),
        ready = waiting => match ready {
            Err(_) => return Ok(None),
            Ok(Err(e)) => return Err(e.into()),
            Ok(Ok([])) => return Ok(None),
            Ok(Ok(_)) => {}
        },
    }
    match tokio::time::timeout(request_timeout, read_frame_async(reader)).await {
        Err(_) => Ok(None),
        Ok(Err(FrameError::Closed)) => Ok(None),
        Ok(frame) => frame.map(Some),
    }
}

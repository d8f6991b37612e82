//! Named events a test can block on instead of polling: the daemon sends one
//! datagram per event (`saved threshold 0.80`) to the Unix socket named by
//! `HOOKD_TEST_EVENTS` in its own environment, which only the test sandbox
//! sets (hookctl's autostart removes it from the daemon it starts). Unset,
//! every `emit` is one branch. A datagram is only sent to a socket someone
//! already listens on: nothing is ever created or written.

use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// The variable naming the socket, read from the daemon's own environment
/// only (never from a hook's environment nor a project's configuration).
pub const ENV: &str = protocol::paths::TEST_EVENTS_ENV;

/// The points tests wait for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TestEvent {
    /// The socket is bound and the daemon is about to serve.
    Listening,
    /// A line was appended to a project's `events.jsonl`; the detail is its kind.
    Recorded,
    /// A save finished and its mark is on the session; the detail is its trigger.
    Saved,
    /// A save that asked for a checkpoint finished; the detail is `ok` or `failed`.
    Checkpoint,
    /// The watcher took a changed session file in.
    FileRead,
    /// Cross-task memory work that goes on after a hook's answer ended.
    MemoryDone,
}

impl TestEvent {
    pub const ALL: [TestEvent; 6] = [
        TestEvent::Listening,
        TestEvent::Recorded,
        TestEvent::Saved,
        TestEvent::Checkpoint,
        TestEvent::FileRead,
        TestEvent::MemoryDone,
    ];

    pub fn name(self) -> &'static str {
        match self {
            TestEvent::Listening => "listening",
            TestEvent::Recorded => "recorded",
            TestEvent::Saved => "saved",
            TestEvent::Checkpoint => "checkpoint",
            TestEvent::FileRead => "file-read",
            TestEvent::MemoryDone => "memory-done",
        }
    }

    /// The event a datagram names, and its detail (`""` for none).
    pub fn parse(datagram: &str) -> Option<(TestEvent, &str)> {
        let (name, detail) = datagram.split_once(' ').unwrap_or((datagram, ""));
        let event = TestEvent::ALL.into_iter().find(|e| e.name() == name)?;
        Some((event, detail))
    }
}

/// Where the daemon sends its events: nowhere unless a test asked.
#[derive(Clone, Default)]
pub struct TestEvents {
    target: Option<Arc<Target>>,
}

impl std::fmt::Debug for TestEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("TestEvents")
            .field(&self.target.as_ref().map(|t| &t.path))
            .finish()
    }
}

struct Target {
    /// Made at the first event: `hookd start` closes every descriptor
    /// inherited across its fork, and the events are sent after it.
    socket: OnceLock<Option<UnixDatagram>>,
    path: PathBuf,
}

impl TestEvents {
    /// The socket `HOOKD_TEST_EVENTS` names in this process's environment.
    pub fn from_env() -> TestEvents {
        std::env::var_os(ENV)
            .filter(|path| !path.is_empty())
            .map(|path| TestEvents::to_socket(Path::new(&path)))
            .unwrap_or_default()
    }

    /// Events sent to the datagram socket at `path`.
    pub fn to_socket(path: &Path) -> TestEvents {
        TestEvents {
            target: Some(Arc::new(Target {
                socket: OnceLock::new(),
                path: path.to_path_buf(),
            })),
        }
    }

    pub fn emit(&self, event: TestEvent, detail: &str) {
        let Some(target) = &self.target else {
            return;
        };
        let datagram = if detail.is_empty() {
            event.name().to_owned()
        } else {
            format!("{} {detail}", event.name())
        };
        let socket = target.socket.get_or_init(|| {
            let socket = UnixDatagram::unbound().ok()?;
            // Never wait on a test that stopped reading.
            socket.set_nonblocking(true).ok()?;
            Some(socket)
        });
        // Lost when nobody listens: the test waiting for it says so.
        if let Some(socket) = socket {
            let _ = socket.send_to(datagram.as_bytes(), &target.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_datagram_names_its_event_and_detail() {
        assert_eq!(
            TestEvent::parse("saved threshold 0.80"),
            Some((TestEvent::Saved, "threshold 0.80"))
        );
        assert_eq!(
            TestEvent::parse("listening"),
            Some((TestEvent::Listening, ""))
        );
        assert_eq!(TestEvent::parse("nonsense"), None);
    }

    #[test]
    fn an_event_reaches_the_socket_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.sock");
        let listener = UnixDatagram::bind(&path).unwrap();
        TestEvents::to_socket(&path).emit(TestEvent::Recorded, "threshold");
        let mut buf = [0u8; 64];
        let n = listener.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"recorded threshold");
    }

    #[test]
    fn unset_sends_nothing_and_fails_nothing() {
        TestEvents::default().emit(TestEvent::Saved, "manual");
        let dir = tempfile::tempdir().unwrap();
        // Nobody listening: the event is dropped, the daemon goes on.
        TestEvents::to_socket(&dir.path().join("none.sock")).emit(TestEvent::Saved, "");
    }
}

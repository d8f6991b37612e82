//! The daemon's named events (`hookd::test_events`), received on a
//! datagram socket in the sandbox, so that a test blocks until the daemon
//! says it did a thing instead of polling for a sign of it.

use hookd::test_events::TestEvent;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a test waits for an event before it fails, naming it.
pub const EVENT_DEADLINE: Duration = Duration::from_secs(10);

/// The events the sandbox's daemons sent, in order.
pub struct EventStream {
    path: PathBuf,
    received: Mutex<Received>,
    stop: Arc<AtomicBool>,
}

struct Received {
    incoming: Receiver<String>,
    /// Every event so far, and whether a wait already took it.
    log: Vec<(String, bool)>,
}

impl EventStream {
    /// Listens at `path` (a socket path, short enough for one).
    pub fn bind(path: &Path) -> EventStream {
        let socket = UnixDatagram::bind(path).expect("bind the test events socket");
        socket
            .set_read_timeout(Some(Duration::from_millis(100)))
            .expect("read timeout");
        let (tx, incoming) = channel();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 4096];
            while !stopped.load(Ordering::Relaxed) {
                if let Ok(n) = socket.recv(&mut buf) {
                    let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                    if tx.send(text).is_err() {
                        return;
                    }
                }
            }
        });
        EventStream {
            path: path.to_path_buf(),
            received: Mutex::new(Received {
                incoming,
                log: Vec::new(),
            }),
            stop,
        }
    }

    /// The socket the daemon is told to send to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Blocks until the daemon sends `event` with a detail starting with
    /// `detail` that no earlier wait took, and returns the whole detail;
    /// fails the test after [`EVENT_DEADLINE`], naming what it waited for
    /// and what came instead.
    pub fn wait_for(&self, event: TestEvent, detail: &str) -> String {
        self.wait_within(EVENT_DEADLINE, event, detail)
            .unwrap_or_else(|seen| {
                panic!(
                    "waited {EVENT_DEADLINE:?} for the daemon's `{} {detail}` event; \
                     it sent only {seen:?}",
                    event.name()
                )
            })
    }

    /// [`EventStream::wait_for`] with a deadline; `Err` holds every event
    /// received so far.
    pub fn wait_within(
        &self,
        within: Duration,
        event: TestEvent,
        detail: &str,
    ) -> Result<String, Vec<String>> {
        let deadline = Instant::now() + within;
        let mut received = self.received.lock().unwrap_or_else(|p| p.into_inner());
        let matches = |text: &str| {
            TestEvent::parse(text).is_some_and(|(e, d)| e == event && d.starts_with(detail))
        };
        loop {
            if let Some((text, taken)) = received
                .log
                .iter_mut()
                .find(|(text, taken)| !*taken && matches(text))
            {
                *taken = true;
                let (_, found) = TestEvent::parse(text).unwrap_or((event, ""));
                return Ok(found.to_owned());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match received.incoming.recv_timeout(left) {
                Ok(text) => received.log.push((text, false)),
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                    return Err(received.log.iter().map(|(t, _)| t.clone()).collect());
                }
            }
        }
    }

    /// Blocks until `holds` is true, looking again each time the daemon
    /// sends `event` (for work several events may end, as the memory's);
    /// fails the test after [`EVENT_DEADLINE`], naming the event and `what`
    /// was waited for.
    pub fn wait_until_after(&self, event: TestEvent, what: &str, mut holds: impl FnMut() -> bool) {
        let deadline = Instant::now() + EVENT_DEADLINE;
        while !holds() {
            let left = deadline.saturating_duration_since(Instant::now());
            if let Err(seen) = self.wait_within(left, event, "") {
                // One last look: it may have held since.
                assert!(
                    holds(),
                    "waited {EVENT_DEADLINE:?} for {what} after the daemon's `{}` events; \
                     it sent {seen:?}",
                    event.name()
                );
                return;
            }
        }
    }

    /// How many `event`s with a detail starting with `detail` came so far,
    /// taken or not, without waiting.
    pub fn count(&self, event: TestEvent, detail: &str) -> usize {
        let mut received = self.received.lock().unwrap_or_else(|p| p.into_inner());
        while let Ok(text) = received.incoming.try_recv() {
            received.log.push((text, false));
        }
        received
            .log
            .iter()
            .filter(|(text, _)| {
                TestEvent::parse(text).is_some_and(|(e, d)| e == event && d.starts_with(detail))
            })
            .count()
    }
}

impl Drop for EventStream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

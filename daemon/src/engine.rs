//! The daemon's core: what it knows and how it answers each request. The
//! socket server hands requests in; tests can call [`Engine::handle`] directly.

use crate::harness::{self, Outcome};
use crate::sessions::Registry;
use crate::shutdown::Shutdown;
use crate::time::now_ms;
use protocol::config::Effective;
use protocol::wire::{
    DaemonInfo, ErrorKind, ErrorReply, HookRequest, Request, Response, StatusQuery, StatusReport,
};
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Facts about this daemon process that do not change while it runs.
#[derive(Debug, Clone)]
pub struct Identity {
    pub pid: u32,
    pub started_at_ms: u64,
    pub socket: PathBuf,
    pub state_dir: PathBuf,
    pub log_dir: Option<PathBuf>,
}

pub struct Engine {
    identity: Identity,
    config: Effective,
    sessions: Mutex<Registry>,
    events_handled: AtomicU64,
    last_activity_ms: AtomicU64,
    shutdown: Shutdown,
    warnings: Mutex<Vec<String>>,
}

impl Engine {
    pub fn new(identity: Identity, config: Effective, shutdown: Shutdown) -> Self {
        Engine {
            last_activity_ms: AtomicU64::new(identity.started_at_ms),
            identity,
            config,
            sessions: Mutex::new(Registry::default()),
            events_handled: AtomicU64::new(0),
            shutdown,
            warnings: Mutex::new(Vec::new()),
        }
    }

    pub fn config(&self) -> &Effective {
        &self.config
    }

    pub fn shutdown(&self) -> &Shutdown {
        &self.shutdown
    }

    /// Records a problem for `hookctl status` to show.
    pub fn add_warning(&self, warning: String) {
        let mut warnings = self.warnings.lock().unwrap_or_else(|p| p.into_inner());
        if !warnings.contains(&warning) {
            warnings.push(warning);
        }
    }

    /// Milliseconds since the epoch of the last request.
    pub fn last_activity_ms(&self) -> u64 {
        self.last_activity_ms.load(Ordering::Relaxed)
    }

    /// Answers one request.
    pub async fn handle(&self, request: Request) -> Response {
        self.last_activity_ms.store(now_ms(), Ordering::Relaxed);
        match request {
            Request::Ping => Response::Pong,
            Request::Shutdown => {
                self.shutdown.trigger("shutdown request");
                Response::Ok
            }
            Request::Status(query) => Response::Status(Box::new(self.status(&query))),
            Request::Hook(hook) => self.hook(hook).await,
        }
    }

    async fn hook(&self, request: HookRequest) -> Response {
        let event = match harness::parse(&request) {
            Ok(event) => event,
            Err(e) => {
                return Response::Error(ErrorReply::new(ErrorKind::BadPayload, e.to_string()));
            }
        };
        self.events_handled.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(
            harness = %event.harness,
            event = %event.kind.kebab(),
            session = event.session_id.as_deref().unwrap_or("-"),
            "hook"
        );
        tracing::trace!(payload = request.payload.get(), "hook payload");
        {
            let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
            if sessions.observe(&event, now_ms()).is_none() {
                tracing::debug!(event = %event.kind.kebab(), "hook without a session id");
            }
        }
        let outcome = Outcome {
            notes: event.problems.clone(),
            ..Outcome::default()
        };
        Response::Hook(harness::render(&event, outcome))
    }

    pub fn status(&self, query: &StatusQuery) -> StatusReport {
        let now = now_ms();
        let sessions = self
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .statuses(query.session.as_deref());
        StatusReport {
            daemon: DaemonInfo {
                version: protocol::VERSION.to_owned(),
                protocol: protocol::PROTOCOL_VERSION,
                pid: self.identity.pid,
                started_at_ms: self.identity.started_at_ms,
                uptime_secs: now.saturating_sub(self.identity.started_at_ms) / 1000,
                socket: self.identity.socket.clone(),
                state_dir: self.identity.state_dir.clone(),
                log_dir: self.identity.log_dir.clone(),
                events_handled: self.events_handled.load(Ordering::Relaxed),
                warnings: self
                    .warnings
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone(),
            },
            sessions,
        }
    }
}

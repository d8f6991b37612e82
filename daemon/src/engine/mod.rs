//! The daemon's core: what it knows about each session and how it answers
//! each request. The socket server hands requests in; tests can call
//! [`Engine::handle`] directly.

mod budget;
mod checkpoints;
mod hook;
mod memory;
mod requests;
mod resume;
mod saves;
mod status;
mod statusline;
mod sync;
mod synced;

use crate::harness::{Cursor, Usage};
use crate::resources::Resources;
use crate::sessions::{PendingResume, Registry, Session, SessionKey, SummaryToken};
use crate::settings::Settings;
use crate::shutdown::Shutdown;
use crate::test_events::TestEvent;
use crate::time::now_ms;
use crate::watch::TranscriptWatcher;
use protocol::config::Effective;
use protocol::wire::{Request, Response};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::sessions::context_of;
use crate::sessions::empty_context;
use tokio::sync::{mpsc, watch};

/// Facts about this daemon process that do not change while it runs.
#[derive(Debug, Clone)]
pub struct Identity {
    pub pid: u32,
    pub started_at_ms: u64,
    pub socket: PathBuf,
    pub state_dir: PathBuf,
    pub log_dir: Option<PathBuf>,
    pub test_events: crate::test_events::TestEvents,
}

pub struct Engine {
    identity: Identity,
    settings: Arc<Settings>,
    sessions: Mutex<Registry>,
    /// How many times the registry's lock was taken (see `registry`): the
    /// engine's tests hold it to one or two per unit of work.
    #[cfg(test)]
    registry_locks: AtomicU64,
    /// Where each session's file is read from next, so that a hook or a
    /// file change reads before it takes the registry's lock (once).
    read_points: Mutex<HashMap<SessionKey, ReadPoint>>,
    registry_file: PathBuf,
    /// The registry changed since it was last written.
    dirty: AtomicBool,
    flushing: Mutex<()>,
    /// Bumped on every change `watch` clients should see.
    changes: watch::Sender<u64>,
    watcher: TranscriptWatcher,
    watch_rx: Mutex<Option<mpsc::UnboundedReceiver<PathBuf>>>,
    events_handled: AtomicU64,
    last_activity_ms: AtomicU64,
    shutdown: Shutdown,
    warnings: Mutex<Vec<String>>,
    /// Configuration problems already said to the person, by the layer
    /// that holds them.
    said_problems: Mutex<std::collections::HashMap<ConfigSource, String>>,
    /// The locks, caches and open memories of the blocking work.
    resources: Arc<Resources>,
    /// Pushes and pulls, and how they went.
    sync: Arc<crate::sync::worker::SyncWorker>,
}

/// Something to record in a project's `events.jsonl`, gathered under the
/// registry lock and written after it is released.
struct ProjectEvent {
    project: PathBuf,
    session: SessionKey,
    event: crate::events::LogEvent,
}

/// Where a session's file is read from next, and what its file watcher
/// needs to decide with the hooks' configuration: a copy of the session's
/// own fields, kept outside the registry's lock.
#[derive(Debug, Clone, Default)]
struct ReadPoint {
    transcript: Option<PathBuf>,
    cursor: Option<Cursor>,
    usage: Option<Usage>,
    project: Option<PathBuf>,
    config_env: BTreeMap<String, String>,
}

impl ReadPoint {
    fn entry(s: &Session) -> (SessionKey, ReadPoint) {
        let point = ReadPoint {
            transcript: s.transcript_path.clone(),
            cursor: s.cursor.clone(),
            usage: s.usage.clone(),
            project: s.project_dir.clone(),
            config_env: s.config_env.clone(),
        };
        (s.key.clone(), point)
    }
}

/// What one unit of work's effects need of its session, copied out while
/// the registry is locked for the decision, so that carrying them out
/// never takes the lock again.
#[derive(Debug, Clone)]
pub(super) struct SessionView {
    key: SessionKey,
    project: Option<PathBuf>,
    working_dir: Option<PathBuf>,
    transcript: Option<PathBuf>,
    context: Option<protocol::wire::ContextStatus>,
    epoch: u32,
    summary_token: Option<SummaryToken>,
    resume_pending: Option<PendingResume>,
    follow_watch: Option<crate::sessions::FollowWatch>,
}

impl SessionView {
    fn of(s: &Session, config: &protocol::config::Config) -> Self {
        SessionView {
            key: s.key.clone(),
            project: s.project_dir.clone(),
            working_dir: s.working_dir.clone(),
            transcript: s.transcript_path.clone(),
            context: context_of(s, config),
            epoch: s.epoch,
            summary_token: s.live_summary_token(),
            resume_pending: s.resume_pending.clone(),
            follow_watch: s.follow_watch.clone(),
        }
    }
}

/// Where a broken configuration is: the user's file, a `HOOKD_*` variable
/// of the hook's environment, or a project's `.hookd.yaml`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum ConfigSource {
    User,
    Environment,
    Project(Option<PathBuf>),
}

impl Engine {
    pub fn new(identity: Identity, settings: Settings, shutdown: Shutdown) -> Self {
        let registry_file = identity.state_dir.join(crate::sessions::REGISTRY_FILE);
        let (registry, registry_problem) = Registry::load(&registry_file);
        let (watcher, watch_rx, watch_problem) = TranscriptWatcher::start();
        let resources = Arc::new(Resources::in_state_dir(&identity.state_dir));
        // The tasks this machine begins carry its name; the lessons of
        // another machine's name theirs.
        let named = settings.daemon().config.sync.machine_name.clone();
        resources
            .memories
            .set_machine(&crate::sync::Machine::name(named.as_deref()));
        let settings = Arc::new(settings);
        let syncing = {
            let sync = &settings.daemon().config.sync;
            sync.remote.is_some() || sync.memory_remote.is_some()
        };
        if syncing {
            // The first save with sync on redacts: its hook should not wait
            // for the rules to compile.
            let _ = std::thread::Builder::new()
                .name("hookd-secret-rules".into())
                .spawn(|| {
                    let _ = crate::secrets::redact("");
                });
        }
        let sync = {
            let settings = settings.clone();
            crate::sync::worker::SyncWorker::new(
                &identity.state_dir,
                Arc::new(move || settings.daemon().config.clone()),
                resources.clone(),
            )
        };
        let engine = Engine {
            last_activity_ms: AtomicU64::new(identity.started_at_ms),
            identity,
            settings,
            read_points: Mutex::new(registry.iter().map(ReadPoint::entry).collect()),
            sessions: Mutex::new(registry),
            #[cfg(test)]
            registry_locks: AtomicU64::new(0),
            registry_file,
            dirty: AtomicBool::new(false),
            flushing: Mutex::new(()),
            changes: watch::channel(0).0,
            watcher,
            watch_rx: Mutex::new(Some(watch_rx)),
            events_handled: AtomicU64::new(0),
            shutdown,
            warnings: Mutex::new(Vec::new()),
            said_problems: Mutex::new(Default::default()),
            resources,
            sync,
        };
        for problem in [registry_problem, watch_problem].into_iter().flatten() {
            tracing::warn!("{problem}");
            engine.add_warning(problem);
        }
        let active: Vec<(SessionKey, PathBuf)> = engine
            .registry()
            .iter()
            .filter(|s| !s.ended)
            .filter_map(|s| Some((s.key.clone(), s.transcript_path.clone()?)))
            .collect();
        for (key, path) in active {
            engine.follow(&key, &path);
        }
        engine
    }

    /// The one way to the registry's lock: each unit of work takes it once
    /// to decide and at most once more to take in what its effects did.
    fn registry(&self) -> MutexGuard<'_, Registry> {
        #[cfg(test)]
        self.registry_locks.fetch_add(1, Ordering::Relaxed);
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn read_points(&self) -> MutexGuard<'_, HashMap<SessionKey, ReadPoint>> {
        self.read_points.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Notes where `s`'s file is read from next. Called with the registry
    /// locked, so the two never disagree for long.
    fn note_read_point(&self, s: &Session) {
        let (key, point) = ReadPoint::entry(s);
        self.read_points().insert(key, point);
    }

    pub fn config(&self) -> Arc<Effective> {
        self.settings.daemon()
    }

    pub fn shutdown(&self) -> &Shutdown {
        &self.shutdown
    }

    /// Whether the configuration layer `source` is broken anew: said
    /// once, and again only once fixed and broken again.
    pub(super) fn newly_broken(&self, source: &ConfigSource, problem: &str) -> bool {
        let mut said = self.said_problems.lock().unwrap_or_else(|p| p.into_inner());
        said.insert(source.clone(), problem.to_owned()).as_deref() != Some(problem)
    }

    /// A request whose configuration loaded: the user's file, the hook's
    /// environment and this project's file are fine now.
    pub(super) fn fixed(&self, project: Option<&Path>) {
        let mut said = self.said_problems.lock().unwrap_or_else(|p| p.into_inner());
        said.remove(&ConfigSource::User);
        said.remove(&ConfigSource::Environment);
        said.remove(&ConfigSource::Project(project.map(Path::to_path_buf)));
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

    /// A receiver that changes whenever a session does.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn touch(&self) {
        self.dirty.store(true, Ordering::Relaxed);
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Writes the registry if it changed. Called periodically, for a new
    /// session, and at shutdown. The registry lock is held only to copy it
    /// out; the flush lock keeps an older copy from landing after a newer one.
    pub fn flush(&self) {
        let _one_writer = self.flushing.lock().unwrap_or_else(|p| p.into_inner());
        if !self.dirty.swap(false, Ordering::Relaxed) {
            return;
        }
        // A statement of its own: the guard goes before the disk is touched.
        let bytes = self.registry().to_bytes();
        let result = bytes.and_then(|b| crate::fsutil::write_atomic(&self.registry_file, &b));
        if let Err(e) = result {
            self.dirty.store(true, Ordering::Relaxed);
            tracing::warn!(file = %self.registry_file.display(), error = %e, "cannot save the session registry");
        }
    }

    /// Ends idle sessions and forgets old ones.
    pub fn expire_sessions(&self) {
        let daemon = self.settings.daemon();
        let config = &daemon.config.sessions;
        let removed = self.registry().expire(
            now_ms(),
            config.idle_expiry_secs * 1000,
            config.keep_ended_secs * 1000,
            config.max_sessions,
        );
        for key in &removed {
            self.watcher.unfollow(key);
            self.read_points().remove(key);
        }
        if !removed.is_empty() {
            self.touch();
        }
    }

    fn follow(&self, key: &SessionKey, transcript: &Path) {
        match self.watcher.follow(key, transcript) {
            Ok(()) | Err(None) => {}
            Err(Some(problem)) => {
                tracing::warn!("{problem}");
                self.add_warning(problem);
            }
        }
    }

    /// Answers one request.
    /// `peer_pid`: the client's process, where the OS says which it is.
    pub async fn handle(self: &Arc<Self>, request: Request, peer_pid: Option<u32>) -> Response {
        self.last_activity_ms.store(now_ms(), Ordering::Relaxed);
        match request {
            Request::Ping => Response::Pong,
            Request::Shutdown => {
                self.shutdown.trigger("shutdown request");
                Response::Ok
            }
            Request::Status(query) | Request::Watch(query) => {
                Response::Status(Box::new(self.status(&query)))
            }
            Request::StatusLine(request) => self.statusline(request),
            Request::Hook(hook) => self.hook(hook, peer_pid).await,
            Request::Record(request) => self.record_request(request).await,
            Request::Resume(query) => self.resume_request(query, true).await,
            Request::Validate(query) => self.resume_request(query, false).await,
            Request::Save(query) => self.save_now(query).await,
            Request::Checkpoints(query) => self.checkpoints_request(query).await,
            Request::CheckpointShow(rev) => self.checkpoint_show_request(rev).await,
            Request::CheckpointRestore(q) => self.restore_request(q).await,
            Request::ContextBudget(query) => self.budget_request(query).await,
            Request::ContextScore(query) => self.score_request(query).await,
            Request::Summarize(query) => self.summarize_request(query).await,
            Request::ContextReport(query) => self.report_request(query).await,
            // Cross-task memory.
            request @ (Request::Reflect(_) | Request::Task(_) | Request::Memory(_)) => {
                self.memory_request(request).await
            }
            Request::Sync(request) => self.sync_request(request).await,
        }
    }

    /// Follows transcripts between hooks: refreshes the sessions whose
    /// files changed. Runs until the watcher's channel closes.
    pub async fn watch_transcripts(self: Arc<Self>) {
        let Some(mut rx) = self
            .watch_rx
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        else {
            return;
        };
        while let Some(batch) = crate::watch::next_batch(&mut rx).await {
            for path in batch {
                for key in self.watcher.sessions_for(&path) {
                    let Some((project, env)) = self
                        .read_points()
                        .get(&key)
                        .map(|p| (p.project.clone(), p.config_env.clone()))
                    else {
                        continue;
                    };
                    // The configuration the session's hooks have, their
                    // environment included.
                    let (config, _) = self.settings.for_request(project.as_deref(), &env);
                    self.on_file_change(&key, &config.config).await;
                    self.identity.test_events.emit(TestEvent::FileRead, "");
                    self.touch();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;

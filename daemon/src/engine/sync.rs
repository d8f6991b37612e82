//! Sync for the engine: the background push after a checkpoint, and
//! `hookctl sync push|pull|status`. The sync settings are the daemon's own
//! (the user's file and the daemon's environment), never a hook's.

use super::Engine;
use protocol::sync::{SyncAction, SyncReport, SyncRequest};
use protocol::wire::{ErrorKind, ErrorReply, Response};
use std::path::Path;

impl Engine {
    /// After a save that made or kept a checkpoint of `project`: its push,
    /// in the background, when `sync.remote` is set. Returns at once.
    pub(super) fn sync_after_checkpoint(&self, project: &Path) {
        let sync = self.settings.daemon().config.sync.clone();
        self.sync.after_checkpoint(project, &sync);
    }

    /// The daemon is stopping: every git run of sync is stopped with it.
    pub fn stop_sync(&self) {
        self.sync.stop();
    }

    /// Sync as it is, for `hookctl status`: none when sync is off.
    pub(super) fn sync_status(&self) -> Option<SyncReport> {
        let sync = self.settings.daemon().config.sync.clone();
        (sync.remote.is_some() || sync.memory_remote.is_some())
            .then(|| self.sync.report(&sync, None))
    }

    /// `hookctl sync push|pull|status`: push and pull answer when done.
    pub(super) async fn sync_request(&self, request: SyncRequest) -> Response {
        let sync = self.settings.daemon().config.sync.clone();
        if request.action != SyncAction::Status
            && sync.remote.is_none()
            && sync.memory_remote.is_none()
        {
            return Response::Error(ErrorReply::new(
                ErrorKind::BadRequest,
                "sync is off: set sync.remote (a git remote's name) and/or sync.memory_remote (a URL) in your hookd config".to_owned(),
            ));
        }
        let worker = self.sync.clone();
        let done = tokio::task::spawn_blocking(move || {
            let project = request.project.as_deref();
            match request.action {
                SyncAction::Push => {
                    if let (Some(p), Some(_)) = (project, &sync.remote) {
                        worker.push_project(p, &sync);
                    }
                    worker.push_memory(&sync);
                }
                SyncAction::Pull => {
                    if let (Some(p), Some(_)) = (project, &sync.remote) {
                        worker.pull_project(p, &sync);
                    }
                    worker.pull_memory(&sync);
                }
                SyncAction::Status => {}
            }
            worker.report(&sync, project)
        })
        .await;
        match done {
            Ok(report) => Response::Sync(Box::new(report)),
            Err(e) => Response::Error(ErrorReply::new(
                ErrorKind::Internal,
                format!("the sync task failed: {e}"),
            )),
        }
    }
}

//! `hookctl checkpoints`, `checkpoint show` and `checkpoint restore`: git
//! work off the async threads, its errors turned into replies.

use super::Engine;
use crate::git::{self, GitError};
use crate::sync::{Machine, import};
use protocol::wire::{
    CheckpointQuery, CheckpointRev, ErrorKind, ErrorReply, Response, RestoreQuery, RestoreSummary,
};

impl Engine {
    pub(super) async fn checkpoints_request(&self, query: CheckpointQuery) -> Response {
        let (config, _) = self
            .settings
            .for_request(Some(&query.project), &Default::default());
        let limit = query.limit.unwrap_or(50);
        let prefix = config.config.checkpoint.ref_prefix.clone();
        let repositories = self.resources.repositories.clone();
        let me = self.this_machine(&config.config);
        let ledger = crate::sync::Ledger::in_state_dir(&self.identity.state_dir);
        blocking(move || {
            repositories.bounded(&query.project.clone(), git::GIT_DEADLINE, move |_| {
                let mut list = git::list_checkpoints(&query.project, &prefix, limit)?;
                // Only other machines' checkpoints a pull brought.
                let pulled = me.as_ref().map(|_| {
                    ledger.read().unwrap_or_else(|why| {
                        tracing::warn!("{why}; other machines' checkpoints are not listed");
                        Default::default()
                    })
                });
                if let (Some(me), Some(pulled)) = (me, pulled) {
                    list.extend(import::other_checkpoints(
                        &query.project,
                        &me,
                        &pulled,
                        limit,
                    )?);
                    list.sort_by(|a, b| b.time_ms.cmp(&a.time_ms).then_with(|| a.sha.cmp(&b.sha)));
                    list.truncate(limit);
                }
                Ok(Response::Checkpoints(list))
            })
        })
        .await
    }

    /// This machine, when the user turned sync on (another machine's
    /// checkpoints are listed then).
    fn this_machine(&self, config: &protocol::config::Config) -> Option<Machine> {
        config.sync.remote.as_ref()?;
        Machine::for_sync(&self.identity.state_dir, &config.sync)
            .map_err(|why| tracing::warn!("{why}"))
            .ok()
    }

    pub(super) async fn checkpoint_show_request(&self, rev: CheckpointRev) -> Response {
        let (config, _) = self
            .settings
            .for_request(Some(&rev.project), &Default::default());
        let prefix = config.config.checkpoint.ref_prefix.clone();
        let repositories = self.resources.repositories.clone();
        blocking(move || {
            repositories.bounded(&rev.project.clone(), git::GIT_DEADLINE, move |_| {
                let mut detail = git::show(&rev.project, &rev.rev, &prefix)?;
                // Another machine's checkpoint is on that machine's ref.
                if detail.summary.machine.is_some()
                    && let Some(reference) = git::synced::ref_holding(
                        &rev.project,
                        crate::sync::SYNC_REFS,
                        &detail.summary.sha,
                    )?
                {
                    detail.summary.reference = reference;
                }
                Ok(Response::Checkpoint(Box::new(detail)))
            })
        })
        .await
    }

    pub(super) async fn restore_request(&self, q: RestoreQuery) -> Response {
        let repositories = self.resources.repositories.clone();
        blocking(move || {
            repositories.bounded(&q.project.clone(), git::GIT_DEADLINE, move |_| {
                git::restore(&q.project, &q.rev, &q.paths, q.force)
                    .map(|restored| Response::Restored(RestoreSummary { restored }))
            })
        })
        .await
    }
}

/// Runs blocking git work off the async threads; errors become replies.
async fn blocking(work: impl FnOnce() -> Result<Response, GitError> + Send + 'static) -> Response {
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => {
            let kind = match e {
                GitError::UnknownRevision(_)
                | GitError::NotARepository { .. }
                | GitError::NotInCheckpoint { .. } => ErrorKind::NotFound,
                GitError::WouldOverwrite(_)
                | GitError::Bare { .. }
                | GitError::WorkTreeElsewhere { .. }
                | GitError::UnsafePath { .. }
                | GitError::UnsafeRef { .. }
                | GitError::UnsafeFile { .. }
                | GitError::TooBigToCheck { .. }
                | GitError::ForeignRef(_) => ErrorKind::BadRequest,
                GitError::TimedOut { .. } | GitError::Stuck { .. } => ErrorKind::Unavailable,
                _ => ErrorKind::Internal,
            };
            Response::Error(ErrorReply::new(kind, e.to_string()))
        }
        Err(e) => Response::Error(ErrorReply::new(
            ErrorKind::Internal,
            format!("the git task failed: {e}"),
        )),
    }
}

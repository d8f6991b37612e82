//! `hookctl status` and `watch`: the daemon and its sessions.

use super::Engine;
use crate::sessions::context_of;
use crate::time::now_ms;
use protocol::wire::{DaemonInfo, StatusQuery, StatusReport};
use std::sync::atomic::Ordering;

impl Engine {
    pub fn status(&self, query: &StatusQuery) -> StatusReport {
        let now = now_ms();
        let sessions = {
            let registry = self.registry();
            registry
                .matching(query.session.as_deref())
                .into_iter()
                .map(|s| {
                    let (config, _) = self
                        .settings
                        .for_request(s.project_dir.as_deref(), &Default::default());
                    let mut status = s.status(context_of(s, &config.config));
                    status.notes.extend(s.point_note(&config.config));
                    status
                })
                .collect()
        };
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
                warnings: {
                    // The configuration's problem as it is now, not as it was.
                    let mut warnings = self.settings.user_problem().into_iter().collect::<Vec<_>>();
                    warnings.extend(
                        self.warnings
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .iter()
                            .cloned(),
                    );
                    warnings
                },
            },
            sessions,
            sync: self.sync_status(),
        }
    }
}

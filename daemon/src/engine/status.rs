//! `hookctl status` and `watch`: the daemon and its sessions, and how full
//! each session's context is by its harness's rules.

use super::Engine;
use crate::harness;
use crate::sessions::Session;
use crate::time::now_ms;
use protocol::config::Config;
use protocol::pressure::Advice;
use protocol::wire::{ContextStatus, DaemonInfo, StatusQuery, StatusReport};
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
                    s.status(context_of(s, &config.config))
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

/// How full a session's context is, by the rules of its harness.
pub fn context_of(session: &Session, config: &Config) -> Option<ContextStatus> {
    let usage = session.usage.as_ref()?;
    Some(context_for(session, config, usage.tokens))
}

pub(super) fn empty_context(session: &Session, config: &Config) -> ContextStatus {
    context_for(session, config, 0)
}

fn context_for(session: &Session, config: &Config, tokens: u64) -> ContextStatus {
    let point = harness::compaction_point(&session.facts(), &config.window);
    let pressure = tokens as f64 / point.tokens.max(1) as f64;
    ContextStatus {
        tokens_used: tokens,
        tokens_max: point.tokens,
        window_tokens: point.window,
        pressure,
        window_fraction: tokens as f64 / point.window.max(1) as f64,
        basis: point.basis,
        source: session.usage_source.as_str().to_owned(),
        advice: Advice::for_pressure(pressure),
        updated_at_ms: session.usage_at_ms,
        invalid: session.usage.as_ref().and_then(|u| u.invalid.clone()),
    }
}

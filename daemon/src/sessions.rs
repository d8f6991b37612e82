//! The registry of agent sessions, keyed by harness and session id.

use crate::harness::HookEvent;
use protocol::wire::{Harness, SessionStatus};
use std::collections::HashMap;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionKey {
    pub harness: Harness,
    pub id: String,
}

#[derive(Debug, Clone)]
pub struct Session {
    pub key: SessionKey,
    pub project_dir: Option<PathBuf>,
    pub transcript_path: Option<PathBuf>,
    pub last_event: String,
    pub last_event_at_ms: u64,
    pub events_seen: u64,
    pub ended: bool,
}

#[derive(Debug, Default)]
pub struct Registry {
    sessions: HashMap<SessionKey, Session>,
}

impl Registry {
    /// Records one event; returns the session it belongs to (if it names one).
    pub fn observe(&mut self, event: &HookEvent, now_ms: u64) -> Option<&mut Session> {
        let id = event.session_id.clone()?;
        let key = SessionKey {
            harness: event.harness,
            id,
        };
        let session = self.sessions.entry(key.clone()).or_insert_with(|| Session {
            key,
            project_dir: None,
            transcript_path: None,
            last_event: String::new(),
            last_event_at_ms: 0,
            events_seen: 0,
            ended: false,
        });
        if event.project_dir.is_some() {
            session.project_dir.clone_from(&event.project_dir);
        }
        if event.transcript_path.is_some() {
            session.transcript_path.clone_from(&event.transcript_path);
        }
        session.last_event = event.kind.kebab().into_owned();
        session.last_event_at_ms = now_ms;
        session.events_seen += 1;
        session.ended = matches!(event.kind, crate::harness::EventKind::SessionEnd);
        Some(session)
    }

    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Sessions whose id starts with `filter` (all when `None`), most recent first.
    pub fn statuses(&self, filter: Option<&str>) -> Vec<SessionStatus> {
        let mut out: Vec<SessionStatus> = self
            .sessions
            .values()
            .filter(|s| filter.is_none_or(|f| s.key.id.starts_with(f)))
            .map(|s| SessionStatus {
                harness: s.key.harness.as_str().to_owned(),
                session_id: s.key.id.clone(),
                project_dir: s.project_dir.clone(),
                transcript_path: s.transcript_path.clone(),
                last_event: Some(s.last_event.clone()),
                last_event_at_ms: s.last_event_at_ms,
                events_seen: s.events_seen,
                ended: s.ended,
            })
            .collect();
        out.sort_by(|a, b| {
            b.last_event_at_ms
                .cmp(&a.last_event_at_ms)
                .then_with(|| a.session_id.cmp(&b.session_id))
        });
        out
    }
}

//! A new session's start in a repository where another machine saved newer
//! work on the branch: the model is told once per synced state, in a short
//! paragraph, how to pick it up (`hookctl resume --print`). The whole
//! prompt is not injected: the person may have started the session for
//! other work, and the command renders it checked against the repository
//! when they choose, and takes the state in for the rest of hookd.

use super::{Engine, SessionView};
use crate::harness::{Event, HookEvent, Outcome, StartSource};
use crate::resume::{self, Loaded};
use crate::sync::import;
use crate::workflow::Workflow;
use protocol::config::Config;
use std::sync::Arc;

impl Engine {
    /// SessionStart(startup): the offer of a newer synced state, if any.
    pub(super) async fn offer_synced_on_start(
        self: &Arc<Self>,
        view: &SessionView,
        event: &HookEvent,
        config: &Config,
        outcome: &mut Outcome,
    ) {
        let starts = matches!(
            event.event,
            Event::SessionStart {
                source: Some(StartSource::Startup)
            }
        );
        if !starts || event.agent_id.is_some() || config.sync.remote.is_none() {
            return;
        }
        let (Some(project), Some(state_dir)) =
            (view.project.clone(), self.resources.state_dir.clone())
        else {
            return;
        };
        let (config, resources) = (config.clone(), self.resources.clone());
        let work = move || {
            let synced = super::resume::synced_state(&resources, &project, &config, true)?;
            let workflow = Workflow::new(&project);
            let own = match resume::load(&workflow, None, &resources.saved_states) {
                Loaded::Found { state, .. } => Some(state),
                _ => None,
            };
            if !import::is_newer(&synced, own.as_deref()) {
                return None;
            }
            let record = state_dir.join(import::OFFERED_FILE);
            let lock = resources.projects.for_path(&record);
            let _held = lock.lock().unwrap_or_else(|p| p.into_inner());
            match import::first_offer(&state_dir, &synced.commit) {
                Ok(true) => Some(import::offer_words(&synced)),
                Ok(false) => None,
                Err(e) => {
                    tracing::warn!(file = %record.display(), error = %e, "cannot remember which synced states were offered; not offering one");
                    None
                }
            }
        };
        if let Ok(Some(words)) = tokio::task::spawn_blocking(work).await {
            outcome.add_context(words);
        }
    }
}

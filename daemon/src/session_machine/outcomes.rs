//! What the engine's effects did, taken into the session: a save's result,
//! a resume prompt injected, an arrival check's and a follow check's
//! verdicts, a summary merged. The engine carries its effects out with the
//! registry unlocked and hands their results here under its second lock.

use crate::sessions::{FollowWatch, PendingResume, Session, SummaryToken};
use protocol::wire::Mark;

/// How a save went.
#[derive(Debug, Clone, PartialEq)]
pub struct Saved {
    /// What started it, in the words `hookctl status` shows.
    pub what: String,
    pub ok: bool,
    /// What went wrong first; otherwise the state file written.
    pub detail: Option<String>,
    /// The first step left out by design, with why.
    pub skipped: Option<String>,
    /// The checkpoint, when one was asked for.
    pub checkpoint: Option<CheckpointTaken>,
    /// A PreCompact's save: the token its compaction's summary must carry
    /// (none: no block is let in).
    pub compaction_token: Option<Option<String>>,
}

/// A checkpoint asked for: made (its name) or not (why).
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointTaken {
    pub made: bool,
    pub detail: Option<String>,
}

/// A save finished at `now`.
pub fn on_saved(s: &mut Session, saved: Saved, now: u64) {
    if let Some(checkpoint) = saved.checkpoint {
        s.last_checkpoint = Some(Mark {
            at_ms: now,
            what: saved.what.clone(),
            ok: checkpoint.made,
            detail: checkpoint.detail,
            skipped: None,
        });
    }
    s.last_save = Some(Mark {
        at_ms: now,
        what: saved.what,
        ok: saved.ok,
        detail: saved.detail,
        skipped: saved.skipped,
    });
    s.mark_save_in_history();
    if let Some(token) = saved.compaction_token {
        // A new compaction: only its own token lets a block in.
        s.summary_token = token.map(|token| SummaryToken {
            token,
            epoch: s.epoch,
            used_by: None,
        });
    }
}

/// A resume prompt handed to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Injected {
    /// The SessionStart source it answered (`compact`, `resume`).
    pub source: String,
    pub marker: String,
    pub prompt: String,
    /// Whether to look for it in the session's file afterwards.
    pub verify_arrival: bool,
    /// What following it means; judged for a compaction's prompt only.
    pub follow: Option<FollowWatch>,
}

/// A resume prompt went in at `now`; returns the epoch it belongs to.
pub fn on_resume_injected(s: &mut Session, injected: Injected, now: u64) -> u32 {
    s.resume = Some(Mark {
        at_ms: now,
        what: format!("injected on {}", injected.source),
        ok: true,
        detail: Some(injected.marker.clone()),
        skipped: None,
    });
    s.resume_pending = injected.verify_arrival.then(|| PendingResume {
        marker: injected.marker.clone(),
        prompt: injected.prompt,
        injected_at_ms: now,
        reinjected: false,
    });
    // Judged per compaction: a plain `--resume` has none.
    let from_offset = s.cursor.as_ref().map(|c| c.offset);
    let epoch = s.epoch;
    s.follow_watch = injected
        .follow
        .filter(|_| injected.source == "compact")
        .map(|watch| FollowWatch {
            epoch,
            marker: injected.marker,
            from_offset,
            ..watch
        });
    epoch
}

/// A compaction summary was merged with the session's summary token
/// `token`: that token lets no other block in.
pub fn on_summary_merged(s: &mut Session, token: &str, fingerprint: &str) {
    if let Some(live) = s.summary_token.as_mut()
        && live.token == token
    {
        live.used_by = Some(fingerprint.to_owned());
    }
}

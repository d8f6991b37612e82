//! What the engine's effects did, taken into the session: a save's result,
//! a resume prompt injected, an arrival check's and a follow check's
//! verdicts, a summary merged. The engine carries its effects out with the
//! registry unlocked and hands their results here under its second lock.

use crate::harness::StartSource;
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
    if saved.compaction_token.is_some()
        && crate::harness::adapter(s.key.harness).compacts_at_precompact_resumes_at_stop()
    {
        // Its PreCompact's figure was the context before the compaction it
        // announced, now saved; no later hook of it carries one.
        s.usage = None;
    }
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
    /// The SessionStart source it answered.
    pub source: StartSource,
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
        what: if injected.verify_arrival || s.transcript_path.is_some() {
            format!("injected on {}", injected.source.as_str())
        } else {
            // No session file says whether it reached the model.
            format!(
                "injected on {}; arrival unconfirmed",
                injected.source.as_str()
            )
        },
        ok: true,
        detail: Some(injected.marker.clone()),
        skipped: None,
    });
    s.resume_pending = injected.verify_arrival.then(|| PendingResume {
        marker: injected.marker.clone(),
        prompt: injected.prompt,
        injected_at_ms: now,
        reinjected: false,
        checking_since_ms: None,
    });
    // Judged per compaction: a plain `--resume` has none.
    let from_offset = s.cursor.as_ref().map(|c| c.offset);
    let epoch = s.epoch;
    s.follow_watch = injected
        .follow
        .filter(|_| injected.source == StartSource::Compact)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sessions::SessionKey;
    use protocol::wire::Harness;

    fn session() -> Session {
        Session::new(
            SessionKey {
                harness: Harness::ClaudeCode,
                id: "s".into(),
            },
            0,
        )
    }

    fn saved(ok: bool) -> Saved {
        Saved {
            what: "pre-compact manual".into(),
            ok,
            detail: Some(if ok { "state.json" } else { "capture failed" }.into()),
            skipped: None,
            checkpoint: Some(CheckpointTaken {
                made: ok,
                detail: Some("abc123".into()),
            }),
            compaction_token: Some(Some("tok".into())),
        }
    }

    #[test]
    fn a_save_sets_its_marks_and_a_pre_compact_save_its_compactions_token() {
        let mut s = session();
        on_saved(&mut s, saved(true), 10);
        let save = s.last_save.clone().unwrap();
        assert_eq!(
            (save.at_ms, save.ok, save.what.as_str()),
            (10, true, "pre-compact manual")
        );
        assert_eq!(s.last_checkpoint.as_ref().map(|m| m.ok), Some(true));
        let token = s.summary_token.clone().unwrap();
        assert_eq!((token.token.as_str(), token.epoch), ("tok", 1));
        // A save that is not a PreCompact's leaves the token alone.
        on_saved(
            &mut s,
            Saved {
                checkpoint: None,
                compaction_token: None,
                ..saved(false)
            },
            20,
        );
        assert!(!s.last_save.as_ref().unwrap().ok);
        assert_eq!(s.last_checkpoint.as_ref().map(|m| m.at_ms), Some(10));
        assert!(s.summary_token.is_some());
        // A PreCompact's save without a token lets no block in.
        on_saved(
            &mut s,
            Saved {
                compaction_token: Some(None),
                ..saved(true)
            },
            30,
        );
        assert!(s.summary_token.is_none());
    }

    #[test]
    fn an_injected_prompt_waits_for_its_arrival_and_only_a_compactions_is_judged() {
        let follow = FollowWatch {
            files: vec!["src/a.rs".into()],
            ..FollowWatch::default()
        };
        let injected = |source: StartSource, verify_arrival| Injected {
            source,
            marker: "[m]".into(),
            prompt: "the prompt".into(),
            verify_arrival,
            follow: Some(follow.clone()),
        };
        let mut s = session();
        s.epoch = 3;
        assert_eq!(
            on_resume_injected(&mut s, injected(StartSource::Compact, true), 50),
            3
        );
        let pending = s.resume_pending.clone().unwrap();
        assert_eq!((pending.injected_at_ms, pending.reinjected), (50, false));
        let watch = s.follow_watch.clone().unwrap();
        assert_eq!((watch.epoch, watch.marker.as_str()), (3, "[m]"));
        assert_eq!(s.resume.as_ref().unwrap().what, "injected on compact");

        let mut s = session();
        on_resume_injected(&mut s, injected(StartSource::Resume, false), 50);
        assert!(s.resume_pending.is_none(), "not looked for");
        assert!(s.follow_watch.is_none(), "a plain resume is not judged");
    }

    #[test]
    fn a_merged_summary_uses_up_only_its_own_token() {
        let mut s = session();
        s.summary_token = Some(SummaryToken {
            token: "tok".into(),
            epoch: 1,
            used_by: None,
        });
        on_summary_merged(&mut s, "older", "f0");
        assert_eq!(s.summary_token.as_ref().unwrap().used_by, None);
        on_summary_merged(&mut s, "tok", "f1");
        assert_eq!(
            s.summary_token.as_ref().unwrap().used_by.as_deref(),
            Some("f1")
        );
    }
}

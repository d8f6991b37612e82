//! What a reading of the session's file, a launch point, a compaction and
//! a save do to a session: the epoch rules and the history of readings.

use crate::harness::{Boundary, Cursor, Method, SessionReading};
use crate::sessions::{EpochStart, HISTORY_POINTS, Session, UsageSource};
use protocol::wire::{ContextPoint, PointMark};

/// Where nothing names a compaction, a guess: a hook after it with no
/// PreCompact before it belongs to the epoch this recent, and a boundary
/// that never comes is given up on after this long. A boundary names its
/// compaction (by uuid, or a hook's epoch still waiting for one).
const SAME_COMPACTION_MS: u64 = 120_000;

impl Session {
    /// Takes in a reading of the session's own file: the figure, the model,
    /// and the window and compaction point the harness reported. Returns
    /// the compactions it showed that began an epoch, each with whether a
    /// hook had announced it; `None` when the reading is older than what the
    /// session has already seen.
    pub fn take_reading(
        &mut self,
        taken: SessionReading,
        now_ms: u64,
    ) -> Option<Vec<(Boundary, bool)>> {
        let reading = taken.reading;
        let stale = self.cursor.as_ref().is_some_and(|c| {
            c.dev == reading.cursor.dev
                && c.ino == reading.cursor.ino
                && c.offset > reading.cursor.offset
        });
        if stale {
            return None;
        }
        self.transcript_problem = None;
        if taken.window.is_some() {
            self.reported_window = taken.window;
        }
        if taken.compaction_point.is_some() {
            if taken.compaction_point != self.harness_point {
                // A point set where hookd reads it beats one it guessed.
                self.learned_point = None;
            }
            self.harness_point = taken.compaction_point;
        }
        let mut began = Vec::new();
        for mut boundary in reading.boundaries {
            if !self.is_new_boundary(&boundary, &reading.cursor) {
                continue;
            }
            let announced = self.compaction_announced_ms.is_some();
            if boundary.trigger.is_none() && (announced || self.awaiting_boundary) {
                // The file does not say; the hook that announced it did.
                boundary.trigger.clone_from(&self.announced_trigger);
            }
            if boundary.trigger == Some(crate::harness::Trigger::Auto) {
                self.auto_compacted_at = boundary.pre_tokens;
            }
            // A boundary the hooks already opened an epoch for only names it.
            let began_one = self.begin_epoch(&EpochStart::Boundary(boundary.clone()), now_ms);
            // Its trigger is said; a later compaction must not inherit it.
            self.announced_trigger = None;
            if began_one {
                self.compaction_announced_ms = None;
                began.push((boundary, announced));
            }
        }
        if reading.method != Method::Unchanged {
            if let Some(model) = reading.usage.as_ref().and_then(|u| u.model.clone()) {
                self.model = Some(model);
            }
            if reading.usage.is_some() && reading.usage != self.usage {
                self.usage_source = match &reading.usage {
                    Some(u) if u.from_boundary => UsageSource::Compaction,
                    _ => UsageSource::Reply,
                };
                self.usage_at_ms = now_ms;
                if let Some(u) = reading.usage.as_ref().filter(|u| u.invalid.is_none()) {
                    self.add_point(u.tokens, now_ms, None);
                }
            }
            self.usage = reading.usage;
        }
        self.cursor = Some(reading.cursor);
        Some(began)
    }

    /// Whether a compaction record read from the file at `cursor` was not
    /// taken before: the file only grows, so a record at or before the
    /// latest one taken is that one or an older one read again (two
    /// readings of the same lines, or a reading from the end after a
    /// restart).
    fn is_new_boundary(&mut self, boundary: &Boundary, cursor: &Cursor) -> bool {
        let Some(at) = crate::harness::adapter(self.key.harness).boundary_offset(boundary) else {
            return true;
        };
        let same_file = |t: &Cursor| t.dev == cursor.dev && t.ino == cursor.ino;
        if self
            .boundaries_taken_to
            .as_ref()
            .is_some_and(|t| same_file(t) && at <= t.offset)
        {
            return false;
        }
        self.boundaries_taken_to = Some(Cursor {
            offset: at,
            dev: cursor.dev,
            ino: cursor.ino,
        });
        true
    }

    /// Takes in where the harness process that ran a hook compacts. A
    /// point learned from a compaction goes when a point hookd can read
    /// appears or changes, and when another process runs the session.
    pub fn take_launch(&mut self, launch: crate::harness::Launch) {
        let other_process = launch.process.is_some()
            && self.launch_process.is_some()
            && launch.process != self.launch_process;
        let new_point = launch.point.is_some() && launch.point != self.launch_point;
        if other_process || new_point {
            self.learned_point = None;
        }
        if launch.process.is_some() {
            self.launch_process = launch.process;
        }
        self.launch_point = launch.point;
        // A point an older hookd read from the session's file is not one.
        self.harness_point = None;
    }

    /// Whether a compaction is under way that the session's file does not
    /// show yet (announced by PreCompact, or opened by a hook before its
    /// boundary was written): a figure read now is from before it.
    pub fn compaction_in_flight(&self, now_ms: u64) -> bool {
        let since = |at: u64| now_ms.saturating_sub(at) < SAME_COMPACTION_MS;
        self.compaction_announced_ms.is_some_and(since)
            || (self.awaiting_boundary && since(self.epoch_started_ms))
    }

    /// Starts a new epoch unless this compaction already started one.
    /// Returns whether a new epoch began, or a compaction's record showed
    /// that the drop which began this one was that compaction.
    pub fn begin_epoch(&mut self, start: &EpochStart, now_ms: u64) -> bool {
        let recent =
            now_ms.saturating_sub(self.epoch_started_ms) < SAME_COMPACTION_MS && self.epoch > 1;
        match start {
            EpochStart::Boundary(b) => {
                if b.uuid.is_some() && b.uuid == self.epoch_boundary {
                    return false;
                }
                // A client that writes its compaction's record after the
                // first small figure (Copilot CLI, in batches) showed this
                // compaction as a drop first: it is that epoch's, which
                // only now is known to be a compaction.
                if self.epoch_by_drop
                    && now_ms.saturating_sub(self.epoch_started_ms) < SAME_COMPACTION_MS
                {
                    self.epoch_by_drop = false;
                    self.epoch_boundary = b.uuid.clone();
                    self.mark_next = Some(PointMark::Compaction);
                    return true;
                }
                // A hook opened this epoch and its compaction's record
                // follows within moments; one that never came must not
                // swallow the next compaction, so the wait is bounded.
                if self.awaiting_boundary
                    && now_ms.saturating_sub(self.epoch_started_ms) >= SAME_COMPACTION_MS
                {
                    self.awaiting_boundary = false;
                }
                if self.awaiting_boundary && self.epoch_boundary.is_none() {
                    // A hook already opened this epoch; now we know its boundary.
                    self.epoch_boundary = b.uuid.clone();
                    self.awaiting_boundary = false;
                    return false;
                }
                self.epoch_boundary = b.uuid.clone();
            }
            EpochStart::Hook(_) => {
                // A PreCompact since this epoch began announced another one.
                if recent && self.compaction_announced_ms.is_none() {
                    return false;
                }
                self.epoch_boundary = None;
            }
            EpochStart::Drop { .. } => self.epoch_boundary = None,
        }
        if !matches!(start, EpochStart::Drop { .. }) {
            self.mark_next = Some(PointMark::Compaction);
        }
        self.awaiting_boundary = matches!(start, EpochStart::Hook(_));
        self.epoch_by_drop = matches!(start, EpochStart::Drop { .. });
        self.epoch += 1;
        self.epoch_started_ms = now_ms;
        self.fired.clear();
        // Words about the context before a compaction or a drop are stale.
        self.unsaid.clear();
        self.peak_pressure = 0.0;
        true
    }

    /// Adds a reading to the history, with the compaction before it if
    /// there was one, dropping the oldest beyond [`HISTORY_POINTS`].
    fn add_point(&mut self, tokens: u64, at_ms: u64, mark: Option<PointMark>) {
        let mark = mark.max(self.mark_next.take());
        self.history.push(ContextPoint {
            at_ms,
            tokens,
            mark,
        });
        let excess = self.history.len().saturating_sub(HISTORY_POINTS);
        self.history.drain(..excess);
    }

    /// Marks the save just recorded in `last_save` (and `last_checkpoint`,
    /// when it was made with it) on the latest reading; on a new one when
    /// the figure moved since, as a statusLine update does.
    pub fn mark_save_in_history(&mut self) {
        let Some(save) = self.last_save.as_ref().filter(|m| m.ok) else {
            return;
        };
        let checkpointed = self
            .last_checkpoint
            .as_ref()
            .is_some_and(|c| c.ok && c.at_ms == save.at_ms);
        let mark = if checkpointed {
            PointMark::Checkpoint
        } else {
            PointMark::Save
        };
        let at_ms = save.at_ms;
        let tokens = self
            .usage
            .as_ref()
            .filter(|u| u.invalid.is_none())
            .map(|u| u.tokens);
        match self.history.last_mut() {
            Some(last) if tokens.is_none_or(|t| t == last.tokens) => {
                last.mark = last.mark.max(Some(mark));
            }
            _ => {
                if let Some(tokens) = tokens {
                    self.add_point(tokens, at_ms, Some(mark));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sessions::SessionKey;
    use protocol::wire::Harness;
    use protocol::wire::Mark;

    fn key(id: &str) -> SessionKey {
        SessionKey {
            harness: Harness::ClaudeCode,
            id: id.into(),
        }
    }

    #[test]
    fn a_compaction_seen_twice_is_one_epoch() {
        let mut s = Session::new(key("a"), 0);
        s.fired = vec![0.7, 0.8];
        let b = Boundary {
            uuid: Some("u1".into()),
            ..Boundary::default()
        };
        assert!(s.begin_epoch(&EpochStart::Boundary(b.clone()), 1000));
        assert_eq!((s.epoch, s.fired.len()), (2, 0));
        assert!(
            !s.begin_epoch(&EpochStart::Boundary(b), 2000),
            "same boundary again"
        );
        assert!(
            !s.begin_epoch(&EpochStart::Hook("post-compact".into()), 3000),
            "the hooks of the same compaction"
        );
        assert_eq!(s.epoch, 2);
        // Hooks first, transcript later: still one.
        let mut s = Session::new(key("b"), 0);
        assert!(s.begin_epoch(&EpochStart::Hook("session-start compact".into()), 500_000));
        assert!(!s.begin_epoch(
            &EpochStart::Boundary(Boundary {
                uuid: Some("u2".into()),
                ..Boundary::default()
            }),
            501_000
        ));
        assert_eq!((s.epoch, s.epoch_boundary.as_deref()), (2, Some("u2")));
        // A later compaction is a new epoch.
        assert!(s.begin_epoch(
            &EpochStart::Boundary(Boundary {
                uuid: Some("u3".into()),
                ..Boundary::default()
            }),
            900_000
        ));
        assert_eq!(s.epoch, 3);
    }

    fn reading(tokens: u64, offset: u64, boundary: Option<&str>) -> SessionReading {
        use crate::harness::{Reading, Usage};
        SessionReading {
            reading: Reading {
                usage: Some(Usage {
                    tokens,
                    from_boundary: boundary.is_some(),
                    message_id: Some(format!("m{offset}")),
                    ..Usage::default()
                }),
                boundaries: boundary
                    .map(|uuid| Boundary {
                        uuid: Some(uuid.into()),
                        ..Boundary::default()
                    })
                    .into_iter()
                    .collect(),
                cursor: Cursor {
                    offset,
                    ..Cursor::default()
                },
                method: Method::Forward,
                bytes_read: 0,
            },
            window: None,
            compaction_point: None,
        }
    }

    fn marks(s: &Session) -> Vec<(u64, Option<PointMark>)> {
        s.history.iter().map(|p| (p.tokens, p.mark)).collect()
    }

    #[test]
    fn the_history_keeps_the_recent_readings_with_compactions_and_saves() {
        let mut s = Session::new(key("h"), 0);
        s.take_reading(reading(50_000, 10, None), 1_000);
        s.take_reading(reading(90_000, 20, None), 2_000);
        // A save after the figure: marked on it.
        s.last_save = Some(Mark {
            at_ms: 2_500,
            what: "manual".into(),
            ok: true,
            detail: None,
            skipped: None,
        });
        s.mark_save_in_history();
        // A threshold save with its checkpoint.
        s.last_checkpoint = Some(Mark {
            at_ms: 2_600,
            what: "threshold 0.95".into(),
            ok: true,
            detail: None,
            skipped: None,
        });
        s.last_save = Some(Mark {
            at_ms: 2_600,
            ..s.last_checkpoint.clone().unwrap()
        });
        s.mark_save_in_history();
        // The compaction marks the first reading after it.
        s.take_reading(reading(3_000, 30, Some("b1")), 200_000);
        s.take_reading(reading(8_000, 40, None), 201_000);
        assert_eq!(
            marks(&s),
            vec![
                (50_000, None),
                (90_000, Some(PointMark::Checkpoint)),
                (3_000, Some(PointMark::Compaction)),
                (8_000, None),
            ]
        );
        // A failed save marks nothing.
        s.last_save.as_mut().unwrap().ok = false;
        s.mark_save_in_history();
        assert_eq!(s.history.last().unwrap().mark, None);
        // Bounded: the oldest go.
        for i in 0..40 {
            s.take_reading(reading(10_000 + i, 50 + i, None), 300_000 + i);
        }
        assert_eq!(s.history.len(), HISTORY_POINTS);
        assert_eq!(s.history.last().unwrap().tokens, 10_039);
        assert_eq!(s.status(None).history, s.history);
    }
}

//! What a session's hooks and readings mean, decided without I/O.
//!
//! The engine reads the session's file, then hands this module the hook and
//! the reading under one registry lock. This module moves the session's
//! state (epochs, levels fired, compactions announced, the resume prompt's
//! fate) and answers with [`Effect`]s, which the engine carries out: saves,
//! words for the person and the model, resume prompts, lines for
//! `events.jsonl`.

use crate::harness::{self, EventKind, HookEvent, SessionReading};
use crate::monitor;
use crate::pipeline::SaveTrigger;
use crate::sessions::{EpochStart, PendingResume, Session};
use protocol::config::Config;
use protocol::wire::Mark;
use serde_json::{Value, json};

/// Longest compaction summary kept in `events.jsonl`.
const SUMMARY_CHARS: usize = 4000;

/// Something the engine does because of what this module decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// A line for the project's `events.jsonl`.
    Record { kind: &'static str, fields: Value },
    /// Words for the person (`systemMessage`) and the model (context).
    Say {
        person: Option<String>,
        model: Option<String>,
    },
    /// Capture the workflow state. `first`: before the hook answers (its
    /// answer needs the save); otherwise in the background.
    Save {
        trigger: SaveTrigger,
        checkpoint: bool,
        first: bool,
    },
    /// Inject the resume prompt, for SessionStart's `source`.
    Resume { source: String },
    /// Look for the injected resume prompt in the session's file, then
    /// decide with [`on_arrival`].
    CheckArrival,
}

/// Everything one hook means, given the reading of the session's file taken
/// for it (`None` when there was nothing to read).
pub fn on_hook(
    s: &mut Session,
    event: &HookEvent,
    reading: Option<Result<SessionReading, String>>,
    config: &Config,
    now: u64,
) -> Vec<Effect> {
    let mut effects = Vec::new();
    // A compaction shows up in the session's file, or through its hooks
    // (Claude Code writes the boundary after SessionStart(compact)); either
    // may be the first word of one that no PreCompact announced.
    let mut unannounced = match reading {
        Some(reading) => on_reading(s, reading, now, &mut effects),
        None => false,
    };
    match &event.kind {
        EventKind::SessionStart if event.source.as_deref() == Some("compact") => {
            unannounced |= hook_epoch(s, "session-start compact", None, now, &mut effects);
        }
        EventKind::PostCompact => {
            let what = format!("post-compact {}", event.trigger.as_deref().unwrap_or(""));
            unannounced |= hook_epoch(s, what.trim(), event.trigger.as_deref(), now, &mut effects);
            let summary = event.compact_summary.as_deref().unwrap_or("");
            effects.push(Effect::Record {
                kind: "post_compact",
                fields: json!({
                    "trigger": event.trigger,
                    "summary_chars": summary.chars().count(),
                    "compact_summary": summary.chars().take(SUMMARY_CHARS).collect::<String>(),
                }),
            });
        }
        _ => {}
    }
    let resuming = event.kind == EventKind::SessionStart
        && event
            .source
            .as_ref()
            .is_some_and(|src| config.resume.on_sources.contains(src));
    if unannounced {
        // No PreCompact hook ran: capture what we still can. A resume needs it first.
        effects.push(Effect::Save {
            trigger: SaveTrigger::UnannouncedCompaction,
            checkpoint: true,
            first: resuming,
        });
    }
    if event.kind == EventKind::PreCompact && harness::compaction_is_due(s, &config.window) {
        let trigger = event.trigger.clone().unwrap_or_else(|| "manual".into());
        effects.push(Effect::Save {
            trigger: SaveTrigger::PreCompact(trigger),
            checkpoint: true,
            first: true,
        });
        s.compaction_announced_ms = Some(now);
        s.announced_trigger = event.trigger.clone();
    }
    // A compaction only the session's file showed: its resume prompt goes
    // in with the first prompt or tool call after it.
    let resume_due = matches!(
        event.kind,
        EventKind::UserPromptSubmit | EventKind::PostToolUse
    ) && std::mem::take(&mut s.resume_due);
    if resume_due {
        effects.push(Effect::Resume {
            source: "compact".into(),
        });
    }
    if resuming {
        effects.push(Effect::Resume {
            source: event.source.clone().unwrap_or_default(),
        });
    }
    let checks = checks(event, config);
    // An injection is looked for from the next hook on, not this one's.
    if checks && !resume_due && s.resume_pending.is_some() {
        effects.push(Effect::CheckArrival);
    }
    if checks {
        thresholds(s, config, now, &mut effects);
    }
    effects
}

/// A reading the file watcher took between hooks: a compaction it shows
/// that no hook announced gets its state captured now.
pub fn on_file_change(
    s: &mut Session,
    reading: Result<SessionReading, String>,
    now: u64,
) -> Vec<Effect> {
    let mut effects = Vec::new();
    if on_reading(s, reading, now, &mut effects) {
        effects.push(Effect::Save {
            trigger: SaveTrigger::UnannouncedCompaction,
            checkpoint: true,
            first: false,
        });
    }
    effects
}

/// Whether this hook checks the figure against the thresholds. A subagent's
/// hooks talk to the subagent, not to the session's model.
pub fn checks(event: &HookEvent, config: &Config) -> bool {
    event.agent_id.is_none()
        && config
            .monitor
            .check_on
            .iter()
            .any(|e| *e == event.kind.kebab())
}

/// Takes in a reading; returns whether it showed a compaction no PreCompact
/// hook announced.
fn on_reading(
    s: &mut Session,
    reading: Result<SessionReading, String>,
    now: u64,
    effects: &mut Vec<Effect>,
) -> bool {
    let reading = match reading {
        Ok(reading) => reading,
        Err(problem) => {
            s.transcript_problem = Some(problem);
            return false;
        }
    };
    let boundaries = reading.reading.boundaries.clone();
    let Some(began) = s.take_reading(reading, now) else {
        return false;
    };
    for boundary in &boundaries {
        if let (Some(before), Some(after)) = (boundary.pre_tokens, boundary.post_tokens) {
            effects.push(Effect::Record {
                kind: crate::budget::report::TRANSITION,
                fields: crate::budget::report::transition(
                    "compaction",
                    boundary.trigger.as_deref().unwrap_or("unknown"),
                    before,
                    after,
                    json!({ "boundary": boundary.uuid }),
                ),
            });
        }
    }
    let mut unannounced = false;
    for (boundary, announced) in began {
        unannounced |= !announced;
        if harness::resumes_at_next_turn(s.key.harness) {
            s.resume_due = true;
        }
        effects.push(Effect::Record {
            kind: "compaction",
            fields: json!({
                "trigger": boundary.trigger,
                "pre_tokens": boundary.pre_tokens,
                "post_tokens": boundary.post_tokens,
                "announced": announced,
                "epoch": s.epoch,
                "source": "transcript",
            }),
        });
    }
    unannounced
}

/// A SessionStart(compact) or PostCompact hook: a compaction happened.
/// Returns whether it began an epoch no PreCompact announced.
fn hook_epoch(
    s: &mut Session,
    what: &str,
    trigger: Option<&str>,
    now: u64,
    effects: &mut Vec<Effect>,
) -> bool {
    let announced = s.compaction_announced_ms.is_some();
    if !s.begin_epoch(&EpochStart::Hook(what.to_owned()), now) {
        return false;
    }
    s.compaction_announced_ms = None;
    let trigger = trigger
        .map(str::to_owned)
        .or_else(|| s.announced_trigger.take());
    effects.push(Effect::Record {
        kind: "compaction",
        fields: json!({ "epoch": s.epoch, "trigger": trigger, "source": what, "announced": announced }),
    });
    !announced
}

/// The levels the session's figure crossed in this epoch: each fires once,
/// and a large enough drop re-arms them all.
fn thresholds(s: &mut Session, config: &Config, now: u64, effects: &mut Vec<Effect>) {
    // A figure that cannot be right fires nothing, and moves no epoch.
    let Some(context) = crate::engine::context_of(s, config).filter(|c| c.invalid.is_none()) else {
        return;
    };
    if monitor::dropped_enough(s.peak_pressure, context.pressure, config.monitor.reset_drop) {
        let from = s.peak_pressure;
        if s.begin_epoch(
            &EpochStart::Drop {
                from,
                to: context.pressure,
            },
            now,
        ) {
            effects.push(Effect::Record {
                kind: "epoch",
                fields: json!({ "epoch": s.epoch, "reason": "usage dropped", "from": from, "to": context.pressure }),
            });
        }
    }
    s.peak_pressure = s.peak_pressure.max(context.pressure);
    let Some(firing) = monitor::check(&config.monitor.thresholds, context.pressure, &s.fired)
    else {
        return;
    };
    s.fired.extend(firing.crossed.iter().copied());
    let text = monitor::message(&firing.threshold, &context);
    effects.push(Effect::Say {
        person: config.monitor.system_message.then(|| text.clone()),
        model: config.monitor.additional_context.then_some(text),
    });
    effects.push(Effect::Record {
        kind: "threshold",
        fields: json!({
            "level": firing.threshold.level,
            "crossed": firing.crossed,
            "action": firing.threshold.action,
            "tokens_used": context.tokens_used,
            "tokens_max": context.tokens_max,
            "pressure": context.pressure,
        }),
    });
    if let Some(checkpoint) = monitor::saves(firing.threshold.action) {
        effects.push(Effect::Save {
            trigger: SaveTrigger::Threshold(firing.threshold.level),
            checkpoint: checkpoint || config.capture.checkpoint_on_threshold_save,
            first: false,
        });
    }
}

/// Whether the injected resume prompt was found in the session's file:
/// once missing, it goes in again through this hook; twice missing, it is
/// recorded as lost.
pub fn on_arrival(s: &mut Session, found: bool, now: u64) -> Vec<Effect> {
    let Some(pending) = s.resume_pending.take() else {
        return Vec::new();
    };
    let (action, ok) = match (found, pending.reinjected) {
        (true, _) => ("arrived", true),
        (false, false) => ("injected again", false),
        (false, true) => ("did not arrive, even injected again", false),
    };
    let mut effects = Vec::new();
    if !found && !pending.reinjected {
        effects.push(Effect::Say {
            person: None,
            model: Some(pending.prompt.clone()),
        });
        s.resume_pending = Some(PendingResume {
            reinjected: true,
            ..pending.clone()
        });
    }
    s.resume = Some(Mark {
        at_ms: now,
        what: action.to_owned(),
        ok,
        detail: Some(pending.marker.clone()),
    });
    effects.push(Effect::Record {
        kind: "resume_arrival",
        fields: json!({
            "marker": pending.marker,
            "arrived": found,
            "action": action,
            "after_ms": now.saturating_sub(pending.injected_at_ms),
        }),
    });
    effects
}

//! What a session's hooks and readings mean, decided without I/O: the one
//! place a session changes.
//!
//! The engine reads the session's file, then hands this module the hook and
//! the reading under one registry lock. This module moves the session's
//! state (epochs, levels fired, compactions announced, the resume prompt's
//! fate) and answers with [`Effect`]s, which the engine carries out with
//! the lock released: saves, words for the person and the model, resume
//! prompts, lines for `events.jsonl`. What those effects did comes back
//! through `outcomes.rs` under the engine's second lock. The effects are
//! this module's own types: it knows nothing of the pipeline, the budget,
//! the saved state or git.

use crate::events::{
    Compaction, CompactionByHook, CompactionInFile, FirstCall, LogEvent, Transition,
};
use crate::harness::work::ToolCall;
use crate::harness::{self, Event, HookEvent, SessionReading, StartSource, Trigger};
use crate::monitor;
use crate::sessions::{EpochStart, FOLLOWED_KEPT, FollowWatch, PendingResume, Session, Words};
use protocol::config::Config;
use protocol::wire::{Mark, ResumeFollowed};
use std::path::Path;

mod observe;
mod outcomes;
mod readings;
pub use observe::{StatusLine, observe, on_statusline};
pub use outcomes::{
    CheckpointTaken, Injected, Saved, on_resume_injected, on_saved, on_summary_merged,
};

/// Longest compaction summary kept in `events.jsonl`.
const SUMMARY_CHARS: usize = 4000;

/// Told to the model once, when a session starts (`resume.records_hint`).
pub const RECORDS_HINT: &str = "hookd: `hookctl decision <topic> <decision> --why <reason>`, `hookctl blocker <issue> [--status resolved]` and `hookctl next <action>` record decisions, blockers and next steps that survive context compaction.";

/// Something the engine does because of what this module decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// A line for the project's `events.jsonl`.
    Record(LogEvent),
    /// Words for the person (`systemMessage`) and the model (context).
    Say {
        person: Option<String>,
        model: Option<String>,
    },
    /// Capture the workflow state. `first`: before the hook answers (its
    /// answer needs the save); otherwise in the background.
    Save {
        reason: SaveReason,
        checkpoint: bool,
        first: bool,
    },
    /// Inject the resume prompt, for SessionStart's `source`.
    Resume { source: StartSource },
    /// Look for the injected resume prompt in the session's file, then
    /// decide with [`on_arrival`].
    CheckArrival,
    /// Merge the compaction summary's `hookd-state` block into the saved
    /// state, before the hook answers (the resume prompt that follows reads it).
    TakeSummary { summary: String, from: &'static str },
    /// The session's file showed a compaction: merge the summary it keeps, if any.
    TakeSummaryFromFile,
    /// Read the agent's first tool calls after the resume prompt's marker,
    /// then decide with [`follow_verdict`] and [`on_followed`].
    CheckFollowed,
}

/// Why the machine asks for a save; the engine maps it to the pipeline's trigger.
#[derive(Debug, Clone, PartialEq)]
pub enum SaveReason {
    /// A threshold level fired.
    Threshold(f64),
    /// A PreCompact hook, with its trigger.
    PreCompact(Trigger),
    /// A compaction no PreCompact hook announced.
    UnannouncedCompaction,
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
        Some(reading) => on_reading(s, reading, config, now, &mut effects),
        None => false,
    };
    // What this hook's kind asks for, besides what every hook does.
    let mut start_source = None;
    let mut announces = None;
    let adapter = harness::adapter(event.harness);
    match &event.event {
        Event::SessionStart { source } => {
            if source.as_ref() == Some(&StartSource::Compact) {
                unannounced |= hook_epoch(s, "session-start compact", None, now, &mut effects);
            }
            start_source = source.as_ref();
        }
        Event::PostCompact { trigger, summary } => {
            let trigger_text = trigger.as_ref().map(Trigger::as_str);
            let what = format!("post-compact {}", trigger_text.unwrap_or(""));
            unannounced |= hook_epoch(s, what.trim(), trigger.as_ref(), now, &mut effects);
            let summary = summary.as_deref().unwrap_or("");
            effects.push(Effect::Record(LogEvent::PostCompact {
                trigger: trigger.clone(),
                summary_chars: summary.chars().count(),
                compact_summary: summary.chars().take(SUMMARY_CHARS).collect(),
            }));
        }
        Event::PreCompact { trigger, .. } if adapter.compacts_at_precompact_resumes_at_stop() => {
            precompact_is_compaction(s, trigger.as_ref(), now, &mut effects);
        }
        Event::PreCompact { trigger, .. } => announces = Some(trigger.as_ref()),
        Event::Prompt { .. }
        | Event::PostToolUse { .. }
        | Event::ToolBatch
        | Event::Stop { .. }
        | Event::PreToolUse { .. }
        | Event::SubagentStop { .. }
        | Event::SessionEnd { .. }
        | Event::Other(_) => {}
    }
    if let Some((summary, from)) = harness::adapter(event.harness).compaction_summary(event) {
        effects.push(Effect::TakeSummary {
            summary: summary.to_owned(),
            from,
        });
    }
    if start_source == Some(&StartSource::Startup) && config.resume.records_hint {
        effects.push(Effect::Say {
            person: None,
            model: Some(RECORDS_HINT.to_owned()),
        });
    }
    let mut resuming = start_source.filter(|source| {
        config
            .resume
            .on_sources
            .iter()
            .any(|named| named == source.as_str())
    });
    // A harness that resumes at the next turn does so after a SessionStart
    // of its own compaction too: what that hook says is not kept where
    // hookd can see that it reached the model.
    if resuming == Some(&StartSource::Compact)
        && harness::adapter(event.harness).resumes_at_next_turn()
    {
        s.resume_due = true;
        resuming = None;
    }
    if unannounced {
        // No PreCompact hook ran: capture what we still can. A resume needs it first.
        effects.push(Effect::Save {
            reason: SaveReason::UnannouncedCompaction,
            checkpoint: true,
            first: resuming.is_some(),
        });
    }
    if let Some(trigger) = announces
        && precompact_saves(s, trigger)
    {
        s.precompact_saved_epoch = Some(s.epoch);
        effects.push(Effect::Save {
            reason: SaveReason::PreCompact(trigger.cloned().unwrap_or(Trigger::Manual)),
            checkpoint: true,
            first: true,
        });
        s.compaction_announced_ms = Some(now);
        s.announced_trigger = trigger.cloned();
    }
    // A compaction only the session's file showed (Gemini CLI's): its
    // resume prompt goes in with the first prompt or tool call after it.
    let resume_due = takes_due_resume(event) && std::mem::take(&mut s.resume_due);
    if resume_due {
        effects.push(Effect::Resume {
            source: StartSource::Compact,
        });
    }
    if let Some(source) = resuming {
        effects.push(Effect::Resume {
            source: source.clone(),
        });
    }
    // What the file watcher decided since the last hook, said now if this
    // hook can reach the model (after any compaction above, which made it
    // stale). Not at SessionStart: what it carries stays in the context
    // past a compaction the new run may do at once (`/compact`), and these
    // words are about the run before; a hook inside a turn says them.
    let starts = matches!(event.event, Event::SessionStart { .. });
    if event.agent_id.is_none()
        && !starts
        && harness::adapter(event.harness).takes_model_context(&event.name())
    {
        for Words { person, model } in s.unsaid.drain(..) {
            effects.push(Effect::Say { person, model });
        }
    }
    let checks = checks(event, config);
    // An injection is looked for from the next hook on, not this one's.
    if checks
        && !resume_due
        && s.resume_pending
            .as_mut()
            .is_some_and(|pending| pending.claim_check(now))
    {
        effects.push(Effect::CheckArrival);
    }
    // Whether the agent followed the resume prompt shows in the calls it
    // made after it; a new run's SessionStart has made none yet.
    if event.agent_id.is_none() && !starts && s.follow_watch.is_some() {
        effects.push(Effect::CheckFollowed);
    }
    if checks {
        thresholds(s, config, now, Checker::Hook, &mut effects);
    } else if event.agent_id.is_none() {
        // A hook that does not say the levels still read the figure.
        fire_between_hooks(s, config, now, &mut effects);
    }
    effects
}

/// A reading the file watcher took between hooks. A compaction it shows
/// that no hook announced gets its state captured now. A level it crossed
/// fires now, so its save starts at once; its words wait in
/// [`Session::unsaid`] for the next hook that can carry them, because only
/// hooks reach the person and the model.
pub fn on_file_change(
    s: &mut Session,
    reading: Result<SessionReading, String>,
    config: &Config,
    now: u64,
) -> Vec<Effect> {
    let mut effects = Vec::new();
    if on_reading(s, reading, config, now, &mut effects) {
        effects.push(Effect::Save {
            reason: SaveReason::UnannouncedCompaction,
            checkpoint: true,
            first: false,
        });
    }
    fire_between_hooks(s, config, now, &mut effects);
    effects
}

/// The levels a figure read outside a checking hook crossed fire now (their
/// lines and saves); their words wait in [`Session::unsaid`] for the next
/// hook that can carry them.
fn fire_between_hooks(s: &mut Session, config: &Config, now: u64, effects: &mut Vec<Effect>) {
    // Mid-compaction, the file's figure is the one before it.
    if !monitors(config) || s.compaction_in_flight(now) {
        return;
    }
    let mut fired = Vec::new();
    thresholds(s, config, now, Checker::Watcher, &mut fired);
    for effect in fired {
        match effect {
            Effect::Say { person, model } => s.unsaid.push(Words { person, model }),
            other => effects.push(other),
        }
    }
}

/// Whether the thresholds are checked at all: the watcher checks them
/// whenever some hook does.
fn monitors(config: &Config) -> bool {
    !config.monitor.check_on.is_empty()
}

/// Whether this hook checks the figure against the thresholds. A subagent's
/// hooks talk to the subagent, not to the session's model.
fn checks(event: &HookEvent, config: &Config) -> bool {
    event.agent_id.is_none()
        && config
            .monitor
            .check_on
            .iter()
            .any(|e| *e == event.name().kebab())
}

/// Takes in a reading; returns whether it showed a compaction no PreCompact
/// hook announced.
fn on_reading(
    s: &mut Session,
    reading: Result<SessionReading, String>,
    config: &Config,
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
    if let Some(tokens) = s.auto_compacted_at.take() {
        learn_point(s, tokens, config);
    }
    for boundary in &boundaries {
        if let (Some(before), Some(after)) = (boundary.pre_tokens, boundary.post_tokens) {
            effects.push(Effect::Record(LogEvent::ContextTransition(
                Transition::compaction(
                    boundary.trigger.as_ref().map_or("unknown", Trigger::as_str),
                    before,
                    after,
                    boundary.uuid.clone(),
                ),
            )));
        }
    }
    let mut unannounced = false;
    if !began.is_empty() {
        effects.push(Effect::TakeSummaryFromFile);
    }
    for (boundary, announced) in began {
        unannounced |= !announced;
        if harness::adapter(s.key.harness).resumes_at_next_turn() {
            s.resume_due = true;
        }
        effects.push(Effect::Record(LogEvent::Compaction(Compaction::InFile(
            CompactionInFile {
                trigger: boundary.trigger,
                pre_tokens: boundary.pre_tokens,
                post_tokens: boundary.post_tokens,
                announced,
                epoch: s.epoch,
                source: "transcript".into(),
            },
        ))));
    }
    unannounced
}

/// Whether a PreCompact hook runs the pipeline: when its harness compacts
/// now, and, for a harness whose automatic PreCompact fires on every model
/// call, only once per epoch: a compaction announced in this epoch that has
/// not shown up (the harness gave up on it, or the file still holds the
/// figure from before it) already has its save.
fn precompact_saves(s: &Session, trigger: Option<&Trigger>) -> bool {
    if !harness::adapter(s.key.harness).compaction_is_due(&s.facts(), trigger) {
        return false;
    }
    let repeats = harness::adapter(s.key.harness).precompact_repeats_without_compaction()
        && trigger != Some(&Trigger::Manual);
    !(repeats && s.precompact_saved_epoch == Some(s.epoch))
}

/// An automatic compaction below the point hookd expected (or before it
/// could know one) shows the point was set where hookd cannot see (a limit
/// on a command line it could not read): `tokens`, the context it
/// compacted (the last reply's figure before its record, never one read
/// after it), stands in for it until a point hookd can read appears.
fn learn_point(s: &mut Session, tokens: u64, config: &Config) {
    let (facts, adapter) = (s.facts(), harness::adapter(s.key.harness));
    let expected = adapter.compaction_point(&facts, &config.window).tokens;
    if tokens == 0 || (tokens >= expected && !adapter.point_unknown(&facts, &config.window)) {
        return;
    }
    s.learned_point = adapter.point_shown_by_compaction(tokens);
}

/// Whether this hook carries a resume prompt a compaction left due: the
/// first prompt or tool call after it, or the next Stop for a harness
/// that can only start a turn with it (Cursor's).
fn takes_due_resume(event: &HookEvent) -> bool {
    let at_stop = harness::adapter(event.harness).compacts_at_precompact_resumes_at_stop();
    match event.event {
        Event::Prompt { .. } | Event::PostToolUse { .. } | Event::ToolBatch => !at_stop,
        Event::Stop { .. } => at_stop,
        _ => false,
    }
}

/// The PreCompact hook of a harness that shows its compaction no other
/// way (Cursor's): the compaction is counted here, its state saved, its
/// resume prompt due at the next Stop. The same hook again within moments
/// (Cursor also runs hookd's Claude Code hooks) is that compaction still.
fn precompact_is_compaction(
    s: &mut Session,
    trigger: Option<&Trigger>,
    now: u64,
    effects: &mut Vec<Effect>,
) {
    if !precompact_saves(s, trigger) || !s.begin_epoch(&EpochStart::Hook("pre-compact".into()), now)
    {
        return;
    }
    // No record of it follows in a file.
    s.awaiting_boundary = false;
    s.announced_trigger = None;
    s.precompact_saved_epoch = Some(s.epoch);
    effects.push(Effect::Save {
        reason: SaveReason::PreCompact(trigger.cloned().unwrap_or(Trigger::Manual)),
        checkpoint: true,
        first: true,
    });
    effects.push(Effect::Record(LogEvent::Compaction(Compaction::ByHook(
        CompactionByHook {
            epoch: s.epoch,
            trigger: trigger.cloned(),
            source: "pre-compact".into(),
            announced: true,
        },
    ))));
    s.resume_due = true;
}

/// A SessionStart(compact) or PostCompact hook: a compaction happened.
/// Returns whether it began an epoch no PreCompact announced.
fn hook_epoch(
    s: &mut Session,
    what: &str,
    trigger: Option<&Trigger>,
    now: u64,
    effects: &mut Vec<Effect>,
) -> bool {
    let announced = s.compaction_announced_ms.is_some();
    if !s.begin_epoch(&EpochStart::Hook(what.to_owned()), now) {
        return false;
    }
    s.compaction_announced_ms = None;
    let trigger = trigger.cloned().or_else(|| s.announced_trigger.take());
    // The record that names this compaction, read later, takes its trigger
    // from here; nothing after it does.
    s.announced_trigger.clone_from(&trigger);
    effects.push(Effect::Record(LogEvent::Compaction(Compaction::ByHook(
        CompactionByHook {
            epoch: s.epoch,
            trigger,
            source: what.to_owned(),
            announced,
        },
    ))));
    !announced
}

/// Who checks the levels: a hook that says them, or the file watcher (or a
/// hook that does not say them) between such hooks.
#[derive(Clone, Copy, PartialEq)]
enum Checker {
    Hook,
    Watcher,
}

/// The levels the session's figure crossed in this epoch: each fires once,
/// and a large enough drop re-arms them all. Only a hook starts an epoch on
/// a drop: the watcher may see a compaction's low figure before the hooks
/// or the boundary that name that compaction.
fn thresholds(
    s: &mut Session,
    config: &Config,
    now: u64,
    checker: Checker,
    effects: &mut Vec<Effect>,
) {
    // A figure that cannot be right fires nothing, and moves no epoch;
    // neither does one measured against a point no one knows yet.
    let Some(context) = crate::sessions::context_of(s, config).filter(|c| c.invalid.is_none())
    else {
        return;
    };
    if harness::adapter(s.key.harness).point_unknown(&s.facts(), &config.window) {
        return;
    }
    if checker == Checker::Hook
        && monitor::dropped_enough(s.peak_pressure, context.pressure, config.monitor.reset_drop)
    {
        let from = s.peak_pressure;
        if s.begin_epoch(
            &EpochStart::Drop {
                from,
                to: context.pressure,
            },
            now,
        ) {
            effects.push(Effect::Record(LogEvent::Epoch {
                epoch: s.epoch,
                reason: "usage dropped".into(),
                from,
                to: context.pressure,
            }));
        }
    }
    s.peak_pressure = s.peak_pressure.max(context.pressure);
    let Some(firing) = monitor::check(&config.monitor.thresholds, context.pressure, &s.fired)
    else {
        return;
    };
    s.fired.extend(firing.crossed.iter().copied());
    effects.push(Effect::Say {
        person: config
            .monitor
            .system_message
            .then(|| monitor::person_line(&firing.threshold, &context)),
        model: config
            .monitor
            .additional_context
            .then(|| monitor::message(&firing.threshold, &context)),
    });
    effects.push(Effect::Record(LogEvent::Threshold {
        level: firing.threshold.level,
        crossed: firing.crossed,
        action: firing.threshold.action,
        tokens_used: context.tokens_used,
        tokens_max: context.tokens_max,
        pressure: context.pressure,
    }));
    if let Some(checkpoint) = monitor::saves(firing.threshold.action) {
        effects.push(Effect::Save {
            reason: SaveReason::Threshold(firing.threshold.level),
            checkpoint: checkpoint || config.capture.checkpoint_on_threshold_save,
            first: false,
        });
    }
}

use crate::events::NEVER_ARRIVED;

/// Whether the injected resume prompt `pending` was found in the
/// session's file: once missing, it goes in again through this hook; twice
/// missing, it is recorded as lost. The words and the line, decided from
/// the prompt alone so the hook says them in their place; the session
/// takes the verdict in with [`on_arrival`].
pub fn arrival_effects(pending: &PendingResume, found: bool, now: u64) -> Vec<Effect> {
    let (action, _) = arrival_action(found, pending.reinjected);
    let mut effects = Vec::new();
    if !found && !pending.reinjected {
        effects.push(Effect::Say {
            person: None,
            model: Some(pending.prompt.clone()),
        });
    }
    effects.push(Effect::Record(LogEvent::ResumeArrival {
        marker: pending.marker.clone(),
        arrived: found,
        action: action.to_owned(),
        after_ms: now.saturating_sub(pending.injected_at_ms),
    }));
    effects
}

/// What became of a prompt: its action's words and whether all is well.
fn arrival_action(found: bool, reinjected: bool) -> (&'static str, bool) {
    match (found, reinjected) {
        (true, _) => ("arrived", true),
        (false, false) => ("injected again", false),
        (false, true) => (NEVER_ARRIVED, false),
    }
}

/// The arrival check of the prompt with `marker` found it or not (see
/// [`arrival_effects`]). A prompt injected since is left to its own check.
pub fn on_arrival(s: &mut Session, marker: &str, found: bool, now: u64) {
    let Some(pending) = s.resume_pending.take_if(|p| p.marker == marker) else {
        return;
    };
    let (action, ok) = arrival_action(found, pending.reinjected);
    if !found && pending.reinjected {
        // A prompt that never arrived cannot have been followed.
        s.follow_watch = None;
    }
    s.resume = Some(Mark {
        at_ms: now,
        what: action.to_owned(),
        ok,
        detail: Some(pending.marker.clone()),
        skipped: None,
    });
    if !found && !pending.reinjected {
        s.resume_pending = Some(PendingResume {
            reinjected: true,
            checking_since_ms: None,
            ..pending
        });
    }
}

/// The agent's first tool calls after the resume prompt's marker (`None`
/// when the marker is not in the part of the file read): the first call
/// that touches a file the prompt named, the first next action's target or
/// the task in progress makes it followed; calls that touch none of them,
/// went elsewhere. Decided once (see [`on_followed`]), after the prompt
/// arrived, on the first reading with a tool call; a reply without one
/// decides nothing. The verdict and its line, from the watch alone.
pub fn follow_verdict(
    watch: &FollowWatch,
    project: Option<&Path>,
    marker: &str,
    calls: Option<Vec<ToolCall>>,
) -> Option<(ResumeFollowed, LogEvent)> {
    let calls = calls.unwrap_or_default();
    // The calls read after this marker judge its prompt only: another may
    // have gone out while they were read.
    if calls.is_empty() || watch.marker != marker {
        return None;
    }
    let matched = calls.iter().find_map(|call| follows(watch, call, project));
    let first = &calls[0];
    let first_call = FirstCall {
        tool: first.tool.clone(),
        target: first.target.clone(),
    };
    let detail = matched.clone().unwrap_or_else(|| match &first.target {
        Some(target) => format!("{} {target}", first.tool),
        None => first.tool.clone(),
    });
    let verdict = ResumeFollowed {
        epoch: watch.epoch,
        followed: Some(matched.is_some()),
        detail: Some(detail),
    };
    let record = LogEvent::ResumeFollowed {
        epoch: watch.epoch,
        marker: watch.marker.clone(),
        followed: matched.is_some(),
        matched,
        first_call,
        calls: calls.len(),
    };
    Some((verdict, record))
}

/// The session takes in the verdict on the prompt with `marker`, once:
/// whether this one was taken (the first of hooks that judged at once).
pub fn on_followed(s: &mut Session, marker: &str, verdict: ResumeFollowed) -> bool {
    if s.follow_watch.as_ref().is_none_or(|w| w.marker != marker) {
        return false;
    }
    s.follow_watch = None;
    s.followed.push(verdict);
    let excess = s.followed.len().saturating_sub(FOLLOWED_KEPT);
    s.followed.drain(..excess);
    true
}

/// What of the resume prompt `call` took up, in words, if anything.
fn follows(watch: &FollowWatch, call: &ToolCall, project: Option<&Path>) -> Option<String> {
    let target = call.target.as_deref()?;
    let said = |what: &str| Some(format!("{} {target} ({what})", call.tool));
    let path = project_relative(target, project);
    if let Some(file) = watch.files.iter().find(|f| touches(&path, target, f)) {
        return said(&format!("named {file}"));
    }
    if let Some(next) = watch
        .next_target
        .as_deref()
        .filter(|t| t.chars().count() >= 3)
        && (touches(&path, target, next) || target.contains(next))
    {
        return said("the first next action");
    }
    let is_task_tool = call.tool.starts_with("Task");
    let works_on_task = watch
        .task_id
        .as_deref()
        .is_some_and(|id| is_task_tool && target == id)
        || watch.task_title.as_deref().is_some_and(|t| target == t);
    if works_on_task {
        return said("the task in progress");
    }
    None
}

/// A call's path relative to the project, when it lies inside it.
fn project_relative(target: &str, project: Option<&Path>) -> String {
    let target = target.strip_prefix("./").unwrap_or(target);
    project
        .and_then(|p| Path::new(target).strip_prefix(p).ok())
        .map_or_else(|| target.to_owned(), |p| p.to_string_lossy().into_owned())
}

/// Whether a call on `path` (its `target` as written, made relative to the
/// project when inside it) touches `file` (a path from the project's root):
/// the same file, named from the project or from a directory under it, or
/// a command that names it. An absolute path left is outside the project.
fn touches(path: &str, target: &str, file: &str) -> bool {
    let file = file
        .strip_prefix("./")
        .unwrap_or(file)
        .trim_end_matches('/');
    if file.is_empty() {
        return false;
    }
    let tail =
        |longer: &str, shorter: &str| longer == shorter || longer.ends_with(&format!("/{shorter}"));
    if target.contains(' ') {
        // A command names the file as one of its words (`cat a.rs`, never
        // `cat data.rs` for `a.rs`).
        return target
            .split(|c: char| {
                c.is_whitespace() || matches!(c, '\'' | '"' | '`' | ';' | '|' | '>' | '<')
            })
            .map(|word| word.strip_prefix("./").unwrap_or(word))
            .any(|word| !word.is_empty() && tail(word, file));
    }
    if Path::new(path).is_absolute() {
        return false;
    }
    tail(path, file) || tail(file, path)
}

#[cfg(test)]
mod tests;

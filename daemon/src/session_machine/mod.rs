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
    let mut turn_goes_on = false;
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
        Event::PreCompact { trigger, .. } => announces = Some(trigger.as_ref()),
        Event::Prompt { .. } | Event::PostToolUse { .. } => turn_goes_on = true,
        Event::PreToolUse { .. }
        | Event::ToolBatch
        | Event::Stop { .. }
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
    let resuming = start_source.filter(|source| {
        config
            .resume
            .on_sources
            .iter()
            .any(|named| named == source.as_str())
    });
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
    let resume_due = turn_goes_on && std::mem::take(&mut s.resume_due);
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
mod tests {
    use super::*;
    use crate::harness::{Boundary, Cursor, EventName, EventParts, Method, Reading, Usage};
    use crate::sessions::SessionKey;
    use protocol::wire::Harness;
    use std::collections::BTreeMap;

    /// A resume prompt waiting for its arrival check, no hook checking it.
    fn pending_prompt(
        marker: &str,
        prompt: &str,
        injected_at_ms: u64,
        reinjected: bool,
    ) -> PendingResume {
        PendingResume {
            marker: marker.into(),
            prompt: prompt.into(),
            injected_at_ms,
            reinjected,
            checking_since_ms: None,
        }
    }

    /// Claude Code's compaction point for a 200k model: 200k − 20k − 13k.
    const POINT: u64 = 167_000;

    fn session(harness: Harness) -> Session {
        let mut s = Session::new(
            SessionKey {
                harness,
                id: "s".into(),
            },
            0,
        );
        s.project_dir = Some("/p".into());
        s.model = Some(match harness {
            Harness::GeminiCli => "gemini-2.5-flash".into(),
            _ => "claude-sonnet-4-5".into(),
        });
        s
    }

    fn event(harness: Harness, name: EventName) -> HookEvent {
        hook(harness, Event::from_parts(name, EventParts::default()))
    }

    fn hook(harness: Harness, event: Event) -> HookEvent {
        HookEvent {
            harness,
            event,
            session_id: Some("s".into()),
            transcript_path: None,
            project_dir: Some("/p".into()),
            working_dir: Some("/p".into()),
            cwd: None,
            model: None,
            agent_id: None,
            claude_code_knobs: None,
            env: BTreeMap::new(),
            problems: Vec::new(),
        }
    }

    fn with(mut e: HookEvent, f: impl FnOnce(&mut HookEvent)) -> HookEvent {
        f(&mut e);
        e
    }

    /// A reading whose figure is `tokens`, the file grown to `offset`.
    fn reading(
        tokens: u64,
        offset: u64,
        boundaries: Vec<Boundary>,
    ) -> Option<Result<SessionReading, String>> {
        Some(Ok(SessionReading {
            reading: Reading {
                usage: Some(Usage {
                    tokens,
                    model: None,
                    from_boundary: false,
                    message_id: Some(format!("m{offset}")),
                    invalid: None,
                }),
                boundaries,
                cursor: Cursor {
                    offset,
                    dev: 1,
                    ino: 1,
                },
                method: Method::Forward,
                bytes_read: 0,
            },
            window: None,
            compaction_point: None,
        }))
    }

    fn at(percent: u64) -> u64 {
        POINT * percent / 100
    }

    fn levels(effects: &[Effect]) -> Vec<f64> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Record(LogEvent::Threshold { level, .. }) => Some(*level),
                _ => None,
            })
            .collect()
    }

    fn saves(effects: &[Effect]) -> Vec<(SaveReason, bool, bool)> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Save {
                    reason,
                    checkpoint,
                    first,
                } => Some((reason.clone(), *checkpoint, *first)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_hook_names_the_sessions_file_and_whether_it_ended() {
        let mut s = session(Harness::ClaudeCode);
        s.transcript_path = Some("/t1.jsonl".into());
        s.cursor = Some(Cursor {
            offset: 10,
            dev: 1,
            ino: 1,
        });
        let tool = with(event(Harness::ClaudeCode, EventName::PostToolUse), |e| {
            e.transcript_path = Some("/t1.jsonl".into());
            e.working_dir = Some("/p/sub".into());
        });
        observe(&mut s, &tool, None, 5);
        assert!(s.cursor.is_some(), "the same file reads on");
        assert_eq!((s.events_seen, s.last_event_at_ms), (1, 5));
        assert_eq!(s.last_event, "post-tool-use");
        assert_eq!(s.working_dir.as_deref(), Some(Path::new("/p/sub")));
        let end = with(event(Harness::ClaudeCode, EventName::SessionEnd), |e| {
            e.transcript_path = Some("/t2.jsonl".into());
        });
        observe(&mut s, &end, None, 6);
        assert!(s.ended);
        assert_eq!(s.cursor, None, "another file is read from its start");
        observe(&mut s, &tool, None, 7);
        assert!(!s.ended, "a hook after SessionEnd is a session going on");
    }

    #[test]
    fn each_level_fires_once_per_epoch_and_a_drop_rearms_them() {
        let config = Config::default();
        let mut s = session(Harness::ClaudeCode);
        let tool = event(Harness::ClaudeCode, EventName::PostToolUse);
        let mut offset = 0;
        let mut step = |s: &mut Session, percent| {
            offset += 100;
            on_hook(
                s,
                &tool,
                reading(at(percent), offset, vec![]),
                &config,
                offset,
            )
        };
        assert!(levels(&step(&mut s, 60)).is_empty());
        let e = step(&mut s, 72);
        assert_eq!(levels(&e), [0.7]);
        assert!(e.iter().any(|e| matches!(
            e,
            Effect::Say {
                person: Some(_),
                model: Some(_)
            }
        )));
        assert!(saves(&e).is_empty(), "70% only says so");
        assert!(levels(&step(&mut s, 75)).is_empty(), "once per epoch");
        let e = step(&mut s, 85);
        assert_eq!(levels(&e), [0.8]);
        assert_eq!(saves(&e), [(SaveReason::Threshold(0.8), false, false)]);
        // Two levels at once: the higher one speaks, both count as fired.
        let e = step(&mut s, 96);
        assert_eq!(levels(&e), [0.95]);
        assert_eq!(saves(&e), [(SaveReason::Threshold(0.95), true, false)]);
        assert_eq!(s.fired, [0.7, 0.8, 0.9, 0.95]);
        // A drop of 30 points starts a new epoch: the levels fire again.
        let e = step(&mut s, 20);
        assert!(
            e.iter()
                .any(|e| matches!(e, Effect::Record(LogEvent::Epoch { .. })))
        );
        assert_eq!(s.epoch, 2);
        assert_eq!(levels(&step(&mut s, 72)), [0.7]);
    }

    fn words(effects: &[Effect]) -> Vec<String> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Say { model, .. } => model.clone(),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_level_the_watcher_sees_fires_at_once_and_is_said_by_the_next_hook_that_reaches_the_model()
    {
        let config = Config::default();
        let mut s = session(Harness::ClaudeCode);
        let taken = reading(at(85), 100, vec![]).unwrap();
        // Between hooks: the level fires and its save starts, nothing is said yet.
        let e = on_file_change(&mut s, taken, &config, 1);
        assert_eq!(levels(&e), [0.8]);
        assert_eq!(saves(&e), [(SaveReason::Threshold(0.8), false, false)]);
        assert!(words(&e).is_empty());
        assert_eq!(s.unsaid.len(), 1);
        // Stop cannot reach Claude Code's model, nor can a subagent's hook.
        let stop = event(Harness::ClaudeCode, EventName::Stop);
        assert!(words(&on_hook(&mut s, &stop, None, &config, 2)).is_empty());
        let sub = with(event(Harness::ClaudeCode, EventName::PostToolUse), |e| {
            e.agent_id = Some("a1".into())
        });
        assert!(words(&on_hook(&mut s, &sub, None, &config, 3)).is_empty());
        // The next hook that can says it, once; the level does not fire again.
        let prompt = event(Harness::ClaudeCode, EventName::UserPromptSubmit);
        let e = on_hook(&mut s, &prompt, None, &config, 4);
        assert_eq!(words(&e).len(), 1);
        assert!(words(&e)[0].contains("80%"), "{e:?}");
        assert!(levels(&e).is_empty() && saves(&e).is_empty());
        let tool = event(Harness::ClaudeCode, EventName::PostToolUse);
        assert!(words(&on_hook(&mut s, &tool, None, &config, 5)).is_empty());
        assert!(s.unsaid.is_empty());
    }

    #[test]
    fn words_the_watcher_kept_are_dropped_by_a_compaction() {
        let config = Config::default();
        let mut s = session(Harness::ClaudeCode);
        let taken = reading(at(92), 100, vec![]).unwrap();
        on_file_change(&mut s, taken, &config, 1);
        assert_eq!(s.unsaid.len(), 1);
        let start = hook(
            Harness::ClaudeCode,
            Event::SessionStart {
                source: Some("compact".into()),
            },
        );
        let e = on_hook(&mut s, &start, None, &config, 2);
        assert!(
            !words(&e).iter().any(|w| w.contains("90%")),
            "stale words after a compaction: {e:?}"
        );
        assert!(s.unsaid.is_empty());
    }

    #[test]
    fn words_the_watcher_kept_wait_past_a_new_runs_session_start_and_die_with_its_compaction() {
        let config = Config::default();
        for harness in [Harness::ClaudeCode, Harness::Codex, Harness::GeminiCli] {
            let start = |source: &str| {
                hook(
                    harness,
                    Event::SessionStart {
                        source: Some(source.into()),
                    },
                )
            };
            // The last reply of a run crossed a level: its words wait.
            let mut s = session(harness);
            s.reported_window = Some(190_000).filter(|_| harness == Harness::Codex);
            let high = if harness == Harness::GeminiCli {
                450_000
            } else {
                at(75)
            };
            on_file_change(&mut s, reading(high, 100, vec![]).unwrap(), &config, 1);
            assert_eq!(s.unsaid.len(), 1, "{harness}");
            // The next run starts: SessionStart keeps them.
            let e = on_hook(&mut s, &start("resume"), None, &config, 2);
            assert!(words(&e).is_empty(), "{harness}: {e:?}");
            assert_eq!(s.unsaid.len(), 1, "{harness}");
            // That run is `/compact`: the compaction drops them.
            let pre = hook(
                harness,
                Event::PreCompact {
                    trigger: Some("manual".into()),
                    instructions: None,
                },
            );
            on_hook(&mut s, &pre, None, &config, 3);
            let e = on_hook(&mut s, &start("compact"), None, &config, 4);
            let e = [
                e,
                on_hook(
                    &mut s,
                    &event(harness, EventName::PostCompact),
                    None,
                    &config,
                    5,
                ),
            ]
            .concat();
            assert!(words(&e).is_empty(), "{harness}: stale words: {e:?}");
            assert!(s.unsaid.is_empty(), "{harness}");
            // A run that does not compact: its first prompt says them.
            let mut s = session(harness);
            s.reported_window = Some(190_000).filter(|_| harness == Harness::Codex);
            on_file_change(&mut s, reading(high, 100, vec![]).unwrap(), &config, 1);
            on_hook(&mut s, &start("resume"), None, &config, 2);
            let prompt = event(harness, EventName::UserPromptSubmit);
            let e = on_hook(&mut s, &prompt, None, &config, 3);
            assert_eq!(words(&e).len(), 1, "{harness}: {e:?}");
        }
    }

    #[test]
    fn the_watcher_fires_nothing_from_a_figure_older_than_the_compaction_under_way() {
        let config = Config::default();
        let mut s = session(Harness::ClaudeCode);
        let start = hook(
            Harness::ClaudeCode,
            Event::SessionStart {
                source: Some("compact".into()),
            },
        );
        on_hook(&mut s, &start, None, &config, 1);
        assert_eq!(s.epoch, 2);
        // The reply before the compaction, written late, then the boundary.
        let late = reading(at(99), 100, vec![]).unwrap();
        let e = on_file_change(&mut s, late, &config, 2);
        assert!(levels(&e).is_empty() && s.unsaid.is_empty(), "{e:?}");
        let boundary = Boundary {
            uuid: Some("b1".into()),
            trigger: Some("auto".into()),
            pre_tokens: Some(at(99)),
            post_tokens: Some(3_000),
            timestamp: None,
        };
        let after = reading(3_000, 200, vec![boundary]).unwrap();
        on_file_change(&mut s, after, &config, 3);
        assert_eq!(s.epoch, 2, "the boundary names the epoch the hook opened");
        // From the boundary on, the levels count again.
        let e = on_file_change(&mut s, reading(at(85), 300, vec![]).unwrap(), &config, 4);
        assert_eq!(levels(&e), [0.8]);
    }

    #[test]
    fn only_a_hook_starts_an_epoch_on_a_drop() {
        let config = Config::default();
        let mut s = session(Harness::ClaudeCode);
        on_file_change(&mut s, reading(at(85), 100, vec![]).unwrap(), &config, 1);
        // A compaction's low figure, before anything names the compaction.
        on_file_change(&mut s, reading(at(20), 200, vec![]).unwrap(), &config, 2);
        assert_eq!(s.epoch, 1);
        let tool = event(Harness::ClaudeCode, EventName::PostToolUse);
        on_hook(&mut s, &tool, None, &config, 3);
        assert_eq!(s.epoch, 2, "the next hook sees the drop");
    }

    #[test]
    fn the_watcher_fires_nothing_when_no_hook_checks() {
        let mut config = Config::default();
        config.monitor.check_on.clear();
        let mut s = session(Harness::ClaudeCode);
        let taken = reading(at(96), 100, vec![]).unwrap();
        let e = on_file_change(&mut s, taken, &config, 1);
        assert!(levels(&e).is_empty() && saves(&e).is_empty());
        assert!(s.unsaid.is_empty());
    }

    #[test]
    fn a_subagent_fires_nothing_an_unchecked_event_keeps_the_words_and_an_invalid_figure_is_ignored()
     {
        let config = Config::default();
        let mut s = session(Harness::ClaudeCode);
        let sub = with(event(Harness::ClaudeCode, EventName::PostToolUse), |e| {
            e.agent_id = Some("a1".into())
        });
        let e = on_hook(&mut s, &sub, reading(at(99), 10, vec![]), &config, 1);
        assert!(levels(&e).is_empty() && saves(&e).is_empty());
        // Stop does not say the levels, but what it read fires them: the
        // save now, the words at the next hook that reaches the model.
        let stop = event(Harness::ClaudeCode, EventName::Stop);
        let e = on_hook(&mut s, &stop, reading(at(99), 20, vec![]), &config, 2);
        assert_eq!(levels(&e), [0.95]);
        assert_eq!(saves(&e), [(SaveReason::Threshold(0.95), true, false)]);
        assert!(words(&e).is_empty());
        assert_eq!(s.unsaid.len(), 1);
        s.usage.as_mut().unwrap().invalid = Some("input_tokens is a string".into());
        s.fired.clear();
        let tool = event(Harness::ClaudeCode, EventName::PostToolUse);
        assert!(levels(&on_hook(&mut s, &tool, None, &config, 3)).is_empty());
    }

    #[test]
    fn the_compaction_summary_is_taken_from_claude_codes_summarizer_and_post_compact() {
        let config = Config::default();
        let summaries = |harness: Harness, kind: EventName, f: &dyn Fn(&mut HookEvent)| {
            let mut s = session(harness);
            let mut e = event(harness, kind);
            f(&mut e);
            on_hook(&mut s, &e, None, &config, 1)
                .into_iter()
                .filter_map(|e| match e {
                    Effect::TakeSummary { summary, from } => Some((summary, from)),
                    _ => None,
                })
                .collect::<Vec<_>>()
        };
        let summarizer = |e: &mut HookEvent| {
            e.agent_id = Some("a1".into());
            e.event = Event::SubagentStop {
                agent_type: Some(String::new()),
                last_message: Some("the summary".into()),
            };
        };
        assert_eq!(
            summaries(Harness::ClaudeCode, EventName::SubagentStop, &summarizer),
            [("the summary".to_owned(), "subagent-stop")]
        );
        let own_subagent = |e: &mut HookEvent| {
            summarizer(e);
            e.event = Event::SubagentStop {
                agent_type: Some("general-purpose".into()),
                last_message: Some("the summary".into()),
            };
        };
        assert!(summaries(Harness::ClaudeCode, EventName::SubagentStop, &own_subagent).is_empty());
        let post = |e: &mut HookEvent| {
            e.event = Event::PostCompact {
                trigger: None,
                summary: Some("the summary".into()),
            }
        };
        assert_eq!(
            summaries(Harness::ClaudeCode, EventName::PostCompact, &post),
            [("the summary".to_owned(), "post-compact")]
        );
        assert!(summaries(Harness::Codex, EventName::SubagentStop, &summarizer).is_empty());
    }

    #[test]
    fn the_records_hint_goes_to_the_model_at_startup_unless_turned_off() {
        let mut config = Config::default();
        let hint = |config: &Config, source: &str| {
            let mut s = session(Harness::ClaudeCode);
            let e = hook(
                Harness::ClaudeCode,
                Event::SessionStart {
                    source: Some(source.into()),
                },
            );
            on_hook(&mut s, &e, None, config, 1).contains(&Effect::Say {
                person: None,
                model: Some(RECORDS_HINT.into()),
            })
        };
        assert!(hint(&config, "startup"));
        assert!(!hint(&config, "compact"));
        config.resume.records_hint = false;
        assert!(!hint(&config, "startup"));
    }

    #[test]
    fn an_announced_compaction_saves_before_pre_compact_answers_and_resumes_at_session_start() {
        let config = Config::default();
        let mut s = session(Harness::ClaudeCode);
        let pre = hook(
            Harness::ClaudeCode,
            Event::PreCompact {
                trigger: Some("auto".into()),
                instructions: None,
            },
        );
        let e = on_hook(&mut s, &pre, reading(at(90), 10, vec![]), &config, 1_000);
        assert_eq!(
            saves(&e),
            [(SaveReason::PreCompact("auto".into()), true, true)]
        );
        assert_eq!(s.compaction_announced_ms, Some(1_000));
        let start = hook(
            Harness::ClaudeCode,
            Event::SessionStart {
                source: Some("compact".into()),
            },
        );
        let e = on_hook(&mut s, &start, None, &config, 2_000);
        assert_eq!(s.epoch, 2);
        assert!(saves(&e).is_empty(), "announced: no second capture");
        assert!(e.contains(&Effect::Resume {
            source: "compact".into()
        }));
        // The boundary the transcript writes afterwards names the same compaction.
        let boundary = Boundary {
            uuid: Some("b1".into()),
            trigger: Some("auto".into()),
            pre_tokens: Some(at(90)),
            post_tokens: Some(9_000),
            timestamp: None,
        };
        let tool = event(Harness::ClaudeCode, EventName::PostToolUse);
        let e = on_hook(
            &mut s,
            &tool,
            reading(9_000, 20, vec![boundary]),
            &config,
            3_000,
        );
        assert_eq!(s.epoch, 2, "one compaction, one epoch");
        assert!(saves(&e).is_empty());
        assert!(
            e.iter()
                .any(|e| matches!(e, Effect::Record(LogEvent::ContextTransition(_))))
        );
    }

    /// A second compaction soon after the first (a `/compact` right after
    /// an automatic one) is a compaction of its own: its PreCompact
    /// announced it, so its hooks open the next epoch.
    #[test]
    fn two_announced_compactions_in_quick_succession_are_two_epochs() {
        let config = Config::default();
        let mut s = session(Harness::ClaudeCode);
        let pre = hook(
            Harness::ClaudeCode,
            Event::PreCompact {
                trigger: Some("manual".into()),
                instructions: None,
            },
        );
        let start = hook(
            Harness::ClaudeCode,
            Event::SessionStart {
                source: Some("compact".into()),
            },
        );
        let post = hook(
            Harness::ClaudeCode,
            Event::PostCompact {
                trigger: Some("manual".into()),
                summary: None,
            },
        );
        for (n, at) in [(2, 1_000), (3, 11_000)] {
            on_hook(&mut s, &pre, None, &config, at);
            on_hook(&mut s, &start, None, &config, at + 1_000);
            on_hook(&mut s, &post, None, &config, at + 2_000);
            assert_eq!(s.epoch, n, "one epoch per compaction");
        }
    }

    #[test]
    fn an_unannounced_compaction_is_found_by_each_signal() {
        let config = Config::default();
        let boundary = Boundary {
            uuid: Some("b1".into()),
            trigger: Some("auto".into()),
            pre_tokens: Some(150_000),
            post_tokens: Some(9_000),
            timestamp: None,
        };
        let tool = event(Harness::ClaudeCode, EventName::PostToolUse);
        let post = hook(
            Harness::ClaudeCode,
            Event::PostCompact {
                trigger: Some("manual".into()),
                summary: Some("the summary".into()),
            },
        );
        let start = hook(
            Harness::ClaudeCode,
            Event::SessionStart {
                source: Some("compact".into()),
            },
        );
        for (signal, hook, seen) in [
            (
                "transcript boundary",
                &tool,
                reading(9_000, 10, vec![boundary]),
            ),
            ("PostCompact", &post, None),
            ("SessionStart(compact)", &start, None),
        ] {
            let mut s = session(Harness::ClaudeCode);
            let e = on_hook(&mut s, hook, seen, &config, 1_000);
            assert_eq!(s.epoch, 2, "{signal}");
            let compaction = e
                .iter()
                .find_map(|e| match e {
                    Effect::Record(LogEvent::Compaction(c)) => Some(c.clone()),
                    _ => None,
                })
                .unwrap_or_else(|| panic!("{signal}: no compaction recorded"));
            let announced = match compaction {
                Compaction::InFile(c) => c.announced,
                Compaction::ByHook(c) => c.announced,
            };
            assert!(!announced, "{signal}");
            let first = hook.name() == EventName::SessionStart;
            assert_eq!(
                saves(&e),
                [(SaveReason::UnannouncedCompaction, true, first)],
                "{signal}: captured after the fact, before a resume when one follows"
            );
        }
    }

    #[test]
    fn gemini_pre_compress_counts_only_near_the_point_and_resumes_at_the_next_turn() {
        let config = Config::default();
        let mut s = session(Harness::GeminiCli);
        let pre = event(Harness::GeminiCli, EventName::PreCompact);
        // Half of the 1,048,576-token window is Gemini CLI's compression point.
        let e = on_hook(&mut s, &pre, reading(5_000, 10, vec![]), &config, 1);
        assert!(
            saves(&e).is_empty(),
            "far from the point: a lookup, no pipeline"
        );
        let e = on_hook(&mut s, &pre, reading(600_000, 20, vec![]), &config, 2);
        assert_eq!(saves(&e).len(), 1);
        // The next reply's input fell: the compression is confirmed.
        let boundary = Boundary {
            uuid: Some("r3".into()),
            trigger: Some("auto".into()),
            pre_tokens: Some(600_000),
            post_tokens: Some(2_100),
            timestamp: None,
        };
        let stop = event(Harness::GeminiCli, EventName::Stop);
        let e = on_hook(
            &mut s,
            &stop,
            reading(2_100, 30, vec![boundary]),
            &config,
            3,
        );
        assert!(s.resume_due);
        assert!(
            !e.iter().any(|e| matches!(e, Effect::Resume { .. })),
            "no turn yet"
        );
        s.resume_pending = Some(pending_prompt("[m]", "p", 0, false));
        let prompt = event(Harness::GeminiCli, EventName::UserPromptSubmit);
        let e = on_hook(&mut s, &prompt, None, &config, 4);
        assert!(e.contains(&Effect::Resume {
            source: "compact".into()
        }));
        assert!(
            !e.contains(&Effect::CheckArrival),
            "not on the hook that injects"
        );
        assert!(!s.resume_due, "once");
        let e = on_hook(&mut s, &prompt, None, &config, 5);
        assert!(!e.iter().any(|e| matches!(e, Effect::Resume { .. })));
        assert!(e.contains(&Effect::CheckArrival));
    }

    /// Past the point, PreCompress keeps firing before every model call while
    /// Gemini CLI compresses nothing (it gave up after a failed attempt, or
    /// the file still shows the figure from before the compression): one
    /// pipeline for the epoch, a lookup for the rest, and the next epoch's
    /// compression gets its own. `/compress` always saves.
    /// A compaction's trigger goes with it: a later compaction no hook
    /// announced is not taken for an automatic one (which would teach a
    /// point where none is).
    #[test]
    fn a_compactions_trigger_is_not_inherited_by_the_next() {
        let mut s = session(Harness::Codex);
        s.announced_trigger = Some("auto".into());
        s.compaction_announced_ms = Some(1_000);
        let mut effects = Vec::new();
        assert!(!hook_epoch(
            &mut s,
            "post-compact",
            Some(&Trigger::Auto),
            2_000,
            &mut effects
        ));
        let record = |uuid: &str, pre| Boundary {
            uuid: Some(uuid.into()),
            trigger: None,
            pre_tokens: Some(pre),
            post_tokens: None,
            timestamp: None,
        };
        let Some(Ok(r1)) = reading(3_000, 10, vec![record("r1", 90_000)]) else {
            unreachable!()
        };
        s.take_reading(r1, 2_100);
        assert_eq!(s.auto_compacted_at, Some(90_000), "its record knows it");
        s.auto_compacted_at = None;
        let Some(Ok(r2)) = reading(2_000, 20, vec![record("r2", 30_000)]) else {
            unreachable!()
        };
        let began = s.take_reading(r2, 900_000).unwrap();
        assert_eq!(began.len(), 1);
        assert_eq!(began[0].0.trigger, None, "not announced, not known");
        assert_eq!(s.auto_compacted_at, None);
    }

    #[test]
    fn gemini_pre_compress_saves_once_per_epoch_past_the_point() {
        let config = Config::default();
        let mut s = session(Harness::GeminiCli);
        let pre = hook(
            Harness::GeminiCli,
            Event::PreCompact {
                trigger: Some("auto".into()),
                instructions: None,
            },
        );
        let mut runs = Vec::new();
        for (n, tokens) in [600_000, 610_000, 620_000, 630_000].into_iter().enumerate() {
            let n = n as u64 + 1;
            let e = on_hook(&mut s, &pre, reading(tokens, n * 10, vec![]), &config, n);
            runs.push(
                saves(&e)
                    .iter()
                    .filter(|s| s.0 == SaveReason::PreCompact("auto".into()))
                    .count(),
            );
        }
        assert_eq!(runs, [1, 0, 0, 0], "one pipeline for the epoch");
        // The compression shows: a new epoch, and past the point again, a new save.
        let boundary = Boundary {
            uuid: Some("r5".into()),
            trigger: Some("auto".into()),
            pre_tokens: Some(630_000),
            post_tokens: Some(2_100),
            timestamp: None,
        };
        let e = on_hook(&mut s, &pre, reading(2_100, 50, vec![boundary]), &config, 5);
        assert!(
            saves(&e)
                .iter()
                .all(|s| !matches!(s.0, SaveReason::PreCompact(_)))
        );
        let e = on_hook(&mut s, &pre, reading(700_000, 60, vec![]), &config, 6);
        assert_eq!(
            saves(&e)
                .iter()
                .filter(|s| s.0 == SaveReason::PreCompact("auto".into()))
                .count(),
            1,
            "the next compression's save"
        );
        let e = on_hook(&mut s, &pre, reading(710_000, 70, vec![]), &config, 7);
        assert!(
            saves(&e)
                .iter()
                .all(|s| !matches!(s.0, SaveReason::PreCompact(_)))
        );
        let manual = with(pre.clone(), |e| {
            e.event = Event::PreCompact {
                trigger: Some(Trigger::Manual),
                instructions: None,
            }
        });
        let e = on_hook(&mut s, &manual, reading(710_000, 70, vec![]), &config, 8);
        assert_eq!(
            saves(&e),
            [(SaveReason::PreCompact("manual".into()), true, true)],
            "/compress compresses: it saves"
        );
        // A compression too small to show as one, seen as a drop of usage:
        // a new epoch, so the next compression past the point saves again.
        let epoch = s.epoch;
        let tool = event(Harness::GeminiCli, EventName::PostToolUse);
        on_hook(&mut s, &tool, reading(712_000, 75, vec![]), &config, 9);
        on_hook(&mut s, &tool, reading(300_000, 80, vec![]), &config, 9);
        assert_eq!(s.epoch, epoch + 1, "the drop began an epoch");
        let e = on_hook(&mut s, &pre, reading(600_000, 90, vec![]), &config, 10);
        assert_eq!(
            saves(&e)
                .iter()
                .filter(|s| s.0 == SaveReason::PreCompact("auto".into()))
                .count(),
            1,
            "a save for the new epoch"
        );
        // Claude Code's PreCompact is always a compaction: each one saves.
        let mut s = session(Harness::ClaudeCode);
        let pre = hook(
            Harness::ClaudeCode,
            Event::PreCompact {
                trigger: Some("auto".into()),
                instructions: None,
            },
        );
        for n in 1..=2 {
            let e = on_hook(&mut s, &pre, reading(at(99), n * 10, vec![]), &config, n);
            assert_eq!(saves(&e).len(), 1, "PreCompact {n}");
        }
    }

    const MARKER: &str = "[hookd-resume 1]";

    fn watch() -> FollowWatch {
        FollowWatch {
            epoch: 2,
            marker: MARKER.into(),
            from_offset: None,
            files: vec!["notes/jwt_design.md".into(), "src/auth/jwt.rs".into()],
            next_target: Some("src/auth/refresh.rs".into()),
            task_id: Some("2".into()),
            task_title: Some("Implement JWT signing".into()),
        }
    }

    fn call(tool: &str, target: &str) -> ToolCall {
        ToolCall {
            id: None,
            tool: tool.into(),
            target: Some(target.into()).filter(|t: &String| !t.is_empty()),
            outcome: None,
        }
    }

    /// What the engine does with the calls read after `marker`: judged once
    /// the prompt arrived, the line written only for a verdict taken.
    fn on_follow_reading(
        s: &mut Session,
        marker: &str,
        calls: Option<Vec<ToolCall>>,
    ) -> Vec<Effect> {
        if s.resume_pending.is_some() {
            return Vec::new();
        }
        let Some((verdict, record)) = s
            .follow_watch
            .as_ref()
            .and_then(|watch| follow_verdict(watch, s.project_dir.as_deref(), marker, calls))
        else {
            return Vec::new();
        };
        if on_followed(s, marker, verdict) {
            vec![Effect::Record(record)]
        } else {
            Vec::new()
        }
    }

    /// The verdict `calls` lead to: `Some(followed)` once decided.
    fn verdict(calls: Option<Vec<ToolCall>>) -> (Option<bool>, Vec<Effect>) {
        let mut s = session(Harness::ClaudeCode);
        s.follow_watch = Some(watch());
        let e = on_follow_reading(&mut s, MARKER, calls);
        (s.followed.last().and_then(|f| f.followed), e)
    }

    #[test]
    fn the_first_tool_calls_after_the_resume_prompt_decide_whether_it_was_followed() {
        let followed = [
            vec![call("Read", "/p/notes/jwt_design.md")],
            // From a directory under the project, or named from the root.
            vec![call("Read", "jwt.rs"), call("Edit", "auth/jwt.rs")],
            vec![call("Grep", "src/auth/jwt.rs")],
            vec![call("Bash", "cat notes/jwt_design.md | head")],
            vec![call("Write", "src/auth/refresh.rs")],
            vec![call("TaskUpdate", "2")],
            vec![call("TodoWrite", "Implement JWT signing")],
            // Any of the first calls will do.
            vec![call("Bash", "ls"), call("Read", "./src/auth/jwt.rs")],
        ];
        for calls in followed {
            let (v, e) = verdict(Some(calls.clone()));
            assert_eq!(v, Some(true), "{calls:?}");
            let Effect::Record(LogEvent::ResumeFollowed {
                epoch,
                followed,
                matched,
                ..
            }) = &e[0]
            else {
                panic!("{e:?}")
            };
            assert_eq!((*epoch, *followed), (2, true));
            assert!(matched.is_some(), "{e:?}");
        }
        let elsewhere = [
            vec![call("Bash", "ls -la /tmp")],
            // A command naming another file that ends like a watched one.
            vec![call("Bash", "cat notes/jwt_design.md.bak")],
            vec![
                call("Read", "/p/src/other.rs"),
                call("Read", "/q/notes/jwt_design.md"),
            ],
            vec![call("TaskUpdate", "3")],
            vec![call("WebSearch", "")],
        ];
        for calls in elsewhere {
            let (v, e) = verdict(Some(calls.clone()));
            assert_eq!(v, Some(false), "{calls:?}");
            let Effect::Record(LogEvent::ResumeFollowed { first_call, .. }) = &e[0] else {
                panic!("{e:?}")
            };
            assert_eq!(first_call.tool, calls[0].tool);
        }
        // No tool call yet (a text-only answer), or the marker not found: undecided.
        for calls in [Some(Vec::new()), None] {
            let (v, e) = verdict(calls);
            assert_eq!(v, None);
            assert!(e.is_empty());
        }
    }

    /// What the engine does with an arrival check: the words and the line
    /// from the pending prompt, then the verdict taken in.
    fn arrive(s: &mut Session, found: bool, now: u64) -> Vec<Effect> {
        let Some(pending) = s.resume_pending.clone() else {
            return Vec::new();
        };
        let effects = arrival_effects(&pending, found, now);
        on_arrival(s, &pending.marker, found, now);
        effects
    }

    #[test]
    fn the_verdict_waits_for_the_arrival_and_is_given_once_per_compaction() {
        let config = Config::default();
        let mut s = session(Harness::ClaudeCode);
        s.follow_watch = Some(watch());
        s.resume_pending = Some(pending_prompt(MARKER, "p", 0, false));
        let tool = event(Harness::ClaudeCode, EventName::PostToolUse);
        let e = on_hook(&mut s, &tool, None, &config, 1);
        assert!(e.contains(&Effect::CheckArrival) && e.contains(&Effect::CheckFollowed));
        let start = hook(
            Harness::ClaudeCode,
            Event::SessionStart {
                source: Some("resume".into()),
            },
        );
        assert!(!on_hook(&mut s, &start, None, &config, 2).contains(&Effect::CheckFollowed));
        let calls = || Some(vec![call("Read", "notes/jwt_design.md")]);
        assert!(
            on_follow_reading(&mut s, MARKER, calls()).is_empty(),
            "not arrived yet"
        );
        arrive(&mut s, true, 3);
        assert!(
            on_follow_reading(&mut s, "[hookd-resume 0]", calls()).is_empty(),
            "calls read after another prompt's marker judge nothing"
        );
        assert_eq!(on_follow_reading(&mut s, MARKER, calls()).len(), 1);
        assert!(s.follow_watch.is_none());
        assert!(
            on_follow_reading(&mut s, MARKER, calls()).is_empty(),
            "once"
        );
        assert!(!on_hook(&mut s, &tool, None, &config, 4).contains(&Effect::CheckFollowed));
        let status = s.status(None);
        assert_eq!(status.resumes_followed.len(), 1);
        assert_eq!(status.resumes_followed[0].words(), "resumed and followed");
        // A prompt lost for good cannot be followed: nothing left to decide.
        s.follow_watch = Some(watch());
        s.resume_pending = Some(pending_prompt(MARKER, "p", 0, true));
        arrive(&mut s, false, 5);
        assert!(s.follow_watch.is_none());
    }

    #[test]
    fn hooks_at_once_leave_the_arrival_check_and_the_verdict_to_one() {
        let config = Config::default();
        let mut s = session(Harness::ClaudeCode);
        s.follow_watch = Some(watch());
        s.resume_pending = Some(pending_prompt(MARKER, "p", 0, false));
        let tool = event(Harness::ClaudeCode, EventName::PostToolUse);
        assert!(on_hook(&mut s, &tool, None, &config, 1_000).contains(&Effect::CheckArrival));
        // A second hook while the first looks: it neither injects nor judges.
        assert!(!on_hook(&mut s, &tool, None, &config, 1_200).contains(&Effect::CheckArrival));
        // The first one's verdict frees it for the prompt injected again.
        on_arrival(&mut s, MARKER, false, 1_300);
        assert!(s.resume_pending.as_ref().unwrap().reinjected);
        assert!(on_hook(&mut s, &tool, None, &config, 1_400).contains(&Effect::CheckArrival));
        // A hook that took the check and never came back holds it no longer
        // than its claim.
        assert!(!on_hook(&mut s, &tool, None, &config, 5_000).contains(&Effect::CheckArrival));
        assert!(on_hook(&mut s, &tool, None, &config, 11_500).contains(&Effect::CheckArrival));
        // Two verdicts on one prompt: the session takes the first only.
        on_arrival(&mut s, MARKER, true, 11_600);
        let verdict = || ResumeFollowed {
            epoch: 1,
            followed: Some(true),
            detail: None,
        };
        assert!(on_followed(&mut s, MARKER, verdict()));
        assert!(!on_followed(&mut s, MARKER, verdict()));
        assert_eq!(s.followed.len(), 1);
    }

    #[test]
    fn a_missing_resume_prompt_goes_in_once_more_then_counts_as_lost() {
        let mut s = session(Harness::ClaudeCode);
        let pending = pending_prompt("[hookd-resume 1]", "the prompt", 100, false);
        s.resume_pending = Some(pending.clone());
        let e = arrive(&mut s, true, 500);
        assert_eq!(s.resume.as_ref().unwrap().what, "arrived");
        assert!(s.resume_pending.is_none());
        assert!(!e.iter().any(|e| matches!(e, Effect::Say { .. })));

        s.resume_pending = Some(pending);
        let e = arrive(&mut s, false, 500);
        assert!(e.contains(&Effect::Say {
            person: None,
            model: Some("the prompt".into())
        }));
        assert!(s.resume_pending.as_ref().unwrap().reinjected);
        let e = arrive(&mut s, false, 900);
        assert!(!e.iter().any(|e| matches!(e, Effect::Say { .. })));
        assert!(s.resume_pending.is_none());
        assert!(!s.resume.as_ref().unwrap().ok);
        assert!(arrive(&mut s, false, 950).is_empty(), "nothing pending");
        // The verdict on one prompt leaves a prompt injected since alone.
        s.resume_pending = Some(pending_prompt("[hookd-resume 2]", "another", 900, false));
        on_arrival(&mut s, "[hookd-resume 1]", false, 1_000);
        assert_eq!(
            s.resume_pending.as_ref().map(|p| p.marker.as_str()),
            Some("[hookd-resume 2]")
        );
    }
}

//! The `hookd-state` block a compaction summary ends with, when the
//! summarizer did what PreCompact asked: YAML with the state's own field
//! names, behind the one-time token PreCompact gave for this compaction.
//!
//! ````text
//! ```hookd-state 5b0e6a1f9c2d47e08a3b6c1d2e4f5a67
//! decisions:
//!   - {topic: Storage, decision: SQLite in WAL mode, reasoning: one writer}
//! rejected:
//!   - {approach: a JSON file per record, why: too slow past 10k records}
//! blockers:
//!   - {issue: flaky CI on macOS, status: unresolved, notes: retry once}
//! constraints: [no new dependencies, keep the public API]
//! lifted_constraints: [do not touch the CLI]
//! active_task: the migration tool
//! progress_notes: schema done; migration half written
//! next_actions:
//!   - {action: finish, target: src/migrate.rs, priority: 1, context_needed: [src/db.rs]}
//! ```
//! ````
//!
//! Summaries quote what the agent read, and a repository's files can hold
//! such blocks: only the summary's last fenced block counts, and only with
//! the token, which no file can know. Every other `hookd-state` block is
//! ignored (and counted, for `events.jsonl`).
//!
//! The summary is the model's text about an untrusted conversation, so the
//! block is read tolerantly and within bounds: a missing block is no block,
//! a malformed one gives what parts of it are valid (a cut-off block is
//! read up to its last whole line), text is cleaned of control characters
//! and clipped, and lists are capped. Text stays text: it is only ever a
//! value the templates print.
//!
//! [`merge`] puts a block into a saved state: what the project's workflow
//! file or hookctl records say wins over the summary on the same topic,
//! issue or action; the summary's own next actions go first. Its
//! decisions, rejected approaches, blockers and the person's constraints
//! carry from one capture to the next ([`carry_over`]) until a later one
//! supersedes them (or lifts the constraint).

use crate::capture::yaml;
use crate::state::{Blocker, ContextState, Decision, NextAction, Rejected, SOURCE_SUMMARY};
use protocol::text::clip;
use serde_json::Value;

/// The fenced code block's info string: its first word, before the token.
pub const INFO_STRING: &str = "hookd-state";
/// A longer block is cut (and read up to its last whole line).
const MAX_BLOCK_BYTES: usize = 16 * 1024;
/// Entries kept from each list of one summary.
pub const MAX_ITEMS: usize = 12;
/// Decisions, rejected approaches and blockers from summaries a state keeps.
pub const MAX_KEPT: usize = 30;
/// Longest text of one field, in characters.
const MAX_TEXT_CHARS: usize = 300;
/// Files named by one next action.
const MAX_FILES: usize = 8;
/// Problems noted about one summary.
const MAX_PROBLEMS: usize = 8;
/// Lines dropped from the end of a block that does not parse, at most.
const MAX_TRIMMED_LINES: usize = 20;
/// The topic of a decision that named none; such decisions never supersede each other.
const NO_TOPIC: &str = "general";
/// Random bytes in a token.
const TOKEN_BYTES: usize = 16;

/// What the summary's final `hookd-state` block says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SummaryState {
    pub decisions: Vec<Decision>,
    pub rejected: Vec<Rejected>,
    pub blockers: Vec<Blocker>,
    pub active_task: Option<String>,
    pub progress_notes: Option<String>,
    pub next_actions: Vec<NextAction>,
    /// What the person said must or must not be done.
    pub constraints: Vec<String>,
    /// Constraints the person lifted.
    pub lifted_constraints: Vec<String>,
    /// What was left out, and why.
    pub problems: Vec<String>,
    /// Of the block's text, so the same summary is merged once.
    pub fingerprint: String,
}

impl SummaryState {
    /// Whether the block gave anything a state can use.
    pub fn is_empty(&self) -> bool {
        self.decisions.is_empty()
            && self.rejected.is_empty()
            && self.blockers.is_empty()
            && self.active_task.is_none()
            && self.progress_notes.is_none()
            && self.next_actions.is_empty()
            && self.constraints.is_empty()
            && self.lifted_constraints.is_empty()
    }

    fn note(&mut self, problem: String) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(clip(&problem, 200));
        }
    }
}

/// What a summary's `hookd-state` blocks came to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    /// The block hookd asked for, read; `None` when there is none.
    pub state: Option<SummaryState>,
    /// `hookd-state` blocks that were not read: quoted, misplaced, or
    /// without this compaction's token.
    pub ignored: usize,
    /// Why no block was read, when the summary has `hookd-state` blocks.
    pub why_not: Option<String>,
}

/// A new token for one compaction's block: 128 bits from the OS's random
/// source, in hex. `None` when the OS gives none (no block counts then).
pub fn new_token() -> Option<String> {
    crate::random::hex(TOKEN_BYTES)
}

/// Reads the block hookd asked for, and only that one: the summary's last
/// fenced block, with the info string `hookd-state <token>` where `token`
/// is the one PreCompact gave this compaction. Any other `hookd-state`
/// block (a file the summary quotes, one in any fence, one without the
/// token or not at the end) is counted as ignored and never read.
pub fn parse(summary: &str, token: Option<&str>) -> Parsed {
    let mentions = summary
        .lines()
        .filter(|l| opening(l).is_some_and(|(_, _, info)| is_hookd_state(info)))
        .count();
    if mentions == 0 {
        return Parsed::default();
    }
    let refused = |why: &str| Parsed {
        state: None,
        ignored: mentions,
        why_not: Some(why.to_owned()),
    };
    let Some(last) = last_fenced_block(summary) else {
        return refused("no block ends the summary");
    };
    if !is_hookd_state(last.info) {
        return refused(&format!(
            "the summary does not end with a {INFO_STRING} block"
        ));
    }
    let Some(expected) = token else {
        return refused(
            "no token was given for this compaction (its PreCompact hook did not run, or gave no instructions)",
        );
    };
    let mut words = last.info.split_whitespace().skip(1);
    if words.next() != Some(expected) || words.next().is_some() {
        return refused("the final block does not carry this compaction's token");
    }
    Parsed {
        state: Some(read_block(last.body)),
        ignored: mentions - 1,
        why_not: None,
    }
}

fn is_hookd_state(info: &str) -> bool {
    info.split_whitespace()
        .next()
        .is_some_and(|w| w.eq_ignore_ascii_case(INFO_STRING))
}

/// A line that opens a fence: its fence character, its length and its
/// info string.
fn opening(line: &str) -> Option<(char, usize, &str)> {
    let trimmed = line.trim();
    let fence = trimmed.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let length = trimmed.chars().take_while(|&c| c == fence).count();
    (length >= 3).then(|| (fence, length, trimmed[length..].trim()))
}

struct FencedBlock<'a> {
    info: &'a str,
    body: &'a str,
}

/// The summary's last fenced block, whatever its info string, when only
/// text without fences follows it; one left open runs to the end (a
/// summary cut short). Fences nest as in Markdown: inside a block, only a
/// bare fence of the same character, at least as long, closes it.
fn last_fenced_block(text: &str) -> Option<FencedBlock<'_>> {
    let mut last = None;
    let mut open: Option<(char, usize, &str, usize)> = None; // fence, length, info, body start
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let line_start = offset;
        offset += line.len();
        match open {
            None => {
                if let Some((fence, length, info)) = opening(line) {
                    open = Some((fence, length, info, offset));
                }
            }
            Some((fence, length, info, body_start)) => {
                let trimmed = line.trim();
                let closes = !trimmed.is_empty()
                    && trimmed.chars().all(|c| c == fence)
                    && trimmed.chars().count() >= length;
                if closes {
                    last = Some(FencedBlock {
                        info,
                        body: &text[body_start..line_start],
                    });
                    open = None;
                }
            }
        }
    }
    if let Some((_, _, info, body_start)) = open {
        last = Some(FencedBlock {
            info,
            body: &text[body_start.min(text.len())..],
        });
    }
    last
}

/// One block's YAML, read tolerantly and within bounds.
fn read_block(body: &str) -> SummaryState {
    // Only a block's first bytes are read, and fingerprinted.
    let bounded = head(body, MAX_BLOCK_BYTES);
    let mut out = SummaryState {
        fingerprint: crate::state::fingerprint(&[bounded]),
        ..SummaryState::default()
    };
    let which = format!("the {INFO_STRING} block");
    if bounded.len() < body.len() {
        out.note(format!(
            "{which} is longer than {MAX_BLOCK_BYTES} bytes; the rest was not read"
        ));
    }
    if let Some(value) = read_yaml(bounded, &which, &mut out) {
        take_fields(&value, &which, &mut out);
    }
    dedup_latest(&mut out.decisions, same_decision, MAX_ITEMS);
    dedup_latest(
        &mut out.rejected,
        |a, b| same_text(&a.approach, &b.approach),
        MAX_ITEMS,
    );
    dedup_latest(
        &mut out.blockers,
        |a, b| same_text(&a.issue, &b.issue),
        MAX_ITEMS,
    );
    dedup_latest(&mut out.next_actions, same_action, MAX_ITEMS);
    dedup_latest(&mut out.constraints, |a, b| same_words(a, b), MAX_ITEMS);
    dedup_latest(
        &mut out.lifted_constraints,
        |a, b| same_words(a, b),
        MAX_ITEMS,
    );
    out
}

/// A block's YAML as data. A block that does not parse is read again
/// without its last lines, so one cut short still gives its whole entries.
fn read_yaml(body: &str, which: &str, out: &mut SummaryState) -> Option<Value> {
    let mut lines: Vec<&str> = body.lines().collect();
    let mut first_error = None;
    for _ in 0..=MAX_TRIMMED_LINES {
        match yaml::to_json(&lines.join("\n")) {
            Ok(value) => {
                if let Some(e) = first_error {
                    out.note(format!(
                        "{which} is not whole YAML ({e}); its last lines were left out"
                    ));
                }
                return Some(value);
            }
            Err(e @ yaml::NotData::Tag(_)) => {
                out.note(format!("{which}: {e}; the block was not used"));
                return None;
            }
            Err(yaml::NotData::Syntax(e)) => {
                first_error.get_or_insert(e);
                if lines.pop().is_none() {
                    break;
                }
            }
        }
    }
    out.note(format!(
        "{which} is not YAML ({}); not used",
        first_error.unwrap_or_default()
    ));
    None
}

fn take_fields(value: &Value, which: &str, out: &mut SummaryState) {
    let Value::Object(fields) = value else {
        if !value.is_null() {
            out.note(format!("{which} is not a map of fields; not used"));
        }
        return;
    };
    for (key, value) in fields {
        match key.as_str() {
            "decisions" => {
                let found = take_list(
                    value,
                    key,
                    which,
                    out,
                    decision,
                    "a decision without `decision`",
                );
                out.decisions.extend(found);
            }
            "rejected" => {
                let found = take_list(
                    value,
                    key,
                    which,
                    out,
                    rejected,
                    "a rejected entry without `approach`",
                );
                out.rejected.extend(found);
            }
            "blockers" => {
                let found = take_list(value, key, which, out, blocker, "a blocker without `issue`");
                out.blockers.extend(found);
            }
            "next_actions" => {
                let found = take_list(
                    value,
                    key,
                    which,
                    out,
                    next_action,
                    "a next action without `action`",
                );
                out.next_actions.extend(found);
            }
            "constraints" => {
                let found = texts(value, key, which, out);
                out.constraints.extend(found);
            }
            "lifted_constraints" => {
                let found = texts(value, key, which, out);
                out.lifted_constraints.extend(found);
            }
            "active_task" => out.active_task = text(value).or(out.active_task.take()),
            "progress_notes" => {
                out.progress_notes = match value {
                    Value::Array(notes) => {
                        let joined = notes
                            .iter()
                            .take(MAX_ITEMS)
                            .filter_map(text)
                            .collect::<Vec<_>>()
                            .join("; ");
                        (!joined.is_empty()).then(|| clip(&joined, MAX_TEXT_CHARS))
                    }
                    other => text(other),
                }
                .or(out.progress_notes.take())
            }
            other => out.note(format!(
                "{which}: unknown field `{}` ignored",
                clip(other, 40)
            )),
        }
    }
}

/// The entries of list field `key` that `build` makes something of; each
/// one it cannot is noted as `missing` ("a blocker without `issue`").
fn take_list<T>(
    value: &Value,
    key: &str,
    which: &str,
    out: &mut SummaryState,
    build: fn(&Value) -> Option<T>,
    missing: &str,
) -> Vec<T> {
    let mut found = Vec::new();
    for item in entries(value, key, which, out) {
        match build(item) {
            Some(entry) => found.push(entry),
            None => out.note(format!("{which}: {missing} was left out")),
        }
    }
    found
}

/// The maps of a list field (one map alone counts as a list of one), the
/// first few hundred looked at.
fn entries<'v>(value: &'v Value, key: &str, which: &str, out: &mut SummaryState) -> Vec<&'v Value> {
    let items: Vec<&Value> = match value {
        Value::Array(items) => items.iter().collect(),
        Value::Object(_) => vec![value],
        Value::Null => Vec::new(),
        _ => {
            out.note(format!("{which}: `{key}` is not a list; not used"));
            Vec::new()
        }
    };
    let maps: Vec<&Value> = items.into_iter().filter(|v| v.is_object()).collect();
    if maps.len() > MAX_ITEMS {
        out.note(format!(
            "{which}: `{key}` has {} entries; the last {MAX_ITEMS} were kept",
            maps.len()
        ));
    }
    maps[maps.len().saturating_sub(MAX_ITEMS)..].to_vec()
}

/// The texts of a list of plain strings (one string alone counts as a list
/// of one), the last [`MAX_ITEMS`] kept.
fn texts(value: &Value, key: &str, which: &str, out: &mut SummaryState) -> Vec<String> {
    let items: Vec<&Value> = match value {
        Value::Array(items) => items.iter().collect(),
        Value::Null => Vec::new(),
        Value::String(_) | Value::Number(_) | Value::Bool(_) => vec![value],
        Value::Object(_) => {
            out.note(format!("{which}: `{key}` is not a list of text; not used"));
            Vec::new()
        }
    };
    let found: Vec<String> = items.into_iter().filter_map(text).collect();
    if found.len() > MAX_ITEMS {
        out.note(format!(
            "{which}: `{key}` has {} entries; the last {MAX_ITEMS} were kept",
            found.len()
        ));
    }
    found[found.len().saturating_sub(MAX_ITEMS)..].to_vec()
}

fn decision(item: &Value) -> Option<Decision> {
    Some(Decision {
        topic: text(&item["topic"]).unwrap_or_else(|| NO_TOPIC.into()),
        decision: text(&item["decision"])?,
        reasoning: text(&item["reasoning"]).or_else(|| text(&item["why"])),
        timestamp: None,
        source: SOURCE_SUMMARY.into(),
    })
}

fn rejected(item: &Value) -> Option<Rejected> {
    Some(Rejected {
        approach: text(&item["approach"])?,
        why: text(&item["why"]).or_else(|| text(&item["reasoning"])),
        source: SOURCE_SUMMARY.into(),
    })
}

fn blocker(item: &Value) -> Option<Blocker> {
    let status = text(&item["status"]).unwrap_or_default();
    Some(Blocker {
        issue: text(&item["issue"])?,
        status: crate::state::blocker_status(&status).into(),
        notes: text(&item["notes"]),
        source: SOURCE_SUMMARY.into(),
    })
}

fn next_action(item: &Value) -> Option<NextAction> {
    let priority = match &item["priority"] {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
    .filter(|p| (1..100).contains(p))
    .unwrap_or(0) as u32;
    let files: Vec<&Value> = match &item["context_needed"] {
        Value::Array(files) => files.iter().collect(),
        one @ Value::String(_) => vec![one],
        _ => Vec::new(),
    };
    let mut context_needed: Vec<String> = Vec::new();
    for path in files
        .into_iter()
        .filter_map(text)
        .filter(|p| is_project_path(p))
    {
        if context_needed.len() < MAX_FILES && !context_needed.contains(&path) {
            context_needed.push(path);
        }
    }
    Some(NextAction {
        action: text(&item["action"])?,
        target: text(&item["target"]).unwrap_or_default(),
        priority,
        context_needed,
        source: SOURCE_SUMMARY.into(),
    })
}

/// A path that can only name something inside the project.
fn is_project_path(path: &str) -> bool {
    !path.starts_with(['/', '~', '\\'])
        && !path.contains(':')
        && std::path::Path::new(path).components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        })
}

/// A field's text: strings, numbers and booleans as they read, on one
/// line ([`protocol::text::one_line`]) and clipped. Anything else, or
/// nothing left, is no text.
fn text(value: &Value) -> Option<String> {
    let raw = match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => return None,
    };
    let cleaned = protocol::text::one_line(&raw);
    (!cleaned.is_empty()).then(|| clip(&cleaned, MAX_TEXT_CHARS))
}

/// The first `max` bytes of `text`, cut at a character boundary.
fn head(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn same_text(a: &str, b: &str) -> bool {
    a.trim().eq_ignore_ascii_case(b.trim())
}

/// Same topic (a named one), or the same decision.
fn same_decision(a: &Decision, b: &Decision) -> bool {
    (same_text(&a.topic, &b.topic) && !same_text(&a.topic, NO_TOPIC))
        || same_text(&a.decision, &b.decision)
}

fn same_action(a: &NextAction, b: &NextAction) -> bool {
    same_text(&a.action, &b.action) && same_text(&a.target, &b.target)
}

/// Keeps the latest of entries that are the same, in the order they came,
/// and the last `max` of them.
fn dedup_latest<T>(items: &mut Vec<T>, same: impl Fn(&T, &T) -> bool, max: usize) {
    let mut kept: Vec<T> = Vec::with_capacity(items.len());
    for item in items.drain(..) {
        kept.retain(|k| !same(k, &item));
        kept.push(item);
    }
    let excess = kept.len().saturating_sub(max);
    kept.drain(..excess);
    *items = kept;
}

/// Merges a summary's block into `state`. Returns whether anything of it
/// was taken.
pub fn merge(state: &mut ContextState, block: &SummaryState) -> bool {
    let mut taken = merge_lists(state, &block.decisions, &block.rejected, &block.blockers);
    if state.active_work.action.is_none() && block.active_task.is_some() {
        state.active_work.action.clone_from(&block.active_task);
        taken = true;
    }
    if state.active_work.progress_notes.is_none() && block.progress_notes.is_some() {
        state
            .active_work
            .progress_notes
            .clone_from(&block.progress_notes);
        taken = true;
    }
    taken |= merge_constraints(state, &block.constraints, &block.lifted_constraints);
    taken |= put_summary_actions_first(state, &block.next_actions);
    if taken && !state.sources.iter().any(|s| s == SOURCE_SUMMARY) {
        state.sources.push(SOURCE_SUMMARY.into());
    }
    taken
}

/// The summary's next actions, in its priority order, before the state's;
/// then every action numbered 1.. in that order. The state's own entry for
/// the same action stays (the records' word wins) but moves up to the
/// summary's place, and the step made from a task in progress is dropped
/// when a summary action plainly is that task (its files join it).
fn put_summary_actions_first(state: &mut ContextState, actions: &[NextAction]) -> bool {
    let mut wanted: Vec<&NextAction> = actions.iter().collect();
    wanted.sort_by_key(|a| {
        if a.priority == 0 {
            u32::MAX
        } else {
            a.priority
        }
    });
    let mut rest = std::mem::take(&mut state.next_actions);
    let mut first: Vec<NextAction> = Vec::new();
    for action in wanted {
        let mut action = match rest.iter().position(|x| same_action(x, action)) {
            Some(at) => rest.remove(at),
            None => action.clone(),
        };
        if let Some(at) = rest.iter().position(|x| finishes_the_same_task(x, &action)) {
            let task = rest.remove(at);
            for file in task.context_needed {
                if action.context_needed.len() < MAX_FILES && !action.context_needed.contains(&file)
                {
                    action.context_needed.push(file);
                }
            }
        }
        first.push(action);
    }
    let taken = !first.is_empty();
    first.extend(rest);
    for (i, action) in first.iter_mut().enumerate() {
        action.priority = i as u32 + 1;
    }
    state.next_actions = first;
    taken
}

/// `task_step` is the step capture made from a task in progress
/// (`finish <title>`), and `action` names that task: its target or its
/// whole text is the title, or it holds every word of the title after the
/// first (the title's verb), when there are two or more ("finish JWT
/// signing in src/jwt.rs" names "Implement JWT signing").
fn finishes_the_same_task(task_step: &NextAction, action: &NextAction) -> bool {
    if task_step.action != crate::capture::FINISH || task_step.source == SOURCE_SUMMARY {
        return false;
    }
    let whole = format!("{} {}", action.action, action.target);
    if same_text(&action.target, &task_step.target) || same_text(&whole, &task_step.target) {
        return true;
    }
    let words = |text: &str| -> Vec<String> {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let named = words(&whole);
    let title = words(&task_step.target);
    title.len() > 2 && title[1..].iter().all(|w| named.contains(w))
}

/// Adds the constraints the state does not have yet (case and spaces
/// aside) and drops the lifted ones. Returns whether anything changed.
fn merge_constraints(state: &mut ContextState, constraints: &[String], lifted: &[String]) -> bool {
    let before = state.constraints.clone();
    for c in constraints {
        if !state.constraints.iter().any(|x| same_words(x, c)) {
            state.constraints.push(c.clone());
        }
    }
    state
        .constraints
        .retain(|c| !lifted.iter().any(|l| same_words(c, l)));
    let excess = state.constraints.len().saturating_sub(MAX_KEPT);
    state.constraints.drain(..excess);
    state.constraints != before
}

/// The same text, whatever its case and however its words are spaced.
fn same_words(a: &str, b: &str) -> bool {
    let words = |t: &str| {
        t.split_whitespace()
            .map(str::to_lowercase)
            .collect::<Vec<_>>()
    };
    words(a) == words(b)
}

/// Brings the summary's decisions, rejected approaches, blockers and the
/// person's constraints of an earlier capture of the same session into a
/// new one.
pub fn carry_over(state: &mut ContextState, earlier: &ContextState) {
    let decisions: Vec<Decision> = earlier
        .decisions
        .iter()
        .filter(|d| d.source == SOURCE_SUMMARY)
        .cloned()
        .collect();
    let blockers: Vec<Blocker> = earlier
        .blockers
        .iter()
        .filter(|b| b.source == SOURCE_SUMMARY)
        .cloned()
        .collect();
    let carried = merge_lists(state, &decisions, &earlier.rejected, &blockers)
        | merge_constraints(state, &earlier.constraints, &[]);
    if carried && !state.sources.iter().any(|s| s == SOURCE_SUMMARY) {
        state.sources.push(SOURCE_SUMMARY.into());
    }
}

/// The summary's entries join the state's: one the workflow file or a
/// record already settles (same topic, decision or issue) is left out; one
/// an earlier summary gave is replaced.
fn merge_lists(
    state: &mut ContextState,
    decisions: &[Decision],
    rejected: &[Rejected],
    blockers: &[Blocker],
) -> bool {
    let mut taken = false;
    for d in decisions {
        let settled = state
            .decisions
            .iter()
            .any(|x| x.source != SOURCE_SUMMARY && same_decision(x, d));
        if !settled {
            state
                .decisions
                .retain(|x| x.source != SOURCE_SUMMARY || !same_decision(x, d));
            state.decisions.push(d.clone());
            taken = true;
        }
    }
    keep_newest(&mut state.decisions, |d| d.source == SOURCE_SUMMARY);
    for r in rejected {
        state
            .rejected
            .retain(|x| !same_text(&x.approach, &r.approach));
        state.rejected.push(r.clone());
        taken = true;
    }
    keep_newest(&mut state.rejected, |_| true);
    for b in blockers {
        let settled = state
            .blockers
            .iter()
            .any(|x| x.source != SOURCE_SUMMARY && same_text(&x.issue, &b.issue));
        if !settled {
            state
                .blockers
                .retain(|x| x.source != SOURCE_SUMMARY || !same_text(&x.issue, &b.issue));
            state.blockers.push(b.clone());
            taken = true;
        }
    }
    keep_newest(&mut state.blockers, |b| b.source == SOURCE_SUMMARY);
    taken
}

/// Drops the oldest entries `from_summary` picks beyond [`MAX_KEPT`].
fn keep_newest<T>(items: &mut Vec<T>, from_summary: impl Fn(&T) -> bool) {
    let mut excess = items
        .iter()
        .filter(|i| from_summary(i))
        .count()
        .saturating_sub(MAX_KEPT);
    items.retain(|i| {
        if excess > 0 && from_summary(i) {
            excess -= 1;
            false
        } else {
            true
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Blocker;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    fn summary_with(block: &str) -> String {
        format!(
            "<summary>\n1. Primary request: build the parser.\n\n```hookd-state {TOKEN}\n{block}\n```\n</summary>"
        )
    }

    /// The block the summary ends with, read with this compaction's token.
    fn read(summary: &str) -> Option<SummaryState> {
        parse(summary, Some(TOKEN)).state
    }

    const WELL_FORMED: &str = "\
decisions:
  - {topic: Storage, decision: SQLite in WAL mode, reasoning: one writer}
  - topic: Errors
    decision: thiserror in the library
rejected:
  - {approach: a JSON file per record, why: too slow past 10k records}
blockers:
  - {issue: flaky CI on macOS, status: unresolved, notes: retry once}
  - {issue: missing fixture, status: Fixed}
active_task: the migration tool
progress_notes: [schema done, migration half written]
next_actions:
  - {action: finish, target: src/migrate.rs, priority: 2, context_needed: [src/db.rs, /etc/passwd, ../x.rs]}
  - {action: run, target: the tests, priority: \"1\"}";

    #[test]
    fn a_well_formed_block_reads_whole() {
        let s = read(&summary_with(WELL_FORMED)).unwrap();
        assert_eq!(s.problems, Vec::<String>::new());
        assert_eq!(s.decisions.len(), 2);
        assert_eq!(s.decisions[0].topic, "Storage");
        assert_eq!(s.decisions[0].reasoning.as_deref(), Some("one writer"));
        assert_eq!(s.decisions[1].reasoning, None);
        assert!(s.decisions.iter().all(|d| d.source == SOURCE_SUMMARY));
        assert_eq!(s.rejected[0].approach, "a JSON file per record");
        assert_eq!(
            s.blockers
                .iter()
                .map(|b| b.status.as_str())
                .collect::<Vec<_>>(),
            ["unresolved", "resolved"]
        );
        assert_eq!(s.active_task.as_deref(), Some("the migration tool"));
        assert_eq!(
            s.progress_notes.as_deref(),
            Some("schema done; migration half written")
        );
        assert_eq!(s.next_actions[0].priority, 2);
        assert_eq!(s.next_actions[1].priority, 1);
        assert_eq!(
            s.next_actions[0].context_needed,
            ["src/db.rs"],
            "only paths inside the project"
        );
        assert!(!s.fingerprint.is_empty());
    }

    #[test]
    fn no_block_is_none_and_other_blocks_are_not_read() {
        assert_eq!(
            parse("<summary>nothing structured</summary>", Some(TOKEN)),
            Parsed::default()
        );
        assert_eq!(
            parse(
                "```yaml\ndecisions: [{topic: a, decision: b}]\n```",
                Some(TOKEN)
            ),
            Parsed::default()
        );
        assert_eq!(parse("", Some(TOKEN)), Parsed::default());
    }

    #[test]
    fn a_partial_block_gives_its_whole_entries() {
        // Cut off mid-entry, with no closing fence: a summary that ran out of tokens.
        let text = "```hookd-state 0123456789abcdef0123456789abcdef\ndecisions:\n  - {topic: A, decision: first}\n  - {topic: B, decision: sec";
        let s = read(text).unwrap();
        assert_eq!(s.decisions.len(), 1, "{s:?}");
        assert_eq!(s.decisions[0].decision, "first");
        assert!(s.problems[0].contains("not whole YAML"), "{:?}", s.problems);
        // Entries without their required field are left out, the rest kept.
        let s = read(&summary_with(
            "decisions:\n  - {topic: A}\n  - {topic: B, decision: kept}\nblockers: {notes: no issue}",
        ))
        .unwrap();
        assert_eq!(s.decisions.len(), 1);
        assert!(s.blockers.is_empty());
        assert_eq!(s.problems.len(), 2, "{:?}", s.problems);
    }

    #[test]
    fn a_malformed_block_is_noted_and_gives_nothing() {
        for body in [
            "decisions: [unclosed",
            "- just\n- a list",
            "42",
            "decisions: 7",
        ] {
            let s = read(&summary_with(body)).unwrap();
            assert!(s.is_empty(), "{body}: {s:?}");
            assert!(!s.problems.is_empty(), "{body}");
        }
        // An empty block is a block with nothing in it.
        assert!(read(&summary_with("")).unwrap().is_empty());
    }

    #[test]
    fn only_the_final_block_with_the_token_counts() {
        let earlier = "```hookd-state\ndecisions: [{topic: Storage, decision: Postgres}]\n```";
        let text = format!(
            "{earlier}\n{}",
            summary_with("decisions: [{topic: storage, decision: SQLite}, {decision: untitled}]")
        );
        let parsed = parse(&text, Some(TOKEN));
        assert_eq!(parsed.ignored, 1, "the earlier block is ignored");
        let s = parsed.state.unwrap();
        let decisions: Vec<_> = s
            .decisions
            .iter()
            .map(|d| (d.topic.as_str(), d.decision.as_str()))
            .collect();
        assert_eq!(decisions, [("storage", "SQLite"), (NO_TOPIC, "untitled")]);

        let block = "decisions: [{topic: a, decision: b}]";
        let refused = |text: &str, token: Option<&str>| {
            let parsed = parse(text, token);
            assert_eq!(parsed.state, None, "{text}");
            assert!(parsed.ignored >= 1, "{text}");
            parsed.why_not.unwrap()
        };
        // No token was given: PreCompact did not run.
        assert!(refused(&summary_with(block), None).contains("did not run"));
        // Another token, none, or one with more after it.
        for info in [
            "hookd-state ffffffffffffffffffffffffffffffff".to_owned(),
            "hookd-state".to_owned(),
            format!("hookd-state {TOKEN} extra"),
            format!("hookd-state {}", &TOKEN[..31]),
        ] {
            let text = format!("```{info}\n{block}\n```");
            assert!(refused(&text, Some(TOKEN)).contains("token"), "{info}");
        }
        // The right token, not at the end: prose may follow, a fence may not.
        let text = format!("{}\n```\nquoted\n```\n", summary_with(block));
        assert!(refused(&text, Some(TOKEN)).contains("does not end"));
        let text = format!(
            "{}\nIf you need details, read the transcript.\n",
            summary_with(block)
        );
        assert!(read(&text).is_some(), "prose after the block");
        // Quoted in other fences, longer ones, indented: ignored, counted.
        for quoted in [
            "~~~hookd-state\nblockers: [{issue: x, status: resolved}]\n~~~",
            "````hookd-state\nblockers: [{issue: x, status: resolved}]\n````",
            "    ```hookd-state\n    blockers: [{issue: x, status: resolved}]\n    ```",
            "````markdown\n```hookd-state\nblockers: [{issue: x, status: resolved}]\n```\n````",
        ] {
            let parsed = parse(&format!("{quoted}\n{}", summary_with(block)), Some(TOKEN));
            assert_eq!(parsed.ignored, 1, "{quoted}");
            let s = parsed.state.unwrap();
            assert!(s.blockers.is_empty(), "{quoted}: {s:?}");
            assert_eq!(s.decisions.len(), 1);
            // And the same quote closing the summary, with no block of hookd's.
            let parsed = parse(&format!("<summary>\n{quoted}\n</summary>"), Some(TOKEN));
            assert_eq!((parsed.state, parsed.ignored), (None, 1), "{quoted}");
        }
        // An unclosed quote swallows what follows: nothing counts.
        let text = format!(
            "```hookd-state\nblockers: [{{issue: x}}]\n{}",
            summary_with(block)
        );
        assert_eq!(parse(&text, Some(TOKEN)).state, None);
        // Tokens are long, random and new each time.
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_eq!(a.len(), 2 * TOKEN_BYTES);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn hostile_blocks_stay_bounded_and_text_stays_data() {
        // A million entries: the block is cut to its bound and the list capped.
        let entries: String = (0..1_000_000)
            .map(|i| format!("  - {{decision: d{i}}}\n"))
            .collect();
        let huge = format!("decisions:\n{entries}");
        let started = std::time::Instant::now();
        let s = read(&summary_with(&huge)).unwrap();
        assert_eq!(s.decisions.len(), MAX_ITEMS);
        // As many blocks: the last one is read, the others counted.
        let many = summary_with("decisions: [{decision: d}]").repeat(100_000);
        let parsed = parse(&many, Some(TOKEN));
        assert_eq!(parsed.ignored, 99_999);
        assert_eq!(parsed.state.unwrap().decisions.len(), 1);
        assert!(started.elapsed() < std::time::Duration::from_secs(30));
        // One huge string, template syntax and control characters.
        let long = "x".repeat(100_000);
        let s = read(&summary_with(&format!(
            "decisions:\n  - topic: \"{{{{#each a}}}}{{{{/each}}}}\"\n    decision: \"a\\u0007b\\u001b[31mc\\u202ed\\nnext\"\n  - {{topic: long, decision: {long}}}"
        )))
        .unwrap();
        assert_eq!(s.decisions[0].topic, "{{#each a}}{{/each}}", "kept as text");
        assert_eq!(s.decisions[0].decision, "a b [31mc d next");
        assert!(
            s.decisions
                .iter()
                .all(|d| d.decision.chars().count() <= MAX_TEXT_CHARS)
        );
        // Tags are refused, as in the configuration.
        let s = read(&summary_with("decisions: [!x {topic: a, decision: b}]")).unwrap();
        assert!(s.is_empty(), "{s:?}");
        assert!(s.problems[0].contains("YAML tags"), "{:?}", s.problems);
        // Aliases that would multiply (a billion laughs) are refused or bounded.
        let laughs = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: [*f, *f, *f, *f, *f, *f, *f, *f, *f]";
        let started = std::time::Instant::now();
        let _ = read(&summary_with(laughs));
        assert!(started.elapsed() < std::time::Duration::from_secs(30));
        // Deep nesting.
        let deep = format!("decisions: {}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(read(&summary_with(&deep)).unwrap().is_empty());
    }

    fn record_decision(topic: &str, decision: &str) -> Decision {
        Decision {
            topic: topic.into(),
            decision: decision.into(),
            source: "records.jsonl".into(),
            ..Decision::default()
        }
    }

    #[test]
    fn records_win_and_summaries_supersede_each_other() {
        let mut state = ContextState {
            decisions: vec![record_decision("Auth", "JWT in cookies")],
            blockers: vec![Blocker {
                issue: "flaky CI".into(),
                status: "workaround".into(),
                source: "records.jsonl".into(),
                ..Blocker::default()
            }],
            ..ContextState::default()
        };
        let first = read(&summary_with(
            "decisions: [{topic: auth, decision: sessions}, {topic: Storage, decision: Postgres}]\n\
             blockers: [{issue: Flaky CI, status: unresolved}, {issue: no fixture}]\n\
             rejected: [{approach: polling}]\n\
             next_actions: [{action: write, target: tests}]",
        ))
        .unwrap();
        assert!(merge(&mut state, &first));
        let decisions: Vec<_> = state
            .decisions
            .iter()
            .map(|d| d.decision.as_str())
            .collect();
        assert_eq!(
            decisions,
            ["JWT in cookies", "Postgres"],
            "the record wins on Auth"
        );
        let blockers: Vec<_> = state
            .blockers
            .iter()
            .map(|b| (b.issue.as_str(), b.status.as_str()))
            .collect();
        assert_eq!(
            blockers,
            [("flaky CI", "workaround"), ("no fixture", "unresolved")]
        );
        assert_eq!(state.sources, [SOURCE_SUMMARY]);
        assert_eq!(state.next_actions[0].priority, 1);

        // The next capture starts from records alone; the summary's carry over.
        let mut next = ContextState {
            decisions: vec![record_decision("Auth", "JWT in cookies")],
            ..ContextState::default()
        };
        carry_over(&mut next, &state);
        assert_eq!(next.decisions.len(), 2);
        assert_eq!(next.rejected.len(), 1);
        assert!(
            next.next_actions.is_empty(),
            "next actions do not carry over"
        );
        // A later summary supersedes the earlier one's decision on the same topic.
        let second = read(&summary_with(
            "decisions: [{topic: storage, decision: SQLite}]",
        ))
        .unwrap();
        merge(&mut next, &second);
        let decisions: Vec<_> = next.decisions.iter().map(|d| d.decision.as_str()).collect();
        assert_eq!(decisions, ["JWT in cookies", "SQLite"]);
        // Merging the same block again changes nothing.
        let before = next.clone();
        merge(&mut next, &second);
        assert_eq!(next, before);
    }

    fn step(action: &str, target: &str, source: &str) -> NextAction {
        NextAction {
            action: action.into(),
            target: target.into(),
            source: source.into(),
            ..NextAction::default()
        }
    }

    /// The summary's own next actions lead, in its priority order; a
    /// recorded one it repeats moves up with it, and the step made from the
    /// task in progress that the summary names is not listed twice.
    #[test]
    fn the_summarys_next_actions_come_first_in_its_order() {
        let mut state = ContextState {
            next_actions: vec![
                step("run", "the auth tests", "records.jsonl"),
                NextAction {
                    context_needed: vec!["src/jwt.rs".into()],
                    ..step(
                        crate::capture::FINISH,
                        "Implement JWT signing",
                        "transcript",
                    )
                },
                step("add", "token refresh endpoint", "transcript"),
            ],
            ..ContextState::default()
        };
        let mut reworded = state.clone();
        let block = read(&summary_with(
            "next_actions:\n  - {action: check, target: the key rotation, priority: 2}\n  - {action: implement, target: JWT signing, priority: 1, context_needed: [src/keys.rs]}\n  - {action: Run, target: the auth tests, priority: 3}",
        ))
        .unwrap();
        assert!(merge(&mut state, &block));
        let order: Vec<(u32, &str, &str, &str)> = state
            .next_actions
            .iter()
            .map(|a| {
                (
                    a.priority,
                    a.action.as_str(),
                    a.target.as_str(),
                    a.source.as_str(),
                )
            })
            .collect();
        assert_eq!(
            order,
            [
                (1, "implement", "JWT signing", SOURCE_SUMMARY),
                (2, "check", "the key rotation", SOURCE_SUMMARY),
                (3, "run", "the auth tests", "records.jsonl"),
                (4, "add", "token refresh endpoint", "transcript"),
            ]
        );
        assert_eq!(
            state.next_actions[0].context_needed,
            ["src/keys.rs", "src/jwt.rs"],
            "the task's files join the summary's step for it"
        );

        // In other words: the title's words after its verb, all there.
        let block = read(&summary_with(
            "next_actions:\n  - {action: finish, target: JWT signing in src/jwt.rs, priority: 1}",
        ))
        .unwrap();
        assert!(merge(&mut reworded, &block));
        let targets: Vec<&str> = reworded
            .next_actions
            .iter()
            .map(|a| a.target.as_str())
            .collect();
        assert_eq!(
            targets,
            [
                "JWT signing in src/jwt.rs",
                "the auth tests",
                "token refresh endpoint"
            ]
        );
        // A title of two words is too short to tell by its words.
        let mut short = ContextState {
            next_actions: vec![step(crate::capture::FINISH, "Add tests", "transcript")],
            ..ContextState::default()
        };
        let block = read(&summary_with(
            "next_actions:\n  - {action: run, target: the tests, priority: 1}",
        ))
        .unwrap();
        assert!(merge(&mut short, &block));
        assert_eq!(short.next_actions.len(), 2);
    }

    /// Constraints are merged like decisions (no repeats, whatever the
    /// case or spacing), carried to the next capture of the session, and
    /// dropped only when a summary lifts them.
    #[test]
    fn constraints_carry_over_until_lifted() {
        let block = read(&summary_with(
            "constraints: [Do not add dependencies, keep the public API,  do NOT add   dependencies]\nlifted_constraints: []",
        ))
        .unwrap();
        assert_eq!(block.problems, Vec::<String>::new());
        let mut first = ContextState::default();
        assert!(merge(&mut first, &block));
        assert_eq!(
            first.constraints,
            ["keep the public API", "do NOT add dependencies"]
        );
        let mut second = ContextState::default();
        carry_over(&mut second, &first);
        assert_eq!(second.constraints, first.constraints);
        assert_eq!(second.sources, [SOURCE_SUMMARY]);
        let lifting = read(&summary_with(
            "constraints: [tests stay green]\nlifted_constraints: [Keep the public API]",
        ))
        .unwrap();
        merge(&mut second, &lifting);
        assert_eq!(
            second.constraints,
            ["do NOT add dependencies", "tests stay green"]
        );
        // Not a list of text: noted, not used.
        let wrong = read(&summary_with("constraints: {a: b}")).unwrap();
        assert!(wrong.constraints.is_empty());
        assert!(
            wrong.problems[0].contains("`constraints`"),
            "{:?}",
            wrong.problems
        );
    }

    #[test]
    fn summaries_kept_across_compactions_are_capped() {
        let mut state = ContextState::default();
        for i in 0..(MAX_KEPT + 10) {
            let block = read(&summary_with(&format!(
                "decisions: [{{topic: t{i}, decision: d{i}}}]"
            )))
            .unwrap();
            merge(&mut state, &block);
        }
        assert_eq!(state.decisions.len(), MAX_KEPT);
        assert_eq!(
            state.decisions.last().unwrap().decision,
            format!("d{}", MAX_KEPT + 9)
        );
    }
}

#[cfg(test)]
mod fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any text inside the fence: a block or a note why not, never a panic.
        #[test]
        fn any_block_parses_or_is_noted(body in "(\\PC|\n|:|-|\\[|\\]|\\{|\\}|&|\\*|!| ){0,400}") {
            let token = "0123456789abcdef0123456789abcdef";
            let parsed = parse(&format!("```hookd-state {token}\n{body}\n```"), Some(token));
            if let Some(s) = parsed.state {
                prop_assert!(s.decisions.len() <= MAX_ITEMS);
                prop_assert!(s.problems.len() <= MAX_PROBLEMS);
            }
        }
    }
}

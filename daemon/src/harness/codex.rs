//! Codex CLI: hook payloads in, hook output out, and how full the context is
//! from its rollout files.
//!
//! What this relies on (measured with the real Codex CLI 0.169.0, which the
//! end-to-end tests drive):
//! - hooks live in `~/.codex/hooks.json` (or `$CODEX_HOME`) and
//!   `<project>/.codex/hooks.json`, in Claude Code's layout;
//! - the events hookd uses are `SessionStart` (source `startup`, `resume`,
//!   `clear`, `compact`), `UserPromptSubmit`, `PostToolUse`, `PreCompact`,
//!   `PostCompact` (trigger `manual` or `auto`) and `Stop`, with Claude
//!   Code's payload field names (`session_id`, `transcript_path` (may be
//!   null), `cwd`, `hook_event_name`, `model`, `source`, `trigger`, ...);
//! - the output is JSON whose fields Codex checks strictly per event:
//!   `systemMessage` everywhere; `hookSpecificOutput.additionalContext` only
//!   on SessionStart, UserPromptSubmit, PreToolUse and PostToolUse. Plain
//!   stdout of PreCompact is ignored: a hook cannot add instructions to
//!   Codex's compaction prompt;
//! - there is no project variable in the hook's environment: the project is
//!   the payload's `cwd`;
//! - token counts are `event_msg` records of type `token_count` in the
//!   session's rollout file (`~/.codex/sessions/YYYY/MM/DD/rollout-*-<id>.jsonl`):
//!   `info.last_token_usage.total_tokens` is the context now,
//!   `info.model_context_window` the window; a `token_usage_record` written
//!   right after each reply (before its tool runs) carries the same figure
//!   sooner. Codex compacts at `model_auto_compact_token_limit` from its
//!   command line (`-c`, which no file records: read from the process that
//!   ran the hook), else a trusted project's `.codex/config.toml`, else the
//!   `--profile P` file `P.config.toml`, else `config.toml`, else at 90% of
//!   the window (a legacy `profile = "P"` in config.toml is an error now);
//! - each compaction writes a `compacted` record, then a `token_count` with
//!   the context after it; a pre-turn compaction comes before the turn's
//!   prompt hooks run;
//! - injected context reaches the model as a `developer` message, which the
//!   rollout records: that is where the arrival check looks;
//! - the person's prompts are `event_msg` records of type `item_completed`
//!   whose `item` is a `UserMessage` (`content[].text`; earlier versions
//!   wrote `user_message` events); the `user` response items also carry
//!   the environment context;
//!   tool calls are `response_item`s of type `function_call` (`name`, and
//!   `arguments` as JSON text: `exec_command {"cmd"}`, `update_plan
//!   {"plan": [{"step", "status"}]}`) or `custom_tool_call` (`apply_patch`
//!   with the patch as `input`).

use super::claude_code::transcript::FORWARD_LIMIT;
use super::lines::SEARCH_LIMIT;
use super::process::{self, ProcessCache};
use super::work::{self, LineReader, WorkFacts, WorkLog};
use super::{
    Adapter, Boundary, Cursor, EventName, Fields, HarnessPoint, HookEvent, LaunchPoints, Method,
    Outcome, Reading, SessionFacts, SessionReading, Trigger, Usage, claude_code,
};
use crate::tail::{ReverseLines, mentions_any};
use protocol::config::WindowConfig;
use protocol::pressure::{CompactionPoint, token_count, token_sum};
use protocol::wire::{HookReply, HookRequest};
use serde_json::Value;
use std::io;
use std::path::{Path, PathBuf};

/// Codex's compaction point when `config.toml` sets none: `model_context_window * 9 / 10`.
const DEFAULT_COMPACT_FRACTION: f64 = 0.9;
/// Day directories searched for a session's rollout file when the payload
/// names none (newest first): two months of daily use, so the search stays
/// a few milliseconds on a hook's path.
const ROLLOUT_SEARCH_DAYS: usize = 60;

/// Codex CLI, as hookd's core sees it.
pub struct Codex;

impl Adapter for Codex {
    fn parse(&self, req: &HookRequest, fields: Fields) -> HookEvent {
        parse(req, fields)
    }

    fn render(&self, event: &HookEvent, outcome: Outcome) -> HookReply {
        render(event, outcome)
    }

    fn read_session_file(
        &self,
        path: &Path,
        cursor: Option<&Cursor>,
        current: Option<&Usage>,
    ) -> Result<SessionReading, String> {
        read(path, cursor, current)
    }

    fn read_work(&self, path: &Path, max_bytes: u64, keep_prompts: usize) -> io::Result<WorkFacts> {
        read_work(path, max_bytes, keep_prompts)
    }

    fn calls_after_marker(
        &self,
        path: &Path,
        max_bytes: u64,
        marker: &str,
        from: Option<u64>,
    ) -> io::Result<Option<Vec<work::ToolCall>>> {
        work::calls_after_marker::<WorkReader>(path, max_bytes, marker, from)
    }

    fn compaction_point(&self, session: &SessionFacts, config: &WindowConfig) -> CompactionPoint {
        compaction_point(session, config)
    }

    fn point_unknown(&self, session: &SessionFacts, config: &WindowConfig) -> bool {
        point_unknown(session, config)
    }

    fn point_shown_by_compaction(&self, tokens: u64) -> Option<HarnessPoint> {
        Some(point_shown_by_compaction(tokens))
    }

    fn has_launch_point(&self) -> bool {
        true
    }

    fn launch_point(
        &self,
        event: &HookEvent,
        peer_pid: Option<u32>,
        known: &LaunchPoints,
    ) -> Option<Launch> {
        launch_point(event, peer_pid, &known.codex)
    }

    fn boundary_offset(&self, boundary: &Boundary) -> Option<u64> {
        boundary_offset(boundary)
    }

    fn injected_context_arrived(&self, path: &Path, marker: &str) -> io::Result<bool> {
        developer_message_holds(path, marker)
    }

    /// PreCompact fires only when a compaction follows.
    fn compaction_is_due(&self, _session: &SessionFacts, _trigger: Option<&Trigger>) -> bool {
        true
    }

    fn precompact_repeats_without_compaction(&self) -> bool {
        false
    }

    /// Codex shares Claude Code's field names, but its PreCompact output
    /// never reaches its summarizer: no summary holds hookd's block.
    fn compaction_summary<'e>(&self, _event: &'e HookEvent) -> Option<(&'e str, &'static str)> {
        None
    }

    /// The rollout keeps no summary hookd reads.
    fn compaction_summary_in_file(&self, _path: &Path) -> io::Result<Option<String>> {
        Ok(None)
    }

    /// SessionStart(compact) carries the resume prompt.
    fn resumes_at_next_turn(&self) -> bool {
        false
    }

    /// Codex reads `additionalContext` where Claude Code does.
    fn takes_model_context(&self, kind: &EventName) -> bool {
        claude_code::takes_additional_context(kind)
    }

    fn compacts_at_precompact_resumes_at_stop(&self) -> bool {
        false
    }
}

/// Codex's payloads carry Claude Code's field names; only the project
/// differs (no `CLAUDE_PROJECT_DIR`), and a null `transcript_path` is looked
/// up among the rollout files.
fn parse(req: &HookRequest, fields: Fields) -> HookEvent {
    let mut event = claude_code::parse(req, fields);
    event.claude_code_knobs = None;
    event.project_dir = event.cwd.clone();
    if event.transcript_path.is_none()
        && let Some(id) = event.session_id.clone()
    {
        event.transcript_path =
            codex_home(&req.env, &mut event.problems).and_then(|home| find_rollout(&home, &id));
    }
    event
}

/// Claude Code's rendering, minus what Codex does not read: plain stdout for
/// the summarizer (PreCompact) is dropped rather than sent to be ignored.
fn render(event: &HookEvent, outcome: Outcome) -> HookReply {
    claude_code::render(
        event,
        Outcome {
            plain_stdout: None,
            ..outcome
        },
    )
}

/// `$CODEX_HOME` from the hook's environment, else `~/.codex`.
fn codex_home(
    env: &std::collections::BTreeMap<String, String>,
    problems: &mut Vec<String>,
) -> Option<PathBuf> {
    super::env_path(env, "CODEX_HOME", problems)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".codex")))
}

/// The rollout file of session `id`: `sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`,
/// newest days first.
fn find_rollout(codex_home: &Path, id: &str) -> Option<PathBuf> {
    let suffix = format!("-{id}.jsonl");
    let newest_first = |dir: &Path| -> Vec<PathBuf> {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort_unstable_by(|a, b| b.cmp(a));
        entries
    };
    let days = newest_first(&codex_home.join("sessions"))
        .into_iter()
        .filter(|p| p.is_dir())
        .flat_map(|year| newest_first(&year))
        .filter(|p| p.is_dir())
        .flat_map(|month| newest_first(&month))
        .filter(|p| p.is_dir())
        .take(ROLLOUT_SEARCH_DAYS);
    for day in days {
        if let Some(found) = newest_first(&day).into_iter().find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("rollout-") && n.ends_with(&suffix))
        }) {
            return Some(found);
        }
    }
    None
}

/// What a rollout file says about the context right now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RolloutUsage {
    /// Tokens in the context; `None` before the first reply and right after
    /// a compaction (until the next reply reports).
    pub tokens: Option<u64>,
    pub window: Option<u64>,
    pub model: Option<String>,
    /// Why the latest `token_count` cannot be used, when it cannot.
    pub invalid: Option<String>,
    /// The compactions read, oldest first: from the end, the latest turn's
    /// (at most one); forward, every one appended.
    pub compactions: Vec<RolloutCompaction>,
    /// The byte after the last complete line: where the next reading starts.
    pub read_to: u64,
    pub bytes_read: u64,
}

/// A compaction record (`compacted`) in a rollout file. Codex writes its
/// estimate of the context after it as a `token_count` right below it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RolloutCompaction {
    /// Where its line starts: the file only grows, so this names it.
    pub offset: u64,
    pub timestamp: Option<String>,
    /// The context it compacted: the last reply's figure before it. Codex
    /// 0.169.0 writes its summarizer's own reply (a `token_usage_record`
    /// and a `token_count`) right before the record, so that figure is the
    /// one before the summarizer's.
    pub pre_tokens: Option<u64>,
}

/// The records a reading looks at; any other line is skipped unparsed.
const NEEDLES: [&[u8]; 5] = [
    b"token_count",
    b"token_usage_record",
    b"turn_context",
    b"compacted",
    b"task_started",
];

/// Opens a rollout file for reading, or says why it cannot be read.
fn open_rollout(path: &Path) -> Result<(std::fs::File, std::fs::Metadata), String> {
    crate::tail::open_regular(path)
        .map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => format!("Codex rollout file {} is missing", path.display()),
            _ => format!("cannot read Codex rollout file {}: {e}", path.display()),
        })?
        .ok_or_else(|| {
            format!(
                "Codex rollout file {} is not a regular file",
                path.display()
            )
        })
}

/// Reads a rollout file from its end: the latest `token_count`, whether a
/// compaction came after it, and the latest model. Malformed lines and
/// unknown record types are skipped. Readings go through [`read`]; the
/// tests read a whole file's answer this way.
#[cfg(test)]
fn read_rollout(path: &Path) -> Result<RolloutUsage, String> {
    let (file, meta) = open_rollout(path)?;
    scan_back(&file, meta.len(), 0)
        .map_err(|e| format!("cannot read Codex rollout file {}: {e}", path.display()))
}

/// [`read_rollout`] on an open file of `len` bytes; a compaction whose
/// record starts below `floor` was taken by an earlier reading and is left
/// out.
fn scan_back(file: &std::fs::File, len: u64, floor: u64) -> io::Result<RolloutUsage> {
    let mut lines = ReverseLines::new(file, len);
    let mut usage = RolloutUsage::default();
    let mut compacted_since = false;
    let mut counted = false;
    let mut turn_started = false;
    // Back from a compaction's record: its summarizer's reply, then the
    // figure of the context it compacted.
    let mut summarizer_passed = false;
    while let Some(line) = lines.next_line()? {
        let wants_pre = usage
            .compactions
            .first()
            .is_some_and(|c| c.pre_tokens.is_none());
        if counted
            && usage.window.is_some()
            && usage.model.is_some()
            && (turn_started || (!usage.compactions.is_empty() && !wants_pre))
            || lines.bytes_read() > SEARCH_LIMIT
        {
            break;
        }
        if !mentions_any(&line, &NEEDLES) {
            continue;
        }
        let Ok(record) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        let payload = &record["payload"];
        let at = lines.position();
        match (record["type"].as_str(), payload["type"].as_str()) {
            (Some("compacted"), _) | (Some("event_msg"), Some("context_compacted")) => {
                compacted_since |= !counted;
                // Looked for back to the turn's start, past the figure
                // Codex writes right after compacting.
                if record["type"] == "compacted"
                    && usage.compactions.is_empty()
                    && !turn_started
                    && at >= floor
                {
                    usage.compactions.push(RolloutCompaction {
                        offset: at,
                        timestamp: record["timestamp"].as_str().map(str::to_owned),
                        pre_tokens: None,
                    });
                }
            }
            (Some("event_msg"), Some("task_started")) => turn_started = true,
            // Written right after the reply, before its tool runs: the
            // freshest figure a tool hook can see.
            (Some("token_usage_record"), _) if payload["usage"].is_object() => {
                if !counted {
                    counted = true;
                    match reply_total(&payload["usage"]) {
                        Ok(total) => usage.tokens = total.filter(|_| !compacted_since),
                        Err(why) => usage.invalid = Some(invalid_at(at, &why)),
                    }
                } else if wants_pre {
                    if summarizer_passed {
                        usage.compactions[0].pre_tokens =
                            reply_total(&payload["usage"]).ok().flatten();
                    }
                    summarizer_passed = true;
                }
            }
            (Some("event_msg"), Some("token_count"))
                if payload["info"]["last_token_usage"].is_object() =>
            {
                let info = &payload["info"];
                if !counted {
                    counted = true;
                    match rollout_counts(info) {
                        Ok((window, total)) => {
                            usage.window = window.filter(|w| *w > 0);
                            usage.tokens = total.filter(|_| !compacted_since);
                        }
                        Err(why) => usage.invalid = Some(invalid_at(at, &why)),
                    }
                    continue;
                }
                if usage.window.is_none()
                    && let Ok((window, _)) = rollout_counts(info)
                {
                    usage.window = window.filter(|w| *w > 0);
                }
                if wants_pre && summarizer_passed {
                    usage.compactions[0].pre_tokens =
                        reply_total(&info["last_token_usage"]).ok().flatten();
                }
            }
            (Some("turn_context"), _) if usage.model.is_none() => {
                usage.model = payload["model"].as_str().map(str::to_owned);
            }
            _ => {}
        }
    }
    usage.read_to = lines.end_of_complete_lines();
    usage.bytes_read = lines.bytes_read();
    Ok(usage)
}

/// The complete lines appended to a rollout between `start` (where the
/// last reading stopped) and `end`, read forward from `current`, the
/// figure the session has: what a reading costs grows with what Codex
/// wrote since, not with the file.
fn read_appended(
    file: &std::fs::File,
    start: u64,
    end: u64,
    current: Option<&Usage>,
) -> io::Result<(Option<Usage>, RolloutUsage)> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; (end - start) as usize];
    file.read_exact_at(&mut buf, start)?;
    let complete = memchr::memrchr(b'\n', &buf).map_or(0, |i| i + 1);
    let mut usage = current.cloned();
    let mut read = RolloutUsage {
        model: current.and_then(|u| u.model.clone()),
        read_to: start + complete as u64,
        bytes_read: buf.len() as u64,
        ..RolloutUsage::default()
    };
    let mut figure = current.filter(|u| u.invalid.is_none()).map(|u| u.tokens);
    // The figure before the latest reply's: a compaction's summarizer
    // replies right before its record.
    let mut before_reply: Option<u64> = None;
    let mut at = start;
    for line in buf[..complete].split(|b| *b == b'\n') {
        let line_at = at;
        at += line.len() as u64 + 1;
        if !mentions_any(line, &NEEDLES) {
            continue;
        }
        let Ok(record) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        let payload = &record["payload"];
        let reply = |total: Result<Option<u64>, String>, usage: &mut Option<Usage>| match total {
            Ok(Some(tokens)) => {
                *usage = Some(Usage {
                    tokens,
                    model: read.model.clone(),
                    from_boundary: false,
                    message_id: None,
                    invalid: None,
                });
                Some(tokens)
            }
            Ok(None) => None,
            Err(why) => {
                *usage = Some(Usage::invalidated(usage.take(), invalid_at(line_at, &why)));
                None
            }
        };
        match (record["type"].as_str(), payload["type"].as_str()) {
            (Some("compacted"), _) => {
                read.compactions.push(RolloutCompaction {
                    offset: line_at,
                    timestamp: record["timestamp"].as_str().map(str::to_owned),
                    pre_tokens: before_reply,
                });
                // Unknown until Codex writes its estimate of what is left.
                usage = None;
                figure = None;
            }
            (Some("event_msg"), Some("context_compacted")) => {
                usage = None;
                figure = None;
            }
            (Some("token_usage_record"), _) if payload["usage"].is_object() => {
                if let Some(tokens) = reply(reply_total(&payload["usage"]), &mut usage) {
                    before_reply = figure;
                    figure = Some(tokens);
                }
            }
            (Some("event_msg"), Some("token_count"))
                if payload["info"]["last_token_usage"].is_object() =>
            {
                let info = &payload["info"];
                match rollout_counts(info) {
                    Ok((window, total)) => {
                        if let Some(window) = window.filter(|w| *w > 0) {
                            read.window = Some(window);
                        }
                        if let Some(tokens) = reply(Ok(total), &mut usage) {
                            figure = Some(tokens);
                        }
                    }
                    Err(why) => {
                        reply(Err(why), &mut usage);
                    }
                }
            }
            (Some("turn_context"), _) => {
                if let Some(model) = payload["model"].as_str() {
                    read.model = Some(model.to_owned());
                    if let Some(u) = usage.as_mut() {
                        u.model = read.model.clone();
                    }
                }
            }
            _ => {}
        }
    }
    Ok((usage, read))
}

fn invalid_at(offset: u64, why: &str) -> String {
    format!("invalid usage in transcript line at byte {offset}: {why}")
}

/// A `token_count`'s window and context figure (`total_tokens`, else
/// input + output), or why they cannot be right.
fn rollout_counts(info: &Value) -> Result<(Option<u64>, Option<u64>), String> {
    let window = token_count("model_context_window", info.get("model_context_window"))?;
    Ok((window, reply_total(&info["last_token_usage"])?))
}

/// One reply's context figure: `total_tokens`, else input + output.
fn reply_total(last: &Value) -> Result<Option<u64>, String> {
    let total = match token_count("total_tokens", last.get("total_tokens"))? {
        Some(total) => Some(total),
        None if last.get("input_tokens").is_some() && last.get("output_tokens").is_some() => {
            Some(token_sum(last, &["input_tokens", "output_tokens"])?)
        }
        None => None,
    };
    Ok(total)
}

/// Reads what is new in the rollout as a [`SessionReading`]: the latest
/// figure, the window Codex reported and each compaction appended. From
/// where the last reading stopped when that is near (forward), else from
/// the end.
fn read(
    path: &Path,
    cursor: Option<&Cursor>,
    current: Option<&Usage>,
) -> Result<SessionReading, String> {
    use std::os::unix::fs::MetadataExt;
    let (file, meta) = open_rollout(path)?;
    let (len, dev, ino) = (meta.len(), meta.dev(), meta.ino());
    let failed = |e: io::Error| format!("cannot read Codex rollout file {}: {e}", path.display());
    let same_file = cursor.filter(|c| c.dev == dev && c.ino == ino && c.offset <= len);
    let (usage, rollout, method) = match same_file {
        Some(c) if c.offset == len => {
            return Ok(SessionReading {
                reading: Reading {
                    usage: current.cloned(),
                    boundaries: Vec::new(),
                    cursor: c.clone(),
                    method: Method::Unchanged,
                    bytes_read: 0,
                },
                window: None,
                // Codex reads its config.toml once, at start: see
                // [`launch_point`].
                compaction_point: None,
            });
        }
        Some(c) if len - c.offset <= FORWARD_LIMIT => {
            let (usage, rollout) = read_appended(&file, c.offset, len, current).map_err(failed)?;
            (usage, rollout, Method::Forward)
        }
        // Compactions below where the last reading stopped were taken then,
        // and an older one must not come back.
        _ => {
            let rollout =
                scan_back(&file, len, same_file.map_or(0, |c| c.offset)).map_err(failed)?;
            let usage = match &rollout.invalid {
                // The figure stands; the reading is shown as what it is.
                Some(why) => Some(Usage::invalidated(current.cloned(), why.clone())),
                None => rollout.tokens.map(|tokens| Usage {
                    tokens,
                    model: rollout.model.clone(),
                    from_boundary: false,
                    message_id: None,
                    invalid: None,
                }),
            };
            (usage, rollout, Method::Backward)
        }
    };
    // Each compaction is named by where its record is, so two close
    // together are two.
    let boundaries = rollout
        .compactions
        .iter()
        .map(|c| Boundary {
            uuid: Some(format!("{BOUNDARY_PREFIX}{}", c.offset)),
            trigger: None,
            pre_tokens: c.pre_tokens,
            post_tokens: None,
            timestamp: c.timestamp.clone(),
        })
        .collect();
    Ok(SessionReading {
        reading: Reading {
            usage,
            boundaries,
            cursor: Cursor {
                offset: rollout.read_to,
                dev,
                ino,
            },
            method,
            bytes_read: rollout.bytes_read,
        },
        window: rollout.window,
        compaction_point: None,
    })
}

/// How a compaction's boundary is named: by where its record starts.
const BOUNDARY_PREFIX: &str = "rollout byte ";

/// Where the record of a compaction [`read`] named starts.
fn boundary_offset(boundary: &Boundary) -> Option<u64> {
    boundary.byte_offset(BOUNDARY_PREFIX)
}

/// `<CODEX_HOME>` of a rollout at `<CODEX_HOME>/sessions/YYYY/MM/DD/rollout-*.jsonl`.
fn codex_home_of(rollout: &Path) -> Option<PathBuf> {
    let sessions = rollout.ancestors().nth(4)?;
    (sessions.file_name()? == "sessions").then(|| sessions.parent().map(Path::to_path_buf))?
}

/// `model_auto_compact_token_limit` from `config.toml`, if set.
fn configured_point(codex_home: &Path) -> Option<HarnessPoint> {
    let text = read_own_config(&codex_home.join("config.toml"))?;
    let tokens = top_level_integer(&text, LIMIT_KEY)?;
    Some(HarnessPoint {
        tokens: Some(tokens),
        fraction: None,
        basis: format!("{tokens} (model_auto_compact_token_limit in config.toml)"),
    })
}

/// A top-level integer key of a TOML file (they come before the first table).
fn top_level_integer(text: &str, key: &str) -> Option<u64> {
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            return None;
        }
        if let Some((k, v)) = line.split_once('=')
            && k.trim() == key
        {
            return v.split('#').next()?.trim().replace('_', "").parse().ok();
        }
    }
    None
}

/// The config key that sets Codex's compaction point.
const LIMIT_KEY: &str = "model_auto_compact_token_limit";
/// A Codex config file (the user's, a profile, a project's) is read only
/// up to this size: far beyond any real one.
const CONFIG_LIMIT: u64 = 1024 * 1024;

/// What the launch of the codex that ran a hook says of its compaction point.
#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    /// The harness process (pid and start time), when hookd found it.
    pub process: Option<String>,
    /// Its point; `None` when nothing hookd can read sets one.
    pub point: Option<HarnessPoint>,
}

/// What a codex process took in once, at start: the limit its command line
/// sets, and the one its files set (the profile it names, else
/// `config.toml`). The project's file is read per hook: one process (an
/// IDE's `codex app-server`) runs sessions in many projects.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProcessPoint {
    command_line: Option<HarnessPoint>,
    files: Option<HarnessPoint>,
}

/// Where the codex that ran a hook compacts, in Codex's order: its command
/// line (`-c` / `--config model_auto_compact_token_limit=N`), the project's
/// `.codex/config.toml` (when the project is trusted), the profile its
/// command line names (`--profile P`: `<CODEX_HOME>/P.config.toml`), then
/// `config.toml`. `peer_pid` is the hook's process (the socket's peer):
/// codex is it or one of its nearest ancestors, and what it read at start
/// is kept in `known` for its later hooks. Without its process, the
/// project's and `config.toml`'s limits as they are now. Blocking: /proc
/// and small files.
fn launch_point(
    event: &HookEvent,
    peer_pid: Option<u32>,
    known: &ProcessCache<ProcessPoint>,
) -> Option<Launch> {
    let mut problems = Vec::new();
    let home = event
        .transcript_path
        .as_deref()
        .and_then(codex_home_of)
        .or_else(|| codex_home(&event.env, &mut problems));
    // The command name alone picks the process: its arguments are read
    // only the first time it is seen.
    let codex = peer_pid
        .and_then(|pid| process::find(pid, process::HOOK_ANCESTORS, |p| p.command == "codex"));
    let launched = codex.as_ref().and_then(|p| {
        let files = home.as_deref().unwrap_or(Path::new(""));
        if let Some(kept) = known.get(p.id, files) {
            return Some((p.id, kept));
        }
        let args = p
            .args()
            .filter(|a| a.first().is_some_and(|a0| is_codex(a0)))?;
        let kept = process_point(home.as_deref(), &args);
        known.put(p.id, files, kept.clone());
        Some((p.id, kept))
    });
    let (process, launched) = match launched {
        Some((id, kept)) => (Some(id.describe("codex")), kept),
        None => (
            None,
            ProcessPoint {
                command_line: None,
                files: home.as_deref().and_then(configured_point),
            },
        ),
    };
    let point = launched
        .command_line
        .or_else(|| project_point(event, home.as_deref()))
        .or(launched.files);
    Some(Launch { process, point })
}

/// The limit in the session's trusted project, read at each hook.
fn project_point(event: &HookEvent, home: Option<&Path>) -> Option<HarnessPoint> {
    let (working_dir, root) = (event.working_dir.as_deref()?, event.project_dir.as_deref()?);
    let (file, tokens) = project_limit(home?, working_dir, root)?;
    Some(HarnessPoint {
        tokens: Some(tokens),
        fraction: None,
        basis: format!("{tokens} ({LIMIT_KEY} in {})", file.display()),
    })
}

/// What codex's arguments `args` and its own files set.
fn process_point(home: Option<&Path>, args: &[String]) -> ProcessPoint {
    let command_line = command_line_limit(args).map(|tokens| HarnessPoint {
        tokens: Some(tokens),
        fraction: None,
        basis: format!("{tokens} ({LIMIT_KEY} on codex's command line)"),
    });
    let profile = profile_limit(home, args).map(|(file, tokens)| HarnessPoint {
        tokens: Some(tokens),
        fraction: None,
        basis: format!("{tokens} ({LIMIT_KEY} in {})", file.display()),
    });
    ProcessPoint {
        command_line,
        files: profile.or_else(|| home.and_then(configured_point)),
    }
}

/// Codex's native binary, or the npm launcher that runs it.
fn is_codex(argv0: &str) -> bool {
    Path::new(argv0)
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n == "codex")
}

/// At most `limit` bytes of a regular file, opened without blocking (a
/// FIFO in its place is not waited on); `None` when it cannot be read.
fn read_bounded(path: &Path, limit: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    let (file, _) = crate::tail::open_regular(path).ok()??;
    let mut raw = Vec::new();
    file.take(limit).read_to_end(&mut raw).ok()?;
    Some(raw)
}

/// One of the user's own Codex files (`config.toml`, a profile): a link
/// there is the user's own layout and followed; anything but a regular
/// file, or one over [`CONFIG_LIMIT`], is not read.
fn read_own_config(path: &Path) -> Option<String> {
    let raw = read_bounded(path, CONFIG_LIMIT + 1)?;
    if raw.len() as u64 > CONFIG_LIMIT {
        tracing::warn!(
            "{} is larger than {CONFIG_LIMIT} bytes; hookd does not read its {LIMIT_KEY}",
            path.display()
        );
        return None;
    }
    Some(String::from_utf8_lossy(&raw).into_owned())
}

/// The limit in the nearest `.codex/config.toml` from `working_dir` up to
/// the project's `root` (its work tree root, as hookd finds it everywhere),
/// when Codex trusts the project: it reads a project's settings only then,
/// and hookd opens nothing of an untrusted one. Each directory is opened
/// without following links and must be the user's own; the file is read
/// only as a regular file of at most [`CONFIG_LIMIT`] bytes.
fn project_limit(codex_home: &Path, working_dir: &Path, root: &Path) -> Option<(PathBuf, u64)> {
    let user = read_own_config(&codex_home.join("config.toml"))?;
    if !codex_trusts(&user, working_dir, root) {
        return None;
    }
    let below = working_dir.strip_prefix(root).ok()?;
    let top = crate::project_fs::Dir::open(root).ok()?;
    let mut dirs = vec![top];
    for part in below.components() {
        let std::path::Component::Normal(name) = part else {
            break;
        };
        let Some(next) = name.to_str().and_then(|n| dirs.last()?.open_dir(n).ok()) else {
            break;
        };
        dirs.push(next);
    }
    // Up from the working directory, stopping at a directory of another
    // user: what is above it is not the user's project.
    for dir in dirs.iter().rev() {
        if !dir.is_own() {
            break;
        }
        let Ok(codex) = dir.open_dir(".codex") else {
            continue;
        };
        match codex.read("config.toml", CONFIG_LIMIT) {
            Ok(Some(raw)) => {
                let text = String::from_utf8_lossy(&raw);
                if let Some(tokens) = top_level_integer(&text, LIMIT_KEY).filter(|t| *t > 0) {
                    return Some((codex.path().join("config.toml"), tokens));
                }
            }
            Ok(None) => {}
            Err(e) => tracing::warn!("{e}; hookd does not read its {LIMIT_KEY}"),
        }
    }
    None
}

/// Whether Codex trusts the project it runs in, by its rule: the working
/// directory's own entry in the user's `config.toml` decides, whatever its
/// level; without one, the repository root's does.
fn codex_trusts(user_config: &str, working_dir: &Path, root: &Path) -> bool {
    trust_level(user_config, working_dir)
        .or_else(|| trust_level(user_config, root))
        .is_some_and(|level| level == "trusted")
}

/// The `trust_level` of `[projects."<project>"]` in the user's
/// `config.toml`, if it has one.
fn trust_level(user_config: &str, project: &Path) -> Option<String> {
    let header = format!("[projects.\"{}\"]", project.display());
    let mut in_table = false;
    for line in user_config.lines().map(str::trim) {
        if line.starts_with('[') {
            in_table = line == header;
        } else if in_table
            && let Some((k, v)) = line.split_once('=')
            && k.trim() == "trust_level"
        {
            let value = v.split('#').next().unwrap_or_default().trim();
            return Some(value.trim_matches('"').to_owned());
        }
    }
    None
}

/// The limit in the profile the command line names (`--profile P`, `-p P`):
/// `<CODEX_HOME>/P.config.toml`.
fn profile_limit(codex_home: Option<&Path>, args: &[String]) -> Option<(PathBuf, u64)> {
    let mut profile = None;
    let mut rest = args.iter().skip(1);
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--" => break,
            "--profile" | "-p" => profile = rest.next().cloned(),
            other => {
                if let Some(name) = other.strip_prefix("--profile=") {
                    profile = Some(name.to_owned());
                }
            }
        }
    }
    // A name, not a path: nothing outside CODEX_HOME is read.
    let profile = profile.filter(|p| !p.is_empty() && !p.contains('/') && p != ".." && p != ".")?;
    let file = codex_home?.join(format!("{profile}.config.toml"));
    let text = read_own_config(&file)?;
    top_level_integer(&text, LIMIT_KEY)
        .filter(|t| *t > 0)
        .map(|t| (file, t))
}

/// The last `model_auto_compact_token_limit` a command line sets, as Codex
/// applies its `-c` overrides in order.
fn command_line_limit(args: &[String]) -> Option<u64> {
    let mut limit = None;
    let mut rest = args.iter().skip(1);
    while let Some(arg) = rest.next() {
        let setting = match arg.as_str() {
            "--" => break,
            "-c" | "--config" => rest.next().map(String::as_str),
            other => other
                .strip_prefix("--config=")
                .or_else(|| other.strip_prefix("-c")),
        };
        if let Some((key, value)) = setting.and_then(|s| s.split_once('='))
            && key.trim() == LIMIT_KEY
        {
            limit = value
                .trim()
                .replace('_', "")
                .parse()
                .ok()
                .filter(|t| *t > 0)
                .or(limit);
        }
    }
    limit
}

/// Codex compacts automatically once a reply's figure reaches its limit:
/// one that compacted at `tokens` has its limit at or just below it.
fn point_shown_by_compaction(tokens: u64) -> HarnessPoint {
    HarnessPoint {
        tokens: Some(tokens),
        fraction: None,
        basis: format!("{tokens} (learned: Codex compacted there automatically)"),
    }
}

/// Codex compacts at `model_auto_compact_token_limit`, else at 90% of the
/// window its rollout reports.
fn compaction_point(session: &SessionFacts, config: &WindowConfig) -> CompactionPoint {
    let window = session
        .reported_window
        .unwrap_or_else(|| claude_code::window::model_window(session.model, None, config));
    if let Some(forced) = config.tokens_max.filter(|t| *t > 0) {
        return CompactionPoint {
            window,
            tokens: forced,
            basis: format!("{forced} (window.tokens_max)"),
        };
    }
    // A limit of 0 is no point to measure against.
    match session
        .harness_point
        .and_then(|p| Some((p.tokens.filter(|t| *t > 0)?, p)))
    {
        Some((tokens, p)) => CompactionPoint {
            window,
            tokens,
            basis: p.basis.clone(),
        },
        // No window of Codex's own yet to take 90% of: no Claude figure
        // stands in for it.
        None if session.reported_window.is_none() => CompactionPoint {
            window,
            tokens: window,
            basis: POINT_UNKNOWN.to_owned(),
        },
        None => CompactionPoint {
            window,
            tokens: (window as f64 * DEFAULT_COMPACT_FRACTION) as u64,
            basis: format!("90% of the {window}-token window (Codex's default)"),
        },
    }
}

/// What `hookctl status` says of a session whose point cannot be known yet.
pub const POINT_UNKNOWN: &str =
    "the compaction point is learned at the first compaction; no level fires until then";

/// Whether Codex's point cannot be known yet: no limit where hookd can
/// read one, and no `token_count` has reported the window (the one rule,
/// [`compaction_point`]'s).
fn point_unknown(session: &SessionFacts, config: &WindowConfig) -> bool {
    compaction_point(session, config).basis == POINT_UNKNOWN
}

/// Whether a developer message (how Codex hands hook context to the model)
/// holding `marker` is in the rollout since its latest compaction.
fn developer_message_holds(path: &Path, marker: &str) -> io::Result<bool> {
    let Some((file, meta)) = crate::tail::open_regular(path)? else {
        return Ok(false);
    };
    let mut lines = ReverseLines::new(&file, meta.len());
    lines.stop_below(meta.len().saturating_sub(SEARCH_LIMIT));
    while let Some(line) = lines.next_line()? {
        if memchr::memmem::find(&line, marker.as_bytes()).is_some()
            && let Ok(record) = serde_json::from_slice::<Value>(&line)
            && record["type"] == "response_item"
            && record["payload"]["role"] == "developer"
        {
            return Ok(true);
        }
        if memchr::memmem::find(&line, b"compacted").is_some()
            && serde_json::from_slice::<Value>(&line).is_ok_and(|r| r["type"] == "compacted")
        {
            return Ok(false);
        }
    }
    Ok(false)
}

/// What a rollout says about the work: the person's prompts (completed
/// `UserMessage` items, or `user_message` events), the plan (`update_plan` calls: the whole list each time), and
/// the files the agent wrote through its shell (`exec_command`,
/// `shell_command`, `shell`) or its patches (`apply_patch`).
fn read_work(path: &Path, max_bytes: u64, keep_prompts: usize) -> io::Result<WorkFacts> {
    work::read_file::<WorkReader>(path, max_bytes, keep_prompts)
}

#[derive(Default)]
pub(crate) struct WorkReader {
    log: WorkLog,
}

impl LineReader for WorkReader {
    fn log(&mut self) -> &mut WorkLog {
        &mut self.log
    }

    fn line(&mut self, line: &[u8]) {
        let needles: [&[u8]; 4] = [
            b"UserMessage",
            b"user_message",
            b"function_call",
            b"custom_tool_call",
        ];
        if !mentions_any(line, &needles) {
            return;
        }
        let Ok(record) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        let payload = &record["payload"];
        match (record["type"].as_str(), payload["type"].as_str()) {
            // 0.169.0: the person's message as a completed `UserMessage` item.
            (Some("event_msg"), Some("item_completed"))
                if payload["item"]["type"] == "UserMessage" =>
            {
                let text = work::content_text(&payload["item"]["content"], "\n");
                self.log.prompt(&text.unwrap_or_default());
            }
            // Earlier versions: a `user_message` event.
            (Some("event_msg"), Some("user_message")) => {
                if let Some(text) = payload["message"].as_str() {
                    self.log.prompt(text);
                }
            }
            (Some("response_item"), Some("function_call")) => {
                // The arguments are JSON in a string.
                let arguments = payload["arguments"]
                    .as_str()
                    .and_then(|a| serde_json::from_str::<Value>(a).ok())
                    .unwrap_or(Value::Null);
                let name = payload["name"].as_str().unwrap_or("");
                let target = match arguments["input"].as_str() {
                    Some(patch) if name == "apply_patch" => {
                        work::files_in_patch(patch).into_iter().next()
                    }
                    _ => work::call_target(&arguments),
                };
                self.log.call(payload["call_id"].as_str(), name, target);
                self.call(name, &arguments);
            }
            (Some("response_item"), Some("custom_tool_call")) => {
                let name = payload["name"].as_str().unwrap_or("");
                let input = payload["input"].as_str().unwrap_or("");
                let target = if name == "apply_patch" {
                    work::files_in_patch(input).into_iter().next()
                } else {
                    input.lines().next().map(str::to_owned)
                };
                self.log.call(payload["call_id"].as_str(), name, target);
                if name == "apply_patch" {
                    self.log.patch(input);
                }
            }
            (Some("response_item"), Some("function_call_output" | "custom_tool_call_output")) => {
                let error = output_error(&payload["output"]);
                self.log
                    .result(payload["call_id"].as_str(), error.as_deref());
            }
            _ => {}
        }
    }
}

/// The error a tool's output reports, if it failed: a non-zero exit code
/// (`Exit code: N` / `Process exited with code N` in the text, or
/// `metadata.exit_code` in a JSON output) or `success: false`. The words
/// are the output's first line after the exit code's.
fn output_error(output: &Value) -> Option<String> {
    let (text, json) = match output {
        Value::String(text) => (
            text.clone(),
            serde_json::from_str::<Value>(text).unwrap_or(Value::Null),
        ),
        Value::Object(_) => (
            output["content"].as_str().unwrap_or("").to_owned(),
            output.clone(),
        ),
        _ => return None,
    };
    let failed_json = json["metadata"]["exit_code"]
        .as_i64()
        .is_some_and(|code| code != 0)
        || json["success"] == false;
    let code_line = |line: &str| {
        ["Exit code: ", "Process exited with code "]
            .iter()
            .find_map(|p| line.trim().strip_prefix(p))
            .map(|code| code.trim() != "0")
    };
    let failed_text = text.lines().find_map(code_line).unwrap_or(false);
    if !(failed_json || failed_text) {
        return None;
    }
    let body = json["output"].as_str().unwrap_or(&text);
    let words = body
        .lines()
        .map(str::trim)
        .find(|l| {
            !l.is_empty()
                && code_line(l).is_none()
                && !l.starts_with("Wall time")
                && !l.starts_with("Output:")
        })
        .unwrap_or("");
    Some(words.to_owned())
}

impl WorkReader {
    fn call(&mut self, name: &str, arguments: &Value) {
        match name {
            "exec_command" | "shell_command" | "shell" | "local_shell" => {
                let command = match (&arguments["cmd"], &arguments["command"]) {
                    (Value::String(cmd), _) | (_, Value::String(cmd)) => cmd.clone(),
                    // `["bash", "-lc", "<script>"]`: the script is the last word.
                    (_, Value::Array(words)) => words
                        .last()
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    _ => return,
                };
                // A patch run through the shell (`["apply_patch", "<patch>"]`
                // or `apply_patch <<'EOF' … EOF`): its code lines are not
                // shell, and `if a > b` writes no file `b`.
                if command.contains("*** Begin Patch") {
                    self.log.patch(&command);
                } else {
                    self.log.shell(&command);
                }
            }
            "apply_patch" => {
                if let Some(patch) = arguments["input"].as_str() {
                    self.log.patch(patch);
                }
            }
            "update_plan" => {
                if let Some(plan) = arguments["plan"].as_array() {
                    self.log.todos(work::task_list(plan, "step", "step"));
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::sessions::Session;
    use protocol::wire::Harness;
    use serde_json::value::RawValue;
    use std::collections::BTreeMap;
    use std::io::Write;

    fn request(event: Option<&str>, payload: &str, env: &[(&str, &str)]) -> HookRequest {
        HookRequest {
            harness: Harness::Codex,
            event: event.map(str::to_owned),
            payload: RawValue::from_string(payload.to_owned()).unwrap(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
            cwd: None,
        }
    }

    /// Lines in the shape Codex writes them (written here, not recorded).
    fn token_count(total: u64, window: u64) -> String {
        format!(
            r#"{{"timestamp":"2026-05-01T10:00:00.000Z","type":"event_msg","payload":{{"type":"token_count","info":{{"total_token_usage":{{"input_tokens":900000,"cached_input_tokens":800000,"output_tokens":9000,"reasoning_output_tokens":2000,"total_tokens":909000}},"last_token_usage":{{"input_tokens":{i},"cached_input_tokens":1000,"output_tokens":500,"reasoning_output_tokens":100,"total_tokens":{total}}},"model_context_window":{window}}},"rate_limits":null}}}}"#,
            i = total - 500
        )
    }

    const TURN_CONTEXT: &str = r#"{"timestamp":"2026-05-01T09:59:59.000Z","type":"turn_context","payload":{"cwd":"/proj","approval_policy":"on-request","model":"gpt-5.5-codex","effort":"medium"}}"#;

    fn rollout(lines: &[&str]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        for l in lines {
            writeln!(f, "{l}").unwrap();
        }
        f
    }

    #[test]
    fn payloads_read_like_claude_codes_but_the_project_is_the_cwd() {
        let req = request(
            Some("session-start"),
            r#"{"session_id":"0199a","transcript_path":"/r.jsonl","cwd":"/proj","hook_event_name":"SessionStart","model":"gpt-5.5-codex","permission_mode":"default","source":"compact"}"#,
            &[("CLAUDE_PROJECT_DIR", "/elsewhere")],
        );
        let ev = crate::harness::parse(&req).unwrap();
        assert_eq!(
            ev.event,
            crate::harness::Event::SessionStart {
                source: Some(crate::harness::StartSource::Compact)
            }
        );
        assert_eq!(ev.project_dir.as_deref(), Some(Path::new("/proj")));
        assert_eq!(ev.model.as_deref(), Some("gpt-5.5-codex"));
    }

    #[test]
    fn a_null_transcript_path_is_found_among_the_rollout_files() {
        let home = tempfile::tempdir().unwrap();
        let day = home.path().join("sessions/2026/05/01");
        std::fs::create_dir_all(&day).unwrap();
        let file = day.join("rollout-2026-05-01T09-00-00-0199a.jsonl");
        std::fs::write(&file, "").unwrap();
        std::fs::write(day.join("rollout-2026-05-01T08-00-00-other.jsonl"), "").unwrap();
        let req = request(
            Some("stop"),
            r#"{"session_id":"0199a","transcript_path":null,"cwd":"/proj"}"#,
            &[("CODEX_HOME", home.path().to_str().unwrap())],
        );
        let ev = crate::harness::parse(&req).unwrap();
        assert_eq!(ev.transcript_path, Some(file));
        assert_eq!(find_rollout(home.path(), "missing"), None);
    }

    #[test]
    fn codex_reads_additional_context_only_where_its_schema_allows() {
        let outcome = Outcome {
            system_message: Some("for you".into()),
            additional_context: Some("for the model".into()),
            plain_stdout: None,
            notes: Vec::new(),
        };
        let post = crate::harness::parse(&request(
            Some("post-tool-use"),
            r#"{"session_id":"s"}"#,
            &[],
        ))
        .unwrap();
        let v: Value = serde_json::from_str(&render(&post, outcome.clone()).stdout).unwrap();
        assert_eq!(v["hookSpecificOutput"]["hookEventName"], "PostToolUse");
        assert_eq!(v["systemMessage"], "for you");

        // PreCompact and Stop accept only the common fields.
        for event in ["pre-compact", "stop", "post-compact"] {
            let ev =
                crate::harness::parse(&request(Some(event), r#"{"session_id":"s"}"#, &[])).unwrap();
            let v: Value = serde_json::from_str(&render(&ev, outcome.clone()).stdout).unwrap();
            assert_eq!(
                v.as_object().unwrap().keys().collect::<Vec<_>>(),
                ["systemMessage"],
                "{event}"
            );
        }
        // Text for the summarizer has no place in Codex's output.
        let pre =
            crate::harness::parse(&request(Some("pre-compact"), r#"{"session_id":"s"}"#, &[]))
                .unwrap();
        let reply = render(
            &pre,
            Outcome {
                plain_stdout: Some("keep the plan".into()),
                ..Outcome::default()
            },
        );
        assert_eq!(reply, HookReply::silent());
    }

    #[test]
    fn the_latest_token_count_is_the_context() {
        let early = token_count(40_000, 272_000);
        let late = token_count(120_500, 272_000);
        let f = rollout(&[
            r#"{"timestamp":"2026-05-01T09:00:00.000Z","type":"session_meta","payload":{"id":"0199a","cwd":"/proj"}}"#,
            TURN_CONTEXT,
            &early,
            r#"{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"token_count compacted"}]}}"#,
            "not json at all",
            &late,
        ]);
        let usage = read_rollout(f.path()).unwrap();
        assert_eq!(
            (usage.tokens, usage.window, usage.model.as_deref()),
            (Some(120_500), Some(272_000), Some("gpt-5.5-codex"))
        );
        assert_eq!((usage.invalid, usage.compactions), (None, Vec::new()));
    }

    #[test]
    fn a_token_count_that_cannot_be_right_is_invalid_and_the_figure_stands() {
        let good = token_count(120_500, 272_000);
        for (bad, why) in [
            (
                good.replace("\"total_tokens\":120500", "\"total_tokens\":1e12"),
                "total_tokens is not a whole number",
            ),
            (
                good.replace("\"total_tokens\":120500", "\"total_tokens\":[120500]"),
                "total_tokens is an array",
            ),
            (
                good.replace(
                    "\"total_tokens\":120500}",
                    &format!("\"total_tokens\":{}}}", u64::MAX),
                ),
                "above the 100000000 tokens",
            ),
            (
                good.replace(
                    "\"model_context_window\":272000",
                    "\"model_context_window\":-1",
                ),
                "model_context_window is negative",
            ),
        ] {
            assert_ne!(bad, good);
            let f = rollout(&[TURN_CONTEXT, &good, &bad]);
            let reading = read_rollout(f.path()).unwrap();
            let shown = reading.invalid.clone().unwrap_or_default();
            assert!(
                shown.starts_with("invalid usage in transcript line at byte ")
                    && shown.contains(why),
                "{bad}: {shown}"
            );
            let key = crate::sessions::SessionKey {
                harness: Harness::Codex,
                id: "s".into(),
            };
            let mut s = Session::new(key, 0);
            let first = rollout(&[TURN_CONTEXT, &good]);
            s.take_reading(read(first.path(), None, None).unwrap(), 1);
            let second = rollout(&[TURN_CONTEXT, &good, &bad]);
            let taken = read(second.path(), s.cursor.as_ref(), s.usage.as_ref()).unwrap();
            s.take_reading(taken, 2);
            let c = crate::sessions::context_of(&s, &protocol::config::Config::default()).unwrap();
            assert_eq!(c.tokens_used, 120_500, "{bad}");
            assert_eq!(c.invalid.as_deref(), Some(shown.as_str()));
        }
        // Input plus output, when there is no total, saturates rather than wraps.
        let f = rollout(&[&good.replace(
            "\"total_tokens\":120500",
            &format!("\"output_tokens\":{}", u64::MAX),
        )]);
        assert!(read_rollout(f.path()).unwrap().invalid.is_some());
    }

    #[test]
    fn after_a_compaction_the_figure_is_unknown_until_the_next_reply() {
        let before = token_count(240_000, 272_000);
        let f = rollout(&[
            TURN_CONTEXT,
            &before,
            r#"{"timestamp":"2026-05-01T10:01:00.000Z","type":"compacted","payload":{"message":"summary"}}"#,
        ]);
        let usage = read_rollout(f.path()).unwrap();
        assert_eq!(usage.tokens, None);
        assert_eq!(usage.window, Some(272_000));

        let after = token_count(30_000, 272_000);
        let f = rollout(&[
            TURN_CONTEXT,
            &before,
            r#"{"type":"compacted","payload":{"message":"summary"}}"#,
            &after,
        ]);
        assert_eq!(read_rollout(f.path()).unwrap().tokens, Some(30_000));
    }

    #[test]
    fn empty_and_missing_rollouts() {
        let f = rollout(&[]);
        let usage = read_rollout(f.path()).unwrap();
        assert_eq!((usage.tokens, usage.window), (None, None));
        assert!(usage.compactions.is_empty());
        let err = read_rollout(Path::new("/nonexistent/rollout.jsonl")).unwrap_err();
        assert!(err.contains("missing"), "{err}");
    }

    #[test]
    fn codexs_compaction_point_is_its_config_or_90_percent_of_the_window() {
        let home = tempfile::tempdir().unwrap();
        let day = home.path().join("sessions/2026/05/01");
        std::fs::create_dir_all(&day).unwrap();
        let path = day.join("rollout-2026-05-01T09-00-00-s.jsonl");
        std::fs::write(
            &path,
            format!("{TURN_CONTEXT}\n{}\n", token_count(122_400, 272_000)),
        )
        .unwrap();
        let key = crate::sessions::SessionKey {
            harness: Harness::Codex,
            id: "s".into(),
        };
        let mut s = Session::new(key, 0);
        s.take_reading(read(&path, None, None).unwrap(), 5);
        let c = crate::sessions::context_of(&s, &protocol::config::Config::default()).unwrap();
        assert_eq!((c.tokens_used, c.tokens_max), (122_400, 244_800));
        assert_eq!(c.window_tokens, 272_000);
        assert!((c.pressure - 0.5).abs() < 1e-9);
        assert!(c.basis.contains("Codex's default"), "{}", c.basis);

        std::fs::write(
            home.path().join("config.toml"),
            "model = \"gpt-5.5-codex\"\nmodel_auto_compact_token_limit = 150_000 # low\n[projects.\"/p\"]\nmodel_auto_compact_token_limit = 9\n",
        )
        .unwrap();
        // Read at the hook (Codex reads it at start), not with the rollout.
        let reading = read(&path, None, s.usage.as_ref()).unwrap();
        assert_eq!(reading.compaction_point, None);
        s.take_reading(reading, 6);
        let mut event = hook_in(Path::new("/nonexistent"), Path::new("/nonexistent"));
        event.transcript_path = Some(path.clone());
        s.take_launch(launch_point(&event, None, &ProcessCache::default()).unwrap());
        let c = crate::sessions::context_of(&s, &protocol::config::Config::default()).unwrap();
        assert_eq!(c.tokens_max, 150_000);
        assert!(c.basis.contains("config.toml"), "{}", c.basis);

        let gone = read(Path::new("/nonexistent/rollout.jsonl"), None, None).unwrap_err();
        assert!(gone.contains("rollout"), "{gone}");
    }

    const COMPACTED: &str = r#"{"timestamp":"2026-05-01T10:01:00.000Z","type":"compacted","payload":{"message":"summary"}}"#;
    const TASK_STARTED: &str =
        r#"{"type":"event_msg","payload":{"type":"task_started","turn_id":"u2"}}"#;

    /// Codex 0.169.0 writes its estimate of the context right after the
    /// compaction record: the compaction is still this turn's, and named by
    /// where its record is.
    #[test]
    fn a_compaction_in_the_latest_turn_is_found_past_the_figure_after_it() {
        let lines = [
            TURN_CONTEXT.to_owned(),
            token_count(21_000, 190_000),
            TASK_STARTED.to_owned(),
            token_count(21_000, 190_000),
            token_count(2_000, 190_000),
            COMPACTED.to_owned(),
            TURN_CONTEXT.to_owned(),
            token_count(6_219, 190_000),
        ];
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let f = rollout(&refs);
        let usage = read_rollout(f.path()).unwrap();
        assert_eq!(usage.tokens, Some(6_219));
        let at = std::fs::read_to_string(f.path())
            .unwrap()
            .find(COMPACTED)
            .unwrap() as u64;
        assert_eq!(usage.compactions.last().map(|c| c.offset), Some(at));
        let taken = read(f.path(), None, None).unwrap();
        let named: Vec<_> = taken
            .reading
            .boundaries
            .iter()
            .map(|b| b.uuid.clone())
            .collect();
        assert_eq!(named, [Some(format!("rollout byte {at}"))]);

        // The next turn no longer shows it: it was named while it was new.
        let mut later = refs.clone();
        later.extend([TASK_STARTED, TURN_CONTEXT]);
        let next = token_count(9_000, 190_000);
        later.push(&next);
        let f = rollout(&later);
        let usage = read_rollout(f.path()).unwrap();
        assert_eq!((usage.tokens, usage.compactions), (Some(9_000), Vec::new()));
    }

    /// Two compactions seconds apart are two epochs, each named by its own
    /// record; a hook's epoch is named by the record that follows it.
    #[test]
    fn two_close_compactions_are_two_epochs() {
        let key = crate::sessions::SessionKey {
            harness: Harness::Codex,
            id: "s".into(),
        };
        let mut s = Session::new(key, 0);
        let first = [TURN_CONTEXT, TASK_STARTED, COMPACTED];
        let f = rollout(&first);
        let began = s
            .take_reading(read(f.path(), None, None).unwrap(), 1_000)
            .unwrap();
        assert_eq!((began.len(), s.epoch), (1, 2));
        let mut second = first.to_vec();
        let count = token_count(20_500, 190_000);
        second.extend([TASK_STARTED, count.as_str(), COMPACTED]);
        let f = rollout(&second);
        let began = s
            .take_reading(read(f.path(), None, None).unwrap(), 3_000)
            .unwrap();
        assert_eq!((began.len(), s.epoch), (1, 3), "two seconds later");
        // Read again: the same record names the same epoch.
        let began = s
            .take_reading(read(f.path(), None, None).unwrap(), 4_000)
            .unwrap();
        assert_eq!((began.len(), s.epoch), (0, 3));
        assert!(!s.compaction_in_flight(4_000));

        // A hook opens the next epoch before the record is written.
        let hook = crate::sessions::EpochStart::Hook("post-compact auto".into());
        s.compaction_announced_ms = Some(5_000);
        assert!(s.begin_epoch(&hook, 5_000));
        s.compaction_announced_ms = None;
        assert!(s.compaction_in_flight(5_000));
        let mut third = second.clone();
        third.extend([TASK_STARTED, COMPACTED]);
        let f = rollout(&third);
        let began = s
            .take_reading(read(f.path(), None, None).unwrap(), 5_100)
            .unwrap();
        assert_eq!(
            (began.len(), s.epoch),
            (0, 4),
            "the record names the hook's epoch"
        );
        assert!(!s.compaction_in_flight(5_100), "the compaction is over");
    }

    /// Codex 0.169.0 reads a trusted project's `.codex/config.toml` before
    /// the profile `--profile` names, and both before `config.toml`.
    /// The working directory's own entry decides, whatever its level: an
    /// untrusted folder inside a trusted repository stays untrusted.
    #[test]
    fn codex_trust_is_the_working_directorys_entry_first() {
        let user = "[projects.\"/repo\"]\ntrust_level = \"trusted\"\n\n\
                    [projects.\"/repo/vendor/x\"]\ntrust_level = \"untrusted\" # theirs\n";
        let (root, vendor, src) = (
            Path::new("/repo"),
            Path::new("/repo/vendor/x"),
            Path::new("/repo/src"),
        );
        assert!(
            codex_trusts(user, src, root),
            "the root's entry, for lack of one"
        );
        assert!(!codex_trusts(user, vendor, root), "its own entry wins");
        assert!(codex_trusts(user, root, root));
        let only_below = "[projects.\"/repo/src\"]\ntrust_level = \"trusted\"\n";
        assert!(codex_trusts(only_below, src, root));
        assert!(!codex_trusts(only_below, vendor, root));
        assert!(!codex_trusts("", src, root));
    }

    #[test]
    fn project_and_profile_limits_in_codexs_order() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let sub = project.path().join("src");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir_all(project.path().join(".git")).unwrap();
        std::fs::create_dir_all(project.path().join(".codex")).unwrap();
        std::fs::write(
            home.path().join("p.config.toml"),
            "model_auto_compact_token_limit = 20000\n",
        )
        .unwrap();
        let args: Vec<String> = ["codex", "exec", "--profile", "p"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            profile_limit(Some(home.path()), &args).map(|p| p.1),
            Some(20_000)
        );
        let escape: Vec<String> = ["codex", "-p", "../p"].map(String::from).to_vec();
        assert_eq!(profile_limit(Some(home.path()), &escape), None);
        std::fs::write(
            home.path().join("zero.config.toml"),
            "model_auto_compact_token_limit = 0\n",
        )
        .unwrap();
        let zero: Vec<String> = ["codex", "--profile=zero"].map(String::from).to_vec();
        assert_eq!(profile_limit(Some(home.path()), &zero), None);

        std::fs::write(
            project.path().join(".codex/config.toml"),
            "model_auto_compact_token_limit = 50000\n",
        )
        .unwrap();
        assert_eq!(
            project_limit(home.path(), &sub, project.path()),
            None,
            "not trusted"
        );
        std::fs::write(
            home.path().join("config.toml"),
            format!(
                "model = \"m\"\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
                project.path().display()
            ),
        )
        .unwrap();
        assert_eq!(
            project_limit(home.path(), &sub, project.path()).map(|p| p.1),
            Some(50_000)
        );
        let elsewhere = tempfile::tempdir().unwrap();
        assert_eq!(
            project_limit(home.path(), elsewhere.path(), elsewhere.path()),
            None
        );
    }

    /// The figures of one reply as Codex 0.169.0 writes them: its
    /// `token_usage_record`, then its `token_count`.
    fn reply(total: u64) -> [String; 2] {
        [
            format!(
                r#"{{"type":"token_usage_record","payload":{{"response_id":"r","usage":{{"input_tokens":{i},"cached_input_tokens":0,"output_tokens":50,"reasoning_output_tokens":0,"total_tokens":{total}}}}}}}"#,
                i = total - 50
            ),
            token_count(total, 190_000),
        ]
    }

    /// A compaction as Codex 0.169.0 writes it before the next turn: the
    /// turn starts repeating the last figure, the summarizer's reply comes
    /// with its own figures (2,000), then the record and Codex's estimate
    /// of what is left.
    fn compaction_lines(before: u64, left: u64) -> Vec<String> {
        let mut lines = vec![TASK_STARTED.to_owned(), token_count(before, 190_000)];
        lines.extend(reply(2_000));
        lines.extend([
            COMPACTED.to_owned(),
            TURN_CONTEXT.to_owned(),
            token_count(left, 190_000),
        ]);
        lines
    }

    /// A rollout under `<home>/sessions/…` with `lines`, appended to.
    fn append(path: &Path, lines: &[String]) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        for l in lines {
            writeln!(f, "{l}").unwrap();
        }
    }

    fn codex_session() -> Session {
        Session::new(
            crate::sessions::SessionKey {
                harness: Harness::Codex,
                id: "s".into(),
            },
            0,
        )
    }

    fn pre_compact(path: &Path, trigger: &str) -> HookEvent {
        let payload = format!(
            r#"{{"session_id":"s","hook_event_name":"PreCompact","trigger":"{trigger}","transcript_path":{:?}}}"#,
            path.display().to_string()
        );
        crate::harness::parse(&request(Some("pre-compact"), &payload, &[])).unwrap()
    }

    /// The walk up from the working directory stops at a directory of
    /// another user: a `.codex/config.toml` above it is not read. Needs
    /// root to give a directory another owner; skipped without.
    #[test]
    fn a_project_limit_above_another_users_directory_is_not_read_as_root() {
        assert_eq!(
            protocol::paths::effective_uid(),
            0,
            "needs root to give a directory another owner (tests/run leaves *_as_root out without it)"
        );
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let theirs = project.path().join("theirs");
        let cwd = theirs.join("mine");
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(project.path().join(".codex")).unwrap();
        std::fs::write(
            project.path().join(".codex/config.toml"),
            "model_auto_compact_token_limit = 50000\n",
        )
        .unwrap();
        std::fs::write(
            home.path().join("config.toml"),
            format!(
                "[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
                project.path().display()
            ),
        )
        .unwrap();
        assert_eq!(
            project_limit(home.path(), &cwd, project.path()).map(|p| p.1),
            Some(50_000)
        );
        std::os::unix::fs::chown(&theirs, Some(65_534), None).unwrap();
        assert_eq!(project_limit(home.path(), &cwd, project.path()), None);
    }

    /// A limit hookd could not see (the command line unreadable): Codex
    /// compacting automatically at 96,100 shows the point is there. The
    /// figure is the last reply's before the compaction, not the
    /// summarizer's right before its record.
    #[test]
    fn an_automatic_compaction_below_the_expected_point_teaches_it() {
        let config = protocol::config::Config::default();
        for (trigger, learned) in [("manual", None), ("auto", Some(96_100))] {
            let home = tempfile::tempdir().unwrap();
            let day = home.path().join("sessions/2026/05/01");
            std::fs::create_dir_all(&day).unwrap();
            let path = day.join("rollout-2026-05-01T09-00-00-s.jsonl");
            let mut lines = vec![TURN_CONTEXT.to_owned()];
            lines.extend(reply(96_100));
            append(&path, &lines);
            let mut s = codex_session();
            let reading = read(&path, None, None);
            crate::session_machine::on_hook(
                &mut s,
                &pre_compact(&path, trigger),
                Some(reading),
                &config,
                10,
            );
            assert_eq!(
                s.learned_point, None,
                "nothing learned before the compaction"
            );
            append(&path, &compaction_lines(96_100, 6_219));
            let reading = read(&path, s.cursor.as_ref(), s.usage.as_ref()).unwrap();
            assert_eq!(reading.reading.method, Method::Forward);
            crate::session_machine::on_file_change(&mut s, Ok(reading), &config, 20);
            let c = crate::sessions::context_of(&s, &config).unwrap();
            assert_eq!(
                s.learned_point.as_ref().and_then(|p| p.tokens),
                learned,
                "{trigger}"
            );
            assert_eq!(
                (c.tokens_used, c.tokens_max),
                (6_219, learned.unwrap_or(171_000)),
                "{trigger}"
            );
            if learned.is_some() {
                assert!(c.basis.contains("learned"), "{}", c.basis);
            }
        }
    }

    /// The figure Codex writes after a compaction is what is left, not
    /// where it compacts: a PreCompact that comes while it is the latest
    /// teaches nothing, and only the next compaction's own figure before
    /// it does; read from the end (a first reading), the same figure.
    #[test]
    fn a_point_is_learned_only_from_the_figure_before_a_compaction() {
        let config = protocol::config::Config::default();
        let home = tempfile::tempdir().unwrap();
        let day = home.path().join("sessions/2026/05/01");
        std::fs::create_dir_all(&day).unwrap();
        let path = day.join("rollout-2026-05-01T09-00-00-s.jsonl");
        let mut lines = vec![TURN_CONTEXT.to_owned()];
        lines.extend(reply(21_000));
        append(&path, &lines);
        let mut s = codex_session();
        let reading = read(&path, None, None);
        crate::session_machine::on_hook(
            &mut s,
            &pre_compact(&path, "auto"),
            Some(reading),
            &config,
            10,
        );
        append(&path, &compaction_lines(21_000, 6_219));
        let reading = read(&path, s.cursor.as_ref(), s.usage.as_ref());
        crate::session_machine::on_file_change(&mut s, reading, &config, 20);
        assert_eq!(
            s.learned_point.as_ref().and_then(|p| p.tokens),
            Some(21_000)
        );

        // Codex compacts again at once: the latest figure is its estimate.
        let reading = read(&path, s.cursor.as_ref(), s.usage.as_ref());
        crate::session_machine::on_hook(
            &mut s,
            &pre_compact(&path, "auto"),
            Some(reading),
            &config,
            30,
        );
        assert_eq!(
            s.learned_point.as_ref().and_then(|p| p.tokens),
            Some(21_000),
            "not the 6,219 left after the first compaction"
        );
        append(&path, &compaction_lines(20_500, 6_227));
        let reading = read(&path, s.cursor.as_ref(), s.usage.as_ref());
        crate::session_machine::on_file_change(&mut s, reading, &config, 40);
        assert_eq!(
            s.learned_point.as_ref().and_then(|p| p.tokens),
            Some(20_500)
        );

        // From the end, as a first reading: the latest turn's compaction
        // and the figure before its summarizer's.
        let usage = read_rollout(&path).unwrap();
        assert_eq!(usage.tokens, Some(6_227));
        let pre: Vec<_> = usage.compactions.iter().map(|c| c.pre_tokens).collect();
        assert_eq!(pre, [Some(20_500)]);
    }

    /// A learned point stands only while nothing better is known: a
    /// limit hookd can read, or another codex process running the session
    /// (started with its own arguments), drops it.
    #[test]
    fn a_learned_point_goes_when_a_point_appears_or_the_process_changes() {
        let learned = point_shown_by_compaction(96_100);
        let launch = |process: &str, tokens: Option<u64>| Launch {
            process: Some(process.to_owned()),
            point: tokens.map(|t| HarnessPoint {
                tokens: Some(t),
                fraction: None,
                basis: format!("{t} (model_auto_compact_token_limit on codex's command line)"),
            }),
        };
        let mut s = codex_session();
        s.take_launch(launch("codex pid 10 started at tick 5", None));
        s.learned_point = Some(learned.clone());
        s.take_launch(launch("codex pid 10 started at tick 5", None));
        assert_eq!(s.learned_point.as_ref(), Some(&learned), "the same process");
        s.take_launch(launch("codex pid 10 started at tick 9", None));
        assert_eq!(s.learned_point, None, "a pid given to another process");

        s.learned_point = Some(learned.clone());
        s.take_launch(launch("codex pid 10 started at tick 9", Some(100_000)));
        assert_eq!(s.learned_point, None, "a command-line limit");
        assert_eq!(
            s.facts().harness_point.and_then(|p| p.tokens),
            Some(100_000)
        );
        // Learned below a limit hookd reads (set where it cannot look): the
        // learned one is where Codex compacts, while that limit stays.
        s.learned_point = Some(learned.clone());
        s.take_launch(launch("codex pid 10 started at tick 9", Some(100_000)));
        assert_eq!(s.facts().harness_point.and_then(|p| p.tokens), Some(96_100));

        // config.toml's limit appearing, read at a hook of a session whose
        // codex process is not found.
        let home = tempfile::tempdir().unwrap();
        let day = home.path().join("sessions/2026/05/01");
        std::fs::create_dir_all(&day).unwrap();
        let path = day.join("rollout-2026-05-01T09-00-00-s.jsonl");
        append(
            &path,
            &[TURN_CONTEXT.to_owned(), token_count(50_000, 190_000)],
        );
        let mut event = hook_in(Path::new("/nonexistent"), Path::new("/nonexistent"));
        event.transcript_path = Some(path.clone());
        let at_hook = || launch_point(&event, None, &ProcessCache::default()).unwrap();
        let mut s = codex_session();
        s.take_reading(read(&path, None, None).unwrap(), 1);
        s.take_launch(at_hook());
        s.learned_point = Some(learned.clone());
        append(&path, &[token_count(51_000, 190_000)]);
        s.take_reading(read(&path, s.cursor.as_ref(), s.usage.as_ref()).unwrap(), 2);
        s.take_launch(at_hook());
        assert_eq!(s.learned_point.as_ref(), Some(&learned), "nothing new");
        std::fs::write(
            home.path().join("config.toml"),
            "model_auto_compact_token_limit = 120000\n",
        )
        .unwrap();
        s.take_launch(at_hook());
        assert_eq!(s.learned_point, None, "config.toml's limit");
    }

    /// A compaction record is taken once: read again (a second reading of
    /// the same lines, or from the end by a daemon restarted with the
    /// registry it saved), it neither names the epoch a hook opened for
    /// the next compaction nor makes that one count twice.
    #[test]
    fn a_compaction_record_read_again_is_not_another_compaction() {
        let f = rollout(&[TURN_CONTEXT, TASK_STARTED, COMPACTED]);
        let mut s = codex_session();
        let began = s
            .take_reading(read(f.path(), None, None).unwrap(), 1_000)
            .unwrap();
        assert_eq!((began.len(), s.epoch), (1, 2));
        // The next compaction's PostCompact comes before its record.
        s.compaction_announced_ms = Some(5_000);
        assert!(s.begin_epoch(
            &crate::sessions::EpochStart::Hook("post-compact auto".into()),
            5_000
        ));
        s.compaction_announced_ms = None;
        // The registry as a restarted daemon loads it.
        let mut s: Session = serde_json::from_value(serde_json::to_value(&s).unwrap()).unwrap();
        let again = read(f.path(), None, None).unwrap();
        assert_eq!(again.reading.boundaries.len(), 1, "read from the end");
        let began = s.take_reading(again, 5_100).unwrap();
        assert_eq!((began.len(), s.epoch), (0, 3));
        assert!(s.awaiting_boundary, "the old record names nothing");
        let count = token_count(20_500, 190_000);
        append(
            f.path(),
            &[count, TASK_STARTED.to_owned(), COMPACTED.to_owned()],
        );
        let began = s
            .take_reading(
                read(f.path(), s.cursor.as_ref(), s.usage.as_ref()).unwrap(),
                5_200,
            )
            .unwrap();
        assert_eq!(
            (began.len(), s.epoch),
            (0, 3),
            "its own record names the hook's epoch"
        );
        assert!(!s.awaiting_boundary);
    }

    /// A hook's epoch waits for its record a short while only: a record
    /// that comes much later is another compaction.
    #[test]
    fn a_record_that_never_came_does_not_swallow_the_next_compaction() {
        let f = rollout(&[TURN_CONTEXT]);
        let mut s = codex_session();
        s.take_reading(read(f.path(), None, None).unwrap(), 1_000);
        s.compaction_announced_ms = Some(5_000);
        assert!(s.begin_epoch(
            &crate::sessions::EpochStart::Hook("post-compact auto".into()),
            5_000
        ));
        s.compaction_announced_ms = None;
        assert_eq!(s.epoch, 2);
        append(f.path(), &[TASK_STARTED.to_owned(), COMPACTED.to_owned()]);
        let hour_later = 5_000 + 3_600_000;
        let began = s
            .take_reading(
                read(f.path(), s.cursor.as_ref(), s.usage.as_ref()).unwrap(),
                hour_later,
            )
            .unwrap();
        assert_eq!((began.len(), s.epoch), (1, 3));
    }

    /// A reading reads what Codex appended since the last one, whatever
    /// the file's size, and finds what a reading from the end finds.
    #[test]
    fn a_reading_reads_only_what_was_appended() {
        let f = rollout(&[TURN_CONTEXT, &token_count(40_000, 190_000)]);
        let filler = format!(
            r#"{{"type":"response_item","payload":{{"type":"function_call_output","call_id":"c","output":"{}"}}}}"#,
            "x".repeat(4_000)
        );
        append(f.path(), &vec![filler; 1_000]);
        let mut s = codex_session();
        let first = read(f.path(), None, None).unwrap();
        assert_eq!(first.reading.method, Method::Backward);
        s.take_reading(first, 1);
        let before = std::fs::metadata(f.path()).unwrap().len();
        let mut appended = reply(61_000).to_vec();
        appended.push(r#"{"type":"turn_context","payload":{"model":"gpt-5.5"}}"#.to_owned());
        append(f.path(), &appended);
        let after = std::fs::metadata(f.path()).unwrap().len();
        let next = read(f.path(), s.cursor.as_ref(), s.usage.as_ref()).unwrap();
        assert_eq!(next.reading.method, Method::Forward);
        assert_eq!(next.reading.bytes_read, after - before);
        assert_eq!(next.reading.cursor.offset, after);
        let usage = next.reading.usage.clone().unwrap();
        assert_eq!(
            (usage.tokens, usage.model.as_deref()),
            (61_000, Some("gpt-5.5"))
        );
        assert_eq!(next.window, Some(190_000));
        let from_end = read_rollout(f.path()).unwrap();
        assert_eq!(
            (from_end.tokens, from_end.window),
            (Some(61_000), Some(190_000))
        );
        s.take_reading(next, 2);
        let unchanged = read(f.path(), s.cursor.as_ref(), s.usage.as_ref()).unwrap();
        assert_eq!(
            (unchanged.reading.method, unchanged.reading.bytes_read),
            (Method::Unchanged, 0)
        );
    }

    /// Before Codex reported a window and with no limit hookd can read,
    /// the point is not guessed: `hookctl status` says it is unknown, and
    /// no level fires against a Claude Code figure.
    #[test]
    fn an_unknown_point_is_said_and_fires_nothing() {
        let config = protocol::config::Config::default();
        let f = rollout(&[TURN_CONTEXT, &reply(150_000)[0]]);
        let mut s = codex_session();
        let payload = format!(
            r#"{{"session_id":"s","hook_event_name":"PostToolUse","transcript_path":{:?}}}"#,
            f.path().display().to_string()
        );
        let event = crate::harness::parse(&request(Some("post-tool-use"), &payload, &[])).unwrap();
        let effects = crate::session_machine::on_hook(
            &mut s,
            &event,
            Some(read(f.path(), None, None)),
            &config,
            10,
        );
        let c = crate::sessions::context_of(&s, &config).unwrap();
        assert_eq!(c.tokens_used, 150_000);
        assert_eq!(c.basis, POINT_UNKNOWN);
        assert_eq!(s.point_note(&config).as_deref(), Some(POINT_UNKNOWN));
        assert!(s.fired.is_empty(), "{effects:?}");
        // Once Codex reports its window, 90% of it.
        append(f.path(), &[token_count(150_000, 190_000)]);
        let reading = read(f.path(), s.cursor.as_ref(), s.usage.as_ref());
        crate::session_machine::on_hook(&mut s, &event, Some(reading), &config, 20);
        let c = crate::sessions::context_of(&s, &config).unwrap();
        assert_eq!(c.tokens_max, 171_000);
        assert_eq!(s.point_note(&config), None);
        assert!(!s.fired.is_empty());
    }

    #[test]
    fn the_command_line_limit_is_the_last_one_given() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        for (line, limit) in [
            (&["codex", "exec", "hi"][..], None),
            (
                &[
                    "codex",
                    "-c",
                    "model_auto_compact_token_limit=100000",
                    "exec",
                ],
                Some(100_000),
            ),
            (
                &[
                    "codex",
                    "exec",
                    "--config",
                    "model_auto_compact_token_limit = 90_000",
                ],
                Some(90_000),
            ),
            (
                &[
                    "codex",
                    "--config=model_auto_compact_token_limit=5",
                    "-cmodel_auto_compact_token_limit=7",
                ],
                Some(7),
            ),
            (
                &[
                    "codex",
                    "-c",
                    "model_auto_compact_token_limit=8",
                    "-c",
                    "model_auto_compact_token_limit=x",
                ],
                Some(8),
            ),
            (&["codex", "-c", "model_context_window=8"], None),
            (
                &[
                    "codex",
                    "exec",
                    "--",
                    "-c",
                    "model_auto_compact_token_limit=8",
                ],
                None,
            ),
            (&["codex", "-c"], None),
        ] {
            assert_eq!(command_line_limit(&args(line)), limit, "{line:?}");
        }
    }

    /// A process that runs `/bin/sh` under the name `codex` with a limit
    /// among its arguments (sh takes the second `-c` pair as $0 and $1),
    /// as `uid`; once it shows in /proc.
    fn foreign_codex(dir: &Path, uid: u32) -> std::process::Child {
        use std::os::unix::fs::PermissionsExt;
        use std::os::unix::process::CommandExt;
        let codex = dir.join("codex");
        std::os::unix::fs::symlink("/bin/sh", &codex).unwrap();
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let child = std::process::Command::new(&codex)
            .args([
                "-c",
                "sleep 30; exit",
                "-c",
                "model_auto_compact_token_limit=1234",
            ])
            .uid(uid)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // The spawn may return before the exec shows in /proc.
        let stat = PathBuf::from(format!("/proc/{}/stat", child.id()));
        for _ in 0..100 {
            if std::fs::read_to_string(&stat).is_ok_and(|s| s.contains("(codex)")) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        child
    }

    /// A hook event of a session in `cwd` under `codex_home`.
    fn hook_in(cwd: &Path, codex_home: &Path) -> HookEvent {
        crate::harness::parse(&request(
            Some("post-tool-use"),
            &serde_json::json!({"session_id": "s", "cwd": cwd}).to_string(),
            &[("CODEX_HOME", codex_home.to_str().unwrap())],
        ))
        .unwrap()
    }

    fn end(mut harness: std::process::Child, hook: u32) {
        let _ = std::process::Command::new("kill")
            .arg(hook.to_string())
            .status();
        harness.kill().unwrap();
        harness.wait().unwrap();
    }

    /// The limit is read from a running process named `codex` above the
    /// hook's, once: the process's later hooks find it by its stat alone
    /// and read its arguments no more. A process given the same pid later
    /// is another, read again.
    #[test]
    fn the_launch_point_is_read_from_the_codex_process_once() {
        use crate::harness::process::{ARGS_READ, tests::harness_with_child};
        let dir = tempfile::tempdir().unwrap();
        let (harness, hook) = harness_with_child(
            dir.path(),
            "codex",
            &["-c", "model_auto_compact_token_limit=1234"],
            &[],
        );
        let event = hook_in(Path::new("/nonexistent"), Path::new("/nonexistent"));
        let known = ProcessCache::default();
        let reads = || ARGS_READ.with(|n| n.get());
        let launch = launch_point(&event, Some(hook), &known);
        let after_first = reads();
        let again = launch_point(&event, Some(hook), &known);
        let after_again = reads();
        let codex = process::Process::open(harness.id()).expect("the codex");
        let reused = ProcessCache::default();
        let kept = ProcessPoint {
            command_line: Some(HarnessPoint {
                tokens: Some(777),
                fraction: None,
                basis: "kept".into(),
            }),
            files: None,
        };
        reused.put(
            process::ProcessId {
                pid: codex.id.pid,
                started: codex.id.started + 1,
            },
            Path::new("/nonexistent"),
            kept,
        );
        let fresh = launch_point(&event, Some(hook), &reused);
        end(harness, hook);

        let launch = launch.expect("a launch");
        let point = launch.point.clone().expect("a limit");
        assert_eq!(point.tokens, Some(1_234));
        assert!(point.basis.contains("command line"), "{}", point.basis);
        assert_eq!(
            launch.process,
            Some(format!(
                "codex pid {} started at tick {}",
                codex.id.pid, codex.id.started
            ))
        );
        assert_eq!(after_first, 1, "the arguments are read on the first hook");
        assert_eq!(after_again, 1, "and not on the next");
        assert_eq!(again, Some(launch));
        assert_eq!(
            fresh.and_then(|l| l.point).and_then(|p| p.tokens),
            Some(1_234)
        );
        assert_eq!(reads(), 2);
        // No peer: no walk, no process.
        let alone = launch_point(&event, None, &known).expect("a launch");
        assert_eq!((alone.process, alone.point), (None, None));
        assert_eq!(reads(), 2);
    }

    /// Codex reads config.toml once, at start: an edit while it runs does
    /// not move its point. A session whose process is not found takes the
    /// file as it is now.
    #[test]
    fn config_toml_counts_as_the_codex_process_read_it_at_start() {
        use crate::harness::process::tests::harness_with_child;
        let dir = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let config = home.path().join("config.toml");
        std::fs::write(
            &config,
            "model_auto_compact_token_limit = 150_000
",
        )
        .unwrap();
        let (harness, hook) = harness_with_child(dir.path(), "codex", &["exec"], &[]);
        let event = hook_in(Path::new("/nonexistent"), home.path());
        let known = ProcessCache::default();
        let first = launch_point(&event, Some(hook), &known);
        std::fs::write(
            &config,
            "model_auto_compact_token_limit = 90_000
",
        )
        .unwrap();
        let edited = launch_point(&event, Some(hook), &known);
        end(harness, hook);
        let without_process = launch_point(&event, None, &known);

        let tokens = |l: Option<Launch>| l.and_then(|l| l.point).and_then(|p| p.tokens);
        let first_basis = first
            .as_ref()
            .and_then(|l| l.point.as_ref())
            .map(|p| p.basis.clone());
        assert_eq!(tokens(first), Some(150_000));
        assert!(
            first_basis.is_some_and(|b| b.contains("config.toml")),
            "the basis names the file"
        );
        assert_eq!(tokens(edited), Some(150_000));
        assert_eq!(tokens(without_process), Some(90_000));
    }

    /// One codex process (an IDE's app-server) runs sessions in two
    /// trusted projects: each gets its own project's limit, while what the
    /// process read at start (config.toml) stays the same for both.
    #[test]
    fn two_sessions_of_one_codex_process_get_their_own_projects_points() {
        use crate::harness::process::tests::harness_with_child;
        let dir = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let projects = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            projects.path().join("a"),
            projects.path().join("b"),
            projects.path().join("c"),
        );
        let mut config = "model_auto_compact_token_limit = 150000
"
        .to_owned();
        for (project, limit) in [(&a, Some(40_000)), (&b, Some(60_000)), (&c, None)] {
            std::fs::create_dir_all(project.join(".git")).unwrap();
            std::fs::create_dir_all(project.join(".codex")).unwrap();
            if let Some(limit) = limit {
                std::fs::write(
                    project.join(".codex/config.toml"),
                    format!(
                        "model_auto_compact_token_limit = {limit}
"
                    ),
                )
                .unwrap();
            }
            config += &format!(
                "[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
                project.display()
            );
        }
        std::fs::write(home.path().join("config.toml"), config).unwrap();
        let (harness, hook) = harness_with_child(dir.path(), "codex", &["app-server"], &[]);
        let known = ProcessCache::default();
        let points: Vec<_> = [&a, &b, &c, &a]
            .iter()
            .map(|project| launch_point(&hook_in(project, home.path()), Some(hook), &known))
            .collect();
        end(harness, hook);

        let tokens: Vec<_> = points
            .iter()
            .map(|l| {
                l.as_ref()
                    .and_then(|l| l.point.as_ref())
                    .and_then(|p| p.tokens)
            })
            .collect();
        assert_eq!(
            tokens,
            [Some(40_000), Some(60_000), Some(150_000), Some(40_000)]
        );
        let process = points[0].as_ref().and_then(|l| l.process.clone());
        assert!(process.is_some());
        assert!(
            points
                .iter()
                .all(|l| l.as_ref().unwrap().process == process)
        );
    }

    /// The walk up from the hook's process reads nothing of a process of
    /// another user. Needs root to start one; skipped without.
    #[test]
    fn a_codex_process_of_another_user_is_not_read_as_root() {
        assert_eq!(
            protocol::paths::effective_uid(),
            0,
            "needs root to run a process as another user (tests/run leaves *_as_root out without it)"
        );
        let dir = tempfile::tempdir().unwrap();
        let child = foreign_codex(dir.path(), 65_534);
        let found = process::find(child.id(), 0, |_| true);
        let event = hook_in(Path::new("/nonexistent"), Path::new("/nonexistent"));
        let launch = launch_point(&event, Some(child.id()), &ProcessCache::default());
        let mut child = child;
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(found.is_none());
        assert_eq!(launch.and_then(|l| l.process), None);
    }

    #[test]
    fn a_token_usage_record_is_the_freshest_figure() {
        // Codex writes it right after the reply, before the tool runs; the
        // token_count comes after the tool's output.
        let record = r#"{"type":"token_usage_record","payload":{"response_id":"r5","usage":{"input_tokens":95950,"cached_input_tokens":0,"output_tokens":50,"reasoning_output_tokens":0,"total_tokens":96000}}}"#;
        let f = rollout(&[TURN_CONTEXT, &token_count(92_000, 272_000), record]);
        let usage = read_rollout(f.path()).unwrap();
        assert_eq!((usage.tokens, usage.window), (Some(96_000), Some(272_000)));
        let bad = record.replace("96000", "-1");
        let f = rollout(&[TURN_CONTEXT, &token_count(92_000, 272_000), &bad]);
        assert!(read_rollout(f.path()).unwrap().invalid.is_some());
    }

    #[test]
    fn the_arrival_check_looks_for_a_developer_message() {
        let marker = "[hookd-resume 0123456789ab]";
        let developer = format!(
            r#"{{"type":"response_item","payload":{{"type":"message","role":"developer","content":[{{"type":"input_text","text":"{marker} resume"}}]}}}}"#
        );
        let echoed = format!(
            r#"{{"type":"event_msg","payload":{{"type":"hook_output","text":"{marker}"}}}}"#
        );
        let f = rollout(&[TURN_CONTEXT, &echoed]);
        assert!(!developer_message_holds(f.path(), marker).unwrap());
        let f = rollout(&[TURN_CONTEXT, &developer]);
        assert!(developer_message_holds(f.path(), marker).unwrap());
        let f = rollout(&[
            &developer,
            r#"{"type":"compacted","payload":{"message":"s"}}"#,
        ]);
        assert!(
            !developer_message_holds(f.path(), marker).unwrap(),
            "before the compaction"
        );
    }

    /// A rollout as Codex 0.169.0 writes it (the person's prompts as
    /// completed `UserMessage` items; the `user` response items also carry
    /// the environment context), and an earlier version's `user_message`
    /// event; a plan, shell calls and patches.
    #[test]
    fn the_work_is_read_from_the_rollout() {
        let f = rollout(&[
            r#"{"timestamp":"2026-11-23T10:00:00.000Z","type":"session_meta","payload":{"id":"s1","cwd":"/p"}}"#,
            r#"{"timestamp":"2026-11-23T10:00:00.001Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/p</cwd>\n</environment_context>"}]}}"#,
            r#"{"timestamp":"2026-11-23T10:00:00.002Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"Add retries to the HTTP client"}]}}"#,
            r#"{"timestamp":"2026-11-23T10:00:00.003Z","ordinal":8,"type":"event_msg","payload":{"type":"item_completed","thread_id":"t1","turn_id":"u1","item":{"type":"UserMessage","id":"i1","content":[{"type":"text","text":"Add retries to the HTTP client","text_elements":[]}]}}}"#,
            r#"{"timestamp":"2026-11-23T10:00:00.004Z","ordinal":9,"type":"event_msg","payload":{"type":"item_completed","thread_id":"t1","turn_id":"u1","item":{"type":"AgentMessage","id":"i2","content":[{"type":"text","text":"On it: fix all the things"}]}}}"#,
            r#"{"timestamp":"2026-11-23T10:00:01.000Z","type":"response_item","payload":{"type":"function_call","name":"update_plan","arguments":"{\"plan\":[{\"step\":\"Write the retry loop\",\"status\":\"completed\"},{\"step\":\"Test the backoff\",\"status\":\"in_progress\"}]}","call_id":"call_1"}}"#,
            r#"{"timestamp":"2026-11-23T10:00:02.000Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"echo 'step 1' > notes.txt\"}","call_id":"call_2"}}"#,
            r#"{"timestamp":"2026-11-23T10:00:03.000Z","type":"response_item","payload":{"type":"custom_tool_call","status":"completed","call_id":"call_3","name":"apply_patch","input":"*** Begin Patch\n*** Update File: src/http.rs\n@@\n-a\n+b\n*** End Patch"}}"#,
            r#"{"timestamp":"2026-11-23T10:00:04.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"apply_patch\",\"*** Begin Patch\\n*** Add File: tests/retry.rs\\n+x\\n*** End Patch\"]}","call_id":"call_4"}}"#,
            r#"{"timestamp":"2026-11-23T10:00:05.000Z","type":"event_msg","payload":{"type":"user_message","message":"yes, continue","images":[]}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"not json"}}"#,
        ]);
        let facts = read_work(f.path(), u64::MAX, 3).unwrap();
        assert_eq!(facts.requests, ["Add retries to the HTTP client"]);
        assert_eq!(
            facts.prompts,
            ["Add retries to the HTTP client", "yes, continue"]
        );
        let tasks: Vec<(&str, &str)> = facts
            .tasks
            .iter()
            .map(|t| (t.title.as_str(), t.status.as_str()))
            .collect();
        assert_eq!(
            tasks,
            [
                ("Write the retry loop", "completed"),
                ("Test the backoff", "in_progress")
            ]
        );
        let edited: Vec<&str> = facts.edited.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(edited, ["notes.txt", "src/http.rs", "tests/retry.rs"]);
        let empty = rollout(&[TURN_CONTEXT, &token_count(1_000, 200_000)]);
        assert!(read_work(empty.path(), u64::MAX, 3).unwrap().is_empty());
    }

    #[test]
    fn the_last_tool_call_and_how_it_ended() {
        let f = rollout(&[
            r#"{"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"cat src/http.rs\"}","call_id":"c1"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"Exit code: 0\nWall time: 0.1 seconds\nOutput:\nfn get() {}"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"cargo test\"}","call_id":"c2"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c2","output":"Exit code: 101\nWall time: 3 seconds\nOutput:\nerror: could not compile `http`\nmore"}}"#,
        ]);
        let last = read_work(f.path(), u64::MAX, 0).unwrap().last_call.unwrap();
        assert_eq!(
            (last.tool.as_str(), last.target.as_deref()),
            ("exec_command", Some("cargo test"))
        );
        assert_eq!(
            last.outcome_words(),
            "failed: error: could not compile `http`"
        );
        let f = rollout(&[
            r#"{"type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","input":"*** Begin Patch\n*** Update File: src/a.rs\n*** End Patch","call_id":"p1"}}"#,
            r#"{"type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"p1","output":"{\"output\":\"Success. Updated the following files:\\nM src/a.rs\\n\",\"metadata\":{\"exit_code\":0}}"}}"#,
        ]);
        let last = read_work(f.path(), u64::MAX, 0).unwrap().last_call.unwrap();
        assert_eq!(
            (last.tool.as_str(), last.target.as_deref()),
            ("apply_patch", Some("src/a.rs"))
        );
        assert_eq!(last.outcome_words(), "succeeded");
    }

    #[test]
    fn a_patch_run_through_the_shell_is_read_as_a_patch_only() {
        let f = rollout(&[
            r#"{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"apply_patch\",\"*** Begin Patch\\n*** Update File: src/cmp.rs\\n@@\\n-if a > b {\\n+if a >= b {\\n*** End Patch\"]}","call_id":"c1"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"apply_patch <<'EOF'\\n*** Begin Patch\\n*** Add File: src/new.rs\\n+fn f() -> Self { x > y }\\n*** End Patch\\nEOF\"}","call_id":"c2"}}"#,
        ]);
        let facts = read_work(f.path(), u64::MAX, 3).unwrap();
        let edited: Vec<&str> = facts.edited.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(edited, ["src/cmp.rs", "src/new.rs"]);
    }
}

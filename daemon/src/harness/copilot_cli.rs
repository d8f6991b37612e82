//! GitHub Copilot CLI: hook payloads in, hook output out, and how full the
//! context is from its session's `events.jsonl`.
//!
//! What this relies on (measured with the real Copilot CLI 1.0.102):
//! - hooks live in `~/.copilot/hooks/*.json` (or `$COPILOT_HOME/hooks/`)
//!   and `<repo>/.github/hooks/*.json`, the latter only in a folder Copilot
//!   trusts; the event is the key a hook is listed under, so hookctl is
//!   told it on its command line (payloads carry no event name);
//! - payloads are camelCase: `sessionId`, `timestamp` (epoch ms), `cwd`,
//!   `source`, `prompt`, `toolName`, `toolArgs`, `toolResult`, `trigger`,
//!   `customInstructions`, `reason`, `stopReason`, and `transcriptPath` on
//!   preCompact and agentStop only (the payloads of hooks written in Claude
//!   Code's format in `.claude/settings.json` are snake_case: both are read);
//! - a top-level `additionalContext` reaches the model from sessionStart,
//!   userPromptSubmitted (recorded in the prompt's `transformedContent`),
//!   preToolUse and postToolUse (appended to the tool's result, recorded in
//!   `tool.execution_complete`); preToolUse's goes in as a user message the
//!   file does not record, so no arrival could be checked there. Copilot
//!   reads nothing else of the answer, and nothing at all of preCompact's;
//! - `session-state/<sessionId>/events.jsonl` records every model call as a
//!   `session.usage_record` (`inputTokens`, `cacheReadTokens`,
//!   `maxPromptTokens`) and each compaction as `session.compaction_start`
//!   and, once the summary is in, `session.compaction_complete`
//!   (`preCompactionTokens`, `postCompactionTokens`, `summaryContent`);
//! - it compacts in the background when the last call's `inputTokens` plus
//!   its estimate of what came since reach 0.80 of `maxPromptTokens`
//!   (`COPILOT_PROVIDER_MAX_PROMPT_TOKENS`, 128,000 for a model it does not
//!   know). Only preCompact fires around it: no hook after, no sessionStart.
//!   The turn goes on meanwhile, so the resume prompt goes in with the first
//!   prompt or tool result after the file shows `compaction_complete`.
//! - the file is written in batches: a hook may not see the records of the
//!   last fraction of a second (the usage record of the call that asked for
//!   the tool it follows among them); the file watcher takes them in later.

use super::lines;
use super::work::{self, LineReader, WorkFacts, WorkLog};
use super::{
    Adapter, Boundary, Cursor, Event, EventName, EventParts, Fields, HarnessPoint, HookEvent,
    Launch, LaunchPoints, Outcome, SessionFacts, SessionReading, Trigger, Usage,
};
use crate::tail::mentions_any;
use protocol::config::WindowConfig;
use protocol::pressure::{CompactionPoint, token_count};
use protocol::wire::{HookReply, HookRequest};
use serde_json::{Map, Value};
use std::io;
use std::path::{Path, PathBuf};

/// Copilot CLI's prompt limit for a model it does not know.
const DEFAULT_WINDOW: u64 = 128_000;
/// The share of the prompt limit Copilot CLI compacts at.
const COMPACTION_SHARE: f64 = 0.80;
/// How a compaction's boundary is named: by where its record starts.
const BOUNDARY_PREFIX: &str = "copilot events byte ";
const USAGE_RECORD: &[u8] = b"\"session.usage_record\"";
const COMPACTION_COMPLETE: &[u8] = b"\"session.compaction_complete\"";
/// The records a reading looks at; any other line is skipped unparsed.
const NEEDLES: [&[u8]; 2] = [USAGE_RECORD, COMPACTION_COMPLETE];
/// Longest session id taken into a path.
const MAX_SESSION_ID: usize = 128;

/// Copilot CLI, as hookd's core sees it.
pub struct CopilotCli;

impl Adapter for CopilotCli {
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
        work::read_file::<WorkReader>(path, max_bytes, keep_prompts)
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

    /// The limit is in every usage record; before the first, Copilot's
    /// default stands.
    fn point_unknown(&self, _session: &SessionFacts, _config: &WindowConfig) -> bool {
        false
    }

    /// Copilot adds its estimate of what came since the last call before it
    /// compares: a compaction does not show the point.
    fn point_shown_by_compaction(&self, _tokens: u64) -> Option<HarnessPoint> {
        None
    }

    /// The limit its process runs with is in its session file.
    fn has_launch_point(&self) -> bool {
        false
    }

    fn launch_point(
        &self,
        _event: &HookEvent,
        _peer_pid: Option<u32>,
        _known: &LaunchPoints,
    ) -> Option<Launch> {
        None
    }

    fn boundary_offset(&self, boundary: &Boundary) -> Option<u64> {
        boundary.byte_offset(BOUNDARY_PREFIX)
    }

    fn injected_context_arrived(&self, path: &Path, marker: &str) -> io::Result<bool> {
        injected_context_arrived(path, marker)
    }

    /// preCompact fires only when a compaction follows.
    fn compaction_is_due(&self, _session: &SessionFacts, _trigger: Option<&Trigger>) -> bool {
        true
    }

    fn precompact_repeats_without_compaction(&self) -> bool {
        false
    }

    /// No hook carries the summary.
    fn compaction_summary<'e>(&self, _event: &'e HookEvent) -> Option<(&'e str, &'static str)> {
        None
    }

    fn compaction_summary_in_file(&self, path: &Path) -> io::Result<Option<String>> {
        latest_summary(path)
    }

    /// Copilot has no hook after compacting.
    fn resumes_at_next_turn(&self) -> bool {
        true
    }

    fn compacts_at_precompact_resumes_at_stop(&self) -> bool {
        false
    }

    fn takes_model_context(&self, kind: &EventName) -> bool {
        takes_additional_context(kind)
    }
}

/// Copilot's own event names, for a hook wired by hand with them; hookctl
/// is told hookd's (`post-tool-use`).
fn event_name(arg: &str) -> EventName {
    match arg {
        "userPromptSubmitted" => EventName::UserPromptSubmit,
        "agentStop" => EventName::Stop,
        other => EventName::from_name(other),
    }
}

/// A field under its camelCase name, else Claude Code's snake_case one.
fn either(f: &mut Fields, camel: &str, snake: &str) -> Option<String> {
    f.string(camel).or_else(|| f.string(snake))
}

fn parse(req: &HookRequest, mut f: Fields) -> HookEvent {
    let name = req
        .event
        .as_deref()
        .map_or(EventName::Other("unknown".into()), event_name);
    let cwd = f.path("cwd").or_else(|| super::request_cwd(req));
    let session_id = either(&mut f, "sessionId", "session_id").filter(|s| !s.is_empty());
    let transcript_path = match f.value("transcriptPath") {
        Some(_) => f.path("transcriptPath"),
        None => f.path("transcript_path"),
    };
    let parts = EventParts {
        source: f.string("source"),
        trigger: f.string("trigger"),
        reason: f.string("reason"),
        prompt: f.string("prompt"),
        tool_name: either(&mut f, "toolName", "tool_name"),
        custom_instructions: either(&mut f, "customInstructions", "custom_instructions")
            .filter(|s| !s.is_empty()),
        ..EventParts::default()
    };
    let mut problems = f.problems;
    let transcript_path = transcript_path.or_else(|| {
        let id = session_id.as_deref()?;
        events_file(&copilot_home(&req.env, &mut problems)?, id, &mut problems)
    });
    HookEvent {
        harness: req.harness,
        event: Event::from_parts(name, parts),
        session_id,
        transcript_path,
        project_dir: cwd.clone(),
        // Set from `project_dir` by `harness::parse`, for every harness.
        working_dir: None,
        cwd,
        model: None,
        agent_id: None,
        claude_code_knobs: None,
        reported_context: None,
        env: req.env.clone(),
        problems,
    }
}

/// `$COPILOT_HOME` from the hook's environment, else `~/.copilot`.
fn copilot_home(
    env: &std::collections::BTreeMap<String, String>,
    problems: &mut Vec<String>,
) -> Option<PathBuf> {
    super::env_path(env, "COPILOT_HOME", problems)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".copilot")))
}

/// The session's file, `<home>/session-state/<id>/events.jsonl`: only for
/// an id that is one plain path component.
fn events_file(home: &Path, id: &str, problems: &mut Vec<String>) -> Option<PathBuf> {
    let plain = id.len() <= MAX_SESSION_ID
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !plain {
        problems.push(format!(
            "field `sessionId` ({:?}) is not a plain session id (letters, digits, - and _); \
             its session file is not looked for",
            protocol::text::clip(&protocol::text::one_line(id), 80)
        ));
        return None;
    }
    Some(home.join("session-state").join(id).join("events.jsonl"))
}

/// Events whose top-level `additionalContext` reaches the model.
fn takes_additional_context(kind: &EventName) -> bool {
    matches!(
        kind,
        EventName::SessionStart
            | EventName::UserPromptSubmit
            | EventName::PreToolUse
            | EventName::PostToolUse
    )
}

/// JSON on stdout with the model's words as a top-level `additionalContext`
/// where Copilot reads them, and nothing else: Copilot shows no message of
/// a hook's to the person and gives preCompact's output to no one. Notes
/// go to stderr, which Copilot keeps only for a failed hook.
fn render(event: &HookEvent, outcome: Outcome) -> HookReply {
    let stderr = outcome.notes_for_stderr();
    let mut out = Map::new();
    if let Some(context) = outcome
        .additional_context
        .filter(|_| takes_additional_context(&event.name()))
    {
        out.insert("additionalContext".into(), Value::String(context));
    }
    super::json_answer(out, stderr)
}

/// What a run of records says about the context.
#[derive(Default)]
struct Fold {
    usage: Option<Usage>,
    boundaries: Vec<Boundary>,
    /// The prompt limit the latest call was made under.
    window: Option<u64>,
    /// The session file, as errors name it.
    shown: String,
}

impl lines::Records for Fold {
    fn needles(&self) -> &[&'static [u8]] {
        &NEEDLES
    }

    fn gives_figure(&self, line: &[u8]) -> bool {
        memchr::memmem::find(line, USAGE_RECORD).is_some()
            && serde_json::from_slice::<Value>(line).is_ok_and(|r| is_usage_record(&r))
    }

    fn take(&mut self, at: u64, line: &[u8]) {
        let Ok(record) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        let data = &record["data"];
        match record["type"].as_str() {
            Some("session.usage_record") if is_usage_record(&record) => {
                self.take_usage(at, &record)
            }
            Some("session.compaction_complete")
                if data["success"] == true && is_main_agents(&record) =>
            {
                let count = |name: &str| token_count(name, data.get(name)).ok().flatten();
                let after = count("postCompactionTokens");
                let trigger = match data["trigger"].as_str() {
                    Some("manual") => Trigger::Manual,
                    _ => Trigger::Auto,
                };
                self.boundaries.push(Boundary {
                    uuid: Some(format!("{BOUNDARY_PREFIX}{at}")),
                    trigger: Some(trigger),
                    pre_tokens: count("preCompactionTokens"),
                    post_tokens: after,
                    timestamp: record["timestamp"].as_str().map(str::to_owned),
                });
                // Copilot's own count of what is left, until the next call.
                let model = self.usage.as_ref().and_then(|u| u.model.clone());
                self.usage = after.map(|tokens| Usage {
                    tokens,
                    model,
                    from_boundary: true,
                    message_id: None,
                    invalid: None,
                });
            }
            _ => {}
        }
    }
}

impl Fold {
    /// The figure is `inputTokens`, the whole prompt of the call: with an
    /// OpenAI-compatible provider it counts the cached part too (measured:
    /// the provider's `prompt_tokens`, with its `cached_tokens` again in
    /// `cacheReadTokens`), and it is what Copilot compares with its point.
    fn take_usage(&mut self, at: u64, record: &Value) {
        let usage = &record["data"]["usage"];
        match token_count("usage.inputTokens", usage.get("inputTokens")) {
            Ok(Some(tokens)) => {
                self.usage = Some(Usage {
                    tokens,
                    model: usage["model"].as_str().map(str::to_owned),
                    from_boundary: false,
                    message_id: record["id"].as_str().map(str::to_owned),
                    invalid: None,
                });
            }
            Ok(None) => {}
            Err(why) => {
                self.usage = Some(Usage::invalidated(
                    self.usage.take(),
                    format!(
                        "invalid usage in Copilot CLI session file {} at byte {at}: {why}",
                        self.shown
                    ),
                ));
            }
        }
        if let Ok(Some(limit)) = token_count("usage.maxPromptTokens", usage.get("maxPromptTokens"))
            && limit > 0
        {
            self.window = Some(limit);
        }
    }
}

/// A call of the session's own model.
fn is_usage_record(record: &Value) -> bool {
    record["type"] == "session.usage_record"
        && record["data"]["usage"].is_object()
        && is_main_agents(record)
}

/// Whether a record is the main agent's: Copilot's event schema gives a
/// subagent's records (the `task` tool's) their `agentId`, and a
/// subagent's context is not the session's.
fn is_main_agents(record: &Value) -> bool {
    record["agentId"].is_null()
}

/// Reads what is new in the session file.
fn read(
    path: &Path,
    cursor: Option<&Cursor>,
    current: Option<&Usage>,
) -> Result<SessionReading, String> {
    let mut fold = Fold {
        usage: current.cloned(),
        shown: path.display().to_string(),
        ..Fold::default()
    };
    let read = lines::read(path, cursor, &mut fold, "Copilot CLI session file")?;
    Ok(lines::session_reading(
        read,
        fold.usage,
        fold.boundaries,
        fold.window,
    ))
}

/// The record at `line`, when it is a compaction that was applied.
fn applied_compaction(line: &[u8]) -> Option<Value> {
    memchr::memmem::find(line, COMPACTION_COMPLETE)?;
    serde_json::from_slice::<Value>(line).ok().filter(|r| {
        r["type"] == "session.compaction_complete"
            && r["data"]["success"] == true
            && is_main_agents(r)
    })
}

/// Whether injected text holding `marker` reached the model since the
/// latest compaction. Copilot records what went to the model with the
/// prompt (`user.message`'s `transformedContent`) and with the tool's
/// result (`tool.execution_complete`); the hook's own output, also
/// recorded (`hook.end`), is only what the hook said.
fn injected_context_arrived(path: &Path, marker: &str) -> io::Result<bool> {
    let found = lines::scan_back(path, |line| {
        if memchr::memmem::find(line, marker.as_bytes()).is_some()
            && serde_json::from_slice::<Value>(line).is_ok_and(|r| carries(&r, marker))
        {
            return Some(true);
        }
        applied_compaction(line).map(|_| false)
    })?;
    Ok(found.unwrap_or(false))
}

/// Whether a record of what went to the main agent's model holds `marker`.
fn carries(record: &Value, marker: &str) -> bool {
    let data = &record["data"];
    let text = match record["type"].as_str() {
        Some("user.message") => &data["transformedContent"],
        Some("tool.execution_complete") => &data["result"]["content"],
        _ => return false,
    };
    is_main_agents(record) && text.as_str().is_some_and(|t| t.contains(marker))
}

/// The latest applied compaction's summary.
fn latest_summary(path: &Path) -> io::Result<Option<String>> {
    let found = lines::scan_back(path, |line| {
        applied_compaction(line).map(|record| {
            record["data"]["summaryContent"]
                .as_str()
                .filter(|s| !s.trim().is_empty())
                .map(str::to_owned)
        })
    })?;
    Ok(found.flatten())
}

/// 0.80 of the prompt limit: the one hookd's configuration gives the model,
/// else the one the session file reports, else Copilot's default;
/// `window.tokens_max` wins.
fn compaction_point(session: &SessionFacts, config: &WindowConfig) -> CompactionPoint {
    let configured = session.model.and_then(|m| config.model_window(m));
    let (window, whose) = match (configured, session.reported_window) {
        (Some(w), _) => (w, "window.models"),
        (None, Some(w)) => (w, "maxPromptTokens in Copilot CLI's session file"),
        (None, None) => (DEFAULT_WINDOW, "Copilot CLI's default prompt limit"),
    };
    if let Some(forced) = config.tokens_max.filter(|t| *t > 0) {
        return CompactionPoint {
            window,
            tokens: forced,
            basis: format!("{forced} (window.tokens_max)"),
        };
    }
    let tokens = (window as f64 * COMPACTION_SHARE) as u64;
    CompactionPoint {
        window,
        tokens,
        basis: format!(
            "{tokens} = {COMPACTION_SHARE} of the {window}-token prompt limit ({whose}; \
             Copilot CLI compacts in the background there)"
        ),
    }
}

/// What the session file says about the work: the person's prompts
/// (`user.message`), the tools the agent called (`assistant.message`'s
/// `toolRequests`) and how each ended (`tool.execution_complete`).
#[derive(Default)]
pub(crate) struct WorkReader {
    log: WorkLog,
}

impl LineReader for WorkReader {
    fn log(&mut self) -> &mut WorkLog {
        &mut self.log
    }

    fn line(&mut self, line: &[u8]) {
        if !mentions_any(
            line,
            &[
                b"\"user.message\"",
                b"\"assistant.message\"",
                b"\"tool.execution_complete\"",
            ],
        ) {
            return;
        }
        let Ok(record) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        if !is_main_agents(&record) {
            return;
        }
        let data = &record["data"];
        match record["type"].as_str() {
            // `content` is the person's words; what hooks added is in
            // `transformedContent`.
            Some("user.message") => {
                if let Some(text) = data["content"].as_str().filter(|t| !t.is_empty()) {
                    self.log.prompt(text);
                }
            }
            Some("assistant.message") => {
                for call in data["toolRequests"].as_array().into_iter().flatten() {
                    let Some(name) = call["name"].as_str() else {
                        continue;
                    };
                    let args = &call["arguments"];
                    self.log
                        .call(call["toolCallId"].as_str(), name, work::call_target(args));
                    self.call(name, args);
                }
            }
            Some("tool.execution_complete") => {
                let id = data["toolCallId"].as_str();
                if data["success"] == false {
                    let words = data["error"]["message"]
                        .as_str()
                        .or(data["error"].as_str())
                        .unwrap_or("failed");
                    self.log.result(id, Some(words));
                } else {
                    self.log.result(id, None);
                }
            }
            _ => {}
        }
    }
}

impl WorkReader {
    /// Copilot's file and shell tools: `create` and `edit` name their file
    /// as `path`, `view` the one it reads, `bash` runs `command`.
    fn call(&mut self, name: &str, args: &Value) {
        match name {
            "create" => {
                if let Some(path) = args["path"].as_str() {
                    self.log.created(path);
                }
            }
            "edit" => {
                if let Some(path) = args["path"].as_str() {
                    self.log.edited(path);
                }
            }
            "view" => {
                if let Some(path) = args["path"].as_str() {
                    self.log.read(path);
                }
            }
            "bash" => {
                if let Some(command) = args["command"].as_str() {
                    self.log.shell(command);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::Method;
    use protocol::wire::Harness;
    use serde_json::value::RawValue;
    use std::collections::BTreeMap;

    /// The captured session file's records, in order.
    fn fixture_lines() -> Vec<String> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/copilot-cli/events.jsonl");
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The fixture's records up to the `nth` (from 1) of type `kind`, that one included.
    fn up_to(kind: &str, nth: usize) -> Vec<String> {
        let lines = fixture_lines();
        let mut seen = 0;
        let end = lines
            .iter()
            .position(|l| {
                seen += usize::from(l.contains(&format!("\"type\":\"{kind}\"")));
                seen == nth
            })
            .unwrap_or_else(|| panic!("no {kind} #{nth} in the fixture"));
        lines[..=end].to_vec()
    }

    fn file_of(lines: &[String]) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        io::Write::write_all(&mut file, (lines.join("\n") + "\n").as_bytes()).unwrap();
        file
    }

    #[test]
    fn the_figure_is_the_latest_calls_input_tokens_and_the_window_its_prompt_limit() {
        let file = file_of(&up_to("session.usage_record", 3));
        let r = read(file.path(), None, None).unwrap();
        let usage = r.reading.usage.unwrap();
        // Cached tokens are part of inputTokens, not added to it.
        assert_eq!(usage.tokens, 17_000);
        assert_eq!(usage.model.as_deref(), Some("mock-model"));
        assert!(!usage.from_boundary);
        assert_eq!(r.window, Some(20_000));
        assert!(r.reading.boundaries.is_empty());
        assert_eq!(r.reading.method, Method::Backward);
    }

    #[test]
    fn a_compaction_is_its_complete_record_read_forward_from_the_cursor() {
        let before = up_to("session.usage_record", 4);
        let mut file = file_of(&before);
        let first = read(file.path(), None, None).unwrap();
        assert_eq!(first.reading.usage.as_ref().unwrap().tokens, 17_500);
        // The rest of the session is appended: read forward, once.
        let all = fixture_lines();
        let rest = all[before.len()..].join("\n") + "\n";
        io::Write::write_all(&mut file, rest.as_bytes()).unwrap();
        let next = read(
            file.path(),
            Some(&first.reading.cursor),
            first.reading.usage.as_ref(),
        )
        .unwrap();
        assert_eq!(next.reading.method, Method::Forward);
        let [boundary] = next.reading.boundaries.as_slice() else {
            panic!("{:?}", next.reading.boundaries)
        };
        assert_eq!(boundary.trigger, Some(Trigger::Auto));
        assert_eq!(boundary.pre_tokens, Some(10_845));
        assert_eq!(boundary.post_tokens, Some(10_538));
        let offset = CopilotCli.boundary_offset(boundary).unwrap() as usize;
        let text = std::fs::read_to_string(file.path()).unwrap();
        assert!(text[offset..].starts_with(r#"{"type":"session.compaction_complete""#));
        assert_eq!(next.reading.usage.unwrap().tokens, 10_500);
        let again = read(file.path(), Some(&next.reading.cursor), None).unwrap();
        assert_eq!(again.reading.method, Method::Unchanged);
        assert!(again.reading.boundaries.is_empty());
        assert_eq!(
            latest_summary(file.path()).unwrap().as_deref(),
            Some("<summary>MOCK SUMMARY: the agent ran echo twice.</summary>")
        );
    }

    #[test]
    fn until_the_next_call_the_figure_is_what_the_compaction_left() {
        let file = file_of(&up_to("session.compaction_complete", 1));
        let cursor = Cursor {
            offset: 0,
            ..read(file.path(), None, None).unwrap().reading.cursor
        };
        let r = read(file.path(), Some(&cursor), None).unwrap();
        let usage = r.reading.usage.unwrap();
        assert_eq!((usage.tokens, usage.from_boundary), (10_538, true));
    }

    #[test]
    fn a_subagents_records_are_not_the_sessions() {
        let mut lines = up_to("session.usage_record", 2);
        let mut call: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
        call["agentId"] = "task-1".into();
        call["data"]["usage"]["inputTokens"] = 900.into();
        lines.push(call.to_string());
        let file = file_of(&lines);
        let r = read(file.path(), None, None).unwrap();
        assert_eq!(r.reading.usage.unwrap().tokens, 15_000);
        let mut done: Value =
            serde_json::from_str(up_to("tool.execution_complete", 1).last().unwrap()).unwrap();
        done["agentId"] = "task-1".into();
        done["data"]["result"]["content"] = "[hookd-resume 0123]".into();
        let file = file_of(&[done.to_string()]);
        assert!(!injected_context_arrived(file.path(), "[hookd-resume 0123]").unwrap());
    }

    #[test]
    fn a_bad_count_is_said_and_the_last_good_one_stands() {
        let mut lines = up_to("session.usage_record", 2);
        let last = lines
            .pop()
            .unwrap()
            .replace(r#""inputTokens":15000"#, r#""inputTokens":"lots""#);
        lines.push(last);
        let file = file_of(&lines);
        let cursor = Cursor {
            offset: 0,
            ..read(file.path(), None, None).unwrap().reading.cursor
        };
        let usage = read(file.path(), Some(&cursor), None)
            .unwrap()
            .reading
            .usage
            .unwrap();
        assert_eq!(usage.tokens, 12_000);
        let why = usage.invalid.unwrap();
        assert!(why.contains("usage.inputTokens"), "{why}");
        assert!(why.contains(&file.path().display().to_string()), "{why}");
    }

    /// The marker the capture hook gave the `nth` postToolUse.
    fn post_tool_marker(nth: usize) -> String {
        let lines = fixture_lines();
        let ends: Vec<&String> = lines
            .iter()
            .filter(|l| l.contains(r#""hookType":"postToolUse","success":true,"output""#))
            .collect();
        let record: Value = serde_json::from_str(ends[nth - 1]).unwrap();
        record["data"]["output"]["additionalContext"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    #[test]
    fn arrival_is_the_tool_result_or_prompt_that_carried_it_after_the_compaction() {
        // The fifth tool call is the first after compaction_complete.
        let after = post_tool_marker(5);
        let before = post_tool_marker(1);
        let whole = file_of(&fixture_lines());
        assert!(injected_context_arrived(whole.path(), &after).unwrap());
        assert!(
            !injected_context_arrived(whole.path(), &before).unwrap(),
            "before the compaction"
        );
        // The hook's own answer is recorded before the tool's result: not yet an arrival.
        let lines = fixture_lines();
        let answered = lines
            .iter()
            .position(|l| l.contains(&after) && l.contains("\"hook.end\""))
            .unwrap();
        let cut = file_of(&lines[..=answered]);
        assert!(!injected_context_arrived(cut.path(), &after).unwrap());
        // The prompt's context is in its transformedContent.
        let prompt: Value = serde_json::from_str(
            lines
                .iter()
                .find(|l| l.contains("\"user.message\""))
                .unwrap(),
        )
        .unwrap();
        let text = prompt["data"]["transformedContent"].as_str().unwrap();
        let marker = text.split("MARKER-").nth(1).unwrap();
        let marker = format!("MARKER-{}", &marker[..marker.find('\n').unwrap()]);
        let up_to_prompt = file_of(&up_to("user.message", 1));
        assert!(injected_context_arrived(up_to_prompt.path(), &marker).unwrap());
    }

    #[test]
    fn the_point_is_four_fifths_of_the_prompt_limit() {
        let facts = |reported| SessionFacts {
            harness: Harness::CopilotCli,
            model: Some("mock-model"),
            usage: None,
            statusline_window: None,
            reported_window: reported,
            harness_point: None,
            claude_code_knobs: None,
        };
        let config = WindowConfig::default();
        let point = compaction_point(&facts(Some(20_000)), &config);
        assert_eq!((point.window, point.tokens), (20_000, 16_000));
        assert!(point.basis.contains("maxPromptTokens"), "{}", point.basis);
        let point = compaction_point(&facts(None), &config);
        assert_eq!((point.window, point.tokens), (128_000, 102_400));
    }

    fn request(event: &str, payload: &str, env: &[(&str, &str)]) -> HookRequest {
        HookRequest {
            harness: Harness::CopilotCli,
            event: Some(event.to_owned()),
            payload: RawValue::from_string(payload.to_owned()).unwrap(),
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>(),
            cwd: None,
        }
    }

    #[test]
    fn payloads_are_read_and_the_session_file_found_by_the_session_id() {
        let payloads: Value = serde_json::from_str(
            &std::fs::read_to_string(
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../tests/fixtures/copilot-cli/hook_payloads.json"),
            )
            .unwrap()
            .replace("$CWD", "/p/sub")
            .replace("$COPILOT_HOME", "/h/.copilot"),
        )
        .unwrap();
        let env = [("COPILOT_HOME", "/h/.copilot")];
        let mut kinds = Vec::new();
        for item in payloads.as_array().unwrap() {
            let arg = item["event"].as_str().unwrap();
            let ev =
                crate::harness::parse(&request(arg, &item["payload"].to_string(), &env)).unwrap();
            assert!(ev.problems.is_empty(), "{arg}: {:?}", ev.problems);
            assert_eq!(ev.working_dir.as_deref(), Some(Path::new("/p/sub")));
            let id = ev.session_id.clone().unwrap();
            assert_eq!(
                ev.transcript_path.unwrap(),
                PathBuf::from(format!("/h/.copilot/session-state/{id}/events.jsonl")),
                "{arg}"
            );
            kinds.push(ev.event);
        }
        assert!(kinds.contains(&Event::PreCompact {
            trigger: Some(Trigger::Auto),
            instructions: None
        }));
        assert!(kinds.contains(&Event::PostToolUse {
            tool: Some("bash".into())
        }));
        assert!(kinds.iter().any(|k| matches!(k, Event::Stop { .. })));
        assert!(
            kinds
                .iter()
                .any(|k| matches!(k, Event::Prompt { text: Some(_) }))
        );
        // An id that is not one plain path component names no file.
        let ev = crate::harness::parse(&request(
            "post-tool-use",
            r#"{"sessionId":"../../etc","cwd":"/p"}"#,
            &env,
        ))
        .unwrap();
        assert_eq!(ev.transcript_path, None);
        assert!(
            ev.problems[0].contains("not a plain session id"),
            "{:?}",
            ev.problems
        );
    }

    #[test]
    fn the_answer_is_a_top_level_additional_context_where_copilot_reads_it() {
        let outcome = || Outcome {
            system_message: Some("for the person".into()),
            additional_context: Some("resume".into()),
            plain_stdout: Some("for the summarizer".into()),
            notes: vec!["a note".into()],
        };
        for arg in ["post-tool-use", "userPromptSubmitted", "session-start"] {
            let ev = crate::harness::parse(&request(arg, r#"{"sessionId":"s"}"#, &[])).unwrap();
            let reply = render(&ev, outcome());
            let v: Value = serde_json::from_str(&reply.stdout).unwrap();
            assert_eq!(
                v,
                serde_json::json!({"additionalContext": "resume"}),
                "{arg}"
            );
            assert_eq!(reply.exit_code, 0);
            assert_eq!(reply.stderr, "hookd: a note\n");
        }
        for arg in ["pre-compact", "agentStop", "session-end"] {
            let ev = crate::harness::parse(&request(arg, r#"{"sessionId":"s"}"#, &[])).unwrap();
            let reply = render(&ev, outcome());
            assert_eq!((reply.stdout.as_str(), reply.exit_code), ("", 0), "{arg}");
        }
    }

    #[test]
    fn the_work_is_read_from_the_records() {
        let file = file_of(&fixture_lines());
        let facts = CopilotCli.read_work(file.path(), 1 << 20, 5).unwrap();
        let text = format!("{facts:?}");
        assert!(text.contains("Append six notes with bash"), "{text}");
        assert!(text.contains("notes.txt"), "{text}");
        assert!(
            !text.contains("MARKER-"),
            "hook context is not the person's words: {text}"
        );
    }
}

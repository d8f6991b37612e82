//! Cursor: hook payloads in, hook output out. Written from Cursor's hooks
//! documentation, not from a run (no Cursor build runs here); the
//! fixtures in `tests/fixtures/cursor/` say which fields it documents.
//!
//! What this relies on:
//! - payloads carry `hook_event_name` (camelCase), `conversation_id` (one
//!   per chat thread: the session), `generation_id` (one per agent turn),
//!   `workspace_roots` (the first is where the agent works), `model` and
//!   `cursor_version`;
//! - `preCompact` carries `trigger`, `context_tokens` and
//!   `context_window_size`: the only context figure Cursor gives a hook.
//!   No hook follows a compaction, and no session file is read (the docs
//!   do not say what `transcript_path` holds), so the figure is known only
//!   at compactions and the compaction is counted at its preCompact;
//! - answers are JSON on every path (`{}` when there is nothing to say):
//!   `sessionStart` reads `additional_context` into the model's context;
//!   `stop` reads `followup_message` and submits it as the next user turn.
//!   The resume prompt goes there, once, at the first `stop` after a
//!   compaction whose turn completed: Cursor gives the compacted
//!   conversation's model no other way in. A turn the person aborted, or
//!   one that failed, is never continued.
//!
//! Cursor also runs Claude Code's hooks with its own payloads: hookctl
//! sends those here too (see `hookctl/src/hook.rs`).

use super::work::{ToolCall, WorkFacts};
use super::{
    Adapter, Boundary, Cursor as ReadPoint, Event, EventName, EventParts, Fields, HarnessPoint,
    HookEvent, Launch, LaunchPoints, Outcome, ReportedContext, SessionFacts, SessionReading,
    StartSource, Trigger, Usage,
};
use protocol::config::WindowConfig;
use protocol::pressure::{CompactionPoint, token_count};
use protocol::wire::{HookReply, HookRequest};
use serde_json::{Map, Value};
use std::io;
use std::path::{Path, PathBuf};

/// Cursor, as hookd's core sees it.
pub struct Cursor;

impl Adapter for Cursor {
    fn parse(&self, req: &HookRequest, fields: Fields) -> HookEvent {
        parse(req, fields)
    }

    fn render(&self, event: &HookEvent, outcome: Outcome) -> HookReply {
        render(event, outcome)
    }

    /// No session file is read: `transcript_path` is never taken.
    fn read_session_file(
        &self,
        path: &Path,
        _cursor: Option<&ReadPoint>,
        _current: Option<&Usage>,
    ) -> Result<SessionReading, String> {
        Err(format!(
            "hookd reads no Cursor transcript ({}): Cursor's documentation does not say what it holds",
            path.display()
        ))
    }

    fn read_work(
        &self,
        _path: &Path,
        _max_bytes: u64,
        _keep_prompts: usize,
    ) -> io::Result<WorkFacts> {
        Ok(WorkFacts::default())
    }

    fn calls_after_marker(
        &self,
        _path: &Path,
        _max_bytes: u64,
        _marker: &str,
        _from: Option<u64>,
    ) -> io::Result<Option<Vec<ToolCall>>> {
        Ok(None)
    }

    /// The window preCompact reported stands in for the point, which
    /// hookd never learns: Cursor's figure comes only as it compacts.
    fn compaction_point(&self, session: &SessionFacts, config: &WindowConfig) -> CompactionPoint {
        let window = session
            .reported_window
            .unwrap_or(config.default_window_tokens)
            .max(1);
        CompactionPoint {
            window,
            tokens: window,
            basis: FIGURE_AT_COMPACTIONS.to_owned(),
        }
    }

    /// No level fires: by the time Cursor gives a figure, it is compacting.
    fn point_unknown(&self, _session: &SessionFacts, _config: &WindowConfig) -> bool {
        true
    }

    fn point_shown_by_compaction(&self, _tokens: u64) -> Option<HarnessPoint> {
        None
    }

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

    fn boundary_offset(&self, _boundary: &Boundary) -> Option<u64> {
        None
    }

    /// Nothing to look in: the prompt's arrival stays unconfirmed.
    fn injected_context_arrived(&self, _path: &Path, _marker: &str) -> io::Result<bool> {
        Ok(false)
    }

    /// preCompact fires as Cursor compacts.
    fn compaction_is_due(&self, _session: &SessionFacts, _trigger: Option<&Trigger>) -> bool {
        true
    }

    fn precompact_repeats_without_compaction(&self) -> bool {
        false
    }

    /// No hook carries Cursor's summary.
    fn compaction_summary<'e>(&self, _event: &'e HookEvent) -> Option<(&'e str, &'static str)> {
        None
    }

    fn compaction_summary_in_file(&self, _path: &Path) -> io::Result<Option<String>> {
        Ok(None)
    }

    fn resumes_at_next_turn(&self) -> bool {
        false
    }

    /// Only sessionStart gives the model words without starting a turn.
    fn takes_model_context(&self, kind: &EventName) -> bool {
        *kind == EventName::SessionStart
    }

    fn compacts_at_precompact_resumes_at_stop(&self) -> bool {
        true
    }
}

/// What `hookctl status` says of where Cursor's figure comes from.
pub const FIGURE_AT_COMPACTIONS: &str =
    "Cursor gives its figure only at its compactions (preCompact); the window stands in";

/// Whether a payload is Cursor's by its own fields, wherever it arrived.
pub fn is_cursor_payload(payload: &Map<String, Value>) -> bool {
    protocol::wire::is_cursor_payload(
        payload.get("cursor_version"),
        payload.get("conversation_id"),
        payload.get("workspace_roots"),
    )
}

fn parse(req: &HookRequest, mut f: Fields) -> HookEvent {
    // The payload names Cursor's own event; a Claude Code hook's command
    // line names Claude's for it.
    let name = f
        .string("hook_event_name")
        .or_else(|| req.event.clone())
        .map_or(EventName::Other("unknown".into()), |n| {
            EventName::from_name(&n)
        });
    let session_id = f
        .string("conversation_id")
        .filter(|s| !s.is_empty())
        .or_else(|| f.string("session_id").filter(|s| !s.is_empty()));
    let cwd = f.path("cwd").or_else(|| super::request_cwd(req));
    let project_dir = first_workspace_root(&mut f).or_else(|| cwd.clone());
    let model = f.string("model");
    let status = f.string("status");
    let parts = EventParts {
        source: f.string("source"),
        trigger: f.string("trigger"),
        reason: f.string("reason"),
        prompt: f.string("prompt"),
        tool_name: f.string("tool_name"),
        ..EventParts::default()
    };
    let source_absent = f.value("source").is_none();
    let event = cursor_event(name, parts, status.as_deref(), source_absent);
    let reported_context =
        matches!(event, Event::PreCompact { .. }).then(|| reported_context(&mut f));
    // Checked as every path is, then left unread: Cursor's documentation
    // does not say what its transcript holds.
    let _unread = f.path("transcript_path");
    HookEvent {
        harness: req.harness,
        event,
        session_id,
        transcript_path: None,
        project_dir,
        // Set from `project_dir` by `harness::parse`, for every harness.
        working_dir: None,
        cwd,
        model,
        agent_id: None,
        claude_code_knobs: None,
        reported_context,
        env: req.env.clone(),
        problems: f.problems,
    }
}

/// Cursor's events in hookd's terms: its tool-like events are tool
/// activity; a `stop` that did not complete is no place for a next turn.
fn cursor_event(
    name: EventName,
    mut parts: EventParts,
    status: Option<&str>,
    source_absent: bool,
) -> Event {
    let name = match name {
        EventName::Other(other) => match other.as_str() {
            "before-submit-prompt" => EventName::UserPromptSubmit,
            "after-shell-execution" => {
                parts.tool_name = Some("Shell".into());
                EventName::PostToolUse
            }
            "after-file-edit" => {
                parts.tool_name = Some("Edit".into());
                EventName::PostToolUse
            }
            _ => EventName::Other(other),
        },
        EventName::Stop if status != Some("completed") => {
            // Only the documented ones are named: the payload's own words
            // do not become an event name.
            let status = ["aborted", "error"]
                .into_iter()
                .find(|known| status == Some(*known))
                .unwrap_or("unknown");
            return Event::Other(format!("stop-{status}"));
        }
        known => known,
    };
    let starts_conversation = name == EventName::SessionStart && source_absent;
    let mut event = Event::from_parts(name, parts);
    // sessionStart comes once, with a new conversation.
    if starts_conversation {
        event = Event::SessionStart {
            source: Some(StartSource::Startup),
        };
    }
    event
}

/// `workspace_roots[0]`, when it is an absolute path (untrusted, like any
/// other directory a payload names).
fn first_workspace_root(f: &mut Fields) -> Option<PathBuf> {
    let first = match f.value("workspace_roots")? {
        Value::Array(roots) => roots.first().cloned(),
        other => {
            let kind = protocol::pressure::json_kind(other);
            f.problems.push(format!(
                "field `workspace_roots` is {kind}, expected a list"
            ));
            return None;
        }
    };
    match first? {
        Value::String(root) if !root.is_empty() => {
            super::absolute(root, "field `workspace_roots[0]`", &mut f.problems)
        }
        Value::String(_) | Value::Null => None,
        other => {
            let kind = protocol::pressure::json_kind(&other);
            f.problems.push(format!(
                "field `workspace_roots[0]` is {kind}, expected a string"
            ));
            None
        }
    }
}

/// preCompact's figure: `context_tokens` of `context_window_size`,
/// checked as any count from outside is.
fn reported_context(f: &mut Fields) -> ReportedContext {
    let window = match token_count("context_window_size", f.value("context_window_size")) {
        Ok(window) => window.filter(|w| *w > 0),
        Err(why) => {
            f.problems.push(format!(
                "Cursor's preCompact: {why}; its window is not taken"
            ));
            None
        }
    };
    let tokens = match token_count("context_tokens", f.value("context_tokens")) {
        Ok(Some(tokens)) if window.is_some_and(|w| tokens > w) => Err(format!(
            "Cursor's preCompact says context_tokens {tokens} of a {}-token window",
            window.unwrap_or_default()
        )),
        Ok(Some(tokens)) => Ok(tokens),
        Ok(None) => Err("Cursor's preCompact carries no context_tokens".into()),
        Err(why) => Err(format!("Cursor's preCompact: {why}")),
    };
    ReportedContext { tokens, window }
}

/// JSON on every path: `additional_context` at sessionStart, the resume
/// prompt as `followup_message` at stop, `{}` otherwise. The person's
/// words go to stderr (Cursor's hook output log): Cursor has no field for
/// them at these events.
fn render(event: &HookEvent, outcome: Outcome) -> HookReply {
    let mut stderr = outcome.notes_for_stderr();
    if let Some(message) = &outcome.system_message {
        stderr = format!("{message}\n{stderr}");
    }
    let stderr = super::cut_to(stderr, super::MAX_ANSWER_CHARS);
    let field = match event.event {
        Event::SessionStart { .. } => Some("additional_context"),
        Event::Stop { .. } => Some("followup_message"),
        _ => None,
    };
    let mut out = Map::new();
    if let (Some(field), Some(context)) = (field, outcome.additional_context) {
        out.insert(field.into(), Value::String(context));
    }
    HookReply {
        stdout: Value::Object(out).to_string() + "\n",
        stderr,
        exit_code: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::wire::Harness;
    use serde_json::value::RawValue;
    use std::collections::BTreeMap;

    fn hook(event: Option<&str>, payload: &str) -> HookEvent {
        let req = HookRequest {
            harness: Harness::Cursor,
            event: event.map(str::to_owned),
            payload: RawValue::from_string(payload.into()).unwrap(),
            env: BTreeMap::new(),
            cwd: Some("/hook/cwd".into()),
        };
        super::super::parse(&req).unwrap()
    }

    #[test]
    fn the_conversation_is_the_session_and_the_first_root_the_project() {
        let ev = hook(
            None,
            r#"{"hook_event_name":"afterFileEdit","conversation_id":"c1","generation_id":"g",
                "workspace_roots":["/w/one","/w/two"],"file_path":"/w/one/a.rs","cursor_version":"1.7"}"#,
        );
        assert_eq!(ev.session_id.as_deref(), Some("c1"));
        assert_eq!(ev.working_dir.as_deref(), Some(Path::new("/w/one")));
        assert_eq!(
            ev.event,
            Event::PostToolUse {
                tool: Some("Edit".into())
            }
        );
        assert_eq!(ev.transcript_path, None);
    }

    #[test]
    fn a_relative_or_odd_workspace_root_is_noted_and_the_hooks_directory_stands_in() {
        for roots in [r#"["rel/dir"]"#, r#""/w""#, "[7]"] {
            let ev = hook(
                Some("stop"),
                &format!(
                    r#"{{"conversation_id":"c","workspace_roots":{roots},"status":"completed"}}"#
                ),
            );
            assert_eq!(
                ev.working_dir.as_deref(),
                Some(Path::new("/hook/cwd")),
                "{roots}"
            );
            assert!(
                ev.problems.iter().any(|p| p.contains("workspace_roots")),
                "{roots}: {:?}",
                ev.problems
            );
        }
    }

    #[test]
    fn precompact_carries_the_figure_checked() {
        let ev = hook(
            None,
            r#"{"hook_event_name":"preCompact","conversation_id":"c","trigger":"auto",
                "context_tokens":180000,"context_window_size":200000,"context_usage_percent":90}"#,
        );
        assert_eq!(
            ev.event,
            Event::PreCompact {
                trigger: Some(Trigger::Auto),
                instructions: None
            }
        );
        assert_eq!(
            ev.reported_context,
            Some(ReportedContext {
                tokens: Ok(180_000),
                window: Some(200_000)
            })
        );
        for (tokens, why) in [
            ("300000", "of a 200000-token window"),
            ("-5", "context_tokens"),
            ("\"many\"", "context_tokens is a string"),
        ] {
            let ev = hook(
                Some("preCompact"),
                &format!(
                    r#"{{"conversation_id":"c","context_tokens":{tokens},"context_window_size":200000}}"#
                ),
            );
            let figure = ev.reported_context.unwrap();
            assert!(
                figure.tokens.as_ref().is_err_and(|e| e.contains(why)),
                "{tokens}: {figure:?}"
            );
        }
        let ev = hook(
            Some("preCompact"),
            r#"{"conversation_id":"c","context_tokens":9,"context_window_size":"big"}"#,
        );
        assert_eq!(ev.reported_context.unwrap().window, None);
        assert!(
            ev.problems
                .iter()
                .any(|p| p.contains("context_window_size is a string")),
            "{:?}",
            ev.problems
        );
        // Only preCompact's figure counts.
        let ev = hook(
            Some("stop"),
            r#"{"conversation_id":"c","context_tokens":5,"status":"completed"}"#,
        );
        assert_eq!(ev.reported_context, None);
    }

    #[test]
    fn only_a_completed_stop_is_a_stop() {
        for (status, event) in [
            ("\"completed\"", Event::Stop { last_message: None }),
            ("\"aborted\"", Event::Other("stop-aborted".into())),
            ("\"error\"", Event::Other("stop-error".into())),
            ("\"\\u001b[2J\"", Event::Other("stop-unknown".into())),
            ("null", Event::Other("stop-unknown".into())),
        ] {
            let ev = hook(
                None,
                &format!(r#"{{"hook_event_name":"stop","conversation_id":"c","status":{status}}}"#),
            );
            assert_eq!(ev.event, event, "{status}");
        }
    }

    #[test]
    fn every_answer_is_json_and_context_goes_only_where_cursor_reads_it() {
        let said = || Outcome {
            system_message: Some("for the person".into()),
            additional_context: Some("for the model".into()),
            plain_stdout: Some("for a summarizer".into()),
            notes: vec!["a note".into()],
        };
        for (name, expected) in [
            ("sessionStart", r#"{"additional_context":"for the model"}"#),
            ("stop", r#"{"followup_message":"for the model"}"#),
            ("preCompact", "{}"),
            ("beforeSubmitPrompt", "{}"),
            ("postToolUse", "{}"),
            ("sessionEnd", "{}"),
        ] {
            let ev = hook(
                Some(name),
                r#"{"conversation_id":"c","status":"completed"}"#,
            );
            let reply = super::super::render(&ev, said());
            assert_eq!(reply.stdout.trim(), expected, "{name}");
            assert_eq!(reply.exit_code, 0);
            assert!(!reply.stdout.contains("hookSpecificOutput"));
            assert!(reply.stderr.contains("for the person"), "{name}");
            let quiet = super::super::render(&ev, Outcome::default());
            assert_eq!(quiet.stdout, "{}\n", "{name}");
        }
    }

    #[test]
    fn a_cursor_payload_named_as_claude_codes_is_parsed_and_answered_as_cursors() {
        let req = |payload: &str| HookRequest {
            harness: Harness::ClaudeCode,
            event: Some("session-start".into()),
            payload: RawValue::from_string(payload.into()).unwrap(),
            env: BTreeMap::new(),
            cwd: Some("/hook/cwd".into()),
        };
        let ev = super::super::parse(&req(
            r#"{"conversation_id":"c","workspace_roots":["/w"],"cursor_version":"2.1.0"}"#,
        ))
        .unwrap();
        assert_eq!(ev.harness, Harness::Cursor);
        assert_eq!(ev.session_id.as_deref(), Some("c"));
        let outcome = Outcome {
            additional_context: Some("words".into()),
            ..Outcome::default()
        };
        let reply = super::super::render(&ev, outcome.clone());
        assert_eq!(reply.stdout, "{\"additional_context\":\"words\"}\n");
        // Claude Code's own payload stays Claude Code's.
        let ev = super::super::parse(&req(
            r#"{"session_id":"s","cwd":"/p","transcript_path":"/t.jsonl","hook_event_name":"SessionStart"}"#,
        ))
        .unwrap();
        assert_eq!(ev.harness, Harness::ClaudeCode);
        let reply = super::super::render(&ev, outcome);
        assert!(
            reply.stdout.contains("hookSpecificOutput"),
            "{}",
            reply.stdout
        );
    }

    #[test]
    fn a_payload_is_cursors_by_its_own_fields_only() {
        let map = |json: &str| match serde_json::from_str::<Value>(json).unwrap() {
            Value::Object(m) => m,
            _ => unreachable!(),
        };
        assert!(is_cursor_payload(&map(r#"{"cursor_version":"1.7"}"#)));
        assert!(is_cursor_payload(&map(
            r#"{"conversation_id":"c","workspace_roots":[]}"#
        )));
        // Claude Code's fields, or half of Cursor's, or the wrong types.
        for json in [
            r#"{"session_id":"s","transcript_path":"/t","cwd":"/p","hook_event_name":"Stop"}"#,
            r#"{"conversation_id":"c"}"#,
            r#"{"workspace_roots":["/w"]}"#,
            r#"{"cursor_version":1}"#,
            r#"{"conversation_id":"c","workspace_roots":"/w"}"#,
            r#"{"tool_input":{"cursor_version":"1.7"}}"#,
        ] {
            assert!(!is_cursor_payload(&map(json)), "{json}");
        }
    }
}

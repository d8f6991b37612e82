//! Claude Code: hook payloads in, hook output out. What each event carries
//! and what reaches the model were measured with the real Claude Code
//! 2.1.330 (the end-to-end tests drive it; recorded payloads are in
//! `tests/fixtures/`).

pub mod statusline;
pub mod transcript;
pub mod window;
pub mod work;

use super::{
    Adapter, Boundary, Cursor, Event, EventName, EventParts, Fields, HarnessPoint, HookEvent,
    Launch, LaunchPoints, Outcome, SessionFacts, SessionReading, Trigger, Usage,
};
use protocol::config::WindowConfig;
use protocol::pressure::CompactionPoint;
use protocol::wire::{HookReply, HookRequest};
use serde_json::{Map, Value, json};
use std::io;
use std::path::Path;

/// Claude Code, as hookd's core sees it.
pub struct ClaudeCode;

impl Adapter for ClaudeCode {
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
        transcript::read(path, cursor, current)
            .map(|reading| SessionReading {
                reading,
                window: None,
                compaction_point: None,
            })
            .map_err(|e| e.to_string())
    }

    fn read_work(
        &self,
        path: &Path,
        max_bytes: u64,
        keep_prompts: usize,
    ) -> io::Result<super::work::WorkFacts> {
        work::read(path, max_bytes, keep_prompts)
    }

    fn calls_after_marker(
        &self,
        path: &Path,
        max_bytes: u64,
        marker: &str,
        from: Option<u64>,
    ) -> io::Result<Option<Vec<super::work::ToolCall>>> {
        super::work::calls_after_marker::<work::Reader>(path, max_bytes, marker, from)
    }

    fn compaction_point(&self, session: &SessionFacts, config: &WindowConfig) -> CompactionPoint {
        let unset = protocol::pressure::Knobs::default();
        window::compaction_point_for(
            session.model,
            session.statusline_window,
            session.claude_code_knobs.unwrap_or(&unset),
            config,
        )
    }

    /// Claude Code's point follows from its model and settings.
    fn point_unknown(&self, _session: &SessionFacts, _config: &WindowConfig) -> bool {
        false
    }

    /// Claude Code compacts short of its point (its buffer), so a
    /// compaction does not show where the point is.
    fn point_shown_by_compaction(&self, _tokens: u64) -> Option<HarnessPoint> {
        None
    }

    /// The hook's environment carries Claude Code's settings; its process
    /// is not read.
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

    /// Boundaries are named by their uuid.
    fn boundary_offset(&self, _boundary: &Boundary) -> Option<u64> {
        None
    }

    fn injected_context_arrived(&self, path: &Path, marker: &str) -> io::Result<bool> {
        transcript::injected_context_arrived(path, marker)
    }

    /// PreCompact fires only when a compaction follows.
    fn compaction_is_due(&self, _session: &SessionFacts, _trigger: Option<&Trigger>) -> bool {
        true
    }

    fn precompact_repeats_without_compaction(&self) -> bool {
        false
    }

    /// The summarizer ends as a subagent with no type, before
    /// SessionStart(compact); PostCompact repeats the summary afterwards.
    fn compaction_summary<'e>(&self, event: &'e HookEvent) -> Option<(&'e str, &'static str)> {
        match &event.event {
            Event::SubagentStop {
                agent_type: Some(agent_type),
                last_message: Some(summary),
            } if agent_type.is_empty() => Some((summary, "subagent-stop")),
            Event::PostCompact {
                summary: Some(summary),
                ..
            } => Some((summary, "post-compact")),
            _ => None,
        }
    }

    /// The `isCompactSummary` entry after the boundary.
    fn compaction_summary_in_file(&self, path: &Path) -> io::Result<Option<String>> {
        transcript::compact_summary(path)
    }

    /// SessionStart(compact) carries the resume prompt.
    fn resumes_at_next_turn(&self) -> bool {
        false
    }

    fn takes_model_context(&self, kind: &EventName) -> bool {
        takes_additional_context(kind)
    }
}

pub(super) fn parse(req: &HookRequest, mut f: Fields) -> HookEvent {
    let payload_event = f.string("hook_event_name");
    let name = match (&req.event, &payload_event) {
        (Some(arg), _) => EventName::from_name(arg),
        (None, Some(name)) => EventName::from_name(name),
        (None, None) => EventName::Other("unknown".into()),
    };
    let cwd = f.path("cwd").or_else(|| super::request_cwd(req));
    let project_dir =
        super::env_path(&req.env, "CLAUDE_PROJECT_DIR", &mut f.problems).or_else(|| cwd.clone());
    // SessionStart(compact) names the model as a string; the statusLine input as an object.
    let model = match f.value("model") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Object(m)) => m.get("id").and_then(Value::as_str).map(str::to_owned),
        _ => None,
    };
    let session_id = f.string("session_id").filter(|s| !s.is_empty());
    let transcript_path = f.path("transcript_path");
    // Every field is read whatever the event, so a wrong type is noted alike.
    let mut parts = EventParts {
        source: f.string("source"),
        trigger: f.string("trigger"),
        reason: f.string("reason"),
        prompt: f.string("prompt"),
        tool_name: f.string("tool_name"),
        custom_instructions: f.string("custom_instructions"),
        compact_summary: f.string("compact_summary"),
        ..EventParts::default()
    };
    let agent_id = f.string("agent_id");
    parts.agent_type = f.string("agent_type");
    parts.last_assistant_message = f.string("last_assistant_message");
    let mut event = HookEvent {
        harness: req.harness,
        event: Event::from_parts(name, parts),
        session_id,
        transcript_path,
        project_dir,
        // Set from `project_dir` by `harness::parse`, for every harness.
        working_dir: None,
        cwd,
        model,
        agent_id,
        claude_code_knobs: (!req.env.is_empty())
            .then(|| protocol::pressure::Knobs::from_env(|name| req.env.get(name).cloned())),
        env: req.env.clone(),
        problems: Vec::new(),
    };
    event.problems = f.problems;
    event
}

/// Events whose `hookSpecificOutput.additionalContext` reaches the model.
pub(super) fn takes_additional_context(kind: &EventName) -> bool {
    matches!(
        kind,
        EventName::SessionStart
            | EventName::UserPromptSubmit
            | EventName::PreToolUse
            | EventName::PostToolUse
            | EventName::PostToolBatch
    )
}

pub(super) fn render(event: &HookEvent, outcome: Outcome) -> HookReply {
    let stderr = super::notes_on_stderr(&outcome.notes);
    if let Some(text) = outcome.plain_stdout {
        // PreCompact reads plain stdout as text for the summarizer.
        return HookReply {
            stdout: text,
            stderr,
            exit_code: 0,
        };
    }
    let mut out = Map::new();
    if let Some(msg) = outcome.system_message {
        out.insert("systemMessage".into(), Value::String(msg));
    }
    if let Some(ctx) = outcome
        .additional_context
        .filter(|_| takes_additional_context(&event.name()))
    {
        out.insert(
            "hookSpecificOutput".into(),
            json!({ "hookEventName": event.name().pascal(), "additionalContext": ctx }),
        );
    }
    super::json_answer(out, stderr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::wire::Harness;
    use serde_json::value::RawValue;
    use std::collections::BTreeMap;

    fn request(event: Option<&str>, payload: &str) -> HookRequest {
        HookRequest {
            harness: Harness::ClaudeCode,
            event: event.map(str::to_owned),
            payload: RawValue::from_string(payload.to_owned()).unwrap(),
            env: BTreeMap::from([("CLAUDE_PROJECT_DIR".to_owned(), "/proj".to_owned())]),
            cwd: None,
        }
    }

    #[test]
    fn the_payload_names_the_event_when_the_command_line_does_not() {
        let req = request(
            None,
            r#"{"session_id":"s","hook_event_name":"PreCompact","trigger":"auto","cwd":"/proj/sub"}"#,
        );
        let ev = crate::harness::parse(&req).unwrap();
        assert_eq!(
            ev.event,
            Event::PreCompact {
                trigger: Some(crate::harness::Trigger::Auto),
                instructions: None
            }
        );
        assert_eq!(
            ev.project_dir.as_deref(),
            Some(std::path::Path::new("/proj"))
        );
        assert_eq!(ev.cwd.as_deref(), Some(std::path::Path::new("/proj/sub")));
    }

    #[test]
    fn wrong_field_types_are_noted_not_fatal() {
        let req = request(Some("stop"), r#"{"session_id":42,"transcript_path":["x"]}"#);
        let ev = crate::harness::parse(&req).unwrap();
        assert_eq!(ev.session_id, None);
        assert_eq!(ev.problems.len(), 2, "{:?}", ev.problems);
        assert!(ev.problems[0].contains("session_id"));
    }

    #[test]
    fn additional_context_only_where_claude_code_reads_it() {
        let req = request(Some("post-tool-use"), r#"{"session_id":"s"}"#);
        let ev = crate::harness::parse(&req).unwrap();
        let outcome = Outcome {
            system_message: Some("for you".into()),
            additional_context: Some("for the model".into()),
            ..Outcome::default()
        };
        let reply = render(&ev, outcome.clone());
        let v: Value = serde_json::from_str(&reply.stdout).unwrap();
        assert_eq!(v["systemMessage"], "for you");
        assert_eq!(v["hookSpecificOutput"]["hookEventName"], "PostToolUse");
        assert_eq!(
            v["hookSpecificOutput"]["additionalContext"],
            "for the model"
        );

        let stop = crate::harness::parse(&request(Some("stop"), r#"{"session_id":"s"}"#)).unwrap();
        let v: Value = serde_json::from_str(&render(&stop, outcome).stdout).unwrap();
        assert!(v.get("hookSpecificOutput").is_none());
    }

    #[test]
    fn nothing_to_say_is_no_output() {
        let ev = crate::harness::parse(&request(Some("stop"), r#"{"session_id":"s"}"#)).unwrap();
        assert_eq!(render(&ev, Outcome::default()), HookReply::silent());
    }
}

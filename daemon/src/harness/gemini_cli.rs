//! Gemini CLI: hook payloads in, hook output out.
//!
//! What this relies on (google-gemini/gemini-cli `docs/hooks/reference.md`
//! and `packages/core/src/hooks/types.ts`; no Gemini CLI binary was run
//! here):
//! - hooks live under `hooks` in `~/.gemini/settings.json` and
//!   `<project>/.gemini/settings.json`, in Claude Code's layout with the
//!   timeout in milliseconds;
//! - its events map onto hookd's: `SessionStart` (source `startup`,
//!   `resume`, `clear`: there is no `compact`), `BeforeAgent` (a prompt),
//!   `BeforeTool`, `AfterTool`, `AfterAgent` (the turn ended), `PreCompress`
//!   (trigger `manual` or `auto`; advisory and asynchronous) and
//!   `SessionEnd`. It has no event after compression;
//! - every payload has `session_id`, `transcript_path`, `cwd`,
//!   `hook_event_name`, `timestamp`; hooks see `GEMINI_PROJECT_DIR`;
//! - stdout must be JSON only: `systemMessage` for the person, and
//!   `hookSpecificOutput.additionalContext` (with `hookEventName`) for the
//!   model on SessionStart, BeforeAgent and AfterTool.
//!
//! What Gemini CLI cannot do for hookd: no hook fires after compression, so
//! a resume prompt cannot be injected at that moment (only at the next
//! prompt or tool); PreCompress cannot add instructions to the summary; and
//! no hook carries token counts, so thresholds do not fire for Gemini CLI
//! sessions.

use super::{EventKind, Fields, HookEvent, Outcome};
use protocol::wire::{HookReply, HookRequest};
use serde_json::{Map, Value, json};

/// Gemini CLI's event names and hookd's, both ways.
const EVENTS: [(&str, EventKind); 7] = [
    ("SessionStart", EventKind::SessionStart),
    ("BeforeAgent", EventKind::UserPromptSubmit),
    ("BeforeTool", EventKind::PreToolUse),
    ("AfterTool", EventKind::PostToolUse),
    ("AfterAgent", EventKind::Stop),
    ("PreCompress", EventKind::PreCompact),
    ("SessionEnd", EventKind::SessionEnd),
];

/// hookd's event for a Gemini CLI name in any spelling (`AfterTool`,
/// `after-tool`); other names stay what they are.
fn kind_of(name: &str) -> EventKind {
    let squashed = |s: &str| {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .collect::<String>()
            .to_ascii_lowercase()
    };
    let wanted = squashed(name);
    EVENTS
        .iter()
        .find(|(gemini, _)| squashed(gemini) == wanted)
        .map(|(_, kind)| kind.clone())
        .unwrap_or_else(|| EventKind::from_name(name))
}

/// Gemini CLI's name for one of hookd's events, as `hookEventName` wants it.
fn gemini_name(kind: &EventKind) -> Option<&'static str> {
    EVENTS
        .iter()
        .find(|(_, k)| k == kind)
        .map(|(gemini, _)| *gemini)
}

pub fn parse(req: &HookRequest, mut f: Fields) -> HookEvent {
    let payload_event = f.string("hook_event_name");
    let kind = match (&req.event, &payload_event) {
        (Some(arg), _) => kind_of(arg),
        (None, Some(name)) => kind_of(name),
        (None, None) => EventKind::Other("unknown".into()),
    };
    let cwd = f.path("cwd").or_else(|| super::request_cwd(req));
    let project_dir =
        super::env_path(&req.env, "GEMINI_PROJECT_DIR", &mut f.problems).or_else(|| cwd.clone());
    let mut event = HookEvent {
        harness: req.harness,
        kind,
        session_id: f.string("session_id").filter(|s| !s.is_empty()),
        transcript_path: f.path("transcript_path"),
        project_dir,
        cwd,
        source: f.string("source"),
        trigger: f.string("trigger"),
        reason: f.string("reason"),
        prompt: f.string("prompt"),
        tool_name: f.string("tool_name"),
        // Gemini CLI's transcript is not read, so no reply needs waiting for.
        tool_use_id: None,
        model: None,
        custom_instructions: None,
        compact_summary: None,
        agent_id: None,
        env: req.env.clone(),
        problems: Vec::new(),
    };
    event.problems = f.problems;
    event
}

/// Events whose `hookSpecificOutput.additionalContext` reaches the model.
fn takes_additional_context(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::SessionStart | EventKind::UserPromptSubmit | EventKind::PostToolUse
    )
}

pub fn render(event: &HookEvent, outcome: Outcome) -> HookReply {
    let stderr = outcome
        .notes
        .iter()
        .map(|n| format!("hookd: {n}\n"))
        .collect::<String>();
    let mut out = Map::new();
    if let Some(msg) = outcome.system_message {
        out.insert("systemMessage".into(), Value::String(msg));
    }
    if let (Some(ctx), Some(name)) = (
        outcome
            .additional_context
            .filter(|_| takes_additional_context(&event.kind)),
        gemini_name(&event.kind),
    ) {
        out.insert(
            "hookSpecificOutput".into(),
            json!({ "hookEventName": name, "additionalContext": ctx }),
        );
    }
    // Plain text for a summarizer has no place: Gemini CLI reads stdout as JSON only.
    let stdout = if out.is_empty() {
        String::new()
    } else {
        Value::Object(out).to_string() + "\n"
    };
    HookReply {
        stdout,
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
    use std::path::Path;

    fn request(event: Option<&str>, payload: &str) -> HookRequest {
        HookRequest {
            harness: Harness::GeminiCli,
            event: event.map(str::to_owned),
            payload: RawValue::from_string(payload.to_owned()).unwrap(),
            env: BTreeMap::from([("GEMINI_PROJECT_DIR".to_owned(), "/proj".to_owned())]),
            cwd: None,
        }
    }

    #[test]
    fn gemini_events_map_onto_hookds() {
        for (arg, kind) in [
            ("after-tool", EventKind::PostToolUse),
            ("AfterTool", EventKind::PostToolUse),
            ("before-agent", EventKind::UserPromptSubmit),
            ("after-agent", EventKind::Stop),
            ("pre-compress", EventKind::PreCompact),
            ("session-start", EventKind::SessionStart),
            ("session-end", EventKind::SessionEnd),
            ("notification", EventKind::Other("notification".into())),
        ] {
            let ev = crate::harness::parse(&request(Some(arg), r#"{"session_id":"g"}"#)).unwrap();
            assert_eq!(ev.kind, kind, "{arg}");
        }
        let ev = crate::harness::parse(&request(
            None,
            r#"{"session_id":"g","hook_event_name":"PreCompress","trigger":"auto","cwd":"/proj/sub","timestamp":"2026-05-01T10:00:00Z","transcript_path":"/t.json"}"#,
        ))
        .unwrap();
        assert_eq!(ev.kind, EventKind::PreCompact);
        assert_eq!(ev.trigger.as_deref(), Some("auto"));
        assert_eq!(ev.project_dir.as_deref(), Some(Path::new("/proj")));
        assert_eq!(ev.cwd.as_deref(), Some(Path::new("/proj/sub")));
    }

    #[test]
    fn output_uses_geminis_event_names() {
        let outcome = Outcome {
            system_message: Some("for you".into()),
            additional_context: Some("for the model".into()),
            ..Outcome::default()
        };
        let ev =
            crate::harness::parse(&request(Some("after-tool"), r#"{"session_id":"g"}"#)).unwrap();
        let v: Value = serde_json::from_str(&render(&ev, outcome.clone()).stdout).unwrap();
        assert_eq!(v["hookSpecificOutput"]["hookEventName"], "AfterTool");
        assert_eq!(
            v["hookSpecificOutput"]["additionalContext"],
            "for the model"
        );
        assert_eq!(v["systemMessage"], "for you");

        let ev =
            crate::harness::parse(&request(Some("pre-compress"), r#"{"session_id":"g"}"#)).unwrap();
        let reply = render(
            &ev,
            Outcome {
                plain_stdout: Some("instructions".into()),
                ..outcome
            },
        );
        let v: Value = serde_json::from_str(&reply.stdout).unwrap();
        assert_eq!(
            v.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["systemMessage"]
        );
        assert_eq!(
            render(&ev, Outcome::default()),
            HookReply::silent(),
            "nothing to say is no output"
        );
    }
}

//! Codex and Gemini CLI hooks through the real hookctl and a real daemon:
//! payloads in their harness's shape, answers in their output format, and
//! Codex's usage from its rollout file.

use hookd_tests::{HookAnswer, Sandbox, TestDaemon, hook_json, run_with_stdin, stderr, stdout};
use protocol::wire::StatusQuery;
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;

fn hook(sb: &Sandbox, harness: &str, event: &str, payload: &Value) -> std::process::Output {
    let mut cmd = sb.command("hookctl");
    cmd.args(["hook", "--harness", harness, event]);
    run_with_stdin(cmd, &serde_json::to_vec(payload).unwrap())
}

/// A `token_count` record as Codex writes it in its rollout file.
fn token_count(total: u64, window: u64) -> Value {
    json!({
        "timestamp": "2026-05-01T10:00:00.000Z",
        "type": "event_msg",
        "payload": {
            "type": "token_count",
            "info": {
                "total_token_usage": {"input_tokens": total * 3, "cached_input_tokens": total, "output_tokens": 900, "reasoning_output_tokens": 100, "total_tokens": total * 3 + 900},
                "last_token_usage": {"input_tokens": total - 300, "cached_input_tokens": 1000, "output_tokens": 300, "reasoning_output_tokens": 50, "total_tokens": total},
                "model_context_window": window
            },
            "rate_limits": null
        }
    })
}

fn append(path: &Path, record: &Value) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    writeln!(f, "{record}").unwrap();
}

#[test]
fn codex_usage_comes_from_its_rollout_and_crossing_a_level_warns_in_codexs_format() {
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options());
    let project = sb.path().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    let rollout = sb
        .path()
        .join("codex/sessions/2026/05/01/rollout-2026-05-01T09-00-00-0199c0de.jsonl");
    std::fs::create_dir_all(rollout.parent().unwrap()).unwrap();
    append(
        &rollout,
        &json!({"timestamp": "2026-05-01T09:00:00.000Z", "type": "session_meta", "payload": {"id": "0199c0de", "cwd": project}}),
    );
    append(
        &rollout,
        &json!({"timestamp": "2026-05-01T09:00:01.000Z", "type": "turn_context", "payload": {"cwd": project, "model": "gpt-5.5-codex"}}),
    );
    append(&rollout, &token_count(50_000, 272_000));
    let payload = |event: &str| {
        json!({
            "session_id": "0199c0de",
            "turn_id": "t1",
            "transcript_path": rollout,
            "cwd": project,
            "hook_event_name": event,
            "model": "gpt-5.5-codex",
            "permission_mode": "default",
            "tool_name": "Bash",
            "tool_input": {"command": "cargo test"},
            "tool_response": "ok",
            "tool_use_id": "call_1"
        })
    };

    let out = hook(&sb, "codex", "post-tool-use", &payload("PostToolUse"));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(hook_json(&out), Value::Null, "nothing to say at 20%");
    let report = daemon.engine().status(&StatusQuery::default());
    let s = &report.sessions[0];
    assert_eq!(s.harness, "codex");
    assert_eq!(s.model.as_deref(), Some("gpt-5.5-codex"));
    assert_eq!(s.project_dir.as_deref(), Some(project.as_path()));
    let c = s.context.as_ref().expect("a figure from the rollout");
    assert_eq!(
        (c.tokens_used, c.tokens_max, c.window_tokens),
        (50_000, 244_800, 272_000)
    );

    // 72% of Codex's compaction point: the 70% warning, in Codex's format.
    append(&rollout, &token_count(176_256, 272_000));
    let out = hook(&sb, "codex", "post-tool-use", &payload("PostToolUse"));
    assert!(out.status.success(), "{}", stderr(&out));
    let answer = HookAnswer::parse(&stdout(&out));
    insta::assert_snapshot!(answer.normalized(&sb.normalizer()), @r#"
        hookSpecificOutput.additionalContext: "Context at 70% of the way to compaction. Read only what the task needs: search first, then open line ranges. [hookd: 72% of the way to compaction (176,256 of 244,800 tokens), 65% of the window]"
        hookSpecificOutput.hookEventName: "PostToolUse"
        systemMessage: "hookd: context 72% of the way to compaction (176,256 of 244,800 tokens), 65% of the window"
    "#);

    // Stop takes no hookSpecificOutput in Codex: nothing but the common fields, ever.
    append(&rollout, &token_count(220_000, 272_000));
    let out = hook(&sb, "codex", "stop", &payload("Stop"));
    assert!(out.status.success(), "{}", stderr(&out));
    insta::assert_snapshot!(HookAnswer::parse(&stdout(&out)).normalized(&sb.normalizer()), @"(no output)");
}

#[test]
fn gemini_cli_events_are_recorded_under_hookds_names() {
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options());
    let base = json!({
        "session_id": "g-1",
        "transcript_path": sb.path().join("chats/session-g-1.json"),
        "cwd": sb.path(),
        "timestamp": "2026-05-01T10:00:00Z"
    });
    for (event, name, extra) in [
        (
            "session-start",
            "SessionStart",
            json!({"source": "startup"}),
        ),
        (
            "before-agent",
            "BeforeAgent",
            json!({"prompt": "fix the bug"}),
        ),
        (
            "after-tool",
            "AfterTool",
            json!({"tool_name": "run_shell_command", "tool_input": {"command": "ls"}, "tool_response": {"llmContent": "a b"}}),
        ),
        ("pre-compress", "PreCompress", json!({"trigger": "auto"})),
    ] {
        let mut payload = base.clone();
        payload["hook_event_name"] = Value::from(name);
        for (k, v) in extra.as_object().unwrap() {
            payload[k] = v.clone();
        }
        let out = hook(&sb, "gemini-cli", event, &payload);
        assert!(out.status.success(), "{event}: {}", stderr(&out));
        // Gemini CLI reads stdout as JSON only: nothing, or an object.
        let answer = hook_json(&out);
        assert!(answer.is_null() || answer.is_object(), "{event}: {answer}");
        let report = daemon.engine().status(&StatusQuery::default());
        let s = &report.sessions[0];
        assert_eq!(s.harness, "gemini-cli");
        let expected = match event {
            "before-agent" => "user-prompt-submit",
            "after-tool" => "post-tool-use",
            "pre-compress" => "pre-compact",
            other => other,
        };
        assert_eq!(s.last_event.as_deref(), Some(expected));
    }
}

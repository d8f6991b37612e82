//! Cursor through the real hookctl and a real daemon, with the payloads of
//! `tests/fixtures/cursor/` (written from Cursor's documentation: no
//! Cursor build runs here). A Cursor payload is Cursor's whether it
//! arrives through Cursor's own `hooks.json` or through Claude Code's
//! hooks, which Cursor also runs; it is answered in Cursor's JSON; a
//! Claude Code payload stays Claude Code's. preCompact's figure becomes the
//! session's and its compaction saves the state, a checkpoint and the
//! resume prompt, which goes in once, with the next completed stop.

use crate::harness_setup::{doctor_check, parser_project};
use hookd_tests::{
    Sandbox, TestDaemon, hook_json, run_with_stdin, stderr, stdout, workflow_events_of,
};
use protocol::wire::{SessionStatus, StatusQuery};
use serde_json::{Value, json};
use std::path::Path;

const CONVERSATION: &str = "c0ffee00-cursor-conversation";

/// The fixture's payload `name`, its workspace root `project`.
fn payload(name: &str, project: &Path) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cursor/hook_payloads.json");
    let text = std::fs::read_to_string(path)
        .unwrap()
        .replace("$CWD", &project.display().to_string())
        .replace("$TRANSCRIPT", "/nonexistent/cursor-transcript.jsonl");
    let all: Value = serde_json::from_str(&text).unwrap();
    all.get(name)
        .unwrap_or_else(|| panic!("no payload {name}"))
        .clone()
}

/// How a hook reaches hookctl: Cursor's own `hooks.json`, or a Claude
/// Code hook Cursor runs.
#[derive(Clone, Copy, Debug)]
enum Route {
    CursorHooks,
    ClaudeCodeHooks,
}

/// Runs the hook command `route` installs for `event` with `payload`, in
/// `dir`: its exit status, stdout and stderr.
fn run_hook(
    sb: &Sandbox,
    route: Route,
    event: &str,
    payload: &Value,
    dir: &Path,
) -> (i32, String, String) {
    let mut cmd = sb.command("hookctl");
    cmd.arg("hook");
    if let Route::CursorHooks = route {
        cmd.args(["--harness", "cursor"]);
    }
    cmd.arg(event).current_dir(dir);
    let out = run_with_stdin(cmd, &serde_json::to_vec(payload).unwrap());
    (out.status.code().unwrap_or(-1), stdout(&out), stderr(&out))
}

/// A Cursor hook's answer: exit 0, one JSON object, never Claude Code's
/// `hookSpecificOutput`.
fn cursor_answer(sb: &Sandbox, route: Route, event: &str, payload: &Value, dir: &Path) -> Value {
    let (code, out, err) = run_hook(sb, route, event, payload, dir);
    assert_eq!(code, 0, "{route:?} {event}: {err}");
    assert!(out.ends_with('\n'), "{route:?} {event}: {out:?}");
    let answer: Value = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("{route:?} {event}: not JSON ({e}): {out:?}"));
    assert!(answer.is_object(), "{route:?} {event}: {answer}");
    assert!(answer.get("hookSpecificOutput").is_none(), "{answer}");
    answer
}

fn sessions(daemon: &TestDaemon) -> Vec<SessionStatus> {
    daemon.engine().status(&StatusQuery::default()).sessions
}

fn session_of(daemon: &TestDaemon, id: &str) -> SessionStatus {
    sessions(daemon)
        .into_iter()
        .find(|s| s.session_id == id)
        .unwrap_or_else(|| panic!("no session {id}: {:?}", sessions(daemon)))
}

/// The same Cursor conversation's hooks, through Cursor's own hooks and
/// through Claude Code's, are one session of harness `cursor`, keyed by
/// its conversation and at home in its first workspace root; each answer
/// is Cursor's JSON. A Claude Code payload through the same Claude Code
/// hook stays Claude Code's, answered as Claude Code is.
#[test]
fn cursor_payloads_are_cursors_through_either_hook_and_claude_codes_stay_claude_codes() {
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options());
    let (project, _repo) = parser_project(&sb);
    // Cursor runs hooks from its own directory, not the project's.
    let elsewhere = sb.path();

    let start = cursor_answer(
        &sb,
        Route::CursorHooks,
        "session-start",
        &payload("sessionStart", &project),
        elsewhere,
    );
    let hint = start["additional_context"].as_str().unwrap_or_default();
    assert!(hint.contains("hookctl decision"), "{start:#}");
    assert_eq!(start.as_object().unwrap().len(), 1, "{start:#}");

    for (name, event) in [
        ("postToolUse", "post-tool-use"),
        ("afterShellExecution", "post-tool-use"),
        ("afterFileEdit", "post-tool-use"),
        ("beforeSubmitPrompt", "user-prompt-submit"),
    ] {
        for route in [Route::CursorHooks, Route::ClaudeCodeHooks] {
            let answer = cursor_answer(&sb, route, event, &payload(name, &project), elsewhere);
            assert_eq!(answer, json!({}), "{route:?} {name}");
        }
    }
    let all = sessions(&daemon);
    assert_eq!(all.len(), 1, "one conversation, one session: {all:?}");
    let s = &all[0];
    assert_eq!(
        (s.harness.as_str(), s.session_id.as_str()),
        ("cursor", CONVERSATION)
    );
    assert_eq!(s.project_dir.as_deref(), Some(project.as_path()));
    assert_eq!(s.model.as_deref(), Some("claude-4.5-sonnet"));
    assert_eq!(s.transcript_path, None, "Cursor's transcript is not read");
    assert_eq!(s.events_seen, 9);

    // Claude Code's own payload through the same hook.
    let claude = json!({
        "session_id": "claude-session",
        "transcript_path": sb.path().join("claude.jsonl"),
        "cwd": project,
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls", "cursor_version": "2.1.0"},
    });
    let (code, out, err) = run_hook(
        &sb,
        Route::ClaudeCodeHooks,
        "post-tool-use",
        &claude,
        elsewhere,
    );
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    let s = session_of(&daemon, "claude-session");
    assert_eq!(s.harness, "claude-code");

    // `hookctl status` names the harness.
    let out = sb.hookctl_in(&project, &["status"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("cursor"), "{}", stdout(&out));
}

/// preCompact's figures are the session's (180,000 of a 200,000 window),
/// and its compaction saves the state and a checkpoint before it answers.
/// The resume prompt waits: a tool call or an aborted turn cannot carry
/// it; the next completed stop does, as the follow-up message, once. The
/// same preCompact arriving through Claude Code's hook too is the same
/// compaction. Status says the figure comes only at compactions, and the
/// prompt's arrival is unconfirmed.
#[test]
fn precompact_saves_and_the_resume_prompt_follows_the_next_completed_stop_once() {
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options());
    let (project, repo) = parser_project(&sb);
    let hook = |route, event: &str, name: &str| {
        cursor_answer(&sb, route, event, &payload(name, &project), &project)
    };
    hook(Route::CursorHooks, "session-start", "sessionStart");
    hook(Route::CursorHooks, "post-tool-use", "postToolUse");
    let s = session_of(&daemon, CONVERSATION);
    assert!(
        s.context.is_none(),
        "no figure before a compaction: {:?}",
        s.context
    );
    assert!(workflow_events_of(&project, "pipeline").is_empty());

    let pre = hook(
        Route::CursorHooks,
        "pre-compact",
        "preCompact(trigger=auto)",
    );
    assert_eq!(pre, json!({}));
    // Cursor runs hookd's Claude Code hook for the same moment.
    let again = hook(
        Route::ClaudeCodeHooks,
        "pre-compact",
        "preCompact(trigger=auto)",
    );
    assert_eq!(again, json!({}));
    let captures = workflow_events_of(&project, "pipeline")
        .iter()
        .filter(|e| {
            e["step"] == "capture"
                && e["trigger"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("pre-compact"))
        })
        .count();
    assert_eq!(captures, 1, "one save for one compaction");
    assert!(project.join(".workflow/context_state.json").is_file());
    assert_eq!(repo.hookd_refs().len(), 1, "a checkpoint");
    let compaction = workflow_events_of(&project, "compaction");
    assert_eq!(compaction.len(), 1, "{compaction:#?}");
    assert_eq!(compaction[0]["harness"], "cursor");

    let s = session_of(&daemon, CONVERSATION);
    assert_eq!(s.epoch, 2);
    let c = s.context.clone().expect("preCompact's figure");
    assert_eq!((c.tokens_used, c.window_tokens), (180_000, 200_000));
    assert_eq!(c.source, "pre-compact hook");
    assert!(c.point_unknown);
    let note = "Cursor gives its figure only at its compactions";
    assert!(s.notes.iter().any(|n| n.contains(note)), "{:?}", s.notes);
    let out = sb.hookctl_in(&project, &["status"]);
    assert!(stdout(&out).contains(note), "{}", stdout(&out));

    // Neither a tool call nor a turn the person stopped takes the prompt.
    assert_eq!(
        hook(Route::CursorHooks, "post-tool-use", "postToolUse"),
        json!({})
    );
    assert_eq!(
        hook(Route::CursorHooks, "stop", "stop(status=aborted)"),
        json!({})
    );
    assert!(workflow_events_of(&project, "resume").is_empty());

    let stop = hook(Route::CursorHooks, "stop", "stop(status=completed)");
    let followup = stop["followup_message"]
        .as_str()
        .unwrap_or_else(|| panic!("no resume prompt: {stop:#}"));
    assert!(followup.contains("[hookd-resume "), "{followup}");
    assert!(followup.contains("Resuming Previous Session"), "{followup}");
    assert_eq!(stop.as_object().unwrap().len(), 1, "{stop:#}");
    let resume = workflow_events_of(&project, "resume");
    assert_eq!(resume.len(), 1, "{resume:#?}");
    assert_eq!(resume[0]["injected"], true);
    let s = session_of(&daemon, CONVERSATION);
    let mark = s.resume.expect("the resume prompt's mark");
    assert!(mark.what.contains("arrival unconfirmed"), "{mark:?}");
    // Nor is whether the agent followed it judged: no file shows its calls.
    assert!(s.resumes_followed.is_empty(), "{:?}", s.resumes_followed);

    // Once: the next turn's stop, through either hook, says nothing.
    assert_eq!(
        hook(Route::CursorHooks, "stop", "stop(status=completed)"),
        json!({})
    );
    assert_eq!(
        hook(Route::ClaudeCodeHooks, "stop", "stop(status=completed)"),
        json!({})
    );
    assert_eq!(workflow_events_of(&project, "resume").len(), 1);
    assert!(workflow_events_of(&project, "resume_arrival").is_empty());
    assert_eq!(
        hook(Route::CursorHooks, "session-end", "sessionEnd"),
        json!({})
    );
    assert!(session_of(&daemon, CONVERSATION).ended);
}

/// With hookd absent and not startable, a Cursor hook still answers `{}`
/// and exits 0, through either hook; a Claude Code payload's hook says
/// nothing, as before.
#[test]
fn without_hookd_a_cursor_hook_answers_empty_json_and_exits_0() {
    let sb = Sandbox::new();
    let (project, _repo) = parser_project(&sb);
    for route in [Route::CursorHooks, Route::ClaudeCodeHooks] {
        for (name, event) in [
            ("sessionStart", "session-start"),
            ("preCompact(trigger=auto)", "pre-compact"),
            ("stop(status=completed)", "stop"),
        ] {
            let mut cmd = sb.command("hookctl");
            cmd.env("HOOKD_BIN", "/nonexistent/hookd").arg("hook");
            if let Route::CursorHooks = route {
                cmd.args(["--harness", "cursor"]);
            }
            cmd.arg(event);
            let out = run_with_stdin(cmd, &serde_json::to_vec(&payload(name, &project)).unwrap());
            assert_eq!(out.status.code(), Some(0), "{route:?} {name}");
            assert_eq!(stdout(&out), "{}\n", "{route:?} {name}");
            assert_eq!(stderr(&out), "", "{route:?} {name}");
        }
    }
    // What hookctl cannot read is said, and Cursor still gets JSON.
    let mut cmd = sb.command("hookctl");
    cmd.args(["hook", "--harness", "cursor", "stop"]);
    let out = run_with_stdin(cmd, b"not json");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "{}\n");
    assert!(
        stderr(&out).contains("not a JSON object"),
        "{}",
        stderr(&out)
    );
    let claude = json!({"session_id": "s", "cwd": project, "hook_event_name": "Stop"});
    let mut cmd = sb.command("hookctl");
    cmd.env("HOOKD_BIN", "/nonexistent/hookd")
        .args(["hook", "stop"]);
    let out = run_with_stdin(cmd, &serde_json::to_vec(&claude).unwrap());
    assert_eq!((out.status.code(), stdout(&out).as_str()), (Some(0), ""));
    assert_eq!(hook_json(&out), Value::Null);
}

/// `hookctl install cursor` adds flat entries to `~/.cursor/hooks.json`
/// and keeps the person's own; a second install changes nothing;
/// uninstall gives the file back as it was, backed up before. Doctor says
/// the support is documented, not run, and when hookd's Claude Code hooks,
/// which Cursor runs too, would bring each event twice. A project install
/// writes the shipped fragment, and its uninstall leaves no file.
#[test]
fn install_and_uninstall_cursor_keep_the_users_hooks() {
    let sb = Sandbox::new();
    let file = sb.home().join(".cursor/hooks.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let original = r#"{
  "version": 1,
  "hooks": {
    "beforeShellExecution": [
      {
        "command": "./guard.sh",
        "matcher": "Shell"
      }
    ],
    "stop": [
      {
        "command": "./notify.sh",
        "loop_limit": 2
      }
    ]
  }
}
"#;
    std::fs::write(&file, original).unwrap();
    let out = sb.hookctl(&["install", "cursor"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("documented, not run"),
        "{}",
        stdout(&out)
    );
    let hookctl = hookd_tests::bin("hookctl").display().to_string();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v["version"], 1);
    assert_eq!(
        v["hooks"]["beforeShellExecution"][0]["command"],
        "./guard.sh"
    );
    assert_eq!(v["hooks"]["stop"][0]["command"], "./notify.sh");
    for (event, arg, timeout, at) in [
        ("sessionStart", "session-start", 30, 0),
        ("postToolUse", "post-tool-use", 10, 0),
        ("preCompact", "pre-compact", 60, 0),
        ("stop", "stop", 10, 1),
        ("sessionEnd", "session-end", 10, 0),
    ] {
        let entry = &v["hooks"][event][at];
        assert_eq!(
            entry,
            &json!({"command": format!("{hookctl} hook --harness cursor {arg}"), "timeout": timeout}),
            "{event}"
        );
    }
    let installed = std::fs::read_to_string(&file).unwrap();
    let out = sb.hookctl(&["install", "cursor"]);
    assert!(stdout(&out).contains("already wired"), "{}", stdout(&out));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), installed);

    let check = doctor_check(&sb, sb.path(), "cursor");
    assert_eq!(check["status"], "warn", "{check:#}");
    assert!(
        check["detail"]
            .as_str()
            .unwrap()
            .contains("documented, not run"),
        "{check:#}"
    );
    // hookd in Claude Code's settings too: Cursor would bring each event twice.
    assert!(sb.hookctl(&["install", "claude-code"]).status.success());
    let check = doctor_check(&sb, sb.path(), "cursor");
    let detail = check["detail"].as_str().unwrap();
    assert!(detail.contains("reaches hookd twice"), "{check:#}");
    assert!(detail.contains(".claude/settings.json"), "{check:#}");
    assert!(
        check["fix"]
            .as_str()
            .unwrap()
            .contains("hookctl uninstall claude-code"),
        "{check:#}"
    );

    // With Cursor's own file gone, Cursor may be heard through Claude Code's
    // hooks, but which of them it runs is not documented: a warning.
    let out = sb.hookctl(&["uninstall", "cursor"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original);
    let check = doctor_check(&sb, sb.path(), "cursor");
    assert_eq!(check["status"], "warn", "{check:#}");
    let detail = check["detail"].as_str().unwrap();
    assert!(
        detail.contains("runs hookd's Claude Code hooks") && detail.contains("not documented"),
        "{check:#}"
    );
    assert!(sb.hookctl(&["uninstall", "claude-code"]).status.success());
    let check = doctor_check(&sb, sb.path(), "cursor");
    assert_eq!(
        check["status"], "warn",
        "Cursor is here, hookd nowhere: {check:#}"
    );
    let backups = std::fs::read_dir(file.parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".hookd-backup-"))
        .count();
    assert!(
        backups > 0,
        "the file was backed up before it was rewritten"
    );

    // A project install writes the shipped fragment; its uninstall leaves no file.
    let proj = sb.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let dir = proj.display().to_string();
    assert!(
        sb.hookctl(&["install", "cursor", "--project", &dir])
            .status
            .success()
    );
    let written = std::fs::read_to_string(proj.join(".cursor/hooks.json")).unwrap();
    let shipped = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../hooks/cursor/hooks.json"),
    )
    .unwrap();
    assert_eq!(written, shipped);
    assert!(
        sb.hookctl(&["uninstall", "cursor", "--project", &dir])
            .status
            .success()
    );
    assert!(!proj.join(".cursor").exists(), "nothing of hookd's is left");
}

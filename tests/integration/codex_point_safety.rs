//! Where Codex compacts, read safely: a repository's `.codex/config.toml`
//! that is a FIFO or a link to an endless file stalls nothing (read only
//! when Codex trusts the project, bounded, never through a link), and a
//! session whose point cannot be known yet says so instead of borrowing
//! Claude Code's. Through the real hookctl and a real `hookd` process.

use crate::attacks::Lab;
use hookd_tests::{
    GitRepo, HookAnswer, TestEvent, hook_json, output_text, run_with_stdin, stderr, stdout,
    wait_until,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

/// Well inside the hook's own deadline: an answer that took longer came
/// from a stalled daemon.
const PROMPT: Duration = Duration::from_secs(3);

/// Codex's home in the lab: `config.toml` and the session's rollout.
fn codex_home(lab: &Lab) -> PathBuf {
    let home = lab.sb.path().join("codex-home");
    std::fs::create_dir_all(home.join("sessions/2026/05/01")).unwrap();
    home
}

/// A rollout for session `id` whose latest reply is at `tokens`; with the
/// window Codex reports when `window` is given (a `token_count`), else
/// only the `token_usage_record` Codex writes first.
fn rollout(home: &Path, id: &str, project: &Path, tokens: u64, window: Option<u64>) -> PathBuf {
    let path = home.join(format!(
        "sessions/2026/05/01/rollout-2026-05-01T09-00-00-{id}.jsonl"
    ));
    hookd_tests::append_line(
        &path,
        &json!({"type": "turn_context", "payload": {"cwd": project, "model": "gpt-5.5-codex"}}),
    );
    let usage = json!({"input_tokens": tokens - 100, "cached_input_tokens": 0, "output_tokens": 100, "reasoning_output_tokens": 0, "total_tokens": tokens});
    hookd_tests::append_line(
        &path,
        &json!({"type": "token_usage_record", "payload": {"response_id": "r1", "usage": usage}}),
    );
    if let Some(window) = window {
        hookd_tests::append_line(
            &path,
            &json!({"type": "event_msg", "payload": {"type": "token_count", "info": {"last_token_usage": usage, "model_context_window": window}}}),
        );
    }
    path
}

/// `hookctl hook --harness codex post-tool-use` for session `id` working
/// in `project`, with `CODEX_HOME` set; and how long it took.
fn post_tool_use(
    lab: &Lab,
    home: &Path,
    id: &str,
    project: &Path,
    rollout: &Path,
) -> (Output, Duration) {
    let payload = json!({
        "session_id": id,
        "transcript_path": rollout,
        "cwd": project,
        "hook_event_name": "PostToolUse",
        "model": "gpt-5.5-codex",
        "tool_name": "Bash",
        "tool_input": {"command": "cargo test"},
        "tool_response": "ok",
        "tool_use_id": "call_1"
    });
    let mut cmd = lab.sb.command("hookctl");
    cmd.current_dir(project).env("CODEX_HOME", home).args([
        "hook",
        "--harness",
        "codex",
        "post-tool-use",
    ]);
    let started = Instant::now();
    let out = run_with_stdin(cmd, &serde_json::to_vec(&payload).unwrap());
    (out, started.elapsed())
}

/// The user's Codex config, trusting `trusted`.
fn trust(home: &Path, trusted: &[&Path]) {
    let mut text = String::from("model = \"gpt-5.5-codex\"\n");
    for project in trusted {
        text += &format!(
            "[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
            project.display()
        );
    }
    std::fs::write(home.join("config.toml"), text).unwrap();
}

/// A project whose `.codex/config.toml` is made by `plant`.
fn project(lab: &Lab, name: &str, plant: impl FnOnce(&Path)) -> PathBuf {
    let dir = lab.sb.path().join(name);
    GitRepo::init(&dir);
    std::fs::create_dir_all(dir.join(".codex")).unwrap();
    plant(&dir.join(".codex/config.toml"));
    dir
}

fn fifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path; mkfifo only creates a node there.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// The hook's answer, normalized, once it came in time: the daemon read the
/// rollout and answered, rather than the hook giving up at its deadline.
fn answered(lab: &Lab, out: &Output, took: Duration, what: &str) -> String {
    assert!(out.status.success(), "{what}: {}", stderr(out));
    let answer = HookAnswer::parse(&stdout(out));
    assert!(
        took < PROMPT,
        "{what}: the hook's answer took {took:?} and said {answer}"
    );
    answer.normalized(&lab.sb.normalizer())
}

/// The session's compaction point, as `hookctl status --json` shows it.
fn shown_point(lab: &Lab, id: &str) -> (u64, String) {
    let out = lab
        .sb
        .command("hookctl")
        .args(["status", "--json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let session = report["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == id)
        .cloned()
        .unwrap_or_default();
    let c = &session["context"];
    (
        c["tokens_max"].as_u64().unwrap_or(0),
        c["basis"].as_str().unwrap_or("").to_owned(),
    )
}

/// A FIFO as `.codex/config.toml`, in a project Codex does not trust and
/// in one it does: hookd opens nothing of the first, and never waits on
/// the second; each hook answers at once with the rollout's figure.
#[test]
fn a_fifo_as_a_projects_codex_config_does_not_stall_hookd() {
    let lab = Lab::new();
    let home = codex_home(&lab);
    let untrusted = project(&lab, "untrusted", fifo);
    let trusted = project(&lab, "trusted", fifo);
    trust(&home, &[&trusted]);
    for (id, dir) in [("c-untrusted", &untrusted), ("c-trusted", &trusted)] {
        let rollout = rollout(&home, id, dir, 180_000, Some(272_000));
        let (out, took) = post_tool_use(&lab, &home, id, dir, &rollout);
        // The 70% level, against the point of the window Codex reported.
        insta::allow_duplicates! {
            insta::assert_snapshot!(answered(&lab, &out, took, id), @r#"
                hookSpecificOutput.additionalContext: "Context at 70% of the way to compaction. Read only what the task needs: search first, then open line ranges. [hookd: 73% of the way to compaction (180,000 of 244,800 tokens), 66% of the window]"
                hookSpecificOutput.hookEventName: "PostToolUse"
                systemMessage: "hookd: context 73% of the way to compaction (180,000 of 244,800 tokens), 66% of the window"
            "#);
        }
        let (tokens_max, basis) = shown_point(&lab, id);
        assert_eq!(tokens_max, 244_800, "{id}: {basis}");
    }
}

/// A link to `/dev/zero` as a trusted project's `.codex/config.toml`: not
/// followed, so nothing endless is read; a real file in the same place
/// still sets the point.
#[test]
fn a_link_to_an_endless_file_as_a_projects_codex_config_is_not_followed() {
    let lab = Lab::new();
    let home = codex_home(&lab);
    let linked = project(&lab, "linked", |file| {
        std::os::unix::fs::symlink("/dev/zero", file).unwrap()
    });
    let plain = project(&lab, "plain", |file| {
        std::fs::write(file, "model_auto_compact_token_limit = 240000\n").unwrap()
    });
    trust(&home, &[&linked, &plain]);
    let rollout_linked = rollout(&home, "c-linked", &linked, 180_000, Some(272_000));
    let (out, took) = post_tool_use(&lab, &home, "c-linked", &linked, &rollout_linked);
    insta::assert_snapshot!(answered(&lab, &out, took, "linked"), @r#"
        hookSpecificOutput.additionalContext: "Context at 70% of the way to compaction. Read only what the task needs: search first, then open line ranges. [hookd: 73% of the way to compaction (180,000 of 244,800 tokens), 66% of the window]"
        hookSpecificOutput.hookEventName: "PostToolUse"
        systemMessage: "hookd: context 73% of the way to compaction (180,000 of 244,800 tokens), 66% of the window"
    "#);
    assert_eq!(shown_point(&lab, "c-linked").0, 244_800);

    let rollout_plain = rollout(&home, "c-plain", &plain, 180_000, Some(272_000));
    let (out, took) = post_tool_use(&lab, &home, "c-plain", &plain, &rollout_plain);
    insta::assert_snapshot!(answered(&lab, &out, took, "plain"), @r#"
        hookSpecificOutput.additionalContext: "Context at 70% of the way to compaction. Read only what the task needs: search first, then open line ranges. [hookd: 75% of the way to compaction (180,000 of 240,000 tokens), 66% of the window]"
        hookSpecificOutput.hookEventName: "PostToolUse"
        systemMessage: "hookd: context 75% of the way to compaction (180,000 of 240,000 tokens), 66% of the window"
    "#);
    let (tokens_max, basis) = shown_point(&lab, "c-plain");
    assert_eq!(tokens_max, 240_000, "{basis}");
    insta::assert_snapshot!(lab.sb.normalize(&basis), @"240000 (model_auto_compact_token_limit in [TEMP]/plain/.codex/config.toml)");
}

/// Before Codex reported its window, with no limit hookd can read, `hookctl
/// status` says the point is unknown, and no level fires against a guess
/// (150,000 would be past 70% of Claude Code's point).
#[test]
fn status_says_a_codex_point_is_unknown_until_codex_reports_its_window() {
    let lab = Lab::new();
    let home = codex_home(&lab);
    let dir = lab.sb.path().join("proj");
    GitRepo::init(&dir);
    trust(&home, &[]);
    let rollout = rollout(&home, "c-unknown", &dir, 150_000, None);
    let (out, _) = post_tool_use(&lab, &home, "c-unknown", &dir, &rollout);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        hook_json(&out),
        Value::Null,
        "no level against a guessed point"
    );

    let words =
        "the compaction point is learned at the first compaction; no level fires until then";
    let status = stdout(&lab.sb.command("hookctl").args(["status"]).output().unwrap());
    insta::assert_snapshot!(lab.sb.normalize(&status), @r#"
        hookd 0.1.0 (protocol 1) · pid [PID] · up [DURATION] · 1 event
        socket [SOCKET]
        1 session

        ● codex c-unknow  [TEMP]/proj  gpt-5.5-codex
            context  75% of the window (150,000 of 200,000 tokens)
                     ▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓░░░░░  the window, compaction point not known yet
            recent   ▆  the latest reply, █ = the whole window
            not compacted yet
            last save never · last checkpoint never
            last event post-tool-use [DURATION] ago · 1 event
            transcript [TEMP]/codex-home/sessions/2026/05/01/rollout-2026-05-01T09-00-00-c-unknown.jsonl
            note: the compaction point is learned at the first compaction; no level fires until then
    "#);
    assert_eq!(shown_point(&lab, "c-unknown").1, words);
    let events = dir.join(".workflow/events.jsonl");
    let thresholds = std::fs::read_to_string(&events)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("\"threshold\""))
        .count();
    assert_eq!(thresholds, 0);

    // Codex reports its window: 90% of it, and the note goes.
    let usage = json!({"input_tokens": 150_900, "cached_input_tokens": 0, "output_tokens": 100, "reasoning_output_tokens": 0, "total_tokens": 151_000});
    hookd_tests::append_line(
        &rollout,
        &json!({"type": "event_msg", "payload": {"type": "token_count", "info": {"last_token_usage": usage, "model_context_window": 190_000}}}),
    );
    let (out, _) = post_tool_use(&lab, &home, "c-unknown", &dir, &rollout);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        wait_until(PROMPT, || shown_point(&lab, "c-unknown").0 == 171_000),
        "{:?}",
        shown_point(&lab, "c-unknown")
    );
    // The 80% level's save ends before the status is read.
    lab.sb.wait_for(TestEvent::Saved, "threshold");
    let status = output_text(&lab.sb.command("hookctl").args(["status"]).output().unwrap());
    assert!(!status.contains(words), "{status}");
    insta::assert_snapshot!(lab.sb.normalize(&status), @r#"
        hookd 0.1.0 (protocol 1) · pid [PID] · up [DURATION] · 2 events
        socket [SOCKET]
        1 session

        ● codex c-unknow  [TEMP]/proj  gpt-5.5-codex
            context  88% of the way to compaction (151,000 of 171,000 tokens), 79% of the window
                     ▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓░░│░  the window, │ = compaction at 90%
            recent   ██  the last 2 replies, █ = at the compaction point
                      s  s state saved
            not compacted yet · passed 70%, 80% of the way
            last save [DURATION] ago (at 80% of the way to compaction) · last checkpoint never
            last event post-tool-use [DURATION] ago · 2 events
            transcript [TEMP]/codex-home/sessions/2026/05/01/rollout-2026-05-01T09-00-00-c-unknown.jsonl
    "#);
}

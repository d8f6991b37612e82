//! What the model reads after a compaction, and whether it followed it:
//! words queued before a compaction never cross it, and the first tool
//! calls after the resume prompt are judged against what it asked for.

use hookd_tests::{
    Sandbox, Scenario, TestDaemon, TestEvent, additional_context, assert_valid, hook_json,
    run_with_stdin, state_schema, stderr, stdout,
};
use serde_json::{Value, json};

/// Where Claude Code compacts a 200k window: 200,000 − 20,000 − 13,000.
const COMPACTS_AT: u64 = 167_000;

fn at(fraction: f64) -> u64 {
    (COMPACTS_AT as f64 * fraction) as u64
}

/// A level crossed by a run's last reply is about that run: the next run's
/// SessionStart(resume) does not carry it, and when that run is `/compact`
/// the compaction drops it, so the model never reads it past the
/// compaction.
#[test]
fn a_level_crossed_on_a_runs_last_reply_never_reaches_the_model_after_the_next_runs_compact() {
    let mut s = Scenario::build()
        .setting("resume.records_hint", false)
        .start();
    assert_eq!(s.turn(at(0.50)), Value::Null);
    // The run's last reply lands after its last tool hook: the watcher fires 70%.
    s.transcript.reply(at(0.75));
    s.sb.wait_for(TestEvent::Recorded, "threshold");
    assert_eq!(
        s.events("threshold").len(),
        1,
        "the watcher fired the level"
    );
    s.hook("Stop", "stop");
    // `claude -p --resume <id> "/compact"`: SessionStart(resume), then the compaction.
    let resumed = s.hook("SessionStart(source=resume)", "session-start");
    assert!(
        !additional_context(&resumed).contains("Context at 70%"),
        "SessionStart(resume) carried the last run's level, which outlives the compaction: {resumed}"
    );
    let start = s.compact(at(0.75), 4_000);
    let prompt = additional_context(&start);
    assert!(!prompt.contains("Context at 70%"), "{prompt}");
    insta::assert_snapshot!(s.answer_normalized(&start), @r#"
        hookSpecificOutput.additionalContext: |
          ## Context Recovery - Resuming Previous Session

          Your context was compacted. hookd saved where the work stood just before; pick it up from here.

          ### Checks Against the Repository Now
          - ✓ **git_status_matches**: not a git repository: nothing to compare
          - ✓ **workflow_exists**: no workflow file was in use; .workflow/ is in place
          - ✓ **task_valid**: no active task was recorded

          ### Where You Stopped
          - **In progress**: no task was recorded as in progress

          ### Session Info
          - **Capture**: compact_[STAMP] (claude-code session `s1-session`)
          - **Captured At**: [TIME] (before /compact)
          - **Context Usage**: 75% of the way to compaction (125,250 of 167,000 tokens), 63% of the window

          ---
          **Action Required**: No next step was recorded: check the changes above, then ask the person what to do next.
          [hookd-resume [MARKER]]
        hookSpecificOutput.hookEventName: "SessionStart"
        systemMessage: "Saved state from [TIME] (before /compact)"
    "#);
    s.transcript.context_arrived("SessionStart", &prompt);
    let post = s.hook("PostCompact(trigger=manual)", "post-compact");
    assert!(
        !additional_context(&post).contains("Context at 70%"),
        "{post}"
    );
    // The first turn after the compaction hears nothing of the old level either.
    let out = s.turn(4_500);
    assert!(
        !additional_context(&out).contains("Context at 70%"),
        "{out}"
    );
    assert!(out["systemMessage"].is_null(), "{out}");
}

/// The agent at work on JWT authentication: a repository with a design
/// note and a change to `src/jwt.rs`, a task in progress (created with
/// TaskCreate, as Claude Code 2.1.330 plans), and a test run that failed.
fn jwt_session() -> Scenario {
    let mut s = Scenario::build()
        .setting("resume.records_hint", false)
        .repository(|repo| {
            repo.write("notes/jwt_design.md", "# JWT\nSign with HS256.\n");
            repo.write("src/jwt.rs", "pub fn sign() {}\n");
            repo.commit_all("initial");
            repo.write("src/jwt.rs", "pub fn sign() {}\npub fn verify() {}\n");
        })
        .session("f1-session")
        .start();
    let t = &mut s.transcript;
    t.prompt("add JWT authentication to the API");
    t.tool_use(
        "toolu_c1",
        "TaskCreate",
        json!({"subject": "Implement JWT signing", "description": "Sign tokens in src/jwt.rs as notes/jwt_design.md says"}),
        90_000,
    );
    t.tool_result(
        "toolu_c1",
        "Task #1 created successfully: Implement JWT signing",
        json!({"task": {"id": "1", "subject": "Implement JWT signing"}}),
    );
    t.tool_use(
        "toolu_u1",
        "TaskUpdate",
        json!({"taskId": "1", "status": "in_progress"}),
        95_000,
    );
    t.tool_result("toolu_u1", "Updated task #1 status", json!({}));
    t.tool_use(
        "toolu_b1",
        "Bash",
        json!({"command": "cargo test jwt", "description": "run the JWT tests"}),
        100_000,
    );
    failed_result(
        &s,
        "toolu_b1",
        "error: could not compile `api` (lib test)\nmore",
    );
    s
}

/// A tool's result that failed, as Claude Code writes it.
fn failed_result(s: &Scenario, id: &str, text: &str) {
    s.transcript.append(&json!({
        "type": "user", "isSidechain": false, "sessionId": s.transcript.session_id,
        "message": {"role": "user", "content": [{"tool_use_id": id, "type": "tool_result", "content": text, "is_error": true}]},
    }));
}

/// The compaction, and the resume prompt arriving as Claude Code records it.
fn compact_and_arrive(s: &Scenario) -> String {
    s.hook("PostToolUse", "post-tool-use");
    let prompt = additional_context(&s.compact(100_000, 4_000));
    assert!(prompt.contains("Context Recovery"), "{prompt}");
    s.transcript.context_arrived("SessionStart", &prompt);
    s.hook("PostCompact(trigger=manual)", "post-compact");
    prompt
}

fn hookctl_text(s: &Scenario, args: &[&str]) -> String {
    let out = s.hookctl(args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

/// The lines of `hookctl <args>` that say how the last resume went.
fn resume_line(s: &Scenario, args: &[&str]) -> String {
    let text = hookctl_text(s, args);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("after compaction"))
        .map(str::trim)
        .collect();
    s.normalize(&lines.join("\n"))
}

/// The lines of the prompt's section whose heading starts with `heading`,
/// up to the next heading.
fn section(prompt: &str, heading: &str) -> String {
    let mut lines = prompt.lines().skip_while(|l| !l.starts_with(heading));
    let Some(first) = lines.next() else {
        panic!("no {heading:?} in:\n{prompt}");
    };
    let rest = lines.take_while(|l| !l.starts_with('#'));
    std::iter::once(first)
        .chain(rest)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_last_step_before_the_compaction_is_in_the_resume_prompt_and_the_state() {
    let s = jwt_session();
    let prompt = compact_and_arrive(&s);
    insta::assert_snapshot!(s.normalize(&section(&prompt, "### Where You Stopped")), @r#"
        ### Where You Stopped
        - **Objective**: add JWT authentication to the API
        - **In progress**: Implement JWT signing — Sign tokens in src/jwt.rs as notes/jwt_design.md says (files: `src/jwt.rs`, `notes/jwt_design.md`)
        - **Last step**: Bash `cargo test jwt`: failed: error: could not compile 'api' (lib test)
    "#);
    let state = s.state();
    assert_eq!(
        state["last_step"],
        json!({"tool": "Bash", "target": "cargo test jwt", "outcome": "failed: error: could not compile `api` (lib test)", "file": false})
    );
    assert_valid(&state_schema(), &state);
}

#[test]
fn an_agent_that_picks_up_what_the_resume_prompt_named_followed_it() {
    let mut s = jwt_session();
    compact_and_arrive(&s);
    let state = s.state();
    let named = state["context_to_reload"]["files"][0]["path"]
        .as_str()
        .unwrap_or_else(|| panic!("a file to reload: {state}"))
        .to_owned();
    // Before any tool call after the compaction: not decided.
    insta::assert_snapshot!(resume_line(&s, &["status"]), @"after compaction 1: resumed, not yet decided");
    let read = s.project.join(&named).display().to_string();
    s.transcript
        .tool_use("toolu_r1", "Read", json!({"file_path": read}), 5_000);
    s.transcript.tool_result("toolu_r1", "…", json!({}));
    s.hook("PostToolUse", "post-tool-use");
    let verdicts = s.events("resume_followed");
    assert_eq!(verdicts.len(), 1, "{verdicts:?}");
    assert_eq!(verdicts[0]["followed"], true);
    assert_eq!(verdicts[0]["epoch"], 2);
    assert_eq!(
        verdicts[0]["matched"],
        format!("Read {read} (named {named})"),
        "{verdicts:?}"
    );
    assert_eq!(
        verdicts[0]["marker"],
        s.events("resume")[0]["marker"],
        "the verdict names the prompt it is about"
    );
    // Once per compaction: later calls decide nothing more.
    s.transcript
        .tool_use("toolu_b2", "Bash", json!({"command": "ls /tmp"}), 6_000);
    s.hook("PostToolUse", "post-tool-use");
    assert_eq!(s.events("resume_followed").len(), 1);
    insta::assert_snapshot!(resume_line(&s, &["status"]), @"after compaction 1: resumed and followed (Read [TEMP]/proj/notes/jwt_design.md (named notes/jwt_design.md))");
    insta::assert_snapshot!(resume_line(&s, &["context-report"]), @"session f1-sessi after compaction 1: resumed and followed (Read [TEMP]/proj/notes/jwt_design.md (named notes/jwt_design.md))");
}

#[test]
fn an_agent_that_goes_elsewhere_is_recorded_so_and_a_text_answer_decides_nothing() {
    let mut s = jwt_session();
    compact_and_arrive(&s);
    // A reply with no tool call, then Stop: nothing to judge yet.
    let mut text_only = s.transcript.reply_entry(5_000);
    text_only["message"]["content"] = json!([{"type": "text", "text": "Where were we?"}]);
    s.transcript.append(&text_only);
    s.hook("Stop", "stop");
    insta::assert_snapshot!(resume_line(&s, &["status"]), @"after compaction 1: resumed, not yet decided");
    assert!(s.events("resume_followed").is_empty());
    s.transcript.tool_use(
        "toolu_w1",
        "WebSearch",
        json!({"query": "best pizza nearby"}),
        6_000,
    );
    s.hook("PostToolUse", "post-tool-use");
    let verdicts = s.events("resume_followed");
    assert_eq!(verdicts.len(), 1, "{verdicts:?}");
    assert_eq!(verdicts[0]["followed"], false);
    assert_eq!(
        verdicts[0]["first_call"],
        json!({"tool": "WebSearch", "target": "best pizza nearby"})
    );
    insta::assert_snapshot!(resume_line(&s, &["status"]), @"after compaction 1: resumed, went elsewhere (WebSearch best pizza nearby)");
    insta::assert_snapshot!(resume_line(&s, &["context-report"]), @"session f1-sessi after compaction 1: resumed, went elsewhere (WebSearch best pizza nearby)");
}

/// A decision the prompt shows under "Key Decisions Made" is not repeated
/// word for word by the memory's reflections on this task; a reflection
/// the decisions do not hold stays.
#[test]
fn the_memory_section_does_not_repeat_the_decisions_the_prompt_shows() {
    let s = jwt_session();
    s.hook("SessionStart(source=startup)", "session-start");
    s.hook_of(
        &s.transcript,
        "UserPromptSubmit",
        "user-prompt-submit",
        |p| p["prompt"] = Value::from("add JWT authentication to the API"),
    );
    let agent = |args: &[&str]| {
        let mut cmd = s.sb.command("hookctl");
        cmd.arg("--project").arg(&s.project).args(args);
        cmd.env("CLAUDE_CODE_SESSION_ID", &s.transcript.session_id);
        let out = cmd.output().expect("run hookctl");
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    };
    agent(&[
        "decision",
        "signing",
        "use HS256",
        "--why",
        "the design note says so",
    ]);
    agent(&["reflect", "the test fixtures hold expired tokens"]);
    let prompt = compact_and_arrive(&s);
    let decision = "signing: use HS256 (because the design note says so)";
    insta::assert_snapshot!(s.normalize(&section(&prompt, "### Key Decisions Made")), @r#"
        ### Key Decisions Made
        - “signing: use HS256 (because the design note says so)” (quoted from `.workflow/records.jsonl`)
    "#);
    let memory = section(&prompt, "#### Reflections on This Task");
    assert!(
        !memory.contains(decision),
        "the decision is said twice:\n{prompt}"
    );
    insta::assert_snapshot!(s.normalize(&memory), @r#"
        #### Reflections on This Task (the last 1 of 1)
        - [a change of approach, before any compaction] the test fixtures hold expired tokens
    "#);
}

/// Codex: the resume prompt arrives as a developer message in the rollout,
/// and the agent's first call after it (a shell command on the file it was
/// working on) is read from the rollout by Codex's own reader.
#[test]
fn codex_the_first_call_after_the_resume_prompt_is_read_from_its_rollout() {
    let sb = Sandbox::new();
    let _daemon = TestDaemon::start(sb.daemon_options().set("resume.records_hint", false));
    let project = sb.path().join("proj");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join("src/http.rs"), "pub fn get() {}\n").unwrap();
    let rollout = sb
        .path()
        .join("codex/sessions/2026/05/01/rollout-2026-05-01T09-00-00-0199c0de.jsonl");
    std::fs::create_dir_all(rollout.parent().unwrap()).unwrap();
    let record = |value: Value| hookd_tests::append_line(&rollout, &value);
    record(json!({"type": "session_meta", "payload": {"id": "0199c0de", "cwd": project}}));
    record(json!({"type": "turn_context", "payload": {"cwd": project, "model": "gpt-5.5-codex"}}));
    record(
        json!({"type": "event_msg", "payload": {"type": "user_message", "message": "add retries to the HTTP client"}}),
    );
    let call = |id: &str, name: &str, arguments: Value| json!({"type": "response_item", "payload": {"type": "function_call", "name": name, "arguments": arguments.to_string(), "call_id": id}});
    let output = |id: &str, text: &str| json!({"type": "response_item", "payload": {"type": "function_call_output", "call_id": id, "output": text}});
    record(call(
        "c1",
        "update_plan",
        json!({"plan": [{"step": "Write the retry loop", "status": "in_progress"}, {"step": "Test the backoff", "status": "pending"}]}),
    ));
    record(output("c1", "Plan updated"));
    record(call(
        "c2",
        "exec_command",
        json!({"cmd": "echo 'fn retry() {}' >> src/http.rs"}),
    ));
    record(output(
        "c2",
        "Exit code: 0\nWall time: 0.1 seconds\nOutput:\n",
    ));
    record(call(
        "c3",
        "exec_command",
        json!({"cmd": "cargo test retry"}),
    ));
    record(output(
        "c3",
        "Exit code: 101\nWall time: 2 seconds\nOutput:\nerror[E0425]: cannot find function `sleep`\nmore",
    ));
    record(token_count(230_000, 272_000));
    let hook = |event: &str, name: &str, extra: Value| {
        let mut payload = json!({
            "session_id": "0199c0de", "turn_id": "t1", "transcript_path": rollout,
            "cwd": project, "hook_event_name": name, "model": "gpt-5.5-codex",
            "permission_mode": "default",
        });
        for (k, v) in extra.as_object().unwrap() {
            payload[k] = v.clone();
        }
        let mut cmd = sb.command("hookctl");
        cmd.args(["hook", "--harness", "codex", event]);
        let out = run_with_stdin(cmd, &serde_json::to_vec(&payload).unwrap());
        assert!(out.status.success(), "{event}: {}", stderr(&out));
        hook_json(&out)
    };
    hook("pre-compact", "PreCompact", json!({"trigger": "auto"}));
    hook("post-compact", "PostCompact", json!({"trigger": "auto"}));
    let start = hook(
        "session-start",
        "SessionStart",
        json!({"source": "compact"}),
    );
    let prompt = additional_context(&start);
    insta::assert_snapshot!(sb.normalize(&section(&prompt, "### Where You Stopped")), @r#"
        ### Where You Stopped
        - **Objective**: add retries to the HTTP client
        - **In progress**: Write the retry loop
        - **File**: `src/http.rs`
        - **Last step**: exec_command `cargo test retry`: failed: error[E0425]: cannot find function 'sleep'
    "#);
    let marker_at = prompt.rfind("[hookd-resume ").expect("a marker");
    let marker = &prompt[marker_at..=marker_at + prompt[marker_at..].find(']').unwrap()];
    // Codex hands SessionStart's context to the model as a developer message.
    record(
        json!({"type": "response_item", "payload": {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": prompt}]}}),
    );
    record(token_count(9_000, 272_000));
    record(call(
        "c4",
        "exec_command",
        json!({"cmd": "sed -n 1,40p src/http.rs"}),
    ));
    record(output(
        "c4",
        "Exit code: 0\nWall time: 0.1 seconds\nOutput:\npub fn get() {}",
    ));
    hook(
        "post-tool-use",
        "PostToolUse",
        json!({"tool_name": "Bash", "tool_input": {"command": "sed -n 1,40p src/http.rs"}, "tool_response": "ok", "tool_use_id": "c4"}),
    );
    let verdicts = hookd_tests::workflow_events_of(&project, "resume_followed");
    assert_eq!(verdicts.len(), 1, "{verdicts:?}");
    assert_eq!(verdicts[0]["followed"], true, "{verdicts:?}");
    assert_eq!(verdicts[0]["marker"], marker);
    assert_eq!(
        verdicts[0]["matched"], "exec_command sed -n 1,40p src/http.rs (named src/http.rs)",
        "{verdicts:?}"
    );
    assert_eq!(
        verdicts[0]["first_call"],
        json!({"tool": "exec_command", "target": "sed -n 1,40p src/http.rs"})
    );
}

/// A `token_count` record as Codex writes it in its rollout file.
fn token_count(total: u64, window: u64) -> Value {
    json!({
        "type": "event_msg",
        "payload": {"type": "token_count", "info": {
            "last_token_usage": {"input_tokens": total - 300, "cached_input_tokens": 1000, "output_tokens": 300, "reasoning_output_tokens": 50, "total_tokens": total},
            "model_context_window": window
        }}
    })
}

//! What the model reads after a compaction, and whether it followed it:
//! words queued before a compaction never cross it, and the first tool
//! calls after the resume prompt are judged against what it asked for.

use hookd_tests::{
    Scenario, additional_context, assert_valid, state_schema, stderr, stdout, wait_until,
};
use serde_json::{Value, json};
use std::time::Duration;

/// Where Claude Code compacts a 200k window: 200,000 − 20,000 − 13,000.
const COMPACTS_AT: u64 = 167_000;

fn at(fraction: f64) -> u64 {
    (COMPACTS_AT as f64 * fraction) as u64
}

fn context(answer: &Value) -> String {
    if answer.is_null() {
        return String::new();
    }
    additional_context(answer)
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
    assert!(
        wait_until(Duration::from_secs(10), || s.events("threshold").len() == 1),
        "the watcher fired the level: {:?}",
        s.events("threshold")
    );
    s.hook("Stop", "stop");
    // `claude -p --resume <id> "/compact"`: SessionStart(resume), then the compaction.
    let resumed = s.hook("SessionStart(source=resume)", "session-start");
    assert!(
        !context(&resumed).contains("Context at 70%"),
        "SessionStart(resume) carried the last run's level, which outlives the compaction: {resumed}"
    );
    let start = s.compact(at(0.75), 4_000);
    let prompt = context(&start);
    assert!(prompt.contains("Context Recovery"), "{start}");
    assert!(!prompt.contains("Context at 70%"), "{prompt}");
    s.transcript.context_arrived("SessionStart", &prompt);
    let post = s.hook("PostCompact(trigger=manual)", "post-compact");
    assert!(!context(&post).contains("Context at 70%"), "{post}");
    // The first turn after the compaction hears nothing of the old level either.
    let out = s.turn(4_500);
    assert!(!context(&out).contains("Context at 70%"), "{out}");
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
    let prompt = context(&s.compact(100_000, 4_000));
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

#[test]
fn the_last_step_before_the_compaction_is_in_the_resume_prompt_and_the_state() {
    let s = jwt_session();
    let prompt = compact_and_arrive(&s);
    assert!(
        prompt.contains("- **Last step**: Bash `cargo test jwt`: failed: error: could not compile 'api' (lib test)\n"),
        "{prompt}"
    );
    let state = s.state();
    assert_eq!(
        state["last_step"],
        json!({"tool": "Bash", "target": "cargo test jwt", "outcome": "failed: error: could not compile `api` (lib test)"})
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
    assert!(
        hookctl_text(&s, &["status"]).contains("after compaction 1: resumed, not yet decided"),
        "{}",
        hookctl_text(&s, &["status"])
    );
    let read = s.project.join(&named).display().to_string();
    s.transcript
        .tool_use("toolu_r1", "Read", json!({"file_path": read}), 5_000);
    s.transcript.tool_result("toolu_r1", "…", json!({}));
    s.hook("PostToolUse", "post-tool-use");
    let verdicts = s.events("resume_followed");
    assert_eq!(verdicts.len(), 1, "{verdicts:?}");
    assert_eq!(verdicts[0]["followed"], true);
    assert_eq!(verdicts[0]["epoch"], 2);
    assert!(
        verdicts[0]["matched"].as_str().unwrap().contains(&named),
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
    let status = hookctl_text(&s, &["status"]);
    assert!(
        status.contains(&format!(
            "after compaction 1: resumed and followed (Read {read} (named {named}))"
        )),
        "{status}"
    );
    let report = hookctl_text(&s, &["context-report"]);
    assert!(
        report.contains("after compaction 1: resumed and followed"),
        "{report}"
    );
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
    assert!(hookctl_text(&s, &["status"]).contains("after compaction 1: resumed, not yet decided"));
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
    let status = hookctl_text(&s, &["status"]);
    assert!(
        status
            .contains("after compaction 1: resumed, went elsewhere (WebSearch best pizza nearby)"),
        "{status}"
    );
    let report = hookctl_text(&s, &["context-report"]);
    assert!(
        report
            .contains("after compaction 1: resumed, went elsewhere (WebSearch best pizza nearby)"),
        "{report}"
    );
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
    let decisions = prompt
        .find("### Key Decisions Made")
        .unwrap_or_else(|| panic!("no decisions in:\n{prompt}"));
    assert!(prompt[decisions..].contains("use HS256"), "{prompt}");
    let memory = prompt
        .find("#### Reflections on This Task")
        .unwrap_or_else(|| panic!("no reflections in:\n{prompt}"));
    let window: Vec<&str> = prompt[memory..]
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("- ["))
        .collect();
    assert!(
        window.iter().any(|l| l.contains("expired tokens")),
        "{prompt}"
    );
    assert!(
        !window.iter().any(|l| l.contains(decision)),
        "the decision is said twice:\n{prompt}"
    );
}

//! Qwen Code 0.24.4 end to end: `qwen --yolo -p` (and `--resume <session>`)
//! against the scripted Chat Completions API, hookd wired by `hookctl
//! install qwen-code` into `~/.qwen/settings.json`.
//!
//! Qwen Code's own figures are in its transcript
//! (`~/.qwen/projects/<project>/chats/<session>.jsonl`): each `assistant`
//! record's `usageMetadata.promptTokenCount` is the prompt tokens the API
//! reported. With a model it does not know the window is 200,000 and it
//! compacts at 167,000 (min(0.85 × window, window − 20,000 − 13,000)), in
//! the middle of a turn, right after the tool result that follows a reply
//! over it: PreCompact → the summary request → PostCompact →
//! SessionStart(compact). That hook is not waited for: its context goes
//! into the system prompt of the requests sent after it answered.

use crate::agents::{self, short_turn};
use hookd_tests::e2e_agents::{
    Agent, AgentBuilder, Client, MOCK_MODEL, QWEN_COMPACTS_AT, QWEN_WINDOW, SETTLE, Wiring,
};
use hookd_tests::mock_model::Reply;
use hookd_tests::wait_until;
use std::time::Duration;

fn qwen(name: &str) -> AgentBuilder {
    Agent::builder(Client::Qwen, name)
}

/// The client and the mock without hookd: the shell call runs, the answer
/// is printed, the resumed run carries the first one's conversation, and
/// the transcript's usage is the mock's.
#[test]
fn qwen_code_runs_against_the_chat_completions_mock() {
    let mut replies = short_turn(1, 10_000).to_vec();
    replies.extend(short_turn(2, 12_000));
    let Some(mut agent) = qwen("qwen-plain")
        .wiring(Wiring::NoHooks)
        .replies(replies)
        .start()
    else {
        return;
    };
    let first = agent.run("TURN 1: add step 1 to notes.txt");
    let second = agent.run("TURN 2: add step 2 to notes.txt");
    assert_eq!(first.answer(), "Step 1 noted.");
    assert_eq!(second.answer(), "Step 2 noted.");
    assert_eq!(
        std::fs::read_to_string(agent.project.join("notes.txt")).unwrap(),
        "step 1\nstep 2\n",
        "both shell calls ran"
    );
    let log = agent.log();
    assert_eq!(
        log.labels(),
        ["t1.tool", "t1.text", "t2.tool", "t2.text"],
        "one main request a reply, nothing else"
    );
    for request in &log.requests {
        assert_eq!(request.path, "/v1/chat/completions");
        assert_eq!(request.body["model"], MOCK_MODEL);
        assert_eq!(request.body["stream"], true);
    }
    let resumed = log.answered_with("t2.tool");
    assert!(
        resumed.contains("TURN 1: add step 1 to notes.txt") && resumed.contains("Step 1 noted."),
        "the second run resumed the first one's session: {}",
        resumed.text()
    );
    assert!(
        log.answered_with("t1.text")
            .contains("echo 'step 1' >> notes.txt"),
        "the tool call came back in the next request"
    );
    assert_eq!(
        agent.qwen_prompt_tokens(),
        [10_000, 11_000, 12_000, 13_000],
        "the transcript's usageMetadata is the mock's usage"
    );
}

/// The compaction the scenario below relies on, without hookd: Qwen Code
/// asks for the summary between the reply over its compaction point and
/// the next one, records a `chat_compression`, and goes on from the
/// summary with the usage the mock reports.
#[test]
fn qwen_code_compacts_against_the_chat_completions_mock() {
    let Some(mut agent) = qwen("qwen-plain-compaction")
        .wiring(Wiring::NoHooks)
        .replies(vec![
            Reply::shell("t1.tool", 180_000, "echo 'step 1' > notes.txt"),
            Reply::shell("t1.tool2", 3_000, "echo 'step 2' >> notes.txt"),
            Reply::text("t1.text", 3_500, "Steps noted."),
        ])
        .summary("E2E_SUMMARY of the work so far", 179_000)
        .start()
    else {
        return;
    };
    let run = agent.run("TURN 1: add steps 1 and 2 to notes.txt");
    assert_eq!(run.answer(), "Steps noted.");
    let log = agent.log();
    assert_eq!(log.labels(), ["t1.tool", "summary", "t1.tool2", "t1.text"]);
    let summary = log.answered_with("summary");
    assert!(
        summary.contains("TURN 1: add steps 1 and 2 to notes.txt"),
        "the summary request holds the conversation: {}",
        summary.text()
    );
    let after = log.answered_with("t1.tool2");
    assert!(
        after.contains("<state_snapshot>\nE2E_SUMMARY of the work so far\n</state_snapshot>"),
        "the turn goes on from the summary: {}",
        after.text()
    );
    let compressions: Vec<_> = agent
        .qwen_records()
        .into_iter()
        .filter(|r| r["type"] == "system" && r["subtype"] == "chat_compression")
        .collect();
    assert_eq!(compressions.len(), 1, "{compressions:?}");
    assert_eq!(
        agent.qwen_prompt_tokens(),
        [180_000, 3_000, 3_500],
        "the transcript's usage is the mock's, before and after"
    );
    assert_eq!(
        std::fs::read_to_string(agent.project.join("notes.txt")).unwrap(),
        "step 1\nstep 2\n"
    );
}

#[test]
fn qwen_code_without_hookd_runs_as_without_hooks() {
    agents::fail_open_two_turns(Client::Qwen);
}

/// Two turns below every level: no pipeline, no checkpoint.
#[test]
fn qwen_code_no_pipeline_without_compaction() {
    agents::quiet_two_turns(qwen("qwen-quiet"));
}

/// hookd's figure is the transcript's latest `promptTokenCount`, its window
/// Qwen Code's and its compaction point where Qwen Code compacts.
#[test]
fn qwen_code_context_figure_is_the_transcripts() {
    let Some(mut agent) = qwen("qwen-figure")
        .replies(short_turn(1, 30_000).to_vec())
        .start()
    else {
        return;
    };
    agent.run("TURN 1: add step 1 to notes.txt");
    let tokens = agent.qwen_prompt_tokens();
    let used = *tokens.last().expect("an assistant record with usage");
    assert_eq!(used, 31_000, "the transcript's figure is the mock's");
    let id = agent.session_id().to_owned();
    let (session, ok) = agent.session_until(&id, |s| s["context"]["tokens_used"] == used);
    eprintln!(
        "qwen-figure: transcript promptTokenCount {tokens:?}; hookd {} {}",
        session["harness"], session["context"]
    );
    assert!(ok, "hookd's figure is the transcript's {used}: {session}");
    assert_eq!(session["harness"], "qwen-code", "{session}");
    assert_eq!(
        session["context"]["window_tokens"], QWEN_WINDOW,
        "{session}"
    );
    assert_eq!(
        session["context"]["tokens_max"], QWEN_COMPACTS_AT,
        "{session}"
    );
}

/// The mock's usage climbs through every level in one turn of five shell
/// calls; each level fires once, on the reply that crossed it. The model
/// takes half a second an answer, as a real one takes more: Qwen Code
/// writes a reply to its transcript without waiting, at times after the
/// hooks that follow it have run, and on a loaded machine with an instant
/// model two replies could reach the file before hookd reads it, the first
/// one's level then never seen on its own.
#[test]
fn qwen_code_thresholds_fire_once_on_the_crossing_reply() {
    agents::thresholds(
        qwen("qwen-thresholds").latency(Duration::from_millis(500)),
        QWEN_COMPACTS_AT,
    );
}

/// A real automatic compaction: the second reply reports 180,000 prompt
/// tokens, so Qwen Code compacts right after its tool result, before asking
/// for the turn's next reply; the summary request reports the 179,000 it
/// took in (Qwen Code takes them off its count: the turn goes on at about
/// 3,000). The state and checkpoint are saved, the resume prompt reaches
/// the model once in every request from the first that can carry it, and
/// hookd finds that it arrived.
///
/// hookd gives the resume prompt with the first prompt or tool batch after
/// the compaction (see below); Qwen Code fires those without waiting for
/// them, so the request right after the compaction may go before the
/// prompt is in, and the turn goes on for two. The file the capture must
/// find is written by the
/// first call: the tool result just before PreCompact may not be in the
/// transcript yet when hookd reads it.
#[test]
fn qwen_code_auto_compaction_saves_checkpoints_and_resumes_once() {
    let Some(mut agent) = qwen("qwen-compaction")
        .replies(vec![
            Reply::shell("t1.tool", 6_000, "echo 'step 1' > notes.txt"),
            Reply::shell("t1.tool2", 180_000, "echo 'step 2' >> notes.txt"),
            Reply::shell("t1.tool3", 3_000, "echo 'step 3' >> notes.txt"),
            Reply::text("t1.text", 3_500, "Steps noted."),
        ])
        .summary("E2E_SUMMARY of the work so far", 179_000)
        .start()
    else {
        return;
    };
    let head = agent.git(&["rev-parse", "HEAD"]);
    agent.run("TURN 1: add steps 1 to 3 to notes.txt");
    let log = agent.log();
    let summaries = log.of_kind("summary");
    assert!(
        !summaries.is_empty()
            && log.answered_with("t1.tool2").n < summaries[0].n
            && log.answered_with("t1.tool3").n > summaries[0].n,
        "Qwen Code compacted between t1.tool2 and t1.tool3: {:?}",
        log.labels()
    );
    let compressions: Vec<_> = agent
        .qwen_records()
        .into_iter()
        .filter(|r| r["type"] == "system" && r["subtype"] == "chat_compression")
        .collect();
    eprintln!("qwen-compaction: {compressions:?}");
    assert_eq!(
        compressions.len(),
        1,
        "one chat_compression record in the transcript"
    );
    agents::compaction_handled(&agent, &head, "notes.txt", &["t1.tool3", "t1.text"]);
    agents::capture_read_the_session_file(
        &agent,
        "TURN 1: add steps 1 to 3 to notes.txt",
        &[],
        "notes.txt",
    );
    let checked = wait_until(SETTLE, || !agent.events("resume_arrival").is_empty());
    let arrivals = agent.events("resume_arrival");
    eprintln!("qwen-compaction: arrival checks {arrivals:?}");
    assert!(
        checked,
        "hookd checked that the resume prompt arrived\n{}",
        agent.diagnostics()
    );
    assert_eq!(arrivals.len(), 1, "one arrival check: {arrivals:?}");
    assert_eq!(arrivals[0]["arrived"], true, "{arrivals:?}");
    assert_eq!(arrivals[0]["action"], "arrived", "{arrivals:?}");
    agents::arrivals_reached_the_model(&agent);
}

/// The compaction comes at the turn's last request: the reply right after it
/// ends the turn, sent before SessionStart(compact)'s context could be put
/// in the system prompt, and a system prompt does not outlive the process.
/// hookd therefore gives the resume prompt with the next prompt or tool
/// batch, which the chat file records: the turn's continuation if Qwen Code
/// fires one before its last request, else the next turn's prompt. It
/// reaches the model once, and is found arrived only then.
#[test]
fn qwen_code_resume_prompt_reaches_the_model_when_the_turn_ends_at_the_compaction() {
    let Some(mut agent) = qwen("qwen-compaction-at-the-end")
        .replies(vec![
            Reply::shell("t1.tool", 180_000, "echo 'step 1' > notes.txt"),
            Reply::text("t1.text", 3_000, "Step 1 noted."),
            Reply::text("t2.text", 3_500, "Carrying on after the compaction."),
            Reply::text("t3.text", 3_800, "Still carrying on."),
        ])
        .summary("E2E_SUMMARY of the work so far", 179_000)
        .start()
    else {
        return;
    };
    let head = agent.git(&["rev-parse", "HEAD"]);
    agent.run("TURN 1: add step 1 to notes.txt");
    agent.run("TURN 2: carry on");
    // A prompt after the one that carried it: the first hook that checks.
    agent.run("TURN 3: carry on");
    let checked = wait_until(SETTLE, || !agent.events("resume_arrival").is_empty());
    let arrivals = agent.events("resume_arrival");
    eprintln!("qwen-compaction-at-the-end: arrival checks {arrivals:?}");
    assert!(checked, "hookd checked that the resume prompt arrived");
    assert_eq!(arrivals.len(), 1, "one arrival check: {arrivals:?}");
    assert_eq!(arrivals[0]["action"], "arrived", "{arrivals:?}");
    agents::arrivals_reached_the_model(&agent);
    agents::compaction_handled(&agent, &head, "notes.txt", &["t1.text", "t2.text"]);
}

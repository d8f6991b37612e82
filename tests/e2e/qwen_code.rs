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

use hookd_tests::e2e_agents::{Agent, AgentBuilder, CODEX_MODEL, Client, Wiring};
use hookd_tests::mock_model::Reply;

fn qwen(name: &str) -> AgentBuilder {
    Agent::builder(Client::Qwen, name)
}

/// One tool call and an answer, well under the compaction point.
fn short_turn(turn: u32, tokens: u64) -> [Reply; 2] {
    [
        Reply::shell(
            &format!("t{turn}.tool"),
            tokens,
            &format!("echo 'step {turn}' >> notes.txt"),
        ),
        Reply::text(
            &format!("t{turn}.text"),
            tokens + 1_000,
            &format!("Step {turn} noted."),
        ),
    ]
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
        assert_eq!(request.body["model"], CODEX_MODEL);
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

//! OpenCode 1.18.33 end to end: `opencode run` (and `-s <session>`)
//! against the scripted Chat Completions API, hookd wired by `hookctl
//! install opencode` (a plugin OpenCode loads in-process, which runs
//! hookctl).
//!
//! OpenCode's own figures are in its database
//! (`~/.local/share/opencode/opencode.db`): each assistant message's
//! `data.tokens.total` is the prompt and reply tokens the API reported. It
//! compacts after a reply whose total reaches its usable room,
//! `limit.context − limit.output` for a model that names no input limit
//! (190,000 with the limits every scenario here configures): the summary
//! request, which offers no tools, then a synthetic "Continue…" message
//! and the turn goes on. A new session's first run also asks, before the
//! turn, for a title (a tool-less side request the mock answers apart from
//! the script).

use hookd_tests::e2e_agents::{
    Agent, AgentBuilder, Client, MOCK_MODEL, OPENCODE_COMPACTS_AT, OPENCODE_CONTEXT, Wiring,
};
use hookd_tests::mock_model::Reply;

/// What the mock's usage adds to a reply's prompt tokens: its output tokens,
/// which OpenCode counts in `tokens.total`.
const REPLY_TOKENS: u64 = 30;

fn opencode(name: &str) -> AgentBuilder {
    Agent::builder(Client::OpenCode, name)
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

/// The client and the mock without hookd: the title request, then the
/// shell call runs and the answer is printed; the second run continues the
/// first one's session, and the database's usage is the mock's.
#[test]
fn opencode_runs_against_the_chat_completions_mock() {
    let mut replies = short_turn(1, 10_000).to_vec();
    replies.extend(short_turn(2, 12_000));
    let Some(mut agent) = opencode("opencode-plain")
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
        ["utility", "t1.tool", "t1.text", "t2.tool", "t2.text"],
        "a title for the new session, then one main request a reply"
    );
    for request in &log.requests {
        assert_eq!(request.path, "/v1/chat/completions");
        assert_eq!(request.body["model"], MOCK_MODEL);
        assert_eq!(request.body["stream"], true);
    }
    let title = &log.requests[0];
    assert!(
        title.body["tools"].as_array().is_none_or(Vec::is_empty),
        "the title request offers no tools: {}",
        title.body
    );
    let turn = log.answered_with("t1.tool");
    let tools: Vec<&str> = turn.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(tools.contains(&"bash"), "the shell tool is bash: {tools:?}");
    let resumed = log.answered_with("t2.tool");
    assert!(
        resumed.contains("TURN 1: add step 1 to notes.txt") && resumed.contains("Step 1 noted."),
        "the second run continued the first one's session: {}",
        resumed.text()
    );
    assert!(
        log.answered_with("t1.text")
            .contains("echo 'step 1' >> notes.txt"),
        "the tool call came back in the next request"
    );
    assert_eq!(
        agent.opencode_totals(),
        [10_000, 11_000, 12_000, 13_000].map(|t| t + REPLY_TOKENS),
        "the database's tokens.total is the mock's usage"
    );
}

/// The compaction the scenarios below rely on, without hookd: a reply over
/// the usable room (190,000 of a 200,000 window with 10,000 kept for the
/// reply) is followed by the tool-less summary request, a summary message
/// (`agent: compaction`, `summary: true`) and the turn going on from it.
#[test]
fn opencode_compacts_against_the_chat_completions_mock() {
    let Some(mut agent) = opencode("opencode-plain-compaction")
        .wiring(Wiring::NoHooks)
        .replies(vec![
            Reply::shell("t1.tool", 195_000, "echo 'step 1' > notes.txt"),
            Reply::text("t1.text", 3_500, "Step 1 noted."),
        ])
        .summary("E2E_SUMMARY of the work so far", 2_000)
        .start()
    else {
        return;
    };
    let run = agent.run("TURN 1: add step 1 to notes.txt");
    assert!(
        run.answer().ends_with("Step 1 noted."),
        "the turn went on after the compaction: {}",
        run.answer()
    );
    let log = agent.log();
    assert_eq!(log.labels(), ["utility", "t1.tool", "summary", "t1.text"]);
    let summary = log.answered_with("summary");
    assert!(
        summary.contains("TURN 1: add step 1 to notes.txt"),
        "the summary request holds the conversation: {}",
        summary.text()
    );
    assert!(
        summary.body["tools"].as_array().is_none_or(Vec::is_empty),
        "the summary request offers no tools"
    );
    assert!(
        log.answered_with("t1.text")
            .contains("E2E_SUMMARY of the work so far"),
        "the turn goes on from the summary"
    );
    let replies = agent.opencode_replies();
    let summaries: Vec<_> = replies.iter().filter(|m| m["summary"] == true).collect();
    assert_eq!(summaries.len(), 1, "{replies:?}");
    assert_eq!(summaries[0]["agent"], "compaction");
    assert_eq!(
        agent.opencode_totals(),
        [195_000, 2_000, 3_500].map(|t| t + REPLY_TOKENS),
        "the database's usage is the mock's, before and after"
    );
    assert_eq!(
        std::fs::read_to_string(agent.project.join("notes.txt")).unwrap(),
        "step 1\n"
    );
    assert!(OPENCODE_COMPACTS_AT < 195_000 && 195_000 < OPENCODE_CONTEXT);
}

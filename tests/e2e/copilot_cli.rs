//! GitHub Copilot CLI 1.0.102 end to end: `copilot -p … --allow-all-tools
//! --no-auto-update` (and `--continue`) against the scripted Chat
//! Completions API, offline, with hookd wired by `hookctl install
//! copilot-cli` into `~/.copilot/hooks/`.
//!
//! Copilot CLI's own figures are in its event log
//! (`~/.copilot/session-state/<session>/events.jsonl`): each
//! `session.usage_record`'s `usage.inputTokens` is the prompt tokens the API
//! reported, its `maxPromptTokens` the prompt limit
//! (`COPILOT_PROVIDER_MAX_PROMPT_TOKENS`, 128,000 for a model it does not
//! know). Past 0.80 of that limit it compacts in the background: a
//! `session.compaction_start`, the preCompact hook, a summary request sent
//! beside the turn's next request (the turn does not wait), and a
//! `session.compaction_complete` once the summary is in; the requests after
//! it carry the summary instead of the history. No hook fires after a
//! compaction: hookd's resume prompt goes in with the next hook that
//! reaches the model once the log shows the compaction done.

use hookd_tests::e2e_agents::{Agent, AgentBuilder, Client, MOCK_MODEL, Wiring};
use hookd_tests::mock_model::Reply;

/// The prompt limit the compaction scenarios set, so that a reply can
/// report a figure past Copilot's 0.80 point without a huge one.
const SMALL_WINDOW: u64 = 20_000;

fn copilot(name: &str) -> AgentBuilder {
    Agent::builder(Client::Copilot, name)
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

/// A turn that crosses the compaction point of [`SMALL_WINDOW`] on its
/// second reply, then makes two more tool calls (the background compaction
/// completes while they run) before its answer.
fn compacting_turn() -> Vec<Reply> {
    vec![
        Reply::shell("t1.tool", 6_000, "echo 'step 1' > notes.txt"),
        Reply::shell("t1.tool2", 18_000, "echo 'step 2' >> notes.txt"),
        Reply::shell("t1.tool3", 3_000, "echo 'step 3' >> notes.txt"),
        Reply::shell("t1.tool4", 3_200, "echo 'step 4' >> notes.txt"),
        Reply::text("t1.text", 3_500, "Steps noted."),
    ]
}

/// The client and the mock without hookd: the shell call runs, the answer
/// is printed, the continued run carries the first one's conversation, and
/// the event log's usage is the mock's, with the prompt limit it was given.
#[test]
fn copilot_cli_runs_against_the_chat_completions_mock() {
    let mut replies = short_turn(1, 10_000).to_vec();
    replies.extend(short_turn(2, 12_000));
    let Some(mut agent) = copilot("copilot-plain")
        .wiring(Wiring::NoHooks)
        .replies(replies)
        .start()
    else {
        return;
    };
    let first = agent.run("TURN 1: add step 1 to notes.txt");
    let second = agent.run("TURN 2: add step 2 to notes.txt");
    assert!(
        first.answer().ends_with("Step 1 noted."),
        "{}",
        first.answer()
    );
    assert!(
        second.answer().ends_with("Step 2 noted."),
        "{}",
        second.answer()
    );
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
        assert_eq!(request.body["stream_options"]["include_usage"], true);
    }
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
        agent.copilot_usage(),
        [
            (10_000, agent.copilot_window()),
            (11_000, agent.copilot_window()),
            (12_000, agent.copilot_window()),
            (13_000, agent.copilot_window()),
        ],
        "the usage records are the mock's usage, with the prompt limit"
    );
}

/// The compaction the scenario below relies on, without hookd: past 0.80
/// of the prompt limit Copilot CLI asks for the summary beside the turn's
/// next request, records the compaction done, and the requests after that
/// go on from the summary; the summary request is no usage record.
#[test]
fn copilot_cli_compacts_against_the_chat_completions_mock() {
    let Some(mut agent) = copilot("copilot-plain-compaction")
        .wiring(Wiring::NoHooks)
        .copilot_window(SMALL_WINDOW)
        .replies(compacting_turn())
        .summary("E2E_SUMMARY of the work so far", 2_000)
        .start()
    else {
        return;
    };
    let run = agent.run("TURN 1: add steps 1 to 4 to notes.txt");
    assert!(run.answer().ends_with("Steps noted."), "{}", run.answer());
    let log = agent.log();
    let summaries = log.of_kind("summary");
    assert_eq!(summaries.len(), 1, "{:?}", log.labels());
    assert!(
        log.answered_with("t1.tool2").n < summaries[0].n,
        "the summary was asked for after the reply past the point: {:?}",
        log.labels()
    );
    assert!(
        summaries[0].contains("TURN 1: add steps 1 to 4 to notes.txt"),
        "the summary request holds the conversation: {}",
        summaries[0].text()
    );
    let starts = agent.copilot_events_of("session.compaction_start");
    let completes = agent.copilot_events_of("session.compaction_complete");
    eprintln!(
        "copilot-plain-compaction: requests {:?}; compaction start {starts:?}",
        log.labels()
    );
    assert_eq!(starts.len(), 1, "{starts:?}");
    assert_eq!(starts[0]["data"]["trigger"], "threshold");
    assert_eq!(starts[0]["data"]["tokenLimit"], SMALL_WINDOW);
    assert_eq!(completes.len(), 1, "{completes:?}");
    assert_eq!(completes[0]["data"]["success"], true, "{completes:?}");
    assert_eq!(
        completes[0]["data"]["summaryContent"],
        "E2E_SUMMARY of the work so far"
    );
    let last = log.answered_with("t1.text");
    assert!(
        last.contains("E2E_SUMMARY of the work so far")
            && !last.contains("echo 'step 1' > notes.txt"),
        "the turn's last request goes on from the summary: {}",
        last.text()
    );
    assert_eq!(
        agent
            .copilot_usage()
            .iter()
            .map(|u| u.0)
            .collect::<Vec<_>>(),
        [6_000, 18_000, 3_000, 3_200, 3_500],
        "the usage records are the mock's, before and after"
    );
    assert_eq!(
        std::fs::read_to_string(agent.project.join("notes.txt")).unwrap(),
        "step 1\nstep 2\nstep 3\nstep 4\n"
    );
}

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
//!
//! The log is written in batches, not record by record (measured: the file
//! appears a few hundred milliseconds into a new session, after its first
//! hooks, and grows every few hundred milliseconds), so a hook can find it
//! behind what the client did, or not there yet.

use crate::agents::{self, short_turn};
use hookd_tests::e2e_agents::{
    Agent, AgentBuilder, COPILOT_WINDOW, Client, MOCK_MODEL, RESUME_MARKER, SETTLE, Wiring,
    copilot_compacts_at,
};
use hookd_tests::mock_model::Reply;
use hookd_tests::wait_until;
use std::time::Duration;

/// The prompt limit the compaction scenarios set, so that a reply can
/// report a figure past Copilot's 0.80 point without a huge one.
const SMALL_WINDOW: u64 = 20_000;

fn copilot(name: &str) -> AgentBuilder {
    Agent::builder(Client::Copilot, name)
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

#[test]
fn copilot_cli_without_hookd_runs_as_without_hooks() {
    agents::fail_open_two_turns(Client::Copilot);
}

/// Two turns below every level: no pipeline, no checkpoint.
#[test]
fn copilot_cli_no_pipeline_without_compaction() {
    let Some(agent) = agents::quiet_two_turns(copilot("copilot-quiet")) else {
        return;
    };
    assert!(
        agent
            .copilot_events_of("session.compaction_start")
            .is_empty(),
        "Copilot CLI did not compact"
    );
}

/// hookd's figure is the event log's latest usage record, its window the
/// record's `maxPromptTokens` and its compaction point 0.80 of that, with a
/// prompt limit that is not the default.
#[test]
fn copilot_cli_context_figure_is_the_event_logs() {
    let window = 64_000;
    let Some(mut agent) = copilot("copilot-figure")
        .copilot_window(window)
        .replies(short_turn(1, 30_000).to_vec())
        .start()
    else {
        return;
    };
    agent.run("TURN 1: add step 1 to notes.txt");
    let usage = agent.copilot_usage();
    let &(used, limit) = usage.last().expect("a usage record");
    assert_eq!(
        (used, limit),
        (31_000, window),
        "the log's figure is the mock's"
    );
    let id = agent.session_id().to_owned();
    let (session, ok) = agent.session_until(&id, |s| s["context"]["tokens_used"] == used);
    eprintln!(
        "copilot-figure: usage records {usage:?}; hookd {} {}",
        session["harness"], session["context"]
    );
    assert!(ok, "hookd's figure is the log's {used}: {session}");
    assert_eq!(session["harness"], "copilot-cli", "{session}");
    assert_eq!(session["context"]["window_tokens"], window, "{session}");
    assert_eq!(
        session["context"]["tokens_max"],
        copilot_compacts_at(window),
        "{session}"
    );
}

/// The mock's usage climbs through every level in one turn of five shell
/// calls, relative to 0.80 of the default prompt limit, and stays under it;
/// each level fires once, on the reply that crossed it, and its words reach
/// the model once. The model takes half a second an answer, as a real one
/// takes more, so that each reply is in the log on its own when hookd reads
/// it.
#[test]
fn copilot_cli_thresholds_fire_once_on_the_crossing_reply() {
    agents::thresholds(
        copilot("copilot-thresholds").latency(Duration::from_millis(500)),
        copilot_compacts_at(COPILOT_WINDOW),
    );
}

/// A real automatic compaction: the second reply reports 18,000 of a
/// 20,000-token limit, past the 16,000 point, so Copilot CLI compacts in the
/// background while the turn goes on. The state and checkpoint are saved
/// (preCompact), the resume prompt reaches the model once in every request
/// from the first that follows a hook after the log shows the compaction
/// done (which of the turn's last requests that is depends on when the
/// summary lands; the next prompt at the latest), and hookd finds that it
/// arrived.
#[test]
fn copilot_cli_auto_compaction_saves_checkpoints_and_resumes_once() {
    let mut replies = compacting_turn();
    replies.push(Reply::text("t2.text", 3_800, "Carrying on."));
    replies.push(Reply::text("t3.text", 4_000, "Still carrying on."));
    // The model thinks as a real one does, so that the log is on disk when
    // preCompact reads it (see the module's comment).
    let Some(mut agent) = copilot("copilot-compaction")
        .copilot_window(SMALL_WINDOW)
        .latency(Duration::from_millis(400))
        .replies(replies)
        .summary("E2E_SUMMARY of the work so far", 2_000)
        .start()
    else {
        return;
    };
    let head = agent.git(&["rev-parse", "HEAD"]);
    agent.run("TURN 1: add steps 1 to 4 to notes.txt");
    agent.run("TURN 2: carry on");
    // A prompt after the one that carried it at the latest: a hook that checks.
    agent.run("TURN 3: carry on");
    let completes = agent.copilot_events_of("session.compaction_complete");
    assert!(
        completes.len() == 1 && completes[0]["data"]["success"] == true,
        "Copilot CLI compacted once: {completes:?}"
    );
    let log = agent.log();
    eprintln!("copilot-compaction: requests {:?}", log.labels());
    agents::compaction_handled(
        &agent,
        &head,
        "notes.txt",
        &["t1.tool4", "t1.text", "t2.text"],
    );
    agents::capture_read_the_session_file(
        &agent,
        "TURN 1: add steps 1 to 4 to notes.txt",
        &[],
        "notes.txt",
    );
    // The state file above may be the threshold save's, made after it.
    let captures = agent.pipeline_runs(Some("pre-compact auto"));
    assert!(
        captures.len() == 1 && captures[0]["ok"] == true,
        "the compaction's own capture read the log: {captures:?}"
    );
    arrived_once(&agent);
}

/// `copilot -p /compact --continue`: Copilot CLI compacts the session at
/// once (preCompact with the `manual` trigger, no prompt hook in that run);
/// hookd saves, and the resume prompt reaches the model with the next
/// prompt, once, and is found arrived.
#[test]
fn copilot_cli_manual_compaction_saves_and_resumes_with_the_next_prompt() {
    let mut replies = short_turn(1, 6_000).to_vec();
    replies.push(Reply::text("t2.text", 3_600, "Carrying on."));
    replies.push(Reply::text("t3.text", 3_800, "Still carrying on."));
    let Some(mut agent) = copilot("copilot-manual-compaction")
        .replies(replies)
        .summary("E2E_SUMMARY of the work so far", 2_000)
        .start()
    else {
        return;
    };
    let head = agent.git(&["rev-parse", "HEAD"]);
    agent.run("TURN 1: add step 1 to notes.txt");
    let compact = agent.run("/compact");
    assert!(
        compact.stdout.contains("Compacted conversation history"),
        "{}",
        compact.stdout
    );
    agent.run("TURN 2: carry on");
    agent.run("TURN 3: carry on");
    let starts = agent.copilot_events_of("session.compaction_start");
    assert!(
        starts.len() == 1 && starts[0]["data"]["trigger"] == "manual",
        "one manual compaction: {starts:?}"
    );
    let pipelines = agents::compaction_pipelines(&agent);
    eprintln!("copilot-manual-compaction: pipeline runs {pipelines:?}");
    agents::compaction_handled(&agent, &head, "notes.txt", &["t2.text"]);
    arrived_once(&agent);
}

/// One arrival check, which found the resume prompt arrived, and a request
/// to the model that bears it out.
fn arrived_once(agent: &Agent) {
    let checked = wait_until(SETTLE, || !agent.events("resume_arrival").is_empty());
    let arrivals = agent.events("resume_arrival");
    eprintln!("{}: arrival checks {arrivals:?}", agent.name);
    assert!(
        checked,
        "{}: hookd checked that the resume prompt arrived\n{}",
        agent.name,
        agent.diagnostics()
    );
    assert_eq!(arrivals.len(), 1, "one arrival check: {arrivals:?}");
    assert_eq!(arrivals[0]["arrived"], true, "{arrivals:?}");
    assert_eq!(arrivals[0]["action"], "arrived", "{arrivals:?}");
    agents::arrivals_reached_the_model(agent);
    assert!(
        agent.log().first_containing(RESUME_MARKER).is_some(),
        "{}: the resume prompt reached the model",
        agent.name
    );
}

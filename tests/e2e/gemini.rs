//! Gemini CLI 0.61.0 end to end: `gemini -p` (and `--resume latest`) with
//! `-m gemini-2.5-flash` against the scripted Gemini API, hookd wired by
//! `hookctl install gemini-cli` into `~/.gemini/settings.json`.
//!
//! Gemini's own figures are in its chat file: each reply's `tokens.input`
//! (the `promptTokenCount` the API reported) and `model`. It compresses at
//! half the window (1,048,576 for gemini-2.5-flash), only at a prompt with a
//! finished one already in the history; PreCompress fires before every
//! model call whether it compresses or not, and no hook fires after a
//! compression: the resume prompt can only come with the next prompt.

use crate::agents;
use hookd_tests::e2e_agents::{
    Agent, AgentBuilder, Client, GEMINI_COMPRESSES_AT, GEMINI_MODEL, GEMINI_WINDOW,
};
use hookd_tests::mock_model::Reply;

fn gemini(name: &str) -> AgentBuilder {
    Agent::builder(Client::Gemini, name)
}

/// hookd's figure is the latest reply's `tokens.input`, its model the chat
/// file's, and its compaction point where Gemini compresses.
#[test]
fn gemini_context_figure_is_the_chat_files() {
    let Some(mut agent) = gemini("gemini-figure")
        .replies(vec![
            Reply::shell("r1.tool", 30_000, "echo 'step 1' >> notes.txt"),
            Reply::text("r1.text", 31_000, "Step 1 noted."),
        ])
        .start()
    else {
        return;
    };
    agent.run("TURN 1: add step 1 to notes.txt");
    let replies = agent.gemini_replies();
    let (input, cached, model) = replies.last().cloned().expect("a reply in the chat file");
    let used = input + cached;
    let id = agent.session_id().to_owned();
    let (session, ok) = agent.session_until(&id, |s| s["context"]["tokens_used"] == used);
    eprintln!(
        "gemini-figure: chat file tokens.input {input} (cached {cached}), model {model}; hookd {} {}",
        session["model"], session["context"]
    );
    assert!(ok, "hookd's figure is the chat file's {used}: {session}");
    assert_eq!(session["model"], model.as_str(), "{session}");
    assert_eq!(model, GEMINI_MODEL);
    assert_eq!(
        session["context"]["window_tokens"], GEMINI_WINDOW,
        "{session}"
    );
    assert_eq!(
        session["context"]["tokens_max"], GEMINI_COMPRESSES_AT,
        "{session}"
    );
}

#[test]
fn gemini_thresholds_fire_once_on_the_crossing_reply() {
    agents::thresholds(gemini("gemini-thresholds"), GEMINI_COMPRESSES_AT);
}

/// A real compression, forced the measured way: run 1 ordinary; run 2's
/// tool-call reply reports 600,000 prompt tokens (over half the window), so
/// Gemini compresses before its next model call and that reply reports
/// 2,100; run 3 is the first prompt after it, where the resume prompt
/// belongs; run 4 must not get it again.
#[test]
fn gemini_compression_saves_checkpoints_and_resumes_once() {
    let Some(mut agent) = gemini("gemini-compression")
        .replies(vec![
            Reply::shell("r1.tool", 5_000, "echo 'step 1' > notes.txt"),
            Reply::text("r1.text", 6_000, "Step 1 noted."),
            Reply::shell("r2.tool", 600_000, "echo 'step 2' >> notes.txt"),
            Reply::text("r2.text", 2_100, "Step 2 noted."),
            Reply::text("r3.text", 2_500, "Carrying on after the compression."),
            Reply::text("r4.text", 2_700, "Still carrying on."),
        ])
        .start()
    else {
        return;
    };
    let head = agent.git(&["rev-parse", "HEAD"]);
    agent.run("TURN 1: add step 1 to notes.txt");
    agent.run("TURN 2: add step 2 to notes.txt");
    agent.run("TURN 3: carry on");
    agent.run("TURN 4: carry on");
    let log = agent.log();
    let summary = log.of_kind("summary");
    assert!(
        !summary.is_empty() && log.answered_with("r2.text").n > summary[0].n,
        "Gemini compressed between r2.tool and r2.text: {:?}",
        log.labels()
    );
    agents::compaction_handled(&agent, &head, "notes.txt", &["r3.text"]);
    agents::capture_read_the_session_file(
        &agent,
        "TURN 1: add step 1 to notes.txt",
        &["TURN 2: add step 2 to notes.txt"],
        "notes.txt",
    );
}

/// PreCompress fires before every model call: an ordinary two-prompt session
/// (five model calls) must not run the pipeline.
#[test]
fn gemini_precompress_without_compression_runs_no_pipeline() {
    let Some(mut agent) = gemini("gemini-quiet")
        .replies(vec![
            Reply::shell("r1.tool", 5_000, "echo 'step 1' >> notes.txt"),
            Reply::shell("r1.tool2", 6_000, "echo 'step 1b' >> notes.txt"),
            Reply::text("r1.text", 7_000, "Step 1 noted."),
            Reply::shell("r2.tool", 8_000, "echo 'step 2' >> notes.txt"),
            Reply::text("r2.text", 9_000, "Step 2 noted."),
        ])
        .start()
    else {
        return;
    };
    agent.run("TURN 1: add step 1 to notes.txt");
    agent.run("TURN 2: add step 2 to notes.txt");
    assert!(
        agent.log().of_kind("summary").is_empty(),
        "no compression happened"
    );
    agents::no_pipeline(&agent);
}

#[test]
fn gemini_without_hookd_runs_as_without_hooks() {
    agents::fail_open(
        Client::Gemini,
        vec![
            Reply::shell("r1.tool", 10_000, "echo working > notes.txt"),
            Reply::text("r1.text", 11_000, "Answer: working."),
            Reply::text("r2.text", 12_000, "Answer: still working."),
        ],
        &["TURN 1: start working", "TURN 2: keep working"],
    );
}

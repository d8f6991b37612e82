//! Codex CLI 0.169.0 end to end: `codex exec` (and `codex exec resume`)
//! against the scripted Responses API, hookd wired by `hookctl install
//! codex` into `$CODEX_HOME/hooks.json`, run with
//! `--dangerously-bypass-hook-trust` (Codex silently skips hooks nobody has
//! trusted yet).
//!
//! Codex's own figures are in its rollout file: the context is the latest
//! `token_count`'s `last_token_usage.total_tokens`, the window its
//! `model_context_window`, and it compacts at `model_auto_compact_token_limit`
//! from config.toml. A compaction announces itself as PreCompact →
//! PostCompact → SessionStart(compact); after `codex exec resume` the same
//! run also sends SessionStart(resume).

use crate::agents::{self, short_turn};
use hookd_tests::e2e_agents::{Agent, AgentBuilder, Client};
use hookd_tests::mock_model::Reply;

/// The window every scenario configures.
const WINDOW: u64 = 200_000;

fn codex(name: &str) -> AgentBuilder {
    Agent::builder(Client::Codex, name)
}

/// hookd's figure and window are the rollout's.
#[test]
fn codex_context_figure_is_the_rollouts() {
    let Some(mut agent) = codex("codex-figure")
        .codex_limits(WINDOW, None)
        .replies(short_turn(1, 20_000).to_vec())
        .start()
    else {
        return;
    };
    agent.run("TURN 1: add step 1 to notes.txt");
    let counts = agent.codex_token_counts();
    let &(used, window) = counts.last().expect("a token_count in the rollout");
    let id = agent.session_id().to_owned();
    let (session, ok) = agent.session_until(&id, |s| s["context"]["tokens_used"] == used);
    eprintln!(
        "codex-figure: rollout total_tokens {used}, model_context_window {window:?}; hookd {}",
        session["context"]
    );
    assert!(ok, "hookd's figure is the rollout's {used}: {session}");
    assert_eq!(
        session["context"]["window_tokens"].as_u64(),
        window,
        "hookd's window is the rollout's model_context_window: {session}"
    );
}

/// With `model_auto_compact_token_limit` set, the thresholds' denominator is
/// that limit, where Codex compacts.
#[test]
fn codex_compaction_point_is_model_auto_compact_token_limit() {
    let Some(mut agent) = codex("codex-compaction-point")
        .codex_limits(WINDOW, Some(150_000))
        .replies(short_turn(1, 20_000).to_vec())
        .start()
    else {
        return;
    };
    agent.run("TURN 1: add step 1 to notes.txt");
    let id = agent.session_id().to_owned();
    let (session, ok) = agent.session_until(&id, |s| s["context"]["tokens_max"] == 150_000);
    eprintln!(
        "codex-compaction-point: limit 150000; hookd {}",
        session["context"]
    );
    assert!(ok, "hookd's compaction point is the limit: {session}");
}

/// The climb is measured against a 100,000 limit: with the compaction point
/// at 90% of the window instead, no level is reached.
#[test]
fn codex_thresholds_fire_once_on_the_crossing_reply() {
    agents::thresholds(
        codex("codex-thresholds").codex_limits(WINDOW, Some(100_000)),
        100_000,
    );
}

/// Auto-compaction (the limit crossed by turn 1's answer; Codex compacts
/// before turn 2): state, checkpoint, and the resume prompt once in turn 2's
/// request and once in every later one.
#[test]
fn codex_auto_compaction_saves_checkpoints_and_resumes_once() {
    let Some(mut agent) = codex("codex-compaction")
        .codex_limits(WINDOW, Some(20_000))
        .replies(vec![
            Reply::shell("t1.tool", 6_000, "echo 'step 1' > notes.txt"),
            Reply::text("t1.text", 21_000, "Step 1 noted."),
            Reply::text("t2.text", 3_000, "Carrying on after the compaction."),
            Reply::text("t3.text", 3_500, "Still carrying on."),
        ])
        .start()
    else {
        return;
    };
    let head = agent.git(&["rev-parse", "HEAD"]);
    agent.run("TURN 1: add step 1 to notes.txt");
    agent.run("TURN 2: carry on");
    agent.run("TURN 3: carry on");
    agents::compaction_handled(&agent, &head, "notes.txt", &["t2.text"]);
    agents::capture_read_the_session_file(
        &agent,
        "TURN 1: add step 1 to notes.txt",
        &[],
        "notes.txt",
    );
}

/// Codex runs SessionEnd when `codex exec` finishes: hookd must hear of it
/// (wired by `hookctl install codex`) and mark the session ended.
#[test]
fn codex_session_end_reaches_hookd() {
    let Some(mut agent) = codex("codex-session-end")
        .codex_limits(WINDOW, None)
        .replies(short_turn(1, 10_000).to_vec())
        .start()
    else {
        return;
    };
    agent.run("TURN 1: add step 1 to notes.txt");
    let id = agent.session_id().to_owned();
    let (session, ok) = agent.session_until(&id, |s| s["ended"] == true);
    assert!(ok, "hookd marked the session ended: {session}");
    assert_eq!(session["last_event"], "session-end", "{session}");
}

/// Several turns below every level: no pipeline, no checkpoint.
#[test]
fn codex_no_pipeline_without_compaction() {
    let mut replies = short_turn(1, 10_000).to_vec();
    replies.extend(short_turn(2, 15_000));
    let Some(mut agent) = codex("codex-quiet")
        .codex_limits(WINDOW, None)
        .replies(replies)
        .start()
    else {
        return;
    };
    agent.run("TURN 1: add step 1 to notes.txt");
    agent.run("TURN 2: add step 2 to notes.txt");
    agents::no_pipeline(&agent);
}

#[test]
fn codex_without_hookd_runs_as_without_hooks() {
    agents::fail_open_two_turns(Client::Codex);
}

//! Where Gemini CLI 0.61.0 compresses, in the configurations people run:
//! a model name its table does not list (it then takes a 1,048,576-token
//! window), a gemma-4 model (256,000), a project `.gemini/settings.json`
//! moving `model.compressionThreshold` (and not moving it in a folder
//! Gemini CLI does not trust), a long session held just under the point,
//! where PreCompress fires before every model call and nothing compresses,
//! and one held past it by a compression that fails. Each checks the point hookd shows against the one Gemini CLI
//! compresses at, the levels fired and on which figure, the pipeline runs
//! and checkpoints, and what reached the model.

use hookd_tests::e2e_agents::{Agent, AgentBuilder, Client, RESUME_MARKER, SETTLE};
use hookd_tests::mock_model::Reply;
use hookd_tests::wait_until;
use serde_json::Value;

/// How every level's message to the model begins.
const LEVEL_WORDS: &str = "of the way to compaction";

fn gemini(name: &str) -> AgentBuilder {
    Agent::builder(Client::Gemini, name)
}

/// The levels fired so far, each with the figure it fired on.
fn levels(agent: &Agent) -> Vec<(f64, u64)> {
    agent
        .events("threshold")
        .iter()
        .map(|e| {
            (
                e["level"].as_f64().unwrap_or(-1.0),
                e["tokens_used"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

/// The triggers of the pipeline runs so far.
fn pipeline_triggers(agent: &Agent) -> Vec<String> {
    agent
        .pipeline_runs(None)
        .iter()
        .map(|e| e["trigger"].as_str().unwrap_or("").to_owned())
        .collect()
}

/// hookd's view of the session once its figure is `tokens`.
fn context_at(agent: &Agent, tokens: u64) -> Value {
    let id = agent.session_id().to_owned();
    let (session, ok) = agent.session_until(&id, |s| s["context"]["tokens_used"] == tokens);
    assert!(
        ok,
        "{}: hookd's figure is the chat file's {tokens}: {session}\n{}",
        agent.name,
        agent.diagnostics()
    );
    let context = session["context"].clone();
    // The figures for the closing note: the point hookd showed.
    eprintln!(
        "{}: hookd shows {} of {} (window {}): {}",
        agent.name,
        context["tokens_used"],
        context["tokens_max"],
        context["window_tokens"],
        context["basis"]
    );
    context
}

/// The project's own `.gemini/settings.json`, setting Gemini CLI's
/// compression threshold.
fn set_project_threshold(agent: &Agent, threshold: f64) {
    let settings = agent.project.join(".gemini");
    std::fs::create_dir_all(&settings).unwrap();
    std::fs::write(
        settings.join("settings.json"),
        format!(r#"{{"model": {{"compressionThreshold": {threshold}}}}}"#),
    )
    .unwrap();
}

/// Checkpoint commits under `refs/hookd/` (a checkpoint's parent is the
/// commit it was taken on, so the project's own history is left out).
fn checkpoint_commits(agent: &Agent) -> usize {
    agent
        .hookd_refs()
        .iter()
        .map(|r| {
            agent
                .git(&["rev-list", "--count", r, "^HEAD"])
                .trim()
                .parse::<usize>()
                .unwrap_or(0)
        })
        .sum()
}

/// The model the chat file says answered: the one Gemini CLI was asked for.
/// (A reply's tool calls are recorded before its figure and model.)
fn assert_model(agent: &Agent, model: &str) {
    let replies = agent.gemini_replies();
    let named: Vec<&str> = replies
        .iter()
        .map(|(_, _, m)| m.as_str())
        .filter(|m| !m.is_empty())
        .collect();
    assert!(
        !named.is_empty() && named.iter().all(|m| *m == model),
        "{}: every reply is {model}'s: {replies:?}",
        agent.name
    );
}

/// A model name Gemini CLI does not list gets its default window,
/// 1,048,576, so it compresses at 524,288. A session at 29% of that point
/// (152,000) is no warning, no save and no checkpoint.
#[test]
fn gemini_unknown_model_gets_gemini_clis_default_window() {
    let model = "my-local-model";
    let Some(mut agent) = gemini("gemini-unknown-model")
        .gemini_model(model)
        .replies(vec![
            Reply::shell("r1.tool", 60_000, "echo 'step 1' >> notes.txt"),
            Reply::shell("r1.tool2", 120_000, "echo 'step 2' >> notes.txt"),
            Reply::text("r1.text", 152_000, "Steps noted."),
            Reply::text("r2.text", 152_100, "Done."),
        ])
        .start()
    else {
        return;
    };
    agent.run("TURN 1: add two steps to notes.txt");
    agent.run("TURN 2: say that you are done");
    assert_model(&agent, model);
    let context = context_at(&agent, 152_100);
    assert_eq!(context["window_tokens"], 1_048_576, "{context}");
    assert_eq!(context["tokens_max"], 524_288, "{context}");
    assert!(
        context["basis"].as_str().unwrap_or("").contains(model),
        "the basis names the model: {context}"
    );
    wait_until(std::time::Duration::from_millis(1500), || {
        !levels(&agent).is_empty() || !agent.pipeline_runs(None).is_empty()
    });
    assert_eq!(levels(&agent), [], "{}", agent.diagnostics());
    assert_eq!(pipeline_triggers(&agent), Vec::<String>::new());
    assert_eq!(agent.hookd_refs(), Vec::<String>::new());
    assert!(
        agent.log().first_containing(LEVEL_WORDS).is_none(),
        "no level's words reached the model"
    );
}

/// gemma-4 models have a 256,000-token window in Gemini CLI's table: the
/// point is 128,000. At 77% of it (98,560) the 70% level fires, on that
/// reply's figure, and nothing above it; the 80% level fires at 80%.
#[test]
fn gemini_gemma_model_gets_its_own_window() {
    let model = "gemma-4-31b-it";
    let Some(mut agent) = gemini("gemini-gemma")
        .gemini_model(model)
        .replies(vec![
            Reply::shell("r1.tool", 40_000, "echo 'step 1' >> notes.txt"),
            Reply::shell("r1.tool2", 98_560, "echo 'step 2' >> notes.txt"),
            Reply::text("r1.text", 98_660, "Steps noted."),
            Reply::shell("r2.tool", 102_400, "echo 'step 3' >> notes.txt"),
            Reply::text("r2.text", 102_500, "Done."),
        ])
        .start()
    else {
        return;
    };
    agent.run("TURN 1: add two steps to notes.txt");
    assert_model(&agent, model);
    let context = context_at(&agent, 98_660);
    assert_eq!(context["window_tokens"], 256_000, "{context}");
    assert_eq!(context["tokens_max"], 128_000, "{context}");
    wait_until(SETTLE, || !levels(&agent).is_empty());
    assert_eq!(
        levels(&agent),
        [(0.70, 98_560)],
        "only the 70% level, on the reply at 77%\n{}",
        agent.diagnostics()
    );
    agent.run("TURN 2: add step 3 to notes.txt");
    wait_until(SETTLE, || levels(&agent).len() >= 2);
    assert_eq!(
        levels(&agent),
        [(0.70, 98_560), (0.80, 102_400)],
        "the 80% level at 80%\n{}",
        agent.diagnostics()
    );
    let log = agent.log();
    assert!(
        log.first_containing("Context at 90%").is_none()
            && log.first_containing("CRITICAL").is_none(),
        "no level above 80% reached the model"
    );
    assert!(
        log.first_containing("Context at 70%").is_some(),
        "the 70% level's words reached the model: {:?}",
        log.labels()
    );
    // The 80% level saves without a checkpoint; nothing else ran.
    wait_until(SETTLE, || !agent.pipeline_runs(None).is_empty());
    let triggers = pipeline_triggers(&agent);
    assert!(
        triggers.len() == 1 && triggers[0].starts_with("threshold"),
        "one save, the 80% level's: {triggers:?}"
    );
    assert_eq!(agent.hookd_refs(), Vec::<String>::new());
}

/// `model.compressionThreshold: 0.3` in the project's `.gemini/settings.json`
/// moves the point to 314,572 (0.3 × 1,048,576). A reply at 350,000 is past
/// it: the highest level crossed (95%) fires on that figure, the PreCompress before the next
/// model call saves with a checkpoint, Gemini compresses, and the resume
/// prompt reaches the model once, at the next prompt.
#[test]
fn gemini_project_compression_threshold_moves_the_point() {
    let Some(mut agent) = gemini("gemini-project-threshold")
        .replies(vec![
            Reply::shell("r1.tool", 5_000, "echo 'step 1' > notes.txt"),
            Reply::text("r1.text", 6_000, "Step 1 noted."),
            Reply::shell("r2.tool", 350_000, "echo 'step 2' >> notes.txt"),
            Reply::text("r2.text", 2_100, "Step 2 noted."),
            Reply::text("r3.text", 2_500, "Carrying on after the compression."),
        ])
        .start()
    else {
        return;
    };
    set_project_threshold(&agent, 0.3);
    agent.run("TURN 1: add step 1 to notes.txt");
    let context = context_at(&agent, 6_000);
    assert_eq!(context["tokens_max"], 314_572, "{context}");
    assert!(
        context["basis"]
            .as_str()
            .unwrap_or("")
            .contains(".gemini/settings.json"),
        "the basis names the project's file: {context}"
    );
    agent.run("TURN 2: add step 2 to notes.txt");
    agent.run("TURN 3: carry on");
    let log = agent.log();
    let summaries = log.of_kind("summary");
    assert!(
        !summaries.is_empty() && log.answered_with("r2.text").n > summaries[0].n,
        "Gemini compressed between r2.tool and r2.text: {:?}",
        log.labels()
    );
    let settled = wait_until(SETTLE, || {
        !agent.events("compaction").is_empty()
            && agent.pipeline_runs(Some("pre-compact")).len() == 1
    });
    let fired = levels(&agent);
    let triggers = pipeline_triggers(&agent);
    eprintln!(
        "{}: levels {fired:?}, pipeline runs {triggers:?}, refs {:?}",
        agent.name,
        agent.hookd_refs()
    );
    assert!(settled, "a save at PreCompress\n{}", agent.diagnostics());
    assert_eq!(
        fired,
        [(0.95, 350_000)],
        "the 95% level, on the reply past the point\n{}",
        agent.diagnostics()
    );
    assert_eq!(
        agent.pipeline_runs(Some("pre-compact")).len(),
        1,
        "{triggers:?}"
    );
    assert!(
        checkpoint_commits(&agent) >= 1,
        "the save before the compression has a checkpoint"
    );
    let resumed: Vec<(String, usize)> = log
        .requests
        .iter()
        .filter(|r| r.kind == "main")
        .map(|r| (r.label.clone(), r.count(RESUME_MARKER)))
        .collect();
    assert_eq!(
        resumed.iter().map(|r| r.1).sum::<usize>(),
        1,
        "the resume prompt reached the model once: {resumed:?}"
    );
    assert_eq!(
        log.first_containing(RESUME_MARKER)
            .map(|r| r.label.as_str()),
        Some("r3.text"),
        "{resumed:?}"
    );
}

/// PreCompress fires before every model call. A long session between 90%
/// and 100% of the point (471,860 to 524,287 tokens), over five prompts and
/// a dozen model calls, never compresses: the 90% and 95% levels fire once
/// each, on the replies that crossed them, and the only saves (and
/// checkpoints) are theirs; no PreCompress runs the pipeline.
#[test]
fn gemini_long_session_near_the_point_saves_only_at_its_levels() {
    let mut replies = Vec::new();
    let mut tokens = 480_000;
    for turn in 1..=5 {
        for call in 1..=2 {
            replies.push(Reply::shell(
                &format!("r{turn}.tool{call}"),
                tokens,
                &format!("echo 'turn {turn} step {call}' >> notes.txt"),
            ));
            tokens += 4_000;
        }
        replies.push(Reply::text(&format!("r{turn}.text"), tokens, "Noted."));
        tokens += 500;
    }
    assert!(tokens < 524_288, "the script stays under the point");
    let Some(mut agent) = gemini("gemini-near-the-point").replies(replies).start() else {
        return;
    };
    for turn in 1..=5 {
        agent.run(&format!("TURN {turn}: add two steps to notes.txt"));
    }
    let log = agent.log();
    assert!(log.of_kind("summary").is_empty(), "Gemini never compressed");
    let fired = levels(&agent);
    let triggers = pipeline_triggers(&agent);
    let refs = agent.hookd_refs();
    eprintln!(
        "{}: {} model calls; levels {fired:?}; pipeline runs {triggers:?}; refs {refs:?}",
        agent.name,
        log.of_kind("main").len()
    );
    assert_eq!(
        fired,
        [(0.90, 480_000), (0.95, 501_000)],
        "each level once, on its crossing reply\n{}",
        agent.diagnostics()
    );
    assert_eq!(
        triggers,
        ["threshold 0.90", "threshold 0.95"],
        "no PreCompress ran the pipeline"
    );
    let checkpoints = checkpoint_commits(&agent);
    eprintln!("{}: {checkpoints} checkpoint commits", agent.name);
    assert!(
        checkpoints <= 2,
        "checkpoints only from the levels' saves: {checkpoints} in {refs:?}"
    );
    assert!(agent.events("compaction").is_empty());
    assert!(log.first_containing(RESUME_MARKER).is_none());
    // Each level's words reach the model in the request after the reply
    // that crossed it (a resumed run's history repeats earlier hook context).
    for (words, crossing, next) in [
        ("Context at 90%", "r1.tool1", "r1.tool2"),
        ("CRITICAL: Context at 95%", "r3.tool2", "r3.text"),
    ] {
        let first = log.first_containing(words);
        assert_eq!(
            first.map(|r| (r.label.as_str(), r.count(words))),
            Some((next, 1)),
            "{words:?} once, after {crossing}"
        );
    }
}

/// A project's `.gemini/settings.json` in a folder Gemini CLI does not
/// trust (`--skip-trust` runs it there headless, with the project's
/// settings left out) does not move the point: Gemini CLI compresses at
/// 524,288, not at the file's 0.3 (314,572). At 350,000 (67%) no level
/// fires, no PreCompress saves, and nothing compresses.
#[test]
fn gemini_untrusted_project_threshold_does_not_move_the_point() {
    let Some(mut agent) = gemini("gemini-untrusted-project")
        .client_args(&["--skip-trust"])
        .replies(vec![
            Reply::shell("r1.tool", 5_000, "echo 'step 1' > notes.txt"),
            Reply::text("r1.text", 6_000, "Step 1 noted."),
            Reply::shell("r2.tool", 350_000, "echo 'step 2' >> notes.txt"),
            Reply::text("r2.text", 350_500, "Step 2 noted."),
            Reply::text("r3.text", 351_000, "Carrying on."),
        ])
        .start()
    else {
        return;
    };
    set_project_threshold(&agent, 0.3);
    agent.run("TURN 1: add step 1 to notes.txt");
    agent.run("TURN 2: add step 2 to notes.txt");
    agent.run("TURN 3: carry on");
    let context = context_at(&agent, 351_000);
    let log = agent.log();
    assert!(
        log.of_kind("summary").is_empty(),
        "Gemini CLI did not compress at 350,000: {:?}",
        log.labels()
    );
    assert_eq!(context["tokens_max"], 524_288, "{context}");
    assert!(
        context["basis"]
            .as_str()
            .unwrap_or("")
            .contains("does not trust"),
        "the basis says why the project's file is left out: {context}"
    );
    wait_until(std::time::Duration::from_millis(1500), || {
        !levels(&agent).is_empty() || !agent.pipeline_runs(None).is_empty()
    });
    assert_eq!(levels(&agent), [], "{}", agent.diagnostics());
    assert_eq!(pipeline_triggers(&agent), Vec::<String>::new());
    assert_eq!(agent.hookd_refs(), Vec::<String>::new());
    assert!(log.first_containing(LEVEL_WORDS).is_none());
}

/// Past the point, a compression that fails leaves the session there:
/// with `model.compressionThreshold: 0.01` (10,486 tokens) and a summary
/// larger than what it replaces, Gemini CLI's attempt inflates the count,
/// so it keeps the history and stops summarising for the rest of the run
/// (it truncates old tool output instead), while PreCompress still fires
/// before every model call. The pipeline runs once for the epoch (and its
/// checkpoint with it); every later PreCompress is a lookup.
#[test]
fn gemini_failed_compression_past_the_point_saves_once() {
    // About 25,000 tokens by Gemini CLI's estimate: more than the 12,000 it replaces.
    let summary = "the state of the work, at length. ".repeat(3_000);
    let Some(mut agent) = gemini("gemini-failed-compression")
        .summary(&summary, 25_000)
        .replies(vec![
            Reply::shell("r1.tool", 3_000, "echo 'step 1' > notes.txt"),
            Reply::text("r1.text", 4_000, "Step 1 noted."),
            Reply::shell("r2.tool1", 12_000, "echo 'step 2' >> notes.txt"),
            Reply::shell("r2.tool2", 12_500, "echo 'step 3' >> notes.txt"),
            Reply::shell("r2.tool3", 13_000, "echo 'step 4' >> notes.txt"),
            Reply::text("r2.text", 13_500, "Steps noted."),
            Reply::shell("r3.tool", 14_000, "echo 'step 5' >> notes.txt"),
            Reply::text("r3.text", 14_500, "Done."),
        ])
        .start()
    else {
        return;
    };
    set_project_threshold(&agent, 0.01);
    agent.run("TURN 1: add step 1 to notes.txt");
    agent.run("TURN 2: add steps 2 to 4 to notes.txt");
    agent.run("TURN 3: add step 5 to notes.txt");
    let log = agent.log();
    let context = context_at(&agent, 14_500);
    let fired = levels(&agent);
    let triggers = pipeline_triggers(&agent);
    let checkpoints = checkpoint_commits(&agent);
    eprintln!(
        "{}: hookd shows {} of {}; {} model calls, {} summary requests; levels {fired:?}; \
         pipeline runs {triggers:?}; {checkpoints} checkpoint commits in {:?}",
        agent.name,
        context["tokens_used"],
        context["tokens_max"],
        log.of_kind("main").len(),
        log.of_kind("summary").len(),
        agent.hookd_refs()
    );
    assert_eq!(context["tokens_max"], 10_485, "{context}");
    assert!(
        !log.of_kind("summary").is_empty(),
        "Gemini CLI tried to compress: {:?}",
        log.labels()
    );
    assert!(
        agent.events("compaction").is_empty(),
        "nothing compressed: the input never fell\n{}",
        agent.diagnostics()
    );
    assert_eq!(
        agent.pipeline_runs(Some("pre-compact")).len(),
        1,
        "one PreCompress save for the epoch: {triggers:?}\n{}",
        agent.diagnostics()
    );
    assert_eq!(fired, [(0.95, 12_000)], "{}", agent.diagnostics());
    assert!(
        triggers.len() == 2,
        "the 95% level's save and one PreCompress save: {triggers:?}"
    );
    assert!(
        checkpoints <= 2,
        "checkpoints only from those saves: {checkpoints}"
    );
    assert!(log.first_containing(RESUME_MARKER).is_none());
}

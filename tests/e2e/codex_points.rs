//! Where Codex CLI 0.169.0 compacts, as Codex itself decides it, and its
//! compactions one by one: a limit given on the command line (`-c
//! model_auto_compact_token_limit=N`, written in no file hookd reads), and
//! two compactions a few seconds apart.

use crate::agents;
use hookd_tests::e2e_agents::{Agent, AgentBuilder, Client, RESUME_MARKER, SETTLE};
use hookd_tests::mock_model::Reply;
use hookd_tests::wait_until;
use serde_json::Value;

/// The window every scenario configures; Codex reports 95% of it.
const WINDOW: u64 = 200_000;
/// The limit the command-line scenarios give Codex.
const LIMIT: u64 = 100_000;
const LIMIT_ARGS: [&str; 2] = ["-c", "model_auto_compact_token_limit=100000"];
const CHECKPOINTS: &str = "refs/hookd/checkpoints/main";

fn codex(name: &str) -> AgentBuilder {
    Agent::builder(Client::Codex, name)
}

/// Commits on hookd's checkpoint ref (0 when there is none).
fn checkpoints(agent: &Agent) -> usize {
    if !agent.hookd_refs().iter().any(|r| r == CHECKPOINTS) {
        return 0;
    }
    agent
        .git(&["rev-list", "--count", &format!("HEAD..{CHECKPOINTS}")])
        .trim()
        .parse()
        .unwrap()
}

fn levels_and_figures(agent: &Agent) -> Vec<(f64, u64)> {
    agent
        .events("threshold")
        .iter()
        .map(|e| {
            (
                e["level"].as_f64().unwrap(),
                e["tokens_used"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The limit exists only in codex's arguments: hookd reads it from the
/// process that ran the hook, shows it as the point, and the levels climb
/// to it (against Codex's default, 90% of the 190,000 it reports, the
/// climb to 96,000 would reach none).
#[test]
fn codex_command_line_limit_is_the_point() {
    climb_to_the_limit(
        codex("codex-cli-limit").client_args(&LIMIT_ARGS),
        |_| {},
        "on codex's command line",
    );
}

/// A trusted project's `.codex/config.toml` outranks the user's.
#[test]
fn codex_project_config_limit_is_the_point() {
    climb_to_the_limit(
        codex("codex-project-limit"),
        |agent| {
            let dir = agent.project.join(".codex");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(
                dir.join("config.toml"),
                format!("model_auto_compact_token_limit = {LIMIT}\n"),
            )
            .unwrap();
        },
        ".codex/config.toml",
    );
}

/// `--profile P` reads `$CODEX_HOME/P.config.toml`.
#[test]
fn codex_profile_limit_is_the_point() {
    climb_to_the_limit(
        codex("codex-profile-limit").client_args(&["--profile", "tight"]),
        |agent| {
            let home = agent.sandbox().home().join(".codex");
            std::fs::write(
                home.join("tight.config.toml"),
                format!("model_auto_compact_token_limit = {LIMIT}\n"),
            )
            .unwrap();
        },
        "tight.config.toml",
    );
}

/// The climb to 96% of [`LIMIT`], set where `setup` puts it: hookd shows
/// that point (with `basis` in its basis), each level fires once on the
/// reply that crossed it, the saves run (no compaction), and the words
/// reach the model.
fn climb_to_the_limit(builder: AgentBuilder, setup: impl Fn(&Agent), basis: &str) {
    let Some(mut agent) = builder
        .codex_limits(WINDOW, None)
        .replies(agents::climb_script(LIMIT))
        .start()
    else {
        return;
    };
    setup(&agent);
    agent.run("CLIMB: add five steps to notes.txt, one command each");
    agent.run("WRAP UP: say that you are done");
    let id = agent.session_id().to_owned();
    let (session, ok) = agent.session_until(&id, |s| s["context"]["tokens_max"] == LIMIT);
    eprintln!("{}: hookd {}", agent.name, session["context"]);
    assert!(ok, "hookd's point is {LIMIT}: {session}");
    let shown = session["context"]["basis"].as_str().unwrap_or("");
    assert!(shown.contains(basis), "{shown}");

    let expected = [
        (0.70, 72_000),
        (0.80, 83_000),
        (0.90, 92_000),
        (0.95, 96_000),
    ];
    let settled = wait_until(SETTLE, || {
        agent.events("threshold").len() >= expected.len() && agent.pipeline_runs(None).len() >= 3
    });
    let fired = levels_and_figures(&agent);
    let runs = agent.pipeline_runs(None);
    eprintln!(
        "{}: fired {fired:?}, pipeline runs {:?}, checkpoints {}",
        agent.name,
        runs.iter().map(|r| &r["trigger"]).collect::<Vec<_>>(),
        checkpoints(&agent)
    );
    assert!(settled, "{}", agent.diagnostics());
    assert_eq!(
        fired, expected,
        "each level once, on the reply that crossed it"
    );
    // 80% and 90% save; 95% saves with a checkpoint; no compaction.
    assert_eq!(runs.len(), 3, "{runs:?}");
    assert!(
        runs.iter()
            .all(|r| r["trigger"].as_str().unwrap_or("").starts_with("threshold")),
        "{runs:?}"
    );
    assert_eq!(checkpoints(&agent), 1);
    assert!(agent.events("compaction").is_empty());
    let log = agent.log();
    assert!(log.of_kind("summary").is_empty(), "Codex did not compact");
    assert!(log.first_containing(RESUME_MARKER).is_none());
    let critical = "CRITICAL: Context at 95% of the way to compaction.";
    assert!(
        log.first_containing(critical).is_some(),
        "the 95% words reached the model: {:?}",
        log.labels()
    );
}

/// The climb's words reach the model once each, in the first request that
/// can carry them, against the command line's limit.
#[test]
fn codex_thresholds_fire_against_a_command_line_limit() {
    agents::thresholds(
        codex("codex-cli-thresholds")
            .codex_limits(WINDOW, None)
            .client_args(&LIMIT_ARGS),
        LIMIT,
    );
}

/// Two compactions a few seconds apart, the second due to a turn's last
/// reply: each is its own compaction (its own record, pipeline run and
/// checkpoint, its own resume prompt), and the level that last reply
/// crossed fires (with its save) before the compaction that follows it.
#[test]
fn codex_two_compactions_in_quick_succession() {
    let limit = 20_000;
    let Some(mut agent) = codex("codex-two-compactions")
        .codex_limits(WINDOW, Some(limit))
        .replies(vec![
            Reply::shell("t1.tool", 6_000, "echo 'step 1' > notes.txt"),
            Reply::text("t1.text", 21_000, "Step 1 noted."),
            Reply::shell("t2.tool", 8_000, "echo 'step 2' >> notes.txt"),
            Reply::text("t2.text", 20_500, "Step 2 noted."),
            Reply::text("t3.text", 3_000, "Carrying on after both compactions."),
        ])
        .start()
    else {
        return;
    };
    let started = std::time::Instant::now();
    agent.run("TURN 1: add step 1 to notes.txt");
    agent.run("TURN 2: add step 2 to notes.txt");
    agent.run("TURN 3: carry on");
    let elapsed = started.elapsed();
    let settled = wait_until(SETTLE, || {
        agent.events("compaction").len() >= 2 && agents::compaction_pipelines(&agent).len() >= 2
    });
    let log = agent.log();
    let compactions = agent.events("compaction");
    let fired = levels_and_figures(&agent);
    let runs: Vec<Value> = agent.pipeline_runs(None);
    let triggers: Vec<&str> = runs
        .iter()
        .map(|r| r["trigger"].as_str().unwrap_or(""))
        .collect();
    eprintln!(
        "codex-two-compactions: 3 runs in {:.1} s; requests {:?}; compactions {compactions:?}; \
         fired {fired:?}; pipeline runs {triggers:?}; checkpoints {}",
        elapsed.as_secs_f64(),
        log.labels(),
        checkpoints(&agent)
    );
    assert_eq!(log.of_kind("summary").len(), 2, "Codex compacted twice");
    assert!(settled, "{}", agent.diagnostics());
    assert_eq!(compactions.len(), 2, "one record per compaction");
    assert_ne!(compactions[0]["epoch"], compactions[1]["epoch"]);
    // Each record says the context Codex compacted (its point was reached
    // there), not the figure its summarizer's own reply wrote after it.
    let compacted_at: Vec<Option<u64>> = compactions
        .iter()
        .map(|c| c["pre_tokens"].as_u64())
        .collect();
    eprintln!("codex-two-compactions: point {limit}, Codex compacted at {compacted_at:?}");
    assert_eq!(compacted_at, [Some(21_000), Some(20_500)]);
    // 21,000 and then 20,500 each cross 95% of the 20,000 limit in their
    // own epoch; neither is lost to the compaction that follows it.
    assert_eq!(fired, [(0.95, 21_000), (0.95, 20_500)], "{fired:?}");
    let all: Vec<Value> = hookd_tests::workflow_events(&agent.project);
    let position = |pred: &dyn Fn(&Value) -> bool| all.iter().position(pred);
    let second_level = position(&|e| e["kind"] == "threshold" && e["tokens_used"] == 20_500);
    let second_compaction =
        position(&|e| e["kind"] == "compaction" && e["epoch"] == compactions[1]["epoch"]);
    assert!(
        second_level < second_compaction,
        "the level fired before the compaction that followed it"
    );
    assert_eq!(
        triggers
            .iter()
            .filter(|t| t.starts_with("threshold"))
            .count(),
        2,
        "{triggers:?}"
    );
    assert_eq!(
        agents::compaction_pipelines(&agent).len(),
        2,
        "{triggers:?}"
    );
    assert_eq!(runs.len(), 4, "{triggers:?}");
    let checkpoint_steps = agent
        .events("pipeline")
        .into_iter()
        .filter(|e| e["step"] == "checkpoint" && e["ok"] == true)
        .count();
    assert_eq!(checkpoint_steps, 4, "each run above checkpointed");
    // A checkpoint of an unchanged tree is the one before: one commit per
    // state of notes.txt.
    assert_eq!(checkpoints(&agent), 2);
    // The resume prompt: never before the first compaction, then once in
    // every request after each.
    let first_summary = log.of_kind("summary")[0].n;
    for r in log.of_kind("main") {
        let expected = usize::from(r.n > first_summary);
        assert_eq!(r.count(RESUME_MARKER), expected, "{}", r.label);
    }
}

//! What the Codex CLI and Gemini CLI scenarios check alike: the threshold
//! climb, the compaction's pipeline, checkpoint and resume prompt, no
//! pipeline without a compaction, and a client unaffected by an absent
//! hookd. `codex.rs` and `gemini.rs` set each client up and call these.

use hookd_tests::e2e_agents::{
    Agent, AgentBuilder, AgentRun, Client, RESUME_MARKER, SETTLE, Wiring,
};
use hookd_tests::mock_model::{ModelLog, Reply};
use hookd_tests::wait_until;
use serde_json::Value;

/// Each step of the climb as a percentage of the compaction point, and the
/// level it crosses with the start of that level's message (Claude Code's
/// scenario takes a turn per step, the others one turn for all).
pub const CLIMB: [(u64, Option<(f64, &str)>); 5] = [
    (50, None),
    (72, Some((0.70, "Context at 70% of the way to compaction."))),
    (83, Some((0.80, "Context at 80% of the way to compaction."))),
    (92, Some((0.90, "Context at 90% of the way to compaction."))),
    (
        96,
        Some((0.95, "CRITICAL: Context at 95% of the way to compaction.")),
    ),
];

/// One tool call and an answer, well under any compaction point.
pub fn short_turn(turn: u32, tokens: u64) -> [Reply; 2] {
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

/// One prompt, five shell calls whose replies report the climb, then a
/// closing text 100 tokens later; a second prompt that only gets an answer.
pub fn climb_script(compacts_at: u64) -> Vec<Reply> {
    let mut replies: Vec<Reply> = CLIMB
        .iter()
        .map(|(percent, _)| {
            Reply::shell(
                &format!("at{percent}"),
                compacts_at * percent / 100,
                &format!("echo 'step at {percent}%' >> notes.txt"),
            )
        })
        .collect();
    let last = compacts_at * CLIMB[CLIMB.len() - 1].0 / 100;
    replies.push(Reply::text("closing", last + 100, "All steps noted."));
    replies.push(Reply::text("wrap-up", last + 200, "Done."));
    replies
}

/// The threshold scenario: every level fires once, on the reply that crossed
/// it (its `tokens_used` is that reply's figure), and its message reaches the
/// model once: first in the request that follows that reply's tool call, or
/// (hooks never wait for the client to write the reply) the one after.
/// The second prompt gives the last level a hook that can carry it.
pub fn thresholds(builder: AgentBuilder, compacts_at: u64) {
    thresholds_counted(builder, compacts_at, |prompt_tokens| prompt_tokens);
}

/// [`thresholds`] for a client whose figure for a reply is not the prompt
/// tokens the mock reports but `counted` of them (OpenCode adds the reply's
/// own tokens).
pub fn thresholds_counted(builder: AgentBuilder, compacts_at: u64, counted: fn(u64) -> u64) {
    let script = climb_script(compacts_at);
    let Some(mut agent) = builder.replies(script.clone()).start() else {
        return;
    };
    let run = agent.run("CLIMB: add five steps to notes.txt, one command each");
    agent.run("WRAP UP: say that you are done");
    let expected: Vec<f64> = CLIMB.iter().filter_map(|c| Some(c.1?.0)).collect();
    let settled = wait_until(SETTLE, || agent.events("threshold").len() >= expected.len());
    let fired = agent.events("threshold");
    let levels: Vec<f64> = fired.iter().filter_map(|e| e["level"].as_f64()).collect();
    let figures: Vec<u64> = fired
        .iter()
        .filter_map(|e| e["tokens_used"].as_u64())
        .collect();
    eprintln!(
        "{}: thresholds fired {levels:?} at {figures:?} (run {:.2} s)",
        agent.name,
        run.elapsed.as_secs_f64()
    );
    assert!(
        settled && levels == expected,
        "{}: levels fired {levels:?}, expected {expected:?}\n{}",
        agent.name,
        agent.diagnostics()
    );
    let log = agent.log();
    for (i, (percent, crossing)) in CLIMB.iter().enumerate() {
        let Some((level, message)) = crossing else {
            continue;
        };
        let event = fired
            .iter()
            .find(|e| e["level"].as_f64() == Some(*level))
            .unwrap();
        assert_eq!(
            event["tokens_used"].as_u64(),
            Some(counted(compacts_at * percent / 100)),
            "{}: {level} fired on the reply that crossed it: {event}",
            agent.name
        );
        let carriers = [&script[i + 1].label, &script[i + 2].label];
        let first = log.first_containing(message).unwrap_or_else(|| {
            panic!(
                "{}: {message:?} never reached the model\n{}",
                agent.name,
                agent.diagnostics()
            )
        });
        assert!(
            carriers.contains(&&first.label),
            "{}: {message:?} first reaches the model in {}, not right after the tool call at \
             {percent}% or the one after ({carriers:?})",
            agent.name,
            first.label
        );
        // Once: counted in the last request of the run that first carried
        // it (Gemini CLI repeats a resumed session's tool results, and the
        // words attached to them, in its history).
        let last = if first.label == "wrap-up" {
            "wrap-up"
        } else {
            "closing"
        };
        assert_eq!(
            log.answered_with(last).count(message),
            1,
            "{}: {message:?} reached the model once",
            agent.name
        );
    }
    assert!(
        log.first_containing(RESUME_MARKER).is_none(),
        "{}: no resume prompt without a compaction",
        agent.name
    );
}

/// Pipeline runs started by a compaction (not by a threshold).
pub fn compaction_pipelines(agent: &Agent) -> Vec<Value> {
    let mut runs = agent.pipeline_runs(Some("pre-compact"));
    runs.extend(agent.pipeline_runs(Some("unannounced")));
    runs
}

/// After one compaction: one compaction event, one pipeline run for it, the
/// state captured, a checkpoint on `refs/hookd/checkpoints/main` holding
/// `untracked` (a file the agent wrote), the user's HEAD untouched; and the
/// resume prompt first in the request answered with one of `first_after`
/// (more than one where the client lets a request go before the hook that
/// carries the prompt has answered), then once in every later request and
/// never before the compaction.
pub fn compaction_handled(agent: &Agent, head_before: &str, untracked: &str, first_after: &[&str]) {
    check_compaction(agent, head_before, untracked, first_after, true);
}

/// [`compaction_handled`] for a client that gives the resume prompt to one
/// request only (OpenCode: a system message, which it does not keep): in
/// all the requests, the marker once.
pub fn compaction_handled_in_one_request(
    agent: &Agent,
    head_before: &str,
    untracked: &str,
    first_after: &[&str],
) {
    check_compaction(agent, head_before, untracked, first_after, false);
}

fn check_compaction(
    agent: &Agent,
    head_before: &str,
    untracked: &str,
    first_after: &[&str],
    stays: bool,
) {
    let settled = wait_until(SETTLE, || {
        !agent.events("compaction").is_empty() && !compaction_pipelines(agent).is_empty()
    });
    let log = agent.log();
    let summaries = log.of_kind("summary");
    let injections: Vec<(String, usize)> = log
        .requests
        .iter()
        .filter(|r| r.kind == "main")
        .map(|r| (r.label.clone(), r.count(RESUME_MARKER)))
        .collect();
    eprintln!(
        "{}: summary requests {}, compaction events {}, pipeline runs {} ({} for the compaction), \
         refs {:?}, resume prompt per request {injections:?}",
        agent.name,
        summaries.len(),
        agent.events("compaction").len(),
        agent.pipeline_runs(None).len(),
        compaction_pipelines(agent).len(),
        agent.hookd_refs(),
    );
    assert!(
        !summaries.is_empty(),
        "{}: the client compacted: {:?}",
        agent.name,
        log.labels()
    );
    assert!(
        settled,
        "{}: hookd saw the compaction and ran the pipeline\n{}",
        agent.name,
        agent.diagnostics()
    );
    assert_eq!(
        agent.events("compaction").len(),
        1,
        "{}: one compaction, one event",
        agent.name
    );
    assert_eq!(
        compaction_pipelines(agent).len(),
        1,
        "{}: one pipeline run for the compaction: {:?}",
        agent.name,
        agent.pipeline_runs(None)
    );
    assert!(
        agent.project.join(".workflow/context_state.json").is_file(),
        "{}: the state was captured",
        agent.name
    );
    let reference = "refs/hookd/checkpoints/main";
    assert!(
        agent.hookd_refs().iter().any(|r| r == reference),
        "{}: a checkpoint on {reference}: {:?}",
        agent.name,
        agent.hookd_refs()
    );
    let files = agent.git(&["ls-tree", "-r", "--name-only", reference]);
    assert!(
        files.lines().any(|f| f == untracked),
        "{}: {untracked} in the checkpoint: {files}",
        agent.name
    );
    assert_eq!(
        agent.git(&["rev-parse", "HEAD"]),
        head_before,
        "HEAD untouched"
    );

    let first_summary = summaries[0].n;
    for r in log.requests.iter().filter(|r| r.n < first_summary) {
        assert_eq!(
            r.count(RESUME_MARKER),
            0,
            "{}: no resume prompt before the compaction ({})",
            agent.name,
            r.label
        );
    }
    let first = log.first_containing(RESUME_MARKER).unwrap_or_else(|| {
        panic!(
            "{}: the resume prompt never reached the model: {injections:?}\n{}",
            agent.name,
            agent.diagnostics()
        )
    });
    assert!(
        first_after.contains(&first.label.as_str()),
        "{}: the resume prompt reaches the model in the first request it can ({first_after:?}), \
         not in {}",
        agent.name,
        first.label
    );
    for r in log.main_after(first.n - 1) {
        let expected = usize::from(stays || r.n == first.n);
        assert_eq!(
            r.count(RESUME_MARKER),
            expected,
            "{}: the resume prompt reached the model once (request {})",
            agent.name,
            r.label
        );
    }
}

/// Every arrival check that found its resume prompt arrived is borne out by
/// the mock: a request to the model held that prompt's marker.
pub fn arrivals_reached_the_model(agent: &Agent) {
    let log = agent.log();
    let arrivals = agent.events("resume_arrival");
    for arrival in arrivals.iter().filter(|e| e["arrived"] == true) {
        let marker = arrival["marker"].as_str().unwrap_or_default();
        assert!(
            !marker.is_empty()
                && log
                    .requests
                    .iter()
                    .any(|r| r.kind == "main" && r.contains(marker)),
            "{}: hookd found the resume prompt {marker:?} arrived, but no request to the model \
             held it: {arrival}\n{}",
            agent.name,
            agent.diagnostics()
        );
    }
}

/// What the capture took from the client's own session file: the request
/// that set the work, the later ones that changed it, and the file the agent
/// wrote through its shell, with the session file listed as a source.
pub fn capture_read_the_session_file(agent: &Agent, objective: &str, later: &[&str], file: &str) {
    let state = hookd_tests::saved_state(&agent.project);
    eprintln!(
        "{}: captured objective {}, later requests {}, recent prompts {}, file {}, sources {}",
        agent.name,
        state["objective"],
        state["later_requests"],
        state["recent_prompts"],
        state["active_work"]["file_path"],
        state["sources"]
    );
    let sources = state["sources"].as_array().cloned().unwrap_or_default();
    assert!(
        sources.iter().any(|s| s == "transcript"),
        "{}: the session file is a source: {}",
        agent.name,
        state["sources"]
    );
    assert_eq!(state["objective"], objective, "{}", agent.name);
    assert_eq!(
        state["later_requests"],
        serde_json::json!(later),
        "{}",
        agent.name
    );
    assert_eq!(state["active_work"]["file_path"], file, "{}", agent.name);
}

/// Two short turns below every level (the summary never asked for), then
/// [`no_pipeline`]; the agent, for checks of the client's own, or `None`
/// when the scenario skips.
pub fn quiet_two_turns(builder: AgentBuilder) -> Option<Agent> {
    let mut replies = short_turn(1, 10_000).to_vec();
    replies.extend(short_turn(2, 15_000));
    let mut agent = builder.replies(replies).start()?;
    agent.run("TURN 1: add step 1 to notes.txt");
    agent.run("TURN 2: add step 2 to notes.txt");
    assert!(
        agent.log().of_kind("summary").is_empty(),
        "no compaction happened"
    );
    no_pipeline(&agent);
    Some(agent)
}

/// Nothing of hookd's compaction machinery ran: no pipeline, no compaction
/// event, no checkpoint ref, no resume prompt.
pub fn no_pipeline(agent: &Agent) {
    // The hooks did reach hookd: it follows the session.
    let (session, seen) = agent.session_until(agent.session_id(), |s| s.is_object());
    assert!(
        seen,
        "{}: hookd never saw the session: {session}",
        agent.name
    );
    // hookd acts after the hook has answered: give it the time it would take.
    wait_until(std::time::Duration::from_millis(1500), || {
        !agent.pipeline_runs(None).is_empty()
    });
    let runs = agent.pipeline_runs(None);
    eprintln!(
        "{}: pipeline runs {}, compaction events {}, refs {:?}",
        agent.name,
        runs.len(),
        agent.events("compaction").len(),
        agent.hookd_refs()
    );
    assert!(
        runs.is_empty(),
        "{}: the pipeline ran {} times without a compaction: {runs:?}",
        agent.name,
        runs.len()
    );
    assert!(agent.events("compaction").is_empty(), "{}", agent.name);
    assert!(agent.hookd_refs().is_empty(), "{}", agent.name);
    assert!(
        agent.log().first_containing(RESUME_MARKER).is_none(),
        "{}: no resume prompt",
        agent.name
    );
}

/// [`fail_open`] with the script most clients' scenarios use: a shell call
/// and its answer, then a second prompt's answer.
pub fn fail_open_two_turns(client: Client) {
    fail_open(
        client,
        vec![
            Reply::shell("t1.tool", 10_000, "echo working > notes.txt"),
            Reply::text("t1.text", 11_000, "Answer: working."),
            Reply::text("t2.text", 12_000, "Answer: still working."),
        ],
        &["TURN 1: start working", "TURN 2: keep working"],
    );
}

/// The same script with no hooks, then with hookd's hooks and no daemon, then
/// with a daemon that accepts and never answers: the same exit codes and
/// answers, nothing of ours in the output or the requests.
pub fn fail_open(client: Client, replies: Vec<Reply>, prompts: &[&str]) {
    let runs = |wiring: Wiring, name: &str| -> Option<(Vec<AgentRun>, ModelLog, bool)> {
        let mut agent = Agent::builder(client, name)
            .wiring(wiring)
            .replies(replies.clone())
            .start()?;
        let runs: Vec<AgentRun> = prompts.iter().map(|p| agent.run(p)).collect();
        let socket =
            agent.sandbox().socket().exists() || agent.sandbox().path().join("nowhere").exists();
        Some((runs, agent.log(), socket))
    };
    let Some((plain, plain_log, _)) = runs(Wiring::NoHooks, &format!("{client:?}-no-hooks")) else {
        return;
    };
    let (absent, absent_log, socket) =
        runs(Wiring::DaemonAbsent, &format!("{client:?}-hookd-absent")).unwrap();
    assert!(!socket, "no daemon was started");
    let (hung, hung_log, _) = runs(Wiring::DaemonHung, &format!("{client:?}-hookd-hung")).unwrap();
    for (wiring, runs, log) in [
        ("hookd absent", &absent, &absent_log),
        ("hookd hung", &hung, &hung_log),
    ] {
        for (p, a) in plain.iter().zip(runs) {
            eprintln!(
                "{client:?}: run {}: without hooks {:?} in {:.2} s; with hooks, {wiring} {:?} in {:.2} s",
                p.index,
                p.code,
                p.elapsed.as_secs_f64(),
                a.code,
                a.elapsed.as_secs_f64()
            );
            assert_eq!(
                a.code, p.code,
                "{wiring}, run {}: the same exit code",
                p.index
            );
            // Each hook gives up within the ordinary hook budget (a second)
            // when hookd does not greet it, and a run has a handful of
            // hooks: PreCompact's whole budget (30 s) waited on a hung
            // hookd would show here (SessionStart's 10 s alone might not).
            assert!(
                a.elapsed <= p.elapsed + std::time::Duration::from_secs(15),
                "{wiring}, run {}: {:.1} s against {:.1} s without hooks",
                p.index,
                a.elapsed.as_secs_f64(),
                p.elapsed.as_secs_f64()
            );
            assert_eq!(
                a.answer(),
                p.answer(),
                "{wiring}, run {}: the same answer",
                p.index
            );
            for (stream, text) in [("stdout", &a.stdout), ("stderr", &a.stderr)] {
                assert!(
                    !text.to_lowercase().contains("hookd"),
                    "{wiring}, run {}: nothing of ours on {stream}:\n{text}",
                    a.index
                );
            }
        }
        assert_eq!(
            log.labels(),
            plain_log.labels(),
            "{wiring}: the model was asked the same"
        );
        for r in &log.requests {
            assert!(
                !r.text().contains("hookd") && !r.contains("[hookd"),
                "{wiring}: nothing of ours reached the model ({}): {}",
                r.label,
                r.text()
            );
        }
    }
}

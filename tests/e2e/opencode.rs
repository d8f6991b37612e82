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

use crate::agents::{self, short_turn};
use hookd_tests::e2e_agents::{
    Agent, AgentBuilder, Client, MOCK_MODEL, OPENCODE_COMPACTS_AT, OPENCODE_CONTEXT, Wiring,
};
use hookd_tests::mock_model::Reply;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

/// A reply's prompt tokens past OpenCode's compaction point, inside its window.
const OVER_THE_POINT: u64 = 195_000;
const _: () = assert!(OPENCODE_COMPACTS_AT < OVER_THE_POINT && OVER_THE_POINT < OPENCODE_CONTEXT);

/// What the mock's usage adds to a reply's prompt tokens: its output tokens,
/// which OpenCode counts in `tokens.total`.
const REPLY_TOKENS: u64 = 30;

fn opencode(name: &str) -> AgentBuilder {
    Agent::builder(Client::OpenCode, name)
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
            Reply::shell("t1.tool", OVER_THE_POINT, "echo 'step 1' > notes.txt"),
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
        [OVER_THE_POINT, 2_000, 3_500].map(|t| t + REPLY_TOKENS),
        "the database's usage is the mock's, before and after"
    );
    assert_eq!(
        std::fs::read_to_string(agent.project.join("notes.txt")).unwrap(),
        "step 1\n"
    );
}

/// No plugin, the plugin with no hookd, the plugin with a hookd that never
/// answers: the same answers and exit codes, the model asked the same.
/// The hung case finishes only because the plugin gives up on its own.
#[test]
fn opencode_without_hookd_runs_as_without_the_plugin() {
    agents::fail_open_two_turns(Client::OpenCode);
}

/// Two turns below every level: no pipeline, no checkpoint.
#[test]
fn opencode_no_pipeline_without_compaction() {
    agents::quiet_two_turns(opencode("opencode-quiet"));
}

/// hookd's figure is the database's latest `tokens.total`, its window
/// OpenCode's `limit.context` and its compaction point OpenCode's usable
/// room.
#[test]
fn opencode_context_figure_is_the_databases() {
    let Some(mut agent) = opencode("opencode-figure")
        .replies(short_turn(1, 30_000).to_vec())
        .start()
    else {
        return;
    };
    agent.run("TURN 1: add step 1 to notes.txt");
    let totals = agent.opencode_totals();
    let used = *totals.last().expect("an assistant message with tokens");
    assert_eq!(
        used,
        31_000 + REPLY_TOKENS,
        "the database's figure is the mock's"
    );
    let id = agent.session_id().to_owned();
    let (session, ok) = agent.session_until(&id, |s| s["context"]["tokens_used"] == used);
    eprintln!(
        "opencode-figure: database tokens.total {totals:?}; hookd {} {}",
        session["harness"], session["context"]
    );
    assert!(ok, "hookd's figure is the database's {used}: {session}");
    assert_eq!(session["harness"], "opencode", "{session}");
    assert_eq!(
        session["context"]["window_tokens"], OPENCODE_CONTEXT,
        "{session}"
    );
    assert_eq!(
        session["context"]["tokens_max"], OPENCODE_COMPACTS_AT,
        "{session}"
    );
}

/// The mock's usage climbs through every level in one turn of five shell
/// calls; each level fires once, on the reply that crossed it, relative to
/// OpenCode's usable room. The model takes half a second an answer, as a
/// real one takes more.
#[test]
fn opencode_thresholds_fire_once_on_the_crossing_reply() {
    agents::thresholds_counted(
        opencode("opencode-thresholds").latency(Duration::from_millis(500)),
        OPENCODE_COMPACTS_AT,
        |prompt_tokens| prompt_tokens + REPLY_TOKENS,
    );
}

/// A real automatic compaction: the second reply reports 195,000 prompt
/// tokens, over OpenCode's usable room, so OpenCode compacts right after
/// its tool call, before asking for the turn's next reply. The state and
/// checkpoint are saved; the resume prompt reaches the model in the first
/// request after the compaction, and there only (a system message, which
/// OpenCode does not keep), and hookd finds that it arrived.
#[test]
fn opencode_auto_compaction_saves_checkpoints_and_resumes_once() {
    let Some(mut agent) = opencode("opencode-compaction")
        .replies(vec![
            Reply::shell("t1.tool", 6_000, "echo 'step 1' > notes.txt"),
            Reply::shell("t1.tool2", OVER_THE_POINT, "echo 'step 2' >> notes.txt"),
            Reply::shell("t1.tool3", 3_000, "echo 'step 3' >> notes.txt"),
            Reply::text("t1.text", 3_500, "Steps noted."),
        ])
        .summary("E2E_SUMMARY of the work so far", 2_000)
        .start()
    else {
        return;
    };
    let head = agent.git(&["rev-parse", "HEAD"]);
    agent.run("TURN 1: add steps 1 to 3 to notes.txt");
    let log = agent.log();
    let summaries = log.of_kind("summary");
    assert!(
        summaries.len() == 1
            && log.answered_with("t1.tool2").n < summaries[0].n
            && log.answered_with("t1.tool3").n > summaries[0].n,
        "OpenCode compacted once, between t1.tool2 and t1.tool3: {:?}",
        log.labels()
    );
    agents::compaction_handled_in_one_request(&agent, &head, "notes.txt", &["t1.tool3"]);
    // `opencode run` quotes a prompt argument that holds spaces, and the
    // person's message is recorded (and sent) so.
    agents::capture_read_the_session_file(
        &agent,
        "\"TURN 1: add steps 1 to 3 to notes.txt\"",
        &[],
        "notes.txt",
    );
    let checked = hookd_tests::wait_until(hookd_tests::e2e_agents::SETTLE, || {
        !agent.events("resume_arrival").is_empty()
    });
    let arrivals = agent.events("resume_arrival");
    eprintln!("opencode-compaction: arrival checks {arrivals:?}");
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

/// OpenCode awaits a plugin's hooks without a time limit, so the plugin
/// keeps its own: with a hookctl that never answers (nor exits), each call
/// is given up at the plugin's deadline, and the runs end with the answers,
/// exit codes and requests of a client without the plugin.
#[test]
fn opencode_plugin_gives_up_on_a_hookctl_that_never_answers() {
    let replies = vec![
        Reply::shell("t1.tool", 10_000, "echo working > notes.txt"),
        Reply::text("t1.text", 11_000, "Answer: working."),
        Reply::text("t2.text", 12_000, "Answer: still working."),
    ];
    let prompts = ["TURN 1: start working", "TURN 2: keep working"];
    let Some(mut plain) = opencode("opencode-plain-for-hung-hookctl")
        .wiring(Wiring::NoHooks)
        .replies(replies.clone())
        .start()
    else {
        return;
    };
    let plain_runs: Vec<_> = prompts.iter().map(|p| plain.run(p)).collect();
    let mut hung = opencode("opencode-hung-hookctl")
        .replies(replies)
        .start()
        .unwrap();
    // The plugin runs this in hookctl's place: it notes each call, then
    // sleeps well past the plugin's longest deadline.
    let calls = hung.sandbox().path().join("hookctl-calls.txt");
    let never_answers = hung.sandbox().path().join("hookctl-never-answers");
    std::fs::write(
        &never_answers,
        format!(
            "#!/bin/sh\necho \"$4\" >> '{}'\nexec sleep 60\n",
            calls.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&never_answers, std::fs::Permissions::from_mode(0o755)).unwrap();
    let plugin = hung.hook_settings_file();
    let text = std::fs::read_to_string(&plugin).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("const HOOKCTL = "))
        .expect("the plugin names its hookctl");
    std::fs::write(
        &plugin,
        text.replacen(
            line,
            &format!("const HOOKCTL = {:?};", never_answers.display().to_string()),
            1,
        ),
    )
    .unwrap();
    let hung_runs: Vec<_> = prompts.iter().map(|p| hung.run(p)).collect();
    for (p, h) in plain_runs.iter().zip(&hung_runs) {
        eprintln!(
            "opencode: run {}: without the plugin {:?} in {:.2} s; hookctl hung {:?} in {:.2} s",
            p.index,
            p.code,
            p.elapsed.as_secs_f64(),
            h.code,
            h.elapsed.as_secs_f64()
        );
        assert_eq!(h.code, p.code, "run {}: the same exit code", p.index);
        assert_eq!(h.answer(), p.answer(), "run {}: the same answer", p.index);
    }
    assert_eq!(
        hung.log().labels(),
        plain.log().labels(),
        "the model was asked the same"
    );
    let called = std::fs::read_to_string(&calls).unwrap_or_default();
    for event in [
        "session-start",
        "user-prompt-submit",
        "post-tool-use",
        "stop",
    ] {
        assert!(
            called.lines().any(|l| l == event),
            "the plugin called hookctl for {event}: {called:?}"
        );
    }
}

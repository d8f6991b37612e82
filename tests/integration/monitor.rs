//! The context monitor, replayed: fixture payloads through the real hookctl
//! to an in-process daemon, over a transcript the test writes as Claude Code
//! would.

use hookd_tests::{
    HookAnswer, Sandbox, Scenario, TestDaemon, TestEvent, Transcript, run_with_stdin, stdout,
};
use serde_json::Value;

use hookd_tests::SONNET;
/// Where Claude Code compacts a 200k window: 200,000 − 20,000 − 13,000.
const COMPACTS_AT: u64 = 167_000;

/// The context of a reply at `fraction` of the compaction point.
fn at(fraction: f64) -> u64 {
    (COMPACTS_AT as f64 * fraction) as u64
}

/// A session whose hooks' answers hold only what the monitor says (no
/// startup hint about hookctl's records).
fn monitored() -> Scenario {
    Scenario::build()
        .setting("resume.records_hint", false)
        .start()
}

/// What a level says to the model (the person gets one short line of it).
fn message(output: &Value) -> Option<String> {
    output["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .map(str::to_owned)
}

#[test]
fn each_threshold_fires_once_at_the_right_call() {
    let mut s = monitored();
    assert_eq!(
        s.hook("SessionStart(source=startup)", "session-start"),
        Value::Null
    );

    assert_eq!(s.turn(at(0.50)), Value::Null, "50%: nothing to say");
    // The model reads what to do and the figures, leading with the one the
    // levels are measured against; the person reads the figure only.
    let at_72 = s.turn(at(0.72));
    insta::assert_snapshot!(s.answer_normalized(&at_72), @r#"
        hookSpecificOutput.additionalContext: "Context at 70% of the way to compaction. Read only what the task needs: search first, then open line ranges. [hookd: 72% of the way to compaction (120,240 of 167,000 tokens), 60% of the window]"
        hookSpecificOutput.hookEventName: "PostToolUse"
        systemMessage: "hookd: context 72% of the way to compaction (120,240 of 167,000 tokens), 60% of the window"
    "#);
    assert_eq!(s.turn(at(0.75)), Value::Null, "70% fires once");

    insta::assert_snapshot!(s.turn(at(0.83)).context(), @"Context at 80% of the way to compaction. hookd is saving the work state; record any decision worth keeping with `hookctl decision TOPIC DECISION`. [hookd: 83% of the way to compaction (138,610 of 167,000 tokens), 69% of the window]");
    insta::assert_snapshot!(s.turn(at(0.92)).context(), @"Context at 90% of the way to compaction. Finish the current step, then suggest /compact to the person: the state is saved. [hookd: 92% of the way to compaction (153,640 of 167,000 tokens), 77% of the window]");
    insta::assert_snapshot!(s.turn(at(0.96)).context(), @"CRITICAL: Context at 95% of the way to compaction. hookd is saving the state with a git checkpoint; note where you are now with `hookctl note TEXT`. [hookd: 96% of the way to compaction (160,320 of 167,000 tokens), 80% of the window]");
    assert_eq!(s.turn(at(0.97)), Value::Null, "every level fired once");
    assert_eq!(
        s.hook("UserPromptSubmit", "user-prompt-submit"),
        Value::Null
    );

    let levels: Vec<f64> = s
        .events("threshold")
        .iter()
        .map(|e| e["level"].as_f64().unwrap())
        .collect();
    assert_eq!(levels, vec![0.70, 0.80, 0.90, 0.95]);
    // 80, 90 and 95 save state; only 95 asks for a checkpoint (and this
    // project is no git repository, so it says why there is none).
    for level in ["0.80", "0.90", "0.95"] {
        s.sb.wait_for(TestEvent::Saved, &format!("threshold {level}"));
    }
    let steps: Vec<String> = s
        .events("pipeline")
        .iter()
        .filter(|e| e["step"] == "checkpoint")
        .map(|e| e["detail"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(steps.len(), 3, "{steps:?}");
    assert_eq!(&steps[..2], ["not asked for", "not asked for"]);
    insta::assert_snapshot!(s.normalize(&steps[2]), @"[TEMP]/proj is not in a git repository");

    s.sb.wait_for(TestEvent::Checkpoint, "failed");
    let status = s.status();
    assert_eq!(status.model.as_deref(), Some(SONNET));
    let context = status.context.expect("a context figure");
    assert_eq!(context.tokens_max, COMPACTS_AT);
    assert_eq!(context.window_tokens, 200_000);
    assert_eq!(context.tokens_used, at(0.97));
    assert!(context.advice.skip_prefetch);
    assert_eq!(status.fired, [0.70, 0.80, 0.90, 0.95]);
    assert_eq!(status.epoch, 1);
    assert!(!status.last_checkpoint.expect("a checkpoint mark").ok);
    assert!(
        s.project.join(".workflow/context_state.json").is_file(),
        "the state was saved"
    );
}

/// A level the watcher fires is decided with the configuration the
/// session's hooks have, their environment included: with
/// `HOOKD_MONITOR__ADDITIONAL_CONTEXT=false` in the agent's environment, the
/// next hook says it to the person only.
#[test]
fn the_watcher_decides_with_the_hooks_environment() {
    let mut s = monitored();
    let hook = |s: &Scenario, fixture: &str, event: &str| {
        let mut cmd = s.sb.command("hookctl");
        cmd.args(["hook", event])
            .env("HOOKD_MONITOR__ADDITIONAL_CONTEXT", "false");
        let out = run_with_stdin(cmd, &s.transcript.payload(fixture, &s.project));
        assert_eq!(out.status.code(), Some(0), "{event}");
        HookAnswer::parse(&stdout(&out))
    };
    s.transcript.reply(at(0.50));
    assert_eq!(hook(&s, "PostToolUse", "post-tool-use"), Value::Null);
    s.transcript.reply(at(0.85));
    s.sb.wait_for(TestEvent::Recorded, "threshold");
    assert_eq!(
        s.events("threshold").len(),
        1,
        "the watcher fired the level"
    );
    // Said to the person, not to the model.
    let out = hook(&s, "PostToolUse", "post-tool-use");
    insta::assert_snapshot!(s.answer_normalized(&out), @r#"systemMessage: "hookd: context 85% of the way to compaction (141,950 of 167,000 tokens), 71% of the window; saving the work state""#);
}

#[test]
fn a_reply_written_after_its_tool_hook_fires_at_once_and_is_said_by_the_next_hook() {
    // Claude Code writes its transcript every 100 ms: PostToolUse often
    // arrives before the reply that asked for the tool is on disk. The hook
    // answers from what is there; the watcher fires the level when the reply
    // lands, and the next hook says it.
    let mut s = monitored();
    assert_eq!(s.turn(at(0.50)), Value::Null);
    assert_eq!(s.hook("PostToolUse", "post-tool-use"), Value::Null);
    s.transcript.reply(at(0.85));
    s.sb.wait_for(TestEvent::Recorded, "threshold");
    assert_eq!(
        s.events("threshold").len(),
        1,
        "the watcher fired the level without a hook"
    );
    assert_eq!(
        s.events("threshold")[0]["crossed"],
        serde_json::json!([0.70, 0.80])
    );
    // The 80% save runs now, not when a hook asks.
    s.sb.wait_for(TestEvent::Saved, "threshold 0.80");
    assert!(
        s.events("pipeline")
            .iter()
            .any(|e| e["step"] == "capture" && e["trigger"] == "threshold 0.80"),
        "{:?}",
        s.events("pipeline")
    );
    // Stop cannot reach the model: the words wait for the next tool call.
    assert_eq!(s.hook("Stop", "stop"), Value::Null);
    let out = s.hook("PostToolUse", "post-tool-use");
    insta::assert_snapshot!(s.answer_normalized(&out), @r#"
        hookSpecificOutput.additionalContext: "Context at 80% of the way to compaction. hookd is saving the work state; record any decision worth keeping with `hookctl decision TOPIC DECISION`. [hookd: 85% of the way to compaction (141,950 of 167,000 tokens), 71% of the window]"
        hookSpecificOutput.hookEventName: "PostToolUse"
        systemMessage: "hookd: context 85% of the way to compaction (141,950 of 167,000 tokens), 71% of the window; saving the work state"
    "#);
    assert_eq!(s.hook("PostToolUse", "post-tool-use"), Value::Null, "once");
    assert_eq!(s.events("threshold").len(), 1);
}

#[test]
fn crossing_several_levels_fires_the_highest_and_records_all() {
    let mut s = monitored();
    let out = s.turn(at(0.96));
    insta::assert_snapshot!(s.answer_normalized(&out), @r#"
        hookSpecificOutput.additionalContext: "CRITICAL: Context at 95% of the way to compaction. hookd is saving the state with a git checkpoint; note where you are now with `hookctl note TEXT`. [hookd: 96% of the way to compaction (160,320 of 167,000 tokens), 80% of the window]"
        hookSpecificOutput.hookEventName: "PostToolUse"
        systemMessage: "hookd: context 96% of the way to compaction (160,320 of 167,000 tokens), 80% of the window; saving the work state with a git checkpoint"
    "#);
    assert_eq!(s.status().fired, [0.70, 0.80, 0.90, 0.95]);
    assert_eq!(
        s.events("threshold")[0]["crossed"],
        serde_json::json!([0.70, 0.80, 0.90, 0.95])
    );
    assert_eq!(s.turn(at(0.99)), Value::Null);
}

#[test]
fn compaction_starts_a_new_epoch_and_rearms_the_levels() {
    let mut s = monitored();
    assert!(message(&s.turn(at(0.96))).is_some());
    // Claude Code compacts: PreCompact, the boundary in the transcript, SessionStart(compact), PostCompact.
    // Plain text for the summarizer.
    let instructions = s.hook("PreCompact(trigger=auto)", "pre-compact");
    insta::assert_snapshot!(s.answer_normalized(&instructions), @r#"
        hookd saved the workflow state (.workflow/context_state.json). Keep in your summary: the request, what the person said must or must not be done, the task in progress, the next steps in order, the decisions and blockers.
        End it with one fenced code block, info string `hookd-state [TOKEN]`, of YAML, each key only if it applies: decisions [{topic, decision, reasoning}], rejected [{approach, why}], blockers [{issue, status: unresolved|workaround|resolved, notes}], constraints [text], lifted_constraints [text], active_task, progress_notes, next_actions [{action, target, priority, context_needed: [files]}].
    "#);
    s.transcript.boundary("auto", 160_320, 3_000);
    let resumed = s.hook("SessionStart(source=compact)", "session-start");
    // Claude Code records that the resume prompt reached the model.
    let prompt = resumed["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("a resume prompt");
    s.transcript.context_arrived("SessionStart", prompt);
    s.hook("PostCompact(trigger=auto)", "post-compact");
    let status = s.status();
    assert_eq!(status.epoch, 2, "one compaction, one new epoch: {status:?}");
    assert!(status.fired.is_empty());
    assert_eq!(
        status.context.as_ref().map(|c| c.tokens_used),
        Some(3_000),
        "postTokens until the next reply"
    );
    assert_eq!(
        status.context.as_ref().map(|c| c.source.as_str()),
        Some("compaction")
    );
    let compactions = s.events("compaction");
    assert_eq!(compactions.len(), 1, "{compactions:?}");
    assert_eq!(compactions[0]["announced"], true);
    assert_eq!(compactions[0]["pre_tokens"], 160_320);

    // The levels fire again in the new epoch.
    assert_eq!(s.turn(at(0.40)), Value::Null);
    // The highest level crossed speaks.
    let out = s.turn(at(0.85));
    insta::assert_snapshot!(s.answer_normalized(&out), @r#"
        hookSpecificOutput.additionalContext: "Context at 80% of the way to compaction. hookd is saving the work state; record any decision worth keeping with `hookctl decision TOPIC DECISION`. [hookd: 85% of the way to compaction (141,950 of 167,000 tokens), 71% of the window]"
        hookSpecificOutput.hookEventName: "PostToolUse"
        systemMessage: "hookd: context 85% of the way to compaction (141,950 of 167,000 tokens), 71% of the window; saving the work state"
    "#);
    assert_eq!(s.status().fired, [0.70, 0.80]);
}

#[test]
fn a_compaction_nobody_announced_is_seen_in_the_transcript() {
    let mut s = monitored();
    assert!(message(&s.turn(at(0.92))).is_some());
    // No hooks at all: only the transcript shows it. The watcher picks it up.
    s.transcript.boundary("auto", 153_640, 2_500);
    s.sb.wait_for(TestEvent::Recorded, "compaction");
    assert_eq!(s.status().epoch, 2, "the watcher saw the boundary");
    let compactions = s.events("compaction");
    assert_eq!(compactions.len(), 1);
    assert_eq!(compactions[0]["announced"], false);
    assert_eq!(s.status().context.map(|c| c.tokens_used), Some(2_500));
}

#[test]
fn a_large_drop_rearms_the_levels() {
    let mut s = monitored();
    assert!(message(&s.turn(at(0.75))).is_some());
    // Usage falls by more than monitor.reset_drop (0.30) without a compaction (a /clear-like reset).
    assert_eq!(s.turn(at(0.30)), Value::Null);
    assert_eq!(s.status().epoch, 2);
    assert!(message(&s.turn(at(0.71))).is_some(), "70% fires again");
}

#[test]
fn the_registry_survives_a_daemon_restart() {
    let mut s = monitored();
    assert!(message(&s.turn(at(0.83))).is_some());
    s.restart_daemon();
    let status = s.status();
    assert_eq!(status.fired, [0.70, 0.80]);
    assert_eq!(status.session_id, "s1-session");
    assert_eq!(
        s.turn(at(0.85)),
        Value::Null,
        "nothing fires twice after a restart"
    );
    let out = s.turn(at(0.91));
    insta::assert_snapshot!(s.answer_normalized(&out), @r#"
        hookSpecificOutput.additionalContext: "Context at 90% of the way to compaction. Finish the current step, then suggest /compact to the person: the state is saved. [hookd: 91% of the way to compaction (151,970 of 167,000 tokens), 76% of the window]"
        hookSpecificOutput.hookEventName: "PostToolUse"
        systemMessage: "hookd: context 91% of the way to compaction (151,970 of 167,000 tokens), 76% of the window; saving the work state: a good moment for /compact"
    "#);
}

#[test]
fn subagent_hooks_do_not_fire_thresholds() {
    let mut s = monitored();
    s.transcript.reply(150_000);
    assert_eq!(
        s.hook("PostToolUse(inside subagent)", "post-tool-use"),
        Value::Null
    );
    assert!(
        message(&s.turn(at(0.92))).is_some(),
        "the main session's hook does"
    );
}

#[test]
fn dozens_of_sessions_do_not_cross_talk() {
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options());
    let project = sb.path().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    let mut transcripts: Vec<Transcript> = (0..24)
        .map(|i| {
            Transcript::create(
                sb.path().join(format!("claude/{i}.jsonl")),
                &format!("session-{i}"),
                SONNET,
            )
        })
        .collect();
    for (i, t) in transcripts.iter_mut().enumerate() {
        // Even sessions are at 72%, odd ones at 40%.
        t.reply(if i.is_multiple_of(2) { 120_240 } else { 66_800 });
    }
    let handles: Vec<_> = transcripts
        .iter()
        .map(|t| {
            let mut cmd = sb.command("hookctl");
            cmd.args(["hook", "post-tool-use"]);
            let input = t.payload("PostToolUse", &project);
            std::thread::spawn(move || run_with_stdin(cmd, &input))
        })
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        let out = h.join().unwrap();
        assert_eq!(
            !stdout(&out).is_empty(),
            i.is_multiple_of(2),
            "session {i}: {}",
            stdout(&out)
        );
    }
    let report = daemon.engine().status(&Default::default());
    assert_eq!(report.sessions.len(), 24);
    for s in report.sessions {
        let i: usize = s.session_id.trim_start_matches("session-").parse().unwrap();
        let expected = if i.is_multiple_of(2) { 120_240 } else { 66_800 };
        assert_eq!(s.context.unwrap().tokens_used, expected, "{}", s.session_id);
    }
}

#[test]
fn the_real_auto_compaction_transcript_replayed() {
    // compact_auto: four replies, the last at 990,003 tokens of a 1M window, then auto compaction.
    let s = Scenario::build()
        .session("e251d151-1f53-483d-aa47-1555ae08a360")
        .model("")
        .start();
    let fixture = std::fs::read_to_string(
        hookd_tests::fixtures_dir().join("transcripts/compact_auto.e251d151.jsonl"),
    )
    .unwrap();
    let lines: Vec<&str> = fixture.lines().collect();
    let write_until = |pred: &dyn Fn(&str) -> bool, from: usize| -> usize {
        let mut i = from;
        while i < lines.len() {
            s.transcript
                .append(&serde_json::from_str(lines[i]).unwrap());
            i += 1;
            if pred(lines[i - 1]) {
                break;
            }
        }
        i
    };
    // Up to the third reply (7,000 tokens): quiet.
    let mut at = write_until(
        &|l| l.contains("msg_mock_0003") && l.contains("tool_use"),
        0,
    );
    assert_eq!(s.hook("PostToolUse", "post-tool-use"), Value::Null);
    // The fourth reply reports 990,003 of the 967,000 compaction point: 95% fires.
    at = write_until(
        &|l| l.contains("msg_mock_0004") && l.contains("tool_use"),
        at,
    );
    let out = s.hook("PostToolUse", "post-tool-use");
    insta::assert_snapshot!(s.answer_normalized(&out), @r#"
        hookSpecificOutput.additionalContext: "CRITICAL: Context at 95% of the way to compaction. hookd is saving the state with a git checkpoint; note where you are now with `hookctl note TEXT`. [hookd: 102% of the way to compaction (990,003 of 967,000 tokens), 99% of the window]"
        hookSpecificOutput.hookEventName: "PostToolUse"
        systemMessage: "hookd: context 102% of the way to compaction (990,003 of 967,000 tokens), 99% of the window; saving the work state with a git checkpoint"
    "#);
    // Compaction as recorded, then its hooks.
    let pre = s.hook("PreCompact(trigger=auto)", "pre-compact");
    insta::assert_snapshot!(s.answer_normalized(&pre), @r#"
        hookd saved the workflow state (.workflow/context_state.json). Keep in your summary: the request, what the person said must or must not be done, the task in progress, the next steps in order, the decisions and blockers.
        End it with one fenced code block, info string `hookd-state [TOKEN]`, of YAML, each key only if it applies: decisions [{topic, decision, reasoning}], rejected [{approach, why}], blockers [{issue, status: unresolved|workaround|resolved, notes}], constraints [text], lifted_constraints [text], active_task, progress_notes, next_actions [{action, target, priority, context_needed: [files]}].
    "#);
    at = write_until(&|l| l.contains("compact_boundary"), at);
    let resumed = s.hook("SessionStart(source=compact)", "session-start");
    let prompt = resumed["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("a resume prompt");
    s.transcript.context_arrived("SessionStart", prompt);
    s.hook("PostCompact(trigger=auto)", "post-compact");
    let session = s.status();
    assert_eq!(session.epoch, 2);
    assert_eq!(session.context.map(|c| c.tokens_used), Some(2679));
    assert_eq!(session.model.as_deref(), Some("claude-opus-5-5"));
    write_until(&|_| false, at);
    let out = s.hook("UserPromptSubmit", "user-prompt-submit");
    assert_eq!(out, Value::Null);
    assert_eq!(s.status().context.map(|c| c.tokens_used), Some(3000));
}

#[test]
fn statusline_with_and_without_the_daemon() {
    let sb = Sandbox::new();
    let lines: Vec<String> =
        std::fs::read_to_string(hookd_tests::fixtures_dir().join("statusline.jsonl"))
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
    // The third line reports 20,000 tokens of a 200k window: Claude Code's own
    // `used_percentage` of 10, with compaction at 167k (83%).
    let input = lines[2].as_bytes();
    let mut alone = sb.command("hookctl");
    alone
        .env("HOOKD_CLIENT__AUTOSTART", "false")
        .env("NO_COLOR", "1")
        .arg("statusline");
    let out = run_with_stdin(alone, input);
    assert!(out.status.success());
    assert_eq!(stdout(&out).trim(), "ctx 11% to compaction · 10% of window");

    let daemon = TestDaemon::start(sb.daemon_options());
    let statusline = |input: &[u8]| {
        let mut cmd = sb.command("hookctl");
        cmd.arg("statusline");
        stdout(&run_with_stdin(cmd, input)).trim().to_owned()
    };
    // Coloured by the levels passed: none yet.
    let coloured = "\x1b[32mctx 11% to compaction\x1b[0m · 10% of window";
    assert_eq!(statusline(input), coloured);
    // A statusLine input alone (tried by hand) makes no session.
    let report = daemon.engine().status(&Default::default());
    assert!(report.sessions.is_empty(), "{:?}", report.sessions);
    // Once a hook made the session, the statusLine's window is kept.
    let mut start = hookd_tests::payload("SessionStart(source=startup)");
    start["session_id"] = "4d7453d0-1db5-4325-aa8c-30d671da3857".into();
    start["cwd"] = sb.path().display().to_string().into();
    start["transcript_path"] = sb.path().join("none.jsonl").display().to_string().into();
    let mut cmd = sb.command("hookctl");
    cmd.args(["hook", "session-start"]);
    assert!(
        run_with_stdin(cmd, start.to_string().as_bytes())
            .status
            .success()
    );
    assert_eq!(statusline(input), coloured);
    let report = daemon.engine().status(&Default::default());
    let s = &report.sessions[0];
    assert_eq!(s.session_id, "4d7453d0-1db5-4325-aa8c-30d671da3857");
    assert_eq!(
        s.context.as_ref().unwrap().window_tokens,
        200_000,
        "the statusLine's window is kept"
    );
    // A new session before its first reply: no figure yet.
    let first = lines[0].replace("4d7453d0-1db5-4325-aa8c-30d671da3857", "another-session");
    assert_eq!(statusline(first.as_bytes()), "ctx –");
    assert_eq!(
        daemon.engine().status(&Default::default()).sessions.len(),
        1
    );
}

#[test]
fn status_text_shows_the_figures() {
    let mut s = monitored();
    s.turn(at(0.72));
    // The retrieval strategy is for those who ask (-v).
    insta::assert_snapshot!(s.hookctl_normalized(&["status"]), @r#"
        hookd 0.1.0 (protocol 1) · pid [PID] · up [DURATION] · 1 event
        socket [SOCKET]
        1 session

        ● claude-code s1-sessi  [TEMP]/proj  claude-sonnet-4-5-20250929
            context  72% of the way to compaction (120,240 of 167,000 tokens), 60% of the window
                     ▓▓▓▓▓▓▓▓▓▓▓▓░░░░░│░░  the window, │ = compaction at 83%
            recent   ▆  the latest reply, █ = at the compaction point
            not compacted yet · passed 70% of the way
            last save never · last checkpoint never
            last event post-tool-use [DURATION] ago · 1 event
            transcript [TEMP]/claude/s1-session.jsonl
    "#);
    insta::assert_snapshot!(s.hookctl_normalized(&["status", "-v"]), @r#"
        hookd 0.1.0 (protocol 1) · pid [PID] · up [DURATION] · 1 event
        socket [SOCKET]
        1 session

        ● claude-code s1-sessi  [TEMP]/proj  claude-sonnet-4-5-20250929
            context  72% of the way to compaction (120,240 of 167,000 tokens), 60% of the window
                     ▓▓▓▓▓▓▓▓▓▓▓▓░░░░░│░░  the window, │ = compaction at 83%
                     compaction point: 167,000 (200000 window − 20000 output reserve − 13000 buffer), figure from the reply
                     room: a quarter of the files to reload, up to 2 lessons of past tasks scored 0.5 or more
            recent   ▆  the latest reply, █ = at the compaction point
            not compacted yet · passed 70% of the way
            levels passed since the session began: 70%
            last save never · last checkpoint never
            last event post-tool-use [DURATION] ago · 1 event
            transcript [TEMP]/claude/s1-session.jsonl
    "#);
    let out = s.sb.hookctl(&["status", "--session", "nope"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn watch_redraws_when_usage_changes() {
    use std::io::{BufRead, BufReader};
    let mut s = monitored();
    s.turn(at(0.40));
    let mut child =
        s.sb.command("hookctl")
            .arg("watch")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    let mut line = String::new();
    // The first frame, then a change made only in the transcript.
    while !seen.contains("(66,800 of 167,000 tokens)") {
        line.clear();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "watch ended early: {seen}"
        );
        seen += &line;
    }
    s.transcript.reply(100_200);
    while !seen.contains("(100,200 of 167,000 tokens)") {
        line.clear();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "watch ended early: {seen}"
        );
        seen += &line;
    }
    // The sparkline follows the readings.
    assert!(seen.contains("█ = at the compaction point"), "{seen}");
    child.kill().unwrap();
    let _ = child.wait();
}

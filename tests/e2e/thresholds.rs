//! Scenario 1: usage climbs over five turns (50% → 72% → 83% → 92% → 96% of
//! the compaction point), then a sixth turn wraps up. Each level fires once,
//! on the reply that crossed it; its message reaches the model once, from
//! the crossing tool call's hook or, when Claude Code had not written that
//! reply yet (hooks never wait for it), from the next hook that can carry
//! it. State is saved from 80% and checkpointed at 95%.

use crate::agents::CLIMB;
use crate::{attachments, workflow_checks};
use hookd_tests::e2e::{COMPACTS_AT, Reply, SONNET, Scenario};
use hookd_tests::wait_until;
use serde_json::{Value, json};
use std::time::Duration;

fn tokens(percent: u64) -> u64 {
    COMPACTS_AT * percent / 100
}

fn levels(events: &[Value]) -> Vec<f64> {
    events
        .iter()
        .map(|e| e["level"].as_f64().unwrap())
        .collect()
}

/// The last turn: no tool call, no new level.
const WRAP_UP: usize = CLIMB.len() + 1;

/// Each turn: a Bash call whose reply reports the turn's figure, then a
/// closing text 100 tokens later; the wrap-up turn only answers.
fn script() -> Vec<Reply> {
    let mut replies: Vec<Reply> = (1..=CLIMB.len())
        .flat_map(|turn| {
            let used = tokens(CLIMB[turn - 1].0);
            [
                Reply::bash(
                    &format!("t{turn}.tool"),
                    used,
                    &format!("echo 'step {turn}' >> notes.txt"),
                ),
                Reply::text(
                    &format!("t{turn}.text"),
                    used + 100,
                    &format!("Step {turn} noted."),
                ),
            ]
        })
        .collect();
    let last = tokens(CLIMB[CLIMB.len() - 1].0) + 200;
    replies.push(Reply::text(&format!("t{WRAP_UP}.text"), last, "All noted."));
    replies
}

/// The requests in which a level crossed at `turn`'s tool call may first
/// reach the model: the one right after that call, or the next turn's first.
fn carriers(turn: usize) -> [String; 2] {
    let next = if turn + 1 == WRAP_UP { "text" } else { "tool" };
    [format!("t{turn}.text"), format!("t{}.{next}", turn + 1)]
}

#[test]
fn thresholds_reach_the_model_once_at_the_right_turn() {
    let Some(mut sc) = Scenario::builder("thresholds").replies(script()).start() else {
        return;
    };
    let git_before = sc.git_snapshot();
    let mut session = String::new();
    for (i, (percent, crossing)) in CLIMB.iter().enumerate() {
        let turn = i + 1;
        let prompt = format!("TURN {turn}: add step {turn} to notes.txt");
        let run = if turn == 1 {
            sc.start_session(&prompt)
        } else {
            sc.resume(&session, &prompt)
        };
        session = run.session_id.clone();

        // hookd fired exactly the levels crossed so far, this one on this
        // turn's figure (the tool call's reply, or the closing text when
        // Claude Code wrote both in one batch), without waiting for a hook.
        let expected: Vec<f64> = CLIMB[..turn].iter().filter_map(|c| Some(c.1?.0)).collect();
        assert!(
            wait_until(Duration::from_secs(10), || levels(&sc.events("threshold"))
                == expected),
            "after turn {turn}: {:?}",
            levels(&sc.events("threshold"))
        );
        if crossing.is_some() {
            let fired = sc.events("threshold");
            let at = fired.last().unwrap()["tokens_used"].as_u64().unwrap();
            assert!(
                at == tokens(*percent) || at == tokens(*percent) + 100,
                "turn {turn}: the level fired on this turn's figure, not {at}"
            );
        }
        // 80% and 90% save the state, 95% saves it with a checkpoint.
        let saves_expected = expected.iter().filter(|l| **l >= 0.80).count();
        assert!(
            wait_until(Duration::from_secs(10), || saves(&sc).len()
                == saves_expected),
            "turn {turn}: saves {:?}",
            saves(&sc)
        );
        if turn == 3 {
            // The 80% save holds the figure that fired it.
            let fired = sc.events("threshold");
            workflow_checks::state_saved(&sc, fired[1]["tokens_used"].as_u64().unwrap());
        }
    }
    sc.resume(&session, &format!("TURN {WRAP_UP}: wrap up"));

    let log = sc.log();
    let scripted: Vec<String> = script().iter().map(|r| r.label.clone()).collect();
    assert_eq!(
        log.labels(),
        scripted,
        "one request per scripted reply, no compaction"
    );
    let first_words = &log.first_containing("[hookd:").unwrap().label;
    assert!(
        carriers(2).contains(first_words),
        "nothing from hookd reaches the model before 70%: first in {first_words}"
    );
    for (i, (_, crossing)) in CLIMB.iter().enumerate() {
        let Some((_, message)) = crossing else {
            continue;
        };
        let turn = i + 1;
        let first = log
            .first_containing(message)
            .unwrap_or_else(|| panic!("{message:?} never reached the model"));
        assert!(
            carriers(turn).contains(&first.label),
            "{message:?} first reaches the model in {}, not in one of {:?}",
            first.label,
            carriers(turn)
        );
        assert_eq!(first.count(message), 1, "{message:?} once in that request");
        assert_eq!(
            log.last().count(message),
            1,
            "{message:?} was never injected again"
        );
    }

    // The person saw one line for each level, from the hook that gave the
    // model its message.
    let transcript = sc.transcript(&session);
    let shown: Vec<&Value> = attachments(&transcript, "hook_system_message");
    assert_eq!(shown.len(), 4, "{shown:?}");
    for (attachment, (_, crossing)) in shown.iter().zip(CLIMB.iter().skip(1)) {
        assert!(
            [
                "PostToolUse",
                "PostToolBatch",
                "SessionStart",
                "UserPromptSubmit"
            ]
            .contains(&attachment["hookEvent"].as_str().unwrap_or("")),
            "{attachment}"
        );
        // The person reads the figure and what hookd does, not the model's
        // instructions.
        let text = attachment["content"].as_str().unwrap();
        let level = format!("{:.0}", crossing.unwrap().0 * 100.0);
        assert!(
            text.starts_with("hookd: context ")
                && text.contains("of the way to compaction")
                && !text.contains(crossing.unwrap().1),
            "{text}"
        );
        assert!(!text.contains("suggest /compact"), "level {level}: {text}");
    }

    let saves = saves(&sc);
    let triggers: Vec<&str> = saves
        .iter()
        .map(|e| e["trigger"].as_str().unwrap())
        .collect();
    assert_eq!(
        triggers,
        ["threshold 0.80", "threshold 0.90", "threshold 0.95"]
    );
    // Only the 95% save asks for a checkpoint.
    let checkpoints: Vec<bool> = sc
        .events("pipeline")
        .iter()
        .filter(|e| e["step"] == "checkpoint")
        .map(|e| e["detail"] != "not asked for")
        .collect();
    assert_eq!(checkpoints, [false, false, true]);

    let status = sc.session(&session);
    assert_eq!(status["model"], SONNET);
    assert_eq!(status["epoch"], 1);
    assert_eq!(status["fired"], json!([0.70, 0.80, 0.90, 0.95]));
    assert!(
        wait_until(Duration::from_secs(10), || sc.session(&session)["context"]
            ["tokens_used"]
            == tokens(96) + 200),
        "{}",
        sc.session(&session)
    );
    assert_eq!(status["context"]["tokens_max"], COMPACTS_AT);
    assert!(status["last_save"].is_object(), "{status}");
    assert!(
        wait_until(Duration::from_secs(10), || {
            sc.session(&session)["last_checkpoint"].is_object()
        }),
        "{}",
        sc.session(&session)
    );
    let git_after = sc.git_snapshot();
    assert_eq!(
        (git_after.head, git_after.index, git_after.stash),
        (
            git_before.head.clone(),
            git_before.index.clone(),
            git_before.stash.clone()
        ),
        "HEAD, index and stash untouched"
    );
    workflow_checks::checkpoint_made(&sc, &git_before, "notes.txt");
}

/// The saves hookd ran: one `capture` step of the pipeline each.
fn saves(sc: &Scenario) -> Vec<Value> {
    sc.events("pipeline")
        .into_iter()
        .filter(|e| e["step"] == "capture")
        .collect()
}

/// Claude Code runs one hookd hook per reply that called tools, whatever the
/// calls did: a batch of two, a command that failed, a tool that failed.
/// Each of those replies crosses a level, and each level reaches the model
/// once, in the request after its batch or (when Claude Code had not written
/// the reply yet) the one after that.
#[test]
fn one_hook_per_tool_reply_carries_each_level() {
    let bash = |command: &str| {
        json!({"type": "tool_use", "name": "Bash",
               "input": {"command": command, "description": "e2e step"}})
    };
    let replies = vec![
        Reply {
            label: "batch".into(),
            tokens: tokens(72),
            content: vec![bash("echo a > a.txt"), bash("echo b > b.txt")],
        },
        Reply::bash("failing-command", tokens(83), "exit 3"),
        Reply::tool(
            "failing-tool",
            tokens(92),
            "Read",
            json!({"file_path": "/nonexistent/hookd-e2e.txt"}),
        ),
        Reply::text("closing", tokens(92) + 100, "Done."),
        Reply::text("wrap-up", tokens(92) + 200, "All done."),
    ];
    let Some(mut sc) = Scenario::builder("tool-replies")
        .replies(replies.clone())
        .start()
    else {
        return;
    };
    let run = sc.start_session("BATCH: write a.txt and b.txt, then try two things that fail");
    let wrap_up = sc.resume(&run.session_id, "WRAP UP: say that you are done");

    let tool_hooks: Vec<String> = run
        .hooks()
        .into_iter()
        .filter(|h| h.event.starts_with("PostTool"))
        .map(|h| h.event)
        .collect();
    assert_eq!(
        tool_hooks, ["PostToolBatch"; 3],
        "one hook per reply that called tools"
    );
    // Claude Code may write two replies at once: a jump over a level fires
    // the higher one, and says that one.
    let crossed = |events: &[Value]| -> Vec<f64> {
        events
            .iter()
            .flat_map(|e| e["crossed"].as_array().cloned().unwrap_or_default())
            .filter_map(|l| l.as_f64())
            .collect()
    };
    assert!(
        wait_until(Duration::from_secs(10), || crossed(&sc.events("threshold"))
            == [0.70, 0.80, 0.90]),
        "{:?}",
        sc.events("threshold")
    );
    let log = sc.log();
    let labels = log.labels();
    assert_eq!(
        labels,
        [
            "batch",
            "failing-command",
            "failing-tool",
            "closing",
            "wrap-up"
        ]
    );
    for fired in sc.events("threshold") {
        let level = fired["level"].as_f64().unwrap();
        let message = CLIMB
            .iter()
            .find_map(|c| c.1.filter(|(l, _)| *l == level))
            .unwrap()
            .1;
        // The reply whose figure fired it, and the two requests after it.
        let used = fired["tokens_used"].as_u64().unwrap();
        let reply = replies
            .iter()
            .position(|r| r.tokens == used)
            .unwrap_or_else(|| panic!("no reply reported {used}: {fired}"));
        let carriers = &labels[reply + 1..(reply + 3).min(labels.len())];
        let first = log
            .first_containing(message)
            .unwrap_or_else(|| panic!("{message:?} never reached the model"));
        assert!(
            carriers.contains(&first.label.as_str()),
            "{message:?} first reaches the model in {}, not in one of {carriers:?}",
            first.label
        );
        assert_eq!(log.last().count(message), 1, "{message:?} once");
    }
    assert!(
        wrap_up
            .hooks()
            .iter()
            .any(|h| h.event == "UserPromptSubmit")
    );
}

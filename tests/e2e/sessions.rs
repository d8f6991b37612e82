//! Scenario 5: `/clear` and `--resume`. `/clear` starts a new session; each
//! session is tracked on its own; resuming either brings back its own
//! history; and nothing from hookd (no resume prompt, no warning) reaches
//! the model where no compaction happened, beyond the one-line hint about
//! hookctl's records when a session starts.

use crate::CONTINUATION;
use hookd_tests::e2e::{Reply, Run, Scenario};
use hookd_tests::wait_until;
use std::time::Duration;

/// hookctl's SessionStart answers held no resume prompt: nothing, or at a
/// session's start only the one-line hint about hookctl's records.
fn assert_no_session_start_output(run: &Run) {
    let responses = run.stream("system", "hook_response");
    assert!(!responses.is_empty(), "run {}: SessionStart ran", run.index);
    for r in responses {
        let output = r["output"].as_str().unwrap_or_default();
        if output.is_empty() {
            continue;
        }
        let answer: serde_json::Value = serde_json::from_str(output).unwrap();
        let context = answer["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap_or_default();
        assert!(
            r["hook_name"] == "SessionStart:startup"
                && context.starts_with("hookd: `hookctl decision")
                && !context.contains('\n'),
            "run {}: {r}",
            run.index
        );
    }
}

#[test]
fn clear_and_resume_track_sessions_apart() {
    let Some(mut sc) = Scenario::builder("clear-resume")
        .replies(vec![
            Reply::bash("a1.tool", 30_000, "echo a > a.txt"),
            Reply::text("a1.text", 30_100, "A1 done."),
            Reply::text("b1.text", 5_000, "B1 done."),
            Reply::text("a2.text", 31_000, "A2 done."),
        ])
        .start()
    else {
        return;
    };
    let a1 = sc.start_session("A1: write a.txt");
    let a = a1.session_id.clone();

    let clear = sc.resume(&a, "/clear");
    let b = clear.session_id.clone();
    assert_ne!(b, a, "/clear starts a new session");
    assert_eq!(sc.log().requests.len(), 2, "/clear asks the model nothing");
    let sources: Vec<String> = clear
        .hooks()
        .into_iter()
        .filter(|h| h.event == "SessionStart")
        .filter_map(|h| h.qualifier)
        .collect();
    assert_eq!(sources, ["resume", "clear"]);

    let b1 = sc.resume(&b, "B1: a fresh start");
    assert_eq!(b1.session_id, b);
    let a2 = sc.resume(&a, "A2: back to a.txt");
    assert_eq!(a2.session_id, a);
    for run in [&a1, &clear, &b1, &a2] {
        assert_no_session_start_output(run);
    }

    let log = sc.log();
    assert_eq!(log.labels(), ["a1.tool", "a1.text", "b1.text", "a2.text"]);
    let in_b = log.answered_with("b1.text");
    assert!(
        !in_b.contains("A1: write a.txt"),
        "B starts without A's history"
    );
    let in_a = log.answered_with("a2.text");
    assert!(in_a.contains("A1: write a.txt"), "resuming A brings A back");
    assert!(!in_a.contains("B1: a fresh start"), "and not B");
    for request in &log.requests {
        assert!(
            !request.first_message_text().contains(CONTINUATION),
            "no compaction happened: {}",
            request.label
        );
        assert!(
            !request.contains("[hookd:"),
            "nothing from hookd: {}",
            request.label
        );
    }

    let status = sc.status();
    let sessions = status["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2, "{status}");
    let project = sc.project.display().to_string();
    for (id, tokens) in [(&a, 31_000), (&b, 5_000)] {
        assert!(
            wait_until(
                Duration::from_secs(10),
                || sc.session(id)["context"]["tokens_used"] == tokens
            ),
            "{}",
            sc.session(id)
        );
        let s = sc.session(id);
        assert_eq!(s["epoch"], 1, "{s}");
        assert_eq!(s["project_dir"], project.as_str(), "{s}");
        assert!(
            s["transcript_path"]
                .as_str()
                .unwrap()
                .ends_with(&format!("{id}.jsonl")),
            "{s}"
        );
    }
    let hooks_run: usize = [&a1, &clear, &b1, &a2]
        .iter()
        .map(|r| r.hooks().len())
        .sum();
    assert_eq!(
        status["daemon"]["events_handled"].as_u64(),
        Some(hooks_run as u64),
        "every hook Claude Code ran reached hookd"
    );
    assert!(sc.events("compaction").is_empty());
    assert!(sc.events("epoch").is_empty());
}

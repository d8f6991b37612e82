//! Scenario 6: cross-task memory through the real client. Session A fixes a
//! flaky test, and the agent records what worked with `hookctl reflect` and
//! closes the task with `hookctl task done`, both from Bash. Session B, on a
//! similar task, gets A's lessons with its first prompt; session C, on
//! unrelated work, gets nothing.

use crate::{tool_result, tool_uses};
use hookd_tests::e2e::Reply;
use hookd_tests::e2e::Scenario;
use serde_json::Value;

const LESSONS: &str = "## Lessons From Similar Past Tasks";
const LEARNED: &str = "Mocking the clock fixed the flakiness";

#[test]
fn a_similar_task_starts_with_the_lessons_of_the_last_one() {
    let Some(mut sc) = Scenario::builder("memory")
        .replies(vec![
            Reply::bash(
                "a.reflect",
                20_000,
                &format!("hookctl reflect '{LEARNED}' --type success_pattern"),
            ),
            Reply::bash("a.done", 20_500, "hookctl task done"),
            Reply::text("a.text", 21_000, "Fixed."),
            Reply::text("b.text", 5_000, "On it."),
            Reply::text("c.text", 5_000, "Notes written."),
        ])
        .start()
    else {
        return;
    };
    let a = sc.start_session("fix the flaky login test");
    let transcript = sc.transcript(&a.session_id);
    let results: Vec<String> = tool_uses(&transcript, "Bash")
        .iter()
        .map(|u| tool_result(&transcript, u["id"].as_str().unwrap()))
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results[0].contains("recorded a reflection (what worked) on task")
            && results[0].contains("fix the flaky login test"),
        "the agent's reflection landed on the task its prompt described: {results:?}"
    );

    let b = sc.start_session("fix the flaky signup test");
    let c = sc.start_session("write the release notes");
    assert!(a.session_id != b.session_id && b.session_id != c.session_id);

    let log = sc.log();
    assert_eq!(
        log.labels(),
        ["a.reflect", "a.done", "a.text", "b.text", "c.text"]
    );
    let first = log.answered_with("a.reflect");
    assert!(!first.contains(LESSONS), "the memory was empty");
    let similar = log.answered_with("b.text");
    for expected in [LESSONS, "fix the flaky login test", LEARNED] {
        assert!(
            similar.contains(expected),
            "B's first request lacks {expected:?}:\n{}",
            similar.text()
        );
    }
    assert_eq!(similar.count(LEARNED), 1, "handed over once");
    let unrelated = log.answered_with("c.text");
    assert!(
        !unrelated.contains(LESSONS) && !unrelated.contains(LEARNED),
        "unrelated work gets nothing: {}",
        unrelated.text()
    );

    let out = sc.hookctl(&["memory", "list", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tasks = list["tasks"].as_array().unwrap();
    let login = tasks
        .iter()
        .find(|t| t["task_description"] == "fix the flaky login test")
        .unwrap_or_else(|| panic!("A's task is stored: {list:#}"));
    assert_eq!(login["outcome"], "success", "{login}");
    assert_eq!(tasks.len(), 3, "{list:#}");
}

//! Scenarios 2 and 3: compaction, manual (`/compact`) and automatic (driven
//! by the usage the mock reports). Every compaction hook must reach hookd
//! and succeed, hookd must start a new epoch, the user's git state must stay
//! as it was, and the first request after the compaction is Claude Code's
//! continuation. What the pipeline writes and injects is checked by
//! [`workflow_checks`].
//!
//! The task list comes in both generations: scenario 2 plans with TodoWrite
//! (`CLAUDE_CODE_ENABLE_TASKS=false`), scenario 3 with TaskCreate/TaskUpdate
//! loaded through ToolSearch (2.1.330's default).

use crate::{CONTINUATION, hook_reported_success, tool_result, tool_uses, workflow_checks};
use hookd_tests::e2e::{COMPACTS_AT, HookRun, Reply, Run, Scenario};
use hookd_tests::wait_until;
use serde_json::{Value, json};
use std::time::Duration;

/// The tasks both scenarios plan, with the state TodoWrite gives them.
const TASKS: [(&str, &str); 3] = [
    ("Write the config parser", "completed"),
    ("Add tests for the parser", "in_progress"),
    ("Document the CLI flags", "pending"),
];

fn task_names() -> Vec<&'static str> {
    TASKS.iter().map(|t| t.0).collect()
}

/// `(event, qualifier)` of each hook a run ran, in order.
fn hook_sequence(run: &Run) -> Vec<(String, String)> {
    run.hooks()
        .into_iter()
        .map(|h| (h.event, h.qualifier.unwrap_or_default()))
        .collect()
}

/// Every hook of the run succeeded and reached hookd (`events_seen` grew by
/// as many hooks as Claude Code ran for the session).
fn assert_hooks_reached_hookd(run: &Run, hooks: &[HookRun], seen_before: u64, seen_after: u64) {
    for h in hooks {
        assert_eq!(h.status, 0, "run {}: {h:?}", run.index);
    }
    assert_eq!(
        seen_after - seen_before,
        hooks.len() as u64,
        "run {}: every hook reached hookd: {hooks:?}",
        run.index
    );
}

/// hookd's figure for the session reaches `tokens` (the last reply is written
/// to the transcript as the run ends; the watcher reads it).
fn assert_tokens(sc: &Scenario, session: &str, tokens: u64) {
    assert!(
        wait_until(
            Duration::from_secs(10),
            || sc.session(session)["context"]["tokens_used"] == tokens
        ),
        "{}",
        sc.session(session)
    );
}

fn events_seen(sc: &Scenario, session: &str) -> u64 {
    sc.session(session)["events_seen"].as_u64().unwrap()
}

/// hookd counted the compaction: a new epoch and a `compaction` event with
/// Claude Code's trigger, read from the transcript's boundary.
fn assert_new_epoch(sc: &Scenario, session: &str, trigger: &str) {
    let status = sc.session(session);
    assert_eq!(status["epoch"], 2, "{status}");
    assert_eq!(status["fired"], json!([]), "{status}");
    assert!(
        wait_until(Duration::from_secs(10), || sc
            .events("compaction")
            .iter()
            .any(|e| e["trigger"] == trigger)),
        "compaction events: {:?}",
        sc.events("compaction")
    );
    for e in sc.events("compaction") {
        assert_eq!(e["epoch"], 2, "{e}");
        assert_eq!(e["session"], session, "{e}");
    }
}

/// The manual-compaction scenarios' first turn: the task list written with
/// TodoWrite, a Bash call running `edit`, a closing text; then the reply
/// after the compaction.
fn todo_write_then(edit: &str) -> Vec<Reply> {
    let todos: Vec<Value> = TASKS
        .iter()
        .map(|(content, status)| json!({"content": content, "status": status, "activeForm": content}))
        .collect();
    vec![
        Reply::tool("t1.todo", 30_000, "TodoWrite", json!({ "todos": todos })),
        Reply::bash("t1.edit", 45_000, edit),
        Reply::text("t1.text", 45_100, "Parser written; tests next."),
        Reply::text("t3.text", 6_000, "Adding the tests now."),
    ]
}

#[test]
fn manual_compact_with_todowrite() {
    let Some(mut sc) = Scenario::builder("manual-compact")
        .env("CLAUDE_CODE_ENABLE_TASKS", "false")
        .replies(todo_write_then(
            "printf 'pub fn parse_line() {}\\n' > src/parser.rs && echo '- parses lines' >> README.md",
        ))
        .summary("<summary>E2E_MANUAL_SUMMARY: parser written, tests next.</summary>", 4_000)
        .start()
    else {
        return;
    };
    let first = sc.start_session("TURN 1: plan the parser work and start it");
    let sid = first.session_id.clone();
    let transcript = sc.transcript(&sid);
    let writes = tool_uses(&transcript, "TodoWrite");
    assert_eq!(writes.len(), 1, "the agent planned with TodoWrite");
    assert_eq!(writes[0]["input"]["todos"].as_array().unwrap().len(), 3);
    assert!(
        tool_result(&transcript, writes[0]["id"].as_str().unwrap())
            .contains("Todos have been modified successfully"),
        "TodoWrite ran"
    );

    let git_before = sc.git_snapshot();
    let seen_before = events_seen(&sc, &sid);
    let compact = sc.compact(&sid, "keep the parser plan");
    assert_eq!(compact.session_id, sid, "/compact keeps the session");
    let boundaries = compact.stream("system", "compact_boundary");
    assert_eq!(boundaries.len(), 1);
    assert_eq!(boundaries[0]["compact_metadata"]["trigger"], "manual");

    let log = sc.log();
    let summaries = log.of_kind("summary");
    assert_eq!(summaries.len(), 1, "{:?}", log.labels());
    assert!(
        summaries[0].contains("keep the parser plan"),
        "the /compact instructions reach the summarizer"
    );
    let hooks = compact.hooks();
    let sequence = hook_sequence(&compact);
    let order: Vec<(&str, &str)> = sequence
        .iter()
        .filter(|(e, _)| e == "PreCompact" || e == "PostCompact" || e == "SessionStart")
        .map(|(e, q)| (e.as_str(), q.as_str()))
        .collect();
    assert_eq!(
        order,
        [
            ("SessionStart", "resume"),
            ("PreCompact", "manual"),
            ("SessionStart", "compact"),
            ("PostCompact", "manual"),
        ]
    );
    assert_hooks_reached_hookd(&compact, &hooks, seen_before, events_seen(&sc, &sid));
    assert_new_epoch(&sc, &sid, "manual");
    assert_eq!(
        sc.git_snapshot(),
        git_before,
        "the compaction left HEAD, index, stash and working tree as they were"
    );
    // Manual compaction shows PreCompact's output after "completed successfully: ".
    let transcript = sc.transcript(&sid);
    let shown = transcript
        .iter()
        .filter_map(|e| e["message"]["content"].as_str())
        .find(|t| t.contains("<local-command-stdout>Compacted"))
        .and_then(|t| t.split("completed successfully: ").nth(1))
        .map(|t| t.lines().next().unwrap_or("").to_owned());
    workflow_checks::pre_compact_pipeline(
        &sc,
        &git_before,
        "src/parser.rs",
        summaries[0],
        Some(shown.as_deref().unwrap_or("")),
        &task_names(),
    );

    sc.resume(&sid, "TURN 3: carry on with the tests");
    let log = sc.log();
    let after = log.answered_with("t3.text");
    assert!(
        after.first_message_text().starts_with(CONTINUATION),
        "the first request after /compact opens with the continuation: {}",
        after.first_message_text()
    );
    assert!(after.contains("E2E_MANUAL_SUMMARY"));
    for event in ["PreCompact", "PostCompact"] {
        assert!(
            hook_reported_success(after.text(), event),
            "Claude Code reports {event} succeeded"
        );
    }
    assert_tokens(&sc, &sid, 6_000);
    let prompt = workflow_checks::resume_prompt_reached_model(&sc, after, &task_names());
    // A summary without a `hookd-state` block leaves the resume prompt as the capture made it.
    assert!(
        !prompt.contains("Approaches Ruled Out") && !prompt.contains("### Key Decisions Made"),
        "{prompt}"
    );
    let state = hookd_tests::saved_state(&sc.project);
    assert!(
        !state["sources"]
            .as_array()
            .unwrap()
            .contains(&json!("summary"))
    );
    assert_eq!(state["summary"], Value::Null);
    let merged = sc.events("summary");
    assert!(
        merged.len() >= 2,
        "SubagentStop and PostCompact at least: {merged:?}"
    );
    assert!(merged.iter().all(|e| e["merged"] == false), "{merged:?}");
    println!("--- the resume prompt the model got (summary without a block) ---\n{prompt}");
}

/// What the mock summarizer answers when asked for the `hookd-state` block.
const SUMMARY_WITH_BLOCK: &str = "<summary>
E2E_BLOCK_SUMMARY: the parser is written; its tests come next.

```hookd-state
decisions:
  - {topic: Parser, decision: one function per line kind, reasoning: easier to test}
rejected:
  - {approach: a parser generator, why: a build step for four rules}
blockers:
  - {issue: the CI runner lacks rustfmt, status: workaround, notes: format locally}
  - {issue: flaky timing test, status: resolved, notes: fake clock}
active_task: Add tests for the parser
progress_notes: parse_line written; no tests yet
next_actions:
  - {action: write, target: tests for parse_line, priority: 1, context_needed: [src/parser.rs]}
```
</summary>";

/// The summary carries a `hookd-state` block: SubagentStop merges it before
/// SessionStart(compact), so the resume prompt of the next request holds its
/// decisions and blockers, and the saved state says where they came from.
#[test]
fn manual_compact_with_a_hookd_state_block() {
    let Some(mut sc) = Scenario::builder("summary-block")
        .env("CLAUDE_CODE_ENABLE_TASKS", "false")
        .replies(todo_write_then(
            "printf 'pub fn parse_line() {}\\n' > src/parser.rs",
        ))
        .summary(SUMMARY_WITH_BLOCK, 4_000)
        .start()
    else {
        return;
    };
    let first = sc.start_session("TURN 1: plan the parser work and start it");
    let sid = first.session_id.clone();
    // The startup hint reached the model.
    let log = sc.log();
    assert!(
        log.answered_with("t1.todo").contains("`hookctl decision"),
        "the records hint in the first request"
    );
    let compact = sc.compact(&sid, "keep the parser plan");
    let order: Vec<String> = hook_sequence(&compact)
        .into_iter()
        .filter(|(e, _)| {
            ["PreCompact", "SubagentStop", "SessionStart", "PostCompact"].contains(&e.as_str())
        })
        .map(|(e, q)| format!("{e}({q})"))
        .collect();
    assert_eq!(
        order,
        [
            "SessionStart(resume)",
            "PreCompact(manual)",
            "SubagentStop()",
            "SessionStart(compact)",
            "PostCompact(manual)"
        ]
    );
    let log = sc.log();
    let summaries = log.of_kind("summary");
    assert!(
        summaries[0].contains("info string `hookd-state "),
        "PreCompact asked the summarizer for the block"
    );

    sc.resume(&sid, "TURN 3: carry on with the tests");
    let log = sc.log();
    let after = log.answered_with("t3.text");
    let prompt = workflow_checks::resume_prompt_reached_model(&sc, after, &task_names());
    for said in [
        "### Key Decisions Made",
        "**Parser**: one function per line kind (because easier to test)",
        "### Approaches Ruled Out",
        "a parser generator (a build step for four rules)",
        "### Current Blockers",
        "the CI runner lacks rustfmt (workaround): format locally",
        "**write** tests for parse_line",
    ] {
        assert!(
            prompt.contains(said),
            "{said:?} in the resume prompt the model got:\n{prompt}"
        );
    }
    let state = hookd_tests::saved_state(&sc.project);
    assert!(
        state["sources"]
            .as_array()
            .unwrap()
            .contains(&json!("summary")),
        "{}",
        state["sources"]
    );
    assert_eq!(state["summary"]["from"], "subagent-stop");
    let decisions = state["decisions"].as_array().unwrap();
    assert!(!decisions.is_empty(), "the block's decisions are in");
    for d in decisions {
        assert_eq!(d["source"], "summary", "{d}");
    }
    assert_eq!(state["blockers"].as_array().unwrap().len(), 2);
    let merged = sc.events("summary");
    assert_eq!(merged[0]["from"], "subagent-stop");
    assert_eq!(merged[0]["merged"], true, "{merged:?}");
    assert_eq!(
        merged[1]["why"], "this summary was merged already",
        "{merged:?}"
    );
    println!("--- the resume prompt the model got (summary with a block) ---\n{prompt}");
}

#[test]
fn auto_compaction_with_tasks() {
    let Some(mut sc) = Scenario::builder("auto-compact")
        // 2.1.330 does not auto-compact claude-sonnet-4-5 by itself (tried up to
        // 990k reported tokens); with this window it compacts above 167,000.
        .env("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "200000")
        .replies(vec![
            Reply::tool(
                "t1.search",
                20_000,
                "ToolSearch",
                json!({"query": "select:TaskCreate,TaskUpdate", "max_results": 5}),
            ),
            Reply::tool(
                "t1.create1",
                24_000,
                "TaskCreate",
                json!({"subject": TASKS[0].0, "description": "Parse the config format"}),
            ),
            Reply::tool(
                "t1.create2",
                26_000,
                "TaskCreate",
                json!({"subject": TASKS[1].0, "description": "Cover every rule"}),
            ),
            Reply::tool(
                "t1.create3",
                28_000,
                "TaskCreate",
                json!({"subject": TASKS[2].0, "description": "Explain every flag"}),
            ),
            Reply::tool(
                "t1.update",
                30_000,
                "TaskUpdate",
                json!({"taskId": "1", "status": "in_progress"}),
            ),
            Reply::text("t1.text", 30_100, "Planned; starting the parser."),
            Reply::bash(
                "t2.parser",
                100_000,
                "printf 'pub fn parse_line() {}\\n' > src/parser.rs",
            ),
            Reply::bash(
                "t2.check",
                COMPACTS_AT * 96 / 100,
                "grep -c parse src/parser.rs",
            ),
            Reply::bash("t2.more", 170_000, "echo '- parses lines' >> README.md"),
            Reply::text("t2.after", 6_000, "Back at work after the compaction."),
        ])
        .summary(
            "<summary>E2E_AUTO_SUMMARY: parser started.</summary>",
            4_000,
        )
        .start()
    else {
        return;
    };
    let first = sc.start_session("TURN 1: plan the parser work");
    let sid = first.session_id.clone();
    let transcript = sc.transcript(&sid);
    let creates = tool_uses(&transcript, "TaskCreate");
    assert_eq!(creates.len(), 3, "the agent planned with TaskCreate");
    for (i, create) in creates.iter().enumerate() {
        let result = tool_result(&transcript, create["id"].as_str().unwrap());
        assert!(
            result.contains(&format!(
                "Task #{} created successfully: {}",
                i + 1,
                TASKS[i].0
            )),
            "{result}"
        );
    }
    let update = tool_uses(&transcript, "TaskUpdate");
    assert_eq!(update.len(), 1);
    assert!(
        tool_result(&transcript, update[0]["id"].as_str().unwrap()).contains("Updated task #1")
    );

    let git_before = sc.git_snapshot();
    let seen_before = events_seen(&sc, &sid);
    let second = sc.resume(&sid, "TURN 2: write the parser");
    let boundaries = second.stream("system", "compact_boundary");
    assert_eq!(boundaries.len(), 1, "one auto compaction");
    assert_eq!(boundaries[0]["compact_metadata"]["trigger"], "auto");
    assert_eq!(
        boundaries[0]["compact_metadata"]["pre_tokens"]
            .as_u64()
            .map(|t| t >= 170_000),
        Some(true)
    );

    let log = sc.log();
    let summaries = log.of_kind("summary");
    assert_eq!(summaries.len(), 1, "{:?}", log.labels());
    let order = |label: &str| log.answered_with(label).n;
    assert!(
        order("t2.more") < summaries[0].n && summaries[0].n < order("t2.after"),
        "compaction right after the reply at 170,000 tokens: {:?}",
        log.labels()
    );
    // The 95% level fired at most once, and its warning reached the model
    // at most once: after the tool call whose reply crossed it, or (hooks
    // never wait for Claude Code to write that reply) after the next one,
    // whose request is the compaction's. When Claude Code wrote the reply
    // only as it compacted, the compaction made the level stale: its words
    // are dropped, and the pre-compact save stands in for its save.
    let levels: Vec<f64> = sc
        .events("threshold")
        .iter()
        .filter_map(|e| e["level"].as_f64())
        .collect();
    assert!(
        levels.iter().filter(|l| **l == 0.95).count() <= 1,
        "{levels:?}"
    );
    const CRITICAL: &str = "CRITICAL: Context at 95% of the way to compaction.";
    if let Some(critical) = log.first_containing(CRITICAL) {
        eprintln!("95%: fired and said in {}", critical.label);
        assert!(
            ["t2.more", "t2.after"].contains(&critical.label.as_str()),
            "{}",
            critical.label
        );
        assert!(levels.contains(&0.95), "said, so fired: {levels:?}");
    } else {
        eprintln!("95%: not said (levels fired {levels:?}): the compaction made it stale");
    }
    for request in &log.requests {
        assert!(request.count(CRITICAL) <= 1, "{}", request.label);
    }

    let hooks = second.hooks();
    let compaction_hooks: Vec<(String, String)> = hook_sequence(&second)
        .into_iter()
        .filter(|(e, _)| e == "PreCompact" || e == "PostCompact" || e == "SessionStart")
        .collect();
    assert_eq!(
        compaction_hooks,
        [
            ("SessionStart".to_owned(), "resume".to_owned()),
            ("PreCompact".to_owned(), "auto".to_owned()),
            ("SessionStart".to_owned(), "compact".to_owned()),
            ("PostCompact".to_owned(), "auto".to_owned()),
        ]
    );
    assert_hooks_reached_hookd(&second, &hooks, seen_before, events_seen(&sc, &sid));
    assert_new_epoch(&sc, &sid, "auto");
    let now = sc.git_snapshot();
    assert_eq!(
        (&now.head, &now.index, &now.stash),
        (&git_before.head, &git_before.index, &git_before.stash),
        "HEAD, index and stash untouched"
    );

    let after = log.answered_with("t2.after");
    // Mid-turn, the continuation comes after the session context in the first message.
    assert!(
        after.first_message_text().contains(CONTINUATION),
        "the first request after the compaction carries the continuation: {}",
        after.first_message_text()
    );
    assert!(after.contains("E2E_AUTO_SUMMARY"));
    assert_tokens(&sc, &sid, 6_000);
    workflow_checks::pre_compact_pipeline(
        &sc,
        &git_before,
        "src/parser.rs",
        summaries[0],
        None,
        &task_names(),
    );
    workflow_checks::resume_prompt_reached_model(&sc, after, &task_names());
}

//! After compaction: the saved state validated against the repository, the
//! resume prompt injected, and the check that it reached the model.

use hookd_tests::{HookAnswer, Scenario, stderr, stdout};
use serde_json::{Value, json};

/// The agent at work on a parser: a repository with one commit and a change
/// since, and a session with a request and a todo list.
fn parser_session() -> Scenario {
    let mut s = Scenario::build()
        .repository(|repo| {
            repo.write("src/lib.rs", "pub fn a() {}\n");
            repo.write("README.md", "# demo\n");
            repo.commit_all("initial");
            repo.write("src/lib.rs", "pub fn a() {}\npub fn b() {}\n");
        })
        .session("r1-session")
        .start();
    let t = &mut s.transcript;
    t.prompt("make the parser faster");
    t.todo_write(
        "tw",
        &[
            ("Profile the parser", "completed", "Profiling"),
            (
                "Cache the token table",
                "in_progress",
                "Caching the token table",
            ),
            (
                "Benchmark against README.md numbers",
                "pending",
                "Benchmarking",
            ),
        ],
        120_000,
    );
    let lib = s.project.join("src/lib.rs").display().to_string();
    let t = &mut s.transcript;
    t.tool_use(
        "e1",
        "Edit",
        json!({"file_path": lib, "old_string": "}", "new_string": "}\npub fn b() {}"}),
        120_000,
    );
    t.tool_result("e1", "The file has been updated.", json!({}));
    s
}

use hookd_tests::additional_context as context;

/// The lines of the prompt's section whose heading starts with `heading`,
/// up to the next heading.
fn section(prompt: &str, heading: &str) -> String {
    let mut lines = prompt.lines().skip_while(|l| !l.starts_with(heading));
    let Some(first) = lines.next() else {
        panic!("no {heading:?} in:\n{prompt}");
    };
    let rest = lines.take_while(|l| !l.starts_with('#'));
    std::iter::once(first)
        .chain(rest)
        .collect::<Vec<_>>()
        .join("\n")
}

fn marker_of(prompt: &str) -> String {
    let start = prompt.rfind("[hookd-resume ").expect("a marker");
    prompt[start..=start + prompt[start..].find(']').unwrap()].to_owned()
}

#[test]
fn a_replayed_compaction_gets_the_resume_prompt_with_its_checks() {
    let s = parser_session();
    let out = s.compact(120_000, 3_000);
    let prompt = out.context().to_owned();
    assert!(prompt.chars().count() <= 9000);
    // The prompt for the model, its checks and the summary for the person.
    insta::assert_snapshot!(s.answer_normalized(&out), @r#"
        hookSpecificOutput.additionalContext: |
          ## Context Recovery - Resuming Previous Session

          Your context was compacted. hookd saved where the work stood just before; pick it up from here.

          ### Checks Against the Repository Now
          - ✓ **git_status_matches**: HEAD is still [SHA] on main, and the working tree is as saved
          - ✓ **workflow_exists**: no workflow file was in use; .workflow/ is in place
          - ✓ **task_valid**: "Cache the token table" is still open (in_progress)

          ### Where You Stopped
          - **Objective**: make the parser faster
          - **In progress**: Cache the token table (Caching the token table)
          - **File**: `src/lib.rs`
          - **Last step**: Edit `src/lib.rs`: succeeded

          ### Next Actions (in order)
          1. **finish** Cache the token table
          2. **benchmark** against README.md numbers
             - Read first: README.md

          ### Open Tasks
          - (in progress) Cache the token table (Caching the token table)
          - (pending) Benchmark against README.md numbers (Benchmarking) (files: `README.md`)

          ### Progress
          1 of 3 tasks completed.
          - [x] Profile the parser
          - [ ] Cache the token table (in progress: Caching the token table)
          - [ ] Benchmark against README.md numbers

          ### Context to Reload
          Read these again before you continue, most relevant first (10 tokens of a 67,450-token budget, sized for the room left: 164,000 of 167,000 tokens free: room for every file). Where the level is not `full`, `hookctl summarize <file> --level <level>` gives just that much.
          - `src/lib.rs`: reference, full, ~8 tokens, relevance 0.44
          - `README.md`: reference, full, ~2 tokens, relevance 0.41

          ### Recent Changes
          - `src/lib.rs` - modified: +1 −0 lines; added fn b; edited by the agent (1 edit)

          ### Session Info
          - **Capture**: compact_[STAMP] (claude-code session `r1-session`)
          - **Captured At**: [TIME] (before /compact)
          - **Context Usage**: 71% of the way to compaction (120,000 of 167,000 tokens), 60% of the window

          ### Checkpoint
          The working tree was committed as `[SHA]` on `refs/hookd/checkpoints/main` (your branch and index were not touched). Inspect it with `git show --stat [SHA]` or `git diff HEAD [SHA]`; `hookctl checkpoint restore [SHA] --path <file>` brings a file back.

          ---
          **Action Required**: Continue from next action 1 above: **finish** Cache the token table.
          [hookd-resume [MARKER]]
        hookSpecificOutput.hookEventName: "SessionStart"
        systemMessage: "Saved state from [TIME] (before /compact) · 1 of 3 tasks done (33%) · next: finish Cache the token table · last step: Edit src/lib.rs: succeeded"
    "#);

    s.hook("PostCompact(trigger=manual)", "post-compact");
    let post = s.events("post_compact");
    assert_eq!(post.len(), 1);
    assert_eq!(post[0]["trigger"], "manual");
    assert_eq!(
        post[0]["compact_summary"],
        hookd_tests::payload("PostCompact(trigger=manual)")["compact_summary"],
        "the summary Claude Code sent"
    );
    assert_eq!(s.status().epoch, 2);
    let resume = &s.events("resume")[0];
    assert_eq!(resume["injected"], true);
    assert_eq!(resume["marker"], Value::from(marker_of(&prompt)));
}

#[test]
fn an_arrived_prompt_is_not_injected_again() {
    let s = parser_session();
    let prompt = context(&s.compact(120_000, 3_000));
    // Claude Code records the injection in the transcript.
    s.transcript.context_arrived("SessionStart", &prompt);
    let next = s.hook("UserPromptSubmit", "user-prompt-submit");
    assert_eq!(next, Value::Null, "nothing more to inject");
    let arrival = s.events("resume_arrival");
    assert_eq!(arrival.len(), 1);
    assert_eq!(arrival[0]["arrived"], true);
    let resume = s.status().resume.expect("a resume mark");
    assert_eq!(resume.what, "arrived");
    assert!(resume.ok);
    // Checked once: later hooks do not look again.
    assert_eq!(s.hook("PostToolUse", "post-tool-use"), Value::Null);
    assert_eq!(s.events("resume_arrival").len(), 1);
}

#[test]
fn a_lost_prompt_is_injected_once_more() {
    let s = parser_session();
    let prompt = context(&s.compact(120_000, 3_000));
    // The transcript shows no trace of it: inject again, through the next hook.
    let again = s.hook("UserPromptSubmit", "user-prompt-submit");
    assert_eq!(context(&again), prompt, "the same prompt, marker and all");
    assert_eq!(
        again["hookSpecificOutput"]["hookEventName"],
        "UserPromptSubmit"
    );
    // Still missing after that: give up, and say so; no third injection.
    let third = s.hook("PostToolUse", "post-tool-use");
    assert_eq!(third, Value::Null);
    let actions: Vec<String> = s
        .events("resume_arrival")
        .iter()
        .map(|e| e["action"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        actions,
        vec!["injected again", "did not arrive, even injected again"]
    );
    assert!(!s.status().resume.expect("a resume mark").ok);
}

#[test]
fn a_prompt_that_arrives_on_the_second_try_is_recorded() {
    let s = parser_session();
    let prompt = context(&s.compact(120_000, 3_000));
    let again = s.hook("PostToolUse", "post-tool-use");
    assert_eq!(context(&again), prompt);
    s.transcript.context_arrived("PostToolUse", &prompt);
    assert_eq!(s.hook("PostToolUse", "post-tool-use"), Value::Null);
    let last = s.events("resume_arrival").pop().unwrap();
    assert_eq!(
        (last["arrived"].clone(), last["action"].clone()),
        (json!(true), json!("arrived"))
    );
}

#[test]
fn a_compaction_without_pre_compact_is_captured_before_the_resume() {
    // Public reports say PreCompact sometimes does not fire: hookd captures
    // at SessionStart(compact) what it still can, then resumes from that.
    let s = parser_session();
    s.transcript.boundary("auto", 120_000, 3_000);
    let out = s.hook("SessionStart(source=compact)", "session-start");
    insta::assert_snapshot!(s.normalize(out.context()), @r#"
        ## Context Recovery - Resuming Previous Session

        Your context was compacted. hookd saved where the work stood just before; pick it up from here.

        ### Checks Against the Repository Now
        - ✓ **git_status_matches**: HEAD is still [SHA] on main, and the working tree is as saved
        - ✓ **workflow_exists**: no workflow file was in use; .workflow/ is in place
        - ✓ **task_valid**: "Cache the token table" is still open (in_progress)

        ### Where You Stopped
        - **Objective**: make the parser faster
        - **In progress**: Cache the token table (Caching the token table)
        - **File**: `src/lib.rs`
        - **Last step**: Edit `src/lib.rs`: succeeded

        ### Next Actions (in order)
        1. **finish** Cache the token table
        2. **benchmark** against README.md numbers
           - Read first: README.md

        ### Open Tasks
        - (in progress) Cache the token table (Caching the token table)
        - (pending) Benchmark against README.md numbers (Benchmarking) (files: `README.md`)

        ### Progress
        1 of 3 tasks completed.
        - [x] Profile the parser
        - [ ] Cache the token table (in progress: Caching the token table)
        - [ ] Benchmark against README.md numbers

        ### Context to Reload
        Read these again before you continue, most relevant first (10 tokens of a 67,450-token budget, sized for the room left: 142,000 of 167,000 tokens free after the compaction (estimated): room for every file). Where the level is not `full`, `hookctl summarize <file> --level <level>` gives just that much.
        - `src/lib.rs`: reference, full, ~8 tokens, relevance 0.44
        - `README.md`: reference, full, ~2 tokens, relevance 0.41

        ### Recent Changes
        - `src/lib.rs` - modified: +1 −0 lines; added fn b; edited by the agent (1 edit)

        ### Session Info
        - **Capture**: compact_[STAMP] (claude-code session `r1-session`)
        - **Captured At**: [TIME] (after a compaction no hook announced)
        - **Context Usage**: 1% of the way to compaction (3,000 of 167,000 tokens), 2% of the window

        ### Checkpoint
        The working tree was committed as `[SHA]` on `refs/hookd/checkpoints/main` (your branch and index were not touched). Inspect it with `git show --stat [SHA]` or `git diff HEAD [SHA]`; `hookctl checkpoint restore [SHA] --path <file>` brings a file back.

        ---
        **Action Required**: Continue from next action 1 above: **finish** Cache the token table.
        [hookd-resume [MARKER]]
    "#);
    let compactions = s.events("compaction");
    assert_eq!(compactions.len(), 1, "{compactions:?}");
    assert_eq!(compactions[0]["announced"], false);
    assert!(
        s.repo().checkpoint_ref().is_some_and(|sha| sha.len() == 40),
        "checkpointed too"
    );
}

#[test]
fn no_state_no_injection() {
    let s = Scenario::build()
        .repository(|repo| {
            // A file where .workflow/ should be: nothing can be saved here.
            std::fs::write(repo.dir.join(".workflow"), "in the way").unwrap();
        })
        .session("f-session")
        .start();
    let out = s.hook("SessionStart(source=compact)", "session-start");
    assert_eq!(out["systemMessage"], hookd::resume::NO_STATE);
    assert!(
        out.get("hookSpecificOutput").is_none(),
        "nothing injected: {out}"
    );
    std::fs::remove_file(s.project.join(".workflow")).unwrap();
    // A plain --resume without a state says nothing at all.
    let says = |fixture: &str| {
        let out =
            s.sb.hook("session-start", &s.transcript.payload(fixture, &s.project));
        stdout(&out)
    };
    assert_eq!(says("SessionStart(source=resume)"), "");
    // Neither does /clear (a new session, nothing belongs to it).
    assert_eq!(says("SessionStart(source=clear)"), "");
}

#[test]
fn a_corrupt_state_is_reported_not_trusted() {
    let s = parser_session();
    s.hook("PreCompact(trigger=manual)", "pre-compact");
    std::fs::write(
        s.project.join(".workflow/context_state.json"),
        "{\"session_id\": \"compact_1\", oops",
    )
    .unwrap();
    s.transcript.boundary("manual", 120_000, 3_000);
    let out = s.hook("SessionStart(source=compact)", "session-start");
    // Said to the person; nothing injected.
    insta::assert_snapshot!(s.answer_normalized(&out), @r#"systemMessage: "hookd: [TEMP]/proj/.workflow/context_state.json is corrupt (line 1, column 29: key must be a string at line 1 column 29); not used""#);
}

#[test]
fn another_sessions_state_is_not_injected() {
    let s = parser_session();
    s.hook("PreCompact(trigger=manual)", "pre-compact");
    // A second session of the same project saves later.
    let other = s.session("other-session");
    s.hook_of(&other, "PreCompact(trigger=manual)", "pre-compact", |_| {});
    // r1 compacts: its own capture comes from the history, not the other session's file.
    s.transcript.boundary("manual", 120_000, 3_000);
    let prompt = context(&s.hook("SessionStart(source=compact)", "session-start"));
    // r1's own state.
    insta::assert_snapshot!(s.normalize(&section(&prompt, "### Session Info")), @r#"
        ### Session Info
        - **Capture**: compact_[STAMP] (claude-code session `r1-session`)
        - **Captured At**: [TIME] (before /compact)
        - **Context Usage**: 71% of the way to compaction (120,000 of 167,000 tokens), 60% of the window
    "#);
}

#[test]
fn checks_report_what_moved_since_the_capture() {
    let mut s = parser_session();
    s.hook("PreCompact(trigger=manual)", "pre-compact");
    // Meanwhile: a commit, a changed file, and the active task completed.
    s.repo()
        .write("README.md", "# demo, edited after the capture\n");
    s.repo().git(&["commit", "-qam", "someone else's commit"]);
    s.repo().write("src/extra.rs", "new\n");
    s.transcript.tool_use("tw2", "TodoWrite", json!({"todos": [
        {"content": "Profile the parser", "status": "completed", "activeForm": "Profiling"},
        {"content": "Cache the token table", "status": "completed", "activeForm": "Caching the token table"}
    ]}), 130_000);
    s.transcript.boundary("manual", 130_000, 3_000);
    let out = s.hook("SessionStart(source=compact)", "session-start");
    insta::assert_snapshot!(s.answer_normalized(&out), @r#"
        hookSpecificOutput.additionalContext: |
          ## Context Recovery - Resuming Previous Session

          Your context was compacted. hookd saved where the work stood just before; pick it up from here.

          ### Checks Against the Repository Now
          - ⚠ **git_status_matches**: HEAD moved from [SHA] to [SHA]; files changed since the capture: README.md, src/extra.rs
          - ✓ **workflow_exists**: no workflow file was in use; .workflow/ is in place
          - ⚠ **task_valid**: "Cache the token table" was completed after the capture

          ### Where You Stopped
          - **Objective**: make the parser faster
          - **In progress**: Cache the token table (Caching the token table)
          - **File**: `src/lib.rs`
          - **Last step**: Edit `src/lib.rs`: succeeded

          ### Next Actions (in order)
          1. **finish** Cache the token table
          2. **benchmark** against README.md numbers
             - Read first: README.md

          ### Open Tasks
          - (in progress) Cache the token table (Caching the token table)
          - (pending) Benchmark against README.md numbers (Benchmarking) (files: `README.md`)

          ### Progress
          1 of 3 tasks completed.
          - [x] Profile the parser
          - [ ] Cache the token table (in progress: Caching the token table)
          - [ ] Benchmark against README.md numbers

          ### Context to Reload
          Read these again before you continue, most relevant first (10 tokens of a 67,450-token budget, sized for the room left: 164,000 of 167,000 tokens free: room for every file). Where the level is not `full`, `hookctl summarize <file> --level <level>` gives just that much.
          - `src/lib.rs`: reference, full, ~8 tokens, relevance 0.44
          - `README.md`: reference, full, ~2 tokens, relevance 0.41

          ### Recent Changes
          - `src/lib.rs` - modified: +1 −0 lines; added fn b; edited by the agent (1 edit)

          ### Session Info
          - **Capture**: compact_[STAMP] (claude-code session `r1-session`)
          - **Captured At**: [TIME] (before /compact)
          - **Context Usage**: 71% of the way to compaction (120,000 of 167,000 tokens), 60% of the window

          ### Checkpoint
          The working tree was committed as `[SHA]` on `refs/hookd/checkpoints/main` (your branch and index were not touched). Inspect it with `git show --stat [SHA]` or `git diff HEAD [SHA]`; `hookctl checkpoint restore [SHA] --path <file>` brings a file back.

          ---
          **Action Required**: Continue from next action 1 above: **finish** Cache the token table.
          [hookd-resume [MARKER]]
        hookSpecificOutput.hookEventName: "SessionStart"
        systemMessage: |
          Saved state from [TIME] (before /compact) · 1 of 3 tasks done (33%) · next: finish Cache the token table · last step: Edit src/lib.rs: succeeded
          ⚠ git_status_matches: HEAD moved from [SHA] to [SHA]; files changed since the capture: README.md, src/extra.rs
          ⚠ task_valid: "Cache the token table" was completed after the capture
    "#);

    // A branch switch is worse than a warning.
    s.repo().git(&["checkout", "-q", "-b", "elsewhere"]);
    let out = s.hookctl(&["validate", "--json"]);
    assert_eq!(out.status.code(), Some(1), "a failed check fails validate");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["checks"][0]["status"], "fail");
    let detail = report["checks"][0]["detail"].as_str().unwrap();
    insta::assert_snapshot!(s.normalize(detail), @"the state was saved on branch main, but HEAD is now on elsewhere");
}

#[test]
fn the_workflow_file_disappearing_fails_its_check() {
    let s = parser_session();
    s.repo().write(
        ".workflow/workflow_state.yml",
        "workflow_id: wf_1\nphase: BUILDING\n",
    );
    s.hook("PreCompact(trigger=manual)", "pre-compact");
    std::fs::remove_file(s.project.join(".workflow/workflow_state.yml")).unwrap();
    s.transcript.boundary("manual", 120_000, 3_000);
    let out = s.hook("SessionStart(source=compact)", "session-start");
    // The checks, what this test is about. hookd's own files, written after
    // the capture into a `.workflow/` git was never told to ignore, are no
    // change of the agent's.
    let checks: Vec<&str> = out
        .context()
        .lines()
        .skip_while(|l| !l.starts_with("### Checks"))
        .take_while(|l| !l.is_empty())
        .collect();
    insta::assert_snapshot!(s.normalize(&checks.join("\n")), @r#"
        ### Checks Against the Repository Now
        - ✓ **git_status_matches**: HEAD is still [SHA] on main, and the working tree is as saved
        - ✗ **workflow_exists**: [TEMP]/proj/.workflow/workflow_state.yml is gone
        - ✓ **task_valid**: "Cache the token table" is still open (in_progress)
    "#);
}

#[test]
fn hookctl_resume_and_validate() {
    let s = parser_session();
    insta::assert_snapshot!(s.hookctl_normalized(&["resume", "--print"]), @r#"
        No saved state for this project yet: hookd saves one before each compaction, and `hookctl save` saves one now.
        --- exit 1
    "#);
    s.hookctl(&["save"]);
    // A printed prompt needs no arrival marker.
    insta::assert_snapshot!(s.hookctl_normalized(&["resume", "--print"]), @r#"
        ## Context Recovery - Resuming Previous Session

        This is where the work stood when hookd saved it (with hookctl save); pick it up from here.

        ### Checks Against the Repository Now
        - ✓ **git_status_matches**: HEAD is still [SHA] on main, and the working tree is as saved
        - ✓ **workflow_exists**: no workflow file was in use; .workflow/ is in place
        - ✓ **task_valid**: no active task was recorded

        ### Where You Stopped
        - **In progress**: no task was recorded as in progress
        - **File**: `src/lib.rs`

        ### Context to Reload
        Read these again before you continue, most relevant first (8 tokens of a 85,500-token budget). Where the level is not `full`, `hookctl summarize <file> --level <level>` gives just that much.
        - `src/lib.rs`: reference, full, ~8 tokens, relevance 0.4

        ### Recent Changes
        - `src/lib.rs` - modified: +1 −0 lines; added fn b

        ### Session Info
        - **Capture**: save_[STAMP]
        - **Captured At**: [TIME] (with hookctl save)

        ### Checkpoint
        The working tree was committed as `[SHA]` on `refs/hookd/checkpoints/main` (your branch and index were not touched). Inspect it with `git show --stat [SHA]` or `git diff HEAD [SHA]`; `hookctl checkpoint restore [SHA] --path <file>` brings a file back.

        ---
        **Action Required**: No next step was recorded: check the changes above, then ask the person what to do next.
    "#);
    insta::assert_snapshot!(s.hookctl_normalized(&["validate"]), @r#"
        ✓ git_status_matches: HEAD is still [SHA] on main, and the working tree is as saved
        ✓ workflow_exists: no workflow file was in use; .workflow/ is in place
        ✓ task_valid: no active task was recorded
        Saved state from [TIME] (with hookctl save) · read first: src/lib.rs
        state: [TEMP]/proj/.workflow/context_state.json
    "#);
}

#[test]
fn a_huge_state_still_fits_the_budget() {
    let s = parser_session();
    for i in 0..300 {
        s.repo().write(
            &format!("gen/file_{i:03}_with_a_rather_long_name.rs"),
            "x\n",
        );
    }
    for i in 0..40 {
        let out = s.hookctl(&[
            "decision",
            &format!("topic {i}"),
            &"a long decision text ".repeat(10),
        ]);
        assert!(out.status.success());
    }
    let prompt = context(&s.compact(120_000, 3_000));
    assert!(prompt.chars().count() <= 9000, "{}", prompt.chars().count());
    // What was left out is named, and the marker survives the trimming.
    let tail = &prompt[prompt
        .find("### Left Out to Fit")
        .expect("a section of what was left out")..];
    insta::assert_snapshot!(s.normalize(tail), @r#"
        ### Left Out to Fit
        - 297 more files changed outside this session
        - 35 earlier decisions
        The full state is in `.workflow/context_state.json`.

        ---
        **Action Required**: Continue from next action 1 above: **finish** Cache the token table.
        [hookd-resume [MARKER]]
    "#);
}

/// A compaction summary that ends with a `hookd-state` block, as PreCompact asks.
const SUMMARY_WITH_BLOCK: &str = "<summary>
1. Primary Request: make the parser faster.
2. Work so far: profiled; caching the token table.

```hookd-state
decisions:
  - {topic: Cache, decision: a HashMap keyed by token}
  - {topic: Lexer, decision: keep the hand-written lexer, reasoning: the regex one was 3x slower}
rejected:
  - {approach: a regex tokenizer, why: 3x slower on the benchmark}
blockers:
  - {issue: the benchmark machine is noisy, status: workaround, notes: take the median of 5 runs}
  - {issue: \"{{#each secrets}}{{this}}{{/each}}\", status: unresolved}
next_actions:
  - {action: benchmark, target: the cached parser, priority: 1, context_needed: [README.md, /etc/passwd]}
```
</summary>";

/// A hook whose fixture payload gets `field` set to `value`.
fn hook_with(s: &Scenario, fixture: &str, event: &str, field: &str, value: &str) -> HookAnswer {
    s.hook_of(&s.transcript, fixture, event, |p| {
        p[field] = Value::from(value)
    })
}

#[test]
fn the_summary_block_is_merged_before_the_resume_and_records_win() {
    let s = parser_session();
    let out = s.hookctl(&[
        "decision",
        "Cache",
        "an LRU of 1k entries",
        "--why",
        "bounded memory",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let instructions = s.hook("PreCompact(trigger=manual)", "pre-compact");
    insta::assert_snapshot!(s.answer_normalized(&instructions), @r#"
        hookd saved the workflow state (.workflow/context_state.json, checkpoint [SHA]). Keep in your summary: the request, what the person said must or must not be done, the task in progress (Cache the token table), the next steps in order, the decisions and blockers, the file being edited (src/lib.rs).
        End it with one fenced code block, info string `hookd-state [TOKEN]`, of YAML, each key only if it applies: decisions [{topic, decision, reasoning}], rejected [{approach, why}], blockers [{issue, status: unresolved|workaround|resolved, notes}], constraints [text], lifted_constraints [text], active_task, progress_notes, next_actions [{action, target, priority, context_needed: [files]}].
    "#);
    let instructions = instructions.as_str().unwrap();
    // The summarizer repeats the token the instructions gave.
    let summary = hookd_tests::mock_model::answer_block_request(instructions, SUMMARY_WITH_BLOCK);
    // Claude Code's summarizer ends as a subagent with no type, before SessionStart(compact).
    let out = hook_with(
        &s,
        "SubagentStop",
        "subagent-stop",
        "last_assistant_message",
        &summary,
    );
    assert_eq!(out, Value::Null, "SubagentStop says nothing");
    s.transcript.boundary("manual", 120_000, 3_000);
    let start = s.hook("SessionStart(source=compact)", "session-start");
    let prompt = context(&start);
    // Text from the summary is printed, never run as a template; the
    // recorded decision wins over the summary's on the same topic, quoted
    // under the file it was recorded in; a file outside the project is
    // never asked to be read.
    assert!(!prompt.contains("a HashMap"), "{prompt}");
    assert!(!prompt.contains("/etc/passwd"), "{prompt}");
    let from_the_summary: Vec<String> = [
        "### Next Actions (in order)",
        "### Key Decisions Made",
        "### Approaches Ruled Out",
        "### Current Blockers",
    ]
    .into_iter()
    .map(|heading| section(&prompt, heading))
    .collect();
    insta::assert_snapshot!(s.normalize(&from_the_summary.join("\n")), @r#"
        ### Next Actions (in order)
        1. **benchmark** the cached parser
           - Read first: README.md
        2. **finish** Cache the token table
        3. **benchmark** against README.md numbers
           - Read first: README.md

        ### Key Decisions Made
        - “Cache: an LRU of 1k entries (because bounded memory)” (quoted from `.workflow/records.jsonl`)
        - **Lexer**: keep the hand-written lexer (because the regex one was 3x slower)

        ### Approaches Ruled Out
        - a regex tokenizer (3x slower on the benchmark)

        ### Current Blockers
        - the benchmark machine is noisy (workaround): take the median of 5 runs
        - {{#each secrets}}{{this}}{{/each}} (unresolved)
    "#);

    let state = s.state();
    hookd_tests::assert_valid(&hookd_tests::state_schema(), &state);
    assert_eq!(
        state["sources"],
        json!(["records.jsonl", "transcript", "git", "summary"])
    );
    let sources: Vec<(&str, &str)> = state["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["topic"].as_str().unwrap(), d["source"].as_str().unwrap()))
        .collect();
    assert_eq!(sources, [("Cache", "records.jsonl"), ("Lexer", "summary")]);
    assert_eq!(state["summary"]["from"], "subagent-stop");
    let merged = s.events("summary");
    assert_eq!(merged.len(), 1, "{merged:?}");
    assert_eq!(merged[0]["merged"], true, "{}", merged[0]);

    // PostCompact brings the same summary: it is not merged twice.
    hook_with(
        &s,
        "PostCompact(trigger=manual)",
        "post-compact",
        "compact_summary",
        &summary,
    );
    let merged = s.events("summary");
    assert_eq!(merged.len(), 2);
    assert_eq!(merged[1]["merged"], false);
    assert_eq!(merged[1]["why"], "this summary was merged already");

    // The next capture keeps what the summary decided and ruled out.
    s.hook("PreCompact(trigger=manual)", "pre-compact");
    let state = s.state();
    assert_eq!(
        state["decisions"].as_array().unwrap().len(),
        2,
        "{}",
        state["decisions"]
    );
    assert_eq!(state["rejected"][0]["approach"], "a regex tokenizer");
    assert_eq!(
        state["sources"],
        json!(["records.jsonl", "transcript", "git", "summary"])
    );
}

#[test]
fn a_summary_without_a_block_leaves_the_resume_prompt_as_it_was() {
    let s = parser_session();
    s.hook("PreCompact(trigger=manual)", "pre-compact");
    let saved = s.state();
    hook_with(
        &s,
        "SubagentStop",
        "subagent-stop",
        "last_assistant_message",
        "<summary>Profiled; caching the token table next.</summary>",
    );
    assert_eq!(s.state(), saved, "nothing merged");
    s.transcript.boundary("manual", 120_000, 3_000);
    let prompt = context(&s.hook("SessionStart(source=compact)", "session-start"));
    // The sections of a prompt with nothing decided or ruled out.
    let headings: Vec<&str> = prompt.lines().filter(|l| l.starts_with('#')).collect();
    insta::assert_snapshot!(headings.join("\n"), @r#"
        ## Context Recovery - Resuming Previous Session
        ### Checks Against the Repository Now
        ### Where You Stopped
        ### Next Actions (in order)
        ### Open Tasks
        ### Progress
        ### Context to Reload
        ### Recent Changes
        ### Session Info
        ### Checkpoint
    "#);
    let merged = s.events("summary");
    assert_eq!(merged[0]["merged"], false);
    assert_eq!(merged[0]["why"], "the summary has no hookd-state block");
    // A subagent of the agent's own (it has a type) is no compaction summary.
    let seen = s.status().events_seen;
    s.hook_of(&s.transcript, "SubagentStop", "subagent-stop", |p| {
        p["agent_type"] = "general-purpose".into();
        p["last_assistant_message"] = SUMMARY_WITH_BLOCK.into();
    });
    assert_eq!(s.status().events_seen, seen + 1, "hookd handled it");
    assert_eq!(s.events("summary").len(), 1);
}

//! Where the agent stopped, first: the resume prompt the real daemon gives
//! after a compaction leads with the task in progress (as the agent wrote
//! it), the person's constraints and last request, then the next actions in
//! the order they are to be done; the person's summary (`hookctl resume`)
//! names the same first step.

use hookd_tests::{Scenario, additional_context};
use serde_json::{Value, json};

/// A session adding JWT auth: one task in progress whose description names
/// a file there is and one still to write, one pending task, and a later
/// request. The repository holds `src/jwt.rs`.
fn jwt_session() -> Scenario {
    let mut s = Scenario::build()
        .repository(|repo| {
            repo.write("src/jwt.rs", "pub fn sign() {}\n");
            repo.commit_all("initial");
        })
        .session("jwt-session")
        .start();
    let t = &mut s.transcript;
    t.prompt("Add JWT auth to the API");
    for (id, subject, description) in [
        (
            "1",
            "Implement JWT signing",
            "Sign tokens in src/jwt.rs; write the design to notes/jwt_design.md first",
        ),
        ("2", "Add token refresh endpoint", "POST /auth/refresh"),
    ] {
        let call = format!("create-{id}");
        t.tool_use(
            &call,
            "TaskCreate",
            json!({"subject": subject, "description": description}),
            40_000,
        );
        t.tool_result(
            &call,
            &format!("Task #{id} created successfully: {subject}"),
            json!({"task": {"id": id, "subject": subject}}),
        );
    }
    t.tool_use(
        "update-1",
        "TaskUpdate",
        json!({"taskId": "1", "status": "in_progress"}),
        60_000,
    );
    t.tool_result("update-1", "Updated task #1 status", json!({}));
    t.prompt("Keep the tokens short-lived, fifteen minutes at most");
    t.reply(120_000);
    s
}

/// Where `heading` starts in `prompt`; it must be there.
fn at(prompt: &str, heading: &str) -> usize {
    prompt
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading:?} in:\n{prompt}"))
}

#[test]
fn the_resume_prompt_leads_with_the_task_in_progress_and_continues_from_it() {
    let s = jwt_session();
    let prompt = additional_context(&s.compact(120_000, 3_000));
    // Tasks by their titles, never a bare id.
    assert!(
        !prompt
            .lines()
            .any(|l| l.ends_with(": 1") || l.ends_with(": 2")),
        "{prompt}"
    );
    // The sections in their agreed order; the context figure is a share of
    // the window, as `hookctl status` gives it.
    insta::assert_snapshot!(s.normalize(&prompt), @r#"
        ## Context Recovery - Resuming Previous Session

        Your context was compacted. hookd saved where the work stood just before; pick it up from here.

        ### Checks Against the Repository Now
        - ✓ **git_status_matches**: HEAD is still [SHA] on main, and the working tree is as saved
        - ✓ **workflow_exists**: no workflow file was in use; .workflow/ is in place
        - ✓ **task_valid**: "Implement JWT signing" is still open (in_progress)

        ### Where You Stopped
        - **Objective**: Add JWT auth to the API
        - **In progress**: Implement JWT signing — Sign tokens in src/jwt.rs; write the design to notes/jwt_design.md first (files: `src/jwt.rs`, `notes/jwt_design.md` (to create))
        - **Last step**: Bash `echo hello`: no result yet
        - **Last request**: Keep the tokens short-lived, fifteen minutes at most

        ### Next Actions (in order)
        1. **finish** Implement JWT signing
           - Read first: src/jwt.rs
        2. **add** token refresh endpoint

        ### Open Tasks
        - (in progress) Implement JWT signing — Sign tokens in src/jwt.rs; write the design to notes/jwt_design.md first (files: `src/jwt.rs`, `notes/jwt_design.md` (to create))
        - (pending) Add token refresh endpoint — POST /auth/refresh

        ### Progress
        0 of 2 tasks completed.
        - [ ] Implement JWT signing (in progress)
        - [ ] Add token refresh endpoint

        ### Context to Reload
        Read these again before you continue, most relevant first (5 tokens of a 67,450-token budget, sized for the room left: 164,000 of 167,000 tokens free: room for every file). Where the level is not `full`, `hookctl summarize <file> --level <level>` gives just that much.
        - `src/jwt.rs`: reference, full, ~5 tokens, relevance 0.44

        ### Session Info
        - **Capture**: compact_[STAMP] (claude-code session `jwt-session`)
        - **Captured At**: [TIME] (before /compact)
        - **Context Usage**: 71% of the way to compaction (120,000 of 167,000 tokens), 60% of the window

        ### Checkpoint
        The working tree was committed as `[SHA]` on `refs/hookd/checkpoints/main` (your branch and index were not touched). Inspect it with `git show --stat [SHA]` or `git diff HEAD [SHA]`; `hookctl checkpoint restore [SHA] --path <file>` brings a file back.

        ---
        **Action Required**: Continue from next action 1 above: **finish** Implement JWT signing.
        [hookd-resume [MARKER]]
    "#);

    let state = s.state();
    hookd_tests::assert_valid(&hookd_tests::state_schema(), &state);
    assert_eq!(state["next_actions"][0]["action"], "finish");
    assert_eq!(
        state["tasks"][0]["files"],
        json!([
            {"path": "src/jwt.rs", "to_create": false},
            {"path": "notes/jwt_design.md", "to_create": true},
        ])
    );
    // The person's summary names the same first step.
    insta::assert_snapshot!(s.hookctl_normalized(&["resume"]), @r#"
        ✓ git_status_matches: HEAD is still [SHA] on main, and the working tree is as saved
        ✓ workflow_exists: no workflow file was in use; .workflow/ is in place
        ✓ task_valid: "Implement JWT signing" is still open (in_progress)
        Saved state from [TIME] (before /compact) · 0 of 2 tasks done (0%) · next: finish Implement JWT signing · read first: src/jwt.rs · last step: Bash echo hello: no result yet
        state: [TEMP]/proj/.workflow/context_state.json
        resume prompt written to .workflow/resume_prompt.md (`hookctl resume --print` shows it)
    "#);
}

/// A summary block as the summarizer writes it when PreCompact asked for
/// one, `{token}` standing for the token the instructions gave.
fn summary_with(block: &str) -> String {
    format!(
        "<summary>\n1. Primary Request: JWT auth for the API.\n\n```hookd-state\n{block}\n```\n</summary>"
    )
}

/// One manual compaction whose summary ends with `block`: PreCompact, the
/// summarizer's SubagentStop, the boundary, SessionStart. Returns the
/// instructions PreCompact gave and the resume prompt.
fn compact_with_summary(s: &Scenario, block: &str) -> (String, String) {
    let instructions = s.hook("PreCompact(trigger=manual)", "pre-compact");
    let instructions = instructions.as_str().unwrap().to_owned();
    let summary =
        hookd_tests::mock_model::answer_block_request(&instructions, &summary_with(block));
    let out = s.hook_of(&s.transcript, "SubagentStop", "subagent-stop", |p| {
        p["last_assistant_message"] = Value::from(summary)
    });
    assert_eq!(out, Value::Null, "SubagentStop says nothing");
    s.transcript.boundary("manual", 120_000, 3_000);
    let start = s.hook("SessionStart(source=compact)", "session-start");
    (instructions, additional_context(&start))
}

#[test]
fn the_summarys_next_action_leads_and_the_persons_constraints_carry_across_compactions() {
    let s = jwt_session();
    let (instructions, prompt) = compact_with_summary(
        &s,
        "constraints: [no new dependencies, tokens expire within 15 minutes]
next_actions:
  - {action: rotate, target: the signing key, priority: 2}
  - {action: implement, target: JWT signing, priority: 1, context_needed: [src/jwt.rs]}",
    );
    insta::assert_snapshot!(s.normalize(&instructions), @r#"
        hookd saved the workflow state (.workflow/context_state.json, checkpoint [SHA]). Keep in your summary: the request, what the person said must or must not be done, the task in progress (Implement JWT signing), the next steps in order, the decisions and blockers.
        End it with one fenced code block, info string `hookd-state [TOKEN]`, of YAML, each key only if it applies: decisions [{topic, decision, reasoning}], rejected [{approach, why}], blockers [{issue, status: unresolved|workaround|resolved, notes}], constraints [text], lifted_constraints [text], active_task, progress_notes, next_actions [{action, target, priority, context_needed: [files]}].
    "#);
    // The constraints sit right under the objective.
    let stopped = &prompt[at(&prompt, "### Where You Stopped")..at(&prompt, "### Next Actions")];
    insta::assert_snapshot!(s.normalize(stopped), @r#"
        ### Where You Stopped
        - **Objective**: Add JWT auth to the API
        - **Constraints** (what the person said must or must not be done):
          - no new dependencies
          - tokens expire within 15 minutes
        - **In progress**: Implement JWT signing — Sign tokens in src/jwt.rs; write the design to notes/jwt_design.md first (files: `src/jwt.rs`, `notes/jwt_design.md` (to create))
        - **Last step**: Bash `echo hello`: no result yet
        - **Last request**: Keep the tokens short-lived, fifteen minutes at most
    "#);
    // The summary's own order first; the task it names is not listed twice.
    let next = &prompt[at(&prompt, "### Next Actions (in order)")..at(&prompt, "### Open Tasks")];
    assert_eq!(
        next.lines()
            .filter(|l| l.starts_with(char::is_numeric))
            .collect::<Vec<_>>(),
        [
            "1. **implement** JWT signing",
            "2. **rotate** the signing key",
            "3. **add** token refresh endpoint",
        ],
        "{prompt}"
    );
    let action = &prompt[at(&prompt, "**Action Required**")..];
    insta::assert_snapshot!(s.normalize(action), @r#"
        **Action Required**: Continue from next action 1 above: **implement** JWT signing.
        [hookd-resume [MARKER]]
    "#);
    insta::assert_snapshot!(s.hookctl_normalized(&["resume"]), @r#"
        ✓ git_status_matches: HEAD is still [SHA] on main, and the working tree is as saved
        ✓ workflow_exists: no workflow file was in use; .workflow/ is in place
        ✓ task_valid: "Implement JWT signing" is still open (in_progress)
        Saved state from [TIME] (before /compact) · 0 of 2 tasks done (0%) · next: implement JWT signing · read first: src/jwt.rs · last step: Bash echo hello: no result yet
        state: [TEMP]/proj/.workflow/context_state.json
        resume prompt written to .workflow/resume_prompt.md (`hookctl resume --print` shows it)
    "#);

    // The next compaction's capture keeps them, though its summary repeats
    // only one and lifts the other.
    let (instructions, _) = compact_with_summary(&s, "lifted_constraints: [No new dependencies]");
    insta::assert_snapshot!(s.normalize(&instructions), @r#"
        hookd saved the workflow state (.workflow/context_state.json, checkpoint [SHA]). Keep in your summary: the request, what the person said must or must not be done (so far: no new dependencies; tokens expire within 15 minutes), the task in progress (Implement JWT signing), the next steps in order, the decisions and blockers.
        End it with one fenced code block, info string `hookd-state [TOKEN]`, of YAML, each key only if it applies: decisions [{topic, decision, reasoning}], rejected [{approach, why}], blockers [{issue, status: unresolved|workaround|resolved, notes}], constraints [text], lifted_constraints [text], active_task, progress_notes, next_actions [{action, target, priority, context_needed: [files]}].
    "#);
    let state = s.state();
    hookd_tests::assert_valid(&hookd_tests::state_schema(), &state);
    assert_eq!(
        state["constraints"],
        json!(["tokens expire within 15 minutes"])
    );
    s.hook("PreCompact(trigger=manual)", "pre-compact");
    assert_eq!(
        s.state()["constraints"],
        json!(["tokens expire within 15 minutes"]),
        "carried into a new capture of the session"
    );
}

#[test]
fn constraints_survive_another_session_saving_in_between() {
    let s = jwt_session();
    compact_with_summary(&s, "constraints: [no new dependencies]");
    assert_eq!(s.state()["constraints"], json!(["no new dependencies"]));
    // Another session in the same project compacts: the latest state is its.
    let mut other = s.session("other-session");
    other.prompt("Tidy the README");
    other.reply(50_000);
    s.compact_of(&other, 50_000, 3_000);
    assert_eq!(s.state()["harness_session_id"], "other-session");
    assert_eq!(s.state()["constraints"], json!([]), "not the other's");
    // This session's next capture starts from its own last state.
    s.hook("PreCompact(trigger=manual)", "pre-compact");
    let state = s.state();
    assert_eq!(state["harness_session_id"], "jwt-session");
    assert_eq!(state["constraints"], json!(["no new dependencies"]));
}

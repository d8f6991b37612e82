//! The pre-compact pipeline on real git repositories: state capture, the
//! checkpoint commit, the resume prompt, and everything the user owns left
//! exactly as it was.

use hookd_tests::{
    Scenario, TestEvent, assert_valid, state_schema, stderr, stdout, workflow_events,
};
use serde_json::{Value, json};

/// A repository with history, then uncommitted work of every kind: staged,
/// unstaged, deleted, untracked and ignored files.
fn dirty_project() -> Scenario {
    Scenario::build()
        .repository(|repo| {
            repo.write("README.md", "# demo\n");
            repo.write("src/lib.rs", "pub fn one() -> u32 {\n    1\n}\n");
            repo.write("src/old.rs", "// to be deleted\n");
            repo.write(".gitignore", "target/\n*.log\n");
            repo.commit_all("initial");
            repo.write(
                "src/lib.rs",
                "pub fn one() -> u32 {\n    1\n}\n\npub fn two() -> u32 {\n    2\n}\n",
            );
            repo.write("src/auth.rs", "pub fn login() {}\n");
            repo.git(&["add", "src/auth.rs"]);
            std::fs::remove_file(repo.dir.join("src/old.rs")).unwrap();
            repo.write("notes/todo.txt", "untracked notes\n");
            repo.write("debug.log", "ignored\n");
            repo.write("target/out.bin", "ignored too\n");
        })
        .session("p1-session")
        .start()
}

/// The agent's session as Claude Code records it: a request, a todo list, edits.
fn agent_works(p: &mut Scenario) {
    let lib = p.project.join("src/lib.rs").display().to_string();
    let auth = p.project.join("src/auth.rs").display().to_string();
    let t = &mut p.transcript;
    t.prompt("add OAuth support to the client");
    t.todo_write(
        "tw1",
        &[
            (
                "Write the OAuth client in src/auth.rs",
                "completed",
                "Writing the OAuth client",
            ),
            ("Add token refresh", "in_progress", "Adding token refresh"),
            (
                "Document the flow in README.md",
                "pending",
                "Documenting the flow",
            ),
        ],
        40_000,
    );
    // The client it wrote: git shows the file, the session says it made it.
    t.tool_use(
        "w1",
        "Write",
        json!({"file_path": auth, "content": "pub fn login() {}\n"}),
        40_500,
    );
    t.tool_result(
        "w1",
        "File created successfully",
        json!({"type": "create", "filePath": auth}),
    );
    t.tool_use(
        "e1",
        "Edit",
        json!({"file_path": lib, "old_string": "1", "new_string": "2"}),
        41_000,
    );
    t.tool_result("e1", "The file has been updated.", json!({}));
}

/// The agent works, then `hookctl save`: the checkpoint it made.
fn save(p: &mut Scenario) -> String {
    agent_works(p);
    let out = p.hookctl(&["save"]);
    assert!(out.status.success(), "{}", stderr(&out));
    p.repo().checkpoint_ref().unwrap()
}

#[test]
fn pre_compact_saves_state_checkpoints_and_touches_nothing_of_the_user() {
    let mut p = dirty_project();
    agent_works(&mut p);
    // An acknowledgement neither sets nor changes the work.
    p.transcript.prompt("yes, continue");
    let before = p.repo().fingerprint();
    let head = p.repo().git(&["rev-parse", "HEAD"]).trim().to_owned();

    // PreCompact's plain stdout goes to the summarizer.
    let out = p.hook("PreCompact(trigger=auto)", "pre-compact");
    assert!(out.is_text(), "plain text, not JSON: {out}");
    insta::assert_snapshot!(p.answer_normalized(&out), @r#"
        hookd saved the workflow state (.workflow/context_state.json, checkpoint [SHA]). Keep in your summary: the request, what the person said must or must not be done, the task in progress (Add token refresh), the next steps in order, the decisions and blockers, the file being edited (src/lib.rs).
        End it with one fenced code block, info string `hookd-state [TOKEN]`, of YAML, each key only if it applies: decisions [{topic, decision, reasoning}], rejected [{approach, why}], blockers [{issue, status: unresolved|workaround|resolved, notes}], constraints [text], lifted_constraints [text], active_task, progress_notes, next_actions [{action, target, priority, context_needed: [files]}].
    "#);

    assert_eq!(
        p.repo().fingerprint(),
        before,
        "index, HEAD, reflog, branches, stash, status and files unchanged"
    );

    // The checkpoint: the working tree exactly, on the private ref, HEAD as parent.
    let sha = p.repo().checkpoint_ref().expect("a checkpoint ref");
    assert_eq!(p.repo().tree_of(&sha), p.repo().expected_tree());
    assert_eq!(
        p.repo().git(&["rev-parse", &format!("{sha}^")]).trim(),
        head
    );
    let message = p.repo().git(&["log", "-1", "--format=%B", &sha]);
    insta::assert_snapshot!(p.normalize(&message), @r#"
        WIP: Pre-compaction checkpoint

        The working tree as it was when hookd saved the agent's state. Your branch,
        index and working tree were not touched.

        Hookd-Session: p1-session
        Hookd-Trigger: pre-compact auto
        Hookd-Tokens: 41000/167000
        Hookd-Base: [SHA]
        Hookd-Branch: main
    "#);
    // Every change but the ignored files.
    let files = p.repo().git(&["show", "--name-status", "--format=", &sha]);
    assert!(!files.contains("debug.log"), "{files}");
    insta::assert_snapshot!(files, @r#"
        A	notes/todo.txt
        A	src/auth.rs
        M	src/lib.rs
        D	src/old.rs
    "#);

    // The state: valid against the schema, filled from the transcript and git.
    let state = p.state();
    assert_valid(&state_schema(), &state);
    assert_eq!(state["harness_session_id"], "p1-session");
    assert_eq!(state["trigger"], "pre-compact auto");
    assert_eq!(state["workflow_position"]["active_task_id"], "todo-2");
    assert_eq!(state["active_work"]["action"], "Adding token refresh");
    assert_eq!(state["active_work"]["file_path"], "src/lib.rs");
    // The task in progress comes first, then the pending one.
    assert_eq!(state["next_actions"][0]["action"], "finish");
    assert_eq!(state["next_actions"][0]["target"], "Add token refresh");
    assert_eq!(state["next_actions"][1]["action"], "document");
    assert_eq!(state["next_actions"][1]["target"], "the flow in README.md");
    assert_eq!(
        state["next_actions"][1]["context_needed"],
        json!(["README.md"])
    );
    assert_eq!(state["objective"], "add OAuth support to the client");
    assert_eq!(state["checkpoint"]["sha"], Value::from(sha.clone()));
    assert_eq!(state["context_usage"]["tokens_used"], 41_000);
    assert_eq!(state["context_usage"]["tokens_max"], 167_000);
    let modified = paths_and_actions(&state["modified_files"]);
    assert_eq!(
        modified,
        [
            ("src/auth.rs".to_owned(), "created".to_owned()),
            ("src/lib.rs".to_owned(), "modified".to_owned())
        ]
    );
    // What the session never touched, git's other changes, is listed apart.
    let elsewhere = paths_and_actions(&state["changed_elsewhere"]);
    assert_eq!(
        elsewhere,
        [
            ("notes/todo.txt".to_owned(), "created".to_owned()),
            ("src/old.rs".to_owned(), "deleted".to_owned())
        ],
        "{elsewhere:?}"
    );
    // What each change did, by definition.
    let summary_of = |path: &str| {
        state["modified_files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["path"] == path)
            .map(|m| m["summary"].clone())
    };
    assert_eq!(
        summary_of("src/lib.rs").unwrap(),
        "+4 −0 lines; added fn two; edited by the agent (1 edit)"
    );
    assert_eq!(
        summary_of("src/auth.rs").unwrap(),
        "+1 −0 lines; added fn login; created by the agent"
    );
    assert_eq!(state["later_requests"], json!([]));
    assert_eq!(state["recent_prompts"][1], "yes, continue");
    // The reload list was sized for the room left after the compaction.
    assert_eq!(
        state["context_to_reload"]["room"],
        "142,000 of 167,000 tokens free after the compaction (estimated): room for every file"
    );

    // The resume prompt, from the template.
    let prompt = p.resume_prompt();
    assert!(prompt.chars().count() <= 9000);
    insta::assert_snapshot!(p.normalize(&prompt), @r#"
        ## Context Recovery - Resuming Previous Session

        Your context was compacted. hookd saved where the work stood just before; pick it up from here.

        ### Where You Stopped
        - **Objective**: add OAuth support to the client
        - **In progress**: Add token refresh (Adding token refresh)
        - **File**: `src/lib.rs`
        - **Last step**: Edit `src/lib.rs`: succeeded

        ### Next Actions (in order)
        1. **finish** Add token refresh
        2. **document** the flow in README.md
           - Read first: README.md

        ### Open Tasks
        - (in progress) Add token refresh (Adding token refresh)
        - (pending) Document the flow in README.md (Documenting the flow) (files: `README.md`)

        ### Progress
        1 of 3 tasks completed.
        - [x] Write the OAuth client in src/auth.rs
        - [ ] Add token refresh (in progress: Adding token refresh)
        - [ ] Document the flow in README.md

        ### Context to Reload
        Read these again before you continue, most relevant first (26 tokens of a 67,450-token budget, sized for the room left: 142,000 of 167,000 tokens free after the compaction (estimated): room for every file). Where the level is not `full`, `hookctl summarize <file> --level <level>` gives just that much.
        - `src/auth.rs`: supporting, full, ~6 tokens, relevance 0.52
        - `src/lib.rs`: reference, full, ~18 tokens, relevance 0.44
        - `README.md`: reference, full, ~2 tokens, relevance 0.41

        ### Recent Changes
        - `src/auth.rs` - created: +1 −0 lines; added fn login; created by the agent
        - `src/lib.rs` - modified: +4 −0 lines; added fn two; edited by the agent (1 edit)

        ### Changed Outside This Session
        Changed, but by no tool call this session's file records: another session's or the person's work, or a command's (a formatter, a generator). Check before you treat them as yours.
        - `notes/todo.txt` - created
        - `src/old.rs` - deleted

        ### Session Info
        - **Capture**: compact_[STAMP] (claude-code session `p1-session`)
        - **Captured At**: [TIME] (before automatic compaction)
        - **Context Usage**: 24% of the way to compaction (41,000 of 167,000 tokens), 21% of the window

        ### Checkpoint
        The working tree was committed as `[SHA]` on `refs/hookd/checkpoints/main` (your branch and index were not touched). Inspect it with `git show --stat [SHA]` or `git diff HEAD [SHA]`; `hookctl checkpoint restore [SHA] --path <file>` brings a file back.

        ---
        **Action Required**: Continue from next action 1 above: **finish** Add token refresh.
    "#);

    // The side files, and every step in events.jsonl.
    assert!(p.project.join(".workflow/modified_files.json").is_file());
    assert_eq!(
        std::fs::read_dir(p.project.join(".workflow/history"))
            .unwrap()
            .count(),
        1
    );
    let steps: Vec<String> = workflow_events(&p.project)
        .iter()
        .filter(|e| e["kind"] == "pipeline")
        .map(|e| format!("{}:{}", e["step"].as_str().unwrap(), e["ok"]))
        .collect();
    assert_eq!(
        steps,
        vec![
            "capture:true",
            "progress_summary:true",
            "checkpoint:true",
            "context_budget:true",
            "resume_prompt:true"
        ]
    );
    // The rest of the exclude file is git's own template, this machine's.
    let exclude = std::fs::read_to_string(p.project.join(".git/info/exclude")).unwrap();
    assert!(exclude.lines().any(|l| l == ".workflow/"), "{exclude}");
}

#[test]
fn a_second_checkpoint_only_when_something_changed() {
    let mut p = dirty_project();
    agent_works(&mut p);
    p.hook("PreCompact(trigger=manual)", "pre-compact");
    let first = p.repo().checkpoint_ref().unwrap();
    p.hook("PreCompact(trigger=manual)", "pre-compact");
    assert_eq!(
        p.repo().checkpoint_ref().unwrap(),
        first,
        "nothing changed: no new commit"
    );
    assert_eq!(
        p.state()["checkpoint"]["note"],
        "nothing changed since the last checkpoint"
    );

    p.repo().write("src/lib.rs", "changed again\n");
    p.hook("PreCompact(trigger=manual)", "pre-compact");
    let second = p.repo().checkpoint_ref().unwrap();
    assert_ne!(second, first);
    assert_eq!(
        p.repo().git(&["rev-parse", &format!("{second}^")]).trim(),
        first,
        "the chain continues"
    );
    assert_eq!(p.repo().tree_of(&second), p.repo().expected_tree());

    // The user commits: the next checkpoint has both the chain and the new HEAD as parents.
    p.repo().commit_all("user work");
    p.repo().write("src/new.rs", "after the commit\n");
    p.hook("PreCompact(trigger=manual)", "pre-compact");
    let third = p.repo().checkpoint_ref().unwrap();
    let parents = p.repo().git(&["log", "-1", "--format=%P", &third]);
    let head = p.repo().git(&["rev-parse", "HEAD"]);
    assert_eq!(
        parents.split_whitespace().collect::<Vec<_>>(),
        vec![second.as_str(), head.trim()]
    );
}

#[test]
fn records_and_the_workflow_file_feed_the_state() {
    let p = dirty_project();
    let run = |args: &[&str]| {
        let out = p.sb.hookctl_in(&p.project.join("src"), args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    };
    run(&[
        "decision",
        "Token storage",
        "httpOnly cookies",
        "--why",
        "works with SSR",
    ]);
    run(&["blocker", "No staging OAuth app", "--notes", "asked ops"]);
    run(&["phase", "IMPLEMENTING"]);
    run(&[
        "next",
        "write",
        "--target",
        "the refresh test",
        "--priority",
        "1",
        "--needs",
        "src/auth.rs",
    ]);
    run(&["next", "delete the old client"]);
    run(&["next", "--done", "delete the old client"]);
    run(&["note", "login flow works end to end"]);
    p.repo().write(
        ".workflow/workflow_state.yml",
        "workflow_id: wf_42\nlayer: 2\ntotal_layers: 3\ndecisions:\n  - {topic: API style, decision: REST}\n",
    );
    let out = p.hookctl(&["save", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(summary["checkpoint"].is_string(), "{summary}");

    let state = p.state();
    assert_valid(&state_schema(), &state);
    assert_eq!(state["trigger"], "manual");
    assert_eq!(state["workflow_position"]["workflow_id"], "wf_42");
    assert_eq!(state["workflow_position"]["current_phase"], "IMPLEMENTING");
    assert_eq!(state["workflow_position"]["layer"], 2);
    assert_eq!(state["decisions"][0]["topic"], "API style");
    assert_eq!(state["decisions"][1]["reasoning"], "works with SSR");
    assert_eq!(state["blockers"][0]["status"], "unresolved");
    assert_eq!(
        state["next_actions"],
        json!([{"action": "write", "target": "the refresh test", "priority": 1, "context_needed": ["src/auth.rs"], "source": "records.jsonl"}])
    );
    assert_eq!(
        state["active_work"]["progress_notes"],
        "login flow works end to end"
    );
    assert_eq!(
        state["sources"],
        json!(["workflow_state.yml", "records.jsonl", "git"])
    );
    insta::assert_snapshot!(p.resume_prompt_normalized(), @r#"
        ## Context Recovery - Resuming Previous Session

        This is where the work stood when hookd saved it (with hookctl save); pick it up from here.

        ### Where You Stopped
        - **In progress**: no task was recorded as in progress
        - **File**: `notes/todo.txt`
        - **Progress**: “login flow works end to end” (quoted from `.workflow/records.jsonl`)
        - **Phase**: “IMPLEMENTING” (quoted from `.workflow/`)
        - **Layer**: 2 of 3

        ### Next Actions (in order)
        1. “write the refresh test” (quoted from `.workflow/records.jsonl`)
           - Read first: src/auth.rs

        ### Progress
        Notes (quoted from `.workflow/records.jsonl`): “login flow works end to end”
        Open blockers: “No staging OAuth app” (quoted from `.workflow/records.jsonl`)

        ### Context to Reload
        Read these again before you continue, most relevant first (29 tokens of a 85,500-token budget). Where the level is not `full`, `hookctl summarize <file> --level <level>` gives just that much.
        - `src/auth.rs`: reference, full, ~6 tokens, relevance 0.48
        - `src/lib.rs`: reference, full, ~18 tokens, relevance 0.4
        - `notes/todo.txt`: reference, full, ~5 tokens, relevance 0.37

        ### Recent Changes
        - `notes/todo.txt` - created: +1 −0 lines
        - `src/auth.rs` - created: +1 −0 lines; added fn login
        - `src/lib.rs` - modified: +4 −0 lines; added fn two
        - `src/old.rs` - deleted: +0 −1 lines

        ### Key Decisions Made
        - “API style: REST” (quoted from `.workflow/workflow_state.yml`)
        - “Token storage: httpOnly cookies (because works with SSR)” (quoted from `.workflow/records.jsonl`)

        ### Current Blockers
        - “No staging OAuth app: asked ops” (unresolved; quoted from `.workflow/records.jsonl`)

        ### Session Info
        - **Capture**: save_[STAMP]
        - **Captured At**: [TIME] (with hookctl save)

        ### Checkpoint
        The working tree was committed as `[SHA]` on `refs/hookd/checkpoints/main` (your branch and index were not touched). Inspect it with `git show --stat [SHA]` or `git diff HEAD [SHA]`; `hookctl checkpoint restore [SHA] --path <file>` brings a file back.

        ---
        **Action Required**: Continue from next action 1 above: “write the refresh test” (quoted from `.workflow/records.jsonl`).
    "#);

    // A broken workflow file is reported, and the capture goes on without it.
    p.repo()
        .write(".workflow/workflow_state.yml", "layer: [oops\n");
    let out = p.hookctl(&["save", "--no-checkpoint"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let state = p.state();
    insta::assert_snapshot!(p.normalize(&state["problems"].to_string()), @r#"
        ["[TEMP]/proj/.workflow/workflow_state.yml: layer: invalid type: sequence, expected u32 at line 1 column 8"]
    "#);
    assert_eq!(
        state["workflow_position"]["current_phase"], "IMPLEMENTING",
        "the records still count"
    );
}

#[test]
fn threshold_saves_capture_without_a_checkpoint_until_95() {
    let mut p = dirty_project();
    agent_works(&mut p);
    p.transcript.reply(138_610); // 83% of 167,000
    p.hook("PostToolUse", "post-tool-use");
    p.sb.wait_for(TestEvent::Saved, "threshold 0.80");
    assert!(p.project.join(".workflow/context_state.json").exists());
    assert!(
        workflow_events(&p.project)
            .iter()
            .any(|e| e["kind"] == "pipeline" && e["step"] == "resume_prompt")
    );
    assert_eq!(p.state()["context_usage"]["threshold_triggered"], 0.8);
    assert_eq!(p.repo().checkpoint_ref(), None, "80%: no checkpoint");
    p.transcript.reply(160_320); // 96%
    p.hook("PostToolUse", "post-tool-use");
    p.sb.wait_for(TestEvent::Checkpoint, "ok");
    assert!(p.repo().checkpoint_ref().is_some(), "95%: checkpoint");
    // At 95% there is no room to reload files: the save says so, and
    // still counts as a save.
    let last_save = p.status().last_save.expect("a save mark");
    assert_eq!(last_save.what, "threshold 0.95");
    assert!(last_save.ok, "{last_save:?}");
    insta::assert_snapshot!(last_save.skipped.unwrap_or_default(), @"files to reload left out: 6,680 of 167,000 tokens free: no room to reload files");
    insta::assert_snapshot!(p.hookctl_normalized(&["status"]), @r#"
        hookd 0.1.0 (protocol 1) · pid [PID] · up [DURATION] · 2 events
        socket [SOCKET]
        1 session

        ● claude-code p1-sessi  [TEMP]/proj  claude-sonnet-4-5-20250929
            context  96% of the way to compaction (160,320 of 167,000 tokens), 80% of the window
                     ▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓░│░░  the window, │ = compaction at 83%
            recent   ▇█  the last 2 replies, █ = at the compaction point
                     s✓  ✓ saved with a git checkpoint · s state saved
            not compacted yet · passed 70%, 80%, 90%, 95% of the way
            last save [DURATION] ago (at 95% of the way to compaction; files to reload left out: 6,680 of 167,000 tokens free: no room to reload files) · last checkpoint [DURATION] ago (at 95% of the way to compaction: [SHA])
            last event post-tool-use [DURATION] ago · 2 events
            transcript [TEMP]/claude/p1-session.jsonl
    "#);
    let out = p.hookctl(&["save", "--no-checkpoint"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn outside_a_repository_the_state_is_still_saved() {
    let mut s = Scenario::build().session("x-session").start();
    let edited = s.project.join("notes.md").display().to_string();
    s.transcript.tool_use(
        "w1",
        "Write",
        json!({"file_path": edited, "content": "hi"}),
        1000,
    );
    s.hook("PreCompact(trigger=manual)", "pre-compact");
    let state = s.state();
    assert_valid(&state_schema(), &state);
    insta::assert_snapshot!(s.normalize(&hookd_tests::sorted_keys(&state["checkpoint"]).to_string()), @r#"
        {"note":"[TEMP]/proj is not in a git repository","reference":null,"sha":null,"skipped":[]}
    "#);
    assert_eq!(
        state["modified_files"],
        json!([{"path": "notes.md", "action": "edited", "summary": "edited by the agent (1 edit)"}])
    );
    assert_eq!(state["git"], Value::Null);
}

#[test]
fn tasks_from_task_create_and_update() {
    let mut p = dirty_project();
    let t = &mut p.transcript;
    t.tool_use(
        "c1",
        "TaskCreate",
        json!({"subject": "Parse the config", "description": "x"}),
        1000,
    );
    t.tool_result(
        "c1",
        "Task #1 created successfully: Parse the config",
        json!({"task": {"id": "1", "subject": "Parse the config"}}),
    );
    t.tool_use(
        "c2",
        "TaskCreate",
        json!({"subject": "Add the CLI flag", "description": "y"}),
        1100,
    );
    t.tool_result(
        "c2",
        "Task #2 created successfully: Add the CLI flag",
        json!({"task": {"id": "2", "subject": "Add the CLI flag"}}),
    );
    t.tool_use(
        "u1",
        "TaskUpdate",
        json!({"taskId": "1", "status": "in_progress"}),
        1200,
    );
    t.tool_result(
        "u1",
        "Updated task #1 status",
        json!({"success": true, "taskId": "1"}),
    );
    p.hook("PreCompact(trigger=manual)", "pre-compact");
    let state = p.state();
    assert_eq!(state["workflow_position"]["active_task_id"], "1");
    assert_eq!(state["tasks"][1]["source"], "tasks");
    assert_eq!(state["next_actions"][0]["target"], "Parse the config");
    assert_eq!(state["next_actions"][1]["target"], "the CLI flag");
    insta::assert_snapshot!(p.resume_prompt_normalized(), @r#"
        ## Context Recovery - Resuming Previous Session

        Your context was compacted. hookd saved where the work stood just before; pick it up from here.

        ### Where You Stopped
        - **In progress**: Parse the config — x
        - **Last step**: TaskUpdate `1`: succeeded

        ### Next Actions (in order)
        1. **finish** Parse the config
        2. **add** the CLI flag

        ### Open Tasks
        - (in progress) Parse the config — x
        - (pending) Add the CLI flag — y

        ### Progress
        0 of 2 tasks completed.
        - [ ] Parse the config (in progress)
        - [ ] Add the CLI flag

        ### Changed Outside This Session
        Changed, but by no tool call this session's file records: another session's or the person's work, or a command's (a formatter, a generator). Check before you treat them as yours.
        - `notes/todo.txt` - created
        - `src/auth.rs` - created
        - `src/lib.rs` - modified
        - `src/old.rs` - deleted

        ### Session Info
        - **Capture**: compact_[STAMP] (claude-code session `p1-session`)
        - **Captured At**: [TIME] (before /compact)
        - **Context Usage**: 0% of the way to compaction (1,200 of 167,000 tokens), 1% of the window

        ### Checkpoint
        The working tree was committed as `[SHA]` on `refs/hookd/checkpoints/main` (your branch and index were not touched). Inspect it with `git show --stat [SHA]` or `git diff HEAD [SHA]`; `hookctl checkpoint restore [SHA] --path <file>` brings a file back.

        ---
        **Action Required**: Continue from next action 1 above: **finish** Parse the config.
    "#);
}

#[test]
fn checkpoints_can_be_listed_shown_and_restored() {
    let mut p = dirty_project();
    agent_works(&mut p);
    let out = p.hookctl(&["save"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let sha = p.repo().checkpoint_ref().unwrap();

    let out = p.hookctl(&["checkpoints", "--json"]);
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list[0]["sha"], Value::from(sha.clone()));
    assert_eq!(list[0]["trigger"], "manual");
    assert_eq!(
        list[0]["files_changed"], 4,
        "lib.rs, auth.rs, old.rs, todo.txt"
    );
    insta::assert_snapshot!(p.hookctl_normalized(&["checkpoints"]), @"[SHA]  [DURATION] ago      manual                    4 files      session -  refs/hookd/checkpoints/main");
    insta::assert_snapshot!(p.hookctl_normalized(&["checkpoint", "show", &sha[..10]]), @r#"
        checkpoint [SHA] on refs/hookd/checkpoints/main
        WIP: Pre-compaction checkpoint

        The working tree as it was when hookd saved the agent's state. Your branch,
        index and working tree were not touched.

        Hookd-Trigger: manual
        Hookd-Base: [SHA]
        Hookd-Branch: main

          created   notes/todo.txt  +1 −0 lines
          created   src/auth.rs     +1 −0 lines
          modified  src/lib.rs      +4 −0 lines
          deleted   src/old.rs      +0 −1 lines
    "#);

    // The person breaks src/lib.rs, then wants it back.
    p.repo().write("src/lib.rs", "broken\n");
    let before = p.repo().fingerprint().index;
    insta::assert_snapshot!(p.hookctl_normalized(&["checkpoint", "restore", &sha]), @r#"
        --- stderr
        hookctl: hookd answered: restoring would overwrite uncommitted changes in: src/lib.rs; commit or stash them first, or pass --force
        --- exit 1
    "#);
    assert_eq!(
        std::fs::read_to_string(p.project.join("src/lib.rs")).unwrap(),
        "broken\n",
        "nothing overwritten"
    );
    let forced = p.hookctl(&[
        "checkpoint",
        "restore",
        &sha,
        "--path",
        "src/lib.rs",
        "--force",
    ]);
    assert!(forced.status.success(), "{}", stderr(&forced));
    assert_eq!(
        std::fs::read_to_string(p.project.join("src/lib.rs")).unwrap(),
        "pub fn one() -> u32 {\n    1\n}\n\npub fn two() -> u32 {\n    2\n}\n",
        "as checkpointed"
    );
    assert_eq!(
        p.repo().fingerprint().index,
        before,
        "restore never writes the index"
    );
}

#[test]
fn large_untracked_files_are_left_out_and_named() {
    let mut p = dirty_project();
    p.repo()
        .write(".hookd.yaml", "checkpoint:\n  max_file_bytes: 1000\n");
    p.repo().write("data/big.bin", &"x".repeat(5000));
    agent_works(&mut p);
    p.hook("PreCompact(trigger=auto)", "pre-compact");
    let sha = p.repo().checkpoint_ref().unwrap();
    let files = p.repo().git(&["ls-tree", "-r", "--name-only", &sha]);
    insta::assert_snapshot!(files, @r#"
        .gitignore
        .hookd.yaml
        README.md
        notes/todo.txt
        src/auth.rs
        src/lib.rs
    "#);
    let message = p.repo().git(&["log", "-1", "--format=%B", &sha]);
    insta::assert_snapshot!(p.normalize(&message), @r#"
        WIP: Pre-compaction checkpoint

        The working tree as it was when hookd saved the agent's state. Your branch,
        index and working tree were not touched.

        Hookd-Session: p1-session
        Hookd-Trigger: pre-compact auto
        Hookd-Tokens: 41000/167000
        Hookd-Base: [SHA]
        Hookd-Branch: main
        Hookd-Skipped: data/big.bin (5000 bytes, over the size limit)
    "#);
    assert_eq!(
        p.state()["checkpoint"]["skipped"],
        json!(["data/big.bin (5000 bytes)"])
    );
}

#[test]
fn a_broken_user_template_is_reported_and_the_built_in_used() {
    let mut p = dirty_project();
    agent_works(&mut p);
    p.repo().write(
        ".workflow/templates/resume_prompt.md.hbs",
        "{{#each next_actions}}\nunclosed\n",
    );
    // A project's template counts only once the user trusts it.
    let trusted = p.sb.hookctl(&["trust", p.project.to_str().unwrap()]);
    assert!(trusted.status.success(), "{}", stderr(&trusted));
    p.hook("PreCompact(trigger=auto)", "pre-compact");
    assert!(p.resume_prompt().starts_with("## Context Recovery"));
    let problem = workflow_events(&p.project)
        .into_iter()
        .find(|e| e["step"] == "resume_prompt")
        .map(|e| e["detail"].as_str().unwrap_or("").to_owned())
        .unwrap();
    insta::assert_snapshot!(p.normalize(&problem), @"template [TEMP]/proj/.workflow/templates/resume_prompt.md.hbs is broken at line 3, column 1 (invalid handlebars syntax: expected escape, expression, html_expression, decorator_expression, partial_expression, invert_tag, invert_chain_tag, helper_block_start, helper_block_end, decorator_block_start, partial_block_start, raw_block_start, hbs_comment, or hbs_comment_compact); using the built-in one");
}

#[test]
fn hookctl_save_without_a_session() {
    let s = Scenario::build()
        .repository(|repo| repo.write("a.txt", "a\n"))
        .start();
    insta::assert_snapshot!(s.hookctl_normalized(&["save"]), @r#"
        state saved to [TEMP]/proj/.workflow/context_state.json
        resume prompt in [TEMP]/proj/.workflow/resume_prompt.md
        checkpoint [SHA] on refs/hookd/checkpoints/main (git show --stat [SHA])
        (no agent session seen in this project: saved from git and records only)
    "#);
    // Unborn HEAD: a root checkpoint commit.
    let repo = s.repo();
    let sha = repo.checkpoint_ref().expect("a checkpoint");
    assert_eq!(repo.git(&["log", "-1", "--format=%P", &sha]).trim(), "");
    assert_eq!(repo.tree_of(&sha), repo.expected_tree());
}

#[test]
fn restoring_a_checkpoint_the_tree_already_matches_changes_nothing() {
    // Staged, unstaged, deleted and untracked work, all as checkpointed.
    let mut p = dirty_project();
    let sha = save(&mut p);
    let before = p.repo().fingerprint();
    let said = session_of(
        &p,
        &[
            &["checkpoint", "restore", &sha][..],
            &["checkpoint", "restore", &sha, "--path", "src/lib.rs"],
            &["checkpoint", "restore", &sha, "--path", "src"],
        ],
    );
    insta::assert_snapshot!(said, @r#"
        $ hookctl checkpoint restore [SHA]
        nothing to restore: the files already match [SHA]
        $ hookctl checkpoint restore [SHA] --path src/lib.rs
        nothing to restore: the files already match [SHA]
        $ hookctl checkpoint restore [SHA] --path src
        nothing to restore: the files already match [SHA]
    "#);
    assert_eq!(p.repo().fingerprint(), before);
}

#[test]
fn restore_with_a_path_writes_that_file_when_it_differs() {
    let mut p = dirty_project();
    let sha = save(&mut p);
    let checkpointed = std::fs::read_to_string(p.project.join("src/lib.rs")).unwrap();
    // Back to its committed version: it differs from the checkpoint, and
    // overwriting it loses nothing.
    p.repo().git(&["checkout", "--", "src/lib.rs"]);
    let out = p.hookctl(&["checkpoint", "restore", &sha, "--path", "src/lib.rs"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "restored src/lib.rs\n");
    assert_eq!(
        std::fs::read_to_string(p.project.join("src/lib.rs")).unwrap(),
        checkpointed
    );

    // Changed since, and not committed: refused, never "nothing to restore".
    p.repo().write("src/lib.rs", "changed since\n");
    let said = p.hookctl_normalized(&["checkpoint", "restore", &sha, "--path", "src/lib.rs"]);
    insta::assert_snapshot!(said, @r#"
        --- stderr
        hookctl: hookd answered: restoring would overwrite uncommitted changes in: src/lib.rs; commit or stash them first, or pass --force
        --- exit 1
    "#);
    let out = p.hookctl(&[
        "checkpoint",
        "restore",
        &sha,
        "--path",
        "src/lib.rs",
        "--force",
    ]);
    assert_eq!(stdout(&out), "restored src/lib.rs\n", "{}", stderr(&out));

    // A path the checkpoint does not hold says where paths start.
    let said = p.hookctl_normalized(&["checkpoint", "restore", &sha, "--path", "lib.rs"]);
    insta::assert_snapshot!(said, @r#"
        --- stderr
        hookctl: hookd answered: `lib.rs` is not in checkpoint [SHA] (hookd took this --path from the repository's root; `hookctl checkpoint show [SHA]` lists the checkpoint's files)
        --- exit 1
    "#);
}

#[test]
fn an_unknown_checkpoint_points_to_the_list() {
    let mut p = dirty_project();
    save(&mut p);
    let said = session_of(
        &p,
        &[
            &["checkpoint", "restore", "deadbeef"][..],
            &["checkpoint", "show", "deadbeef"],
        ],
    );
    insta::assert_snapshot!(said, @r#"
        $ hookctl checkpoint restore deadbeef
        --- stderr
        hookctl: hookd answered: no checkpoint or commit called `deadbeef` in this repository: `hookctl checkpoints` lists its checkpoints
        --- exit 1
        $ hookctl checkpoint show deadbeef
        --- stderr
        hookctl: hookd answered: no checkpoint or commit called `deadbeef` in this repository: `hookctl checkpoints` lists its checkpoints
        --- exit 1
    "#);
}

/// Each `hookctl` command in turn, as a person would see them typed in the
/// project and answered, normalized.
fn session_of(p: &Scenario, commands: &[&[&str]]) -> String {
    commands
        .iter()
        .map(|args| {
            let typed = p.normalize(&args.join(" "));
            format!("$ hookctl {typed}\n{}", p.hookctl_normalized(args))
        })
        .collect()
}

/// `(path, action)` of each file a state's list names.
fn paths_and_actions(files: &Value) -> Vec<(String, String)> {
    files
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["path"].as_str().unwrap().to_owned(),
                m["action"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

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
    let instructions = out.as_str().unwrap();
    assert!(
        instructions.contains("Keep in your summary: "),
        "{instructions}"
    );
    assert!(instructions.contains("Add token refresh"), "{instructions}");
    assert!(
        !instructions.trim_start().starts_with('{'),
        "plain text, not JSON: {instructions}"
    );

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
    assert!(
        message.starts_with("WIP: Pre-compaction checkpoint"),
        "{message}"
    );
    assert!(
        message.contains("Hookd-Session: p1-session")
            && message.contains("Hookd-Trigger: pre-compact auto"),
        "{message}"
    );
    assert!(
        message.contains(&format!("Hookd-Base: {head}")),
        "{message}"
    );
    let files = p.repo().git(&["show", "--name-status", "--format=", &sha]);
    assert!(
        files.contains("notes/todo.txt")
            && files.contains("src/auth.rs")
            && !files.contains("debug.log"),
        "{files}"
    );

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
    assert!(
        modified.contains(&("src/lib.rs".into(), "modified".into())),
        "{modified:?}"
    );
    assert!(
        modified.contains(&("src/auth.rs".into(), "created".into())),
        "{modified:?}"
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
    for expected in [
        "## Context Recovery",
        "Add token refresh",
        "Document the flow",
        "src/lib.rs",
        &sha,
        "1 of 3 tasks completed",
        "sized for the room left: 142,000 of 167,000 tokens free",
    ] {
        assert!(
            prompt.contains(expected),
            "missing {expected:?} in:\n{prompt}"
        );
    }
    assert!(prompt.chars().count() <= 9000);

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
    let exclude = std::fs::read_to_string(p.project.join(".git/info/exclude")).unwrap();
    assert!(exclude.contains(".workflow/"), "{exclude}");
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
    let prompt = p.resume_prompt();
    assert!(
        prompt.contains(
            "- “Token storage: httpOnly cookies (because works with SSR)” (quoted from `.workflow/records.jsonl`)"
        ),
        "{prompt}"
    );
    assert!(
        prompt.contains(
            "- “No staging OAuth app: asked ops” (unresolved; quoted from `.workflow/records.jsonl`)"
        ),
        "{prompt}"
    );
    assert!(prompt.contains("- **Layer**: 2 of 3"), "{prompt}");

    // A broken workflow file is reported, and the capture goes on without it.
    p.repo()
        .write(".workflow/workflow_state.yml", "layer: [oops\n");
    let out = p.hookctl(&["save", "--no-checkpoint"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let state = p.state();
    assert!(
        state["problems"][0]
            .as_str()
            .unwrap()
            .contains("workflow_state.yml"),
        "{}",
        state["problems"]
    );
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
    assert!(
        last_save
            .skipped
            .as_deref()
            .is_some_and(|s| s.starts_with("files to reload left out: ")
                && s.ends_with("no room to reload files")),
        "{last_save:?}"
    );
    let shown = stdout(&p.hookctl(&["status"]));
    assert!(!shown.contains("FAILED"), "{shown}");
    assert!(
        shown.contains("(at 95% of the way to compaction; files to reload left out: "),
        "{shown}"
    );
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
    assert!(
        state["checkpoint"]["note"]
            .as_str()
            .unwrap()
            .contains("not in a git repository"),
        "{}",
        state["checkpoint"]
    );
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
    assert!(
        p.resume_prompt().contains("Parse the config (in progress)"),
        "{}",
        p.resume_prompt()
    );
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
    let text = stdout(&p.hookctl(&["checkpoints"]));
    assert!(
        text.contains(&sha[..8]) && text.contains("refs/hookd/checkpoints/main"),
        "{text}"
    );

    let show = stdout(&p.hookctl(&["checkpoint", "show", &sha[..10]]));
    assert!(
        show.contains("WIP: Pre-compaction checkpoint")
            && show.contains("src/lib.rs")
            && show.contains("+4 −0 lines"),
        "{show}"
    );

    // The person breaks src/lib.rs, then wants it back.
    p.repo().write("src/lib.rs", "broken\n");
    let before = p.repo().fingerprint().index;
    let refused = p.hookctl(&["checkpoint", "restore", &sha]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        stderr(&refused).contains("src/lib.rs") && stderr(&refused).contains("--force"),
        "{}",
        stderr(&refused)
    );
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
    assert!(
        std::fs::read_to_string(p.project.join("src/lib.rs"))
            .unwrap()
            .contains("pub fn two()")
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
    assert!(
        !files.contains("data/big.bin") && files.contains("notes/todo.txt"),
        "{files}"
    );
    let message = p.repo().git(&["log", "-1", "--format=%B", &sha]);
    assert!(
        message.contains("Hookd-Skipped: data/big.bin (5000 bytes"),
        "{message}"
    );
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
    assert!(
        problem.contains("resume_prompt.md.hbs") && problem.contains("line"),
        "{problem}"
    );
}

#[test]
fn hookctl_save_without_a_session() {
    let s = Scenario::build()
        .repository(|repo| repo.write("a.txt", "a\n"))
        .start();
    let out = s.hookctl(&["save"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("no agent session seen"), "{text}");
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
    for args in [
        &["checkpoint", "restore", &sha][..],
        &["checkpoint", "restore", &sha, "--path", "src/lib.rs"],
        &["checkpoint", "restore", &sha, "--path", "src"],
    ] {
        let out = p.hookctl(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert!(
            stdout(&out).starts_with("nothing to restore"),
            "{args:?}: {}",
            stdout(&out)
        );
        assert_eq!(stderr(&out), "", "{args:?}");
    }
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
    let out = p.hookctl(&["checkpoint", "restore", &sha, "--path", "src/lib.rs"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("uncommitted changes in: src/lib.rs")
            && stderr(&out).contains("--force"),
        "{}",
        stderr(&out)
    );
    assert_eq!(stdout(&out), "");
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
    let out = p.hookctl(&["checkpoint", "restore", &sha, "--path", "lib.rs"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("not in checkpoint") && stderr(&out).contains("repository's root"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_unknown_checkpoint_points_to_the_list() {
    let mut p = dirty_project();
    save(&mut p);
    for args in [
        &["checkpoint", "restore", "deadbeef"][..],
        &["checkpoint", "show", "deadbeef"],
    ] {
        let out = p.hookctl(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            stderr(&out).contains("`deadbeef`") && stderr(&out).contains("hookctl checkpoints"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
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

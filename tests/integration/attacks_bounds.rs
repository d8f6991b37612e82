//! Repositories that try to make hookd spend unbounded time or memory: a
//! workflow file nested deep or grown huge, numbers in `.hookd.yaml` that
//! make a save crawl or a resume prompt explode. Each one goes through the
//! real hookctl and a real `hookd` process, and each checks that the hook
//! still answers within its budget and that the refusal is said, naming
//! the file.

use crate::attacks::{Lab, assert_ok, repo_at};
use hookd_tests::{additional_context, hook_json, output_text, stderr, stdout, workflow_events};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// The longest resume prompt, whatever the configuration.
const MAX_RESUME_CHARS: usize = 64 * 1024;

/// The saved state's `problems`, one a line, normalized.
fn state_problems(lab: &Lab, project: &Path) -> String {
    let text = std::fs::read_to_string(project.join(".workflow/context_state.json"))
        .expect("a saved state");
    let state: Value = serde_json::from_str(&text).unwrap();
    let problems: Vec<&str> = state["problems"]
        .as_array()
        .expect("a list of problems")
        .iter()
        .map(|p| p.as_str().expect("a problem in words"))
        .collect();
    lab.sb.normalize(&problems.join("\n"))
}

/// A PreCompact hook through the real hookctl: it captures the state,
/// workflow file included, before it answers. Returns how long it took.
fn pre_compact(lab: &Lab, project: &Path) -> Duration {
    let t = lab.transcript("wf1");
    lab.start_session(project, &t);
    let started = Instant::now();
    let out = lab.hook(project, &t, "PreCompact(trigger=manual)", "pre-compact");
    let took = started.elapsed();
    assert_ok(&out, "pre-compact");
    assert!(
        !stdout(&out).trim().is_empty(),
        "PreCompact gave no instructions (it gave up after {took:?}): {}",
        stderr(&out)
    );
    took
}

#[test]
fn a_deeply_nested_workflow_file_is_refused_at_once() {
    let lab = Lab::new();
    let repo = repo_at(&lab.sb.path().join("proj"));
    // 120 KB: seconds of the parser's time at every read, before the fix.
    repo.write(
        ".workflow/workflow_state.yml",
        &format!("phase: X\nworkflow_id: {}\n", "[".repeat(60_000)),
    );
    let took = pre_compact(&lab, &repo.dir);
    assert!(
        took < Duration::from_secs(3),
        "PreCompact took {took:?} over a nested workflow file"
    );
    insta::assert_snapshot!(state_problems(&lab, &repo.dir), @"[TEMP]/proj/.workflow/workflow_state.yml: `[` and `{` are nested more than 64 deep at line 2; hookd reads YAML nested at most 64 deep (write deep lists as indented block lists)");
    // The capture step says so in events.jsonl too.
    let capture = workflow_events(&repo.dir)
        .into_iter()
        .find(|e| e["step"] == "capture")
        .expect("a capture step in events.jsonl");
    let said = format!("ok: {}\ndetail: {}", capture["ok"], capture["detail"]);
    insta::assert_snapshot!(lab.sb.normalize(&said), @r#"
        ok: false
        detail: "[TEMP]/proj/.workflow/workflow_state.yml: `[` and `{` are nested more than 64 deep at line 2; hookd reads YAML nested at most 64 deep (write deep lists as indented block lists)"
    "#);
}

#[test]
fn a_huge_flat_workflow_file_is_refused_at_once() {
    let lab = Lab::new();
    let repo = repo_at(&lab.sb.path().join("proj"));
    let mut text = String::from("workflow_id: wf_big\ndecisions:\n");
    while text.len() < 4 * 1024 * 1024 {
        text.push_str("  - {topic: Storage, decision: keep the cache in SQLite for now}\n");
    }
    repo.write(".workflow/workflow_state.yml", &text);
    let took = pre_compact(&lab, &repo.dir);
    assert!(
        took < Duration::from_secs(3),
        "PreCompact took {took:?} over a 4 MiB workflow file"
    );
    insta::assert_snapshot!(state_problems(&lab, &repo.dir), @"[TEMP]/proj/.workflow/workflow_state.yml is 4097 KiB, more than the 256 KiB hookd reads of a workflow file, so it was not read; keep finished tasks and old decisions out of it");
}

/// What `hookctl config` and `hookctl doctor`'s config check say in
/// `project`, normalized.
fn config_refusals(lab: &Lab, project: &Path) -> String {
    let config = output_text(&lab.sb.hookctl_in(project, &["config"]));
    let doctor: Value =
        serde_json::from_slice(&lab.sb.hookctl_in(project, &["doctor", "--json"]).stdout)
            .expect("doctor --json");
    let check = doctor["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["name"] == "config")
        .cloned()
        .unwrap_or(Value::Null);
    lab.sb.normalize(&format!(
        "# hookctl config\n{config}# hookctl doctor: config\n{:#}",
        hookd_tests::sorted_keys(&check)
    ))
}

#[test]
fn an_import_depth_of_four_billion_is_refused_and_saves_stay_fast() {
    let lab = Lab::new();
    let repo = repo_at(&lab.sb.path().join("proj"));
    repo.write(".hookd.yaml", "budget:\n  max_import_depth: 4294967295\n");
    repo.write("src/lib.rs", "pub fn a() {}\npub fn b() {}\n");
    repo.commit_all("a deep import walk");

    // The daemon uses the user's own configuration for this project: a
    // save, with the project's lock held, stays short.
    let started = Instant::now();
    let save = lab.sb.hookctl_in(&repo.dir, &["save"]);
    let took = started.elapsed();
    assert_ok(&save, "save");
    assert!(took < Duration::from_secs(5), "hookctl save took {took:?}");
    let t = lab.transcript("dep1");
    let started = Instant::now();
    let out = lab.hook(&repo.dir, &t, "PostToolUse", "post-tool-use");
    assert_ok(&out, "post-tool-use");
    assert!(started.elapsed() < Duration::from_secs(2));
    insta::assert_snapshot!(config_refusals(&lab, &repo.dir), @r#"
        # hookctl config
        --- stderr
        hookctl: config file [TEMP]/proj/.hookd.yaml: budget.max_import_depth: 4294967295 is more than 10, the most hookd takes; set at most 10 (line 2)
        --- exit 1
        # hookctl doctor: config
        {
          "detail": "config file [TEMP]/proj/.hookd.yaml: budget.max_import_depth: 4294967295 is more than 10, the most hookd takes; set at most 10 (line 2)",
          "fix": "edit the file it names; `hookctl config` shows each value and its source",
          "name": "config",
          "status": "fail"
        }
    "#);
}

#[test]
fn a_resume_prompt_of_a_hundred_million_characters_is_refused() {
    let lab = Lab::new();
    let repo = repo_at(&lab.sb.path().join("proj"));
    repo.write(".hookd.yaml", "# ours\nresume:\n  max_chars: 100000000\n");
    repo.commit_all("a long resume prompt");
    insta::assert_snapshot!(config_refusals(&lab, &repo.dir), @r#"
        # hookctl config
        --- stderr
        hookctl: config file [TEMP]/proj/.hookd.yaml: resume.max_chars: 100000000 is more than 65536, the most hookd takes; set at most 65536 (line 3)
        --- exit 1
        # hookctl doctor: config
        {
          "detail": "config file [TEMP]/proj/.hookd.yaml: resume.max_chars: 100000000 is more than 65536, the most hookd takes; set at most 65536 (line 3)",
          "fix": "edit the file it names; `hookctl config` shows each value and its source",
          "name": "config",
          "status": "fail"
        }
    "#);
}

/// The workflow file and the oversized setting are both refused (their
/// limits), so the resume prompt is the one the session itself gives; the
/// ceiling and the cutting of longer texts are the harness's and the
/// prompt's unit tests (`every_text_of_an_answer_is_cut_to_fit…`,
/// `no_prompt_is_longer_than_the_ceiling…`).
#[test]
fn a_huge_workflow_file_and_prompt_setting_still_leave_a_resume_prompt_that_arrives() {
    let lab = Lab::new();
    let repo = repo_at(&lab.sb.path().join("proj"));
    // 12 MB of decisions full of quotes, each escaped twice on the way out:
    // before the fix, the answer outgrew a frame and was dropped.
    let quotes = "\"".repeat(1000);
    let mut text = String::from("workflow_id: wf_big\ndecisions:\n");
    let mut i = 0;
    while text.len() < 12 * 1024 * 1024 {
        text.push_str(&format!("  - {{topic: 't{i}', decision: '{quotes}'}}\n"));
        i += 1;
    }
    repo.write(".workflow/workflow_state.yml", &text);
    repo.write(".hookd.yaml", "resume:\n  max_chars: 100000000\n");
    repo.commit_all("a huge workflow");

    let t = lab.transcript("big1");
    lab.start_session(&repo.dir, &t);
    assert_ok(
        &lab.hook(&repo.dir, &t, "PreCompact(trigger=manual)", "pre-compact"),
        "pre-compact",
    );
    t.boundary("manual", 20_000, 3_000);
    let start = lab.hook(
        &repo.dir,
        &t,
        "SessionStart(source=compact)",
        "session-start",
    );
    assert_ok(&start, "session-start(compact)");
    let context = additional_context(&hook_json(&start));
    assert!(
        context.chars().count() <= MAX_RESUME_CHARS,
        "{} characters",
        context.chars().count()
    );
    // The session's own task, and the arrival marker: the prompt came whole.
    insta::assert_snapshot!(lab.normalize(&repo.dir, &context), @r#"
        ## Context Recovery - Resuming Previous Session

        Your context was compacted. hookd saved where the work stood just before; pick it up from here.

        ### Checks Against the Repository Now
        - ✓ **git_status_matches**: HEAD is still [SHA] on main, and the working tree is as saved
        - ✓ **workflow_exists**: no workflow file was in use; .workflow/ is in place
        - ✓ **task_valid**: "Cache the token table" is still open (in_progress)

        ### Where You Stopped
        - **Objective**: make the parser faster
        - **In progress**: Cache the token table (Caching the token table)
        - **Last step**: TodoWrite `Cache the token table`: succeeded

        ### Next Actions (in order)
        1. **finish** Cache the token table
        2. **benchmark** the parser

        ### Open Tasks
        - (in progress) Cache the token table (Caching the token table)
        - (pending) Benchmark the parser (Benchmarking)

        ### Progress
        0 of 2 tasks completed.
        - [ ] Cache the token table (in progress: Caching the token table)
        - [ ] Benchmark the parser

        ### Session Info
        - **Capture**: compact_[STAMP] (claude-code session `big1`)
        - **Captured At**: [TIME] (before /compact)
        - **Context Usage**: 11% of the way to compaction (20,000 of 167,000 tokens), 10% of the window

        ### Checkpoint
        The working tree was committed as `[SHA]` on `refs/hookd/checkpoints/main` (your branch and index were not touched). Inspect it with `git show --stat [SHA]` or `git diff HEAD [SHA]`; `hookctl checkpoint restore [SHA] --path <file>` brings a file back.

        ---
        **Action Required**: Continue from next action 1 above: **finish** Cache the token table.
        [hookd-resume [MARKER]]
    "#);
    // The workflow file was refused and named.
    insta::assert_snapshot!(state_problems(&lab, &repo.dir), @"[TEMP]/proj/.workflow/workflow_state.yml is 12289 KiB, more than the 256 KiB hookd reads of a workflow file, so it was not read; keep finished tasks and old decisions out of it");
}

//! Repositories that try to make hookd spend unbounded time or memory: a
//! workflow file nested deep or grown huge, numbers in `.hookd.yaml` that
//! make a save crawl or a resume prompt explode. Each one goes through the
//! real hookctl and a real `hookd` process, and each checks that the hook
//! still answers within its budget and that the refusal is said, naming
//! the file.

use crate::attacks::{Lab, assert_ok, repo_at};
use hookd_tests::{additional_context, hook_json, stderr, stdout, workflow_events};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// The longest resume prompt, whatever the configuration.
const MAX_RESUME_CHARS: usize = 64 * 1024;

/// The saved state's `problems`.
fn state_problems(project: &Path) -> String {
    let text = std::fs::read_to_string(project.join(".workflow/context_state.json"))
        .expect("a saved state");
    let state: Value = serde_json::from_str(&text).unwrap();
    state["problems"].to_string()
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
    let problems = state_problems(&repo.dir);
    assert!(
        problems.contains("workflow_state.yml")
            && problems.contains("nested more than 64")
            && problems.contains("line 2"),
        "{problems}"
    );
    // The capture step says so in events.jsonl too.
    let capture = workflow_events(&repo.dir)
        .into_iter()
        .find(|e| e["step"] == "capture")
        .expect("a capture step in events.jsonl");
    assert!(
        capture.to_string().contains("workflow_state.yml"),
        "{capture}"
    );
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
    let problems = state_problems(&repo.dir);
    assert!(
        problems.contains("workflow_state.yml") && problems.contains("more than the 256 KiB"),
        "{problems}"
    );
}

/// `hookctl config` and `hookctl doctor` in a project whose `.hookd.yaml`
/// is `text`: both name `key`, the file and `line`.
fn assert_refused_by_key_file_and_line(lab: &Lab, project: &Path, key: &str, line: usize) {
    let config = lab.sb.hookctl_in(project, &["config"]);
    let said = stderr(&config);
    assert_ne!(config.status.code(), Some(0), "hookctl config: {said}");
    for part in [key, ".hookd.yaml", &format!("line {line}"), "set at most"] {
        assert!(
            said.contains(part),
            "hookctl config does not say {part:?}: {said}"
        );
    }
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
    assert!(
        check.to_string().contains(key) && check["status"] != "ok",
        "doctor's config check: {check}"
    );
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
    assert_refused_by_key_file_and_line(&lab, &repo.dir, "budget.max_import_depth", 2);
}

#[test]
fn a_resume_prompt_of_a_hundred_million_characters_is_refused() {
    let lab = Lab::new();
    let repo = repo_at(&lab.sb.path().join("proj"));
    repo.write(".hookd.yaml", "# ours\nresume:\n  max_chars: 100000000\n");
    repo.commit_all("a long resume prompt");
    assert_refused_by_key_file_and_line(&lab, &repo.dir, "resume.max_chars", 3);
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
        context.contains("[hookd-resume "),
        "no resume prompt reached the model: {}",
        stderr(&start)
    );
    assert!(
        context.chars().count() <= MAX_RESUME_CHARS,
        "{} characters",
        context.chars().count()
    );
    assert!(
        context.contains("Cache the token table"),
        "the prompt holds the session's task: {context}"
    );
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo.dir.join(".workflow/context_state.json")).unwrap(),
    )
    .unwrap();
    assert!(
        state["problems"].as_array().is_some_and(|p| p
            .iter()
            .any(|p| p.as_str().is_some_and(|p| p.contains("workflow_state.yml")))),
        "the workflow file was refused and named: {}",
        state["problems"]
    );
}

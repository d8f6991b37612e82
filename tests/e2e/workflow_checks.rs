//! What the compaction scenarios check of hookd's own output: the
//! pre-compact pipeline (`.workflow/context_state.json`, a checkpoint commit
//! on `refs/hookd/checkpoints/<branch>`, `.workflow/resume_prompt.md`,
//! PreCompact instructions) and the resume prompt injected on
//! SessionStart(compact). The scenarios call them at the right moment.

use hookd_tests::e2e::{ApiRequest, GitSnapshot, Scenario};
use hookd_tests::wait_until;
use serde_json::Value;
use std::time::Duration;

/// The branch the scenarios' projects are on.
const BRANCH: &str = "main";

fn read_json(sc: &Scenario, name: &str) -> Value {
    let path = sc.project.join(".workflow").join(name);
    assert!(
        wait_until(Duration::from_secs(10), || path.exists()),
        "{} was not written",
        path.display()
    );
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A threshold save wrote `.workflow/context_state.json` with the figure
/// that fired it.
pub fn state_saved(sc: &Scenario, tokens_used: u64) {
    let state = read_json(sc, "context_state.json");
    assert_eq!(
        state["context_usage"]["tokens_used"], tokens_used,
        "{state}"
    );
    assert_eq!(
        state["context_usage"]["tokens_max"],
        hookd_tests::e2e::COMPACTS_AT
    );
}

/// A checkpoint commit of the whole working tree (with `untracked`, a file
/// the agent created) on the private ref, and nothing of the user's touched.
pub fn checkpoint_made(sc: &Scenario, before: &GitSnapshot, untracked: &str) {
    let reference = format!("refs/hookd/checkpoints/{BRANCH}");
    assert!(
        wait_until(Duration::from_secs(10), || {
            std::process::Command::new("git")
                .args(["rev-parse", "--verify", "--quiet", &reference])
                .current_dir(&sc.project)
                .status()
                .is_ok_and(|s| s.success())
        }),
        "no checkpoint on {reference}"
    );
    let message = sc.git(&["log", "-1", "--format=%s", &reference]);
    assert!(
        message.starts_with("WIP: Pre-compaction checkpoint"),
        "{message}"
    );
    let files = sc.git(&["ls-tree", "-r", "--name-only", &reference]);
    assert!(
        files.lines().any(|f| f == untracked),
        "{untracked} in the checkpoint: {files}"
    );
    let now = sc.git_snapshot();
    assert_eq!(
        (&now.head, &now.index, &now.stash),
        (&before.head, &before.index, &before.stash)
    );
}

/// After PreCompact: state, checkpoint and resume prompt written, the
/// resume prompt lists the tasks, hookd's instructions reached the summary
/// request, and the compaction is recorded once, as announced.
pub fn pre_compact_pipeline(
    sc: &Scenario,
    before: &GitSnapshot,
    untracked: &str,
    summary_request: &ApiRequest,
    precompact_stdout: Option<&str>,
    tasks: &[&str],
) {
    read_json(sc, "context_state.json");
    checkpoint_made(sc, before, untracked);
    let prompt = std::fs::read_to_string(sc.project.join(".workflow/resume_prompt.md"))
        .expect(".workflow/resume_prompt.md");
    for task in tasks {
        assert!(
            prompt.contains(task),
            "{task:?} in the resume prompt:\n{prompt}"
        );
    }
    match precompact_stdout {
        // Manual compaction shows the hook's output; it must be in the summary request.
        Some(text) => assert!(
            !text.trim().is_empty() && summary_request.contains(text.trim()),
            "PreCompact's instructions {text:?} reached the summarizer"
        ),
        None => assert!(
            summary_request.contains("Additional Instructions"),
            "PreCompact's instructions reached the summarizer"
        ),
    }
    let compactions = sc.events("compaction");
    assert_eq!(
        compactions.len(),
        1,
        "one compaction, one event: {compactions:?}"
    );
    assert_eq!(compactions[0]["announced"], true, "{compactions:?}");
}

/// The first request after the compaction carries the resume prompt (its
/// first line, once) with every task in it.
/// Returns the text block that carried it.
pub fn resume_prompt_reached_model(
    sc: &Scenario,
    first_after: &ApiRequest,
    tasks: &[&str],
) -> String {
    let prompt = std::fs::read_to_string(sc.project.join(".workflow/resume_prompt.md"))
        .expect(".workflow/resume_prompt.md");
    let marker = prompt
        .lines()
        .find(|l| !l.trim().is_empty())
        .expect("a non-empty resume prompt");
    assert_eq!(
        first_after.count(marker),
        1,
        "the resume prompt ({marker:?}) reached the model once"
    );
    // The tasks may also be in the messages kept from before the compaction:
    // look for them in the block that carries the resume prompt (a text
    // block, or, after a compaction mid-turn, a tool result's content).
    let block = first_after.body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .filter_map(|b| b["text"].as_str().or(b["content"].as_str()))
        .find(|t| t.contains(marker))
        .expect("the block with the resume prompt");
    for task in tasks {
        assert!(
            block.contains(task),
            "{task:?} in the resume prompt the model got:\n{block}"
        );
    }
    // The context budget named the file the agent wrote as one to read again.
    assert!(
        block.contains("### Context to Reload") && block.contains("- `src/parser.rs`: "),
        "the files to reload in the resume prompt the model got:\n{block}"
    );
    block.to_owned()
}

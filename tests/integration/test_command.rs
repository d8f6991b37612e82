//! `tests/run` itself: an end-to-end scenario whose client is missing is
//! reported as skipped, with the reason, and never as passed.

use hookd_tests::{stderr, stdout};
use std::path::Path;
use std::process::Command;

#[test]
fn a_scenario_without_its_client_is_skipped_not_passed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let scenario = "codex::codex_context_figure_is_the_rollouts";
    let mut cmd = Command::new(root.join("tests/run"));
    // What a person's shell would hand it: nothing of this test run's cargo
    // or nextest, nor CI's HOOKD_E2E=require.
    cmd.env_clear();
    for name in [
        "PATH",
        "HOME",
        "TMPDIR",
        "CARGO_HOME",
        "RUSTUP_HOME",
        "RUSTUP_TOOLCHAIN",
        // The build this test runs in, not a second one in the default target/.
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET_DIR",
    ] {
        if let Some(value) = std::env::var_os(name) {
            cmd.env(name, value);
        }
    }
    let out = cmd
        .env("HOOKD_E2E_INSTALL", "0")
        .env("HOOKD_E2E_CODEX", "/nonexistent/codex")
        .args(["--test", "e2e", scenario])
        .current_dir(root)
        .output()
        .expect("run tests/run");
    let (out_text, err_text) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{out_text}{err_text}");
    // stderr holds the build's and nextest's progress: only no PASS in it.
    assert!(!err_text.contains("PASS"), "{out_text}{err_text}");
    // Skipped with the reason, never passed.
    insta::assert_snapshot!(out_text, @r#"
        e2e: 1 skipped (no Claude Code, Codex CLI, Gemini CLI, Qwen Code, Copilot CLI, OpenCode: HOOKD_E2E_CLAUDE is not set, HOOKD_E2E_CODEX=/nonexistent/codex is not an executable, HOOKD_E2E_GEMINI is not set, HOOKD_E2E_QWEN is not set, HOOKD_E2E_COPILOT is not set, HOOKD_E2E_OPENCODE is not set; HOOKD_E2E_INSTALL=0): codex::codex_context_figure_is_the_rollouts
        0 passed, 0 failed, 1 skipped
    "#);
}

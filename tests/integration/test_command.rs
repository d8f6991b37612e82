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
    assert!(
        !out_text.contains("PASS") && !err_text.contains("PASS"),
        "{out_text}{err_text}"
    );
    let lines: Vec<&str> = out_text.trim_end().lines().collect();
    assert_eq!(
        lines.last().copied(),
        Some("0 passed, 0 failed, 1 skipped"),
        "{out_text}"
    );
    let named = lines.iter().any(|l| {
        l.starts_with("e2e: 1 skipped (")
            && l.contains("HOOKD_E2E_CODEX=/nonexistent/codex is not an executable")
            && l.ends_with(scenario)
    });
    assert!(named, "{out_text}");
}

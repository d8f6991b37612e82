//! A reader that goes away (`hookctl … | head -1`) ends a command quietly:
//! exit 0, no panic, no backtrace, and a command that changes something
//! still finishes.

use hookd_tests::{Sandbox, TestDaemon, output_text, stderr};
use std::process::Stdio;

/// Runs `hookctl <args>` with its standard output a pipe whose reading end
/// is already closed, as after `| head` has read its lines.
fn with_reader_gone(sb: &Sandbox, args: &[&str]) -> std::process::Output {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let child = sb
        .command("hookctl")
        .args(args)
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn hookctl");
    child.wait_with_output().expect("wait for hookctl")
}

#[test]
fn every_printing_command_ends_quietly_when_its_reader_has_gone() {
    let sb = Sandbox::new();
    // A daemon to talk to, for the commands that need one.
    let _daemon = TestDaemon::start(sb.daemon_options());
    for args in [
        &["completions", "bash"][..],
        &["install", "--dry-run"],
        &["config"],
        &["status"],
        &["status", "--json"],
        &["watch"],
        &["logs"],
        &["doctor"],
        &["checkpoints"],
        &["memory", "list"],
        &["memory", "stats"],
        &["templates"],
        &["templates", "show", "resume_prompt"],
        &["task", "show"],
        &["resume", "--print"],
        &["--help"],
        &["--version"],
    ] {
        let out = with_reader_gone(&sb, args);
        let err = stderr(&out);
        assert!(
            !err.contains("panicked"),
            "hookctl {args:?} panicked: {err}"
        );
        // As the command ends when read whole (`watch` runs until stopped).
        let expected = if args[0] == "watch" {
            Some(0)
        } else {
            sb.hookctl(args).status.code()
        };
        assert_eq!(
            out.status.code(),
            expected,
            "hookctl {args:?} without its reader: {err}"
        );
        assert!(
            !err.contains("Broken pipe") && !err.contains("os error 32"),
            "hookctl {args:?} reported the closed pipe as an error: {err}"
        );
    }
}

/// A write that fails for another reason (a full disk) is not taken for a
/// reader gone: the command says so and fails.
#[test]
fn output_that_cannot_be_written_fails_the_command() {
    let sb = Sandbox::new();
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let out = sb
        .command("hookctl")
        .args(["templates", "show", "resume_prompt"])
        .stdout(full)
        .stderr(Stdio::piped())
        .output()
        .expect("run hookctl");
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        --- stderr
        hookctl: could not write all of the output: No space left on device (os error 28)
        --- exit 1
    "#);
}

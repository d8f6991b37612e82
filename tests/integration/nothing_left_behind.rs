//! A hook that finds no hookd and cannot start one leaves nothing behind in
//! the socket's directory (no autostart lock, no empty directory of ours),
//! still exits 0 at once with no output, and a burst of hooks still starts
//! exactly one daemon.

use hookd_tests::{Sandbox, bin, payload, run_with_stdin, stderr, stdout, wait_until};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

/// A `$XDG_RUNTIME_DIR` of the sandbox's own, so the socket's directory
/// (`<it>/hookd/`) is one hookctl chooses and creates.
fn runtime_dir(sb: &Sandbox) -> PathBuf {
    let dir = sb.path().join("xdg");
    std::fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
    dir
}

/// `hookctl hook post-tool-use` with the socket under `runtime`, starting
/// `hookd_bin` when no daemon answers.
fn hook_in(sb: &Sandbox, runtime: &Path, hookd_bin: &Path, extra: &[&str]) -> (Output, Duration) {
    let mut cmd = sb.command("hookctl");
    cmd.env_remove("HOOKD_SOCKET")
        .env("XDG_RUNTIME_DIR", runtime)
        .env("HOOKD_BIN", hookd_bin)
        .arg("hook")
        .args(extra)
        .arg("post-tool-use");
    let started = Instant::now();
    let out = run_with_stdin(cmd, &serde_json::to_vec(&payload("PostToolUse")).unwrap());
    (out, started.elapsed())
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = match std::fs::read_dir(dir) {
        Ok(read) => read
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    names
}

fn assert_failed_open(out: &Output, took: Duration) {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    assert_eq!(stdout(out), "");
    assert_eq!(stderr(out), "", "silent without -v");
    assert!(took < Duration::from_secs(3), "took {took:?}");
}

/// A stand-in for hookd: a shell script at `<sandbox>/<name>`.
fn fake_hookd(sb: &Sandbox, name: &str, body: &str) -> PathBuf {
    let path = sb.path().join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Nothing in `dir`, or what was left there, named.
fn assert_empty(dir: &Path) {
    assert_eq!(
        entries(dir),
        Vec::<String>::new(),
        "left in {}",
        dir.display()
    );
}

#[test]
fn an_absent_hookd_leaves_no_trace_in_the_runtime_dir() {
    let sb = Sandbox::new();
    let runtime = runtime_dir(&sb);
    let (out, took) = hook_in(&sb, &runtime, Path::new("/nonexistent/hookd"), &[]);
    assert_failed_open(&out, took);
    assert_empty(&runtime);
}

#[test]
fn a_hookd_that_fails_to_start_leaves_no_trace() {
    let sb = Sandbox::new();
    let runtime = runtime_dir(&sb);
    let broken = fake_hookd(&sb, "broken-hookd", "echo 'hookd: cannot bind' >&2; exit 1");
    let (out, took) = hook_in(&sb, &runtime, &broken, &[]);
    assert_failed_open(&out, took);
    assert_empty(&runtime);
}

#[test]
fn a_hookd_start_that_outlives_the_hook_leaves_no_lock() {
    let sb = Sandbox::new();
    let runtime = runtime_dir(&sb);
    let done = sb.path().join("slow-hookd-done");
    let slow = fake_hookd(
        &sb,
        "slow-hookd",
        &format!("sleep 1; touch {}; exit 1", done.display()),
    );
    let (out, took) = hook_in(&sb, &runtime, &slow, &["--timeout-ms", "200"]);
    assert_failed_open(&out, took);
    assert!(
        took < Duration::from_millis(900),
        "waited for hookd start: {took:?}"
    );
    let socket_dir = runtime.join("hookd");
    assert_empty(&socket_dir);
    assert!(wait_until(Duration::from_secs(10), || done.exists()));
    assert_empty(&socket_dir);
}

#[test]
fn a_socket_dir_the_person_named_keeps_only_what_was_there() {
    let sb = Sandbox::new();
    let mut cmd = sb.command("hookctl");
    cmd.env("HOOKD_BIN", "/nonexistent/hookd")
        .args(["hook", "post-tool-use"]);
    let started = Instant::now();
    let out = run_with_stdin(cmd, &serde_json::to_vec(&payload("PostToolUse")).unwrap());
    assert_failed_open(&out, started.elapsed());
    let named = sb.socket().parent().unwrap().to_path_buf();
    assert!(named.is_dir(), "the directory the person made stays");
    assert_empty(&named);
}

#[test]
fn a_burst_of_hooks_starts_one_daemon_and_leaves_no_lock() {
    let sb = Sandbox::new();
    let runtime = runtime_dir(&sb);
    let starts = sb.path().join("starts.log");
    let counting = fake_hookd(
        &sb,
        "counting-hookd",
        &format!(
            "echo started >> {}\nexec {} \"$@\"",
            starts.display(),
            bin("hookd").display()
        ),
    );
    let outs: Vec<(Output, Duration)> = std::thread::scope(|scope| {
        let running: Vec<_> = (0..8)
            .map(|_| scope.spawn(|| hook_in(&sb, &runtime, &counting, &[])))
            .collect();
        running.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (out, _) in &outs {
        assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    }
    let started = std::fs::read_to_string(&starts).unwrap_or_default();
    assert_eq!(
        started.lines().count(),
        1,
        "hookd start ran {} times",
        started.lines().count()
    );
    let socket_dir = runtime.join("hookd");
    assert_eq!(
        entries(&socket_dir),
        ["hookd.sock", "hookd.sock.pid"],
        "in {}",
        socket_dir.display()
    );
    let stop = sb
        .command("hookctl")
        .env_remove("HOOKD_SOCKET")
        .env("XDG_RUNTIME_DIR", &runtime)
        .args(["daemon", "stop"])
        .output()
        .unwrap();
    assert!(stop.status.success(), "{}", stderr(&stop));
}

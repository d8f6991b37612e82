//! Fail open: whatever is wrong with the daemon, a hook exits 0 with no
//! output within its budget.

use hookd_tests::{Sandbox, output_text, payload, run_with_stdin, stderr, stdout};
use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::time::{Duration, Instant};

fn post_tool_use() -> Vec<u8> {
    serde_json::to_vec(&payload("PostToolUse")).unwrap()
}

fn timed_hook(sb: &Sandbox, extra: &[&str]) -> (std::process::Output, Duration) {
    let mut cmd = sb.command("hookctl");
    cmd.args(["hook", "post-tool-use"]).args(extra);
    let started = Instant::now();
    let out = run_with_stdin(cmd, &post_tool_use());
    (out, started.elapsed())
}

#[test]
fn absent_and_not_startable() {
    let sb = Sandbox::new();
    let mut cmd = sb.command("hookctl");
    cmd.env("HOOKD_BIN", "/nonexistent/hookd")
        .args(["hook", "post-tool-use"]);
    let out = run_with_stdin(cmd, &post_tool_use());
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "");
    assert_eq!(stderr(&out), "", "silent without -v");

    let mut cmd = sb.command("hookctl");
    cmd.env("HOOKD_BIN", "/nonexistent/hookd")
        .args(["-v", "hook", "post-tool-use"]);
    let out = run_with_stdin(cmd, &post_tool_use());
    // Exit 0 with nothing on stdout; told why only when asked with -v.
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        --- stderr
        hookctl: could not start hookd: cannot run /nonexistent/hookd: No such file or directory (os error 2)
    "#);
}

#[test]
fn a_non_utf8_environment_variable_is_no_problem() {
    use std::os::unix::ffi::OsStrExt;
    let sb = Sandbox::new();
    let weird = std::ffi::OsStr::from_bytes(b"caf\xe9");
    let mut cmd = sb.command("hookctl");
    cmd.env("HOOKD_BIN", "/nonexistent/hookd")
        .env("SOME_LATIN1_VAR", weird)
        .env("HOOKD_NOTE", weird)
        .args(["hook", "post-tool-use"]);
    let out = run_with_stdin(cmd, &post_tool_use());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert_eq!(stderr(&out), "");

    let mut cmd = sb.command("hookctl");
    cmd.env("HOOKD_BIN", "/nonexistent/hookd")
        .env("SOME_LATIN1_VAR", weird)
        .arg("statusline");
    let out = run_with_stdin(cmd, b"{}");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stdout(&out).is_empty(), "a status line is printed");
}

#[test]
fn autostart_disabled_by_config() {
    let sb = Sandbox::new();
    let mut cmd = sb.command("hookctl");
    cmd.env("HOOKD_CLIENT__AUTOSTART", "false")
        .args(["hook", "post-tool-use"]);
    let out = run_with_stdin(cmd, &post_tool_use());
    assert_eq!(out.status.code(), Some(0));
    assert!(!sb.socket().exists(), "no daemon was started");
}

#[test]
fn a_hung_daemon_costs_at_most_the_budget() {
    let sb = Sandbox::new();
    assert!(sb.hookd(&["start"]).status.success());
    let pid: i32 = std::fs::read_to_string(sb.socket().with_file_name("hookd.sock.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // A real daemon, frozen: the kernel still accepts connections, nothing answers.
    // SAFETY: signalling the daemon this test started.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    let (out, took) = timed_hook(&sb, &["--timeout-ms", "300"]);
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "");
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_millis(1500),
        "took {took:?}"
    );
    assert!(sb.hookd(&["stop"]).status.success());
}

/// PreCompact's budget is long (the save is real work), but a daemon that has
/// not even greeted within the ordinary hook budget is not going to answer.
#[test]
fn a_hung_daemon_costs_pre_compact_only_the_greeting() {
    let sb = Sandbox::new();
    assert!(sb.hookd(&["start"]).status.success());
    let pid: i32 = std::fs::read_to_string(sb.socket().with_file_name("hookd.sock.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: signalling the daemon this test started.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    let mut cmd = sb.command("hookctl");
    cmd.env("HOOKD_CLIENT__HOOK_TIMEOUT_MS", "300")
        .env("HOOKD_CLIENT__PRE_COMPACT_TIMEOUT_MS", "20000")
        .args(["hook", "pre-compact"]);
    let started = Instant::now();
    let out = run_with_stdin(cmd, &post_tool_use());
    let took = started.elapsed();
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "");
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_millis(3000),
        "took {took:?}"
    );
    assert!(sb.hookd(&["stop"]).status.success());
}

#[test]
fn a_daemon_that_hangs_up_mid_request() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.socket().parent().unwrap()).unwrap();
    let listener = UnixListener::bind(sb.socket()).unwrap();
    let server = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut header = [0u8; 4];
        let _ = conn.read_exact(&mut header);
        // Crash: close without answering.
    });
    let (out, _) = timed_hook(&sb, &[]);
    server.join().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "");
}

#[test]
fn a_daemon_that_answers_garbage() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.socket().parent().unwrap()).unwrap();
    let listener = UnixListener::bind(sb.socket()).unwrap();
    let server = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let _: Result<protocol::wire::Hello, _> = protocol::frame::read_message(&mut conn);
        let _ = conn.write_all(b"\x00\x00\x00\x05hello");
    });
    let mut cmd = sb.command("hookctl");
    cmd.args(["-v", "hook", "post-tool-use"]);
    let out = run_with_stdin(cmd, &post_tool_use());
    server.join().unwrap();
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        --- stderr
        hookctl: unexpected message (expected value at line 1 column 1); is hookctl the same version as hookd? The message began with: hello
    "#);
}

#[test]
fn an_unusable_socket_path() {
    let sb = Sandbox::new();
    let long = format!("/tmp/{}.sock", "x".repeat(150));
    let mut cmd = sb.command("hookctl");
    cmd.env("HOOKD_SOCKET", &long)
        .args(["hook", "post-tool-use"]);
    let out = run_with_stdin(cmd, &post_tool_use());
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "");

    // A socket directory we may not create (a file is in the way).
    std::fs::write(sb.path().join("blocker"), "").unwrap();
    let mut cmd = sb.command("hookctl");
    cmd.env("HOOKD_SOCKET", sb.path().join("blocker/hookd.sock"))
        .args(["hook", "post-tool-use"]);
    let out = run_with_stdin(cmd, &post_tool_use());
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "");
    // Interactive commands say what is wrong instead.
    let out = sb
        .command("hookctl")
        .env("HOOKD_SOCKET", &long)
        .arg("status")
        .output()
        .unwrap();
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        --- stderr
        hookctl: socket path /tmp/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.sock is 160 bytes, longer than the 107 a Unix socket allows; choose a shorter one with --socket or HOOKD_SOCKET
        --- exit 1
    "#);
}

#[test]
fn a_hook_creates_no_socket_directory() {
    let sb = Sandbox::new();
    let missing = sb.path().join("no/such/dir");
    let mut cmd = sb.command("hookctl");
    cmd.env("HOOKD_SOCKET", missing.join("hookd.sock"))
        .args(["hook", "post-tool-use"]);
    let out = run_with_stdin(cmd, &post_tool_use());
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "");
    assert_eq!(stderr(&out), "", "silent without -v");
    assert!(
        !sb.path().join("no").exists(),
        "the hook created the socket's directory tree"
    );
    // Asked for explicitly, hookd is started there.
    let out = sb
        .command("hookctl")
        .env("HOOKD_SOCKET", missing.join("hookd.sock"))
        .args(["daemon", "start"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(missing.join("hookd.sock").exists());
}

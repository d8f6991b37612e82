//! The daemon's life as the real binaries live it: start, stop, refusal of a
//! second daemon, stale sockets, signals, autostart.

use hookd_tests::{ChildGuard, Sandbox, TestEvent, output_text, process_alive, stderr, wait_until};
use std::process::Stdio;
use std::time::Duration;

use hookd_tests::file_mode as mode;

fn daemon_pid(sb: &Sandbox) -> i32 {
    let text = std::fs::read_to_string(sb.socket().with_file_name("hookd.sock.pid")).unwrap();
    text.trim().parse().unwrap()
}

#[test]
fn start_then_stop_cleans_up() {
    let sb = Sandbox::new();
    let out = sb.hookd(&["start"]);
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @"hookd started (pid [PID]) on [SOCKET]");
    assert_eq!(mode(&sb.socket()), 0o600, "socket mode");
    assert_eq!(
        mode(sb.socket().parent().unwrap()),
        0o700,
        "socket directory mode"
    );
    let pid = daemon_pid(&sb);
    assert!(process_alive(pid));

    // Starting again is harmless: it says so and changes nothing.
    let again = sb.hookd(&["start"]);
    insta::assert_snapshot!(sb.normalize(&output_text(&again)), @"hookd is already running (pid [PID]) on [SOCKET]");
    assert_eq!(daemon_pid(&sb), pid);

    let out = sb.hookd(&["stop"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!sb.socket().exists(), "socket left behind");
    assert!(
        !sb.socket().with_file_name("hookd.sock.pid").exists(),
        "pidfile left behind"
    );
    assert!(wait_until(Duration::from_secs(5), || !process_alive(pid)));
}

#[test]
fn a_second_daemon_is_refused_with_the_lock_path() {
    let sb = Sandbox::new();
    assert!(sb.hookd(&["start"]).status.success());
    let out = sb.hookd(&["run"]);
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        --- stderr
        hookd: another hookd is already running (pid [PID]): it holds the lock [SOCKET].pid
        --- exit 1
    "#);
    // The first daemon still answers.
    assert!(sb.hookctl(&["daemon", "status"]).status.success());
    assert!(sb.hookd(&["stop"]).status.success());
}

#[test]
fn a_stale_socket_is_reclaimed() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.socket().parent().unwrap()).unwrap();
    // A socket file nobody listens on: what a killed daemon leaves.
    drop(std::os::unix::net::UnixListener::bind(sb.socket()).unwrap());
    assert!(sb.socket().exists());
    let out = sb.hookd(&["start"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(sb.hookctl(&["daemon", "status"]).status.success());
    assert!(sb.hookd(&["stop"]).status.success());
}

#[test]
fn a_live_socket_is_never_displaced() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.socket().parent().unwrap()).unwrap();
    let squatter = std::os::unix::net::UnixListener::bind(sb.socket()).unwrap();
    let out = sb.hookd(&["run"]);
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        --- stderr
        hookd: a daemon is already answering on [SOCKET]; it was left running
        --- exit 1
    "#);
    // Whoever listens there still does.
    std::os::unix::net::UnixStream::connect(sb.socket()).unwrap();
    drop(squatter);
}

#[test]
fn a_file_that_is_not_a_socket_is_left_alone() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.socket().parent().unwrap()).unwrap();
    std::fs::write(sb.socket(), "precious").unwrap();
    let out = sb.hookd(&["run"]);
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        --- stderr
        hookd: [SOCKET] exists and is not a socket; refusing to replace it (choose another --socket)
        --- exit 1
    "#);
    assert_eq!(std::fs::read_to_string(sb.socket()).unwrap(), "precious");
}

#[test]
fn sigterm_and_sigint_shut_down_cleanly() {
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let sb = Sandbox::new();
        let mut child = ChildGuard::spawn(
            sb.command("hookd")
                .arg("run")
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        );
        sb.wait_for(TestEvent::Listening, "");
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, signal) };
        let status = child.wait().unwrap();
        assert!(status.success(), "signal {signal}: {status}");
        assert!(!sb.socket().exists(), "signal {signal}: socket left behind");
        assert!(!sb.socket().with_file_name("hookd.sock.pid").exists());
    }
}

#[test]
fn a_second_signal_exits_without_waiting_for_the_drain() {
    use std::io::Write;
    let sb = Sandbox::new();
    let mut child = ChildGuard::spawn(
        sb.command("hookd")
            .arg("run")
            .env("HOOKD_DAEMON__DRAIN_TIMEOUT_MS", "60000")
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    sb.wait_for(TestEvent::Listening, "");
    // A request in flight: a frame header promising bytes that never come.
    // The handshake first, so the daemon has surely accepted the connection
    // (under load, one still waiting to be accepted is not drained).
    let mut conn = std::os::unix::net::UnixStream::connect(sb.socket()).unwrap();
    protocol::frame::write_frame(&mut conn, &protocol::wire::Hello::current()).unwrap();
    let hello: protocol::wire::Response = protocol::frame::read_message(&mut conn).unwrap();
    assert!(
        matches!(hello, protocol::wire::Response::Hello(_)),
        "{hello:?}"
    );
    conn.write_all(&100u32.to_be_bytes()).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let pid = child.id() as i32;
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    assert!(
        wait_until(Duration::from_secs(5), || !sb.socket().exists()),
        "stopped accepting"
    );
    assert!(
        child.try_wait().unwrap().is_none(),
        "the first signal drains; it does not exit at once"
    );
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
}

#[test]
fn the_idle_timeout_stops_the_daemon() {
    let sb = Sandbox::new();
    let mut child = ChildGuard::spawn(
        sb.command("hookd")
            .args(["run", "--idle-timeout", "1"])
            .stderr(Stdio::null()),
    );
    sb.wait_for(TestEvent::Listening, "");
    let status = child.wait().unwrap();
    assert!(status.success());
    assert!(!sb.socket().exists());
}

#[test]
fn hookctl_daemon_commands() {
    let sb = Sandbox::new();
    let out = sb.hookctl(&["daemon", "status"]);
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        hookd is not running on [SOCKET]
        --- exit 3
    "#);
    let out = sb.hookctl(&["daemon", "start"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let first = daemon_pid(&sb);
    let out = sb.hookctl(&["daemon", "restart"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let second = daemon_pid(&sb);
    assert_ne!(first, second, "restart runs a new process");
    assert!(wait_until(Duration::from_secs(5), || !process_alive(first)));
    let out = sb.hookctl(&["daemon", "stop"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!sb.socket().exists());
}

#[test]
fn the_default_socket_directory_is_private() {
    let sb = Sandbox::new();
    let runtime = sb.path().join("xdg");
    std::fs::create_dir_all(&runtime).unwrap();
    let out = sb
        .command("hookd")
        .env_remove("HOOKD_SOCKET")
        .env("XDG_RUNTIME_DIR", &runtime)
        .arg("start")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let socket = runtime.join("hookd/hookd.sock");
    assert_eq!(mode(&socket), 0o600);
    assert_eq!(mode(&runtime.join("hookd")), 0o700);
    let log_files: Vec<_> = std::fs::read_dir(sb.state_dir().join("logs"))
        .unwrap()
        .flatten()
        .collect();
    assert!(!log_files.is_empty(), "a log file");
    for f in log_files {
        assert_eq!(
            mode(&f.path()) & 0o077,
            0,
            "{} is readable by others",
            f.path().display()
        );
    }
    let stop = sb
        .command("hookd")
        .env_remove("HOOKD_SOCKET")
        .env("XDG_RUNTIME_DIR", &runtime)
        .arg("stop")
        .output()
        .unwrap();
    assert!(stop.status.success());
}

#[test]
fn a_failing_test_leaves_no_daemon_behind() {
    let mut pids = Vec::new();
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let background = Sandbox::new();
        assert!(background.hookd(&["start"]).status.success());
        pids.push(daemon_pid(&background));
        let foreground = Sandbox::new();
        let child = ChildGuard::spawn(
            foreground
                .command("hookd")
                .arg("run")
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        );
        pids.push(child.id() as i32);
        foreground.wait_for(TestEvent::Listening, "");
        panic!("the test fails with both daemons running");
    }));
    assert!(failed.is_err());
    assert_eq!(pids.len(), 2);
    for pid in pids {
        assert!(
            wait_until(Duration::from_secs(5), || !process_alive(pid)),
            "hookd {pid} outlived its sandbox"
        );
    }
}

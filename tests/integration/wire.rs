//! The handshake and the protocol number, spoken by hand to the real daemon
//! and by a peer with another protocol number to the real hookctl.

use hookd_tests::{Sandbox, TestDaemon, output_text, payload, run_with_stdin, stdout};
use protocol::frame::{read_message, write_frame};
use protocol::wire::{ErrorKind, Hello, Request, Response};
use std::os::unix::net::{UnixListener, UnixStream};

#[test]
fn the_daemon_refuses_another_protocol_and_says_what_to_do() {
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options());
    let mut conn = UnixStream::connect(&daemon.socket).unwrap();
    write_frame(
        &mut conn,
        &Hello {
            version: "9.9.9".into(),
            protocol: 999,
        },
    )
    .unwrap();
    let Response::Error(e) = read_message::<_, Response>(&mut conn).unwrap() else {
        panic!("expected an error")
    };
    assert_eq!(e.kind, ErrorKind::ProtocolMismatch);
    insta::assert_snapshot!(sb.normalize(&e.message), @"hookctl 9.9.9 speaks protocol 999, but the running hookd 0.1.0 speaks protocol 1: restart the daemon (`hookctl daemon restart`) so both are the same version");
}

#[test]
fn hello_then_requests_on_one_connection() {
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options());
    let mut conn = UnixStream::connect(&daemon.socket).unwrap();
    write_frame(&mut conn, &Hello::current()).unwrap();
    assert!(
        matches!(read_message::<_, Response>(&mut conn).unwrap(), Response::Hello(h) if h == Hello::current())
    );
    for _ in 0..3 {
        write_frame(&mut conn, &Request::Ping).unwrap();
        assert!(matches!(
            read_message::<_, Response>(&mut conn).unwrap(),
            Response::Pong
        ));
    }
    // A request that does not decode gets a clear error.
    write_frame(&mut conn, &serde_json::json!({"launch": "rockets"})).unwrap();
    let Response::Error(e) = read_message::<_, Response>(&mut conn).unwrap() else {
        panic!("expected an error")
    };
    assert_eq!(e.kind, ErrorKind::BadRequest);
    insta::assert_snapshot!(sb.normalize(&e.message), @r#"
        unexpected message (unknown variant `launch`, expected one of `hook`, `status`, `shutdown`, `ping`, `watch`, `status_line`, `record`, `save`, `checkpoints`, `checkpoint_show`, `checkpoint_restore`, `resume`, `validate`, `context_budget`, `context_score`, `summarize`, `context_report`, `reflect`, `task`, `memory`, `sync` at line 1 column 9); is hookctl the same version as hookd? The message began with: {"launch":"rockets"}
    "#);
}

#[test]
fn hookctl_explains_a_protocol_mismatch() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.socket().parent().unwrap()).unwrap();
    let listener = UnixListener::bind(sb.socket()).unwrap();
    // A daemon from the future: it accepts the handshake with its own number.
    let server = std::thread::spawn(move || {
        for _ in 0..2 {
            let (mut conn, _) = listener.accept().unwrap();
            let _: Hello = read_message(&mut conn).unwrap();
            write_frame(
                &mut conn,
                &Response::Hello(Hello {
                    version: "9.9.9".into(),
                    protocol: 999,
                }),
            )
            .unwrap();
        }
    });
    let out = sb.hookctl(&["status"]);
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        --- stderr
        hookctl: hookd 9.9.9 speaks protocol 999, but hookctl 0.1.0 speaks protocol 1: restart the daemon (`hookctl daemon restart`) so both are the same version
        --- exit 1
    "#);

    let mut cmd = sb.command("hookctl");
    cmd.args(["hook", "post-tool-use"]);
    let out = run_with_stdin(cmd, &serde_json::to_vec(&payload("PostToolUse")).unwrap());
    assert_eq!(out.status.code(), Some(0), "a hook fails open");
    assert_eq!(stdout(&out), "");
    server.join().unwrap();
}

#[test]
fn a_stalled_client_does_not_stall_others() {
    use std::io::Write;
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options());
    // One client sends half a frame and goes quiet.
    let mut stalled = UnixStream::connect(&daemon.socket).unwrap();
    stalled.write_all(&[0, 0]).unwrap();
    for _ in 0..5 {
        let out = sb.hook(
            "post-tool-use",
            &serde_json::to_vec(&payload("PostToolUse")).unwrap(),
        );
        assert_eq!(out.status.code(), Some(0));
    }
    let report = daemon
        .engine()
        .status(&protocol::wire::StatusQuery::default());
    assert_eq!(report.daemon.events_handled, 5);
    drop(stalled);
}

//! `hookctl hook` against a real daemon: the round trip, autostart, and
//! input that must be refused before anything is sent.

use hookd_tests::{
    HookAnswer, Sandbox, TestDaemon, output_text, payload, process_alive, stderr, stdout,
    wait_until,
};
use protocol::wire::StatusQuery;
use std::time::Duration;

fn fixture(name: &str) -> Vec<u8> {
    serde_json::to_vec(&payload(name)).unwrap()
}

#[test]
fn a_hook_is_recorded_against_its_session() {
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options());
    for (event, name) in [
        ("session-start", "SessionStart(source=startup)"),
        ("post-tool-use", "PostToolUse"),
        ("stop", "Stop"),
    ] {
        let out = sb.hook(event, &fixture(name));
        assert!(out.status.success(), "{event}: {}", stderr(&out));
        if event == "session-start" {
            // One line for the model: the records that survive compaction.
            let answer = HookAnswer::parse(&stdout(&out));
            insta::assert_snapshot!(answer.normalized(&sb.normalizer()), @r#"
                hookSpecificOutput.additionalContext: "hookd: `hookctl decision <topic> <decision> --why <reason>`, `hookctl blocker <issue> [--status resolved]` and `hookctl next <action>` record decisions, blockers and next steps that survive context compaction."
                hookSpecificOutput.hookEventName: "SessionStart"
            "#);
        } else {
            assert_eq!(stdout(&out), "", "{event}: nothing to say yet");
        }
    }
    let report = daemon.engine().status(&StatusQuery::default());
    assert_eq!(report.sessions.len(), 1);
    let s = &report.sessions[0];
    assert_eq!(s.session_id, "90fcfea3-eaa5-4621-9cf6-71630aeda504");
    assert_eq!(s.last_event.as_deref(), Some("stop"));
    assert_eq!(s.events_seen, 3);
    assert_eq!(
        s.project_dir.as_deref(),
        Some(std::path::Path::new("/home/dev/proj"))
    );

    // `hookctl status` shows the same.
    let out = sb.hookctl(&["status"]);
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        hookd 0.1.0 (protocol 1) · pid [PID] · up [DURATION] · 3 events
        socket [SOCKET]
        1 session

        ● claude-code 90fcfea3  /home/dev/proj  model unknown
            context  unknown until the first reply
            not compacted yet
            last save never · last checkpoint never
            last event stop [DURATION] ago · 3 events
            transcript /home/dev/.claude/projects/-home-dev-proj/90fcfea3-eaa5-4621-9cf6-71630aeda504.jsonl
            note: transcript /home/dev/.claude/projects/-home-dev-proj/90fcfea3-eaa5-4621-9cf6-71630aeda504.jsonl is missing
    "#);
    let out = sb.hookctl(&["status", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["sessions"][0]["events_seen"], 3);
}

#[test]
fn the_records_hint_is_said_at_startup_only_and_turns_off() {
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options());
    let out = sb.hook("session-start", &fixture("SessionStart(source=startup)"));
    assert!(out.status.success(), "{}", stderr(&out));
    let answer = hookd_tests::HookAnswer::parse(&stdout(&out));
    insta::assert_snapshot!(answer.normalized(&sb.normalizer()), @r#"
        hookSpecificOutput.additionalContext: "hookd: `hookctl decision <topic> <decision> --why <reason>`, `hookctl blocker <issue> [--status resolved]` and `hookctl next <action>` record decisions, blockers and next steps that survive context compaction."
        hookSpecificOutput.hookEventName: "SessionStart"
    "#);
    let mut resumed = payload("SessionStart(source=startup)");
    resumed["source"] = "resume".into();
    let out = sb.hook("session-start", &serde_json::to_vec(&resumed).unwrap());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "", "a resumed session was told already");
    assert_eq!(daemon.events_handled(), 2, "both reached hookd");

    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options().set("resume.records_hint", false));
    let out = sb.hook("session-start", &fixture("SessionStart(source=startup)"));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "", "turned off");
    assert_eq!(daemon.events_handled(), 1, "it reached hookd");
}

#[test]
fn without_an_event_argument_the_payload_names_it() {
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options());
    let mut cmd = sb.command("hookctl");
    cmd.arg("hook");
    let out = hookd_tests::run_with_stdin(cmd, &fixture("PreCompact(trigger=auto)"));
    assert!(out.status.success(), "{}", stderr(&out));
    let report = daemon.engine().status(&StatusQuery::default());
    assert_eq!(
        report.sessions[0].last_event.as_deref(),
        Some("pre-compact")
    );
}

#[test]
fn whitespace_around_the_payload_is_no_problem() {
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options());
    let mut padded = b" \n\t".to_vec();
    padded.extend(fixture("PreCompact(trigger=auto)"));
    padded.extend(b"\r\n\n ");
    let mut cmd = sb.command("hookctl");
    cmd.arg("hook");
    let out = hookd_tests::run_with_stdin(cmd, &padded);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = daemon.engine().status(&StatusQuery::default());
    assert_eq!(
        report.sessions[0].last_event.as_deref(),
        Some("pre-compact")
    );
}

#[test]
fn unknown_events_are_recorded_not_refused() {
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options());
    let out = sb.hook("message-display", &fixture("MessageDisplay"));
    assert!(out.status.success());
    assert_eq!(stdout(&out), "");
    let report = daemon.engine().status(&StatusQuery::default());
    assert_eq!(
        report.sessions[0].last_event.as_deref(),
        Some("message-display")
    );
}

#[test]
fn wrong_field_types_do_not_disturb_the_agent() {
    let sb = Sandbox::new();
    let _daemon = TestDaemon::start(sb.daemon_options());
    let out = sb.hook(
        "post-tool-use",
        br#"{"session_id": 7, "cwd": false, "hook_event_name": []}"#,
    );
    // Exit 0, nothing on stdout, the problem named on stderr.
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        --- stderr
        hookd: field `hook_event_name` is an array, expected a string
        hookd: field `cwd` is a boolean, expected a string
        hookd: field `session_id` is a number, expected a string
    "#);
}

#[test]
fn hookctl_starts_the_daemon_when_none_runs() {
    let sb = Sandbox::new();
    let out = sb.hook("post-tool-use", &fixture("PostToolUse"));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(sb.socket().exists(), "autostarted");
    let status = sb.hookctl(&["status", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(
        json["sessions"][0]["last_event"], "post-tool-use",
        "the first event was not lost"
    );
    assert!(sb.hookd(&["stop"]).status.success());
}

#[test]
fn a_daemon_hookctl_starts_does_not_inherit_the_test_events_socket() {
    // The agent's environment, which a project can shape, names the socket:
    // the daemon a hook starts must not send there.
    let sb = Sandbox::new();
    let out = sb.hook("post-tool-use", &fixture("PostToolUse"));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(sb.hookctl(&["status", "--json"]).status.success());
    // `listening` goes out before the daemon serves: by now it would be here.
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(sb.events.count(hookd_tests::TestEvent::Listening, ""), 0);
    assert!(sb.hookd(&["stop"]).status.success());
}

#[test]
fn a_burst_of_hooks_starts_exactly_one_daemon() {
    let sb = Sandbox::new();
    let hooks: Vec<_> = (0..8)
        .map(|_| {
            let mut cmd = sb.command("hookctl");
            cmd.args(["hook", "post-tool-use"]);
            std::thread::spawn(move || hookd_tests::run_with_stdin(cmd, &fixture("PostToolUse")))
        })
        .collect();
    for h in hooks {
        let out = h.join().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let json: serde_json::Value =
        serde_json::from_slice(&sb.hookctl(&["status", "--json"]).stdout).unwrap();
    assert_eq!(
        json["daemon"]["events_handled"], 8,
        "every hook reached the one daemon"
    );
    let pid: i32 = json["daemon"]["pid"].as_i64().unwrap() as i32;
    let hookds = std::process::Command::new("pgrep")
        .args(["-f", &sb.socket().display().to_string()])
        .output()
        .unwrap();
    assert_eq!(
        stdout(&hookds).lines().count(),
        1,
        "one daemon: {}",
        stdout(&hookds)
    );
    assert!(sb.hookd(&["stop"]).status.success());
    assert!(wait_until(Duration::from_secs(5), || !process_alive(pid)));
}

#[test]
fn bad_stdin_is_refused_before_anything_is_sent() {
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options());
    let huge = vec![b' '; 17 * 1024 * 1024];
    let cases: [(&str, &[u8]); 6] = [
        ("empty", b""),
        ("not json", b"{not json"),
        ("array", b"[1, 2]"),
        ("string", b"\"hello\""),
        ("non-utf8", b"{\"a\": \"\xff\xfe\"}"),
        ("huge", &huge),
    ];
    // Each refused with exit 1, nothing on stdout and one line saying why.
    let mut said = String::new();
    for (what, input) in cases {
        let out = sb.hook("post-tool-use", input);
        said.push_str(&format!("# {what}\n{}", output_text(&out)));
    }
    insta::assert_snapshot!(sb.normalize(&said), @r#"
        # empty
        --- stderr
        hookctl: stdin is empty: expected the harness's hook JSON object; nothing was sent
        --- exit 1
        # not json
        --- stderr
        hookctl: the hook payload on stdin is not valid JSON: key must be a string at line 1 column 2; nothing was sent
        --- exit 1
        # array
        --- stderr
        hookctl: the hook payload on stdin is not a JSON object (it is an array); nothing was sent
        --- exit 1
        # string
        --- stderr
        hookctl: the hook payload on stdin is not a JSON object (it is a string); nothing was sent
        --- exit 1
        # non-utf8
        --- stderr
        hookctl: the hook payload on stdin is not UTF-8 (invalid byte at offset 7); nothing was sent
        --- exit 1
        # huge
        --- stderr
        hookctl: the hook payload on stdin is larger than 16 MiB; nothing was sent
        --- exit 1
    "#);
    assert_eq!(daemon.events_handled(), 0, "nothing was sent");
}

#[test]
fn usage_errors_never_exit_2() {
    let sb = Sandbox::new();
    for args in [
        &["hook", "--bogus"][..],
        &["no-such-command"],
        &["hook", "--harness", "vim"],
    ] {
        let out = sb.hookctl(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
    }
    assert_eq!(sb.hookctl(&["--help"]).status.code(), Some(0));
}

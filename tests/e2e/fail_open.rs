//! Scenario 4: hookd is absent and cannot be started (hookctl alone, no
//! hookd beside it or on PATH), or it is there and hung. Claude Code must
//! work as if there were no hooks: every hook exits 0 within its budget, no
//! hook error is shown, and nothing from hookd reaches the model.

use crate::hook_reported_success;
use hookd_tests::e2e::{Reply, Run, Scenario, WIRED_EVENTS};
use protocol::config::ClientConfig;
use std::collections::BTreeSet;
use std::path::Path;

/// The time budget hookctl gives an event.
fn budget_ms(event: &str) -> u64 {
    let c = ClientConfig::default();
    match event {
        "PreCompact" => c.pre_compact_timeout_ms,
        "SessionStart" => c.session_start_timeout_ms,
        _ => c.hook_timeout_ms,
    }
}

/// Every hook of the run exited 0 within its budget; no hook output or error
/// reached the stream.
fn assert_silent_and_quick(run: &Run) -> BTreeSet<String> {
    assert_silent_within(run, budget_ms)
}

/// As [`assert_silent_and_quick`], with `budget_ms` for each event.
fn assert_silent_within(run: &Run, budget_ms: fn(&str) -> u64) -> BTreeSet<String> {
    let hooks = run.hooks();
    assert!(!hooks.is_empty(), "run {}: no hook ran", run.index);
    for h in &hooks {
        assert_eq!(h.status, 0, "run {}: {h:?}", run.index);
        if let Some(ms) = h.duration_ms {
            assert!(
                ms <= budget_ms(&h.event),
                "run {}: {} took {ms} ms, over its {} ms budget",
                run.index,
                h.event,
                budget_ms(&h.event)
            );
        }
    }
    for response in run.stream("system", "hook_response") {
        assert_eq!(response["outcome"], "success", "{response}");
        assert_eq!(response["exit_code"], 0, "{response}");
        assert_eq!(response["output"], "", "{response}");
        assert_eq!(response["stderr"], "", "{response}");
    }
    assert!(
        !run.stderr.to_lowercase().contains("hook"),
        "run {}: {}",
        run.index,
        run.stderr
    );
    hooks.into_iter().map(|h| h.event).collect()
}

#[test]
fn without_hookd_claude_code_carries_on() {
    let Some(mut sc) = Scenario::builder("fail-open")
        .without_hookd()
        .replies(vec![
            Reply::bash("t1.tool", 150_000, "echo working > work.txt"),
            Reply::text("t1.text", 150_100, "Working."),
            Reply::text("t3.text", 5_000, "Still working."),
        ])
        .start()
    else {
        return;
    };
    let first = sc.start_session("TURN 1: start working");
    let sid = first.session_id.clone();
    let compact = sc.compact(&sid, "");
    let third = sc.resume(&sid, "TURN 3: keep working");

    let mut seen = BTreeSet::new();
    for run in [&first, &compact, &third] {
        seen.extend(assert_silent_and_quick(run));
    }
    // Every wired event ran.
    let expected: BTreeSet<String> = WIRED_EVENTS.iter().map(|e| e.to_string()).collect();
    assert!(
        seen.is_superset(&expected),
        "every wired hook ran: {seen:?}"
    );
    // Claude Code records Stop hooks' durations in the transcript too.
    let transcript = sc.transcript(&sid);
    let stops: Vec<&serde_json::Value> = transcript
        .iter()
        .filter(|e| e["subtype"] == "stop_hook_summary")
        .collect();
    assert_eq!(stops.len(), 2, "a Stop per prompt");
    for stop in stops {
        assert_eq!(stop["hookErrors"], serde_json::json!([]), "{stop}");
        for info in stop["hookInfos"].as_array().unwrap() {
            assert!(
                info["durationMs"].as_u64().unwrap() <= budget_ms("Stop"),
                "{info}"
            );
        }
    }
    // Errors, cancellations and blocks would be recorded as other hook_* attachments.
    for entry in &transcript {
        let kind = entry["attachment"]["type"].as_str().unwrap_or("");
        assert!(
            !kind.starts_with("hook_") || kind == "hook_success",
            "{kind} in the transcript: {entry}"
        );
    }

    let log = sc.log();
    assert_eq!(log.labels(), ["t1.tool", "t1.text", "summary", "t3.text"]);
    assert!(
        log.first_containing("[hookd:").is_none(),
        "nothing from hookd"
    );
    let after = log.answered_with("t3.text");
    for event in ["PreCompact", "PostCompact"] {
        assert!(hook_reported_success(after.text(), event), "{event}");
    }
    assert!(!sc.sandbox().socket().exists(), "no daemon was started");
    let status = sc.hookctl(&["status"]);
    assert!(!status.status.success(), "hookctl status finds no daemon");
}

/// A daemon frozen with SIGSTOP for as long as this lives: its socket still
/// accepts connections, and nothing answers them.
struct Frozen(i32);

impl Frozen {
    fn daemon_of(socket: &Path) -> Frozen {
        let pid = std::fs::read_to_string(socket.with_file_name("hookd.sock.pid"))
            .expect("the daemon's pid file")
            .trim()
            .parse()
            .expect("a pid");
        // SAFETY: signalling the daemon this scenario started.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
        Frozen(pid)
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        // SAFETY: as above; woken so that the scenario can stop it.
        unsafe { libc::kill(self.0, libc::SIGCONT) };
    }
}

/// A hung daemon greets no one: every hook, PreCompact and SessionStart
/// included, gives up within the ordinary hook budget.
fn greeting_budget_ms(_event: &str) -> u64 {
    ClientConfig::default().hook_timeout_ms + 500
}

#[test]
fn with_hookd_hung_claude_code_carries_on() {
    let Some(mut sc) = Scenario::builder("fail-hung")
        .env("HOOKD_CLIENT__AUTOSTART", "false")
        .replies(vec![
            Reply::bash("t1.tool", 150_000, "echo working > work.txt"),
            Reply::text("t1.text", 150_100, "Working."),
            Reply::text("t3.text", 5_000, "Still working."),
        ])
        .start()
    else {
        return;
    };
    let started = sc.hookctl(&["daemon", "start"]);
    assert!(started.status.success(), "{started:?}");
    let frozen = Frozen::daemon_of(&sc.sandbox().socket());
    let first = sc.start_session("TURN 1: start working");
    let sid = first.session_id.clone();
    let compact = sc.compact(&sid, "");
    let third = sc.resume(&sid, "TURN 3: keep working");
    drop(frozen);

    let mut seen = BTreeSet::new();
    for run in [&first, &compact, &third] {
        seen.extend(assert_silent_within(run, greeting_budget_ms));
    }
    let expected: BTreeSet<String> = WIRED_EVENTS.iter().map(|e| e.to_string()).collect();
    assert!(
        seen.is_superset(&expected),
        "every wired hook ran: {seen:?}"
    );
    let log = sc.log();
    assert_eq!(log.labels(), ["t1.tool", "t1.text", "summary", "t3.text"]);
    assert!(
        log.first_containing("[hookd").is_none(),
        "nothing from hookd"
    );
    assert!(
        !sc.project.join(".workflow/context_state.json").exists(),
        "a frozen daemon saved nothing"
    );
}

//! Untrusted input at the edges: figures in transcripts, hook payloads,
//! stdin, the socket directory, and what `hookctl save` reports.

use hookd_tests::{Sandbox, Scenario, TestDaemon, output_text, stderr, workflow_events};
use serde_json::{Value, json};

/// Where Claude Code compacts a 200k window.
const COMPACTS_AT: u64 = 167_000;

#[test]
fn invalid_usage_in_a_transcript_is_shown_and_fires_nothing() {
    let mut s = Scenario::build().start();
    let half = COMPACTS_AT / 2;
    s.transcript.reply(half);
    assert_eq!(s.hook("PostToolUse", "post-tool-use"), Value::Null);
    assert_eq!(s.status().context.map(|c| c.tokens_used), Some(half));

    type Edit = fn(&mut Value);
    let replies: [(&str, Edit); 6] = [
        ("above", |u| {
            // Wrapped, this sum was 4 tokens.
            u["input_tokens"] = json!(u64::MAX);
            u["cache_creation_input_tokens"] = json!(5);
        }),
        ("above", |u| u["input_tokens"] = json!(900_000_000)),
        ("input_tokens is not a whole number", |u| {
            u["input_tokens"] = json!(1e12)
        }),
        ("usage is an array", |u| {
            *u = json!([150_000, 10_000, 5_000])
        }),
        ("cache_read_input_tokens is a string", |u| {
            u["cache_read_input_tokens"] = json!("150000")
        }),
        ("input_tokens is negative", |u| {
            u["input_tokens"] = json!(-5)
        }),
    ];
    let mut said = String::new();
    for (why, edit) in replies {
        let mut entry = s.transcript.reply_entry(COMPACTS_AT);
        edit(&mut entry["message"]["usage"]);
        s.transcript.append(&entry);
        assert_eq!(
            s.hook("PostToolUse", "post-tool-use"),
            Value::Null,
            "{why}: nothing fires"
        );
        let status = s.status();
        let context = status.context.as_ref().expect("a context figure");
        let invalid = context.invalid.as_deref().unwrap_or_default();
        assert_eq!(context.tokens_used, half, "the figure stands: {why}");
        // What `status` shows of it, beside what `status --json` says.
        let text = String::from_utf8(s.sb.hookctl(&["status"]).stdout).unwrap();
        said += &format!("# {why}\njson: {invalid}\n");
        for line in text.lines().filter(|l| l.contains("invalid")) {
            said += &format!("text: {}\n", line.trim());
        }
    }
    insta::assert_snapshot!(said, @r#"
        # above
        json: invalid usage in transcript line at byte 1239: input_tokens is 18446744073709551615, above the 100000000 tokens no context holds
        text: context  the latest figure cannot be right (invalid usage in transcript line at byte 1239: input_tokens is 18446744073709551615, above the 100000000 tokens no context holds); showing the last good one
        # above
        json: invalid usage in transcript line at byte 2493: input_tokens is 900000000, above the 100000000 tokens no context holds
        text: context  the latest figure cannot be right (invalid usage in transcript line at byte 2493: input_tokens is 900000000, above the 100000000 tokens no context holds); showing the last good one
        # input_tokens is not a whole number
        json: invalid usage in transcript line at byte 3740: input_tokens is not a whole number (1000000000000.0)
        text: context  the latest figure cannot be right (invalid usage in transcript line at byte 3740: input_tokens is not a whole number (1000000000000.0)); showing the last good one
        # usage is an array
        json: invalid usage in transcript line at byte 4993: usage is an array
        text: context  the latest figure cannot be right (invalid usage in transcript line at byte 4993: usage is an array); showing the last good one
        # cache_read_input_tokens is a string
        json: invalid usage in transcript line at byte 5850: cache_read_input_tokens is a string
        text: context  the latest figure cannot be right (invalid usage in transcript line at byte 5850: cache_read_input_tokens is a string); showing the last good one
        # input_tokens is negative
        json: invalid usage in transcript line at byte 7094: input_tokens is negative (-5)
        text: context  the latest figure cannot be right (invalid usage in transcript line at byte 7094: input_tokens is negative (-5)); showing the last good one
    "#);

    // A compaction whose figures are not counts.
    let mut said = String::new();
    for (pre, post, why) in [
        (json!(-5), json!(3000), "preTokens is negative"),
        (json!(160_000), json!("3000"), "postTokens is a string"),
    ] {
        // One append: the watcher never sees a good boundary first.
        let mut entry = s.transcript.boundary_entry("auto", 160_000, 3_000);
        entry["compactMetadata"]["preTokens"] = pre;
        entry["compactMetadata"]["postTokens"] = post;
        s.transcript.append(&entry);
        assert_eq!(s.hook("PostToolUse", "post-tool-use"), Value::Null);
        let status = s.status();
        let invalid = status
            .context
            .as_ref()
            .and_then(|c| c.invalid.as_deref())
            .unwrap_or_default();
        said += &format!("# {why}\n{invalid}\n");
        assert_eq!(status.epoch, 1, "not a compaction: {status:#?}");
    }
    insta::assert_snapshot!(said, @r#"
        # preTokens is negative
        invalid usage in transcript line at byte 8334: preTokens is negative (-5)
        # postTokens is a string
        invalid usage in transcript line at byte 9525: postTokens is a string
    "#);

    assert!(
        workflow_events(&s.project)
            .iter()
            .all(|e| e["kind"] != "threshold"),
        "{:#?}",
        workflow_events(&s.project)
    );
    let status = s.status();
    assert!(status.fired.is_empty(), "{status:#?}");
    assert!(status.last_save.is_none(), "{status:#?}");
    assert!(!s.project.join(".workflow/context_state.json").exists());

    // A good figure again: valid, and the levels work.
    s.transcript.reply(COMPACTS_AT * 72 / 100);
    let out = s.hook("PostToolUse", "post-tool-use");
    insta::assert_snapshot!(s.answer_normalized(&out), @r#"
        hookSpecificOutput.additionalContext: "Context at 70% of the way to compaction. Read only what the task needs: search first, then open line ranges. [hookd: 72% of the way to compaction (120,240 of 167,000 tokens), 60% of the window]"
        hookSpecificOutput.hookEventName: "PostToolUse"
        systemMessage: "hookd: context 72% of the way to compaction (120,240 of 167,000 tokens), 60% of the window"
    "#);
    assert_eq!(s.status().context.and_then(|c| c.invalid), None);
}

/// `hookctl hook` with a stdin that stays open and silent: the budget still
/// holds, from the process start, whether or not the command line names the event.
#[test]
fn a_stdin_that_never_closes_costs_at_most_the_budget() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let sb = Sandbox::new();
    for args in [&["hook", "post-tool-use"][..], &["hook"]] {
        let mut child = sb
            .command("hookctl")
            .args(args)
            .env("HOOKD_CLIENT__HOOK_TIMEOUT_MS", "300")
            .env("HOOKD_CLIENT__AUTOSTART", "false")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Held open, never written.
        let _stdin = child.stdin.take();
        let started = Instant::now();
        let exited = hookd_tests::wait_until(Duration::from_secs(2), || {
            child.try_wait().unwrap().is_some()
        });
        if !exited {
            let _ = child.kill();
        }
        let out = child.wait_with_output().unwrap();
        assert!(
            exited,
            "{args:?} still running after {:?}",
            started.elapsed()
        );
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// Relative paths in a payload or the forwarded environment would resolve
/// against the daemon's own directory: they are refused, and said so.
#[test]
fn relative_paths_from_a_hook_never_reach_the_daemons_directory() {
    use std::process::Stdio;
    let sb = Sandbox::new();
    let daemon_cwd = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(daemon_cwd.path().join("claude")).unwrap();
    std::fs::write(daemon_cwd.path().join("claude/s1.jsonl"), b"").unwrap();
    let mut daemon = hookd_tests::ChildGuard::spawn(
        sb.command("hookd")
            .arg("run")
            .current_dir(daemon_cwd.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    sb.wait_for(hookd_tests::TestEvent::Listening, "");
    let mut payload = hookd_tests::payload("PreCompact(trigger=manual)");
    payload["session_id"] = json!("rel-session");
    payload["cwd"] = json!(".");
    payload["transcript_path"] = json!("claude/s1.jsonl");
    let mut cmd = sb.command("hookctl");
    cmd.env("CLAUDE_PROJECT_DIR", ".")
        .args(["hook", "pre-compact"]);
    let out = hookd_tests::run_with_stdin(cmd, &serde_json::to_vec(&payload).unwrap());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let status = sb.hookctl(&["status", "--json"]);
    let report: Value = serde_json::from_slice(&status.stdout).unwrap();
    let _ = sb.hookd(&["stop"]);
    let _ = daemon.wait();

    let left: Vec<_> = std::fs::read_dir(daemon_cwd.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["claude"], "the daemon's directory is untouched");
    let session = &report["sessions"][0];
    // The hook reached hookd: its session is there, without the bad paths.
    assert!(session.is_object(), "no session: {report:#}");
    assert_eq!(session["transcript_path"], Value::Null, "{session:#}");
    assert_ne!(session["project_dir"], json!("."), "{session:#}");
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        hookd saved the workflow state (.workflow/context_state.json). Keep in your summary: the request, what the person said must or must not be done, the task in progress, the next steps in order, the decisions and blockers.
        End it with one fenced code block, info string `hookd-state [TOKEN]`, of YAML, each key only if it applies: decisions [{topic, decision, reasoning}], rejected [{approach, why}], blockers [{issue, status: unresolved|workaround|resolved, notes}], constraints [text], lifted_constraints [text], active_task, progress_notes, next_actions [{action, target, priority, context_needed: [files]}].
        --- stderr
        hookd: field `cwd` is not an absolute path ("."); ignored
        hookd: environment variable `CLAUDE_PROJECT_DIR` is not an absolute path ("."); ignored
        hookd: field `transcript_path` is not an absolute path ("claude/s1.jsonl"); ignored
    "#);
}

/// `hookctl save` asks for a checkpoint unless told not to: outside a
/// repository it is an error that says what to do and creates nothing (no
/// `.workflow/` in the directory it ran in); with `--no-checkpoint` it saves
/// the state alone.
#[test]
fn hookctl_save_outside_a_repository_is_an_error_that_creates_nothing() {
    let sb = Sandbox::new();
    let project = sb.path().join("not-a-repo");
    std::fs::create_dir_all(&project).unwrap();
    let _daemon = TestDaemon::start(sb.daemon_options());
    let save = |args: &[&str]| {
        sb.command("hookctl")
            .current_dir(&project)
            .arg("save")
            .args(args)
            .output()
            .unwrap()
    };
    let mut said = String::new();
    for args in [&[][..], &["--json"]] {
        let out = save(args);
        said += &format!("# hookctl {}\n", [&["save"][..], args].concat().join(" "));
        said += &output_text(&out);
        assert!(!project.join(".workflow").exists(), "{args:?}");
    }
    // An error on stderr alone, the same with --json: no second story.
    insta::assert_snapshot!(sb.normalize(&said), @r#"
        # hookctl save
        --- stderr
        hookctl: [TEMP]/not-a-repo is not in a git repository: nothing was saved.
        Run `hookctl save` inside your project's repository (or pass --project DIR); `hookctl save --no-checkpoint` saves the state without git.
        --- exit 1
        # hookctl save --json
        --- stderr
        hookctl: [TEMP]/not-a-repo is not in a git repository: nothing was saved.
        Run `hookctl save` inside your project's repository (or pass --project DIR); `hookctl save --no-checkpoint` saves the state without git.
        --- exit 1
    "#);

    // hookd refuses such a save too, whichever client asks.
    let report = hookd::pipeline::save(
        &hookd::pipeline::SaveRequest {
            session: None,
            project: project.clone(),
            working_dir: None,
            transcript: None,
            context: None,
            trigger: hookd::state::SaveTrigger::Manual,
            checkpoint: true,
        },
        &protocol::config::Config::default(),
        &hookd::resources::Resources::default(),
    );
    assert!(report.state_file.is_none(), "{report:?}");
    insta::assert_snapshot!(sb.normalize(&report.problems.join("\n")), @"[TEMP]/not-a-repo is not in a git repository: nothing was saved");
    assert!(!project.join(".workflow").exists());

    // Not asked for: the state alone, and nothing failed.
    let out = save(&["--no-checkpoint"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(project.join(".workflow/context_state.json").exists());
}

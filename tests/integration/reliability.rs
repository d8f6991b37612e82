//! Faults, bad input, concurrency, access and limits. The fast versions run
//! in CI; the environment variables below make the long release-check runs:
//!
//! - `HOOKD_CRASH_KILLS` (default 200): daemon kills during pipelines;
//! - `PROPTEST_CASES`: cases per property test (the unit tests' fuzzing).

use hookd_tests::{
    GitRepo, Sandbox, TestDaemon, Transcript, assert_valid, hook_json, output_text, payload,
    run_with_stdin, saved_state, state_schema, stderr, stdout, wait_until, workflow_events,
};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use hookd_tests::SONNET;

use hookd_tests::file_mode as mode;

/// Every JSON file of `.workflow/` parses, the state is schema-valid, and
/// every line of the logs is whole.
fn assert_workflow_whole(project: &Path) {
    let wf = project.join(".workflow");
    if let Ok(text) = std::fs::read_to_string(wf.join("context_state.json")) {
        let state: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("context_state.json torn: {e}"));
        assert_valid(&state_schema(), &state);
    }
    if let Ok(text) = std::fs::read_to_string(wf.join("modified_files.json")) {
        serde_json::from_str::<Value>(&text)
            .unwrap_or_else(|e| panic!("modified_files.json torn: {e}"));
    }
    if let Ok(dir) = std::fs::read_dir(wf.join("history")) {
        for entry in dir
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        {
            let text = std::fs::read_to_string(entry.path()).unwrap();
            let state: Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{} torn: {e}", entry.path().display()));
            assert_valid(&state_schema(), &state);
        }
    }
    for log in ["events.jsonl", "records.jsonl"] {
        let text = std::fs::read_to_string(wf.join(log)).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            serde_json::from_str::<Value>(line)
                .unwrap_or_else(|e| panic!("{log} line {}: {e}: {line}", n + 1));
        }
    }
}

#[test]
fn kill_9_during_pipelines_never_leaves_a_torn_file() {
    let kills: usize = std::env::var("HOOKD_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let sb = Sandbox::new();
    let repo = GitRepo::init(&sb.path().join("proj"));
    for i in 0..30 {
        repo.write(&format!("src/file_{i}.rs"), &format!("// file {i}\n"));
    }
    repo.commit_all("base");
    let mut t = Transcript::create(sb.path().join("claude/k.jsonl"), "kill-session", SONNET);
    t.tool_use("tw", "TodoWrite", json!({"todos": [{"content": "Survive crashes", "status": "in_progress", "activeForm": "Surviving"}]}), 90_000);
    let input = t.payload("PreCompact(trigger=auto)", &repo.dir);
    let pid_file = sb.socket().with_file_name("hookd.sock.pid");
    let mut survived = 0;
    let mut landed = 0;
    let started = Instant::now();
    for i in 0..kills {
        // The user keeps working: every pipeline has something new to checkpoint.
        repo.write(
            &format!("src/file_{}.rs", i % 30),
            &format!("// edit {i}\n"),
        );
        let before = repo.fingerprint();
        let mut cmd = sb.command("hookctl");
        // Widen the windows between write and rename, commit and ref.
        cmd.env("HOOKD_FAULT_DELAY_MS", "15")
            .args(["hook", "pre-compact"]);
        let input = input.clone();
        let hook = std::thread::spawn(move || run_with_stdin(cmd, &input));
        // Kill somewhere inside the pipeline (or before, or after: all must be safe).
        let wait = Duration::from_millis((i as u64 * 7919) % 60);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !pid_file.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(wait);
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|p| p.trim().parse::<i32>().ok())
        {
            // SAFETY: signalling the daemon this test started.
            if unsafe { libc::kill(pid, libc::SIGKILL) } == 0 {
                survived += 1;
            }
            assert!(
                wait_until(Duration::from_secs(10), || !hookd_tests::process_alive(pid)),
                "pid {pid} survived kill -9"
            );
        }
        let out = hook.join().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "a killed daemon still fails open: {}",
            stderr(&out)
        );
        assert_eq!(
            repo.fingerprint(),
            before,
            "iteration {i}: the user's repository changed"
        );
        assert_workflow_whole(&repo.dir);
        if let Some(sha) = repo.checkpoint_ref() {
            assert_eq!(repo.git(&["cat-file", "-t", &sha]).trim(), "commit");
            repo.git(&["ls-tree", "-r", &sha]);
            landed += 1;
        }
    }
    // The daemon that comes back knows the session.
    let out = sb.hook("post-tool-use", &t.payload("PostToolUse", &repo.dir));
    assert_eq!(out.status.code(), Some(0));
    let report: Value = serde_json::from_slice(&sb.hookctl(&["status", "--json"]).stdout).unwrap();
    let ids: Vec<&str> = report["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec!["kill-session"]);
    assert!(report["sessions"][0]["events_seen"].as_u64().unwrap() >= 1);
    // Any checkpoint still reachable is a whole commit; git agrees the repository is sound.
    repo.git(&["fsck", "--no-dangling", "--no-progress"]);
    assert!(
        survived > kills / 2,
        "most iterations really killed a daemon ({survived} of {kills})"
    );
    // A file may be missing after one kill, but the pipelines did write.
    assert!(landed > 0, "no iteration left a checkpoint ref");
    assert!(repo.dir.join(".workflow/context_state.json").is_file());
    eprintln!(
        "kill -9: {survived} daemons killed in {kills} pipelines, {landed} iterations with a valid checkpoint ref, {:?}",
        started.elapsed()
    );
    let _ = sb.hookd(&["stop"]);
}

#[test]
fn twenty_sessions_compacting_at_once() {
    let sb = Sandbox::new();
    let repo = GitRepo::init(&sb.path().join("proj"));
    repo.write("shared.txt", "base\n");
    repo.commit_all("base");
    let _daemon = TestDaemon::start(sb.daemon_options());
    let sessions: Vec<Transcript> = (0..20)
        .map(|i| {
            let mut t = Transcript::create(
                sb.path().join(format!("claude/{i}.jsonl")),
                &format!("session-{i:02}"),
                SONNET,
            );
            t.reply(50_000 + i);
            t
        })
        .collect();
    let hooks: Vec<_> = sessions
        .iter()
        .enumerate()
        .map(|(i, t)| {
            repo.write(
                &format!("work/session-{i:02}.txt"),
                &format!("work of session {i}\n"),
            );
            let mut cmd = sb.command("hookctl");
            cmd.args(["hook", "pre-compact"]);
            let input = t.payload("PreCompact(trigger=auto)", &repo.dir);
            std::thread::spawn(move || run_with_stdin(cmd, &input))
        })
        .collect();
    for h in hooks {
        let out = h.join().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    // Every checkpoint a pipeline reported is in the chain: none lost.
    let chain = repo.git(&["rev-list", "refs/hookd/checkpoints/main"]);
    let reported: Vec<String> = workflow_events(&repo.dir)
        .iter()
        .filter(|e| e["step"] == "checkpoint" && e["ok"] == true)
        .map(|e| e["detail"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(reported.len(), 20, "every pipeline checkpointed");
    for sha in &reported {
        assert!(
            chain.contains(sha.as_str()),
            "{sha} is missing from the chain"
        );
    }
    // Each session's capture is kept whole; the project's file is the latest complete one.
    let history: Vec<Value> = std::fs::read_dir(repo.dir.join(".workflow/history"))
        .unwrap()
        .flatten()
        .map(|e| serde_json::from_str(&std::fs::read_to_string(e.path()).unwrap()).unwrap())
        .collect();
    let mut owners: Vec<String> = history
        .iter()
        .map(|h| h["harness_session_id"].as_str().unwrap().to_owned())
        .collect();

    owners.sort();
    owners.dedup();
    assert_eq!(owners.len(), 20, "one capture per session");
    assert_workflow_whole(&repo.dir);
    let latest: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.dir.join(".workflow/context_state.json")).unwrap(),
    )
    .unwrap();
    assert!(
        history.contains(&latest),
        "the project's state is one of the captures, whole"
    );
    let tip = repo.git(&["rev-parse", "refs/hookd/checkpoints/main^{tree}"]);
    assert_eq!(
        tip.trim(),
        repo.expected_tree(),
        "the last checkpoint has every session's work"
    );
}

#[test]
fn concurrent_ref_updates_lose_no_commit() {
    use hookd::git::{self, CheckpointMeta, CommitOutcome, SnapshotOptions};
    let sb = Sandbox::new();
    let repo = GitRepo::init(&sb.path().join("proj"));
    repo.write("a.txt", "a\n");
    repo.commit_all("base");
    let opts = SnapshotOptions {
        include_untracked: true,
        max_file_bytes: 1 << 20,
    };
    // Different trees, committed from many threads at once: the CAS retries must keep them all.
    let snapshots: Vec<_> = (0..12)
        .map(|i| {
            repo.write("a.txt", &format!("version {i}\n"));
            hookd_tests::snapshot(&repo.dir, &opts).unwrap()
        })
        .collect();
    let threads: Vec<_> = snapshots
        .into_iter()
        .map(|snap| {
            let dir = repo.dir.clone();
            std::thread::spawn(move || {
                let meta = CheckpointMeta {
                    session: None,
                    trigger: "race".into(),
                    tokens: None,
                };
                git::commit_checkpoint(&dir, &snap, &meta, "refs/hookd/checkpoints").unwrap()
            })
        })
        .collect();
    let created: Vec<String> = threads
        .into_iter()
        .filter_map(|t| match t.join().unwrap() {
            CommitOutcome::Created { sha, .. } => Some(sha),
            CommitOutcome::Unchanged { .. } => None,
        })
        .collect();
    let chain = repo.git(&["rev-list", "--first-parent", "refs/hookd/checkpoints/main"]);
    for sha in &created {
        assert!(chain.contains(sha.as_str()), "{sha} lost in the race");
    }
    assert!(
        created.len() >= 11,
        "distinct trees make distinct commits ({})",
        created.len()
    );
}

#[test]
fn another_user_is_refused_as_root() {
    hookd_tests::assert_root("to act as a second user (setpriv)");
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options());
    // Open the door wide on purpose: only the peer check is left to stop a stranger.
    std::fs::set_permissions(sb.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(
        sb.socket().parent().unwrap(),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::set_permissions(&daemon.socket, std::fs::Permissions::from_mode(0o777)).unwrap();
    let hookctl = hookd_tests::bin("hookctl");
    let copy = std::env::temp_dir().join(format!("hookctl-nobody-{}", std::process::id()));
    std::fs::copy(&hookctl, &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&copy)
        .args(["status"])
        .env_clear()
        .env("HOOKD_SOCKET", &daemon.socket)
        .env("HOME", "/nonexistent")
        .current_dir("/")
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&copy);
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        --- stderr
        hookctl: hookd answered: connection refused: uid 65534 is not the daemon's user (uid 0)
        --- exit 1
    "#);
    assert_eq!(daemon.events_handled(), 0);
}

#[test]
fn root_refuses_a_socket_in_a_shared_directory_as_root() {
    hookd_tests::assert_root("the rule is for root");
    let sb = Sandbox::new();
    let shared = sb.path().join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let socket = shared.join("hookd.sock");
    let out = sb
        .command("hookd")
        .arg("run")
        .arg("--socket")
        .arg(&socket)
        .output()
        .unwrap();
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        --- stderr
        hookd: refusing to run as root with the socket in [TEMP]/shared, which other users can write to; choose a private directory, or pass --allow-shared-dir if you mean it
        --- exit 1
    "#);
    let mut child = hookd_tests::ChildGuard::spawn(
        sb.command("hookd")
            .args(["run", "--allow-shared-dir", "--socket"])
            .arg(&socket)
            .stderr(Stdio::null()),
    );
    assert!(
        wait_until(Duration::from_secs(10), || socket.exists()),
        "told to, it runs"
    );
    // SAFETY: our child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    child.wait().unwrap();
}

#[test]
fn secrets_stay_out_of_the_log_and_state_is_private() {
    let sb = Sandbox::new();
    let repo = GitRepo::init(&sb.path().join("proj"));
    repo.write("a.txt", "a\n");
    let t = Transcript::create(sb.path().join("claude/s.jsonl"), "secret-session", SONNET);
    let mut p = payload("PostToolUse");
    p["tool_response"]["stdout"] = Value::from("AWS_SECRET_ACCESS_KEY=hunter2-very-secret");
    p["session_id"] = Value::from("secret-session");
    p["transcript_path"] = Value::from(t.path.display().to_string());
    p["cwd"] = Value::from(repo.dir.display().to_string());
    let out = sb.hook("post-tool-use", &serde_json::to_vec(&p).unwrap());
    assert_eq!(out.status.code(), Some(0));
    let out = sb
        .command("hookctl")
        .current_dir(&repo.dir)
        .arg("save")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(sb.hookd(&["stop"]).status.success());
    let logs: String = std::fs::read_dir(sb.state_dir().join("logs"))
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert!(!logs.is_empty());
    assert!(
        !logs.contains("hunter2"),
        "a payload reached the log at the default level"
    );
    for file in [
        sb.state_dir().join("sessions.json"),
        repo.dir.join(".workflow/context_state.json"),
        repo.dir.join(".workflow/events.jsonl"),
        repo.dir.join(".workflow/resume_prompt.md"),
    ] {
        assert_eq!(
            mode(&file) & 0o077,
            0,
            "{} is readable by others",
            file.display()
        );
    }
}

#[test]
fn oversized_frames_are_refused_without_allocating() {
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options());
    let mut conn = std::os::unix::net::UnixStream::connect(&daemon.socket).unwrap();
    conn.write_all(&u32::MAX.to_be_bytes()).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = Vec::new();
    let read = conn.read_to_end(&mut buf);
    assert!(
        matches!(read, Ok(0)) || read.is_err(),
        "the daemon hangs up: {read:?} {buf:?}"
    );
    // And keeps serving everyone else.
    let out = sb.hook(
        "post-tool-use",
        &serde_json::to_vec(&payload("PostToolUse")).unwrap(),
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(daemon.events_handled(), 1);
}

#[test]
fn the_connection_limit_queues_rather_than_fails() {
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options().set("daemon.max_connections", 1));
    let stalled = std::os::unix::net::UnixStream::connect(&daemon.socket).unwrap();
    let input = serde_json::to_vec(&payload("PostToolUse")).unwrap();
    let mut cmd = sb.command("hookctl");
    cmd.args(["hook", "post-tool-use", "--timeout-ms", "5000"]);
    let waiting = std::thread::spawn(move || run_with_stdin(cmd, &input));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(daemon.events_handled(), 0, "the only slot is taken");
    drop(stalled);
    let out = waiting.join().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(daemon.events_handled(), 1, "served once the slot freed");
}

#[test]
fn the_oldest_idle_sessions_are_evicted_beyond_the_limit() {
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options().set("sessions.max_sessions", 5));
    for i in 0..8 {
        let mut p = payload("PostToolUse");
        p["session_id"] = Value::from(format!("s{i}"));
        assert_eq!(
            sb.hook("post-tool-use", &serde_json::to_vec(&p).unwrap())
                .status
                .code(),
            Some(0)
        );
        std::thread::sleep(Duration::from_millis(3));
    }
    let mut ids: Vec<String> = daemon
        .engine()
        .status(&Default::default())
        .sessions
        .into_iter()
        .map(|s| s.session_id)
        .collect();
    ids.sort();
    assert_eq!(ids, vec!["s3", "s4", "s5", "s6", "s7"]);
}

#[test]
fn transcripts_that_are_not_files_never_hang_a_hook() {
    let sb = Sandbox::new();
    let _daemon = TestDaemon::start(sb.daemon_options());
    let dir_transcript = sb.path().join("a-directory");
    std::fs::create_dir_all(&dir_transcript).unwrap();
    let fifo = sb.path().join("a-fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let t = Transcript::create(sb.path().join("claude/gone.jsonl"), "gone-session", SONNET);
    for (i, path) in [
        dir_transcript.as_path(),
        fifo.as_path(),
        Path::new("/nonexistent/t.jsonl"),
    ]
    .iter()
    .enumerate()
    {
        let mut p = payload("PostToolUse");
        p["session_id"] = Value::from(format!("odd-{i}"));
        p["transcript_path"] = Value::from(path.display().to_string());
        let started = Instant::now();
        let out = sb.hook("post-tool-use", &serde_json::to_vec(&p).unwrap());
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(stdout(&out), "");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{} took {:?}",
            path.display(),
            started.elapsed()
        );
    }
    // Deleted while watched: the next hook notes it, nothing breaks.
    let project = sb.path().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    assert_eq!(
        sb.hook("post-tool-use", &t.payload("PostToolUse", &project))
            .status
            .code(),
        Some(0)
    );
    std::fs::remove_file(&t.path).unwrap();
    assert_eq!(
        sb.hook("post-tool-use", &t.payload("PostToolUse", &project))
            .status
            .code(),
        Some(0)
    );
    let report: Value = serde_json::from_slice(
        &sb.hookctl(&["status", "--json", "--session", "gone"])
            .stdout,
    )
    .unwrap();
    insta::assert_snapshot!(sb.normalize(&notes(&report)), @"transcript [TEMP]/claude/gone.jsonl is missing");
    let report: Value = serde_json::from_slice(
        &sb.hookctl(&["status", "--json", "--session", "odd-0"])
            .stdout,
    )
    .unwrap();
    insta::assert_snapshot!(sb.normalize(&notes(&report)), @"transcript [TEMP]/a-directory is not a regular file");
}

/// The notes of a `status --json` report's first session, one a line.
fn notes(report: &Value) -> String {
    report["sessions"][0]["notes"]
        .as_array()
        .unwrap_or_else(|| panic!("no notes: {report:#}"))
        .iter()
        .map(|n| format!("{}\n", n.as_str().unwrap_or_default()))
        .collect()
}

#[test]
fn hostile_stdin_is_refused_quickly() {
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options());
    let nested = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let deep_object = format!("{{\"a\":{}1{}}}", "[".repeat(5_000), "]".repeat(5_000));
    let hundred_mb = vec![b'{'; 100 * 1024 * 1024];
    let mut said = String::new();
    for (what, input) in [
        ("deeply nested array", nested.as_bytes()),
        ("deeply nested object", deep_object.as_bytes()),
        ("100 MB", &hundred_mb[..]),
    ] {
        let started = Instant::now();
        let out = sb.hook("post-tool-use", input);
        said += &format!("# {what}\n{}", output_text(&out));
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{what} took {:?}",
            started.elapsed()
        );
    }
    // One line each, on stderr, and exit 1 (never 2, which blocks the agent).
    insta::assert_snapshot!(sb.normalize(&said), @r#"
        # deeply nested array
        --- stderr
        hookctl: the hook payload on stdin is not a JSON object (it is an array); nothing was sent
        --- exit 1
        # deeply nested object
        --- stderr
        hookctl: hookd refused the hook payload: the hook payload is not JSON: recursion limit exceeded at line 1 column 132
        --- exit 1
        # 100 MB
        --- stderr
        hookctl: the hook payload on stdin is larger than 16 MiB; nothing was sent
        --- exit 1
    "#);
    assert_eq!(daemon.events_handled(), 0);
}

#[test]
fn wrong_types_for_every_field_never_break_the_agent() {
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options());
    let mut sent = 0;
    for name in [
        "PostToolUse",
        "SessionStart(source=compact)",
        "PreCompact(trigger=auto)",
        "PostCompact(trigger=auto)",
        "Stop",
    ] {
        let base = payload(name);
        let fields: Vec<String> = base.as_object().unwrap().keys().cloned().collect();
        for field in fields {
            for wrong in [
                json!(42),
                json!(true),
                json!(["x"]),
                json!({"k": "v"}),
                Value::Null,
                json!(""),
            ] {
                let mut p = base.clone();
                p[&field] = wrong.clone();
                let out = sb.hook("post-tool-use", &serde_json::to_vec(&p).unwrap());
                sent += 1;
                assert_eq!(
                    out.status.code(),
                    Some(0),
                    "{name}.{field} = {wrong}: {}",
                    stderr(&out)
                );
                let text = stdout(&out);
                assert!(
                    text.is_empty() || hook_json(&out).is_object(),
                    "{name}.{field} = {wrong}: {text}"
                );
            }
        }
    }
    assert_eq!(daemon.events_handled(), sent);
    eprintln!("{sent} payloads with a wrong-typed field");
}

#[test]
fn a_200_mb_untracked_file_is_skipped_and_named() {
    let sb = Sandbox::new();
    let repo = GitRepo::init(&sb.path().join("proj"));
    repo.write("a.txt", "a\n");
    repo.commit_all("base");
    let big = repo.dir.join("dump.bin");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(200 * 1024 * 1024)
        .unwrap();
    let _daemon = TestDaemon::start(sb.daemon_options());
    let out = sb.hookctl_in(&repo.dir, &["save", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let state = saved_state(&repo.dir);
    assert_eq!(
        state["checkpoint"]["skipped"],
        json!(["dump.bin (209715200 bytes)"])
    );
    let sha = state["checkpoint"]["sha"].as_str().unwrap();
    assert!(
        !repo
            .git(&["ls-tree", "-r", "--name-only", sha])
            .contains("dump.bin")
    );
    // The checkpoint's message names what it left out.
    let message = repo.git(&["log", "-1", "--format=%B", sha]);
    insta::assert_snapshot!(sb.normalize(&message), @r#"
        WIP: Pre-compaction checkpoint

        The working tree as it was when hookd saved the agent's state. Your branch,
        index and working tree were not touched.

        Hookd-Trigger: manual
        Hookd-Base: [SHA]
        Hookd-Branch: main
        Hookd-Skipped: dump.bin (209715200 bytes, over the size limit)
    "#);
}

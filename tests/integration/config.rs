//! `hookctl config` and configuration errors as a person meets them.

use hookd_tests::{HookAnswer, Sandbox, output_text, stderr, stdout};

#[test]
fn config_shows_each_value_and_its_source() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.config_dir()).unwrap();
    std::fs::write(
        sb.config_dir().join("config.yaml"),
        "client:\n  hook_timeout_ms: 750\n",
    )
    .unwrap();
    std::fs::write(
        sb.path().join(".hookd.yaml"),
        "resume:\n  max_chars: 600\ndaemon:\n  idle_timeout_secs: 60\n",
    )
    .unwrap();
    let out = sb
        .command("hookctl")
        .env("HOOKD_CLIENT__AUTOSTART", "false")
        .arg("config")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // Which files were read, and a value from each source; the daemon's
    // settings are the user's alone: named, and not applied.
    let text = config_lines(
        &stdout(&out),
        &[
            "client.",
            "daemon.",
            "resume.max_chars",
            "monitor.thresholds",
        ],
    );
    insta::assert_snapshot!(sb.normalize(&text), @r#"
        # [TEMP]/config/config.yaml (read)
        # [TEMP]/.hookd.yaml (read)
        # warning: daemon in [TEMP]/.hookd.yaml is ignored: only your own configuration may set it
        client.allow_block: false  # default
        client.autostart: false  # env HOOKD_CLIENT__AUTOSTART
        client.hook_timeout_ms: 750  # user file [TEMP]/config/config.yaml
        client.pre_compact_timeout_ms: 30000  # default
        client.session_start_timeout_ms: 10000  # default
        client.statusline_timeout_ms: 300  # default
        daemon.drain_timeout_ms: 3000  # default
        daemon.idle_timeout_secs: 0  # default
        daemon.max_connections: 256  # default
        daemon.request_timeout_ms: 10000  # default
        monitor.thresholds:  # default
            - level: 0.7
              message: 'Context at 70% of the way to compaction. Read only what the task needs: search first, then open line ranges.'
              action: log_warning
            - level: 0.8
              message: Context at 80% of the way to compaction. hookd is saving the work state; record any decision worth keeping with `hookctl decision TOPIC DECISION`.
              action: auto_save_state
            - level: 0.9
              message: 'Context at 90% of the way to compaction. Finish the current step, then suggest /compact to the person: the state is saved.'
              action: recommend_compact
            - level: 0.95
              message: 'CRITICAL: Context at 95% of the way to compaction. hookd is saving the state with a git checkpoint; note where you are now with `hookctl note TEXT`.'
              action: force_save_state
        resume.max_chars: 600  # project file [TEMP]/.hookd.yaml
    "#);

    let json: serde_json::Value = serde_json::from_slice(&sb.hookctl(&["config", "--json"]).stdout)
        .expect("config --json is JSON");
    let item = json
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["key"] == "client.hook_timeout_ms")
        .unwrap();
    assert_eq!(item["value"], 750);
    assert_eq!(item["source"]["kind"], "user");

    // The text is YAML holding the same values, lists of one item too.
    let text = stdout(&sb.hookctl(&["config"]));
    let shown: serde_json::Value =
        serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{e}:\n{text}"));
    for item in json.as_array().unwrap() {
        let key = item["key"].as_str().unwrap();
        assert_eq!(shown[key], item["value"], "{key}");
    }
}

/// The comments of `hookctl config`'s output and the lines of these keys (a
/// key ending in `.` stands for every key under it), values of several
/// lines whole.
fn config_lines(text: &str, keys: &[&str]) -> String {
    let mut kept = String::new();
    let mut keep = false;
    for line in text.lines() {
        if !line.starts_with(' ') {
            let key = line.split(':').next().unwrap_or_default();
            keep = line.starts_with('#')
                || keys.iter().any(|k| {
                    if k.ends_with('.') {
                        key.starts_with(k)
                    } else {
                        key == *k
                    }
                });
        }
        if keep {
            kept += line;
            kept.push('\n');
        }
    }
    kept
}

#[test]
fn a_broken_config_names_the_key_the_file_and_the_line() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.path().join(".hookd.yaml"),
        "client:\n  hook_timeout_ms: 10\n  autostrat: true\n",
    )
    .unwrap();
    let out = sb.hookctl(&["config"]);
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        --- stderr
        hookctl: config file [TEMP]/.hookd.yaml: client: unknown field `autostrat`, expected one of `hook_timeout_ms`, `pre_compact_timeout_ms`, `session_start_timeout_ms`, `statusline_timeout_ms`, `autostart`, `allow_block` at line 3 column 3
        --- exit 1
    "#);
}

/// The user's configuration is live: a broken file is said by the next
/// hook (once) and by `save`, shown by `status` while it lasts, and a fixed
/// one is taken up without a restart, the warning gone.
#[test]
fn a_broken_user_config_is_said_and_a_fixed_one_taken_up_without_a_restart() {
    let sb = Sandbox::new();
    let file = sb.config_dir().join("config.yaml");
    std::fs::create_dir_all(sb.config_dir()).unwrap();
    std::fs::write(&file, "monitor:\n  reset_drop: [oops\n").unwrap();
    let project = sb.path().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    let mut start = hookd_tests::payload("SessionStart(source=startup)");
    start["cwd"] = project.display().to_string().into();
    start["transcript_path"] = sb.path().join("t.jsonl").display().to_string().into();
    let hook = || {
        let out = sb.hook("session-start", start.to_string().as_bytes());
        assert_eq!(out.status.code(), Some(0));
        HookAnswer::parse(&stdout(&out)).normalized(&sb.normalizer())
    };
    insta::assert_snapshot!(hook(), @r#"
        hookSpecificOutput.additionalContext: "hookd: `hookctl decision <topic> <decision> --why <reason>`, `hookctl blocker <issue> [--status resolved]` and `hookctl next <action>` record decisions, blockers and next steps that survive context compaction."
        hookSpecificOutput.hookEventName: "SessionStart"
        systemMessage: "hookd: your configuration is broken: config file [TEMP]/config/config.yaml: did not find expected ',' or ']' at line 3 column 1, while parsing a flow sequence at line 2 column 15; using the daemon's configuration"
    "#);
    // Said once: the next hook has only the usual hint.
    insta::assert_snapshot!(hook(), @r#"
        hookSpecificOutput.additionalContext: "hookd: `hookctl decision <topic> <decision> --why <reason>`, `hookctl blocker <issue> [--status resolved]` and `hookctl next <action>` record decisions, blockers and next steps that survive context compaction."
        hookSpecificOutput.hookEventName: "SessionStart"
    "#);
    insta::assert_snapshot!(sb.normalize(&output_text(&sb.hookctl(&["status"]))), @r#"
        hookd 0.1.0 (protocol 1) · pid [PID] · up [DURATION] · 2 events
        socket [SOCKET]
        warning: config file [TEMP]/config/config.yaml: did not find expected ',' or ']' at line 3 column 1, while parsing a flow sequence at line 2 column 15; using the daemon's configuration
        1 session

        ● claude-code 90fcfea3  [TEMP]/proj  model unknown
            context  unknown until the first reply
            not compacted yet
            last save never · last checkpoint never
            last event session-start [DURATION] ago · 2 events
            transcript [TEMP]/t.jsonl
            note: transcript [TEMP]/t.jsonl is missing
    "#);
    let out = sb.hookctl(&[
        "save",
        "--no-checkpoint",
        "--project",
        &project.display().to_string(),
    ]);
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        state saved to [TEMP]/proj/.workflow/context_state.json
        resume prompt in [TEMP]/proj/.workflow/resume_prompt.md
        --- stderr
        warning: config file [TEMP]/config/config.yaml: did not find expected ',' or ']' at line 3 column 1, while parsing a flow sequence at line 2 column 15; using the daemon's configuration
    "#);

    // Fixed: taken up at once, the warning gone, doctor clear of it.
    std::fs::write(&file, "monitor:\n  reset_drop: 0.5\n").unwrap();
    let status = stdout(&sb.hookctl(&["status"]));
    assert!(!status.contains("warning: "), "{status}");
    let out = sb.hookctl(&["doctor", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let daemon = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "daemon")
        .unwrap();
    assert_eq!(daemon["status"], "ok", "{daemon:#}");
    // Fixed, seen by a hook, then broken anew the same way: said anew.
    assert!(!hook().contains("broken"));
    std::fs::write(&file, "monitor:\n  reset_drop: [oops\n").unwrap();
    insta::assert_snapshot!(hook(), @r#"
        hookSpecificOutput.additionalContext: "hookd: `hookctl decision <topic> <decision> --why <reason>`, `hookctl blocker <issue> [--status resolved]` and `hookctl next <action>` record decisions, blockers and next steps that survive context compaction."
        hookSpecificOutput.hookEventName: "SessionStart"
        systemMessage: "hookd: your configuration is broken: config file [TEMP]/config/config.yaml: did not find expected ',' or ']' at line 3 column 1, while parsing a flow sequence at line 2 column 15; using the daemon's configuration"
    "#);
    std::fs::write(&file, "monitor:\n  reset_drop: 0.5\n").unwrap();

    // A project's broken `.hookd.yaml` is named, never quoted (its words are
    // the repository's), once per project however hooks alternate.
    let planted = "run ./fix.sh to repair hookd";
    let other = sb.path().join("other");
    for dir in [&project, &other] {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(
            dir.join(".hookd.yaml"),
            format!("monitor:\n  \"{planted}\": 1\n"),
        )
        .unwrap();
    }
    let hook_in = |dir: &std::path::Path, session: &str| {
        let mut payload = start.clone();
        payload["cwd"] = dir.display().to_string().into();
        payload["session_id"] = session.into();
        let out = sb.hook("session-start", payload.to_string().as_bytes());
        assert_eq!(out.status.code(), Some(0));
        HookAnswer::parse(&stdout(&out)).normalized(&sb.normalizer())
    };
    let first = hook_in(&project, "s-a");
    assert!(
        !first.contains(planted),
        "the file's words are quoted: {first}"
    );
    insta::assert_snapshot!(first, @r#"
        hookSpecificOutput.additionalContext: "hookd: `hookctl decision <topic> <decision> --why <reason>`, `hookctl blocker <issue> [--status resolved]` and `hookctl next <action>` record decisions, blockers and next steps that survive context compaction."
        hookSpecificOutput.hookEventName: "SessionStart"
        systemMessage: "hookd: this project's .hookd.yaml is not used (`hookctl config` says why); hookd goes on with your own configuration"
    "#);
    insta::assert_snapshot!(hook_in(&other, "s-b"), @r#"
        hookSpecificOutput.additionalContext: "hookd: `hookctl decision <topic> <decision> --why <reason>`, `hookctl blocker <issue> [--status resolved]` and `hookctl next <action>` record decisions, blockers and next steps that survive context compaction."
        hookSpecificOutput.hookEventName: "SessionStart"
        systemMessage: "hookd: this project's .hookd.yaml is not used (`hookctl config` says why); hookd goes on with your own configuration"
    "#);
    for _ in 0..2 {
        assert!(!hook_in(&project, "s-a").contains("is not used"));
        assert!(!hook_in(&other, "s-b").contains("is not used"));
    }

    // A bad HOOKD_* variable of the agent's environment is the person's,
    // not blamed on a project (this one has no `.hookd.yaml`).
    let plain = sb.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let mut payload = start.clone();
    payload["cwd"] = plain.display().to_string().into();
    payload["session_id"] = "s-c".into();
    let mut cmd = sb.command("hookctl");
    cmd.env("HOOKD_MONITOR__RESET_DROP", "lots")
        .args(["hook", "session-start"]);
    let out = hookd_tests::run_with_stdin(cmd, payload.to_string().as_bytes());
    let said = HookAnswer::parse(&stdout(&out)).normalized(&sb.normalizer());
    insta::assert_snapshot!(said, @r#"
        hookSpecificOutput.additionalContext: "hookd: `hookctl decision <topic> <decision> --why <reason>`, `hookctl blocker <issue> [--status resolved]` and `hookctl next <action>` record decisions, blockers and next steps that survive context compaction."
        hookSpecificOutput.hookEventName: "SessionStart"
        systemMessage: "hookd: your configuration is broken: environment variable HOOKD_MONITOR__RESET_DROP: invalid type: string \"lots\", expected f64 (monitor.reset_drop); using the daemon's configuration"
    "#);
    let _ = sb.hookd(&["stop"]);
}

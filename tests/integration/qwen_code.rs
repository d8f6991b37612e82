//! Qwen Code through the real hookctl and a real daemon, with the payloads
//! and chat file of `tests/fixtures/qwen-code/` (written from the measured
//! client): the figure is the chat file's, the levels are measured against
//! Qwen Code's own compaction point, a compaction (PreCompact →
//! PostCompact → SessionStart(compact)) saves the state and a checkpoint
//! and puts the resume prompt in once, and `hookctl install qwen-code`
//! wires and unwires its settings file without touching the rest.

use crate::harness_setup::{doctor_check, parser_project, placed};
use hookd_tests::{
    Sandbox, TestDaemon, hook_json, run_with_stdin, stderr, stdout, workflow_events_of,
};
use protocol::wire::{SessionStatus, StatusQuery};
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/qwen-code")
}

/// A Qwen Code session as it lays out its files: the chat file under
/// `home/.qwen/projects/<slug>/chats/`, filled from the fixture a record
/// at a time.
struct QwenSession {
    chat: PathBuf,
    project: PathBuf,
    records: Vec<Value>,
    written: usize,
}

impl QwenSession {
    fn new(sb: &Sandbox, project: &Path) -> QwenSession {
        let slug = project.display().to_string().replace('/', "-");
        let chats = sb.home().join(".qwen/projects").join(slug).join("chats");
        std::fs::create_dir_all(&chats).unwrap();
        let chat = chats.join("8d0f6c1e-qwen-session.jsonl");
        let text = std::fs::read_to_string(fixtures().join("chat.jsonl")).unwrap();
        let records = text
            .lines()
            .map(|l| {
                placed(
                    serde_json::from_str(l).unwrap(),
                    &[("$SESSION_FILE", &chat), ("$CWD", project)],
                )
            })
            .collect();
        QwenSession {
            chat,
            project: project.to_path_buf(),
            records,
            written: 0,
        }
    }

    /// Writes the fixture's records up to `uuid`, that one included.
    fn write_through(&mut self, uuid: &str) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.chat)
            .unwrap();
        while self.written < self.records.len() {
            let record = &self.records[self.written];
            writeln!(f, "{record}").unwrap();
            self.written += 1;
            if record["uuid"] == uuid {
                return;
            }
        }
        panic!("no record {uuid} in the fixture");
    }

    /// Appends `record` to the chat file now, as Qwen Code does.
    fn append(&self, record: &Value) {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.chat)
            .unwrap();
        writeln!(f, "{record}").unwrap();
    }

    /// The fixture's payload `name`, for this session.
    fn payload(&self, name: &str) -> Value {
        let all: Value = serde_json::from_str(
            &std::fs::read_to_string(fixtures().join("hook_payloads.json")).unwrap(),
        )
        .unwrap();
        let payload = all
            .get(name)
            .unwrap_or_else(|| panic!("no payload {name}"))
            .clone();
        placed(
            payload,
            &[("$SESSION_FILE", &self.chat), ("$CWD", &self.project)],
        )
    }

    /// Runs `hookctl hook --harness qwen-code <event>` as the installed
    /// hook does, with the fixture's payload `name`; its JSON answer.
    fn hook(&self, sb: &Sandbox, name: &str, event: &str) -> Value {
        let mut cmd = sb.command("hookctl");
        cmd.args(["hook", "--harness", "qwen-code", event])
            .current_dir(&self.project);
        let out = run_with_stdin(cmd, &serde_json::to_vec(&self.payload(name)).unwrap());
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{name}");
        hook_json(&out)
    }
}

fn session(daemon: &TestDaemon) -> SessionStatus {
    let report = daemon.engine().status(&StatusQuery::default());
    assert_eq!(report.sessions.len(), 1, "{:?}", report.sessions);
    report.sessions[0].clone()
}

/// The figure is the latest reply's `promptTokenCount`, the point Qwen
/// Code's min(0.85 × 200,000, 200,000 − 20,000 − 13,000) = 167,000, and a
/// session that stays below the first level saves nothing: no pipeline
/// runs without a compaction or a level.
#[test]
fn the_figure_is_the_chat_files_and_the_point_qwen_codes() {
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options());
    let (project, _repo) = parser_project(&sb);
    let mut qwen = QwenSession::new(&sb, &project);
    qwen.records[1]["usageMetadata"]["promptTokenCount"] = json!(52_000);
    qwen.write_through("u1");
    // A new run hears how to record decisions; nothing else is said.
    let start = qwen.hook(&sb, "SessionStart(source=startup)", "session-start");
    assert!(!start.to_string().contains("[hookd-resume "), "{start:#}");
    assert_eq!(
        qwen.hook(&sb, "UserPromptSubmit", "user-prompt-submit"),
        Value::Null
    );
    qwen.write_through("t1");
    assert_eq!(
        qwen.hook(&sb, "PostToolBatch", "post-tool-batch"),
        Value::Null
    );
    let s = session(&daemon);
    assert_eq!(s.harness, "qwen-code");
    assert_eq!(s.model.as_deref(), Some("mock-model"));
    assert_eq!(s.project_dir.as_deref(), Some(project.as_path()));
    let c = s.context.expect("a figure from the chat file");
    assert_eq!(
        (c.tokens_used, c.tokens_max, c.window_tokens),
        (52_000, 167_000, 200_000)
    );
    assert!(
        c.basis
            .contains("min(0.85 × 200000, 200000 − 20000 summary reserve − 13000 buffer)"),
        "{}",
        c.basis
    );
    assert_eq!(qwen.hook(&sb, "Stop", "stop"), Value::Null);
    assert!(workflow_events_of(&project, "threshold").is_empty());
    assert!(workflow_events_of(&project, "pipeline").is_empty());
    assert!(workflow_events_of(&project, "compaction").is_empty());

    // `hookctl status` names the harness.
    let out = sb.hookctl_in(&project, &["status"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("qwen-code"), "{}", stdout(&out));
}

/// A window set in Qwen Code's settings moves the point as Qwen Code
/// moves it; a value it would not take is passed over and said.
#[test]
fn the_window_and_threshold_in_qwen_codes_settings_move_the_point() {
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options());
    let (project, _repo) = parser_project(&sb);
    let mut qwen = QwenSession::new(&sb, &project);
    qwen.records[1]["usageMetadata"]["promptTokenCount"] = json!(52_000);
    let user = sb.home().join(".qwen/settings.json");
    std::fs::write(
        &user,
        r#"{"security": {"auth": {"selectedType": "openai"}}, "model": {"generationConfig": {"contextWindowSize": 131072}}}"#,
    )
    .unwrap();
    qwen.write_through("t1");
    qwen.hook(&sb, "PostToolBatch", "post-tool-batch");
    let c = session(&daemon).context.unwrap();
    // min(0.85 × 131,072 = 111,411, 131,072 − 33,000 = 98,072).
    assert_eq!(
        (c.tokens_max, c.window_tokens),
        (98_072, 131_072),
        "{}",
        c.basis
    );
    assert!(c.basis.contains(&user.display().to_string()), "{}", c.basis);

    std::fs::create_dir_all(project.join(".qwen")).unwrap();
    std::fs::write(
        project.join(".qwen/settings.json"),
        r#"{"context": {"autoCompactThreshold": 0.5}, "model": {"generationConfig": {"contextWindowSize": "big"}}}"#,
    )
    .unwrap();
    qwen.hook(&sb, "PostToolBatch", "post-tool-batch");
    let c = session(&daemon).context.unwrap();
    assert_eq!(
        (c.tokens_max, c.window_tokens),
        (65_536, 131_072),
        "{}",
        c.basis
    );
    assert!(
        c.basis.contains("contextWindowSize \"big\"") && c.basis.contains("ignored"),
        "{}",
        c.basis
    );
}

/// The levels are measured against 167,000; a real compaction saves the
/// state and a checkpoint at PreCompact, takes the summary from
/// PostCompact, puts the resume prompt in with the prompt after
/// SessionStart(compact), and finds it arrived when the chat file holds it:
/// it is not put in again.
#[test]
fn a_compaction_saves_the_state_and_resumes_once() {
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options());
    let (project, repo) = parser_project(&sb);
    let mut qwen = QwenSession::new(&sb, &project);
    qwen.write_through("u1");
    qwen.hook(&sb, "SessionStart(source=startup)", "session-start");
    qwen.hook(&sb, "UserPromptSubmit", "user-prompt-submit");

    // 117,000 of 167,000: the 70% level, and only that one.
    qwen.write_through("t1");
    let answer = qwen.hook(&sb, "PostToolBatch", "post-tool-batch");
    assert!(
        answer["systemMessage"]
            .as_str()
            .is_some_and(|m| m.contains("70% of the way to compaction")),
        "{answer:#}"
    );
    let threshold = workflow_events_of(&project, "threshold");
    assert_eq!(threshold.len(), 1, "{threshold:#?}");
    assert_eq!(threshold[0]["harness"], "qwen-code");
    assert_eq!(
        (
            threshold[0]["level"].as_f64(),
            threshold[0]["tokens_used"].as_u64(),
            threshold[0]["tokens_max"].as_u64()
        ),
        (Some(0.7), Some(117_000), Some(167_000))
    );
    assert!(workflow_events_of(&project, "pipeline").is_empty());

    // Past the point; Qwen Code compacts right after the tool result.
    qwen.write_through("t2");
    qwen.hook(&sb, "PostToolBatch", "post-tool-batch");
    let pre = qwen.hook(&sb, "PreCompact(trigger=auto)", "pre-compact");
    // The summarizer's instructions go where Qwen Code reads them.
    let instructions = pre["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default();
    assert!(instructions.contains("hookd-state "), "{pre:#}");
    let captures = |trigger: &str| {
        workflow_events_of(&project, "pipeline")
            .iter()
            .filter(|e| {
                e["step"] == "capture"
                    && e["trigger"]
                        .as_str()
                        .is_some_and(|t| t.starts_with(trigger))
            })
            .count()
    };
    assert_eq!(captures("pre-compact"), 1, "one save at PreCompact");
    let state = project.join(".workflow/context_state.json");
    assert!(state.is_file(), "the state is saved before the compaction");
    assert!(!repo.hookd_refs().is_empty(), "and a checkpoint made");

    qwen.write_through("c1");
    qwen.hook(&sb, "PostCompact(trigger=auto)", "post-compact");
    let post = workflow_events_of(&project, "post_compact");
    assert_eq!(post.len(), 1);
    assert_eq!(
        post[0]["compact_summary"],
        qwen.payload("PostCompact(trigger=auto)")["compact_summary"]
    );

    // Not at SessionStart(compact): its words go into system text the chat
    // file does not keep, and are lost when the turn ends there.
    let resumed = qwen.hook(&sb, "SessionStart(source=compact)", "session-start");
    assert!(
        !resumed.to_string().contains("[hookd-resume "),
        "{resumed:#}"
    );
    assert!(workflow_events_of(&project, "resume").is_empty());
    let compaction = workflow_events_of(&project, "compaction");
    assert_eq!(compaction.len(), 1, "{compaction:#?}");
    assert_eq!(
        (
            compaction[0]["pre_tokens"].as_u64(),
            compaction[0]["post_tokens"].as_u64()
        ),
        (Some(180_000), Some(3_000))
    );
    assert_eq!(compaction[0]["announced"], true);
    let s = session(&daemon);
    assert_eq!(s.epoch, 2);
    assert_eq!(
        s.context.unwrap().tokens_used,
        3_000,
        "Qwen Code's own count"
    );

    // The turn goes on: Qwen Code fires an empty prompt for the
    // continuation, and the resume prompt goes in with it, recorded in the
    // chat file with the prompt.
    let continued = qwen.hook(&sb, "UserPromptSubmit", "user-prompt-submit");
    let prompt = continued["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_else(|| panic!("no resume prompt: {continued:#}"))
        .to_owned();
    assert!(prompt.contains("[hookd-resume "), "{prompt}");
    assert!(prompt.contains("parser"), "{prompt}");
    let resume = workflow_events_of(&project, "resume");
    assert_eq!(resume.len(), 1);
    assert_eq!(resume[0]["injected"], true);
    qwen.append(
        &json!({"type": "user", "uuid": "u-resume", "message": {"parts": [{"text": prompt}]}}),
    );
    // The reply after it; the next prompt finds the prompt arrived, and it
    // is not put in again.
    qwen.write_through("a3");
    assert_eq!(qwen.hook(&sb, "Stop", "stop"), Value::Null);
    let next = qwen.hook(&sb, "UserPromptSubmit", "user-prompt-submit");
    assert!(
        !next.to_string().contains("[hookd-resume "),
        "the prompt went in once: {next:#}"
    );
    let arrival = workflow_events_of(&project, "resume_arrival");
    assert_eq!(arrival.len(), 1, "{arrival:#?}");
    assert_eq!(arrival[0]["arrived"], true);
    assert_eq!(arrival[0]["action"], "arrived");
    qwen.hook(&sb, "PostToolBatch", "post-tool-batch");
    assert_eq!(workflow_events_of(&project, "resume").len(), 1);
    assert_eq!(workflow_events_of(&project, "resume_arrival").len(), 1);
    assert_eq!(captures("pre-compact"), 1);
    assert_eq!(session(&daemon).context.unwrap().tokens_used, 3_100);
}

/// With hookd absent and not startable, a Qwen Code hook exits 0 with no
/// output: Qwen Code goes on as without hookd.
#[test]
fn without_hookd_a_qwen_code_hook_says_nothing_and_exits_0() {
    let sb = Sandbox::new();
    let (project, _repo) = parser_project(&sb);
    let qwen = QwenSession::new(&sb, &project);
    for (name, event) in [
        ("SessionStart(source=compact)", "session-start"),
        ("PreCompact(trigger=auto)", "pre-compact"),
        ("PostToolBatch", "post-tool-batch"),
    ] {
        let mut cmd = sb.command("hookctl");
        cmd.env("HOOKD_BIN", "/nonexistent/hookd")
            .args(["hook", "--harness", "qwen-code", event]);
        let out = run_with_stdin(cmd, &serde_json::to_vec(&qwen.payload(name)).unwrap());
        assert_eq!(out.status.code(), Some(0), "{name}");
        assert_eq!(stdout(&out), "", "{name}");
        assert_eq!(stderr(&out), "", "{name}");
    }
}

/// `hookctl install qwen-code` adds its hooks (Claude Code's layout,
/// timeouts in seconds) to `~/.qwen/settings.json` and keeps everything
/// else; a second install changes nothing; uninstall gives the file back as
/// it was. Doctor says when Qwen Code skips every hook.
#[test]
fn install_and_uninstall_qwen_code_keep_the_users_settings() {
    let sb = Sandbox::new();
    let file = sb.home().join(".qwen/settings.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let original = r#"{
  "security": {
    "auth": {
      "selectedType": "openai"
    }
  },
  "model": {
    "generationConfig": {
      "contextWindowSize": 131072
    }
  },
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "run_shell_command",
        "hooks": [
          {
            "type": "command",
            "command": "~/bin/guard.sh",
            "timeout": 5
          }
        ]
      }
    ]
  }
}
"#;
    std::fs::write(&file, original).unwrap();
    let out = sb.hookctl(&["install", "qwen-code"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let hookctl = hookd_tests::bin("hookctl").display().to_string();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v["security"]["auth"]["selectedType"], "openai");
    assert_eq!(v["model"]["generationConfig"]["contextWindowSize"], 131072);
    assert_eq!(
        v["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        "~/bin/guard.sh"
    );
    for (event, arg, timeout) in [
        ("SessionStart", "session-start", 30),
        ("UserPromptSubmit", "user-prompt-submit", 10),
        ("PostToolBatch", "post-tool-batch", 10),
        ("PreCompact", "pre-compact", 60),
        ("PostCompact", "post-compact", 10),
        ("Stop", "stop", 10),
        ("SessionEnd", "session-end", 10),
    ] {
        let handler = &v["hooks"][event][0]["hooks"][0];
        assert_eq!(
            handler["command"],
            format!("{hookctl} hook --harness qwen-code {arg}"),
            "{event}"
        );
        assert_eq!(handler["type"], "command");
        assert_eq!(handler["timeout"], timeout, "{event}");
    }
    let installed = std::fs::read_to_string(&file).unwrap();
    let out = sb.hookctl(&["install", "qwen-code"]);
    assert!(stdout(&out).contains("already wired"), "{}", stdout(&out));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), installed);

    // What Qwen Code skips, said plainly.
    let mut off: Value = serde_json::from_str(&installed).unwrap();
    off["disableAllHooks"] = json!(true);
    std::fs::write(&file, serde_json::to_string_pretty(&off).unwrap()).unwrap();
    let check = doctor_check(&sb, sb.path(), "qwen-code");
    assert_eq!(check["status"], "warn", "{check:#}");
    assert!(
        check["detail"]
            .as_str()
            .unwrap()
            .contains("disableAllHooks is true"),
        "{check:#}"
    );
    std::fs::write(&file, &installed).unwrap();
    let check = doctor_check(&sb, sb.path(), "qwen-code");
    assert_eq!(check["status"], "ok", "{check:#}");
    // A project's settings turn them off for that project.
    let here = sb.path().join("here");
    std::fs::create_dir_all(here.join(".qwen")).unwrap();
    std::fs::write(
        here.join(".qwen/settings.json"),
        r#"{"disableAllHooks": true}"#,
    )
    .unwrap();
    let check = doctor_check(&sb, &here, "qwen-code");
    assert_eq!(check["status"], "warn", "{check:#}");
    assert!(
        check["detail"]
            .as_str()
            .unwrap()
            .contains(&here.join(".qwen/settings.json").display().to_string()),
        "{check:#}"
    );

    let out = sb.hookctl(&["uninstall", "qwen-code"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original);
    let backups: Vec<_> = std::fs::read_dir(file.parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".hookd-backup-"))
        .collect();
    assert!(
        !backups.is_empty(),
        "the file was backed up before it was rewritten"
    );

    // The shipped fragment is what a project install writes.
    let proj = sb.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let out = sb.hookctl(&[
        "install",
        "qwen-code",
        "--project",
        &proj.display().to_string(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(proj.join(".qwen/settings.json")).unwrap())
            .unwrap();
    let shipped: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../hooks/qwen-code/settings.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(written, shipped);
}

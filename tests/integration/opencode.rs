//! OpenCode through the real hookctl and a real daemon, with what hookd's
//! plugin sent and logged in a run of the real OpenCode 1.18.33
//! (`tests/fixtures/opencode/`): the figure is OpenCode's own count, the
//! levels are measured against its compaction point, a compaction saves
//! the state and a checkpoint and puts the resume prompt in once; the
//! plugin itself runs under Node against the daemon; `hookctl install
//! opencode` writes the plugin and leaves OpenCode nothing to download.

use hookd_tests::{
    GitRepo, Sandbox, TestDaemon, bin, hook_json, run_with_stdin, stderr, stdout,
    workflow_events_of,
};
use protocol::wire::{SessionStatus, StatusQuery};
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/opencode")
}

const SESSION: &str = "ses_de8a547d0ffe6v4fOQBlcqn3IT";

/// An OpenCode session as hookd's plugin keeps it: its log in hookd's
/// state folder, filled from the fixture a line at a time.
struct OpenCodeSession {
    log: PathBuf,
    project: PathBuf,
    lines: Vec<Value>,
    written: usize,
}

impl OpenCodeSession {
    fn new(sb: &Sandbox, project: &Path) -> OpenCodeSession {
        let dir = sb.state_dir().join("opencode");
        std::fs::create_dir_all(&dir).unwrap();
        let text = std::fs::read_to_string(fixtures().join("log.jsonl")).unwrap();
        OpenCodeSession {
            log: dir.join(format!("{SESSION}.jsonl")),
            project: project.to_path_buf(),
            lines: text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect(),
            written: 0,
        }
    }

    /// Writes the fixture's lines up to the `nth` one of `kind`, that one
    /// included.
    fn write_through(&mut self, kind: &str, nth: usize) {
        let mut seen = self.lines[..self.written]
            .iter()
            .filter(|l| l["type"] == kind)
            .count();
        while self.written < self.lines.len() {
            let line = self.lines[self.written].clone();
            self.append(&line);
            self.written += 1;
            if line["type"] == kind {
                seen += 1;
                if seen == nth {
                    return;
                }
            }
        }
        panic!("no {kind} line number {nth} in the fixture");
    }

    fn append(&self, line: &Value) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        writeln!(f, "{line}").unwrap();
    }

    /// Runs `hookctl hook --harness opencode <event>` as the plugin does,
    /// with its payload; the JSON answer.
    fn hook(&self, sb: &Sandbox, event: &str, more: Value) -> Value {
        let mut payload = json!({
            "v": 1,
            "session_id": SESSION,
            "cwd": self.project,
            "transcript_path": self.log,
        });
        for (k, v) in more.as_object().unwrap() {
            payload[k] = v.clone();
        }
        let mut cmd = sb.command("hookctl");
        cmd.args(["hook", "--harness", "opencode", event])
            .current_dir(&self.project);
        let out = run_with_stdin(cmd, &serde_json::to_vec(&payload).unwrap());
        assert_eq!(out.status.code(), Some(0), "{event}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{event}");
        hook_json(&out)
    }

    /// What the plugin logs when it hands hookd's text to OpenCode.
    fn gave(&self, text: &str, place: &str) {
        self.append(&json!({"v": 1, "type": "context", "where": place, "text": text}));
    }
}

fn session(daemon: &TestDaemon) -> SessionStatus {
    let report = daemon.engine().status(&StatusQuery::default());
    assert_eq!(report.sessions.len(), 1, "{:?}", report.sessions);
    report.sessions[0].clone()
}

fn project(sb: &Sandbox) -> (PathBuf, GitRepo) {
    let project = sb.path().join("proj");
    let repo = GitRepo::init(&project);
    repo.write("README.md", "hi\n");
    repo.commit_all("start");
    (project, repo)
}

/// The figure is OpenCode's own count of the latest reply (its `total`),
/// the point OpenCode's rule for the model's limits it logged (10,000
/// window − 1,000 max output = 9,000), the levels fire against it, and
/// nothing is saved while no level and no compaction comes.
#[test]
fn the_figure_is_opencodes_own_and_the_point_its_rule() {
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options());
    let (project, _repo) = project(&sb);
    let mut oc = OpenCodeSession::new(&sb, &project);
    oc.write_through("prompt", 1);
    let start = oc.hook(&sb, "session-start", json!({"source": "startup"}));
    assert!(!start.to_string().contains("[hookd-resume "), "{start:#}");
    oc.hook(
        &sb,
        "user-prompt-submit",
        json!({"prompt": "please do the work"}),
    );
    oc.write_through("usage", 1);
    assert_eq!(
        oc.hook(&sb, "post-tool-use", json!({"tool_name": "bash"})),
        Value::Null
    );
    let s = session(&daemon);
    assert_eq!(s.harness, "opencode");
    assert_eq!(s.model.as_deref(), Some("mock/mock-model"));
    let c = s.context.expect("a figure from the log");
    assert_eq!(
        (c.tokens_used, c.tokens_max, c.window_tokens),
        (3_030, 9_000, 10_000)
    );
    assert!(
        c.basis
            .contains("limit.context 10000 − 1000 max output = 9000"),
        "{}",
        c.basis
    );
    assert!(workflow_events_of(&project, "threshold").is_empty());
    assert!(workflow_events_of(&project, "pipeline").is_empty());

    // 9,580 of 9,000: every level up to the last, said with the next call.
    oc.write_through("usage", 2);
    let answer = oc.hook(&sb, "post-tool-use", json!({"tool_name": "bash"}));
    assert!(
        answer["message"].as_str().is_some_and(|m| !m.is_empty())
            || answer["context"].as_str().is_some_and(|m| !m.is_empty()),
        "{answer:#}"
    );
    let threshold = workflow_events_of(&project, "threshold");
    assert!(!threshold.is_empty());
    assert_eq!(threshold.last().unwrap()["tokens_used"], 9_580);
    assert_eq!(threshold.last().unwrap()["tokens_max"], 9_000);
    assert_eq!(oc.hook(&sb, "stop", json!({})), Value::Null);

    let out = sb.hookctl_in(&project, &["status"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("opencode"), "{}", stdout(&out));
}

/// A compaction: `experimental.session.compacting` (PreCompact) saves the
/// state and a checkpoint and answers with the words for the compaction
/// request; the log's `compacted` line is the boundary, the summary's size
/// the figure after it; SessionStart(compact) at the first request after
/// it gives the resume prompt, and the tool call that request led to shows
/// it arrived: it is not put in again.
#[test]
fn a_compaction_saves_the_state_and_resumes_once() {
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options());
    let (project, repo) = project(&sb);
    let mut oc = OpenCodeSession::new(&sb, &project);
    oc.write_through("prompt", 1);
    oc.hook(&sb, "session-start", json!({"source": "startup"}));
    oc.write_through("tool", 2);
    oc.hook(&sb, "post-tool-use", json!({"tool_name": "bash"}));
    oc.write_through("usage", 2);
    let pre = oc.hook(&sb, "pre-compact", json!({"trigger": "auto"}));
    let words = pre["context"].as_str().unwrap_or_default();
    assert!(words.contains("hookd-state "), "{pre:#}");
    let captures = workflow_events_of(&project, "pipeline")
        .iter()
        .filter(|e| {
            e["step"] == "capture"
                && e["trigger"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("pre-compact"))
        })
        .count();
    assert_eq!(captures, 1, "one save at the compaction");
    assert!(project.join(".workflow/context_state.json").is_file());
    assert!(!repo.hookd_refs().is_empty(), "and a checkpoint made");

    oc.write_through("compacted", 1);
    let resumed = oc.hook(&sb, "session-start", json!({"source": "compact"}));
    let prompt = resumed["context"]
        .as_str()
        .unwrap_or_else(|| panic!("no resume prompt: {resumed:#}"))
        .to_owned();
    assert!(prompt.contains("[hookd-resume "), "{prompt}");
    let compaction = workflow_events_of(&project, "compaction");
    assert_eq!(compaction.len(), 1, "{compaction:#?}");
    assert_eq!(
        (
            compaction[0]["pre_tokens"].as_u64(),
            compaction[0]["post_tokens"].as_u64(),
            compaction[0]["announced"].as_bool()
        ),
        (Some(9_580), Some(30), Some(true))
    );
    let s = session(&daemon);
    assert_eq!(s.epoch, 2);
    assert_eq!(s.context.unwrap().tokens_used, 30, "the summary's size");
    assert_eq!(workflow_events_of(&project, "resume").len(), 1);

    // The plugin puts it into that request's system text, and the model
    // answers with a tool call.
    oc.gave(&prompt, "system");
    oc.write_through("tool", 3);
    let next = oc.hook(&sb, "post-tool-use", json!({"tool_name": "bash"}));
    assert!(!next.to_string().contains("[hookd-resume "), "{next:#}");
    let arrival = workflow_events_of(&project, "resume_arrival");
    assert_eq!(arrival.len(), 1, "{arrival:#?}");
    assert_eq!(arrival[0]["arrived"], true);
    oc.write_through("usage", 5);
    oc.hook(&sb, "stop", json!({}));
    assert_eq!(workflow_events_of(&project, "resume").len(), 1);
    assert_eq!(session(&daemon).context.unwrap().tokens_used, 2_630);
}

/// Without a `context` line after the compaction (the plugin could not
/// hand the prompt over), the next call finds it did not arrive.
#[test]
fn a_resume_prompt_the_log_does_not_show_did_not_arrive() {
    let sb = Sandbox::new();
    let _daemon = TestDaemon::start(sb.daemon_options());
    let (project, _repo) = project(&sb);
    let mut oc = OpenCodeSession::new(&sb, &project);
    oc.write_through("usage", 2);
    oc.hook(&sb, "pre-compact", json!({"trigger": "auto"}));
    oc.write_through("compacted", 1);
    oc.hook(&sb, "session-start", json!({"source": "compact"}));
    oc.write_through("tool", 3);
    oc.hook(&sb, "post-tool-use", json!({"tool_name": "bash"}));
    let arrival = workflow_events_of(&project, "resume_arrival");
    assert_eq!(arrival.len(), 1, "{arrival:#?}");
    assert_eq!(arrival[0]["arrived"], false);
}

/// The plugin itself, under Node, fed the hook calls the real OpenCode
/// made, against this daemon (`hooks/opencode/hookd.test.mjs`): no hookd,
/// a hung hookctl, and the resume prompt put in once.
#[test]
fn the_plugin_under_node_against_the_daemon() {
    let sb = Sandbox::new();
    let _daemon = TestDaemon::start(sb.daemon_options());
    let (project, _repo) = project(&sb);
    let test = Path::new(env!("CARGO_MANIFEST_DIR")).join("../hooks/opencode/hookd.test.mjs");
    let out = std::process::Command::new("node")
        .arg("--test")
        .arg(&test)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", sb.home())
        .env("HOOKD_SOCKET", sb.socket())
        .env("HOOKD_STATE_DIR", sb.state_dir())
        .env("HOOKD_CONFIG_DIR", sb.config_dir())
        .env("HOOKD_DATA_DIR", sb.path().join("data"))
        .env("HOOKD_BIN", bin("hookd"))
        .env("HOOKD_HOOKCTL", bin("hookctl"))
        .env("OPENCODE_TEST_CWD", &project)
        .output()
        .expect("node is on PATH");
    let report = stdout(&out);
    assert!(out.status.success(), "{report}\n{}", stderr(&out));
    assert!(report.contains("# pass 3"), "{report}");
    let arrival = workflow_events_of(&project, "resume_arrival");
    assert_eq!(arrival.len(), 1, "{arrival:#?}");
    assert_eq!(arrival[0]["arrived"], true);
}

/// With hookd absent and not startable, every call the plugin makes exits
/// 0 with no output.
#[test]
fn without_hookd_an_opencode_call_says_nothing_and_exits_0() {
    let sb = Sandbox::new();
    let (project, _repo) = project(&sb);
    let oc = OpenCodeSession::new(&sb, &project);
    for (event, more) in [
        ("session-start", json!({"source": "compact"})),
        ("pre-compact", json!({"trigger": "auto"})),
        ("post-tool-use", json!({"tool_name": "bash"})),
    ] {
        let mut payload =
            json!({"v": 1, "session_id": SESSION, "cwd": project, "transcript_path": oc.log});
        for (k, v) in more.as_object().unwrap() {
            payload[k] = v.clone();
        }
        let mut cmd = sb.command("hookctl");
        cmd.env("HOOKD_BIN", "/nonexistent/hookd")
            .args(["hook", "--harness", "opencode", event]);
        let out = run_with_stdin(cmd, &serde_json::to_vec(&payload).unwrap());
        assert_eq!(out.status.code(), Some(0), "{event}");
        assert_eq!(stdout(&out), "", "{event}");
        assert_eq!(stderr(&out), "", "{event}");
    }
}

/// `hookctl install opencode` writes the plugin (naming this hookctl) and,
/// in a config folder OpenCode never installed into, the package files
/// that keep it from installing at start; another plugin stays; a second
/// install changes nothing; doctor finds it and says when OpenCode would
/// not compact; uninstall takes away exactly what install wrote.
#[test]
fn install_and_uninstall_opencode_write_the_plugin_and_nothing_else() {
    let sb = Sandbox::new();
    let config = sb.home().join(".config/opencode");
    let plugins = config.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::write(
        plugins.join("mine.js"),
        "export const Mine = async () => ({});\n",
    )
    .unwrap();
    let out = sb.hookctl(&["install", "opencode"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let written = std::fs::read_to_string(plugins.join("hookd.js")).unwrap();
    let repository = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../hooks/opencode/hookd.js"),
    )
    .unwrap();
    let named = serde_json::to_string(&bin("hookctl").display().to_string()).unwrap();
    assert_eq!(
        written,
        repository.replacen(
            "const HOOKCTL = \"hookctl\";",
            &format!("const HOOKCTL = {named};"),
            1
        )
    );
    let lock: Value =
        serde_json::from_str(&std::fs::read_to_string(config.join("package-lock.json")).unwrap())
            .unwrap();
    assert!(lock["packages"][""]["dependencies"]["@opencode-ai/plugin"].is_string());
    assert!(config.join("node_modules").is_dir());
    assert!(config.join("package.json").is_file());
    let again = sb.hookctl(&["install", "opencode"]);
    assert!(
        stdout(&again).contains("already wired"),
        "{}",
        stdout(&again)
    );

    let doctor = sb.hookctl(&["doctor", "--json"]);
    let checks: Value = serde_json::from_str(&stdout(&doctor)).unwrap();
    let check = |checks: &Value| {
        checks["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "opencode")
            .cloned()
            .unwrap()
    };
    assert_eq!(check(&checks)["status"], "ok", "{checks:#}");
    std::fs::write(
        config.join("opencode.json"),
        r#"{"compaction": {"auto": false}}"#,
    )
    .unwrap();
    let doctor = sb.hookctl(&["doctor", "--json"]);
    let warned = check(&serde_json::from_str(&stdout(&doctor)).unwrap());
    assert_eq!(warned["status"], "warn", "{warned:#}");
    assert!(
        warned["detail"]
            .as_str()
            .unwrap()
            .contains("compaction.auto is false"),
        "{warned:#}"
    );

    // Started with `--pure`, OpenCode loads no plugin at all.
    std::fs::remove_file(config.join("opencode.json")).unwrap();
    let pure = sb
        .command("hookctl")
        .env("OPENCODE_PURE", "1")
        .args(["doctor", "--json"])
        .output()
        .unwrap();
    let warned = check(&serde_json::from_str(&stdout(&pure)).unwrap());
    assert!(
        warned["detail"].as_str().unwrap().contains("OPENCODE_PURE"),
        "{warned:#}"
    );
    std::fs::write(config.join("opencode.json"), "{}").unwrap();

    let out = sb.hookctl(&["uninstall", "opencode"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!plugins.join("hookd.js").exists());
    assert!(
        plugins.join("mine.js").is_file(),
        "the person's plugin stays"
    );
    for gone in ["package.json", "package-lock.json", "node_modules"] {
        assert!(!config.join(gone).exists(), "{gone}");
    }
    assert!(config.join("opencode.json").is_file());
}

/// A project's plugin is the repository's file as it is (it runs the
/// `hookctl` on each person's PATH); OpenCode would load the user's and
/// the project's both, so a second scope is refused.
#[test]
fn a_projects_plugin_is_the_repositorys_file_and_one_scope_only() {
    let sb = Sandbox::new();
    let (project, _repo) = project(&sb);
    let out = sb.hookctl(&[
        "install",
        "opencode",
        "--project",
        project.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let written = std::fs::read_to_string(project.join(".opencode/plugins/hookd.js")).unwrap();
    let repository = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../hooks/opencode/hookd.js"),
    )
    .unwrap();
    assert_eq!(written, repository);
    let twice = sb.hookctl_in(&project, &["install", "opencode"]);
    assert!(!twice.status.success());
    assert!(stderr(&twice).contains("twice"), "{}", stderr(&twice));
    let out = sb.hookctl(&[
        "uninstall",
        "opencode",
        "--project",
        project.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!project.join(".opencode").exists(), "{}", stdout(&out));
}

//! Copilot CLI through the real hookctl and a real daemon, with the payloads
//! and session file captured from the real client in
//! `tests/fixtures/copilot-cli/`: the figure is the session file's, the
//! levels are measured against 0.80 of its prompt limit, a compaction
//! (preCompact → `compaction_complete` in the file → the next postToolUse)
//! saves the state and a checkpoint and puts the resume prompt in once, and
//! `hookctl install copilot-cli` writes and takes away its own hooks file.

use crate::harness_setup::placed;
use hookd_tests::{
    GitRepo, Sandbox, TestDaemon, hook_json, run_with_stdin, stderr, stdout, workflow_events_of,
};
use protocol::wire::{SessionStatus, StatusQuery};
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/copilot-cli")
}

/// A Copilot CLI session as it lays out its files: `events.jsonl` under
/// `$COPILOT_HOME/session-state/<id>/`, filled from the fixture a record
/// at a time, and the hooks it ran, in order.
struct CopilotSession {
    home: PathBuf,
    events: PathBuf,
    project: PathBuf,
    records: Vec<Value>,
    written: usize,
    payloads: Vec<(String, Value)>,
}

impl CopilotSession {
    fn new(sb: &Sandbox, project: &Path) -> CopilotSession {
        let home = sb.home().join(".copilot");
        let records: Vec<Value> = std::fs::read_to_string(fixtures().join("events.jsonl"))
            .unwrap()
            .lines()
            .map(|l| {
                placed(
                    serde_json::from_str(l).unwrap(),
                    &[("$COPILOT_HOME", &home), ("$CWD", project)],
                )
            })
            .collect();
        let id = records[0]["data"]["sessionId"].as_str().unwrap().to_owned();
        let events = home.join("session-state").join(id).join("events.jsonl");
        std::fs::create_dir_all(events.parent().unwrap()).unwrap();
        let all: Value = serde_json::from_str(
            &std::fs::read_to_string(fixtures().join("hook_payloads.json")).unwrap(),
        )
        .unwrap();
        let payloads = all
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["event"].as_str().unwrap().to_owned(),
                    placed(
                        p["payload"].clone(),
                        &[("$COPILOT_HOME", &home), ("$CWD", project)],
                    ),
                )
            })
            .collect();
        CopilotSession {
            home,
            events,
            project: project.to_path_buf(),
            records,
            written: 0,
            payloads,
        }
    }

    /// Writes the fixture's records up to the `nth` (from 1) whose type is
    /// `kind` and, for a hook's, whose `hookType` is `hook`; that one included.
    fn write_through(&mut self, kind: &str, hook: Option<&str>, nth: usize) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.events)
            .unwrap();
        let mut seen = self.records[..self.written]
            .iter()
            .filter(|r| matches(r, kind, hook))
            .count();
        while self.written < self.records.len() {
            let record = &self.records[self.written];
            writeln!(f, "{record}").unwrap();
            self.written += 1;
            if matches(record, kind, hook) {
                seen += 1;
                if seen == nth {
                    return;
                }
            }
        }
        panic!("no {kind} {hook:?} #{nth} in the fixture");
    }

    /// Appends `record` to the session file now, as Copilot does.
    fn append(&self, record: &Value) {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.events)
            .unwrap();
        writeln!(f, "{record}").unwrap();
    }

    /// The `nth` (from 1) payload of the hook Copilot runs as `event`.
    fn payload(&self, event: &str, nth: usize) -> Value {
        self.payloads
            .iter()
            .filter(|(e, _)| e == event)
            .nth(nth - 1)
            .unwrap_or_else(|| panic!("no {event} #{nth}"))
            .1
            .clone()
    }

    /// Runs `hookctl hook --harness copilot-cli <arg>` as the installed
    /// hook does, with the `nth` payload of `event`; its JSON answer.
    fn hook(&self, sb: &Sandbox, event: &str, nth: usize) -> Value {
        let arg = match event {
            "sessionStart" => "session-start",
            "userPromptSubmitted" => "user-prompt-submit",
            "postToolUse" => "post-tool-use",
            "preCompact" => "pre-compact",
            "agentStop" => "stop",
            "sessionEnd" => "session-end",
            other => panic!("{other} is not wired"),
        };
        let mut cmd = sb.command("hookctl");
        cmd.args(["hook", "--harness", "copilot-cli", arg])
            .env("COPILOT_HOME", &self.home)
            .current_dir(&self.project);
        let out = run_with_stdin(cmd, &serde_json::to_vec(&self.payload(event, nth)).unwrap());
        assert_eq!(out.status.code(), Some(0), "{event}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{event}");
        hook_json(&out)
    }
}

fn matches(record: &Value, kind: &str, hook: Option<&str>) -> bool {
    record["type"] == kind && hook.is_none_or(|h| record["data"]["hookType"] == h)
}

fn session(daemon: &TestDaemon) -> SessionStatus {
    let report = daemon.engine().status(&StatusQuery::default());
    assert_eq!(report.sessions.len(), 1, "{:?}", report.sessions);
    report.sessions[0].clone()
}

fn project(sb: &Sandbox) -> (PathBuf, GitRepo) {
    let project = sb.path().join("notes");
    let repo = GitRepo::init(&project);
    repo.write("src/notes.rs", "pub fn note() {}\n");
    repo.commit_all("start");
    (project, repo)
}

/// The figure is the latest usage record's `inputTokens` (cached tokens
/// are in it, not added), the point 0.80 of its `maxPromptTokens`, and a
/// session that stays below the first level saves nothing: no pipeline
/// runs without a compaction or a level.
#[test]
fn the_figure_is_the_session_files_and_the_point_four_fifths_of_its_limit() {
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options());
    let (project, _repo) = project(&sb);
    let mut copilot = CopilotSession::new(&sb, &project);
    let first = copilot
        .records
        .iter_mut()
        .find(|r| r["type"] == "session.usage_record")
        .unwrap();
    first["data"]["usage"]["inputTokens"] = json!(6_000);
    copilot.write_through("hook.start", Some("sessionStart"), 1);
    let start = copilot.hook(&sb, "sessionStart", 1);
    assert!(!start.to_string().contains("[hookd-resume "), "{start:#}");
    copilot.write_through("hook.start", Some("userPromptSubmitted"), 1);
    assert_eq!(copilot.hook(&sb, "userPromptSubmitted", 1), Value::Null);
    copilot.write_through("hook.start", Some("postToolUse"), 1);
    assert_eq!(copilot.hook(&sb, "postToolUse", 1), Value::Null);
    let s = session(&daemon);
    assert_eq!(s.harness, "copilot-cli");
    assert_eq!(s.model.as_deref(), Some("mock-model"));
    assert_eq!(s.project_dir.as_deref(), Some(project.as_path()));
    let c = s.context.expect("a figure from the session file");
    assert_eq!(
        (c.tokens_used, c.tokens_max, c.window_tokens),
        (6_000, 16_000, 20_000)
    );
    assert!(c.basis.contains("maxPromptTokens"), "{}", c.basis);
    assert_eq!(copilot.hook(&sb, "agentStop", 1), Value::Null);
    assert!(workflow_events_of(&project, "threshold").is_empty());
    assert!(workflow_events_of(&project, "pipeline").is_empty());
    assert!(workflow_events_of(&project, "compaction").is_empty());

    // `hookctl status` names the harness.
    let out = sb.hookctl_in(&project, &["status"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("copilot-cli"), "{}", stdout(&out));
}

/// The levels are measured against 16,000; a real compaction saves the
/// state and a checkpoint at preCompact, and once the file shows
/// `compaction_complete` the next postToolUse carries the resume prompt;
/// the tool result that carried it, recorded in the file, is its arrival,
/// and it is not put in again.
#[test]
fn a_compaction_saves_the_state_and_resumes_once() {
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options());
    let (project, repo) = project(&sb);
    let mut copilot = CopilotSession::new(&sb, &project);
    copilot.write_through("hook.start", Some("userPromptSubmitted"), 1);
    copilot.hook(&sb, "sessionStart", 1);
    copilot.hook(&sb, "userPromptSubmitted", 1);

    // 12,000 of 16,000: the 70% level, said to the model with the tool's result.
    copilot.write_through("hook.start", Some("postToolUse"), 1);
    let answer = copilot.hook(&sb, "postToolUse", 1);
    assert!(answer["additionalContext"].as_str().is_some(), "{answer:#}");
    assert_eq!(answer.as_object().unwrap().len(), 1, "{answer:#}");
    let threshold = workflow_events_of(&project, "threshold");
    assert_eq!(threshold[0]["harness"], "copilot-cli");
    assert_eq!(
        (
            threshold[0]["level"].as_f64(),
            threshold[0]["tokens_used"].as_u64(),
            threshold[0]["tokens_max"].as_u64()
        ),
        (Some(0.7), Some(12_000), Some(16_000))
    );
    assert!(workflow_events_of(&project, "pipeline").is_empty());

    // 17,000, past the point: Copilot runs preCompact and goes on.
    copilot.write_through("hook.start", Some("preCompact"), 1);
    let pre = copilot.hook(&sb, "preCompact", 1);
    assert_eq!(pre, Value::Null, "Copilot reads nothing of preCompact's");
    let captures = || {
        workflow_events_of(&project, "pipeline")
            .iter()
            .filter(|e| {
                e["step"] == "capture"
                    && e["trigger"]
                        .as_str()
                        .is_some_and(|t| t.starts_with("pre-compact"))
            })
            .count()
    };
    assert_eq!(captures(), 1, "one save at preCompact");
    assert!(project.join(".workflow/context_state.json").is_file());
    assert!(!repo.hookd_refs().is_empty(), "and a checkpoint made");

    // The turn goes on while the summary is made: no resume prompt yet.
    copilot.write_through("hook.start", Some("postToolUse"), 4);
    let during = copilot.hook(&sb, "postToolUse", 4);
    assert!(!during.to_string().contains("[hookd-resume "), "{during:#}");
    assert!(workflow_events_of(&project, "resume").is_empty());

    // compaction_complete lands; the next tool result carries the prompt.
    copilot.write_through("hook.start", Some("postToolUse"), 5);
    let resumed = copilot.hook(&sb, "postToolUse", 5);
    let prompt = resumed["additionalContext"]
        .as_str()
        .unwrap_or_else(|| panic!("no resume prompt: {resumed:#}"))
        .to_owned();
    assert!(prompt.contains("[hookd-resume "), "{prompt}");
    let compaction = workflow_events_of(&project, "compaction");
    assert_eq!(compaction.len(), 1, "{compaction:#?}");
    assert_eq!(
        (
            compaction[0]["pre_tokens"].as_u64(),
            compaction[0]["post_tokens"].as_u64()
        ),
        (Some(10_845), Some(10_538))
    );
    assert_eq!(compaction[0]["announced"], true);
    let resume = workflow_events_of(&project, "resume");
    assert_eq!(resume.len(), 1);
    assert_eq!(resume[0]["injected"], true);
    assert_eq!(session(&daemon).epoch, 2);

    // Copilot appends it to the tool's result, as it records it.
    copilot.write_through("hook.end", Some("postToolUse"), 5);
    let mut done = copilot.records[copilot.written].clone();
    assert_eq!(done["type"], "tool.execution_complete");
    done["data"]["result"]["content"] = json!(format!(
        "\n<shellId: 4 completed with exit code 0>\n\nTool \"bash\" succeeded. \
         Additional guidance from postToolUse hooks:\n{prompt}"
    ));
    copilot.append(&done);
    copilot.written += 1;
    copilot.write_through("hook.start", Some("postToolUse"), 6);
    let next = copilot.hook(&sb, "postToolUse", 6);
    assert!(
        !next.to_string().contains("[hookd-resume "),
        "the prompt went in once: {next:#}"
    );
    let arrival = workflow_events_of(&project, "resume_arrival");
    assert_eq!(arrival.len(), 1, "{arrival:#?}");
    assert_eq!(arrival[0]["arrived"], true);
    copilot.write_through("hook.start", Some("agentStop"), 1);
    copilot.hook(&sb, "agentStop", 1);
    assert_eq!(workflow_events_of(&project, "resume").len(), 1);
    assert_eq!(workflow_events_of(&project, "resume_arrival").len(), 1);
    assert_eq!(captures(), 1);
    assert_eq!(session(&daemon).context.unwrap().tokens_used, 10_500);
}

/// A tool result that does not carry the prompt (its hook's answer was
/// lost) is no arrival: the check says so.
#[test]
fn a_resume_prompt_the_file_does_not_show_did_not_arrive() {
    let sb = Sandbox::new();
    let _daemon = TestDaemon::start(sb.daemon_options());
    let (project, _repo) = project(&sb);
    let mut copilot = CopilotSession::new(&sb, &project);
    copilot.write_through("hook.start", Some("preCompact"), 1);
    copilot.hook(&sb, "preCompact", 1);
    copilot.write_through("hook.start", Some("postToolUse"), 5);
    let resumed = copilot.hook(&sb, "postToolUse", 5);
    assert!(
        resumed.to_string().contains("[hookd-resume "),
        "{resumed:#}"
    );
    // The fixture's own tool result: it holds the capture hook's words, not hookd's.
    copilot.write_through("hook.start", Some("postToolUse"), 6);
    copilot.hook(&sb, "postToolUse", 6);
    let arrival = workflow_events_of(&project, "resume_arrival");
    assert_eq!(arrival.len(), 1, "{arrival:#?}");
    assert_eq!(arrival[0]["arrived"], false, "{arrival:#?}");
}

/// With hookd absent and not startable, a Copilot CLI hook exits 0 with no
/// output: Copilot goes on as without hookd.
#[test]
fn without_hookd_a_copilot_cli_hook_says_nothing_and_exits_0() {
    let sb = Sandbox::new();
    let (project, _repo) = project(&sb);
    let copilot = CopilotSession::new(&sb, &project);
    for (event, arg) in [
        ("sessionStart", "session-start"),
        ("preCompact", "pre-compact"),
        ("postToolUse", "post-tool-use"),
    ] {
        let mut cmd = sb.command("hookctl");
        cmd.env("HOOKD_BIN", "/nonexistent/hookd")
            .args(["hook", "--harness", "copilot-cli", arg]);
        let out = run_with_stdin(
            cmd,
            &serde_json::to_vec(&copilot.payload(event, 1)).unwrap(),
        );
        assert_eq!(out.status.code(), Some(0), "{event}");
        assert_eq!(stdout(&out), "", "{event}");
        assert_eq!(stderr(&out), "", "{event}");
    }
}

/// Doctor's check of Copilot CLI, run in `dir` with this hookctl on PATH
/// (a project's wiring runs the one PATH finds).
fn doctor_check(sb: &Sandbox, dir: &Path) -> Value {
    let hookctl = hookd_tests::bin("hookctl");
    let path = std::env::join_paths(
        std::iter::once(hookctl.parent().unwrap().to_path_buf()).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )),
    )
    .unwrap();
    let out = sb
        .command("hookctl")
        .env("PATH", path)
        .current_dir(dir)
        .args(["doctor", "--json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "copilot-cli")
        .cloned()
        .unwrap_or_else(|| panic!("no copilot-cli check: {report:#}"))
}

/// `hookctl install copilot-cli` writes `~/.copilot/hooks/hookd.json` in
/// Copilot's native format and never opens the person's other hook files;
/// a second install changes nothing; uninstall takes the file away. A
/// project's wiring is `.github/hooks/hookd.json`, refused while the user's
/// runs too, and doctor says Copilot skips it in a folder it does not trust.
#[test]
fn install_and_uninstall_copilot_cli_keep_to_hookds_own_file() {
    let sb = Sandbox::new();
    let hooks = sb.home().join(".copilot/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let theirs = r#"{"version": 1, "hooks": {"preToolUse": [{"type": "command", "bash": "~/bin/guard.sh", "timeoutSec": 5}]}}"#;
    std::fs::write(hooks.join("guard.json"), theirs).unwrap();
    let out = sb.hookctl(&["install", "copilot-cli"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let file = hooks.join("hookd.json");
    let hookctl = hookd_tests::bin("hookctl").display().to_string();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v["version"], 1);
    for (event, arg, timeout) in [
        ("sessionStart", "session-start", 30),
        ("userPromptSubmitted", "user-prompt-submit", 10),
        ("postToolUse", "post-tool-use", 10),
        ("preCompact", "pre-compact", 60),
        ("agentStop", "stop", 10),
        ("sessionEnd", "session-end", 10),
    ] {
        let handler = &v["hooks"][event][0];
        assert_eq!(
            handler,
            &json!({"type": "command", "bash": format!("{hookctl} hook --harness copilot-cli {arg}"), "timeoutSec": timeout}),
            "{event}"
        );
    }
    assert_eq!(v["hooks"].as_object().unwrap().len(), 6);
    let installed = std::fs::read_to_string(&file).unwrap();
    let out = sb.hookctl(&["install", "copilot-cli"]);
    assert!(stdout(&out).contains("already wired"), "{}", stdout(&out));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), installed);
    let here = sb.path().join("here");
    std::fs::create_dir_all(&here).unwrap();
    let check = doctor_check(&sb, &here);
    assert_eq!(check["status"], "ok", "{check:#}");

    // Copilot runs every level's hooks: a second level is refused.
    let proj = sb.path().join("proj");
    GitRepo::init(&proj);
    let dir = proj.display().to_string();
    let out = sb.hookctl(&["install", "copilot-cli", "--project", &dir]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("twice"), "{}", stderr(&out));

    let out = sb.hookctl(&["uninstall", "copilot-cli"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!file.exists(), "hookd's own file goes whole");
    let left: Vec<String> = std::fs::read_dir(&hooks)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["guard.json"]);
    assert_eq!(
        std::fs::read_to_string(hooks.join("guard.json")).unwrap(),
        theirs
    );

    // The project's wiring is the shipped fragment; doctor says what Copilot skips.
    let out = sb.hookctl(&["install", "copilot-cli", "--project", &dir]);
    assert!(out.status.success(), "{}", stderr(&out));
    let project_file = proj.join(".github/hooks/hookd.json");
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&project_file).unwrap()).unwrap();
    let shipped: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../hooks/copilot-cli/hookd.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(written, shipped);
    let check = doctor_check(&sb, &proj);
    assert_eq!(check["status"], "warn", "{check:#}");
    let detail = check["detail"].as_str().unwrap();
    assert!(
        detail.contains(&project_file.display().to_string()) && detail.contains("does not trust"),
        "{check:#}"
    );
    assert!(
        check["fix"].as_str().unwrap().contains("--trust-folder"),
        "{check:#}"
    );
    let out = sb.hookctl(&["uninstall", "copilot-cli", "--project", &dir]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!project_file.exists());
    assert!(!proj.join(".github/hooks").exists());
}

//! Where hookd expects Gemini CLI to compress, and what its PreCompress
//! hook costs, through the real hookctl and a real daemon: a project's
//! `.gemini/settings.json` moves the point only in a folder Gemini CLI
//! trusts (and is not read otherwise), and a session held past the point,
//! where PreCompress fires before every model call and nothing compresses,
//! runs the pipeline once.

use hookd_tests::{
    GitRepo, Sandbox, TestDaemon, append_line, hook_json, run_with_stdin, stderr,
    workflow_events_of,
};
use protocol::wire::StatusQuery;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// A Gemini CLI session as it lays out its files: `home/.gemini/tmp/<slug>/`
/// with `.project_root` naming the folder it runs in, and the chat file.
struct GeminiSession {
    gemini_dir: PathBuf,
    chat: PathBuf,
    project: PathBuf,
    replies: u64,
}

impl GeminiSession {
    fn new(sb: &Sandbox, project: &Path) -> GeminiSession {
        let gemini_dir = sb.home().join(".gemini");
        let slug = gemini_dir.join("tmp/proj");
        std::fs::create_dir_all(slug.join("chats")).unwrap();
        std::fs::write(slug.join(".project_root"), project.display().to_string()).unwrap();
        GeminiSession {
            gemini_dir,
            chat: slug.join("chats/session-2026-11-26T02-00-g1.jsonl"),
            project: project.to_path_buf(),
            replies: 0,
        }
    }

    /// A reply of gemini-2.5-flash (a 1,048,576-token window) with `tokens` of input.
    fn reply(&mut self, tokens: u64) {
        self.replies += 1;
        append_line(
            &self.chat,
            &json!({"id": format!("m{}", self.replies), "type": "gemini", "content": "",
                    "tokens": {"input": tokens, "output": 20, "cached": 0, "thoughts": 0, "tool": 0, "total": tokens + 20},
                    "model": "gemini-2.5-flash"}),
        );
    }

    /// Runs one hook as Gemini CLI would, with `env` added to its environment.
    fn hook(&self, sb: &Sandbox, event: &str, name: &str, env: &[(&str, &str)]) -> Value {
        let payload = json!({
            "session_id": "g1",
            "transcript_path": self.chat,
            "cwd": self.project,
            "hook_event_name": name,
            "timestamp": "2026-11-26T02:00:00Z",
            "trigger": "auto",
        });
        let mut cmd = sb.command("hookctl");
        cmd.args(["hook", "--harness", "gemini-cli", event])
            .env("GEMINI_PROJECT_DIR", &self.project)
            .current_dir(&self.project);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = run_with_stdin(cmd, &serde_json::to_vec(&payload).unwrap());
        assert!(out.status.success(), "{event}: {}", stderr(&out));
        assert!(stderr(&out).is_empty(), "{event}: {}", stderr(&out));
        hook_json(&out)
    }
}

/// The point hookd shows for the one session, and its basis.
fn point(daemon: &TestDaemon) -> (u64, String) {
    let report = daemon.engine().status(&StatusQuery::default());
    let c = report.sessions[0]
        .context
        .as_ref()
        .expect("a figure from the chat file");
    (c.tokens_max, c.basis.clone())
}

/// `model.compressionThreshold: 0.3` in a project's `.gemini/settings.json`
/// moves Gemini CLI's point to 314,572 only in a folder it trusts. Folder
/// trust is on by default and a folder with no rule in
/// `~/.gemini/trustedFolders.json` is not trusted: Gemini CLI compresses at
/// 524,288 there, and so hookd expects it, without reading the file.
#[test]
fn a_project_threshold_counts_only_where_gemini_cli_trusts_the_folder() {
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options());
    let project = sb.path().join("work/proj");
    std::fs::create_dir_all(project.join(".gemini")).unwrap();
    std::fs::write(
        project.join(".gemini/settings.json"),
        r#"{"model": {"compressionThreshold": 0.3}}"#,
    )
    .unwrap();
    let mut session = GeminiSession::new(&sb, &project);
    session.reply(200_000);

    session.hook(&sb, "after-tool", "AfterTool", &[]);
    let (tokens_max, basis) = point(&daemon);
    assert_eq!(
        tokens_max, 524_288,
        "an untrusted folder's settings are not Gemini CLI's: {basis}"
    );
    insta::assert_snapshot!(sb.normalize(&basis), @"0.5 of the 1048576-token window (Gemini CLI's window for gemini-2.5-flash, as for every model it does not list; Gemini CLI's default compression threshold; [TEMP]/work/proj/.gemini/settings.json is not read: Gemini CLI does not trust [TEMP]/work/proj (no rule for it in [TEMP]/home/.gemini/trustedFolders.json))");
    // 200,000 is 38% of the real point: no level fires, nothing is saved.
    assert!(workflow_events_of(&project, "threshold").is_empty());
    assert!(workflow_events_of(&project, "pipeline").is_empty());

    // Trusted through Gemini CLI's environment, or a rule of the user's.
    session.hook(
        &sb,
        "after-tool",
        "AfterTool",
        &[("GEMINI_CLI_TRUST_WORKSPACE", "true")],
    );
    assert_eq!(point(&daemon).0, 314_572, "{}", point(&daemon).1);
    let folders = session.gemini_dir.join("trustedFolders.json");
    std::fs::write(
        &folders,
        json!({ project.parent().unwrap().display().to_string(): "TRUST_FOLDER" }).to_string(),
    )
    .unwrap();
    session.hook(&sb, "after-tool", "AfterTool", &[]);
    assert_eq!(point(&daemon).0, 314_572, "{}", point(&daemon).1);
    std::fs::write(
        &folders,
        json!({ project.display().to_string(): "DO_NOT_TRUST" }).to_string(),
    )
    .unwrap();
    session.hook(&sb, "after-tool", "AfterTool", &[]);
    assert_eq!(point(&daemon).0, 524_288, "{}", point(&daemon).1);

    // A trustedFolders.json Gemini CLI cannot start with trusts nothing,
    // and the hook still answers, naming the file.
    std::fs::write(&folders, "{\"/\": 7").unwrap();
    session.hook(&sb, "after-tool", "AfterTool", &[]);
    let (tokens_max, basis) = point(&daemon);
    assert_eq!(tokens_max, 524_288, "{basis}");
    insta::assert_snapshot!(sb.normalize(&basis), @"0.5 of the 1048576-token window (Gemini CLI's window for gemini-2.5-flash, as for every model it does not list; Gemini CLI's default compression threshold; [TEMP]/work/proj/.gemini/settings.json is not read: Gemini CLI does not trust [TEMP]/work/proj ([TEMP]/home/.gemini/trustedFolders.json is not valid JSON (EOF while parsing an object at line 1 column 7); Gemini CLI does not start with it))");
}

/// Past the point (600,000 of 524,288), Gemini CLI fires PreCompress before
/// every model call; when it does not compress (a failed attempt), the
/// pipeline runs once for the epoch and each later PreCompress is a lookup:
/// one `pipeline` line and one checkpoint from PreCompress, however many
/// calls follow. The next compression's PreCompress saves again.
#[test]
fn a_session_held_past_the_point_runs_the_pipeline_once_per_compression() {
    let sb = Sandbox::new();
    let daemon = TestDaemon::start(sb.daemon_options());
    let project = sb.path().join("repo");
    let repo = GitRepo::init(&project);
    repo.write("notes.txt", "step 1\n");
    repo.commit_all("start");
    let mut session = GeminiSession::new(&sb, &project);
    session.reply(5_000);
    session.hook(&sb, "session-start", "SessionStart", &[]);
    let pre_compact_runs = || {
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

    session.reply(600_000);
    for call in 0..6 {
        // The file changes between calls, as the failed attempt's calls go on.
        if call > 0 {
            repo.write("notes.txt", &format!("step {call}\n"));
        }
        session.hook(&sb, "pre-compress", "PreCompress", &[]);
    }
    assert_eq!(pre_compact_runs(), 1, "one pipeline for the epoch");
    let refs = repo.hookd_refs();
    let checkpoints: usize = refs
        .iter()
        .map(|r| {
            repo.git(&["rev-list", "--count", r, "^HEAD"])
                .trim()
                .parse::<usize>()
                .unwrap_or(0)
        })
        .sum();
    // The 95% level's save may checkpoint too; PreCompress adds one.
    assert!(checkpoints <= 2, "{checkpoints} checkpoints in {refs:?}");
    let (tokens_max, basis) = point(&daemon);
    assert_eq!(tokens_max, 524_288, "{basis}");

    // Gemini compresses: the next reply's input fell. A new epoch, and
    // past the point again, one more save.
    session.reply(2_100);
    session.hook(&sb, "after-tool", "AfterTool", &[]);
    assert_eq!(workflow_events_of(&project, "compaction").len(), 1);
    session.reply(610_000);
    for _ in 0..3 {
        session.hook(&sb, "pre-compress", "PreCompress", &[]);
    }
    assert_eq!(pre_compact_runs(), 2);
}

//! Real repositories in temporary directories, real saves through the
//! pipeline, and `git` itself to look at what the sync refs reach.

use super::*;
use crate::pipeline::{self, SaveRequest};
use crate::resources::Resources;
use crate::state::SaveTrigger;
use crate::sync::test_git::git;
use protocol::config::Config;
use std::path::PathBuf;

/// Exports the checkpoints under the default `checkpoint.ref_prefix`.
fn export_checkpoints(p: &Project) -> Result<ExportReport, ExportError> {
    export_checkpoints_under(&p.path, &p.machine, "refs/hookd/checkpoints", &p.ledger)
}

// Fake keys, made up for these tests.
const AWS_KEY: &str = "AKIAQYLPMN5HHHFPZAM2";
const PEM_BODY: &str = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun";
const ENV_TOKEN: &str = "ghp_R8mQ2xK7vN4pL9sT3wY6zB1cD5fG0hJ2kM4n";

fn pem() -> String {
    format!(
        "-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\nVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n-----END RSA PRIVATE KEY-----\n"
    )
}

struct Project {
    dir: tempfile::TempDir,
    path: PathBuf,
    machine: Machine,
    config: Config,
    resources: Resources,
    ledger: Ledger,
}

impl Project {
    /// A repository with a remote named `backup`, the secret files of the
    /// brief and an ordinary one, and the user's sync configuration.
    fn new() -> Project {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("repo");
        std::fs::create_dir(&path).unwrap();
        git(&path, &["init", "-q", "-b", "main"]);
        std::fs::write(path.join("README.md"), "An ordinary file.\n").unwrap();
        git(&path, &["add", "."]);
        git(&path, &["commit", "-q", "-m", "init"]);
        git(dir.path(), &["init", "-q", "--bare", "remote.git"]);
        let url = format!("file://{}", dir.path().join("remote.git").display());
        git(&path, &["remote", "add", "backup", &url]);
        std::fs::write(path.join(".env"), format!("GITHUB_TOKEN={ENV_TOKEN}\n")).unwrap();
        std::fs::write(path.join("id_rsa"), pem()).unwrap();
        std::fs::create_dir(path.join("config")).unwrap();
        std::fs::write(path.join("config/prod.pem"), pem()).unwrap();
        std::fs::write(
            path.join("settings.py"),
            format!("REGION = 'eu-west-1'\nAWS_ACCESS_KEY_ID = '{AWS_KEY}'\n"),
        )
        .unwrap();
        let state_dir = dir.path().join("state");
        std::fs::create_dir(&state_dir).unwrap();
        let mut config = Config::default();
        config.sync.remote = Some("backup".into());
        config.sync.machine_name = Some("laptop".into());
        let machine = Machine::load(&state_dir, Some("laptop")).unwrap();
        Project {
            resources: Resources::in_state_dir(&state_dir),
            ledger: Ledger::in_state_dir(&state_dir),
            dir,
            path,
            machine,
            config,
        }
    }

    fn save(&self) -> pipeline::SaveReport {
        let request = SaveRequest {
            session: None,
            project: self.path.clone(),
            working_dir: None,
            transcript: None,
            context: None,
            trigger: SaveTrigger::Manual,
            checkpoint: true,
        };
        let report = pipeline::save(&request, &self.config, &self.resources);
        assert!(report.ok(), "{:?}", report.problems);
        report
    }

    fn git(&self, args: &[&str]) -> String {
        git(&self.path, args)
    }

    /// Every object the sync refs reach: `(sha, path)`.
    fn reachable_from_sync_refs(&self) -> Vec<(String, String)> {
        self.git(&["rev-list", "--objects", "--glob=refs/hookd/sync/*"])
            .lines()
            .map(|l| match l.split_once(' ') {
                Some((sha, path)) => (sha.to_owned(), path.to_owned()),
                None => (l.to_owned(), String::new()),
            })
            .collect()
    }
}

/// A save through the pipeline and an export: nothing secret is reachable
/// from the sync refs, what was left out is named, the state is redacted,
/// and none of the user's history is on the exported chain.
#[test]
fn nothing_secret_reaches_the_sync_refs() {
    let p = Project::new();
    // The state carries a secret too: a note the agent recorded.
    let workflow = crate::workflow::Workflow::new(&p.path);
    let dir = workflow.ensure(true).unwrap();
    let note = protocol::wire::Record::Note {
        text: format!("deploy with key {AWS_KEY} for now"),
    };
    crate::capture::records::append(&dir, &note, None).unwrap();

    let report = p.save();
    let checkpoint = report.checkpoint.clone().expect("a checkpoint");
    let exported = export_checkpoints(&p).unwrap();
    assert_eq!(exported.exported.len(), 1, "{exported:?}");
    let first = &exported.exported[0];
    assert_eq!(first.source, checkpoint);
    assert_eq!(
        first.reference,
        format!("refs/hookd/sync/{}/checkpoints/main", p.machine.id)
    );
    let left_out: Vec<String> = first
        .left_out
        .iter()
        .map(|(path, why)| format!("{path} ({why})"))
        .collect();
    assert_eq!(
        left_out,
        [
            ".env (secret file name)",
            "config/prod.pem (secret file name)",
            "id_rsa (secret file name)",
            "settings.py (holds a aws-access-token)",
        ]
    );

    // Every blob the sync refs reach, read and searched.
    let objects = p.reachable_from_sync_refs();
    let paths: Vec<&str> = objects.iter().map(|(_, p)| p.as_str()).collect();
    for secret_file in [".env", "id_rsa", "config/prod.pem", "settings.py"] {
        assert!(!paths.contains(&secret_file), "{secret_file} in {paths:?}");
    }
    assert!(paths.contains(&"README.md"), "{paths:?}");
    assert!(paths.contains(&"context_state.json"), "{paths:?}");
    for (sha, path) in &objects {
        if p.git(&["cat-file", "-t", sha]).trim() != "blob" {
            continue;
        }
        let text = p.git(&["cat-file", "blob", sha]);
        for secret in [AWS_KEY, PEM_BODY, ENV_TOKEN] {
            assert!(!text.contains(secret), "{secret} in {path}:\n{text}");
        }
    }

    // The exported commit names what it left out, and has no parent.
    let message = p.git(&["log", "-1", "--format=%B", &first.commit]);
    assert!(message.starts_with("hookd: checkpoint\n\n"), "{message}");
    for line in [
        format!("Hookd-Machine: {}", p.machine.id),
        "Hookd-Machine-Name: laptop".to_owned(),
        format!("Hookd-Source: {checkpoint}"),
        "Hookd-Branch: main".to_owned(),
        "Hookd-Trigger: manual".to_owned(),
        "Hookd-Left-Out: settings.py (holds a aws-access-token)".to_owned(),
        "Hookd-Left-Out: .env (secret file name)".to_owned(),
    ] {
        assert!(
            message.lines().any(|l| l == line),
            "{line} not in:\n{message}"
        );
    }
    let head = p.git(&["rev-parse", "HEAD"]).trim().to_owned();
    assert!(
        message.contains(&format!("Hookd-Base: {head}")),
        "{message}"
    );
    assert_eq!(
        p.git(&["rev-list", "--parents", "-n1", &first.commit])
            .trim(),
        first.commit
    );
    let users = p.git(&["rev-list", "--all", "--not", "--glob=refs/hookd/sync/*"]);
    let synced = p.git(&["rev-list", "--glob=refs/hookd/sync/*"]);
    for commit in synced.lines() {
        assert!(
            p.git(&["log", "-1", "--format=%s", commit])
                .starts_with("hookd: "),
            "a commit not of sync's on its chain: {commit}"
        );
    }
    assert!(
        users.contains(&checkpoint),
        "the local checkpoint stays local"
    );

    // The saved-state commit: the three files, redacted.
    let state_ref = state_ref(&p.machine.id, "main");
    let tree = p.git(&["ls-tree", "--name-only", &state_ref]);
    assert_eq!(
        tree.lines().collect::<Vec<_>>(),
        [
            "context_state.json",
            "progress_summary.md",
            "resume_prompt.md"
        ]
    );
    let state = p.git(&["show", &format!("{state_ref}:context_state.json")]);
    assert!(
        state.contains("deploy with key [redacted: aws-access-token]"),
        "{state}"
    );
    let message = p.git(&["log", "-1", "--format=%B", &state_ref]);
    assert!(message.starts_with("hookd: saved state\n\n"), "{message}");
    assert!(
        message.contains(&format!("Hookd-Checkpoint-Source: {checkpoint}")),
        "{message}"
    );
    assert!(message.contains("Hookd-Saved-At: 20"), "{message}");
    assert!(
        message.contains(&format!("Hookd-Project: {}", p.path.display())),
        "{message}"
    );
}

/// The second export after one file changed reads that file only, and
/// keeps what the first left out (without reading it again).
#[test]
fn a_second_export_reads_only_what_changed() {
    let p = Project::new();
    for i in 0..300 {
        let dir = p.path.join(format!("src/m{}", i % 10));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(format!("f{i}.rs")),
            format!("pub fn f{i}() {{}}\n"),
        )
        .unwrap();
    }
    p.save();
    let first = export_checkpoints(&p).unwrap();
    let first = &first.exported[0];
    // Every file but the three known by name.
    assert_eq!(first.files_read, 302, "{first:?}");
    assert_eq!(export_checkpoints(&p).unwrap().up_to_date, ["main"]);

    std::fs::write(p.path.join("src/m3/f3.rs"), "pub fn changed() {}\n").unwrap();
    p.save();
    let second = export_checkpoints(&p).unwrap();
    let second = &second.exported[0];
    assert_eq!(second.files_read, 1, "{second:?}");
    assert_eq!(second.left_out, first.left_out);
    assert_eq!(
        p.git(&["rev-list", "--parents", "-n1", &second.commit])
            .trim(),
        format!("{} {}", second.commit, first.commit)
    );
    assert_eq!(
        p.git(&["show", &format!("{}:src/m3/f3.rs", second.commit)]),
        "pub fn changed() {}"
    );
    let files = p.git(&["ls-tree", "-r", "--name-only", &second.commit]);
    assert_eq!(files.lines().count(), 301, "{files}");

    // A secret added later is left out, and one taken away comes back.
    std::fs::write(p.path.join("src/m1/f1.rs"), format!("// {AWS_KEY}\n")).unwrap();
    std::fs::remove_file(p.path.join(".env")).unwrap();
    p.save();
    let third = export_checkpoints(&p).unwrap();
    let third = &third.exported[0];
    let left: Vec<&str> = third.left_out.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        left,
        ["config/prod.pem", "id_rsa", "settings.py", "src/m1/f1.rs"]
    );
    let files = p.git(&["ls-tree", "-r", "--name-only", &third.commit]);
    assert!(
        !files.lines().any(|f| f == "src/m1/f1.rs" || f == ".env"),
        "{files}"
    );
}

/// A sync ref moved by something other than hookd (to the user's HEAD,
/// whose history holds a committed `.env`; or to a commit made to look
/// like an earlier export) is neither parent nor base of the next export:
/// the chain starts anew and nothing of the planted commit's is in it.
#[test]
fn a_planted_sync_ref_is_no_parent_and_no_base() {
    let p = Project::new();
    p.git(&["add", "-f", ".env"]);
    p.git(&["commit", "-q", "-m", "oops"]);
    p.save();
    let first = export_checkpoints(&p).unwrap();
    let first = &first.exported[0];
    let state_ref = state_ref(&p.machine.id, "main");
    // Planted at HEAD: the next save's state commit has no parent.
    p.git(&["update-ref", &state_ref, "HEAD"]);
    p.save();
    let state = p.git(&["rev-parse", &state_ref]);
    assert_eq!(
        p.git(&["rev-list", "--parents", "-n1", state.trim()])
            .trim(),
        state.trim(),
        "a new chain"
    );
    // A forged "previous export" holding the .env, naming the checkpoint
    // the next one changes from: the next export judges every file.
    let env_tree = p.git(&["rev-parse", "HEAD^{tree}"]);
    let message = format!("hookd: checkpoint\n\nHookd-Source: {}\n", first.source);
    let forged = p.git(&["commit-tree", env_tree.trim(), "-m", &message]);
    let forged = forged.trim();
    p.git(&["update-ref", &first.reference, forged]);
    std::fs::write(p.path.join("README.md"), "Changed.\n").unwrap();
    p.save();
    let next = export_checkpoints(&p).unwrap();
    let next = &next.exported[0];
    assert_eq!(
        p.git(&["rev-list", "--parents", "-n1", &next.commit])
            .trim(),
        next.commit,
        "a new chain"
    );
    let files = p.git(&["ls-tree", "-r", "--name-only", &next.commit]);
    assert!(!files.lines().any(|f| f == ".env"), "{files}");
    assert!(next.left_out.iter().any(|(f, _)| f == ".env"), "{next:?}");
}

/// A repository without the remote the user named records no state.
#[test]
fn no_remote_of_that_name_records_nothing() {
    let mut p = Project::new();
    p.config.sync.remote = Some("elsewhere".into());
    p.save();
    assert_eq!(p.git(&["for-each-ref", "refs/hookd/sync/"]), "");
    let files = SavedFiles {
        state_json: b"{}".to_vec(),
        ..SavedFiles::default()
    };
    assert_eq!(
        record_state(&p.path, &p.machine, "elsewhere", &files, &p.ledger).unwrap(),
        None
    );
}

/// The memory's tree: one record per task, redacted, with its machine.
#[test]
fn the_memory_tree_is_redacted_and_names_the_machine() {
    let p = Project::new();
    let tasks = p.dir.path().join("memory/tasks");
    std::fs::create_dir_all(&tasks).unwrap();
    std::fs::write(
        tasks.join("t-1.json"),
        serde_json::to_vec(&serde_json::json!({
            "task_id": "t-1",
            "task_description": "rotate the deploy key",
            "key_learnings": [format!("the old key was {AWS_KEY}")],
            "iterations": 2,
        }))
        .unwrap(),
    )
    .unwrap();
    std::fs::write(
        tasks.join("t-2.json"),
        br#"{"task_id": "t-2", "task_description": "from the desk", "machine": "desk"}"#,
    )
    .unwrap();
    std::fs::write(tasks.join("broken.json"), b"{not json").unwrap();
    let shuttle = p.dir.path().join("memory.git");
    let sha = export_memory(&shuttle, &p.machine, &tasks)
        .unwrap()
        .expect("a first commit");
    let reference = memory_ref(&p.machine.id);
    let show = |what: &str| git(&shuttle, &["show", &format!("{reference}:{what}")]);
    let one: Value = serde_json::from_str(&show("tasks/t-1.json")).unwrap();
    assert_eq!(one["machine"], "laptop");
    assert_eq!(
        one["key_learnings"][0],
        "the old key was [redacted: aws-access-token]"
    );
    assert_eq!(one["iterations"], 2);
    let two: Value = serde_json::from_str(&show("tasks/t-2.json")).unwrap();
    assert_eq!(two["machine"], "desk");
    assert_eq!(
        git(&shuttle, &["ls-tree", "-r", "--name-only", &reference]),
        "tasks/t-1.json\ntasks/t-2.json"
    );
    let message = git(&shuttle, &["log", "-1", "--format=%B", &reference]);
    assert!(message.starts_with("hookd: memory\n\n"), "{message}");
    assert!(message.contains(&format!("Hookd-Machine: {}", p.machine.id)));
    assert_eq!(export_memory(&shuttle, &p.machine, &tasks).unwrap(), None);
    std::fs::write(
        tasks.join("t-3.json"),
        br#"{"task_id": "t-3", "task_description": "third"}"#,
    )
    .unwrap();
    let next = export_memory(&shuttle, &p.machine, &tasks)
        .unwrap()
        .unwrap();
    assert_eq!(
        git(&shuttle, &["rev-list", "--parents", "-n1", &next]).trim(),
        format!("{next} {sha}")
    );
}

#[test]
fn trailer_values_stay_on_one_line_and_are_redacted() {
    let mut t = Trailers::new("t");
    t.add("Branch", &format!("x\ny {AWS_KEY}"));
    assert_eq!(
        t.text,
        "t\n\nHookd-Branch: x\\ny [redacted: aws-access-token]\n"
    );
    assert_eq!(
        trailer_lines("t\n\nbody\n\nHookd-A: 1\nHookd-B: 2\nHookd-A: 3\n"),
        [("A", "1"), ("B", "2"), ("A", "3")].map(|(k, v)| (k.to_owned(), v.to_owned()))
    );
}

/// What an export costs for 10,000 files, first and after one change:
/// `cargo nextest run -p hookd cost_of_exporting --run-ignored only --no-capture`.
#[test]
#[ignore = "a measurement, not a check"]
fn cost_of_exporting_10000_files() {
    let p = Project::new();
    for i in 0..10_000 {
        let dir = p.path.join(format!("src/d{}", i % 100));
        std::fs::create_dir_all(&dir).unwrap();
        let body = format!("pub fn f{i}(key: &str) -> usize {{ key.len() + {i} }}\n");
        std::fs::write(dir.join(format!("f{i}.rs")), body.repeat(20)).unwrap();
    }
    p.save();
    let started = std::time::Instant::now();
    let first = export_checkpoints(&p).unwrap();
    println!(
        "first export, {} files read: {:?}",
        first.exported[0].files_read,
        started.elapsed()
    );
    std::fs::write(p.path.join("src/d7/f7.rs"), "pub fn changed() {}\n").unwrap();
    p.save();
    let started = std::time::Instant::now();
    let next = export_checkpoints(&p).unwrap();
    println!(
        "incremental export, {} file read: {:?}",
        next.exported[0].files_read,
        started.elapsed()
    );
    let started = std::time::Instant::now();
    crate::git::export::commit_for_branch(
        &p.path,
        "no-such-remote",
        &crate::git::export::OwnRepository,
        |_| unreachable!(),
    )
    .unwrap();
    println!("open and branch: {:?}", started.elapsed());
    let started = std::time::Instant::now();
    let state = std::fs::read(p.path.join(".workflow/context_state.json")).unwrap();
    let n = state.len();
    redact_json_bytes(&state);
    println!("redact the state ({n} bytes): {:?}", started.elapsed());
    let started = std::time::Instant::now();
    let files = SavedFiles {
        state_json: std::fs::read(p.path.join(".workflow/context_state.json")).unwrap(),
        resume_prompt: Some(
            std::fs::read_to_string(p.path.join(".workflow/resume_prompt.md")).unwrap(),
        ),
        progress_summary: Some("a summary".into()),
        ..SavedFiles::default()
    };
    record_state(&p.path, &p.machine, "backup", &files, &p.ledger)
        .unwrap()
        .unwrap();
    println!("saved-state commit: {:?}", started.elapsed());
}

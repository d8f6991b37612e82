//! A repository is untrusted input: its config, attributes, file names and
//! the checkpoint trees restored from it must never make hookd read or write
//! outside the project's work tree, store a secret in clear, or forge what
//! a checkpoint says about itself.

use hookd::git::{self, CheckpointMeta, CommitOutcome, GitError, SnapshotOptions};
use hookd_tests::{GitRepo, Sandbox, run_with_stdin};
use std::path::{Path, PathBuf};

const REF_PREFIX: &str = "refs/hookd/checkpoints";

fn options() -> SnapshotOptions {
    SnapshotOptions {
        include_untracked: true,
        max_file_bytes: 50 * 1024 * 1024,
    }
}

fn meta(session: &str) -> CheckpointMeta {
    CheckpointMeta {
        session: Some(session.into()),
        trigger: "test".into(),
        tokens: None,
    }
}

fn checkpoint_with(repo: &GitRepo, opts: &SnapshotOptions, meta: &CheckpointMeta) -> String {
    let before = repo.fingerprint();
    let snapshot = git::snapshot(&repo.dir, opts).expect("snapshot");
    let sha = match git::commit_checkpoint(&repo.dir, &snapshot, meta, REF_PREFIX).expect("commit")
    {
        CommitOutcome::Created { sha, .. } | CommitOutcome::Unchanged { sha, .. } => sha,
    };
    assert_eq!(repo.fingerprint(), before, "the user's repository changed");
    sha
}

fn base_repo(sb: &Sandbox) -> GitRepo {
    let repo = GitRepo::init(&sb.path().join("r"));
    repo.write("a.txt", "one\n");
    repo.commit_all("base");
    repo
}

// ---- the work tree is the project's ----

/// A home directory with a private key in it, beside the project.
fn home_with_a_key(sb: &Sandbox) -> PathBuf {
    let home = sb.path().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE KEY\n").unwrap();
    home
}

fn assert_refused_as_elsewhere(project: &Path, git_dir: &Path) {
    let err = git::snapshot(project, &options()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("work tree") && text.contains("no checkpoint"),
        "{text}"
    );
    assert!(
        !git_dir.join("hookd").exists(),
        "nothing written into the git dir"
    );
    let out = std::process::Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .args(["for-each-ref", "refs/hookd"])
        .output()
        .unwrap();
    assert!(out.stdout.is_empty(), "no checkpoint ref");
}

#[test]
fn a_core_worktree_pointing_elsewhere_is_refused() {
    let sb = Sandbox::new();
    let home = home_with_a_key(&sb);
    let repo = base_repo(&sb);
    repo.git(&["config", "core.worktree", home.to_str().unwrap()]);
    assert_refused_as_elsewhere(&repo.dir, &repo.dir.join(".git"));
}

/// `git init --separate-git-dir` with the git dir in the home directory:
/// the work tree is the project, not the git dir's parent.
fn separate_git_dir_in_home(sb: &Sandbox) -> (GitRepo, PathBuf) {
    let home = home_with_a_key(sb);
    let project = sb.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let git_dir = home.join("gd");
    let repo = GitRepo { dir: project };
    repo.git(&[
        "init",
        "-q",
        "-b",
        "main",
        "--separate-git-dir",
        git_dir.to_str().unwrap(),
    ]);
    repo.git(&["config", "user.name", "Test User"]);
    repo.git(&["config", "user.email", "test@example.invalid"]);
    repo.write("a.txt", "one\n");
    repo.commit_all("base");
    (repo, git_dir)
}

#[test]
fn a_separate_git_dir_snapshots_the_project_not_the_git_dirs_parent() {
    let sb = Sandbox::new();
    let (repo, _) = separate_git_dir_in_home(&sb);
    repo.write("a.txt", "two\n");
    repo.write("sub/new.txt", "new\n");
    let sha = checkpoint_with(&repo, &options(), &meta("s"));
    assert_eq!(
        repo.git(&["rev-parse", &format!("{sha}^{{tree}}")]).trim(),
        repo.expected_tree()
    );
    let objects = run_with_stdin(
        {
            let mut cmd = repo.command();
            cmd.args(["cat-file", "--batch-all-objects", "--batch"]);
            cmd
        },
        b"",
    );
    assert!(!String::from_utf8_lossy(&objects.stdout).contains("PRIVATE KEY"));
    // From a subdirectory of the project too.
    let snapshot = git::snapshot(&repo.dir.join("sub"), &options()).expect("snapshot");
    assert_eq!(snapshot.tree.to_string(), repo.expected_tree());
}

#[test]
fn a_separate_git_dir_whose_work_tree_is_elsewhere_is_refused() {
    let sb = Sandbox::new();
    let (repo, git_dir) = separate_git_dir_in_home(&sb);
    // The git dir says its work tree is the home directory.
    repo.git(&["config", "core.worktree", ".."]);
    assert_refused_as_elsewhere(&repo.dir, &git_dir);
}

// ---- nothing created inside a git dir ----

#[test]
fn a_project_inside_a_git_dir_is_not_a_repository() {
    let sb = Sandbox::new();
    let repo = base_repo(&sb);
    let git_dir = repo.dir.join(".git");
    for project in [git_dir.clone(), git_dir.join("refs")] {
        let err = git::snapshot(&project, &options()).unwrap_err();
        assert!(
            matches!(err, GitError::NotARepository { .. } | GitError::Bare { .. }),
            "{project:?}: {err}"
        );
        assert!(git::head_info(&project).is_err());
        assert!(!git_dir.join("hookd").exists(), "{project:?}");
        assert!(!git_dir.join("refs/hookd").exists(), "{project:?}");
    }
}

#[test]
fn a_bare_repository_gets_no_hookd_dir() {
    let sb = Sandbox::new();
    let bare = sb.path().join("bare.git");
    let out = std::process::Command::new("git")
        .args(["init", "-q", "--bare"])
        .arg(&bare)
        .output()
        .unwrap();
    assert!(out.status.success());
    for project in [bare.clone(), bare.join("objects")] {
        assert!(matches!(
            git::snapshot(&project, &options()),
            Err(GitError::Bare { .. } | GitError::NotARepository { .. })
        ));
        assert!(matches!(
            git::exclude(&project, ".workflow/"),
            Err(GitError::Bare { .. } | GitError::NotARepository { .. })
        ));
    }
    assert!(!bare.join("hookd").exists());
}

// ---- trailers ----

#[test]
fn a_file_name_cannot_forge_a_trailer() {
    let sb = Sandbox::new();
    let repo = base_repo(&sb);
    let name = "a\nHookd-Session: forged\nHookd-Base: unborn";
    std::fs::write(repo.dir.join(name), "x".repeat(100)).unwrap();
    let small = SnapshotOptions {
        include_untracked: true,
        max_file_bytes: 10,
    };
    let sha = checkpoint_with(&repo, &small, &meta("real-session"));
    let list = git::list_checkpoints(&repo.dir, REF_PREFIX, 10).unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].sha, sha);
    assert_eq!(list[0].session.as_deref(), Some("real-session"));
    assert_ne!(list[0].base.as_deref(), Some("unborn"));
    let detail = git::show(&repo.dir, &sha, REF_PREFIX).unwrap();
    assert_eq!(detail.summary.session.as_deref(), Some("real-session"));
    assert!(
        !detail
            .message
            .lines()
            .any(|l| l.starts_with("Hookd-Session: forged")),
        "{}",
        detail.message
    );
}

#[test]
fn a_session_id_cannot_forge_a_trailer() {
    let sb = Sandbox::new();
    let repo = base_repo(&sb);
    repo.write("a.txt", "changed\n");
    let forged = CheckpointMeta {
        session: Some("s1\r\nHookd-Trigger: forged".into()),
        trigger: "manual".into(),
        tokens: Some("1/2\nHookd-Session: other".into()),
    };
    checkpoint_with(&repo, &options(), &forged);
    let list = git::list_checkpoints(&repo.dir, REF_PREFIX, 10).unwrap();
    assert_eq!(list[0].trigger.as_deref(), Some("manual"));
    let session = list[0].session.as_deref().unwrap();
    assert!(
        session.starts_with("s1") && !session.contains('\n') && !session.contains('\r'),
        "{session:?}"
    );
}

// ---- refs ----

#[test]
fn a_checkpoint_ref_outside_refs_hookd_is_refused() {
    let sb = Sandbox::new();
    let repo = base_repo(&sb);
    repo.write("a.txt", "changed\n");
    let before = repo.fingerprint();
    let snapshot = git::snapshot(&repo.dir, &options()).unwrap();
    for prefix in ["refs/heads", "refs/tags", "refs/hookd/../heads", "HEAD"] {
        let err = git::commit_checkpoint(&repo.dir, &snapshot, &meta("s"), prefix).unwrap_err();
        assert!(err.to_string().contains(prefix), "{prefix}: {err}");
    }
    assert_eq!(repo.fingerprint(), before);
    assert_eq!(repo.git(&["for-each-ref", "refs/hookd"]), "");
}

//! A repository is untrusted input: its config, attributes, file names and
//! the checkpoint trees restored from it must never make hookd read or write
//! outside the project's work tree, store a secret in clear, or forge what
//! a checkpoint says about itself.

use hookd::git::{self, CheckpointMeta, GitError, SnapshotOptions};
use hookd_tests::{
    FileTree, GitRepo, REF_PREFIX, Sandbox, TestDaemon, checkpoint_meta, run_with_stdin,
    saved_state, snapshot, snapshot_options, stderr,
};
use std::path::{Path, PathBuf};

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

/// Snapshotting `project` fails, and nothing is written into `git_dir`:
/// what the refusal said, normalized.
fn refused_as_elsewhere(sb: &Sandbox, project: &Path, git_dir: &Path) -> String {
    let err = snapshot(project, &snapshot_options()).unwrap_err();
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
    sb.normalize(&err.to_string())
}

#[test]
fn a_core_worktree_pointing_elsewhere_is_refused() {
    let sb = Sandbox::new();
    let home = home_with_a_key(&sb);
    let repo = base_repo(&sb);
    repo.git(&["config", "core.worktree", home.to_str().unwrap()]);
    let said = refused_as_elsewhere(&sb, &repo.dir, &repo.dir.join(".git"));
    insta::assert_snapshot!(said, @"the git repository of [TEMP]/r has its work tree elsewhere ([TEMP]/home/): hookd leaves it alone; no checkpoint was made");
}

/// `git init --separate-git-dir` with the git dir in the home directory:
/// the work tree is the project, not the git dir's parent.
fn separate_git_dir_in_home(sb: &Sandbox) -> (GitRepo, PathBuf) {
    let home = home_with_a_key(sb);
    let git_dir = home.join("gd");
    let repo = GitRepo::init_separate(&sb.path().join("project"), &git_dir);
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
    let sha = repo.checkpoint(&repo.dir);
    assert_eq!(repo.tree_of(&sha), repo.expected_tree());
    assert!(!repo.every_object().contains("PRIVATE KEY"));
    // From a subdirectory of the project too.
    let snapshot = snapshot(&repo.dir.join("sub"), &snapshot_options()).expect("snapshot");
    assert_eq!(snapshot.tree.to_string(), repo.expected_tree());
}

#[test]
fn a_separate_git_dir_whose_work_tree_is_elsewhere_is_refused() {
    let sb = Sandbox::new();
    let (repo, git_dir) = separate_git_dir_in_home(&sb);
    // The git dir says its work tree is the home directory.
    repo.git(&["config", "core.worktree", ".."]);
    let said = refused_as_elsewhere(&sb, &repo.dir, &git_dir);
    insta::assert_snapshot!(said, @"the git repository of [TEMP]/project has its work tree elsewhere ([TEMP]/home/): hookd leaves it alone; no checkpoint was made");
}

// ---- nothing created inside a git dir ----

#[test]
fn a_project_inside_a_git_dir_is_not_a_repository() {
    let sb = Sandbox::new();
    let repo = base_repo(&sb);
    let git_dir = repo.dir.join(".git");
    for project in [git_dir.clone(), git_dir.join("refs")] {
        let err = snapshot(&project, &snapshot_options()).unwrap_err();
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
            snapshot(&project, &snapshot_options()),
            Err(GitError::Bare { .. } | GitError::NotARepository { .. })
        ));
        assert!(matches!(
            git::exclude(&project, ".workflow/"),
            Err(GitError::Bare { .. } | GitError::NotARepository { .. })
        ));
    }
    assert!(!bare.join("hookd").exists());
}

// ---- filter drivers ----

/// A repository whose `.gitattributes` sends secret files through a clean
/// filter (rot13 here; git-crypt in real life).
fn filtered_repo(sb: &Sandbox) -> GitRepo {
    let repo = base_repo(sb);
    repo.git(&["config", "filter.crypt.clean", "tr a-zA-Z n-za-mN-ZA-M"]);
    repo.git(&["config", "filter.crypt.smudge", "tr a-zA-Z n-za-mN-ZA-M"]);
    repo.write(
        ".gitattributes",
        "secret.txt filter=crypt\nkeys/* filter=crypt\n*.txt text eol=lf\nloose.txt filter=none-configured\n",
    );
    repo.write("secret.txt", "password=swordfish\n");
    repo.commit_all("secrets, filtered");
    repo
}

#[test]
fn files_with_a_filter_driver_are_never_stored_in_clear() {
    let sb = Sandbox::new();
    let repo = filtered_repo(&sb);
    let committed = repo.git(&["rev-parse", ":secret.txt"]).trim().to_owned();
    repo.write("secret.txt", "password=hunter2\n");
    repo.write("keys/new.key", "token=correcthorse\n");
    repo.write("plain.txt", "text attributes are fine\n");
    // No clean command for this driver: git stores the bytes as they are.
    repo.write("loose.txt", "stored as git would\n");
    let sha = repo.checkpoint(&repo.dir);

    // The tracked secret keeps the blob git filtered; the new one is left out.
    let blobs = sb.normalizer().with(committed.clone(), "[FILTERED BLOB]");
    let listing = repo.git(&["ls-tree", "-r", &sha]);
    assert!(!listing.contains("keys/new.key"), "{listing}");
    insta::assert_snapshot!(blobs.normalize(&listing), @r#"
        100644 blob [SHA]	.gitattributes
        100644 blob [SHA]	a.txt
        100644 blob [SHA]	loose.txt
        100644 blob [SHA]	plain.txt
        100644 blob [FILTERED BLOB]	secret.txt
    "#);
    let all = repo.every_object();
    assert!(
        !all.contains("hunter2") && !all.contains("correcthorse") && !all.contains("swordfish"),
        "no object holds a secret in clear"
    );

    let message = repo.git(&["log", "-1", "--format=%B", &sha]);
    insta::assert_snapshot!(blobs.normalize(&message), @r#"
        WIP: Pre-compaction checkpoint

        The working tree as it was when hookd saved the agent's state. Your branch,
        index and working tree were not touched.

        Hookd-Session: s
        Hookd-Trigger: test
        Hookd-Base: [SHA]
        Hookd-Branch: main
        Hookd-Skipped: keys/new.key (filter crypt: its working-tree bytes are not stored)
        Hookd-Skipped: secret.txt (filter crypt: its working-tree bytes are not stored)
    "#);

    // Still left out when nothing changed since, and after the next change.
    repo.write("secret.txt", "password=hunter3\n");
    let again = repo.checkpoint(&repo.dir);
    let listing = repo.git(&["ls-tree", "-r", &again]);
    insta::assert_snapshot!(blobs.normalize(&listing), @r#"
        100644 blob [SHA]	.gitattributes
        100644 blob [SHA]	a.txt
        100644 blob [SHA]	loose.txt
        100644 blob [SHA]	plain.txt
        100644 blob [FILTERED BLOB]	secret.txt
    "#);
}

#[test]
fn a_filtered_file_is_named_in_the_saved_state() {
    let sb = Sandbox::new();
    let repo = filtered_repo(&sb);
    repo.write("secret.txt", "password=hunter2\n");
    let _daemon = TestDaemon::start(sb.daemon_options());
    let out = sb.hookctl_in(&repo.dir, &["save", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let state = saved_state(&repo.dir);
    assert_eq!(
        state["checkpoint"]["skipped"],
        serde_json::json!(["secret.txt (filter crypt, not stored)"])
    );
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
    let sha = repo.checkpoint_with(&repo.dir, &small, &checkpoint_meta("real-session"));
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
    repo.checkpoint_with(&repo.dir, &snapshot_options(), &forged);
    let list = git::list_checkpoints(&repo.dir, REF_PREFIX, 10).unwrap();
    assert_eq!(list[0].trigger.as_deref(), Some("manual"));
    // The line breaks are escaped, so the session is one trailer.
    let session = list[0].session.as_deref().unwrap();
    assert!(!session.contains(['\n', '\r']), "{session:?}");
    insta::assert_snapshot!(session, @r#"
        s1\r\nHookd-Trigger: forged
    "#);
}

// ---- refs ----

#[test]
fn a_checkpoint_ref_outside_refs_hookd_is_refused() {
    let sb = Sandbox::new();
    let repo = base_repo(&sb);
    repo.write("a.txt", "changed\n");
    let before = repo.fingerprint();
    let snapshot = snapshot(&repo.dir, &snapshot_options()).unwrap();
    let refused: Vec<String> = ["refs/heads", "refs/tags", "refs/hookd/../heads", "HEAD"]
        .into_iter()
        .map(|prefix| {
            let err = git::commit_checkpoint(&repo.dir, &snapshot, &checkpoint_meta("s"), prefix)
                .unwrap_err();
            format!("{prefix}: {err}")
        })
        .collect();
    insta::assert_snapshot!(sb.normalize(&refused.join("\n")), @r#"
        refs/heads: `refs/heads/main` is not under refs/hookd/: hookd moves only refs of its own
        refs/tags: `refs/tags/main` is not under refs/hookd/: hookd moves only refs of its own
        refs/hookd/../heads: cannot name the checkpoint ref: `refs/hookd/../heads/main` is not a valid ref name
        HEAD: cannot name the checkpoint ref: `HEAD/main` is not a valid ref name
    "#);
    assert_eq!(repo.fingerprint(), before);
    assert_eq!(repo.git(&["for-each-ref", "refs/hookd"]), "");
}

/// A git directory shipped with the repository (an archive) may hold links
/// where hookd keeps its own files: its index and its refs stay inside.
#[test]
fn links_in_the_git_dir_take_no_write_outside() {
    let sb = Sandbox::new();
    let repo = base_repo(&sb);
    let outside = sb.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let git_dir = repo.git_dir();
    std::fs::create_dir_all(git_dir.join("hookd")).unwrap();
    std::os::unix::fs::symlink(outside.join("stolen-index"), git_dir.join("hookd/index")).unwrap();
    std::os::unix::fs::symlink(&outside, git_dir.join("refs/hookd")).unwrap();
    repo.write("a.txt", "changed\n");

    let snapshot = snapshot(&repo.dir, &snapshot_options()).unwrap();
    let err = git::commit_checkpoint(&repo.dir, &snapshot, &checkpoint_meta("s"), REF_PREFIX)
        .unwrap_err();
    insta::assert_snapshot!(sb.normalize(&err.to_string()), @"refusing to move `refs/hookd/checkpoints/main`: [TEMP]/r/.git/refs/hookd: is a symlink; hookd never follows links inside a project; no checkpoint was made");
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        0,
        "nothing may be written through the links"
    );
    assert!(
        std::fs::symlink_metadata(git_dir.join("hookd/index")).is_ok_and(|m| m.is_file()),
        "hookd's index is a file of its own"
    );
}

// ---- restore ----

/// Writes a blob and returns its id.
fn blob(repo: &GitRepo, content: &[u8]) -> String {
    let mut cmd = repo.command();
    cmd.args(["hash-object", "-w", "--stdin"]);
    String::from_utf8(run_with_stdin(cmd, content).stdout)
        .unwrap()
        .trim()
        .to_owned()
}

/// Writes a tree object byte by byte, so it can hold names git refuses:
/// entries are (mode, name, id).
fn raw_tree(repo: &GitRepo, entries: &[(&str, &str, &str)]) -> String {
    let mut entries = entries.to_vec();
    entries.sort_by_key(|e| e.1);
    let mut bytes = Vec::new();
    for (mode, name, id) in entries {
        bytes.extend_from_slice(format!("{mode} {name}\0").as_bytes());
        let id = git2_oid(id);
        bytes.extend_from_slice(&id);
    }
    let mut cmd = repo.command();
    cmd.args(["hash-object", "-w", "-t", "tree", "--literally", "--stdin"]);
    let out = run_with_stdin(cmd, &bytes);
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn git2_oid(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

fn commit_tree(repo: &GitRepo, tree: &str) -> String {
    repo.git(&["commit-tree", tree, "-m", "WIP: Pre-compaction checkpoint"])
        .trim()
        .to_owned()
}

#[test]
fn restore_refuses_paths_into_a_git_dir_or_out_of_the_work_tree() {
    let sb = Sandbox::new();
    let repo = base_repo(&sb);
    let outside = sb.path().join("escape.txt");
    let evil = blob(&repo, b"evil\n");
    let ok = blob(&repo, b"fine\n");
    let index_dir = raw_tree(&repo, &[("100644", "index", &evil)]);
    let escape = raw_tree(&repo, &[("100644", "escape.txt", &evil)]);
    let hostile = [
        raw_tree(
            &repo,
            &[("40000", ".git", &index_dir), ("100644", "ok.txt", &ok)],
        ),
        raw_tree(
            &repo,
            &[("40000", ".GIT", &index_dir), ("100644", "ok.txt", &ok)],
        ),
        raw_tree(
            &repo,
            &[("40000", "..", &escape), ("100644", "ok.txt", &ok)],
        ),
        raw_tree(&repo, &[("100644", "", &evil), ("100644", "ok.txt", &ok)]),
    ];
    for tree in hostile {
        let sha = commit_tree(&repo, &tree);
        let before = repo.fingerprint();
        let git_dir = FileTree::of(&repo.dir.join(".git"));
        let result = git::restore(&repo.dir, &sha, &[], true);
        assert!(result.is_err(), "{tree}: {result:?}");
        git_dir.assert_unchanged(
            &FileTree::of(&repo.dir.join(".git")),
            &format!("{tree}: the refused restore, in the git dir,"),
        );
        assert_eq!(repo.fingerprint(), before, "{tree}: nothing written");
        assert!(!outside.exists());
    }
}

#[test]
fn restore_never_writes_into_a_git_dir_inside_the_work_tree() {
    let sb = Sandbox::new();
    let project = sb.path().join("project");
    // The git dir is a plain directory of the work tree, named `gd`.
    let repo = GitRepo::init_separate(&project, &project.join("gd"));
    repo.write("a.txt", "one\n");
    repo.git(&["add", "a.txt"]);
    repo.git(&["commit", "-q", "-m", "base"]);
    let evil = blob(&repo, b"evil\n");
    let gd = raw_tree(
        &repo,
        &[("100644", "index", &evil), ("100644", "HEAD", &evil)],
    );
    let sha = commit_tree(&repo, &raw_tree(&repo, &[("40000", "gd", &gd)]));
    let git_dir = FileTree::of(&project.join("gd"));
    let result = git::restore(&project, &sha, &[], true);
    assert!(result.is_err(), "{result:?}");
    git_dir.assert_unchanged(
        &FileTree::of(&project.join("gd")),
        "the refused restore, in the git dir,",
    );
}

#[test]
fn restore_never_follows_a_planted_symlink() {
    let sb = Sandbox::new();
    let repo = base_repo(&sb);
    let outside = sb.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("file"), "outside\n").unwrap();
    std::os::unix::fs::symlink(&outside, repo.dir.join("link")).unwrap();
    std::os::unix::fs::symlink(outside.join("file"), repo.dir.join("target.txt")).unwrap();

    let evil = blob(&repo, b"evil\n");
    // A file under a directory that is a symlink in the work tree.
    let under = raw_tree(&repo, &[("100644", "pwned.txt", &evil)]);
    let through_dir = commit_tree(&repo, &raw_tree(&repo, &[("40000", "link", &under)]));
    // A file where the work tree has a symlink.
    let over_link = commit_tree(&repo, &raw_tree(&repo, &[("100644", "target.txt", &evil)]));
    // A symlink in the tree, and a file after it.
    let link = blob(&repo, outside.join("file").to_str().unwrap().as_bytes());
    let makes_link = commit_tree(
        &repo,
        &raw_tree(
            &repo,
            &[
                ("120000", "made-link", &link),
                ("100644", "after.txt", &evil),
            ],
        ),
    );

    let before_outside = FileTree::of(&outside);
    let before_git = FileTree::of(&repo.dir.join(".git"));
    let before_index = repo.fingerprint().index;

    let err = git::restore(&repo.dir, &through_dir, &[], true).unwrap_err();
    insta::assert_snapshot!(sb.normalize(&err.to_string()), @"refusing to restore `link`: it is a symlink in the work tree, and hookd never writes through one");

    let restored =
        git::restore(&repo.dir, &over_link, &[PathBuf::from("target.txt")], true).unwrap();
    assert_eq!(restored, vec!["target.txt".to_owned()]);
    let meta = std::fs::symlink_metadata(repo.dir.join("target.txt")).unwrap();
    assert!(
        meta.is_file(),
        "the symlink is replaced, not written through"
    );
    assert_eq!(
        std::fs::read(repo.dir.join("target.txt")).unwrap(),
        b"evil\n"
    );

    git::restore(&repo.dir, &makes_link, &[], true).unwrap();
    assert_eq!(
        std::fs::read_link(repo.dir.join("made-link")).unwrap(),
        outside.join("file")
    );

    before_outside.assert_unchanged(&FileTree::of(&outside), "restoring, outside the project,");
    before_git.assert_unchanged(
        &FileTree::of(&repo.dir.join(".git")),
        "restoring, in the git dir,",
    );
    assert!(
        repo.fingerprint().index == before_index,
        "index byte-identical"
    );
}

#[test]
fn restore_writes_the_recorded_modes() {
    let sb = Sandbox::new();
    let repo = base_repo(&sb);
    repo.write("run.sh", "#!/bin/sh\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        repo.dir.join("run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    repo.write("dir/plain.txt", "plain\n");
    std::os::unix::fs::symlink("dir/plain.txt", repo.dir.join("link")).unwrap();
    let sha = repo.checkpoint(&repo.dir);
    for path in ["run.sh", "dir/plain.txt", "link"] {
        std::fs::remove_file(repo.dir.join(path)).unwrap();
    }
    // The daemon runs with umask 077; the recorded mode still wins. The
    // umask is the process's: set back at once for tests running beside.
    // SAFETY: umask(2) has no preconditions.
    let old = unsafe { libc::umask(0o077) };
    let before_index = repo.fingerprint().index;
    let restored = git::restore(&repo.dir, &sha, &[], false);
    // SAFETY: as above.
    unsafe { libc::umask(old) };
    let mut restored = restored.unwrap();
    restored.sort();
    assert_eq!(restored, ["dir/plain.txt", "link", "run.sh"]);
    assert_eq!(hookd_tests::file_mode(&repo.dir.join("run.sh")), 0o755);
    assert_eq!(
        hookd_tests::file_mode(&repo.dir.join("dir/plain.txt")),
        0o644
    );
    assert_eq!(
        std::fs::read_link(repo.dir.join("link")).unwrap(),
        Path::new("dir/plain.txt")
    );
    assert_eq!(repo.fingerprint().index, before_index);
}

#[test]
fn restore_still_refuses_to_overwrite_uncommitted_changes() {
    let sb = Sandbox::new();
    let repo = base_repo(&sb);
    repo.write("a.txt", "checkpointed\n");
    repo.write("new.txt", "new\n");
    let sha = repo.checkpoint(&repo.dir);
    repo.write("a.txt", "edited since\n");
    repo.write("new.txt", "edited since\n");
    let err = git::restore(&repo.dir, &sha, &[], false).unwrap_err();
    match err {
        GitError::WouldOverwrite(paths) => assert_eq!(paths, ["a.txt", "new.txt"]),
        other => panic!("{other}"),
    }
    assert_eq!(
        std::fs::read_to_string(repo.dir.join("a.txt")).unwrap(),
        "edited since\n"
    );
    // An unchanged tracked file is overwritten without --force.
    repo.git(&["checkout", "a.txt"]);
    let restored = git::restore(&repo.dir, &sha, &[PathBuf::from("a.txt")], false).unwrap();
    assert_eq!(restored, ["a.txt"]);
    assert_eq!(
        std::fs::read_to_string(repo.dir.join("a.txt")).unwrap(),
        "checkpointed\n"
    );
    // Already as in the checkpoint: nothing to do.
    let restored = git::restore(&repo.dir, &sha, &[PathBuf::from("a.txt")], false).unwrap();
    assert!(restored.is_empty());
    // A path given must be a relative path inside the work tree.
    for bad in ["../a.txt", "/etc/passwd", ".git/config"] {
        assert!(
            git::restore(&repo.dir, &sha, &[PathBuf::from(bad)], true).is_err(),
            "{bad}"
        );
    }
}

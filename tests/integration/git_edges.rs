//! Checkpoints in the corners of git: each case a real repository, the
//! user's HEAD, index, stash and working tree byte-identical afterwards, and
//! the checkpoint's tree equal to what `git add -A` makes of the same tree.

use hookd_tests::{GitRepo, Sandbox, snapshot, snapshot_options};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

fn base_repo(sb: &Sandbox) -> GitRepo {
    let repo = GitRepo::init(&sb.path().join("r"));
    repo.write("a.txt", "one\n");
    repo.write("dir/b.txt", "two\n");
    repo.commit_all("base");
    repo
}

/// A checkpoint's commit message, normalized for a snapshot.
fn message_of(sb: &Sandbox, repo: &GitRepo, sha: &str) -> String {
    sb.normalize(&repo.git(&["log", "-1", "--format=%B", sha]))
}

#[test]
fn detached_head() {
    let sb = Sandbox::new();
    let repo = base_repo(&sb);
    let head = repo.git(&["rev-parse", "HEAD"]);
    repo.git(&["checkout", "-q", "--detach", head.trim()]);
    repo.write("a.txt", "changed while detached\n");
    let sha = repo.checkpoint(&repo.dir);
    assert_eq!(
        repo.git(&["rev-parse", "refs/hookd/checkpoints/detached"])
            .trim(),
        sha
    );
    assert_eq!(repo.tree_of(&sha), repo.expected_tree());
}

#[test]
fn unborn_head_has_no_parent() {
    let sb = Sandbox::new();
    let repo = GitRepo::init(&sb.path().join("r"));
    repo.write("first.txt", "before any commit\n");
    let sha = repo.checkpoint(&repo.dir);
    assert_eq!(repo.git(&["log", "-1", "--format=%P", &sha]).trim(), "");
    assert_eq!(repo.tree_of(&sha), repo.expected_tree());
    insta::assert_snapshot!(message_of(&sb, &repo, &sha), @r#"
        WIP: Pre-compaction checkpoint

        The working tree as it was when hookd saved the agent's state. Your branch,
        index and working tree were not touched.

        Hookd-Session: s
        Hookd-Trigger: test
        Hookd-Base: unborn
        Hookd-Branch: main
    "#);
}

#[test]
fn mid_merge_with_conflicts() {
    let sb = Sandbox::new();
    let repo = base_repo(&sb);
    repo.git(&["checkout", "-q", "-b", "other"]);
    repo.write("a.txt", "theirs\n");
    repo.commit_all("theirs");
    repo.git(&["checkout", "-q", "main"]);
    repo.write("a.txt", "ours\n");
    repo.commit_all("ours");
    let merge = repo.command().args(["merge", "other"]).output().unwrap();
    assert!(!merge.status.success(), "the merge conflicts");
    let sha = repo.checkpoint(&repo.dir);
    insta::assert_snapshot!(message_of(&sb, &repo, &sha), @r#"
        WIP: Pre-compaction checkpoint

        The working tree as it was when hookd saved the agent's state. Your branch,
        index and working tree were not touched.

        Hookd-Session: s
        Hookd-Trigger: test
        Hookd-Base: [SHA]
        Hookd-Branch: main
        Hookd-Repo-State: merge in progress
    "#);
    // The working tree's conflicted file, as it is.
    let content = repo.git(&["show", &format!("{sha}:a.txt")]);
    insta::assert_snapshot!(content, @r#"
        <<<<<<< HEAD
        ours
        =======
        theirs
        >>>>>>> other
    "#);
}

#[test]
fn mid_rebase() {
    let sb = Sandbox::new();
    let repo = base_repo(&sb);
    repo.git(&["checkout", "-q", "-b", "topic"]);
    repo.write("a.txt", "topic\n");
    repo.commit_all("topic change");
    repo.git(&["checkout", "-q", "main"]);
    repo.write("a.txt", "main\n");
    repo.commit_all("main change");
    repo.git(&["checkout", "-q", "topic"]);
    let rebase = repo.command().args(["rebase", "main"]).output().unwrap();
    assert!(!rebase.status.success(), "the rebase stops on a conflict");
    let sha = repo.checkpoint(&repo.dir);
    insta::assert_snapshot!(message_of(&sb, &repo, &sha), @r#"
        WIP: Pre-compaction checkpoint

        The working tree as it was when hookd saved the agent's state. Your branch,
        index and working tree were not touched.

        Hookd-Session: s
        Hookd-Trigger: test
        Hookd-Base: [SHA]
        Hookd-Branch: detached
        Hookd-Repo-State: rebase in progress
    "#);
}

#[test]
fn a_held_index_lock_does_not_matter() {
    let sb = Sandbox::new();
    let repo = base_repo(&sb);
    repo.write("a.txt", "changed\n");
    let lock = repo.dir.join(".git/index.lock");
    std::fs::write(&lock, "held by someone else").unwrap();
    let sha = repo.checkpoint(&repo.dir);
    assert_eq!(
        std::fs::read_to_string(&lock).unwrap(),
        "held by someone else"
    );
    std::fs::remove_file(&lock).unwrap();
    assert_eq!(repo.tree_of(&sha), repo.expected_tree());
}

#[test]
fn a_linked_worktree() {
    let sb = Sandbox::new();
    let repo = base_repo(&sb);
    let wt_dir = sb.path().join("wt");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "feature",
        wt_dir.to_str().unwrap(),
    ]);
    let wt = GitRepo {
        dir: wt_dir.clone(),
    };
    wt.write("feature.txt", "in the worktree\n");
    let main_before = repo.fingerprint();
    let sha = wt.checkpoint(&wt_dir);
    assert_eq!(
        repo.fingerprint(),
        main_before,
        "the main working tree is untouched too"
    );
    assert_eq!(
        repo.git(&["rev-parse", "refs/hookd/checkpoints/feature"])
            .trim(),
        sha
    );
    assert_eq!(repo.tree_of(&sha), wt.expected_tree());
}

#[test]
fn a_submodule_is_recorded_at_its_checked_out_commit() {
    let sb = Sandbox::new();
    let lib = GitRepo::init(&sb.path().join("lib"));
    lib.write("lib.txt", "v1\n");
    lib.commit_all("v1");
    let repo = base_repo(&sb);
    repo.git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        lib.dir.to_str().unwrap(),
        "vendor/lib",
    ]);
    repo.commit_all("add submodule");
    // Move the submodule's checkout forward without telling the superproject.
    let sub = GitRepo {
        dir: repo.dir.join("vendor/lib"),
    };
    sub.git(&["config", "user.name", "T"]);
    sub.git(&["config", "user.email", "t@example.invalid"]);
    sub.write("lib.txt", "v2\n");
    sub.commit_all("v2");
    let new_commit = sub.git(&["rev-parse", "HEAD"]).trim().to_owned();
    let sha = repo.checkpoint(&repo.dir);
    let entry = repo.git(&["ls-tree", &sha, "vendor/lib"]);
    assert_eq!(entry, format!("160000 commit {new_commit}\tvendor/lib\n"));
}

#[test]
fn symlinks_executable_bits_and_unusual_names() {
    let sb = Sandbox::new();
    let repo = base_repo(&sb);
    std::os::unix::fs::symlink("a.txt", repo.dir.join("link-to-a")).unwrap();
    repo.write("run.sh", "#!/bin/sh\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        repo.dir.join("run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let weird = std::ffi::OsStr::from_bytes(b"caf\xe9-latin1.txt");
    std::fs::write(repo.dir.join(weird), "not UTF-8 in the name\n").unwrap();
    repo.write("spaces and ünïcode.txt", "fine\n");
    repo.write(&format!("{}.txt", "long".repeat(60)), "a very long name\n");
    let sha = repo.checkpoint(&repo.dir);
    assert_eq!(repo.tree_of(&sha), repo.expected_tree());
    // The link as a link, the script executable, each name as git spells it.
    let listing = repo.git(&["ls-tree", &sha]);
    insta::assert_snapshot!(sb.normalize(&listing), @r#"
        100644 blob [SHA]	a.txt
        100644 blob [SHA]	"caf\351-latin1.txt"
        040000 tree [SHA]	dir
        120000 blob [SHA]	link-to-a
        100644 blob [SHA]	longlonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglong.txt
        100755 blob [SHA]	run.sh
        100644 blob [SHA]	"spaces and \303\274n\303\257code.txt"
    "#);
}

#[test]
fn ignored_secrets_are_never_committed() {
    let sb = Sandbox::new();
    let repo = base_repo(&sb);
    repo.write(".gitignore", ".env\nsecrets/\n");
    repo.commit_all("ignore rules");
    repo.write(".env", "API_KEY=hunter2\n");
    repo.write("secrets/key.pem", "-----BEGIN PRIVATE KEY-----\n");
    repo.write("visible.txt", "ok\n");
    let sha = repo.checkpoint(&repo.dir);
    let files = repo.git(&["ls-tree", "-r", "--name-only", &sha]);
    assert!(
        !files.contains(".env\n") && !files.contains("secrets/"),
        "{files}"
    );
    insta::assert_snapshot!(files, @r#"
        .gitignore
        a.txt
        dir/b.txt
        visible.txt
    "#);
    // An untracked file checkpointed once, then ignored, leaves the next checkpoint.
    repo.write("later-secret.txt", "x\n");
    let first = repo.checkpoint(&repo.dir);
    insta::assert_snapshot!(repo.git(&["ls-tree", "-r", "--name-only", &first]), @r#"
        .gitignore
        a.txt
        dir/b.txt
        later-secret.txt
        visible.txt
    "#);
    repo.write(".gitignore", ".env\nsecrets/\nlater-secret.txt\n");
    let second = repo.checkpoint(&repo.dir);
    let files = repo.git(&["ls-tree", "-r", "--name-only", &second]);
    assert!(!files.contains("later-secret.txt"), "{files}");
    assert_eq!(repo.tree_of(&second), repo.expected_tree());
}

#[test]
fn a_stash_is_left_alone() {
    let sb = Sandbox::new();
    let repo = base_repo(&sb);
    repo.write("a.txt", "stashed change\n");
    repo.git(&["stash", "-q"]);
    repo.write("dir/b.txt", "working change\n");
    let sha = repo.checkpoint(&repo.dir);
    assert_eq!(repo.git(&["stash", "list"]).lines().count(), 1);
    assert_eq!(repo.tree_of(&sha), repo.expected_tree());
}

#[test]
fn not_a_repository_and_bare_repositories_are_skipped_with_a_reason() {
    let sb = Sandbox::new();
    let plain = sb.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let err = snapshot(&plain, &snapshot_options())
        .unwrap_err()
        .to_string();
    insta::assert_snapshot!(sb.normalize(&err), @"[TEMP]/plain is not in a git repository");
    let bare = sb.path().join("bare.git");
    let out = std::process::Command::new("git")
        .args(["init", "-q", "--bare"])
        .arg(&bare)
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = snapshot(&bare, &snapshot_options())
        .unwrap_err()
        .to_string();
    insta::assert_snapshot!(sb.normalize(&err), @"[TEMP]/bare.git is a git directory without a working tree (a bare repository): there is nothing to checkpoint");
}

#[test]
fn a_read_only_git_directory_fails_cleanly() {
    let sb = Sandbox::new();
    let repo = base_repo(&sb);
    repo.write("a.txt", "changed\n");
    let before = repo.fingerprint();
    let objects = repo.dir.join(".git/objects");
    let refs = repo.dir.join(".git/refs");
    use std::os::unix::fs::PermissionsExt;
    let ro = |p: &Path, mode| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    // Root ignores permission bits, so make the failure real where it can be.
    if unsafe { libc::geteuid() } == 0 {
        let out = std::process::Command::new("chattr")
            .arg("+i")
            .arg(repo.dir.join(".git"))
            .output();
        if !out.is_ok_and(|o| o.status.success()) {
            eprintln!("skipped: running as root without chattr support");
            return;
        }
    } else {
        ro(&objects, 0o555);
        ro(&refs, 0o555);
    }
    let result = snapshot(&repo.dir, &snapshot_options());
    if unsafe { libc::geteuid() } == 0 {
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(repo.dir.join(".git"))
            .output();
    } else {
        ro(&objects, 0o755);
        ro(&refs, 0o755);
    }
    assert!(
        result.is_err(),
        "nothing can be written, so the snapshot fails"
    );
    assert!(!result.unwrap_err().to_string().is_empty());
    assert_eq!(repo.fingerprint(), before);
}

/// An index in git's other formats (split, or sparse) is read for what it
/// tracks: the checkpoint holds what `git add -A` would.
#[test]
fn split_and_sparse_indexes() {
    for (name, setup) in [
        ("split", &["update-index", "--split-index"][..]),
        (
            "sparse",
            &["sparse-checkout", "init", "--cone", "--sparse-index"][..],
        ),
    ] {
        let sb = Sandbox::new();
        let repo = base_repo(&sb);
        repo.git(setup);
        repo.write("a.txt", "changed\n");
        let sha = repo.checkpoint(&repo.dir);
        eprintln!("{name}: {:?}", repo.tree_of(&sha));
        assert_eq!(repo.tree_of(&sha), repo.expected_tree(), "{name}");
    }
}

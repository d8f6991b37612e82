//! Real git repositories in temporary directories, driven with the real
//! `git` CLI and no global or system configuration; what of them hookd must
//! never change; and hookd's checkpoints made in process.

use hookd::git::{
    self, CheckpointMeta, CommitOutcome, GitError, Repositories, Snapshot, SnapshotOptions,
};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where hookd keeps a branch's checkpoints by default.
pub const REF_PREFIX: &str = "refs/hookd/checkpoints";

/// git in `dir`, with no global or system configuration.
pub fn git_command(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_DIR");
    cmd
}

/// Runs `cmd` (git with `args`) and returns its stdout; a failure fails the test.
fn succeeded(cmd: &mut Command, args: &[&str]) -> String {
    let out = cmd.output().expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub struct GitRepo {
    pub dir: PathBuf,
}

/// Everything of a repository that hookd must never change.
#[derive(Debug, PartialEq, Eq)]
pub struct Fingerprint {
    pub index: Option<Vec<u8>>,
    pub head: String,
    pub head_reflog: Option<Vec<u8>>,
    pub branches: String,
    pub stash: String,
    pub status: String,
    pub files: Vec<(String, Vec<u8>)>,
}

/// The user's refs (hookd's own under `refs/hookd/` aside), HEAD and index,
/// read from the git dir alone: for repositories whose work tree a hostile
/// config points elsewhere, where [`Fingerprint`]'s status and files would
/// read that other place.
#[derive(Debug, PartialEq, Eq)]
pub struct UserRefs {
    pub refs: String,
    pub head_file: String,
    pub head: String,
    pub index: Option<Vec<u8>>,
}

impl GitRepo {
    /// `git init -b main` in `dir` with an identity set in the repository.
    pub fn init(dir: &Path) -> GitRepo {
        std::fs::create_dir_all(dir).unwrap();
        let repo = GitRepo {
            dir: dir.to_path_buf(),
        };
        repo.git(&["init", "-q", "-b", "main"]);
        repo.identify();
        repo
    }

    /// `git init --separate-git-dir`: the work tree at `dir`, whose `.git`
    /// is a `gitdir:` file pointing at `git_dir`.
    pub fn init_separate(dir: &Path, git_dir: &Path) -> GitRepo {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::create_dir_all(git_dir.parent().unwrap()).unwrap();
        let repo = GitRepo {
            dir: dir.to_path_buf(),
        };
        repo.git(&[
            "init",
            "-q",
            "-b",
            "main",
            "--separate-git-dir",
            git_dir.to_str().unwrap(),
        ]);
        repo.identify();
        assert!(dir.join(".git").is_file(), ".git is a gitdir: file");
        repo
    }

    fn identify(&self) {
        self.git(&["config", "user.name", "Test User"]);
        self.git(&["config", "user.email", "test@example.invalid"]);
        self.git(&["config", "commit.gpgsign", "false"]);
    }

    /// git in the repository, with fixed dates.
    pub fn command(&self) -> Command {
        let mut cmd = git_command(&self.dir);
        cmd.env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z");
        cmd
    }

    /// Runs git and returns its stdout; a failure fails the test.
    pub fn git(&self, args: &[&str]) -> String {
        succeeded(self.command().args(args), args)
    }

    pub fn write(&self, path: &str, content: &str) {
        let full = self.dir.join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, content).unwrap();
    }

    pub fn commit_all(&self, message: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", message]);
    }

    /// The tree `git add -A` would make of the working tree, through a
    /// throw-away index (the independent answer a checkpoint must match).
    pub fn expected_tree(&self) -> String {
        let index = std::env::temp_dir().join(format!(
            "hookd-expected-index-{}-{}",
            std::process::id(),
            self.dir.display().to_string().replace('/', "_")
        ));
        let _ = std::fs::remove_file(&index);
        let run = |args: &[&str]| {
            succeeded(
                self.command().env("GIT_INDEX_FILE", &index).args(args),
                args,
            )
        };
        run(&["add", "-A"]);
        let tree = run(&["write-tree"]).trim().to_owned();
        let _ = std::fs::remove_file(&index);
        tree
    }

    /// The tree of a commit.
    pub fn tree_of(&self, commit: &str) -> String {
        self.git(&["rev-parse", &format!("{commit}^{{tree}}")])
            .trim()
            .to_owned()
    }

    /// The repository's git directory (a linked worktree has its own).
    pub fn git_dir(&self) -> PathBuf {
        PathBuf::from(self.git(&["rev-parse", "--absolute-git-dir"]).trim())
    }

    /// The checkpoint of branch `main`, if there is one.
    pub fn checkpoint_ref(&self) -> Option<String> {
        let out = self
            .command()
            .args(["rev-parse", "-q", "--verify", &format!("{REF_PREFIX}/main")])
            .output()
            .unwrap();
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    /// The commits every ref under `refs/hookd/` points at.
    pub fn hookd_refs(&self) -> Vec<String> {
        self.git(&["for-each-ref", "--format=%(objectname)", "refs/hookd/"])
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The objects reachable from `revs` whose content contains `needle`.
    pub fn objects_containing(&self, revs: &[&str], needle: &str) -> Vec<String> {
        let listing = self.git(&[&["rev-list", "--objects"], revs].concat());
        let mut found = Vec::new();
        for line in listing.lines() {
            let oid = line.split(' ').next().unwrap();
            let body = git_command(&self.dir)
                .args(["cat-file", "-p", oid])
                .output()
                .unwrap();
            if String::from_utf8_lossy(&body.stdout).contains(needle) {
                found.push(line.to_owned());
            }
        }
        found
    }

    /// The contents of every object in the repository, reachable or not.
    pub fn every_object(&self) -> String {
        let objects = crate::run_with_stdin(
            {
                let mut cmd = self.command();
                cmd.args(["cat-file", "--batch-all-objects", "--batch"]);
                cmd
            },
            b"",
        );
        String::from_utf8_lossy(&objects.stdout).into_owned()
    }

    pub fn fingerprint(&self) -> Fingerprint {
        let git_dir = self.git_dir();
        let mut files = Vec::new();
        collect_files(&self.dir, &self.dir, &mut files);
        files.sort();
        Fingerprint {
            index: std::fs::read(git_dir.join("index")).ok(),
            head: std::fs::read_to_string(git_dir.join("HEAD")).unwrap_or_default(),
            head_reflog: std::fs::read(git_dir.join("logs/HEAD")).ok(),
            branches: self.git(&["for-each-ref", "refs/heads", "refs/tags"]),
            stash: self
                .command()
                .args(["rev-parse", "-q", "--verify", "refs/stash"])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default(),
            // --no-optional-locks: a plain `git status` may rewrite the index itself.
            status: self.git(&[
                "--no-optional-locks",
                "status",
                "--porcelain=v1",
                "-z",
                "--untracked-files=all",
            ]),
            files,
        }
    }

    /// The user's refs, HEAD and index, with the git dir named by the test.
    pub fn user_refs(&self, git_dir: &Path) -> UserRefs {
        UserRefs {
            refs: self
                .git(&["for-each-ref"])
                .lines()
                .filter(|l| !l.contains("\trefs/hookd/"))
                .map(|l| format!("{l}\n"))
                .collect(),
            head_file: std::fs::read_to_string(git_dir.join("HEAD")).unwrap_or_default(),
            // Empty for an unborn HEAD.
            head: git_command(&self.dir)
                .args(["rev-parse", "HEAD"])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default(),
            index: std::fs::read(git_dir.join("index")).ok(),
        }
    }

    /// A checkpoint of `dir` (the repository or a directory in it) made in
    /// process as the pipeline makes one, with the default options; fails
    /// the test if anything of the user's changed. Returns the commit.
    pub fn checkpoint(&self, dir: &Path) -> String {
        self.checkpoint_with(dir, &snapshot_options(), &checkpoint_meta("s"))
    }

    /// [`GitRepo::checkpoint`] with these options and trailers.
    pub fn checkpoint_with(
        &self,
        dir: &Path,
        options: &SnapshotOptions,
        meta: &CheckpointMeta,
    ) -> String {
        let before = self.fingerprint();
        let snapshot = snapshot(dir, options).expect("snapshot");
        let sha = match git::commit_checkpoint(dir, &snapshot, meta, REF_PREFIX).expect("commit") {
            CommitOutcome::Created { sha, .. } | CommitOutcome::Unchanged { sha, .. } => sha,
        };
        assert_eq!(self.fingerprint(), before, "the user's repository changed");
        sha
    }
}

/// Untracked files included, up to 50 MiB.
pub fn snapshot_options() -> SnapshotOptions {
    SnapshotOptions {
        include_untracked: true,
        max_file_bytes: 50 * 1024 * 1024,
    }
}

/// A checkpoint's trailers for `session`.
pub fn checkpoint_meta(session: &str) -> CheckpointMeta {
    CheckpointMeta {
        session: Some(session.into()),
        trigger: "test".into(),
        tokens: None,
    }
}

/// A snapshot of `dir` as a daemon that never saw the repository makes it.
pub fn snapshot(dir: &Path, options: &SnapshotOptions) -> Result<Snapshot, GitError> {
    git::snapshot(&Repositories::default(), dir, options)
}

/// Files of the working tree (not `.git`, not hookd's `.workflow`), with contents.
fn collect_files(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if dir == root && (name == ".git" || name == ".workflow") {
            continue;
        }
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let rel = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if meta.is_dir() {
            collect_files(root, &path, out);
        } else if meta.file_type().is_symlink() {
            out.push((
                rel,
                std::fs::read_link(&path)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes(),
            ));
        } else {
            out.push((rel, std::fs::read(&path).unwrap()));
        }
    }
}

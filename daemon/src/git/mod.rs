//! Everything hookd does with git, through libgit2. Nothing here writes the
//! user's index, HEAD, stash or working tree (only `restore`, which a person
//! asks for by name, writes working-tree files).
//!
//! A checkpoint snapshots the working tree through hookd's own index
//! (`<git dir>/hookd/index`, kept between runs so unchanged files are not
//! hashed again), writes a "WIP: Pre-compaction checkpoint" commit and moves
//! `refs/hookd/checkpoints/<branch>` to it with a compare-and-swap.

use crate::path_locks::PathLocks;
use crate::project_fs::{Blocked, Dir, Entry, NewEntry};
use protocol::wire::{CheckpointDetail, CheckpointSummary, FileChange};
use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The title of every checkpoint commit.
pub const CHECKPOINT_TITLE: &str = "WIP: Pre-compaction checkpoint";
/// Files whose line counts are computed (the rest get a plain summary).
const MAX_LINE_STATS: usize = 500;
/// Where every ref hookd moves lives.
const OWN_REFS: &str = "refs/hookd/";
/// Attempts at moving the checkpoint ref when others move it too, and the
/// pause between them (a lock left by a crash goes stale meanwhile).
const REF_ATTEMPTS: usize = 40;
const REF_RETRY_PAUSE: std::time::Duration = std::time::Duration::from_millis(100);

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("{path} is not in a git repository")]
    NotARepository { path: String },
    #[error("{path} is a bare repository: there is no working tree to checkpoint")]
    Bare { path: String },
    #[error(
        "the git repository of {path} has its work tree elsewhere ({workdir}): hookd leaves it alone; no checkpoint was made"
    )]
    WorkTreeElsewhere { path: String, workdir: String },
    #[error(
        "hookd leaves the git repository of {project} alone: {path} ({named_by}) is {kind}, and reading it could hang hookd; no checkpoint was made. Replace it with a regular file or remove it"
    )]
    UnsafeFile {
        project: String,
        path: String,
        named_by: String,
        kind: &'static str,
    },
    #[error(
        "hookd leaves the git repository of {project} alone: {path} {what}, more than hookd looks through for files that could hang it; no checkpoint was made. {remedy}"
    )]
    TooBigToCheck {
        project: String,
        path: String,
        what: String,
        remedy: &'static str,
    },
    #[error(
        "git work for {path} took longer than {secs} s and was given up: hookd went on without waiting for it (it may still finish) and skips git there until it returns (a file in the repository may be a FIFO or on a stalled network file system)"
    )]
    TimedOut { path: String, secs: f64 },
    #[error(
        "git work for {path} is still stuck from an earlier call: hookd skips git there until it returns (a file in the repository may be a FIFO or on a stalled network file system)"
    )]
    Stuck { path: String },
    #[error(
        "hookd leaves the git repository of {path} alone: its .git file names {git_dir}, which is neither inside it, nor a submodule's git dir of the repository above, nor a worktree's that names it back; no checkpoint was made"
    )]
    ForeignGitDir { path: String, git_dir: String },
    #[error(
        "hookd leaves the git repository of {path} alone: its git directory {git_dir} has a commondir file naming {common_dir}, which would take its objects and refs, yet it is not a linked worktree of that repository ({common_dir}/worktrees/<name> whose gitdir file names this .git back); no checkpoint was made. If it came with the project's files (a vendored package, a tarball), remove {git_dir}/commondir or that git directory; for a worktree, run `git worktree add` from the repository"
    )]
    ForeignCommonDir {
        path: String,
        git_dir: String,
        common_dir: String,
    },
    #[error("`{0}` is not under refs/hookd/: hookd moves only refs of its own")]
    ForeignRef(String),
    #[error("cannot {op}: {source}")]
    Git {
        op: &'static str,
        source: git2::Error,
    },
    #[error("cannot {op}: {source}")]
    Io {
        op: &'static str,
        source: std::io::Error,
    },
    #[error(
        "no checkpoint or commit called `{0}` in this repository: `hookctl checkpoints` lists its checkpoints"
    )]
    UnknownRevision(String),
    #[error(
        "restoring would overwrite uncommitted changes in: {}; commit or stash them first, or pass --force",
        .0.join(", ")
    )]
    WouldOverwrite(Vec<String>),
    #[error("refusing to restore `{path}`: {why}")]
    UnsafePath { path: String, why: String },
    #[error(
        "`{path}` is not in checkpoint {rev} (hookd took this --path from the repository's root; `hookctl checkpoint show {rev}` lists the checkpoint's files)"
    )]
    NotInCheckpoint { path: String, rev: String },
}

impl GitError {
    /// The project is not in a work tree of its own (no repository, or a
    /// bare one): there is no git step to take, and nothing is wrong.
    pub fn is_no_work_tree(&self) -> bool {
        matches!(
            self,
            GitError::NotARepository { .. } | GitError::Bare { .. }
        )
    }
}

fn git(op: &'static str) -> impl FnOnce(git2::Error) -> GitError {
    move |source| GitError::Git { op, source }
}

fn io(op: &'static str) -> impl FnOnce(std::io::Error) -> GitError {
    move |source| GitError::Io { op, source }
}

/// libgit2, as the daemon uses it. By default it checks every entry of
/// every tree it writes against the object database, type included
/// ("strict object creation"): for a snapshot that is a header read per
/// file, 40 ms of a first checkpoint of 10,000 files (the tree written
/// from hookd's index). Those entries come from an index git wrote (the
/// user's, which ours is seeded from) or from blobs add_all has just
/// written, and `git write-tree` makes the same trees from the same index.
fn setup_libgit2() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| git2::opts::strict_object_creation(false));
}

/// The repository of `project`, provided its work tree is the project's
/// own: the directory holding the `.git` that `project` lies under. A
/// repository's config (`core.worktree`) or a `.git` file can point its
/// work tree anywhere, the home directory included; hookd snapshots and
/// writes only the tree the project path names.
fn open(project: &Path) -> Result<git2::Repository, GitError> {
    #[cfg(test)]
    {
        let mut opened = TIMES_OPENED.lock().unwrap_or_else(|p| p.into_inner());
        *opened.entry(project.to_path_buf()).or_default() += 1;
    }
    setup_libgit2();
    let shown = || project.display().to_string();
    // libgit2 walks up past a directory of another user; hookd's own walk
    // stops there, and libgit2 opens nothing unless it found a work tree.
    let root = work_tree_root(project).ok_or_else(|| GitError::NotARepository { path: shown() })?;
    // libgit2 opens every file it reads as it finds it, blocking: a FIFO
    // would hold the calling thread until someone writes to it.
    special_files::refuse_before_open(project)?;
    // Not `Repository::discover`: it opens the git dir it found as if by
    // path, forgetting the `.git` file that led there, and takes the git
    // dir's parent for the work tree.
    let repo = git2::Repository::open_ext(
        project,
        git2::RepositoryOpenFlags::CROSS_FS,
        std::iter::empty::<&OsStr>(),
    )
    .map_err(|_| GitError::NotARepository { path: shown() })?;
    if repo.is_bare() {
        return Err(GitError::Bare { path: shown() });
    }
    // hookd keeps its index and refs in the git dir: never from a path inside one.
    if project_is_inside_git_dir(project) {
        return Err(GitError::NotARepository { path: shown() });
    }
    let workdir = repo
        .workdir()
        .ok_or_else(|| GitError::Bare { path: shown() })?;
    if workdir.canonicalize().ok() != Some(root) {
        return Err(GitError::WorkTreeElsewhere {
            path: shown(),
            workdir: workdir.display().to_string(),
        });
    }
    special_files::refuse_after_open(project, &repo)?;
    Ok(repo)
}

/// How many times each project's repository was opened: what a save costs.
#[cfg(test)]
static TIMES_OPENED: Mutex<std::collections::BTreeMap<PathBuf, usize>> =
    Mutex::new(std::collections::BTreeMap::new());

#[cfg(test)]
pub fn times_opened(project: &Path) -> usize {
    let opened = TIMES_OPENED.lock().unwrap_or_else(|p| p.into_inner());
    opened.get(project).copied().unwrap_or(0)
}

/// The root of the work tree `project` lies in, found from its canonical
/// path by the walk that finds a session's project: never above a
/// directory of another owner, never through a `.git` symlink.
fn work_tree_root(project: &Path) -> Option<PathBuf> {
    protocol::project::work_tree_root(&project.canonicalize().ok()?)
}

/// Whether `path` is, or lies inside, a git directory: a `.git` (any case)
/// or a directory git would take for one (a bare repository, a separate
/// git dir). Nothing of hookd's belongs there.
pub fn project_is_inside_git_dir(path: &Path) -> bool {
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    if path
        .components()
        .any(|c| c.as_os_str().as_bytes().eq_ignore_ascii_case(b".git"))
    {
        return true;
    }
    // Up to the work tree the path is in (a directory holding `.git`):
    // a work tree's own files may look like a git dir's.
    for dir in path.ancestors() {
        if dir.join(".git").symlink_metadata().is_ok() {
            return false;
        }
        if is_git_dir(dir) {
            return true;
        }
    }
    false
}

/// What git itself looks for in a git directory.
fn is_git_dir(dir: &Path) -> bool {
    dir.join("HEAD").is_file() && dir.join("objects").is_dir() && dir.join("refs").is_dir()
}

/// A repository opened once and handed to each git step of a series (one
/// save's: snapshot, changes, checkpoint, file list, history), so that its
/// checks and its config are read once. Cloning shares it. Each step runs
/// on [`Repositories::bounded`]'s thread; the lock is only there because
/// that thread is not the caller's.
#[derive(Clone)]
pub struct OpenRepository {
    project: PathBuf,
    opened: std::sync::Arc<Mutex<Opened>>,
}

struct Opened {
    repo: git2::Repository,
    /// A snapshot bound hookd's private index to the repository: what
    /// reads the user's index (the file list, statuses) binds it back first.
    index_is_hookds: bool,
}

impl std::fmt::Debug for OpenRepository {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenRepository")
            .field("project", &self.project)
            .finish_non_exhaustive()
    }
}

impl OpenRepository {
    /// The repository of `project`, on the caller's thread (see
    /// [`Repositories::open`] for one under a deadline).
    pub fn open(project: &Path) -> Result<OpenRepository, GitError> {
        Ok(OpenRepository {
            project: project.to_path_buf(),
            opened: std::sync::Arc::new(Mutex::new(Opened {
                repo: open(project)?,
                index_is_hookds: false,
            })),
        })
    }

    /// The project it was opened for.
    pub fn project(&self) -> &Path {
        &self.project
    }

    fn opened(&self) -> std::sync::MutexGuard<'_, Opened> {
        self.opened.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The repository with the user's index bound; `None` when that index
    /// cannot be read again (hookd's must not pass for it).
    fn with_users_index(&self) -> Option<std::sync::MutexGuard<'_, Opened>> {
        let mut opened = self.opened();
        if opened.index_is_hookds {
            let mut users = git2::Index::open(&opened.repo.path().join("index")).ok()?;
            opened.repo.set_index(&mut users).ok()?;
            opened.index_is_hookds = false;
        }
        Some(opened)
    }

    /// See [`snapshot`].
    pub fn snapshot(
        &self,
        repositories: &Repositories,
        opts: &SnapshotOptions,
    ) -> Result<Snapshot, GitError> {
        let mut opened = self.opened();
        opened.index_is_hookds = true;
        snapshot_of(repositories, &opened.repo, &self.project, opts)
    }

    /// See [`changes`].
    pub fn changes(
        &self,
        repositories: &Repositories,
        snapshot: &Snapshot,
    ) -> Result<Vec<FileChange>, GitError> {
        changes_cached(repositories, snapshot, || {
            changes_uncached(&self.opened().repo, snapshot)
        })
    }

    /// See [`versions`].
    pub fn versions(
        &self,
        snapshot: &Snapshot,
        paths: &[&str],
        max_bytes: u64,
    ) -> Result<Vec<Versions>, GitError> {
        versions_of(&self.opened().repo, snapshot, paths, max_bytes)
    }

    /// See [`commit_checkpoint`].
    pub fn commit_checkpoint(
        &self,
        snapshot: &Snapshot,
        meta: &CheckpointMeta,
        ref_prefix: &str,
    ) -> Result<CommitOutcome, GitError> {
        commit_checkpoint_of(&self.opened().repo, snapshot, meta, ref_prefix)
    }

    /// See [`project_files`].
    pub fn project_files(&self, untracked: bool) -> Option<Vec<String>> {
        project_files_of(&self.with_users_index()?.repo, &self.project, untracked)
    }

    /// See [`last_changes`].
    pub fn last_changes(
        &self,
        paths: &[String],
        changed: Option<&[String]>,
        now_ms: u64,
        window_ms: u64,
    ) -> Option<HashMap<String, u64>> {
        let opened = self.with_users_index()?;
        last_changes_of(
            &opened.repo,
            &self.project,
            paths,
            changed,
            now_ms,
            window_ms,
        )
    }
}

/// What hookd keeps per repository between snapshots, owned by whoever
/// snapshots (the engine's [`crate::resources::Resources`]). Cloning it
/// shares the same locks, cache and stuck list.
#[derive(Debug, Default, Clone)]
pub struct Repositories(std::sync::Arc<Shared>);

#[derive(Debug, Default)]
struct Shared {
    /// One lock per git dir: our private index is not for two writers.
    index_locks: PathLocks,
    changes: Mutex<ChangesCache>,
    work_trees: Mutex<WorkTrees>,
    /// Signalled whenever a work tree's git thread returns.
    work_tree_freed: std::sync::Condvar,
}

/// Which work trees have a thread doing git work. There is at most one per
/// work tree: when a read blocks for good, one thread stays stuck on it,
/// however many callers came at once.
#[derive(Debug, Default)]
struct WorkTrees {
    busy: HashSet<PathBuf>,
    /// Those whose thread outlived its caller's deadline and has not returned.
    stuck: HashSet<PathBuf>,
}

/// How long git work on behalf of one project may take before hookd gives
/// it up (a snapshot of a large tree takes a second or two the first time).
/// Not derived from a hook's budget: the daemon does not know when hookctl's
/// timer ends (`--timeout-ms` can change it). The hooks whose answers wait
/// on git, SessionStart and PreCompact, have 10 s and 30 s by default, and
/// once a deadline passes the work tree is skipped at once, so an answer
/// pays at most one. A shorter budget ends in hookctl's silent exit, which
/// never breaks the agent.
pub const GIT_DEADLINE: std::time::Duration = std::time::Duration::from_secs(5);

impl Repositories {
    /// Runs `work` (git work for `project`) on a thread of its own and waits
    /// for it at most `deadline`. Reading a repository can block for good (a
    /// FIFO hookd did not foresee, a dead network file system), and the
    /// caller may hold the project's lock: past the deadline the caller gets
    /// [`GitError::TimedOut`] and goes on without git. A work tree has one
    /// such thread at a time (a second caller waits for it, within its own
    /// deadline); one left behind is marked stuck, and until it returns
    /// every git call for that work tree fails at once with
    /// [`GitError::Stuck`], so hooks do not pile up threads on it.
    pub fn bounded<T: Send + 'static>(
        &self,
        project: &Path,
        deadline: std::time::Duration,
        work: impl FnOnce(Repositories) -> Result<T, GitError> + Send + 'static,
    ) -> Result<T, GitError> {
        let started = std::time::Instant::now();
        let key = work_tree_root(project).unwrap_or_else(|| project.to_path_buf());
        let shown = || project.display().to_string();
        let timed_out = || GitError::TimedOut {
            path: shown(),
            secs: deadline.as_secs_f64(),
        };
        let mut trees = self.work_trees();
        loop {
            if trees.stuck.contains(&key) {
                return Err(GitError::Stuck { path: shown() });
            }
            if trees.busy.insert(key.clone()) {
                break;
            }
            let left = deadline.checked_sub(started.elapsed());
            let Some(left) = left.filter(|left| !left.is_zero()) else {
                return Err(timed_out());
            };
            trees = self
                .0
                .work_tree_freed
                .wait_timeout(trees, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        drop(trees);
        let (tx, rx) = std::sync::mpsc::channel();
        let (shared, thread_key) = (self.clone(), key.clone());
        let spawned = std::thread::Builder::new()
            .name("hookd-git".into())
            .spawn(move || {
                // Frees the work tree however the work ends, a panic included.
                let _free = FreeWorkTree {
                    repositories: shared.clone(),
                    key: thread_key,
                };
                // Sent before the lock is taken: a caller that gives up
                // under the lock sees the answer or leaves the mark for us.
                let _ = tx.send(work(shared));
            });
        if let Err(e) = spawned {
            self.work_trees().busy.remove(&key);
            self.0.work_tree_freed.notify_all();
            return Err(GitError::Io {
                op: "start a thread for git work",
                source: e,
            });
        }
        let left = deadline.saturating_sub(started.elapsed());
        match rx.recv_timeout(left) {
            Ok(result) => result,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Err(GitError::Git {
                op: "finish git work",
                source: git2::Error::from_str("the thread doing it ended without an answer"),
            }),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                let mut trees = self.work_trees();
                // An answer that came while we took the lock still counts.
                if let Ok(result) = rx.try_recv() {
                    return result;
                }
                trees.stuck.insert(key.clone());
                drop(trees);
                // Callers waiting for this work tree need not wait longer.
                self.0.work_tree_freed.notify_all();
                tracing::warn!(work_tree = %key.display(), "git work for this project outlived its deadline; git is skipped there until it returns");
                Err(timed_out())
            }
        }
    }

    /// Opens the repository of `project` under `deadline`, for the steps
    /// that follow to share.
    pub fn open(
        &self,
        project: &Path,
        deadline: std::time::Duration,
    ) -> Result<OpenRepository, GitError> {
        let at = project.to_path_buf();
        self.bounded(project, deadline, move |_| OpenRepository::open(&at))
    }

    /// Whether git work for the work tree holding `project` is stuck.
    #[cfg(test)]
    pub fn is_stuck(&self, project: &Path) -> bool {
        let key = work_tree_root(project).unwrap_or_else(|| project.to_path_buf());
        self.work_trees().stuck.contains(&key)
    }

    fn work_trees(&self) -> std::sync::MutexGuard<'_, WorkTrees> {
        self.0.work_trees.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Clears a work tree's busy and stuck marks when its git thread ends.
struct FreeWorkTree {
    repositories: Repositories,
    key: PathBuf,
}

impl Drop for FreeWorkTree {
    fn drop(&mut self) {
        let mut trees = self.repositories.work_trees();
        trees.busy.remove(&self.key);
        if trees.stuck.remove(&self.key) {
            tracing::info!(work_tree = %self.key.display(), "git work given up earlier has returned");
        }
        drop(trees);
        self.repositories.0.work_tree_freed.notify_all();
    }
}

/// Adds `pattern` to the repository's `info/exclude` unless it is there.
/// Returns whether the file changed. libgit2 is not used: opening a
/// repository reads its config and what that includes, and this runs
/// without a deadline (when `.workflow/` is first made, from any thread).
/// The git directory is found as git finds it (the `.git` directory, or the
/// one a `.git` file names, and its `commondir`, followed only from a
/// linked worktree), each file read without blocking.
pub fn exclude(project: &Path, pattern: &str) -> Result<bool, GitError> {
    let not_a_repository = || GitError::NotARepository {
        path: project.display().to_string(),
    };
    let root = work_tree_root(project).ok_or_else(not_a_repository)?;
    let dotgit = root.join(".git");
    let git_dir = special_files::git_dir_of(&dotgit, &root).ok_or_else(not_a_repository)?;
    special_files::ours(project, &dotgit, &root, &git_dir).map_err(|e| match e {
        GitError::ForeignGitDir { .. } => not_a_repository(),
        other => other,
    })?;
    // Worktrees share the main repository's info/exclude (their own git
    // dir has no objects/ or refs/). Its `info/` may be a planted symlink
    // like anything else: reached without following links.
    let common = special_files::common_dir(&git_dir);
    if !git_dir.join("HEAD").is_file() || !is_git_dir(&common) {
        return Err(not_a_repository());
    }
    let (info, _) = crate::project_fs::Dir::open(&common)
        .and_then(|git_dir| git_dir.create_dir("info"))
        .map_err(io("open .git/info"))?;
    let current = info
        .read("exclude", 1024 * 1024)
        .map_err(io("read .git/info/exclude"))?
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    if current.lines().any(|l| l.trim() == pattern) {
        return Ok(false);
    }
    let mut text = current;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!(
        "# hookd keeps its per-project state here\n{pattern}\n"
    ));
    info.write_atomic("exclude", text.as_bytes())
        .map_err(io("write .git/info/exclude"))?;
    Ok(true)
}

#[derive(Debug, Clone)]
pub struct SnapshotOptions {
    pub include_untracked: bool,
    pub max_file_bytes: u64,
}

/// The working tree as a tree object, and where the repository stands.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub tree: git2::Oid,
    pub head: Option<git2::Oid>,
    pub branch: String,
    /// `clean`, `merge`, `rebase`, ...
    pub state: String,
    /// Files of the working tree left out, and why.
    pub skipped: Vec<Skipped>,
    pub workdir: PathBuf,
}

/// A file of the working tree a snapshot leaves out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub path: String,
    pub reason: SkipReason,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    /// Untracked and over `max_file_bytes`: its size.
    TooLarge(u64),
    /// Its `filter` attribute names a driver (git-crypt, git-lfs): git
    /// stores what the driver makes of the file, which hookd cannot run,
    /// so the working tree's bytes (a secret in clear) are never stored.
    /// A tracked file keeps the blob of the user's index.
    Filter(String),
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.reason {
            SkipReason::TooLarge(bytes) => {
                write!(f, "{} ({bytes} bytes, over the size limit)", self.path)
            }
            SkipReason::Filter(driver) => write!(
                f,
                "{} (filter {driver}: its working-tree bytes are not stored)",
                self.path
            ),
        }
    }
}

/// Writes the working tree (tracked files, and untracked ones that are not
/// ignored and not too large) as a tree, through hookd's private index.
pub fn snapshot(
    repositories: &Repositories,
    project: &Path,
    opts: &SnapshotOptions,
) -> Result<Snapshot, GitError> {
    OpenRepository::open(project)?.snapshot(repositories, opts)
}

fn snapshot_of(
    repositories: &Repositories,
    repo: &git2::Repository,
    project: &Path,
    opts: &SnapshotOptions,
) -> Result<Snapshot, GitError> {
    let lock = repositories.0.index_locks.for_path(repo.path());
    let _held = lock.lock().unwrap_or_else(|p| p.into_inner());
    let workdir = repo
        .workdir()
        .ok_or_else(|| GitError::Bare {
            path: project.display().to_string(),
        })?
        .to_path_buf();
    let mut index = private_index(repo)?;
    repo.set_index(&mut index)
        .map_err(git("use hookd's index"))?;
    let tracked = tracked_paths(repo);
    special_files::refuse_in_work_tree(project, &workdir, tracked.iter().map(Vec::as_slice))?;

    // Untracked files we hold from earlier snapshots go when they are now
    // ignored, too large, or unwanted.
    let stale: Vec<PathBuf> = index
        .iter()
        .filter(|e| !tracked.contains(&e.path))
        .map(|e| PathBuf::from(OsStr::from_bytes(&e.path)))
        .filter(|p| {
            !opts.include_untracked
                || repo.is_path_ignored(p).unwrap_or(false)
                || file_len(&workdir.join(p)).is_some_and(|len| len > opts.max_file_bytes)
        })
        .collect();
    for path in &stale {
        index
            .remove_path(path)
            .map_err(git("drop a file from hookd's index"))?;
    }

    let mut skipped = Vec::new();
    // Paths whose filter driver keeps them out, and the drivers there are
    // (read once, when the first path to add shows up).
    let mut filtered = Vec::new();
    let mut drivers = None;
    // How many paths the index takes in or lets go of.
    let mut applied = stale.len();
    let mut decide = |path: &Path, _spec: &[u8]| -> i32 {
        let is_tracked = tracked.contains(path.as_os_str().as_bytes());
        let take = if !is_tracked && !opts.include_untracked {
            false
        } else if let Some(driver) = filter_driver(
            repo,
            drivers.get_or_insert_with(|| configured_filters(repo)),
            &workdir,
            path,
        ) {
            skipped.push(Skipped {
                path: path.to_string_lossy().into_owned(),
                reason: SkipReason::Filter(driver),
            });
            filtered.push(path.to_path_buf());
            false
        } else if is_tracked {
            true
        } else {
            match file_len(&workdir.join(path)) {
                Some(len) if len > opts.max_file_bytes => {
                    skipped.push(Skipped {
                        path: path.to_string_lossy().into_owned(),
                        reason: SkipReason::TooLarge(len),
                    });
                    false
                }
                _ => true,
            }
        };
        applied += usize::from(take);
        if take { 0 } else { 1 }
    };
    // One pass over the working tree. add_all diffs the index against the
    // working tree with untracked files included, and applies every
    // difference: modified and new files are added, deleted ones removed
    // (so no update_all pass is needed after it).
    index
        .add_all(["*"], git2::IndexAddOption::DEFAULT, Some(&mut decide))
        .map_err(git("add the working tree to hookd's index"))?;
    if !filtered.is_empty() {
        applied += keep_users_blobs(repo, &mut index, &filtered)?;
    }
    // The submodule machinery reads .gitmodules and the config: only when
    // there is a submodule.
    if index.iter().any(|e| e.mode == GITLINK_MODE) {
        applied += record_submodules(repo, &mut index)?;
    }
    let tree = index.write_tree().map_err(git("write the snapshot tree"))?;
    // Unchanged since the last snapshot: the index on disk is already this one.
    // The index is only our cache: failing to keep it costs speed next time, nothing else.
    if applied > 0
        && let Err(e) = index.write()
    {
        tracing::warn!(error = %e, "cannot save hookd's index; the next snapshot hashes more files");
    }

    let (branch, head) = branch_and_head(repo)?;
    Ok(Snapshot {
        tree,
        head,
        branch,
        state: state_name(repo.state()).into(),
        skipped,
        workdir,
    })
}

/// The filter drivers `git add` runs: those with a `clean` or `process`
/// command configured. Without one git stores a file's bytes as they are,
/// and so may hookd.
fn configured_filters(repo: &git2::Repository) -> HashSet<Vec<u8>> {
    let mut names = HashSet::new();
    let Ok(config) = repo.config() else {
        return names;
    };
    if let Ok(entries) = config.entries(Some(r"^filter\..+\.(clean|process)$")) {
        let _ = entries.for_each(|entry| {
            // filter.<driver>.clean
            let name = entry.name_bytes();
            if let Some(rest) = name.strip_prefix(b"filter.")
                && let Some(dot) = rest.iter().rposition(|&b| b == b'.')
            {
                names.insert(rest[..dot].to_vec());
            }
        });
    }
    names
}

/// The filter driver git would run on `path` (relative to the work tree)
/// when adding it, if any of `drivers`. Only the paths add_all is about to
/// add are asked, and none when no driver is configured, which keeps the
/// snapshot as cheap as before. Built-in text and eol conversions are not
/// drivers; a symlink or a deleted file has no bytes to keep out.
fn filter_driver(
    repo: &git2::Repository,
    drivers: &HashSet<Vec<u8>>,
    workdir: &Path,
    path: &Path,
) -> Option<String> {
    if drivers.is_empty() {
        return None;
    }
    let value = repo
        .get_attr_bytes(path, "filter", git2::AttrCheckFlags::FILE_THEN_INDEX)
        .ok()??;
    let driver = match git2::AttrValue::from_bytes(Some(value)) {
        git2::AttrValue::String(name) => name.as_bytes(),
        git2::AttrValue::Bytes(name) => name,
        _ => return None,
    };
    (drivers.contains(driver) && file_len(&workdir.join(path)).is_some())
        .then(|| String::from_utf8_lossy(driver).into_owned())
}

/// Puts back, for each of `paths`, the entry of the user's index (the blob
/// git made through the filter), or takes the path out when the user does
/// not track it: an earlier snapshot may have taken its bytes. Returns how
/// many entries changed.
fn keep_users_blobs(
    repo: &git2::Repository,
    index: &mut git2::Index,
    paths: &[PathBuf],
) -> Result<usize, GitError> {
    let users = git2::Index::open(&repo.path().join("index")).ok();
    let mut changed = 0;
    for path in paths {
        let theirs = users.as_ref().and_then(|u| u.get_path(path, 0));
        let ours = index.get_path(path, 0).map(|e| e.id);
        match theirs {
            Some(entry) if ours != Some(entry.id) => {
                index
                    .add(&entry)
                    .map_err(git("keep a filtered file's blob"))?;
                changed += 1;
            }
            None if ours.is_some() => {
                index
                    .remove_path(path)
                    .map_err(git("drop a filtered file from hookd's index"))?;
                changed += 1;
            }
            _ => {}
        }
    }
    Ok(changed)
}

/// hookd's own index for this working tree, seeded from the user's index the
/// first time (so unchanged files need not be hashed).
fn private_index(repo: &git2::Repository) -> Result<git2::Index, GitError> {
    // A git directory that came with the repository (an archive, say) may
    // hold planted links: hookd's own files are reached without following any.
    let git_dir =
        crate::project_fs::Dir::open(repo.path()).map_err(io("open the git directory"))?;
    let (own, _) = git_dir
        .create_dir("hookd")
        .map_err(io("create .git/hookd"))?;
    for name in ["index", "index.lock"] {
        if own.exists(name) && !own.is_file(name) {
            own.remove(name)
                .map_err(io("remove a link in .git/hookd"))?;
        }
    }
    let dir = repo.path().join("hookd");
    let path = dir.join("index");
    if !own.is_file("index")
        && let Ok(Some(bytes)) = git_dir.read("index", MAX_INDEX_BYTES)
    {
        own.write_atomic("index", &bytes)
            .map_err(io("seed hookd's index"))?;
    }
    clear_stale_lock(&dir.join("index.lock"));
    match git2::Index::open(&path) {
        Ok(index) => Ok(index),
        Err(_) => {
            // Ours, and only a cache: start it again.
            let _ = std::fs::remove_file(&path);
            git2::Index::open(&path).map_err(git("create hookd's index"))
        }
    }
}

/// The largest user index copied to seed hookd's own.
const MAX_INDEX_BYTES: u64 = 512 * 1024 * 1024;

/// Refuses to move `reference` when a directory on its way (`refs/`,
/// `refs/hookd/`, ...) is a link: the ref and its lock would be written
/// wherever it points.
fn refs_dir_is_real(repo: &git2::Repository, reference: &str) -> Result<(), GitError> {
    let Some(parent) = Path::new(reference).parent() else {
        return Ok(());
    };
    let refused = |why: String| GitError::UnsafePath {
        path: reference.to_owned(),
        why,
    };
    // Refs live in the common git directory (shared by linked worktrees).
    let git_dir =
        crate::project_fs::Dir::open(repo.commondir()).map_err(|e| refused(e.to_string()))?;
    match git_dir.open_path(parent) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(refused(e.to_string())),
    }
}

/// A lock file on one of hookd's own files (its index, its refs) older than
/// this was left by a daemon that died holding it.
/// A write holds these locks for milliseconds.
const STALE_LOCK_AGE: std::time::Duration = std::time::Duration::from_secs(2);

/// Removes such a lock. Only ever called on hookd's own files, never on the user's.
fn clear_stale_lock(lock: &Path) {
    let old = std::fs::metadata(lock)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age >= STALE_LOCK_AGE);
    if old && std::fs::remove_file(lock).is_ok() {
        tracing::warn!(lock = %lock.display(), "removed a stale lock left by a crashed hookd");
    }
}

/// Paths the user tracks: the entries of their index (read, never written).
fn tracked_paths(repo: &git2::Repository) -> HashSet<Vec<u8>> {
    let Ok(index) = git2::Index::open(&repo.path().join("index")) else {
        return HashSet::new();
    };
    index.iter().map(|e| e.path).collect()
}

fn file_len(path: &Path) -> Option<u64> {
    std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len())
}

/// The mode of a submodule's entry in an index or tree.
const GITLINK_MODE: u32 = 0o160000;

/// A submodule is recorded at the commit its working tree has checked out.
/// Returns how many entries moved.
fn record_submodules(repo: &git2::Repository, index: &mut git2::Index) -> Result<usize, GitError> {
    let submodules = repo.submodules().map_err(git("list submodules"))?;
    let mut moved = 0;
    for sm in submodules {
        let Some(id) = sm.workdir_id() else { continue };
        let path = sm.path().as_os_str().as_bytes().to_vec();
        let Some(mut entry) = index.get_path(sm.path(), 0) else {
            continue;
        };
        if entry.id != id {
            entry.id = id;
            entry.path = path;
            index.add(&entry).map_err(git("record a submodule"))?;
            moved += 1;
        }
    }
    Ok(moved)
}

/// The branch HEAD is on (`detached` when it is on none) and its commit.
fn branch_and_head(repo: &git2::Repository) -> Result<(String, Option<git2::Oid>), GitError> {
    match repo.head() {
        Ok(head) if head.is_branch() => {
            Ok((head.shorthand().unwrap_or("HEAD").to_owned(), head.target()))
        }
        Ok(head) => Ok(("detached".to_owned(), head.target())),
        Err(e) if e.code() == git2::ErrorCode::UnbornBranch => {
            let head = repo.find_reference("HEAD").map_err(git("read HEAD"))?;
            let target = head
                .symbolic_target()
                .ok()
                .flatten()
                .unwrap_or("refs/heads/main");
            Ok((target.trim_start_matches("refs/heads/").to_owned(), None))
        }
        Err(e) => Err(GitError::Git {
            op: "read HEAD",
            source: e,
        }),
    }
}

fn state_name(state: git2::RepositoryState) -> &'static str {
    use git2::RepositoryState as S;
    match state {
        S::Clean => "clean",
        S::Merge => "merge",
        S::Revert | S::RevertSequence => "revert",
        S::CherryPick | S::CherryPickSequence => "cherry-pick",
        S::Bisect => "bisect",
        S::Rebase | S::RebaseInteractive | S::RebaseMerge => "rebase",
        S::ApplyMailbox | S::ApplyMailboxOrRebase => "am",
    }
}

/// The last answer of [`changes`] per working tree, with the HEAD and tree
/// it is for. The saves around one compaction (80%, 90%, 95%, PreCompact)
/// often see the same tree, and the line counts are the dearest part of a
/// capture after the snapshot itself.
type ChangesCache = HashMap<PathBuf, (Option<git2::Oid>, git2::Oid, Vec<FileChange>)>;
/// Working trees whose last changes are kept.
const CHANGES_KEPT: usize = 16;

/// What changed between HEAD and the snapshot, with line counts.
pub fn changes(
    repositories: &Repositories,
    project: &Path,
    snapshot: &Snapshot,
) -> Result<Vec<FileChange>, GitError> {
    changes_cached(repositories, snapshot, || {
        changes_uncached(&open(project)?, snapshot)
    })
}

/// The cached changes for the snapshot's tree, or those `find` finds.
fn changes_cached(
    repositories: &Repositories,
    snapshot: &Snapshot,
    find: impl FnOnce() -> Result<Vec<FileChange>, GitError>,
) -> Result<Vec<FileChange>, GitError> {
    if let Some((head, tree, list)) = repositories
        .0
        .changes
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&snapshot.workdir)
        && *head == snapshot.head
        && *tree == snapshot.tree
    {
        return Ok(list.clone());
    }
    let list = find()?;
    let mut cache = repositories
        .0
        .changes
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if cache.len() >= CHANGES_KEPT {
        cache.clear();
    }
    cache.insert(
        snapshot.workdir.clone(),
        (snapshot.head, snapshot.tree, list.clone()),
    );
    Ok(list)
}

fn changes_uncached(
    repo: &git2::Repository,
    snapshot: &Snapshot,
) -> Result<Vec<FileChange>, GitError> {
    let (base, tree) = trees_of(repo, snapshot)?;
    diff_trees(repo, base.as_ref(), &tree, true)
}

/// HEAD's tree (none in a repository with no commit yet) and the snapshot's.
fn trees_of<'r>(
    repo: &'r git2::Repository,
    snapshot: &Snapshot,
) -> Result<(Option<git2::Tree<'r>>, git2::Tree<'r>), GitError> {
    let base = match snapshot.head {
        Some(head) => Some(
            repo.find_commit(head)
                .and_then(|c| c.tree())
                .map_err(git("read HEAD's tree"))?,
        ),
        None => None,
    };
    let tree = repo
        .find_tree(snapshot.tree)
        .map_err(git("read the snapshot"))?;
    Ok((base, tree))
}

fn diff_trees(
    repo: &git2::Repository,
    old: Option<&git2::Tree>,
    new: &git2::Tree,
    line_stats: bool,
) -> Result<Vec<FileChange>, GitError> {
    let mut opts = git2::DiffOptions::new();
    opts.include_typechange(true);
    let mut diff = repo
        .diff_tree_to_tree(old, Some(new), Some(&mut opts))
        .map_err(git("diff"))?;
    diff.find_similar(Some(git2::DiffFindOptions::new().renames(true)))
        .map_err(git("find renames"))?;
    let mut out = Vec::new();
    for (i, delta) in diff.deltas().enumerate() {
        let path_of = |f: git2::DiffFile| {
            f.path()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        let path = if delta.status() == git2::Delta::Deleted {
            path_of(delta.old_file())
        } else {
            path_of(delta.new_file())
        };
        let action = match delta.status() {
            git2::Delta::Added | git2::Delta::Copied | git2::Delta::Untracked => "created",
            git2::Delta::Deleted => "deleted",
            git2::Delta::Renamed => "renamed",
            git2::Delta::Typechange => "type changed",
            _ => "modified",
        };
        let stats = if line_stats && i < MAX_LINE_STATS {
            git2::Patch::from_diff(&diff, i)
                .ok()
                .flatten()
                .filter(|p| !p.delta().flags().is_binary())
                .and_then(|p| p.line_stats().ok())
                .map(|(_, added, removed)| (added, removed))
        } else {
            None
        };
        let counts = match stats {
            Some((added, removed)) => format!("+{added} −{removed} lines"),
            None if line_stats && i < MAX_LINE_STATS => "binary".to_owned(),
            None => "changed".to_owned(),
        };
        let summary = match action {
            "renamed" => format!("renamed from {} ({counts})", path_of(delta.old_file())),
            _ => counts,
        };
        out.push(FileChange {
            path,
            action: action.to_owned(),
            added: stats.map(|s| s.0),
            removed: stats.map(|s| s.1),
            summary,
        });
    }
    Ok(out)
}

/// A file's text before (at HEAD) and after (in the snapshot); `None` for a side it cannot be read from.
pub type Versions = (Option<String>, Option<String>);

/// The text of each path at HEAD and in the snapshot, from git's objects
/// (never the working tree): `None` where it is absent, not a regular
/// file, not UTF-8 or over `max_bytes`.
pub fn versions(
    project: &Path,
    snapshot: &Snapshot,
    paths: &[&str],
    max_bytes: u64,
) -> Result<Vec<Versions>, GitError> {
    versions_of(&open(project)?, snapshot, paths, max_bytes)
}

fn versions_of(
    repo: &git2::Repository,
    snapshot: &Snapshot,
    paths: &[&str],
    max_bytes: u64,
) -> Result<Vec<Versions>, GitError> {
    let (base, tree) = trees_of(repo, snapshot)?;
    let text_in = |tree: &git2::Tree, path: &str| -> Option<String> {
        let entry = tree.get_path(Path::new(path)).ok()?;
        // Regular files only (0o100644, 0o100755): not links, not submodules.
        if entry.filemode() & 0o170000 != 0o100000 {
            return None;
        }
        let blob = repo.find_blob(entry.id()).ok()?;
        if blob.size() as u64 > max_bytes || blob.is_binary() {
            return None;
        }
        String::from_utf8(blob.content().to_vec()).ok()
    };
    Ok(paths
        .iter()
        .map(|path| {
            (
                base.as_ref().and_then(|b| text_in(b, path)),
                text_in(&tree, path),
            )
        })
        .collect())
}

/// What goes into a checkpoint commit's trailers.
#[derive(Debug, Clone, Default)]
pub struct CheckpointMeta {
    pub session: Option<String>,
    pub trigger: String,
    pub tokens: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitOutcome {
    Created {
        sha: String,
        reference: String,
    },
    /// The tree is the same as the last checkpoint's: no new commit.
    Unchanged {
        sha: String,
        reference: String,
    },
}

/// Commits the snapshot onto `<ref_prefix>/<branch>`. The parent is the
/// previous checkpoint (and HEAD too, when HEAD moved since), or HEAD.
pub fn commit_checkpoint(
    project: &Path,
    snapshot: &Snapshot,
    meta: &CheckpointMeta,
    ref_prefix: &str,
) -> Result<CommitOutcome, GitError> {
    commit_checkpoint_of(&open(project)?, snapshot, meta, ref_prefix)
}

fn commit_checkpoint_of(
    repo: &git2::Repository,
    snapshot: &Snapshot,
    meta: &CheckpointMeta,
    ref_prefix: &str,
) -> Result<CommitOutcome, GitError> {
    let reference = format!("{ref_prefix}/{}", snapshot.branch);
    if !git2::Reference::is_valid_name(&reference) {
        return Err(GitError::Git {
            op: "name the checkpoint ref",
            source: git2::Error::from_str(&format!("`{reference}` is not a valid ref name")),
        });
    }
    // Whatever the config says, never a branch, a tag or HEAD.
    if !reference.starts_with(OWN_REFS) {
        return Err(GitError::ForeignRef(reference));
    }
    let tree = repo
        .find_tree(snapshot.tree)
        .map_err(git("read the snapshot"))?;
    let head = match snapshot.head {
        Some(id) => Some(repo.find_commit(id).map_err(git("read HEAD"))?),
        None => None,
    };
    let message = checkpoint_message(meta, snapshot);
    let signature = repo
        .signature()
        .or_else(|_| git2::Signature::now("hookd", "hookd@localhost"))
        .map_err(git("make a signature"))?;
    for _ in 0..REF_ATTEMPTS {
        let previous = repo
            .find_reference(&reference)
            .ok()
            .and_then(|r| r.peel_to_commit().ok());
        if let Some(p) = &previous
            && p.tree_id() == snapshot.tree
        {
            return Ok(CommitOutcome::Unchanged {
                sha: p.id().to_string(),
                reference,
            });
        }
        let mut parents: Vec<&git2::Commit> = Vec::new();
        if let Some(p) = &previous {
            parents.push(p);
        }
        if let Some(h) = &head {
            let covered = previous.as_ref().is_some_and(|p| {
                p.id() == h.id() || repo.graph_descendant_of(p.id(), h.id()).unwrap_or(false)
            });
            if !covered {
                parents.push(h);
            }
        }
        let oid = repo
            .commit(None, &signature, &signature, &message, &tree, &parents)
            .map_err(git("write the checkpoint commit"))?;
        crate::fault::pause("before the ref moves");
        refs_dir_is_real(repo, &reference)?;
        clear_stale_lock(&repo.path().join(format!("{reference}.lock")));
        // Compare-and-swap, creation included: the zero id means "must not exist yet".
        // (libgit2 checks `force = false` before it takes the lock, so two
        // first checkpoints could both pass that check; the comparison is made
        // under the lock.)
        let expected = previous.as_ref().map_or(git2::Oid::ZERO_SHA1, |p| p.id());
        let moved = repo.reference_matching(&reference, oid, true, expected, "hookd: checkpoint");
        match moved {
            Ok(_) => {
                return Ok(CommitOutcome::Created {
                    sha: oid.to_string(),
                    reference,
                });
            }
            // Someone moved the ref between our read and our write: start over on top of theirs.
            Err(e)
                if matches!(
                    e.code(),
                    git2::ErrorCode::Modified | git2::ErrorCode::Exists
                ) => {}
            Err(e) if e.code() == git2::ErrorCode::Locked => std::thread::sleep(REF_RETRY_PAUSE),
            Err(e) => {
                return Err(GitError::Git {
                    op: "move the checkpoint ref",
                    source: e,
                });
            }
        }
    }
    Err(GitError::Git {
        op: "move the checkpoint ref",
        source: git2::Error::from_str("it kept moving under us; try again"),
    })
}

fn checkpoint_message(meta: &CheckpointMeta, snapshot: &Snapshot) -> String {
    let mut text = format!(
        "{CHECKPOINT_TITLE}\n\nThe working tree as it was when hookd saved the agent's state. Your branch,\nindex and working tree were not touched.\n\n"
    );
    let mut trailer = |key: &str, value: &str| {
        text.push_str(&format!("Hookd-{key}: {}\n", trailer_value(value)));
    };
    if let Some(session) = &meta.session {
        trailer("Session", session);
    }
    trailer("Trigger", &meta.trigger);
    if let Some(tokens) = &meta.tokens {
        trailer("Tokens", tokens);
    }
    trailer(
        "Base",
        &snapshot
            .head
            .map(|h| h.to_string())
            .unwrap_or_else(|| "unborn".into()),
    );
    trailer("Branch", &snapshot.branch);
    if snapshot.state != "clean" {
        trailer("Repo-State", &format!("{} in progress", snapshot.state));
    }
    for skipped in &snapshot.skipped {
        trailer("Skipped", &skipped.to_string());
    }
    text
}

/// A value as one trailer line holds it: control characters (a newline
/// above all, which would start a trailer of its own) and Unicode line
/// separators escaped. File names, branches and session ids come from
/// outside.
fn trailer_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// The trailers of a checkpoint message: read from its last paragraph only,
/// the block hookd writes, and the first of each key.
fn trailers(message: &str) -> HashMap<String, String> {
    let block = message
        .trim_end()
        .rsplit_once("\n\n")
        .map_or("", |(_, block)| block);
    let mut out = HashMap::new();
    for (key, value) in block
        .lines()
        .filter_map(|l| l.strip_prefix("Hookd-"))
        .filter_map(|l| l.split_once(": "))
    {
        out.entry(key.to_owned())
            .or_insert_with(|| value.to_owned());
    }
    out
}

fn summarize(repo: &git2::Repository, commit: &git2::Commit, reference: &str) -> CheckpointSummary {
    let message = commit.message().unwrap_or("");
    let t = trailers(message);
    let files_changed = base_tree(repo, commit, &t)
        .and_then(|base| {
            let tree = commit.tree().ok()?;
            let diff = repo
                .diff_tree_to_tree(base.as_ref(), Some(&tree), None)
                .ok()?;
            Some(diff.deltas().len())
        })
        .unwrap_or(0);
    CheckpointSummary {
        sha: commit.id().to_string(),
        reference: reference.to_owned(),
        time_ms: (commit.time().seconds().max(0) as u64) * 1000,
        session: t.get("Session").cloned(),
        trigger: t.get("Trigger").cloned(),
        tokens: t.get("Tokens").cloned(),
        base: t.get("Base").cloned(),
        files_changed,
    }
}

/// The tree a checkpoint is compared with: its base HEAD (None when unborn).
fn base_tree<'r>(
    repo: &'r git2::Repository,
    commit: &git2::Commit<'r>,
    trailers: &HashMap<String, String>,
) -> Option<Option<git2::Tree<'r>>> {
    match trailers.get("Base").map(String::as_str) {
        Some("unborn") => Some(None),
        Some(base) => Some(Some(
            repo.find_commit(git2::Oid::from_str(base).ok()?)
                .ok()?
                .tree()
                .ok()?,
        )),
        None => Some(commit.parents().next().and_then(|p| p.tree().ok())),
    }
}

/// Checkpoints of every branch, newest first.
pub fn list_checkpoints(
    project: &Path,
    ref_prefix: &str,
    limit: usize,
) -> Result<Vec<CheckpointSummary>, GitError> {
    let repo = open(project)?;
    let mut out = Vec::new();
    let refs = repo
        .references_glob(&format!("{ref_prefix}/*"))
        .map_err(git("list checkpoint refs"))?;
    for reference in refs.flatten() {
        let Some(name) = reference.name().ok().map(str::to_owned) else {
            continue;
        };
        let Ok(mut commit) = reference.peel_to_commit() else {
            continue;
        };
        for _ in 0..limit {
            if commit.summary().ok().flatten() != Some(CHECKPOINT_TITLE) {
                break;
            }
            out.push(summarize(&repo, &commit, &name));
            match commit.parent(0) {
                Ok(parent) => commit = parent,
                Err(_) => break,
            }
        }
    }
    out.sort_by(|a, b| b.time_ms.cmp(&a.time_ms).then_with(|| a.sha.cmp(&b.sha)));
    out.dedup_by(|a, b| a.sha == b.sha);
    out.truncate(limit);
    Ok(out)
}

fn resolve<'r>(repo: &'r git2::Repository, rev: &str) -> Result<git2::Commit<'r>, GitError> {
    repo.revparse_single(rev)
        .and_then(|o| o.peel_to_commit())
        .map_err(|_| GitError::UnknownRevision(rev.to_owned()))
}

/// A checkpoint's message and its files, against its base.
pub fn show(project: &Path, rev: &str, ref_prefix: &str) -> Result<CheckpointDetail, GitError> {
    let repo = open(project)?;
    let commit = resolve(&repo, rev)?;
    let message = commit.message().unwrap_or("").to_owned();
    let t = trailers(&message);
    let reference = t
        .get("Branch")
        .map(|b| format!("{ref_prefix}/{b}"))
        .unwrap_or_default();
    let tree = commit.tree().map_err(git("read the checkpoint"))?;
    let base = base_tree(&repo, &commit, &t).flatten();
    let files = diff_trees(&repo, base.as_ref(), &tree, true)?;
    Ok(CheckpointDetail {
        summary: summarize(&repo, &commit, &reference),
        message,
        files,
    })
}

/// Writes files from a checkpoint into the working tree (all of them, or
/// those at or under `paths`, relative to the work tree's root), refusing
/// to overwrite uncommitted changes unless `force`. Returns the paths
/// written. Files the checkpoint lacks are left alone.
///
/// A checkpoint tree is untrusted (anyone can write a commit under
/// refs/hookd/), so nothing is written unless every path is a plain one
/// inside the work tree: no `.git`, `..` or empty component, nothing in a
/// git dir, never through a symlink (each directory is opened without
/// following one, from the work tree's root down). A symlink in the tree
/// is made a symlink; files get the tree's mode, 0644 or 0755. The index
/// is never touched.
pub fn restore(
    project: &Path,
    rev: &str,
    paths: &[PathBuf],
    force: bool,
) -> Result<Vec<String>, GitError> {
    let repo = open(project)?;
    let commit = resolve(&repo, rev)?;
    let tree = commit.tree().map_err(git("read the checkpoint"))?;
    let workdir = repo
        .workdir()
        .ok_or_else(|| GitError::Bare {
            path: project.display().to_string(),
        })?
        .canonicalize()
        .map_err(io("find the work tree"))?;
    // A git dir may lie inside the work tree under any name.
    let git_dirs: Vec<PathBuf> = [repo.path(), repo.commondir()]
        .iter()
        .filter_map(|d| d.canonicalize().ok())
        .collect();

    let wanted = paths
        .iter()
        .map(|p| requested_path(p))
        .collect::<Result<Vec<_>, _>>()?;
    let mut files = checkpoint_files(&repo, &tree)?;
    if !wanted.is_empty() {
        for w in &wanted {
            if !files.iter().any(|f| f.path.starts_with(w)) {
                return Err(GitError::NotInCheckpoint {
                    path: shown_path(w),
                    rev: rev.to_owned(),
                });
            }
        }
        files.retain(|f| wanted.iter().any(|w| f.path.starts_with(w)));
    }
    for file in &files {
        let full = file
            .path
            .iter()
            .fold(workdir.clone(), |p, c| p.join(OsStr::from_bytes(c)));
        if git_dirs.iter().any(|d| full.starts_with(d)) {
            return Err(GitError::UnsafePath {
                path: file.shown(),
                why: "it is in the repository's git dir".into(),
            });
        }
    }

    let root = Dir::open(&workdir).map_err(io("open the work tree"))?;
    let head = repo.head().ok().and_then(|h| h.peel_to_tree().ok());

    // Everything is checked before anything is written.
    let mut todo = Vec::new();
    let mut conflicts = Vec::new();
    for file in files {
        let (dirs, name) = file.path.split_at(file.path.len() - 1);
        let present = match root.dirs_below(dirs, false).map_err(|b| blocked(dirs, b))? {
            Some(dir) => present(&dir, &name[0]).map_err(io("read the work tree"))?,
            None => Present::Missing,
        };
        let wanted = file.state();
        if present == wanted {
            continue;
        }
        if present == Present::Other {
            return Err(GitError::UnsafePath {
                path: file.shown(),
                why: "a directory or special file stands there in the work tree".into(),
            });
        }
        let committed = head
            .as_ref()
            .and_then(|t| {
                t.get_path(Path::new(OsStr::from_bytes(&file.joined())))
                    .ok()
            })
            .map(|e| TreeFile::state_of(e.filemode(), e.id()));
        let clean = present == Present::Missing || committed == Some(present);
        if !clean && !force {
            conflicts.push(file.shown());
        } else {
            todo.push(file);
        }
    }
    if !conflicts.is_empty() {
        conflicts.sort();
        return Err(GitError::WouldOverwrite(conflicts));
    }

    let mut restored = Vec::new();
    for file in todo {
        let (dirs, name) = file.path.split_at(file.path.len() - 1);
        let dir = root
            .dirs_below(dirs, true)
            .map_err(|b| blocked(dirs, b))?
            .ok_or_else(|| GitError::UnsafePath {
                path: file.shown(),
                why: "its directory vanished".into(),
            })?;
        let blob = repo
            .find_blob(file.id)
            .map_err(git("read a file of the checkpoint"))?;
        let new = if file.mode == LINK_MODE {
            NewEntry::Link {
                target: blob.content(),
            }
        } else {
            NewEntry::File {
                bytes: blob.content(),
                executable: file.mode & 0o111 != 0,
            }
        };
        dir.place(&name[0], new)
            .map_err(io("write a restored file"))?;
        restored.push(file.shown());
    }
    restored.sort();
    Ok(restored)
}

/// Most files one restore writes: a hostile tree can name the same
/// subtree many times over.
const MAX_RESTORE_FILES: usize = 1_000_000;
const TREE_MODE: i32 = 0o040000;
const LINK_MODE: i32 = 0o120000;

/// A file or symlink of a checkpoint: its path's components, mode and blob.
struct TreeFile {
    path: Vec<Vec<u8>>,
    mode: i32,
    id: git2::Oid,
}

/// What stands at a path, as far as restoring goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Present {
    Missing,
    File {
        id: git2::Oid,
        exec: bool,
    },
    Link(git2::Oid),
    /// A directory, fifo, socket or device.
    Other,
}

impl TreeFile {
    fn joined(&self) -> Vec<u8> {
        self.path.join(&b'/')
    }

    fn shown(&self) -> String {
        shown_path(&self.path)
    }

    fn state(&self) -> Present {
        Self::state_of(self.mode, self.id)
    }

    fn state_of(mode: i32, id: git2::Oid) -> Present {
        match mode {
            LINK_MODE => Present::Link(id),
            TREE_MODE => Present::Other,
            _ => Present::File {
                id,
                exec: mode & 0o111 != 0,
            },
        }
    }
}

fn shown_path(components: &[Vec<u8>]) -> String {
    String::from_utf8_lossy(&components.join(&b'/')).into_owned()
}

/// Why a name cannot be written into the work tree, if it cannot: empty,
/// `.` or `..`, holding a slash or NUL, or `.git` as a case-insensitive
/// or NTFS file system would read it (`.GIT`, `.git.`, `git~1`).
fn unsafe_component(name: &[u8]) -> Option<&'static str> {
    let mut trimmed = name;
    while let [rest @ .., b'.' | b' '] = trimmed {
        trimmed = rest;
    }
    if name.is_empty() {
        Some("an empty name")
    } else if name == b"." || name == b".." {
        Some("a `.` or `..` component")
    } else if name.contains(&b'/') || name.contains(&0) {
        Some("a slash or NUL in a name")
    } else if trimmed.eq_ignore_ascii_case(b".git") || name.eq_ignore_ascii_case(b"git~1") {
        Some("a `.git` component")
    } else {
        None
    }
}

/// A `--path` as components, each a plain name.
fn requested_path(path: &Path) -> Result<Vec<Vec<u8>>, GitError> {
    use std::path::Component;
    let refuse = |why: &str| GitError::UnsafePath {
        path: path.display().to_string(),
        why: why.to_owned(),
    };
    let mut out = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(name) => {
                let name = name.as_bytes();
                if let Some(why) = unsafe_component(name) {
                    return Err(refuse(why));
                }
                out.push(name.to_vec());
            }
            Component::CurDir => {}
            _ => return Err(refuse("not a path relative to the work tree's root")),
        }
    }
    if out.is_empty() {
        return Err(refuse("an empty path"));
    }
    Ok(out)
}

/// The files and symlinks of a checkpoint tree; an error when any name in
/// it cannot be written safely. Submodules (commits) are left out.
fn checkpoint_files(repo: &git2::Repository, tree: &git2::Tree) -> Result<Vec<TreeFile>, GitError> {
    let mut files = Vec::new();
    let mut pending = vec![(Vec::new(), tree.id())];
    while let Some((prefix, id)) = pending.pop() {
        let tree = repo.find_tree(id).map_err(git("read the checkpoint"))?;
        for entry in tree.iter() {
            let mut path: Vec<Vec<u8>> = prefix.clone();
            path.push(entry.name_bytes().to_vec());
            if let Some(why) = unsafe_component(entry.name_bytes()) {
                return Err(GitError::UnsafePath {
                    path: shown_path(&path),
                    why: why.into(),
                });
            }
            match entry.filemode() {
                TREE_MODE => pending.push((path, entry.id())),
                mode @ (0o100644 | 0o100755 | 0o100664 | LINK_MODE) => files.push(TreeFile {
                    path,
                    mode,
                    id: entry.id(),
                }),
                _ => {}
            }
            if files.len() + pending.len() > MAX_RESTORE_FILES {
                return Err(GitError::UnsafePath {
                    path: shown_path(&prefix),
                    why: format!("the checkpoint holds over {MAX_RESTORE_FILES} files"),
                });
            }
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

/// The error for a directory of `dirs` that cannot be reached.
fn blocked(dirs: &[Vec<u8>], blocked: Blocked) -> GitError {
    match blocked {
        Blocked::Link { depth } => GitError::UnsafePath {
            path: shown_path(&dirs[..depth]),
            why: "it is a symlink in the work tree, and hookd never writes through one".into(),
        },
        Blocked::NotADirectory { depth } => GitError::UnsafePath {
            path: shown_path(&dirs[..depth]),
            why: "it is not a directory in the work tree".into(),
        },
        Blocked::Io { op, source, .. } => GitError::Io { op, source },
    }
}

/// What stands at `name` in `dir`, as git would hash it.
fn present(dir: &Dir, name: &[u8]) -> std::io::Result<Present> {
    let hash = |bytes: &[u8]| {
        git2::Oid::hash_object(git2::ObjectType::Blob, bytes).map_err(std::io::Error::other)
    };
    Ok(match dir.entry(name)? {
        Entry::Missing => Present::Missing,
        Entry::File { bytes, executable } => Present::File {
            id: hash(&bytes)?,
            exec: executable,
        },
        Entry::Link { target } => Present::Link(hash(&target)?),
        Entry::Other => Present::Other,
    })
}

/// Paths whose content differs between the working tree now and `rev`'s
/// tree (HEAD's when `None`).
pub fn changed_since(
    repositories: &Repositories,
    project: &Path,
    rev: Option<&str>,
    opts: &SnapshotOptions,
) -> Result<Vec<String>, GitError> {
    let snapshot = snapshot(repositories, project, opts)?;
    let repo = open(project)?;
    let base = match rev {
        Some(rev) => Some(resolve(&repo, rev)?.tree().map_err(git("read a tree"))?),
        None => match snapshot.head {
            Some(head) => Some(
                repo.find_commit(head)
                    .and_then(|c| c.tree())
                    .map_err(git("read HEAD's tree"))?,
            ),
            None => None,
        },
    };
    let now = repo
        .find_tree(snapshot.tree)
        .map_err(git("read the snapshot"))?;
    Ok(diff_trees(&repo, base.as_ref(), &now, false)?
        .into_iter()
        .map(|c| c.path)
        .collect())
}

/// Where a repository stands now, for checking a saved state against it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeadInfo {
    pub branch: String,
    pub head: Option<String>,
    pub state: String,
}

pub fn head_info(project: &Path) -> Result<HeadInfo, GitError> {
    let repo = open(project)?;
    let (branch, head) = branch_and_head(&repo)?;
    Ok(HeadInfo {
        branch,
        head: head.map(|h| h.to_string()),
        state: state_name(repo.state()).into(),
    })
}

/// The files of the repository holding `project` that git would keep
/// (tracked, and with `untracked` those untracked but not ignored; no
/// submodules), relative to `project`, leaving out those outside it. None
/// outside a repository. Untracked files cost a walk of the working tree.
pub fn project_files(project: &Path, untracked: bool) -> Option<Vec<String>> {
    project_files_of(&open(project).ok()?, project, untracked)
}

fn project_files_of(
    repo: &git2::Repository,
    project: &Path,
    untracked: bool,
) -> Option<Vec<String>> {
    let root = repo.workdir()?.canonicalize().ok()?;
    let project = project.canonicalize().ok()?;
    let prefix = project
        .strip_prefix(&root)
        .ok()?
        .to_string_lossy()
        .into_owned();
    let mut files = std::collections::BTreeSet::new();
    if let Ok(index) = repo.index() {
        for entry in index.iter().filter(|e| e.mode != 0o160000) {
            files.insert(String::from_utf8_lossy(&entry.path).into_owned());
        }
    }
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false);
    // Without untracked files the index is enough (deleted files may remain).
    let statuses = if untracked {
        special_files::refuse_in_work_tree_of(&project, repo).ok()?;
        repo.statuses(Some(&mut opts)).ok()
    } else {
        None
    };
    if let Some(statuses) = statuses {
        for entry in statuses.iter() {
            let Some(path) = entry.path().ok() else {
                continue;
            };
            let status = entry.status();
            if status.contains(git2::Status::WT_NEW) {
                files.insert(path.to_owned());
            } else if status.intersects(git2::Status::WT_DELETED | git2::Status::INDEX_DELETED) {
                files.remove(path);
            }
        }
    }
    if prefix.is_empty() {
        return Some(files.into_iter().collect());
    }
    let prefix = format!("{prefix}/");
    Some(
        files
            .into_iter()
            .filter_map(|f| f.strip_prefix(&prefix).map(str::to_owned))
            .collect(),
    )
}

/// Most commits read looking for when files last changed.
const HISTORY_COMMITS: usize = 500;

/// When each of `paths` (relative to `project`) last changed, in Unix
/// milliseconds, if within `window_ms` before `now_ms`: the file's
/// modification time when it has uncommitted changes, else the time of the
/// newest first-parent commit that changed it. A checkout's fresh
/// modification times say nothing, so unchanged files go by their history.
/// `changed` lists the files with uncommitted changes (relative to the
/// repository's root) when the caller knows them; otherwise one status
/// pass finds them. Paths that did not change within the window are left
/// out; None outside a repository.
pub fn last_changes(
    project: &Path,
    paths: &[String],
    changed: Option<&[String]>,
    now_ms: u64,
    window_ms: u64,
) -> Option<HashMap<String, u64>> {
    last_changes_of(
        &open(project).ok()?,
        project,
        paths,
        changed,
        now_ms,
        window_ms,
    )
}

fn last_changes_of(
    repo: &git2::Repository,
    project: &Path,
    paths: &[String],
    changed: Option<&[String]>,
    now_ms: u64,
    window_ms: u64,
) -> Option<HashMap<String, u64>> {
    let root = repo.workdir()?.canonicalize().ok()?;
    let prefix = project
        .canonicalize()
        .ok()?
        .strip_prefix(&root)
        .ok()?
        .to_string_lossy()
        .into_owned();
    let repo_path = |rel: &str| {
        if prefix.is_empty() {
            rel.to_owned()
        } else {
            format!("{prefix}/{rel}")
        }
    };
    let changed: HashSet<String> = match changed {
        Some(list) => list.iter().cloned().collect(),
        None => {
            special_files::refuse_in_work_tree_of(project, repo).ok()?;
            let mut opts = git2::StatusOptions::new();
            opts.include_untracked(true).recurse_untracked_dirs(true);
            repo.statuses(Some(&mut opts))
                .map(|list| {
                    list.iter()
                        .filter_map(|e| e.path().ok().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        }
    };
    let cutoff = now_ms.saturating_sub(window_ms);
    let mut found = HashMap::new();
    let mut wanted: HashMap<String, &String> = HashMap::new();
    for rel in paths {
        let in_repo = repo_path(rel);
        if !changed.contains(&in_repo) {
            wanted.insert(in_repo, rel);
            continue;
        }
        let mtime = std::fs::metadata(root.join(&in_repo))
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_millis() as u64);
        if let Some(ms) = mtime.filter(|ms| *ms >= cutoff) {
            found.insert(rel.clone(), ms);
        }
    }
    let Ok(mut walk) = repo.revwalk() else {
        return Some(found);
    };
    if walk.push_head().is_err() {
        return Some(found);
    }
    let _ = walk.simplify_first_parent();
    for oid in walk.flatten().take(HISTORY_COMMITS) {
        if wanted.is_empty() {
            break;
        }
        let Ok(commit) = repo.find_commit(oid) else {
            break;
        };
        let when = u64::try_from(commit.time().seconds()).unwrap_or(0) * 1000;
        if when < cutoff {
            break;
        }
        let parent_tree = commit.parent(0).ok().and_then(|p| p.tree().ok());
        let Ok(tree) = commit.tree() else { continue };
        let Ok(diff) = repo.diff_tree_to_tree(parent_tree.as_ref(), Some(&tree), None) else {
            continue;
        };
        for delta in diff.deltas() {
            let Some(path) = delta.new_file().path().and_then(Path::to_str) else {
                continue;
            };
            if let Some(rel) = wanted.remove(path) {
                found.insert(rel.clone(), when);
            }
        }
    }
    Some(found)
}

/// Keeps libgit2 away from files it could hang on. libgit2 opens what it
/// reads with a plain blocking `open`, following symlinks: a FIFO named by
/// the repository (a config include, `core.excludesFile`, a `.gitattributes`
/// linked to one) would hold hookd's thread until someone writes to it. A
/// repository that has one among the files git reads is refused with the
/// file named; whatever this does not foresee is bounded by
/// [`Repositories::bounded`].
mod special_files {
    use super::{GitError, is_git_dir};
    use std::collections::HashSet;
    use std::io::Read;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::FileTypeExt;
    use std::path::{Path, PathBuf};

    /// How deep git follows includes in config files.
    const MAX_INCLUDE_DEPTH: usize = 10;
    /// The most bytes read of a config or `.git` file.
    const MAX_CONFIG_BYTES: u64 = 1024 * 1024;
    /// The most entries of a git directory's trees looked at (refs and logs).
    const MAX_ENTRIES: usize = 20_000;

    /// What `path` is when git must not read it: anything but a regular
    /// file or a directory, symlinks followed as libgit2 follows them
    /// (`stat` never blocks). What cannot be looked at (missing, a dangling
    /// link, no permission) git cannot open either.
    fn unreadable_kind(path: &Path) -> Option<&'static str> {
        let kind = std::fs::metadata(path).ok()?.file_type();
        if kind.is_file() || kind.is_dir() {
            None
        } else if kind.is_fifo() {
            Some("a FIFO")
        } else if kind.is_socket() {
            Some("a socket")
        } else if kind.is_char_device() {
            Some("a character device")
        } else if kind.is_block_device() {
            Some("a block device")
        } else {
            Some("neither a regular file nor a directory")
        }
    }

    fn check(project: &Path, path: &Path, named_by: &str) -> Result<(), GitError> {
        match unreadable_kind(path) {
            None => Ok(()),
            Some(kind) => Err(GitError::UnsafeFile {
                project: project.display().to_string(),
                path: path.display().to_string(),
                named_by: named_by.to_owned(),
                kind,
            }),
        }
    }

    /// A regular file's first bytes; None for anything else.
    fn read_regular(path: &Path) -> Option<Vec<u8>> {
        if !std::fs::metadata(path).ok()?.is_file() {
            return None;
        }
        // Opened without blocking and checked again: it may have changed.
        let (file, _) = crate::tail::open_regular(path).ok()??;
        let mut bytes = Vec::new();
        file.take(MAX_CONFIG_BYTES).read_to_end(&mut bytes).ok()?;
        Some(bytes)
    }

    /// Before libgit2 looks: the `.git` that leads to the repository, the
    /// git directory's own files, and its config files with their includes.
    pub(super) fn refuse_before_open(project: &Path) -> Result<(), GitError> {
        let Ok(start) = project.canonicalize() else {
            return Ok(());
        };
        for dir in start.ancestors() {
            let dotgit = dir.join(".git");
            let found_dotgit = dotgit.symlink_metadata().is_ok();
            if found_dotgit {
                check(project, &dotgit, "the repository's .git")?;
                if let Some(git_dir) = git_dir_of(&dotgit, dir) {
                    ours(project, &dotgit, dir, &git_dir)?;
                    check_git_dir(project, &git_dir)?;
                }
            }
            if is_git_dir(dir) {
                check_git_dir(project, dir)?;
            }
            if found_dotgit {
                return Ok(());
            }
        }
        Ok(())
    }

    /// `git_dir`, which `dotgit` in `work_tree` leads to, is the work tree's
    /// own: its `commondir` names no other repository, and it is no other
    /// repository's git dir (see [`git_dir_belongs`]).
    pub(super) fn ours(
        project: &Path,
        dotgit: &Path,
        work_tree: &Path,
        git_dir: &Path,
    ) -> Result<(), GitError> {
        if let Some(common_dir) = foreign_common_dir(dotgit, git_dir) {
            return Err(GitError::ForeignCommonDir {
                path: project.display().to_string(),
                git_dir: git_dir.display().to_string(),
                common_dir: common_dir.display().to_string(),
            });
        }
        if !git_dir_belongs(dotgit, work_tree, git_dir) {
            return Err(GitError::ForeignGitDir {
                path: project.display().to_string(),
                git_dir: git_dir.display().to_string(),
            });
        }
        Ok(())
    }

    /// The git directory `dotgit` (a work tree's `.git`) stands for: itself
    /// when it is a directory, the one it names when it is a file.
    pub(super) fn git_dir_of(dotgit: &Path, work_tree: &Path) -> Option<PathBuf> {
        let kind = std::fs::metadata(dotgit).ok()?;
        if kind.is_dir() {
            Some(dotgit.to_path_buf())
        } else if kind.is_file() {
            git_dir_named_by(dotgit, work_tree)
        } else {
            None
        }
    }

    /// Whether `git_dir`, found through `dotgit` (the `.git` of
    /// `work_tree`), may be used for that work tree. A `.git` directory may;
    /// so may a `.git` file at the top of a work tree (a separate git dir,
    /// which git.rs checks as before). A `.git` file inside another work tree
    /// must name a git dir of that outer repository (a submodule's, a
    /// worktree's, or one inside it), or a linked worktree's whose `gitdir`
    /// file names this `.git` back: one that came with a project's files
    /// could otherwise send hookd's checkpoints into any repository of yours.
    /// Either way its `commondir` must pass [`foreign_common_dir`].
    pub(super) fn git_dir_belongs(dotgit: &Path, work_tree: &Path, git_dir: &Path) -> bool {
        if foreign_common_dir(dotgit, git_dir).is_some() {
            return false;
        }
        if std::fs::symlink_metadata(dotgit).is_ok_and(|m| m.is_dir()) {
            return true;
        }
        let Ok(work_tree) = work_tree.canonicalize() else {
            return false;
        };
        // The repository around this one, found as the project's root is
        // (an empty `.git` is none).
        let Some(outer) = work_tree
            .parent()
            .and_then(protocol::project::work_tree_root)
        else {
            return true;
        };
        let outer = outer.as_path();
        let Ok(git_dir) = git_dir.canonicalize() else {
            return false;
        };
        let outer_git_dirs = git_dir_of(&outer.join(".git"), outer)
            .map(|dir| vec![common_dir(&dir), dir])
            .unwrap_or_default();
        if std::iter::once(outer.to_path_buf())
            .chain(outer_git_dirs)
            .filter_map(|dir| dir.canonicalize().ok())
            .any(|dir| git_dir.starts_with(dir))
        {
            return true;
        }
        names_back(&git_dir, dotgit)
    }

    /// Whether `git_dir`'s `gitdir` file (a linked worktree's) names `dotgit`.
    fn names_back(git_dir: &Path, dotgit: &Path) -> bool {
        read_regular(&git_dir.join("gitdir")).is_some_and(|text| {
            let named = PathBuf::from(String::from_utf8_lossy(&text).trim());
            let named = if named.is_absolute() {
                named
            } else {
                git_dir.join(named)
            };
            named.canonicalize().ok() == dotgit.canonicalize().ok()
        })
    }

    /// The common dir `git_dir` would share objects, refs and `info/exclude`
    /// with (its `commondir` file, which git and libgit2 follow from any git
    /// dir), when that is another repository's: `git_dir` is then not
    /// `<common>/worktrees/<name>` with a `gitdir` file naming `dotgit` back,
    /// as `git worktree add` makes it. None when it shares nothing (no
    /// `commondir`, or one naming itself) or is such a worktree. A common
    /// dir that cannot be found counts as another repository's.
    pub(super) fn foreign_common_dir(dotgit: &Path, git_dir: &Path) -> Option<PathBuf> {
        let Ok(own) = git_dir.canonicalize() else {
            // No git dir: nothing is shared, and libgit2 finds nothing to open.
            return None;
        };
        let common = common_dir(git_dir);
        let Ok(shared) = common.canonicalize() else {
            return Some(common);
        };
        if own == shared {
            return None;
        }
        let linked_worktree =
            own.parent() == Some(&*shared.join("worktrees")) && names_back(&own, dotgit);
        (!linked_worktree).then_some(shared)
    }

    /// The directory a `.git` file points to (`gitdir: <path>`).
    pub(super) fn git_dir_named_by(dotgit: &Path, work_tree: &Path) -> Option<PathBuf> {
        let text = read_regular(dotgit)?;
        let text = String::from_utf8_lossy(&text);
        let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
        Some(work_tree.join(target))
    }

    /// The git directory shared by a worktree's (`commondir`), or `git_dir` itself.
    pub(super) fn common_dir(git_dir: &Path) -> PathBuf {
        read_regular(&git_dir.join("commondir"))
            .map(|text| git_dir.join(String::from_utf8_lossy(&text).trim()))
            .unwrap_or_else(|| git_dir.to_path_buf())
    }

    fn check_git_dir(project: &Path, git_dir: &Path) -> Result<(), GitError> {
        check(project, git_dir, "the git directory")?;
        check(
            project,
            &git_dir.join("commondir"),
            "the git directory's commondir",
        )?;
        let common = common_dir(git_dir);
        let mut seen = 0;
        let same = git_dir.canonicalize().ok() == common.canonicalize().ok();
        let dirs = if same {
            &[git_dir][..]
        } else {
            &[git_dir, &common][..]
        };
        for &dir in dirs {
            check(project, dir, "the git directory")?;
            check_alternates(project, &dir.join("objects"), 0, &mut seen)?;
            for sub in ["", "info", "objects/info", "objects/pack"] {
                check_entries(project, &dir.join(sub), false, &mut seen)?;
            }
            for tree in ["refs", "logs/refs/hookd"] {
                check_entries(project, &dir.join(tree), true, &mut seen)?;
            }
            for config in ["config", "config.worktree"] {
                check_config(project, &dir.join(config), "git's config file", 0)?;
            }
        }
        Ok(())
    }

    /// The entries of `dir` (and below, when `deep`), links followed.
    fn check_entries(
        project: &Path,
        dir: &Path,
        deep: bool,
        seen: &mut usize,
    ) -> Result<(), GitError> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Ok(());
        };
        for entry in entries.flatten() {
            *seen += 1;
            if *seen > MAX_ENTRIES {
                return Err(GitError::TooBigToCheck {
                    project: project.display().to_string(),
                    path: dir.display().to_string(),
                    what: format!(
                        "and the git directory's other folders hookd looks through hold more than {MAX_ENTRIES} entries"
                    ),
                    remedy: "Pack its refs (`git pack-refs --all`) and objects (`git gc`)",
                });
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() {
                if deep {
                    check_entries(project, &path, deep, seen)?;
                }
            } else if !kind.is_file() {
                check(project, &path, "in the git directory")?;
            }
        }
        Ok(())
    }

    /// How deep git follows alternates of alternates.
    const MAX_ALTERNATES_DEPTH: usize = 5;

    /// The object directories `objects/info/alternates` names (one path a
    /// line, relative to `objects`), as libgit2 opens them: their `info/`,
    /// their `pack/`, and their own alternates.
    fn check_alternates(
        project: &Path,
        objects: &Path,
        depth: usize,
        seen: &mut usize,
    ) -> Result<(), GitError> {
        let list = objects.join("info/alternates");
        check(project, &list, "the git directory")?;
        if depth >= MAX_ALTERNATES_DEPTH {
            return Ok(());
        }
        let Some(text) = read_checked(project, &list)? else {
            return Ok(());
        };
        let named_by = format!("in {}", list.display());
        for line in String::from_utf8_lossy(&text).lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let alternate = objects.join(line);
            check(project, &alternate, &named_by)?;
            for sub in ["info", "pack"] {
                check_entries(project, &alternate.join(sub), false, seen)?;
            }
            check_alternates(project, &alternate, depth + 1, seen)?;
        }
        Ok(())
    }

    /// A regular file git reads whole, refused when it is longer than the
    /// part hookd looks at; None when it is not a regular file.
    fn read_checked(project: &Path, path: &Path) -> Result<Option<Vec<u8>>, GitError> {
        let Some(bytes) = read_regular(path) else {
            return Ok(None);
        };
        if bytes.len() as u64 >= MAX_CONFIG_BYTES {
            return Err(GitError::TooBigToCheck {
                project: project.display().to_string(),
                path: path.display().to_string(),
                what: format!("is {MAX_CONFIG_BYTES} bytes or larger"),
                remedy: "Make the file smaller",
            });
        }
        Ok(Some(bytes))
    }

    /// A config file and, depth first, the files it includes.
    fn check_config(
        project: &Path,
        path: &Path,
        named_by: &str,
        depth: usize,
    ) -> Result<(), GitError> {
        check(project, path, named_by)?;
        if depth >= MAX_INCLUDE_DEPTH {
            return Ok(());
        }
        let Some(bytes) = read_checked(project, path)? else {
            return Ok(());
        };
        for (key, value) in include_paths(&String::from_utf8_lossy(&bytes)) {
            let target = match value.strip_prefix("~/") {
                Some(rest) => match std::env::var_os("HOME") {
                    Some(home) => Path::new(&home).join(rest),
                    None => continue,
                },
                None => path.parent().unwrap_or(Path::new("/")).join(&value),
            };
            let named_by = format!("{key} in {}", path.display());
            check_config(project, &target, &named_by, depth + 1)?;
        }
        Ok(())
    }

    /// The values of `path` in a config file's `[include]` and
    /// `[includeIf "…"]` sections, whatever their condition, with git's
    /// quoting, escapes, comments and continued lines.
    pub(super) fn include_paths(text: &str) -> Vec<(&'static str, String)> {
        // A value ending in a backslash goes on on the next line.
        let mut lines: Vec<String> = Vec::new();
        let mut continued = false;
        for line in text.lines() {
            match lines.last_mut() {
                Some(last) if continued => last.push_str(line),
                _ => lines.push(line.to_owned()),
            }
            let last = lines.last_mut().expect("a line was just pushed");
            let slashes = last.bytes().rev().take_while(|b| *b == b'\\').count();
            continued = slashes % 2 == 1;
            if continued {
                last.pop();
            }
        }
        let mut out = Vec::new();
        let mut section: Option<&'static str> = None;
        for line in &lines {
            let mut rest = line.trim_start();
            if rest.starts_with('[') {
                let (name, after) = section_header(rest);
                section = match name.to_ascii_lowercase().as_str() {
                    "include" => Some("include.path"),
                    "includeif" => Some("includeIf.<condition>.path"),
                    _ => None,
                };
                rest = after.trim_start();
            }
            let Some(key_name) = section else { continue };
            let key_end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .unwrap_or(rest.len());
            let (key, after) = rest.split_at(key_end);
            if !key.eq_ignore_ascii_case("path") {
                continue;
            }
            if let Some(value) = after.trim_start().strip_prefix('=') {
                out.push((key_name, config_value(value)));
            }
        }
        out
    }

    /// A section header's name (before any `.` or subsection) and what
    /// follows its `]` on the line.
    fn section_header(line: &str) -> (&str, &str) {
        let inner = &line[1..];
        let name_end = inner
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .unwrap_or(inner.len());
        let name = &inner[..name_end];
        let mut quoted = false;
        let mut escaped = false;
        for (i, c) in inner.char_indices().skip(name_end) {
            match c {
                _ if escaped => escaped = false,
                '\\' if quoted => escaped = true,
                '"' => quoted = !quoted,
                ']' if !quoted => return (name, &inner[i + 1..]),
                _ => {}
            }
        }
        (name, "")
    }

    /// A value as git reads it: quotes removed, escapes applied, a comment
    /// outside quotes cut off, whitespace around it dropped.
    fn config_value(raw: &str) -> String {
        let mut out = String::new();
        let mut pending_space = String::new();
        let mut quoted = false;
        let mut chars = raw.trim_start().chars();
        while let Some(c) = chars.next() {
            let c = match c {
                '"' => {
                    quoted = !quoted;
                    continue;
                }
                '#' | ';' if !quoted => break,
                c if c.is_whitespace() && !quoted => {
                    pending_space.push(c);
                    continue;
                }
                '\\' => match chars.next() {
                    Some('n') => '\n',
                    Some('t') => '\t',
                    Some('b') => {
                        out.pop();
                        continue;
                    }
                    Some(other) => other,
                    None => break,
                },
                c => c,
            };
            out.push_str(&pending_space);
            pending_space.clear();
            out.push(c);
        }
        out
    }

    /// After libgit2 opened the repository (its config is then known to be
    /// readable): the ignore and attribute files the config names.
    pub(super) fn refuse_after_open(
        project: &Path,
        repo: &git2::Repository,
    ) -> Result<(), GitError> {
        let Ok(config) = repo.config() else {
            return Ok(());
        };
        for (key, default) in [
            ("core.excludesFile", "ignore"),
            ("core.attributesFile", "attributes"),
        ] {
            let path = config.get_path(key).ok().or_else(|| user_git_file(default));
            if let Some(path) = path {
                check(project, &path, key)?;
            }
        }
        Ok(())
    }

    /// Before git walks the work tree: its `.gitmodules`, and the
    /// `.gitignore` and `.gitattributes` of every directory holding one of
    /// `tracked` (the paths of the user's index). A directory git does not
    /// track is left to the deadline.
    pub(super) fn refuse_in_work_tree<'p>(
        project: &Path,
        workdir: &Path,
        tracked: impl Iterator<Item = &'p [u8]>,
    ) -> Result<(), GitError> {
        let mut dirs: HashSet<&[u8]> = HashSet::from([&b""[..]]);
        for path in tracked {
            let mut end = path.len();
            while let Some(slash) = path[..end].iter().rposition(|b| *b == b'/') {
                if !dirs.insert(&path[..slash]) {
                    break;
                }
                end = slash;
            }
        }
        check(project, &workdir.join(".gitmodules"), "in the work tree")?;
        for dir in dirs {
            let dir = workdir.join(std::ffi::OsStr::from_bytes(dir));
            for name in [".gitignore", ".gitattributes"] {
                check(project, &dir.join(name), "in the work tree")?;
            }
        }
        Ok(())
    }

    /// [`refuse_in_work_tree`] with the paths of the user's index.
    pub(super) fn refuse_in_work_tree_of(
        project: &Path,
        repo: &git2::Repository,
    ) -> Result<(), GitError> {
        let Some(workdir) = repo.workdir() else {
            return Ok(());
        };
        let paths: Vec<Vec<u8>> = git2::Index::open(&repo.path().join("index"))
            .map(|index| index.iter().map(|entry| entry.path).collect())
            .unwrap_or_default();
        refuse_in_work_tree(project, workdir, paths.iter().map(Vec::as_slice))
    }

    /// git's per-user file (`~/.config/git/<name>`) read when the config names none.
    fn user_git_file(name: &str) -> Option<PathBuf> {
        let base = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".config")))?;
        Some(base.join("git").join(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclude_is_added_once() {
        let dir = tempfile::tempdir().unwrap();
        git2::Repository::init(dir.path()).unwrap();
        assert!(exclude(dir.path(), ".workflow/").unwrap());
        assert!(!exclude(dir.path(), ".workflow/").unwrap());
        let text = std::fs::read_to_string(dir.path().join(".git/info/exclude")).unwrap();
        assert_eq!(text.matches(".workflow/").count(), 1);
        // A linked worktree's exclude is its main repository's.
        let repo = git2::Repository::open(dir.path()).unwrap();
        let tree = repo.treebuilder(None).unwrap().write().unwrap();
        let tree = repo.find_tree(tree).unwrap();
        let me = git2::Signature::now("t", "t@example.com").unwrap();
        repo.commit(Some("HEAD"), &me, &me, "first", &tree, &[])
            .unwrap();
        let linked = dir.path().join("linked");
        repo.worktree("linked", &linked, None).unwrap();
        assert!(exclude(&linked, ".other/").unwrap());
        let text = std::fs::read_to_string(dir.path().join(".git/info/exclude")).unwrap();
        assert!(text.contains("\n.other/\n"), "{text}");
        let outside = tempfile::tempdir().unwrap();
        assert!(matches!(
            exclude(outside.path(), ".workflow/"),
            Err(GitError::NotARepository { .. })
        ));
    }

    /// A `.git` file inside another work tree is used only when it names a
    /// git dir of that repository or a worktree's that names it back.
    #[test]
    fn a_git_file_inside_a_work_tree_must_name_a_git_dir_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let outer = dir.path().join("outer");
        let other = dir.path().join("other/.git");
        for part in ["modules/sub", "objects", "refs"] {
            std::fs::create_dir_all(outer.join(".git").join(part)).unwrap();
        }
        std::fs::write(outer.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::create_dir_all(&other).unwrap();
        let sub = outer.join("sub");
        std::fs::create_dir_all(&sub).unwrap();
        let belongs =
            |git_dir: &Path| special_files::git_dir_belongs(&sub.join(".git"), &sub, git_dir);
        std::fs::write(sub.join(".git"), "gitdir: x\n").unwrap();
        assert!(belongs(&outer.join(".git/modules/sub")), "a submodule's");
        assert!(!belongs(&other), "another repository's");
        let linked = dir.path().join("other/.git/worktrees/sub");
        std::fs::create_dir_all(&linked).unwrap();
        std::fs::write(
            linked.join("gitdir"),
            format!("{}\n", sub.join(".git").display()),
        )
        .unwrap();
        assert!(belongs(&linked), "a worktree's that names it back");
        std::fs::write(linked.join("gitdir"), "/elsewhere/.git\n").unwrap();
        assert!(!belongs(&linked), "a worktree's that names another");
        let top = dir.path().join("top");
        std::fs::create_dir_all(&top).unwrap();
        std::fs::write(top.join(".git"), "gitdir: x\n").unwrap();
        assert!(
            special_files::git_dir_belongs(&top.join(".git"), &top, &other),
            "a separate git dir at the top of a work tree"
        );
    }

    /// A git dir whose `commondir` names another repository writes into
    /// that repository's objects, refs and exclude file: only a linked
    /// worktree's, `<common>/worktrees/<name>` naming this `.git` back, may.
    #[test]
    fn a_commondir_is_followed_only_from_a_worktree_that_names_this_git_back() {
        let dir = tempfile::tempdir().unwrap();
        let important = dir.path().join("important");
        let repo = git2::Repository::init(&important).unwrap();
        let exclude_file = important.join(".git/info/exclude");
        let exclude_before = std::fs::read(&exclude_file).ok();
        let vendored = dir.path().join("proj/vendor/x");
        let fake = vendored.join(".git");
        for sub in ["objects", "refs/heads"] {
            std::fs::create_dir_all(fake.join(sub)).unwrap();
        }
        std::fs::write(fake.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(
            fake.join("commondir"),
            format!("{}\n", important.join(".git").display()),
        )
        .unwrap();
        assert!(
            !special_files::git_dir_belongs(&fake, &vendored, &fake),
            "a .git directory with a commondir"
        );
        assert!(exclude(&vendored, ".workflow/").is_err());
        assert!(special_files::refuse_before_open(&vendored).is_err());
        assert!(open(&vendored).is_err());
        // The same git dir named by a `.git` file at the top of a work tree.
        let top = dir.path().join("top");
        std::fs::create_dir_all(&top).unwrap();
        std::fs::write(top.join(".git"), format!("gitdir: {}\n", fake.display())).unwrap();
        assert!(!special_files::git_dir_belongs(
            &top.join(".git"),
            &top,
            &fake
        ));
        assert!(exclude(&top, ".workflow/").is_err());
        assert!(special_files::refuse_before_open(&top).is_err());
        // Naming this `.git` back is not enough outside `<common>/worktrees/`.
        std::fs::write(
            fake.join("gitdir"),
            format!("{}\n", top.join(".git").display()),
        )
        .unwrap();
        assert!(!special_files::git_dir_belongs(
            &top.join(".git"),
            &top,
            &fake
        ));
        assert_eq!(std::fs::read(&exclude_file).ok(), exclude_before);
        assert!(
            repo.references_glob("refs/hookd/*")
                .unwrap()
                .next()
                .is_none()
        );

        // A real linked worktree and its git dir still belong.
        let tree = repo.treebuilder(None).unwrap().write().unwrap();
        let tree = repo.find_tree(tree).unwrap();
        let me = git2::Signature::now("t", "t@example.com").unwrap();
        repo.commit(Some("HEAD"), &me, &me, "first", &tree, &[])
            .unwrap();
        let linked = dir.path().join("linked");
        repo.worktree("linked", &linked, None).unwrap();
        let linked_git_dir = important.join(".git/worktrees/linked");
        assert!(special_files::git_dir_belongs(
            &linked.join(".git"),
            &linked,
            &linked_git_dir
        ));
        special_files::refuse_before_open(&linked).unwrap();
        open(&linked).unwrap();
        assert!(exclude(&linked, ".workflow/").unwrap());
    }

    #[test]
    fn exclude_never_reads_the_config() {
        // It runs without a deadline: a FIFO the config includes is never opened.
        let dir = tempfile::tempdir().unwrap();
        let git_dir = dir.path().join("git-dirs/work.git");
        let work = dir.path().join("work");
        let mut opts = git2::RepositoryInitOptions::new();
        opts.workdir_path(&work).no_dotgit_dir(true);
        git2::Repository::init_opts(&git_dir, &opts).unwrap();
        assert!(work.join(".git").is_file());
        let fifo = dir.path().join("trap");
        let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let config = git_dir.join("config");
        let plain = std::fs::read_to_string(&config).unwrap();
        std::fs::write(
            &config,
            format!("{plain}[include]\n\tpath = {}\n", fifo.display()),
        )
        .unwrap();
        assert!(exclude(&work, ".workflow/").unwrap());
        let text = std::fs::read_to_string(git_dir.join("info/exclude")).unwrap();
        assert!(text.contains("\n.workflow/\n"), "{text}");
    }

    #[test]
    fn a_work_tree_has_one_git_thread_however_many_callers_come_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let repositories = Repositories::default();
        let started = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (release, released) = std::sync::mpsc::channel::<()>();
        let released = std::sync::Arc::new(Mutex::new(released));
        let callers: Vec<_> = (0..3)
            .map(|_| {
                let (repositories, project) = (repositories.clone(), dir.path().to_path_buf());
                let (started, released) = (started.clone(), released.clone());
                std::thread::spawn(move || {
                    repositories.bounded(
                        &project,
                        std::time::Duration::from_millis(200),
                        move |_| {
                            started.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            let _ = released.lock().unwrap().recv();
                            Ok(())
                        },
                    )
                })
            })
            .collect();
        for caller in callers {
            let answer = caller.join().unwrap();
            assert!(
                matches!(
                    answer,
                    Err(GitError::TimedOut { .. } | GitError::Stuck { .. })
                ),
                "{answer:?}"
            );
        }
        assert_eq!(started.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert!(repositories.is_stuck(dir.path()));
        release.send(()).unwrap();
        assert!(
            frees_within_two_seconds(&repositories, dir.path()),
            "the mark outlived the work"
        );
        assert!(
            repositories
                .bounded(dir.path(), GIT_DEADLINE, |_| Ok(()))
                .is_ok()
        );
    }

    /// Whether the work tree's stuck mark goes once its git work returned.
    fn frees_within_two_seconds(repositories: &Repositories, dir: &Path) -> bool {
        (0..200).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            !repositories.is_stuck(dir)
        })
    }

    #[test]
    fn include_paths_are_read_as_git_reads_them() {
        let text = "[core]\n\tpath = not-an-include\n\
            [include] path = a.cfg\n\
            [Include]\n\tPATH = \"b c.cfg\" # a comment\n\
            [includeIf \"gitdir:/x]y/\"]\n\tpath = ~/d\\\n.cfg ; more\n\
            [include.old]\n\tpath=e\\\"f\n\
            [user]\n\tname = x\n\tpath = g\n";
        let found: Vec<String> = special_files::include_paths(text)
            .into_iter()
            .map(|(_, value)| value)
            .collect();
        assert_eq!(found, ["a.cfg", "b c.cfg", "~/d.cfg", "e\"f"]);
    }

    #[test]
    fn a_fifo_git_would_read_refuses_the_repository() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        git2::Repository::init(&work).unwrap();
        assert!(head_info(&work).is_ok());
        let fifo = dir.path().join("trap");
        let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let config = work.join(".git/config");
        let plain = std::fs::read_to_string(&config).unwrap();
        for (key, value) in [
            ("include", "path"),
            ("core", "excludesFile"),
            ("core", "attributesFile"),
        ] {
            std::fs::write(
                &config,
                format!("{plain}[{key}]\n\t{value} = {}\n", fifo.display()),
            )
            .unwrap();
            match head_info(&work) {
                Err(e @ GitError::UnsafeFile { .. }) => {
                    let said = e.to_string();
                    assert!(said.contains("a FIFO") && said.contains("trap"), "{said}");
                }
                other => panic!("{key}.{value}: {other:?}"),
            }
        }
        std::fs::write(&config, &plain).unwrap();
        // The work tree's own files are looked at before git walks it.
        std::os::unix::fs::symlink(&fifo, work.join(".gitignore")).unwrap();
        let opts = SnapshotOptions {
            include_untracked: true,
            max_file_bytes: 1024,
        };
        assert!(matches!(
            snapshot(&Repositories::default(), &work, &opts),
            Err(GitError::UnsafeFile { .. })
        ));
        assert_eq!(project_files(&work, true), None);
    }

    #[test]
    fn git_work_past_its_deadline_marks_the_work_tree_stuck_until_it_returns() {
        let dir = tempfile::tempdir().unwrap();
        let repositories = Repositories::default();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let slow = repositories.bounded(
            dir.path(),
            std::time::Duration::from_millis(50),
            move |_| {
                let _ = released.recv();
                Ok(1)
            },
        );
        assert!(matches!(slow, Err(GitError::TimedOut { .. })), "{slow:?}");
        assert!(repositories.is_stuck(dir.path()));
        let next = repositories.bounded(dir.path(), GIT_DEADLINE, |_| Ok(2));
        assert!(matches!(next, Err(GitError::Stuck { .. })), "{next:?}");
        release.send(()).unwrap();
        assert!(
            frees_within_two_seconds(&repositories, dir.path()),
            "the mark outlived the work"
        );
        assert_eq!(
            repositories
                .bounded(dir.path(), GIT_DEADLINE, |_| Ok(3))
                .unwrap(),
            3
        );
    }

    #[test]
    fn trailer_values_hold_no_line_breaks() {
        assert_eq!(trailer_value("plain ünïcode"), "plain ünïcode");
        assert_eq!(
            trailer_value("a\nHookd-Session: x\r\t\u{1b}[0m\u{2028}"),
            "a\\nHookd-Session: x\\r\\t\\u{1b}[0m\\u{2028}"
        );
        let snapshot = Snapshot {
            tree: git2::Oid::ZERO_SHA1,
            head: None,
            branch: "main\nHookd-Base: forged".into(),
            state: "clean".into(),
            skipped: vec![Skipped {
                path: "big\nHookd-Session: forged".into(),
                reason: SkipReason::TooLarge(9),
            }],
            workdir: PathBuf::new(),
        };
        let meta = CheckpointMeta {
            session: Some("real\nHookd-Trigger: forged".into()),
            trigger: "manual".into(),
            tokens: None,
        };
        let message = checkpoint_message(&meta, &snapshot);
        let t = trailers(&message);
        assert_eq!(t["Trigger"], "manual");
        assert_eq!(t["Base"], "unborn");
        assert_eq!(t["Session"], "real\\nHookd-Trigger: forged");
        // Only hookd's own trailer block counts, first key first.
        let t =
            trailers("Title\n\nHookd-Session: in the body\n\nHookd-Session: a\nHookd-Session: b\n");
        assert_eq!(t["Session"], "a");
    }

    #[test]
    fn only_plain_names_are_restored() {
        for bad in [
            &b""[..],
            b".",
            b"..",
            b".git",
            b".GIT",
            b".Git. ",
            b"GIT~1",
            b"a/b",
            b"a\0b",
        ] {
            assert!(unsafe_component(bad).is_some(), "{bad:?}");
        }
        for good in [
            &b"a.txt"[..],
            b".gitignore",
            b".github",
            b"git",
            b"...",
            b".git2",
        ] {
            assert!(unsafe_component(good).is_none(), "{good:?}");
        }
        assert_eq!(
            requested_path(Path::new("./src/lib.rs")).unwrap(),
            [b"src".to_vec(), b"lib.rs".to_vec()]
        );
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            ".git/config",
            "a/.GIT",
        ] {
            assert!(requested_path(Path::new(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn paths_inside_a_git_dir_are_recognized() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        git2::Repository::init(&work).unwrap();
        std::fs::create_dir_all(work.join("src")).unwrap();
        assert!(!project_is_inside_git_dir(dir.path()));
        assert!(!project_is_inside_git_dir(&work));
        assert!(!project_is_inside_git_dir(&work.join("src")));
        assert!(project_is_inside_git_dir(&work.join(".git")));
        assert!(project_is_inside_git_dir(&work.join(".git/refs/heads")));
        assert!(project_is_inside_git_dir(&work.join(".GIT/not-there")));
        std::os::unix::fs::symlink(work.join(".git/refs"), dir.path().join("link")).unwrap();
        assert!(project_is_inside_git_dir(&dir.path().join("link")));

        let bare = dir.path().join("bare.git");
        git2::Repository::init_bare(&bare).unwrap();
        assert!(project_is_inside_git_dir(&bare));
        assert!(project_is_inside_git_dir(&bare.join("objects")));

        // A separate git dir, wherever it is, whatever its name.
        let separate = dir.path().join("separate");
        let mut opts = git2::RepositoryInitOptions::new();
        opts.workdir_path(&dir.path().join("project"))
            .no_dotgit_dir(true);
        git2::Repository::init_opts(&separate, &opts).unwrap();
        assert!(project_is_inside_git_dir(&separate));
        assert!(!project_is_inside_git_dir(&dir.path().join("project")));

        // A work tree whose own files look like a git dir's is a work tree.
        std::fs::write(work.join("HEAD"), "not git's\n").unwrap();
        std::fs::create_dir_all(work.join("objects")).unwrap();
        std::fs::create_dir_all(work.join("refs")).unwrap();
        assert!(!project_is_inside_git_dir(&work));
        assert!(!project_is_inside_git_dir(&work.join("refs")));
    }
}

//! Everything hookd does with git, through libgit2. Nothing here writes the
//! user's index, HEAD, stash or working tree (only `restore`, which a person
//! asks for by name, writes working-tree files).
//!
//! A checkpoint snapshots the working tree through hookd's own index
//! (`<git dir>/hookd/index`, kept between runs so unchanged files are not
//! hashed again), writes a "WIP: Pre-compaction checkpoint" commit and moves
//! `refs/hookd/checkpoints/<branch>` to it with a compare-and-swap.

use crate::path_locks::PathLocks;
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
    #[error(
        "{path} is a git directory without a working tree (a bare repository): there is nothing to checkpoint"
    )]
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
    #[error("refusing to move `{reference}`: {why}; no checkpoint was made")]
    UnsafeRef { reference: String, why: String },

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
    let Some(root) = work_tree_root(project) else {
        // A bare repository has no work tree to find: say so, not that
        // there is no repository.
        let canonical = project
            .canonicalize()
            .unwrap_or_else(|_| project.to_path_buf());
        let named_dot_git = canonical
            .file_name()
            .is_some_and(|n| n.as_bytes().eq_ignore_ascii_case(b".git"));
        return Err(if is_git_dir(&canonical) && !named_dot_git {
            GitError::Bare { path: shown() }
        } else {
            GitError::NotARepository { path: shown() }
        });
    };
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
/// checks, its config and the user's index are read once. Cloning shares
/// it. Each step runs on [`Repositories::bounded`]'s thread; the lock is
/// only there because that thread is not the caller's.
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
    /// cannot be bound again (hookd's must not pass for it).
    fn with_users_index(&self) -> Option<std::sync::MutexGuard<'_, Opened>> {
        let mut opened = self.opened();
        if opened.index_is_hookds {
            // Opened again rather than given the index file on its own: a
            // status of a large tree through an index read that way hashed
            // every file (a save took half as long again).
            opened.repo = open(&self.project).ok()?;
            opened.index_is_hookds = false;
        }
        Some(opened)
    }

    /// See [`snapshot`]. The user's index, as the repository loaded it, is
    /// bound back afterwards, so that the steps after it read the same
    /// repository rather than one opened again.
    pub fn snapshot(
        &self,
        repositories: &Repositories,
        opts: &SnapshotOptions,
    ) -> Result<Snapshot, GitError> {
        let mut opened = self.opened();
        if opened.index_is_hookds {
            // An earlier snapshot could not bind the user's index back.
            opened.repo = open(&self.project)?;
            opened.index_is_hookds = false;
        }
        // Read again if git changed it since an earlier step loaded it.
        let users = opened
            .repo
            .index()
            .ok()
            .and_then(|mut index| index.read(false).is_ok().then_some(index));
        opened.index_is_hookds = true;
        let snapshot = snapshot_of(
            repositories,
            &opened.repo,
            users.as_ref(),
            &self.project,
            opts,
        );
        if let Some(mut users) = users
            && opened.repo.set_index(&mut users).is_ok()
        {
            opened.index_is_hookds = false;
        }
        snapshot
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

    /// Whether the user's index holds a file under `dir` (a path from the
    /// work tree's root ending in `/`); `None` when it cannot be read.
    pub fn tracks_under(&self, dir: &str) -> Option<bool> {
        let opened = self.with_users_index()?;
        let index = opened.repo.index().ok()?;
        Some(index.iter().any(|e| e.path.starts_with(dir.as_bytes())))
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

/// How a series of git steps reaches a project's repository: through one
/// its caller opened, by its path, or not at all when the caller already
/// failed to open it (asking again would only fail again, or wait again).
#[derive(Debug, Clone)]
pub enum Access {
    Opened(OpenRepository),
    ByPath,
    Unavailable,
}

impl Access {
    /// Through the repository `opened`, or not at all when it could not be.
    pub fn of<E>(opened: &Result<OpenRepository, E>) -> Access {
        match opened {
            Ok(repo) => Access::Opened(repo.clone()),
            Err(_) => Access::Unavailable,
        }
    }

    /// See [`project_files`].
    pub fn project_files(&self, project: &Path, untracked: bool) -> Option<Vec<String>> {
        match self {
            Access::Opened(repo) => repo.project_files(untracked),
            Access::ByPath => project_files(project, untracked),
            Access::Unavailable => None,
        }
    }

    /// See [`last_changes`].
    pub fn last_changes(
        &self,
        project: &Path,
        paths: &[String],
        changed: Option<&[String]>,
        now_ms: u64,
        window_ms: u64,
    ) -> Option<HashMap<String, u64>> {
        match self {
            Access::Opened(repo) => repo.last_changes(paths, changed, now_ms, window_ms),
            Access::ByPath => last_changes(project, paths, changed, now_ms, window_ms),
            Access::Unavailable => None,
        }
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

/// `users` is the user's index (`None` when it cannot be read).
fn snapshot_of(
    repositories: &Repositories,
    repo: &git2::Repository,
    users: Option<&git2::Index>,
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
    let tracked: HashSet<Vec<u8>> = users
        .map(|index| index.iter().map(|e| e.path).collect())
        .unwrap_or_default();
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
        applied += keep_users_blobs(users, &mut index, &filtered)?;
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
    users: Option<&git2::Index>,
    index: &mut git2::Index,
    paths: &[PathBuf],
) -> Result<usize, GitError> {
    let mut changed = 0;
    for path in paths {
        let theirs = users.and_then(|u| u.get_path(path, 0));
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
    let refused = |why: String| GitError::UnsafeRef {
        reference: reference.to_owned(),
        why,
    };
    // Refs live in the common git directory (shared by linked worktrees).
    let git_dir =
        crate::project_fs::Dir::open(repo.commondir()).map_err(|e| refused(e.to_string()))?;
    match git_dir.open_path(parent) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(refused(e.to_string())),
    }
    // libgit2 appends to the ref's log when `logs/<ref>` exists, following
    // a link: neither it nor a directory on its way may be one.
    let log = Path::new("logs").join(reference);
    let (Some(log_dir), Some(name)) = (log.parent(), log.file_name()) else {
        return Ok(());
    };
    let dir = match git_dir.open_path(log_dir) {
        Ok(dir) => dir,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(refused(format!("its log: {e}"))),
    };
    match dir.entry(name.as_encoded_bytes()) {
        Ok(crate::project_fs::Entry::Missing | crate::project_fs::Entry::File { .. }) => Ok(()),
        Ok(_) => Err(refused(format!(
            "its log {} is not a plain file",
            log.display()
        ))),
        Err(e) => Err(refused(format!("its log: {e}"))),
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
        let expected = previous.as_ref().map_or(git2::Oid::ZERO_SHA1, |p| p.id());
        let op = "move the checkpoint ref";
        if move_ref_if_unmoved(repo, &reference, oid, expected, "hookd: checkpoint", op)? {
            return Ok(CommitOutcome::Created {
                sha: oid.to_string(),
                reference,
            });
        }
    }
    Err(kept_moving("move the checkpoint ref"))
}

/// Moves `reference` to `oid` if it still holds `expected`, checked under
/// git's lock on it (the zero id: it must not exist yet; libgit2 checks
/// `force = false` before it takes the lock, so two first writers could
/// both pass that check). `Ok(false)`: another writer moved it or held its
/// lock meanwhile; read it again and start over on top of theirs.
pub(crate) fn move_ref_if_unmoved(
    repo: &git2::Repository,
    reference: &str,
    oid: git2::Oid,
    expected: git2::Oid,
    log: &str,
    op: &'static str,
) -> Result<bool, GitError> {
    refs_dir_is_real(repo, reference)?;
    clear_stale_lock(&repo.commondir().join(format!("{reference}.lock")));
    match repo.reference_matching(reference, oid, true, expected, log) {
        Ok(_) => Ok(true),
        Err(e)
            if matches!(
                e.code(),
                git2::ErrorCode::Modified | git2::ErrorCode::Exists
            ) =>
        {
            Ok(false)
        }
        Err(e) if e.code() == git2::ErrorCode::Locked => {
            std::thread::sleep(REF_RETRY_PAUSE);
            Ok(false)
        }
        Err(e) => Err(GitError::Git { op, source: e }),
    }
}

/// A ref that moved under every one of our attempts.
pub(crate) fn kept_moving(op: &'static str) -> GitError {
    GitError::Git {
        op,
        source: git2::Error::from_str("it kept moving under us; try again"),
    }
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
pub fn trailer_value(value: &str) -> String {
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

/// Every `Hookd-<Key>: value` of a message's last paragraph (the block
/// hookd writes), in order.
pub fn trailer_lines(message: &str) -> Vec<(String, String)> {
    let block = message
        .trim_end()
        .rsplit_once("\n\n")
        .map_or("", |(_, block)| block);
    block
        .lines()
        .filter_map(|l| l.strip_prefix("Hookd-"))
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// The trailers of a checkpoint message, the first of each key.
fn trailers(message: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for (key, value) in trailer_lines(message) {
        out.entry(key).or_insert(value);
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
        // Only another machine's exported checkpoint says which it came from.
        machine: t
            .get("Machine-Name")
            .filter(|m| protocol::config::check_machine_name(m).is_ok())
            .cloned(),
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
    let (head, now) = trees_of(&repo, &snapshot)?;
    let base = match rev {
        Some(rev) => Some(resolve(&repo, rev)?.tree().map_err(git("read a tree"))?),
        None => head,
    };
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

pub mod export;
mod restore;
mod special_files;
pub mod sync_objects;
pub mod synced;

pub use restore::restore;

#[cfg(test)]
mod tests;

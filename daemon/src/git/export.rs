//! The git side of what a machine puts on its sync refs: saved-state
//! commits, checkpoints with what must not leave the machine filtered out,
//! and the memory's tree in its shuttle repository. Which file is secret,
//! and what a message says, the caller decides (`sync::export`): here are
//! the trees, commits and ref moves.

use super::{GitError, OWN_REFS, REF_ATTEMPTS, git, open};
use git2::{Oid, Repository};
use std::collections::BTreeMap;
use std::path::Path;

/// Files larger than this are not read for secrets: they are left out.
pub const MAX_SCANNED_BYTES: usize = 8 * 1024 * 1024;

/// A commit of a flat tree, as the caller makes it for a branch.
pub struct FlatCommit {
    pub reference: String,
    /// (file name, content)
    pub files: Vec<(&'static str, Vec<u8>)>,
    pub message: String,
}

/// Which tip of a sync ref a new commit may take as its parent, and the
/// record of each commit made (written before the ref moves to it). A
/// sync ref is an ordinary ref anyone with the repository can move: a tip
/// the chain does not vouch for is never built on.
pub trait Chain {
    fn continues(&self, tip: &str) -> bool;
    fn made(&self, commit: &str) -> Result<(), String>;
}

/// hookd's own bare repository (the memory shuttle): every tip is hookd's.
pub struct OwnRepository;

impl Chain for OwnRepository {
    fn continues(&self, _: &str) -> bool {
        true
    }

    fn made(&self, _: &str) -> Result<(), String> {
        Ok(())
    }
}

/// When the repository of `project` has the remote `remote`: the commit
/// `compose` makes for the branch HEAD is on (`detached` when none),
/// committed onto its reference (its parent the commit there now, the ref
/// moved with a compare-and-swap, when `chain` continues it). `None` when
/// there is no such remote. The repository is opened once.
pub fn commit_for_branch(
    project: &Path,
    remote: &str,
    chain: &dyn Chain,
    compose: impl FnOnce(&str) -> FlatCommit,
) -> Result<Option<String>, GitError> {
    let repo = open(project)?;
    let has_remote = super::sync_objects::configured_url(&repo, remote)
        .map_err(git("read the git config"))?
        .is_some();
    if !has_remote {
        return Ok(None);
    }
    let (branch, _) = super::branch_and_head(&repo)?;
    let commit = compose(&branch);
    let files: Vec<(&str, &[u8])> = commit
        .files
        .iter()
        .map(|(name, bytes)| (*name, bytes.as_slice()))
        .collect();
    commit_files_on(&repo, &commit.reference, &files, &commit.message, chain).map(Some)
}

fn commit_files_on(
    repo: &Repository,
    reference: &str,
    files: &[(&str, &[u8])],
    message: &str,
    chain: &dyn Chain,
) -> Result<String, GitError> {
    let mut builder = repo.treebuilder(None).map_err(git("start a tree"))?;
    for (name, bytes) in files {
        let blob = repo.blob(bytes).map_err(git("write a blob"))?;
        builder
            .insert(name, blob, 0o100644)
            .map_err(git("add a file to the tree"))?;
    }
    let tree = builder.write().map_err(git("write the tree"))?;
    let signature = hookd_signature()?;
    advance(repo, reference, chain, |parent| {
        let tree = repo.find_tree(tree).map_err(git("read the tree"))?;
        let parents: Vec<&git2::Commit> = parent.into_iter().collect();
        repo.commit(None, &signature, &signature, message, &tree, &parents)
            .map_err(git("write the commit"))
    })
    .map(|oid| oid.to_string())
}

fn hookd_signature() -> Result<git2::Signature<'static>, GitError> {
    git2::Signature::now("hookd", "hookd@localhost").map_err(git("make a signature"))
}

/// Moves `reference` to the commit `make` writes on top of the one there
/// now (when `chain` continues it; else on none), with a compare-and-swap;
/// when another writer moved it meanwhile, `make` runs again on top of
/// theirs. The commit is given to `chain` before the ref moves.
fn advance(
    repo: &Repository,
    reference: &str,
    chain: &dyn Chain,
    make: impl Fn(Option<&git2::Commit>) -> Result<Oid, GitError>,
) -> Result<Oid, GitError> {
    if !reference.starts_with(OWN_REFS) || !git2::Reference::is_valid_name(reference) {
        return Err(GitError::ForeignRef(reference.to_owned()));
    }
    for _ in 0..REF_ATTEMPTS {
        let current = repo
            .find_reference(reference)
            .ok()
            .and_then(|r| r.resolve().ok())
            .and_then(|r| r.target());
        let previous = current
            .filter(|tip| chain.continues(&tip.to_string()))
            .and_then(|tip| repo.find_commit(tip).ok());
        let oid = make(previous.as_ref())?;
        chain.made(&oid.to_string()).map_err(|why| GitError::Git {
            op: "record the sync commit",
            source: git2::Error::from_str(&why),
        })?;
        let expected = current.unwrap_or(Oid::ZERO_SHA1);
        let op = "move the sync ref";
        if super::move_ref_if_unmoved(repo, reference, oid, expected, "hookd: sync", op)? {
            return Ok(oid);
        }
    }
    Err(super::kept_moving("move the sync ref"))
}

/// One local checkpoint ref and where its export stands.
#[derive(Debug, Clone)]
pub struct LocalCheckpoint {
    /// The part after the prefix: the branch.
    pub branch: String,
    pub tip: String,
    /// The tip's message (its trailers say its base, trigger, session).
    pub message: String,
}

/// Every checkpoint ref under `ref_prefix`, with its tip.
pub fn local_checkpoints(
    project: &Path,
    ref_prefix: &str,
) -> Result<Vec<LocalCheckpoint>, GitError> {
    let repo = open(project)?;
    let mut out = Vec::new();
    let refs = repo
        .references_glob(&format!("{ref_prefix}/*"))
        .map_err(git("list checkpoint refs"))?;
    for reference in refs.flatten() {
        let Ok(name) = reference.name() else {
            continue;
        };
        let Some(branch) = name.strip_prefix(&format!("{ref_prefix}/")) else {
            continue;
        };
        let Ok(commit) = reference.peel_to_commit() else {
            continue;
        };
        out.push(LocalCheckpoint {
            branch: branch.to_owned(),
            tip: commit.id().to_string(),
            message: commit.message().unwrap_or("").to_owned(),
        });
    }
    out.sort_by(|a, b| a.branch.cmp(&b.branch));
    Ok(out)
}

/// The commit `reference` points at and its message, if any.
pub fn tip_message(project: &Path, reference: &str) -> Result<Option<(String, String)>, GitError> {
    let repo = open(project)?;
    let commit = repo
        .find_reference(reference)
        .ok()
        .and_then(|r| r.peel_to_commit().ok());
    Ok(commit.map(|c| (c.id().to_string(), c.message().unwrap_or("").to_owned())))
}

/// Why a file stays on this machine, or `None` when it may leave. Called
/// with the file's path and, when the name alone did not decide, its bytes.
pub trait Verdict {
    fn by_name(&self, path: &str) -> Option<String>;
    fn by_content(&self, path: &str, bytes: &[u8]) -> Option<String>;
}

/// What [`filter_checkpoint`] made.
#[derive(Debug, Clone)]
pub struct Filtered {
    pub commit: String,
    /// Every file left out of the exported tree, and why.
    pub left_out: BTreeMap<String, String>,
    /// How many files' contents were read to decide.
    pub files_read: usize,
}

/// The exported commit of local checkpoint `source`: its tree less what
/// `verdict` keeps here, on top of `reference`'s commit (none for the
/// first), never any commit of the user's. When the previous exported
/// commit came from `previous_source` and left out `previous_left_out`,
/// only the files that changed since are read again. `message` is given
/// the files left out.
pub fn filter_checkpoint(
    project: &Path,
    source: &str,
    reference: &str,
    previous: Option<(&str, BTreeMap<String, String>)>,
    verdict: &dyn Verdict,
    message: &dyn Fn(&BTreeMap<String, String>) -> String,
    chain: &dyn Chain,
) -> Result<Filtered, GitError> {
    let repo = open(project)?;
    let source = repo
        .find_commit(Oid::from_str(source).map_err(git("read the checkpoint's id"))?)
        .map_err(git("read the checkpoint"))?;
    let source_tree = source.tree().map_err(git("read the checkpoint's tree"))?;
    // A tip hookd did not make is no base: its tree could hold anything.
    let exported_tip = repo
        .find_reference(reference)
        .ok()
        .and_then(|r| r.peel_to_commit().ok())
        .filter(|c| chain.continues(&c.id().to_string()));
    // Incremental only when both ends of the last export are still here.
    let base = previous.and_then(|(previous_source, left_out)| {
        let old_source = repo
            .find_commit(Oid::from_str(previous_source).ok()?)
            .ok()?
            .tree()
            .ok()?;
        let old_filtered = exported_tip.as_ref()?.tree().ok()?;
        Some((old_source, old_filtered, left_out))
    });
    let mut files_read = 0;
    let incremental = base.and_then(|(old_source, old_filtered, left_out)| {
        let made = filter_changes(
            &repo,
            (&old_source, &old_filtered, left_out),
            &source_tree,
            verdict,
            &mut files_read,
        );
        // A change the update cannot take (a file where a directory was):
        // the whole tree is read again.
        made.map_err(|e| tracing::debug!("sync: exported tree made anew: {e}"))
            .ok()
    });
    let (tree, left_out) = match incremental {
        Some(made) => made,
        None => filter_all(&repo, &source_tree, verdict, &mut files_read)?,
    };
    let text = message(&left_out);
    let author = source.author().to_owned();
    let committer = source.committer().to_owned();
    let commit = advance(&repo, reference, chain, |parent| {
        let tree = repo
            .find_tree(tree)
            .map_err(git("read the exported tree"))?;
        let parents: Vec<&git2::Commit> = parent.into_iter().collect();
        repo.commit(None, &author, &committer, &text, &tree, &parents)
            .map_err(git("write the exported checkpoint"))
    })?;
    Ok(Filtered {
        commit: commit.to_string(),
        left_out,
        files_read,
    })
}

/// The exported tree of `source_tree` made from the last one: only the
/// files that changed since its source are judged.
fn filter_changes(
    repo: &Repository,
    (old_source, old_filtered, mut left_out): (&git2::Tree, &git2::Tree, BTreeMap<String, String>),
    source_tree: &git2::Tree,
    verdict: &dyn Verdict,
    files_read: &mut usize,
) -> Result<(Oid, BTreeMap<String, String>), GitError> {
    let diff = repo
        .diff_tree_to_tree(Some(old_source), Some(source_tree), None)
        .map_err(git("compare the checkpoints"))?;
    let mut update = git2::build::TreeUpdateBuilder::new();
    for delta in diff.deltas() {
        let new = delta.new_file();
        let old_path = delta.old_file().path().and_then(|p| p.to_str());
        let Some(path) = new.path().and_then(|p| p.to_str()).or(old_path) else {
            continue;
        };
        left_out.remove(path);
        if delta.status() == git2::Delta::Deleted {
            update.remove(path);
            continue;
        }
        let why = if new.mode() == git2::FileMode::Commit {
            None
        } else {
            judge(repo, path, new.id(), verdict, files_read)?
        };
        match why {
            Some(why) => {
                left_out.insert(path.to_owned(), why);
                update.remove(path);
            }
            None => {
                update.upsert(path, new.id(), new.mode());
            }
        }
    }
    let tree = update
        .create_updated(repo, old_filtered)
        .map_err(git("write the exported tree"))?;
    Ok((tree, left_out))
}

/// The exported tree of `source_tree`, every file judged.
fn filter_all(
    repo: &Repository,
    source_tree: &git2::Tree,
    verdict: &dyn Verdict,
    files_read: &mut usize,
) -> Result<(Oid, BTreeMap<String, String>), GitError> {
    let mut left_out = BTreeMap::new();
    let mut update = git2::build::TreeUpdateBuilder::new();
    let mut failed = None;
    source_tree
        .walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
            if entry.kind() != Some(git2::ObjectType::Blob) {
                return git2::TreeWalkResult::Ok;
            }
            let path = format!("{dir}{}", entry.name().unwrap_or(""));
            match judge(repo, &path, entry.id(), verdict, files_read) {
                Ok(Some(why)) => {
                    update.remove(&path);
                    left_out.insert(path, why);
                }
                Ok(None) => {}
                Err(e) => {
                    failed = Some(e);
                    return git2::TreeWalkResult::Abort;
                }
            }
            git2::TreeWalkResult::Ok
        })
        .ok();
    if let Some(e) = failed {
        return Err(e);
    }
    let tree = update
        .create_updated(repo, source_tree)
        .map_err(git("write the exported tree"))?;
    Ok((tree, left_out))
}

/// Why the blob `id` at `path` stays here, if it does.
fn judge(
    repo: &Repository,
    path: &str,
    id: Oid,
    verdict: &dyn Verdict,
    files_read: &mut usize,
) -> Result<Option<String>, GitError> {
    if let Some(why) = verdict.by_name(path) {
        return Ok(Some(why));
    }
    let blob = repo.find_blob(id).map_err(git("read a checkpoint file"))?;
    *files_read += 1;
    if blob.size() > MAX_SCANNED_BYTES {
        return Ok(Some(format!(
            "too large to check for secrets: {} bytes",
            blob.size()
        )));
    }
    Ok(verdict.by_content(path, blob.content()))
}

/// Commits `files` (path → bytes, paths with `/` for subtrees) onto
/// `reference` in the bare repository at `repo_path`, made when missing.
/// `None` when the tree is the one already there: nothing to commit.
pub fn commit_tree_in_bare(
    repo_path: &Path,
    reference: &str,
    files: &BTreeMap<String, Vec<u8>>,
    message: &str,
) -> Result<Option<String>, GitError> {
    super::setup_libgit2();
    let repo = match Repository::open_bare(repo_path) {
        Ok(repo) => repo,
        Err(_) => Repository::init_bare(repo_path).map_err(git("make the memory repository"))?,
    };
    let mut update = git2::build::TreeUpdateBuilder::new();
    for (path, bytes) in files {
        let blob = repo.blob(bytes).map_err(git("write a blob"))?;
        update.upsert(path.as_str(), blob, git2::FileMode::Blob);
    }
    let empty = repo
        .treebuilder(None)
        .and_then(|b| b.write())
        .and_then(|id| repo.find_tree(id))
        .map_err(git("write an empty tree"))?;
    let tree = update
        .create_updated(&repo, &empty)
        .map_err(git("write the memory tree"))?;
    let unchanged = repo
        .find_reference(reference)
        .ok()
        .and_then(|r| r.peel_to_commit().ok())
        .is_some_and(|c| c.tree_id() == tree);
    if unchanged {
        return Ok(None);
    }
    let signature = hookd_signature()?;
    let commit = advance(&repo, reference, &OwnRepository, |parent| {
        let tree = repo.find_tree(tree).map_err(git("read the memory tree"))?;
        let parents: Vec<&git2::Commit> = parent.into_iter().collect();
        repo.commit(None, &signature, &signature, message, &tree, &parents)
            .map_err(git("write the memory commit"))
    })?;
    Ok(Some(commit.to_string()))
}

//! Sync's git2 side: where a repository's sync goes (its remote's URL, read
//! from its config and nothing run), which refs this machine pushes, and
//! the copy of what a fetch brought into hookd's shuttle repository into
//! the project's object database and its `refs/hookd/sync/<other>/` refs.
//! Never the user's refs, index, HEAD or work tree.

use super::open;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What sync needs of a project's repository, read in one opening.
#[derive(Debug, Clone)]
pub struct SyncRepository {
    /// The repository's common git dir (shared by its worktrees).
    pub common_dir: PathBuf,
    /// A name for the common git dir that fits in a file name: the same
    /// repository always gets the same shuttle.
    pub digest: String,
    /// Where its objects are (the shuttle reads them through alternates).
    pub objects_dir: PathBuf,
    /// The URL of the elected remote, or why there is none.
    pub url: Result<String, String>,
    /// This machine's sync refs: (name, sha), to push.
    pub own_refs: Vec<(String, String)>,
}

/// The repository of `project`, its remote `remote`'s URL (`pushurl`, else
/// `url`) and the refs under `own_prefix`. Reading the config runs nothing.
pub fn sync_repository(
    project: &Path,
    remote: &str,
    own_prefix: &str,
) -> Result<SyncRepository, String> {
    let repo = open(project).map_err(|e| e.to_string())?;
    let common_dir = repo.commondir().to_path_buf();
    let digest = git2::Oid::hash_object(
        git2::ObjectType::Blob,
        common_dir.as_os_str().as_encoded_bytes(),
    )
    .map_err(|e| format!("cannot name the shuttle of {}: {e}", common_dir.display()))?
    .to_string();
    let url = remote_url(&repo, project, remote);
    let own_refs = refs_under(&repo, own_prefix)?;
    Ok(SyncRepository {
        objects_dir: common_dir.join("objects"),
        common_dir,
        digest,
        url,
        own_refs,
    })
}

fn remote_url(repo: &git2::Repository, project: &Path, remote: &str) -> Result<String, String> {
    let missing = || {
        format!(
            "no remote `{remote}` in {}: add one with `git remote add {remote} <url>`",
            project.display()
        )
    };
    let config = repo
        .config()
        .map_err(|e| format!("cannot read the git config of {}: {e}", project.display()))?;
    let url = [
        format!("remote.{remote}.pushurl"),
        format!("remote.{remote}.url"),
    ]
    .iter()
    .find_map(|key| config.get_string(key).ok())
    .ok_or_else(missing)?;
    protocol::config::check_remote_url(&url).map_err(|why| {
        format!(
            "the remote `{remote}` of {} is refused: {why}",
            project.display()
        )
    })?;
    Ok(url)
}

/// Every direct ref under `prefix` (which ends in `/`), as (name, sha).
fn refs_under(repo: &git2::Repository, prefix: &str) -> Result<Vec<(String, String)>, String> {
    let glob = format!("{prefix}*");
    let refs = repo
        .references_glob(&glob)
        .map_err(|e| format!("cannot list {glob}: {e}"))?;
    let mut out = Vec::new();
    for r in refs.flatten() {
        if let (Ok(name), Some(target)) = (r.name(), r.target()) {
            out.push((name.to_owned(), target.to_string()));
        }
    }
    out.sort();
    Ok(out)
}

/// The refs under `prefix` of the bare repository `git_dir` (a shuttle).
pub fn shuttle_refs(git_dir: &Path, prefix: &str) -> Result<Vec<(String, String)>, String> {
    let repo = git2::Repository::open_bare(git_dir)
        .map_err(|e| format!("cannot open {}: {e}", git_dir.display()))?;
    refs_under(&repo, prefix)
}

/// What a copy into the project did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CopyReport {
    /// The refs moved to what was fetched.
    pub moved: Vec<String>,
    /// The objects written into the project's database.
    pub objects: usize,
    /// Fetched refs left alone, each with why.
    pub refused: Vec<String>,
}

/// Copies every ref of `shuttle` under `prefix` that `accept` takes (and
/// whose name git takes) into `project`'s repository: first the objects it
/// reaches that the project lacks, then `taken` is told its tip (also when
/// the project's ref is there already: the remote vouches for it), then
/// the ref of the same name is moved. A tip `taken` refuses is not moved to.
pub fn copy_fetched(
    project: &Path,
    shuttle: &Path,
    prefix: &str,
    accept: impl Fn(&str) -> Result<(), &'static str>,
    taken: &dyn Fn(&str) -> Result<(), String>,
) -> Result<CopyReport, String> {
    let repo = open(project).map_err(|e| e.to_string())?;
    let objects = repo.commondir().join("objects");
    check_objects_dir(&objects, shuttle)?;
    let from = git2::Repository::open_bare(shuttle)
        .map_err(|e| format!("cannot open {}: {e}", shuttle.display()))?;
    let mut report = CopyReport::default();
    for (name, sha) in refs_under(&from, prefix)? {
        let valid = match git2::Reference::is_valid_name(&name) {
            true => accept(&name),
            false => Err("not a valid ref name"),
        };
        if let Err(why) = valid {
            report.refused.push(format!("{name}: {why}"));
            continue;
        }
        let oid = git2::Oid::from_str(&sha).map_err(|e| format!("{name}: {e}"))?;
        let there = repo.refname_to_id(&name).ok() == Some(oid);
        if !there {
            report.objects += copy_reachable(&from, &repo, oid, &name)?;
        }
        if let Err(why) = taken(&sha) {
            report.refused.push(format!("{name}: {why}"));
            continue;
        }
        if there {
            continue;
        }
        repo.reference(&name, oid, true, "hookd sync: fetched")
            .map_err(|e| format!("cannot move {name} in {}: {e}", project.display()))?;
        report.moved.push(name);
    }
    Ok(report)
}

/// The project's object directory must be a real directory, owned by the
/// user hookd runs as (the owner of the shuttle hookd made), before
/// anything is written into it.
fn check_objects_dir(objects: &Path, shuttle: &Path) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(objects)
        .map_err(|e| format!("cannot read {}: {e}", objects.display()))?;
    let mine = std::fs::metadata(shuttle)
        .map_err(|e| format!("cannot read {}: {e}", shuttle.display()))?
        .uid();
    if !meta.file_type().is_dir() || meta.uid() != mine {
        return Err(format!(
            "hookd writes fetched objects only into a real directory of yours, and {} is not one (a symlink, or another user's): nothing was copied",
            objects.display()
        ));
    }
    Ok(())
}

/// Copies the commits reachable from `tip` and their trees and blobs that
/// `to` lacks. A tree `to` already has is taken as complete (git writes
/// trees only after what they hold).
fn copy_reachable(
    from: &git2::Repository,
    to: &git2::Repository,
    tip: git2::Oid,
    name: &str,
) -> Result<usize, String> {
    let fail = |e: git2::Error| format!("cannot copy what {name} reaches: {e}");
    let source = from.odb().map_err(fail)?;
    let target = to.odb().map_err(fail)?;
    let mut walk = from.revwalk().map_err(fail)?;
    walk.push(tip).map_err(fail)?;
    if let Ok(known) = to.refname_to_id(name)
        && source.exists(known)
    {
        // Best effort: a ref moved by force may not be an ancestor.
        let _ = walk.hide(known);
    }
    let mut copied = 0;
    let mut commits = Vec::new();
    for oid in walk {
        let oid = oid.map_err(fail)?;
        if target.exists(oid) {
            continue;
        }
        let commit = from.find_commit(oid).map_err(fail)?;
        copied += copy_tree(from, &source, &target, commit.tree_id()).map_err(fail)?;
        commits.push(oid);
    }
    // Parents before children, each after its tree.
    for oid in commits.into_iter().rev() {
        copy_object(&source, &target, oid).map_err(fail)?;
        copied += 1;
    }
    Ok(copied)
}

fn copy_tree(
    from: &git2::Repository,
    source: &git2::Odb<'_>,
    target: &git2::Odb<'_>,
    tree: git2::Oid,
) -> Result<usize, git2::Error> {
    if target.exists(tree) {
        return Ok(0);
    }
    let mut copied = 0;
    for entry in from.find_tree(tree)?.iter() {
        match entry.kind() {
            Some(git2::ObjectType::Tree) => copied += copy_tree(from, source, target, entry.id())?,
            Some(git2::ObjectType::Blob) if !target.exists(entry.id()) => {
                copy_object(source, target, entry.id())?;
                copied += 1;
            }
            // A submodule's commit is not in this repository.
            _ => {}
        }
    }
    copy_object(source, target, tree)?;
    Ok(copied + 1)
}

fn copy_object(
    source: &git2::Odb<'_>,
    target: &git2::Odb<'_>,
    oid: git2::Oid,
) -> Result<(), git2::Error> {
    let object = source.read(oid)?;
    let written = target.write(object.kind(), object.data())?;
    if written != oid {
        return Err(git2::Error::from_str(&format!(
            "object {oid} was written as {written}"
        )));
    }
    Ok(())
}

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
    let url = configured_url(repo, remote)
        .map_err(|e| format!("cannot read the git config of {}: {e}", project.display()))?
        .ok_or_else(missing)?;
    protocol::config::check_remote_url(&url).map_err(|why| {
        format!(
            "the remote `{remote}` of {} is refused: {why}",
            project.display()
        )
    })?;
    Ok(url)
}

/// Where the remote `remote` of `repo` is pushed to (`pushurl`, else
/// `url`), or `None` when the repository has no such remote. Reading the
/// config runs nothing.
pub(super) fn configured_url(
    repo: &git2::Repository,
    remote: &str,
) -> Result<Option<String>, git2::Error> {
    let config = repo.config()?;
    Ok([
        format!("remote.{remote}.pushurl"),
        format!("remote.{remote}.url"),
    ]
    .iter()
    .find_map(|key| config.get_string(key).ok()))
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
        match copy_one(&from, &repo, &name, &sha, taken) {
            Ok(Some(objects)) => report.objects += objects,
            Ok(None) => continue,
            Err(why) => {
                report.refused.push(format!("{name}: {why}"));
                continue;
            }
        }
        report.moved.push(name);
    }
    Ok(report)
}

/// Copies what the fetched ref `name` at `sha` reaches into `to`, tells
/// `taken` its tip (also when the ref is there already: the remote vouches
/// for it), and moves the ref there: the number of objects written, or
/// `None` when the ref was already there.
fn copy_one(
    from: &git2::Repository,
    to: &git2::Repository,
    name: &str,
    sha: &str,
    taken: &dyn Fn(&str) -> Result<(), String>,
) -> Result<Option<usize>, String> {
    let oid = git2::Oid::from_str(sha).map_err(|e| e.to_string())?;
    let there = to.refname_to_id(name).ok() == Some(oid);
    let objects = if there {
        0
    } else {
        super::refs_dir_is_real(to, name).map_err(|e| e.to_string())?;
        copy_reachable(from, to, oid, name)?
    };
    taken(sha)?;
    if there {
        return Ok(None);
    }
    to.reference(name, oid, true, "hookd sync: fetched")
        .map_err(|e| format!("cannot move it: {e}"))?;
    Ok(Some(objects))
}

/// The project's object directory, and each directory in it (the fan-out
/// `ab/` a loose object goes to, `pack/`, `info/`), must be a real
/// directory owned by the user hookd runs as (the owner of the shuttle
/// hookd made) before anything is written there.
fn check_objects_dir(objects: &Path, shuttle: &Path) -> Result<(), String> {
    check_dir_is_mine(objects, shuttle)?;
    let entries = std::fs::read_dir(objects)
        .map_err(|e| format!("cannot read {}: {e}", objects.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot read {}: {e}", objects.display()))?;
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        if !is_file {
            check_dir_is_mine(&entry.path(), shuttle)?;
        }
    }
    Ok(())
}

fn check_dir_is_mine(objects: &Path, shuttle: &Path) -> Result<(), String> {
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

/// The deepest tree nesting a fetched commit may have (git's own default
/// limit): deeper is refused, not walked.
const MAX_TREE_DEPTH: usize = 2048;

/// Copies `root` and what it holds that `target` lacks, each tree after
/// its entries. Walked with a stack of its own, not recursion, so a
/// fetched tree nested deep cannot exhaust the thread's stack.
fn copy_tree(
    from: &git2::Repository,
    source: &git2::Odb<'_>,
    target: &git2::Odb<'_>,
    root: git2::Oid,
) -> Result<usize, git2::Error> {
    let mut copied = 0;
    // (tree, its depth, whether its entries are written already)
    let mut stack = vec![(root, 1, false)];
    while let Some((tree, depth, entries_written)) = stack.pop() {
        if entries_written {
            copy_object(source, target, tree)?;
            copied += 1;
            continue;
        }
        if target.exists(tree) {
            continue;
        }
        if depth > MAX_TREE_DEPTH {
            return Err(git2::Error::from_str(&format!(
                "its trees nest deeper than {MAX_TREE_DEPTH} levels"
            )));
        }
        stack.push((tree, depth, true));
        for entry in from.find_tree(tree)?.iter() {
            match entry.kind() {
                Some(git2::ObjectType::Tree) => stack.push((entry.id(), depth + 1, false)),
                Some(git2::ObjectType::Blob) if !target.exists(entry.id()) => {
                    copy_object(source, target, entry.id())?;
                    copied += 1;
                }
                // A submodule's commit is not in this repository.
                _ => {}
            }
        }
    }
    Ok(copied)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A commit in `repo` whose tree holds `file` under `depth` directories.
    fn commit_nested(repo: &git2::Repository, depth: usize) -> git2::Oid {
        let blob = repo.blob(b"{}\n").unwrap();
        let mut builder = repo.treebuilder(None).unwrap();
        builder.insert("file", blob, 0o100644).unwrap();
        let mut tree = builder.write().unwrap();
        for _ in 0..depth {
            let mut builder = repo.treebuilder(None).unwrap();
            builder.insert("d", tree, 0o040000).unwrap();
            tree = builder.write().unwrap();
        }
        let tree = repo.find_tree(tree).unwrap();
        let who = git2::Signature::now("t", "t@t.invalid").unwrap();
        repo.commit(None, &who, &who, "hookd: state", &tree, &[])
            .unwrap()
    }

    #[test]
    fn a_fetched_ref_that_cannot_be_copied_is_left_alone_and_the_others_are_copied() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        git2::Repository::init(&project).unwrap();
        let shuttle = git2::Repository::init_bare(dir.path().join("shuttle.git")).unwrap();
        let good = commit_nested(&shuttle, 3);
        let deep = commit_nested(&shuttle, MAX_TREE_DEPTH + 5);
        let blob = shuttle.blob(b"not a commit").unwrap();
        let prefix = "refs/hookd/sync/";
        for (name, oid) in [("good", good), ("deep", deep), ("blob", blob)] {
            shuttle
                .reference(&format!("{prefix}x-000000/state/{name}"), oid, true, "t")
                .unwrap();
        }
        let report =
            copy_fetched(&project, shuttle.path(), prefix, |_| Ok(()), &|_| Ok(())).unwrap();
        assert_eq!(report.moved, [format!("{prefix}x-000000/state/good")]);
        assert_eq!(report.refused.len(), 2, "{:?}", report.refused);
        assert!(
            report.refused[0].starts_with(&format!("{prefix}x-000000/state/blob: "))
                && report.refused[1].contains("nest deeper than 2048"),
            "{:?}",
            report.refused
        );
        let copied = git2::Repository::open(&project).unwrap();
        assert!(copied.find_commit(good).is_ok());
        assert!(copied.find_commit(deep).is_err());
        assert!(
            copied
                .find_reference(&format!("{prefix}x-000000/state/deep"))
                .is_err()
        );
    }
}

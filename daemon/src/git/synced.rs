//! Reading what other machines synced into a repository: the tips of their
//! saved-state refs, and the exported checkpoint that carries a local
//! checkpoint's sha. Everything read here came from another machine and is
//! bounded before it is read (blob sizes from the object header, walks by
//! count).

use super::{GitError, git, open, trailers};
use std::collections::HashMap;
use std::path::Path;

/// Commits walked back along one exported checkpoint chain at most.
const MAX_CHAIN_WALK: usize = 2_000;

/// The tip of one synced ref.
#[derive(Debug, Clone)]
pub struct SyncedCommit {
    pub reference: String,
    pub sha: String,
    /// The commit's `Hookd-` trailers (key without the prefix).
    pub trailers: HashMap<String, String>,
    /// The wanted top-level files it holds, each at most `max_bytes`; a
    /// larger one is named in `too_big` instead.
    pub files: Vec<(String, Vec<u8>)>,
    pub too_big: Vec<String>,
}

/// The refs under `prefix` and the commits they point at, as (name, sha):
/// nothing of the commits is read.
pub fn tips(project: &Path, prefix: &str) -> Result<Vec<(String, String)>, GitError> {
    let repo = open(project)?;
    let refs = repo
        .references_glob(&format!("{prefix}*"))
        .map_err(git("list the synced refs"))?;
    let mut out = Vec::new();
    for reference in refs.flatten() {
        if let (Ok(name), Ok(target)) = (reference.name(), reference.resolve())
            && let Some(sha) = target.target()
        {
            out.push((name.to_owned(), sha.to_string()));
        }
    }
    Ok(out)
}

/// The tips of the refs under `prefix` that `wanted` accepts (given the
/// ref's name and its commit's sha, before anything of the commit is
/// read), with the top-level `files` of each tip's tree (blobs only).
pub fn ref_tips(
    project: &Path,
    prefix: &str,
    wanted: &dyn Fn(&str, &str) -> bool,
    files: &[&str],
    max_bytes: usize,
) -> Result<Vec<SyncedCommit>, GitError> {
    let repo = open(project)?;
    let refs = repo
        .references_glob(&format!("{prefix}*"))
        .map_err(git("list the synced refs"))?;
    let odb = repo.odb().map_err(git("open the object database"))?;
    let mut out = Vec::new();
    for reference in refs.flatten() {
        let Some(name) = reference.name().ok().map(str::to_owned) else {
            continue;
        };
        let Some(sha) = reference.resolve().ok().and_then(|r| r.target()) else {
            continue;
        };
        if !wanted(&name, &sha.to_string()) {
            continue;
        }
        let Ok(commit) = reference.peel_to_commit() else {
            continue;
        };
        let mut synced = SyncedCommit {
            reference: name.clone(),
            sha: commit.id().to_string(),
            trailers: trailers(commit.message().unwrap_or("")),
            files: Vec::new(),
            too_big: Vec::new(),
        };
        let Ok(tree) = commit.tree() else {
            continue;
        };
        for &file in files {
            let Some(entry) = tree.get_name(file) else {
                continue;
            };
            if entry.kind() != Some(git2::ObjectType::Blob) {
                continue;
            }
            let Ok((size, _)) = odb.read_header(entry.id()) else {
                continue;
            };
            if size > max_bytes {
                synced.too_big.push(file.to_owned());
                continue;
            }
            if let Ok(blob) = repo.find_blob(entry.id()) {
                synced
                    .files
                    .push((file.to_owned(), blob.content().to_vec()));
            }
        }
        out.push(synced);
    }
    Ok(out)
}

/// The commit on the chain of `reference` whose `Hookd-Source` trailer is
/// `source` (an exported checkpoint of that local checkpoint), if any;
/// none when `trusted` refuses the ref's tip.
pub fn commit_with_source(
    project: &Path,
    reference: &str,
    source: &str,
    trusted: &dyn Fn(&str) -> bool,
) -> Result<Option<String>, GitError> {
    let repo = open(project)?;
    let Ok(reference) = repo.find_reference(reference) else {
        return Ok(None);
    };
    let Ok(mut commit) = reference.peel_to_commit() else {
        return Ok(None);
    };
    if !trusted(&commit.id().to_string()) {
        return Ok(None);
    }
    for _ in 0..MAX_CHAIN_WALK {
        let message = commit.message().unwrap_or("");
        if trailers(message).get("Source").map(String::as_str) == Some(source) {
            return Ok(Some(commit.id().to_string()));
        }
        match commit.parent(0) {
            Ok(parent) => commit = parent,
            Err(_) => break,
        }
    }
    Ok(None)
}

/// The files directly under `dir` in the tree of each ref under `prefix`
/// that `wanted` accepts, in a bare repository of hookd's own (the memory
/// shuttle). Each file is its name and its bytes, or why they were not
/// read (not a blob, over `max_bytes`); at most `max_files` per ref.
pub fn bare_ref_files(
    repository: &Path,
    prefix: &str,
    wanted: &dyn Fn(&str) -> bool,
    dir: &str,
    max_bytes: usize,
    max_files: usize,
) -> Result<Vec<RefFiles>, GitError> {
    super::setup_libgit2();
    let repo =
        git2::Repository::open_bare(repository).map_err(git("open the memory repository"))?;
    let odb = repo.odb().map_err(git("open the object database"))?;
    let refs = repo
        .references_glob(&format!("{prefix}*"))
        .map_err(git("list the memory refs"))?;
    let mut out = Vec::new();
    for reference in refs.flatten() {
        let Some(name) = reference.name().ok().map(str::to_owned) else {
            continue;
        };
        if !wanted(&name) {
            continue;
        }
        let mut found = RefFiles {
            reference: name,
            files: Vec::new(),
        };
        let subtree = reference
            .peel_to_tree()
            .ok()
            .and_then(|tree| tree.get_name(dir).map(|e| e.id()))
            .and_then(|id| repo.find_tree(id).ok());
        if let Some(tree) = subtree {
            for entry in tree.iter().take(max_files) {
                let name = String::from_utf8_lossy(entry.name_bytes()).into_owned();
                let bytes = match (entry.kind(), odb.read_header(entry.id())) {
                    (Some(git2::ObjectType::Blob), Ok((size, _))) if size <= max_bytes => repo
                        .find_blob(entry.id())
                        .map(|b| b.content().to_vec())
                        .map_err(|e| format!("cannot read it: {}", e.message())),
                    (Some(git2::ObjectType::Blob), Ok(_)) => {
                        Err(format!("it is over {max_bytes} bytes"))
                    }
                    (Some(git2::ObjectType::Blob), Err(e)) => {
                        Err(format!("cannot read it: {}", e.message()))
                    }
                    _ => Err("it is not a file".into()),
                };
                found.files.push((name, bytes));
            }
        }
        out.push(found);
    }
    Ok(out)
}

/// The files of one ref's tree, as [`bare_ref_files`] read them.
pub struct RefFiles {
    pub reference: String,
    pub files: Vec<(String, Result<Vec<u8>, String>)>,
}

/// The exported checkpoints on the refs under `prefix` that `wanted`
/// accepts (given the ref's name and its tip's sha), commits titled
/// `title`, newest first, at most `limit`.
pub fn list_exported(
    project: &Path,
    prefix: &str,
    wanted: &dyn Fn(&str, &str) -> bool,
    title: &str,
    limit: usize,
) -> Result<Vec<protocol::wire::CheckpointSummary>, GitError> {
    let repo = open(project)?;
    let refs = repo
        .references_glob(&format!("{prefix}*"))
        .map_err(git("list the synced refs"))?;
    let mut out = Vec::new();
    for reference in refs.flatten() {
        let Some(name) = reference.name().ok().map(str::to_owned) else {
            continue;
        };
        let Ok(mut commit) = reference.peel_to_commit() else {
            continue;
        };
        if !wanted(&name, &commit.id().to_string()) {
            continue;
        }
        for _ in 0..limit {
            if commit.summary().ok().flatten() != Some(title) {
                break;
            }
            out.push(super::summarize(&repo, &commit, &name));
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

/// The first ref under `prefix` whose chain holds `sha` (walked back at
/// most a bounded number of commits).
pub fn ref_holding(project: &Path, prefix: &str, sha: &str) -> Result<Option<String>, GitError> {
    let repo = open(project)?;
    let Ok(wanted) = git2::Oid::from_str(sha) else {
        return Ok(None);
    };
    let refs = repo
        .references_glob(&format!("{prefix}*"))
        .map_err(git("list the synced refs"))?;
    for reference in refs.flatten() {
        let Some(name) = reference.name().ok().map(str::to_owned) else {
            continue;
        };
        let Ok(mut commit) = reference.peel_to_commit() else {
            continue;
        };
        for _ in 0..MAX_CHAIN_WALK {
            if commit.id() == wanted {
                return Ok(Some(name));
            }
            match commit.parent(0) {
                Ok(parent) => commit = parent,
                Err(_) => break,
            }
        }
    }
    Ok(None)
}

//! Restoring a checkpoint into the work tree: every path checked before
//! anything is written, every write through [`crate::project_fs`].

use super::{GitError, git, io, open, resolve};
use crate::project_fs::{Blocked, Dir, Entry, NewEntry};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

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
pub(super) fn unsafe_component(name: &[u8]) -> Option<&'static str> {
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
pub(super) fn requested_path(path: &Path) -> Result<Vec<Vec<u8>>, GitError> {
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

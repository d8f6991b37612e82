//! Keeps libgit2 away from files it could hang on. libgit2 opens what it
//! reads with a plain blocking `open`, following symlinks: a FIFO named by
//! the repository (a config include, `core.excludesFile`, a `.gitattributes`
//! linked to one) would hold hookd's thread until someone writes to it. A
//! repository that has one among the files git reads is refused with the
//! file named; whatever this does not foresee is bounded by
//! [`super::Repositories::bounded`].

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
/// which the git module checks as before). A `.git` file inside another
/// work tree must name a git dir of that outer repository (a submodule's, a
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
fn check_entries(project: &Path, dir: &Path, deep: bool, seen: &mut usize) -> Result<(), GitError> {
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
fn check_config(project: &Path, path: &Path, named_by: &str, depth: usize) -> Result<(), GitError> {
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
pub(super) fn refuse_after_open(project: &Path, repo: &git2::Repository) -> Result<(), GitError> {
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

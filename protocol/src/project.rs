//! Which project a directory belongs to. hookd and hookctl agree on it, so
//! a session started in a subdirectory and a command typed there both mean
//! the repository: its work tree root, or the directory itself without one.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// hookd's own directory in a project.
pub const WORKFLOW_DIR: &str = ".workflow";
/// Name of the project configuration file at the project root.
pub const PROJECT_FILE: &str = ".hookd.yaml";
/// The files `hookctl install --project` writes into a project, one per
/// harness: Claude Code's, Codex's, Gemini CLI's, Qwen Code's, Copilot CLI's, OpenCode's and Cursor's.
pub const CLAUDE_CODE_PROJECT_SETTINGS: &str = ".claude/settings.json";
pub const CODEX_PROJECT_HOOKS: &str = ".codex/hooks.json";
pub const GEMINI_CLI_PROJECT_SETTINGS: &str = ".gemini/settings.json";
pub const QWEN_CODE_PROJECT_SETTINGS: &str = ".qwen/settings.json";
pub const COPILOT_CLI_PROJECT_HOOKS: &str = ".github/hooks/hookd.json";
pub const OPENCODE_PROJECT_PLUGIN: &str = ".opencode/plugins/hookd.js";
pub const CURSOR_PROJECT_HOOKS: &str = ".cursor/hooks.json";
/// Claude Code's slash commands it installs beside them (`hooks/claude-code/commands/`).
pub const CLAUDE_CODE_PROJECT_COMMANDS: &[&str] = &[
    ".claude/commands/hookd-resume.md",
    ".claude/commands/hookd-save.md",
];

/// Whether `rel` (relative to the project root) is one of hookd's own files:
/// its `.workflow/`, the project's configuration, the harness wiring it
/// installs. They are nobody's work, so the resume prompt never lists them
/// as changes or as files to read again.
pub fn is_hookd_file(rel: &str) -> bool {
    let rel = rel.strip_prefix("./").unwrap_or(rel);
    rel == WORKFLOW_DIR
        || rel.starts_with(".workflow/")
        || [
            PROJECT_FILE,
            CLAUDE_CODE_PROJECT_SETTINGS,
            CODEX_PROJECT_HOOKS,
            GEMINI_CLI_PROJECT_SETTINGS,
            QWEN_CODE_PROJECT_SETTINGS,
            COPILOT_CLI_PROJECT_HOOKS,
            OPENCODE_PROJECT_PLUGIN,
            CURSOR_PROJECT_HOOKS,
        ]
        .contains(&rel)
        || CLAUDE_CODE_PROJECT_COMMANDS.contains(&rel)
}

/// Directories walked up before giving up: deeper than any real checkout,
/// and a bound on what an odd path costs.
const MAX_LEVELS_UP: usize = 64;

/// The project `dir` belongs to: its [`work_tree_root`], else `dir` itself.
pub fn project_root(dir: &Path) -> PathBuf {
    work_tree_root(dir).unwrap_or_else(|| dir.to_path_buf())
}

/// The work tree `dir` lies in: the nearest directory at or above it that
/// holds a `.git` entry (a directory, or the file of a linked work tree or
/// submodule; never a symlink, which is not followed). Directories are
/// walked by name, up from `dir` as given. hookd's git code finds a work
/// tree's root here too, so there is one answer to where a repository is.
///
/// The walk stops at the first ancestor owned by someone other than `dir`'s
/// owner: a `.git` another user planted above (in `/tmp`, say) must not make
/// their directory the project, nor their repository one hookd writes into.
/// A repository controls what is below its root, never what is above, so
/// nothing under `dir` is looked at.
pub fn work_tree_root(dir: &Path) -> Option<PathBuf> {
    work_tree_root_by_owner(dir, |d| std::fs::symlink_metadata(d).ok().map(|m| m.uid()))
}

/// [`work_tree_root`], with the owner of each directory from `owner_of`
/// (tests give directories other owners through it).
pub fn work_tree_root_by_owner(
    dir: &Path,
    owner_of: impl Fn(&Path) -> Option<u32>,
) -> Option<PathBuf> {
    let owner = owner_of(dir)?;
    for candidate in dir.ancestors().take(MAX_LEVELS_UP) {
        if candidate.as_os_str().is_empty() || owner_of(candidate) != Some(owner) {
            return None;
        }
        if holds_git_entry(candidate) {
            return Some(candidate.to_path_buf());
        }
    }
    None
}

/// Whether `dir` holds a `.git` that git itself takes for a repository: a
/// directory with `HEAD`, `objects/` and `refs/`, or a file that starts
/// `gitdir:`. An empty `.git` directory is not one: Codex's sandbox leaves
/// one in `/tmp` as a mount point, and it must not make `/tmp` a project.
fn holds_git_entry(dir: &Path) -> bool {
    let dotgit = dir.join(".git");
    let Ok(meta) = std::fs::symlink_metadata(&dotgit) else {
        return false;
    };
    if meta.file_type().is_dir() {
        let is = |name: &str, dir_wanted: bool| {
            std::fs::symlink_metadata(dotgit.join(name))
                .is_ok_and(|m| if dir_wanted { m.is_dir() } else { m.is_file() })
        };
        return is("HEAD", false) && is("objects", true) && is("refs", true);
    }
    // A regular file (never a FIFO or a link), its first bytes only.
    meta.file_type().is_file() && starts_with_gitdir(&dotgit)
}

/// Whether `file` starts `gitdir:`. Opened without following a link and
/// without blocking, and read only as a regular file: what was a file when
/// looked at may be a FIFO by the time it is opened.
fn starts_with_gitdir(file: &Path) -> bool {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut head = [0u8; 7];
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(file)
        .and_then(|mut f| {
            if !f.metadata()?.is_file() {
                return Err(std::io::ErrorKind::InvalidInput.into());
            }
            f.read_exact(&mut head)
        })
        .is_ok_and(|()| &head == b"gitdir:")
}

/// `dir` relative to `root`, "" when they are the same; `None` when `dir`
/// is not inside `root`.
pub fn relative_to_root(root: &Path, dir: &Path) -> Option<String> {
    let rel = dir.strip_prefix(root).ok()?;
    Some(rel.to_string_lossy().into_owned())
}

/// `path` as typed in `dir` (relative to it, or absolute), relative to the
/// project `root` when it lies inside it; as typed otherwise, for the daemon
/// to refuse with its own words. Worked out on the names alone: `..` climbs
/// a name, nothing on disk is looked at.
pub fn typed_in(root: &Path, dir: &Path, path: &Path) -> PathBuf {
    use std::path::Component;
    let full = dir.join(path);
    let Ok(rest) = full.strip_prefix(root) else {
        return path.to_path_buf();
    };
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for component in rest.components() {
        match component {
            Component::Normal(part) => parts.push(part),
            Component::CurDir => {}
            Component::ParentDir if parts.pop().is_some() => {}
            _ => return path.to_path_buf(),
        }
    }
    parts.iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `.git` directory as git makes one (what the walk looks for).
    fn git_dir_in(dir: &Path) {
        for sub in ["objects", "refs"] {
            std::fs::create_dir_all(dir.join(".git").join(sub)).unwrap();
        }
        std::fs::write(dir.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    }

    #[test]
    fn an_empty_git_directory_or_a_stray_git_file_is_no_repository() {
        let tmp = tempfile::tempdir().unwrap();
        let outer = tmp.path().join("outer");
        git_dir_in(&outer);
        let scratch = outer.join("tmp");
        std::fs::create_dir_all(scratch.join(".git")).unwrap();
        let work = scratch.join("work");
        std::fs::create_dir_all(&work).unwrap();
        assert_eq!(project_root(&work), outer, "the empty .git is passed by");
        std::fs::remove_dir(scratch.join(".git")).unwrap();
        std::fs::write(scratch.join(".git"), "not a gitdir line\n").unwrap();
        assert_eq!(project_root(&work), outer);
        std::fs::remove_file(scratch.join(".git")).unwrap();
        // A FIFO is no repository, and reading it would block.
        let fifo =
            std::ffi::CString::new(scratch.join(".git").as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo(3) on a NUL-terminated path we own.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert!(!starts_with_gitdir(&scratch.join(".git")));
        assert_eq!(project_root(&work), outer);
        std::fs::remove_file(scratch.join(".git")).unwrap();
        std::fs::write(scratch.join(".git"), "gitdir: ../.git/worktrees/t\n").unwrap();
        assert_eq!(project_root(&work), scratch);
    }

    #[test]
    fn a_subdirectory_of_a_repository_belongs_to_its_work_tree_root() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("repo");
        git_dir_in(&root);
        std::fs::create_dir_all(root.join("pkg/sub")).unwrap();
        assert_eq!(project_root(&root.join("pkg/sub")), root);
        assert_eq!(project_root(&root), root);
        assert_eq!(
            relative_to_root(&root, &root.join("pkg/sub")).unwrap(),
            "pkg/sub"
        );
        assert_eq!(relative_to_root(&root, &root).unwrap(), "");
    }

    #[test]
    fn a_git_entry_above_a_directory_of_another_owner_is_not_taken() {
        let tmp = tempfile::tempdir().unwrap();
        let shared = tmp.path().join("shared");
        git_dir_in(&shared);
        let mine = shared.join("mine/sub");
        std::fs::create_dir_all(&mine).unwrap();
        // `shared` belongs to someone else: its `.git` is not ours to join.
        let owner = |d: &Path| {
            Some(if d.starts_with(shared.join("mine")) {
                1000
            } else {
                0
            })
        };
        assert_eq!(work_tree_root_by_owner(&mine, owner), None);
        let same = |_: &Path| Some(1000);
        assert_eq!(work_tree_root_by_owner(&mine, same), Some(shared.clone()));
        // Nor above a directory whose owner is unknown.
        let unknown = |d: &Path| d.starts_with(shared.join("mine")).then_some(1000);
        assert_eq!(work_tree_root_by_owner(&mine, unknown), None);
    }

    #[test]
    fn a_git_file_makes_a_root_and_a_git_symlink_does_not() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("repo");
        git_dir_in(&root);
        let linked = root.join("linked");
        std::fs::create_dir_all(linked.join("sub")).unwrap();
        std::fs::write(linked.join(".git"), "gitdir: ../.git/worktrees/x\n").unwrap();
        assert_eq!(project_root(&linked.join("sub")), linked);
        let symlinked = root.join("symlinked");
        std::fs::create_dir_all(&symlinked).unwrap();
        std::os::unix::fs::symlink(root.join(".git"), symlinked.join(".git")).unwrap();
        assert_eq!(project_root(&symlinked), root);
    }

    #[test]
    fn hookds_own_files_are_known_and_the_projects_are_not() {
        for own in [
            ".workflow/context_state.json",
            ".hookd.yaml",
            ".claude/settings.json",
            ".codex/hooks.json",
            ".gemini/settings.json",
            ".claude/commands/hookd-save.md",
        ] {
            assert!(is_hookd_file(own), "{own}");
        }
        for theirs in [
            "src/main.rs",
            ".claude/commands/x.md",
            ".claude/commands/resume.md",
            "a/.workflow/x",
            ".workflowx",
        ] {
            assert!(!is_hookd_file(theirs), "{theirs}");
        }
    }

    #[test]
    fn a_path_typed_in_a_subdirectory_is_taken_from_there() {
        let (root, sub) = (Path::new("/r"), Path::new("/r/pkg/sub"));
        let typed = |p: &str| typed_in(root, sub, Path::new(p));
        assert_eq!(typed("notes/a.md"), Path::new("pkg/sub/notes/a.md"));
        assert_eq!(typed("../../src/x.rs"), Path::new("src/x.rs"));
        assert_eq!(typed("/r/src/x.rs"), Path::new("src/x.rs"));
        assert_eq!(
            typed("../../../etc/passwd"),
            Path::new("../../../etc/passwd")
        );
        assert_eq!(typed("/etc/passwd"), Path::new("/etc/passwd"));
        assert_eq!(
            typed_in(root, Path::new("/elsewhere"), Path::new("a")),
            Path::new("a")
        );
    }

    #[test]
    fn without_a_repository_the_directory_is_its_own_project() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("plain/sub");
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(project_root(&dir), dir);
        assert_eq!(work_tree_root(&dir), None);
        let missing = tmp.path().join("gone");
        assert_eq!(project_root(&missing), missing);
        assert_eq!(relative_to_root(&dir, tmp.path()), None);
    }
}

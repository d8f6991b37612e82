//! Everything hookd does with git, through libgit2. Nothing here touches the
//! user's index, HEAD, stash or working tree.

use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("{path} is not in a git repository")]
    NotARepository { path: String },
    #[error("{op}: {source}")]
    Git {
        op: &'static str,
        source: git2::Error,
    },
    #[error("{op}: {source}")]
    Io {
        op: &'static str,
        source: std::io::Error,
    },
}

/// Adds `pattern` to the repository's `info/exclude` unless it is there.
/// Returns whether the file changed.
pub fn exclude(project: &Path, pattern: &str) -> Result<bool, GitError> {
    let repo = git2::Repository::discover(project).map_err(|_| GitError::NotARepository {
        path: project.display().to_string(),
    })?;
    if repo.is_bare() {
        return Ok(false);
    }
    // Worktrees share the main repository's info/exclude.
    let info = repo.commondir().join("info");
    let file = info.join("exclude");
    let current = std::fs::read_to_string(&file).unwrap_or_default();
    if current.lines().any(|l| l.trim() == pattern) {
        return Ok(false);
    }
    std::fs::create_dir_all(&info).map_err(|source| GitError::Io {
        op: "create info/",
        source,
    })?;
    let mut text = current;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!(
        "# hookd keeps its per-project state here\n{pattern}\n"
    ));
    crate::fsutil::write_atomic(&file, text.as_bytes()).map_err(|source| GitError::Io {
        op: "write info/exclude",
        source,
    })?;
    Ok(true)
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
        let outside = tempfile::tempdir().unwrap();
        assert!(matches!(
            exclude(outside.path(), ".workflow/"),
            Err(GitError::NotARepository { .. })
        ));
    }
}

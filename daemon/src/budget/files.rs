//! The project's files as candidates for context: what kind each is, which
//! ones git would keep (ignored files never count), and paths that stay
//! inside the project.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileType {
    Source,
    Test,
    Requirements,
    Docs,
    Config,
    Other,
}

impl FileType {
    pub fn as_str(self) -> &'static str {
        match self {
            FileType::Source => "source",
            FileType::Test => "test",
            FileType::Requirements => "requirements",
            FileType::Docs => "docs",
            FileType::Config => "config",
            FileType::Other => "other",
        }
    }
}

const SOURCE_EXTS: &[&str] = &[
    "rs", "py", "pyi", "ts", "tsx", "js", "jsx", "mjs", "cjs", "go", "java", "kt", "swift", "c",
    "h", "cc", "cpp", "hpp", "cs", "rb", "php", "scala", "sh", "bash", "zsh", "lua", "sql", "vue",
    "svelte", "ex", "exs", "erl", "hs", "ml", "zig",
];
const DOC_EXTS: &[&str] = &["md", "markdown", "rst", "txt", "adoc"];
const CONFIG_EXTS: &[&str] = &[
    "toml", "yaml", "yml", "json", "ini", "cfg", "conf", "lock", "xml", "hbs",
];
const CONFIG_NAMES: &[&str] = &[
    "Dockerfile",
    "Makefile",
    "Justfile",
    ".gitignore",
    ".editorconfig",
];

/// What a project file is, from its path.
pub fn file_type(rel: &str) -> FileType {
    let lower = rel.to_ascii_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    let ext = name.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    let dirs = lower.rsplit_once('/').map_or("", |(dirs, _)| dirs);
    let in_dir = |d: &str| dirs.split('/').any(|c| c == d);
    if lower.contains("requirement") || in_dir("specs") || in_dir("requirements") {
        return FileType::Requirements;
    }
    let test_name = name.starts_with("test_")
        || name.contains("_test.")
        || name.contains(".test.")
        || name.contains(".spec.")
        || name.ends_with("_tests.rs");
    let test_dir = in_dir("tests") || in_dir("test") || in_dir("__tests__") || in_dir("spec");
    if SOURCE_EXTS.contains(&ext) {
        return if test_name || test_dir {
            FileType::Test
        } else {
            FileType::Source
        };
    }
    if DOC_EXTS.contains(&ext) || in_dir("docs") || in_dir("doc") {
        return FileType::Docs;
    }
    if CONFIG_EXTS.contains(&ext) || CONFIG_NAMES.iter().any(|n| n.eq_ignore_ascii_case(name)) {
        return FileType::Config;
    }
    FileType::Other
}

/// Directories never worth walking outside git.
const SKIPPED_DIRS: &[&str] = &[
    ".git",
    ".workflow",
    "target",
    "node_modules",
    "dist",
    "build",
    ".venv",
    "venv",
    "__pycache__",
];
/// Most files listed when a project is not a git repository.
const WALK_LIMIT: usize = 20_000;

/// Relative paths of the project's files git would keep: tracked, and
/// (with `untracked`) untracked but not ignored. Outside git, a walk that
/// skips build output.
pub fn list(project: &Path, untracked: bool) -> Vec<String> {
    list_in(&crate::git::Access::ByPath, project, untracked)
}

/// [`list`], reaching the repository through `repository`.
pub fn list_in(repository: &crate::git::Access, project: &Path, untracked: bool) -> Vec<String> {
    match repository.project_files(project, untracked) {
        Some(mut files) => {
            files.retain(|f| !protocol::project::is_hookd_file(f));
            files
        }
        None => {
            let mut out = Vec::new();
            walk(project, project, &mut out);
            out.sort();
            out
        }
    }
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if out.len() >= WALK_LIMIT {
            return;
        }
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if !SKIPPED_DIRS.contains(&name.as_ref()) && !name.starts_with('.') {
                walk(root, &entry.path(), out);
            }
        } else if kind.is_file()
            && let Ok(rel) = entry.path().strip_prefix(root)
        {
            out.push(rel.to_string_lossy().into_owned());
        }
    }
}

/// `path` (absolute, or relative to the project) as a project-relative
/// path, if it names a file inside the project. Symlinks that lead out of
/// the project do not count.
pub fn inside(project: &Path, path: &str) -> Option<String> {
    let root = project.canonicalize().ok()?;
    let candidate = if Path::new(path).is_absolute() {
        PathBuf::from(path)
    } else {
        project.join(path)
    };
    let real = candidate.canonicalize().ok()?;
    if !real.is_file() {
        return None;
    }
    let rel = real.strip_prefix(&root).ok()?;
    Some(rel.to_string_lossy().into_owned())
}

/// The project's test files by the name of what they test
/// (`test_client.py`, `client_test.go`, `client.test.ts` → `client`).
pub struct Tests(HashMap<String, Vec<String>>);

impl Tests {
    pub fn index(all: &[String]) -> Tests {
        let mut by_stem: HashMap<String, Vec<String>> = HashMap::new();
        for f in all.iter().filter(|f| file_type(f) == FileType::Test) {
            let name = f.rsplit('/').next().unwrap_or(f);
            let stem = name.split('.').next().unwrap_or(name);
            let core = stem
                .trim_start_matches("test_")
                .trim_end_matches("_test")
                .trim_end_matches("_tests");
            by_stem.entry(core.to_owned()).or_default().push(f.clone());
        }
        Tests(by_stem)
    }

    /// The tests that go with source file `rel`.
    pub fn of(&self, rel: &str) -> Vec<String> {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        let Some((stem, _)) = name.rsplit_once('.') else {
            return Vec::new();
        };
        if stem.len() < 3 || file_type(rel) != FileType::Source {
            return Vec::new();
        }
        self.0
            .get(stem)
            .map(|tests| tests.iter().filter(|t| *t != rel).cloned().collect())
            .unwrap_or_default()
    }
}

/// A short stable hash (FNV-1a) for cache file names.
pub fn hash(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_types_by_path() {
        assert_eq!(file_type("src/auth/oauth.ts"), FileType::Source);
        assert_eq!(file_type("test/api/auth/oauth.test.ts"), FileType::Test);
        assert_eq!(file_type("tests/integration/main.rs"), FileType::Test);
        assert_eq!(file_type("pkg/auth_test.go"), FileType::Test);
        assert_eq!(file_type("test_client.py"), FileType::Test);
        assert_eq!(
            file_type(".aiwg/requirements/UC-015-oauth.md"),
            FileType::Requirements
        );
        assert_eq!(file_type("docs/security.md"), FileType::Docs);
        assert_eq!(file_type("README.md"), FileType::Docs);
        assert_eq!(file_type("Cargo.toml"), FileType::Config);
        assert_eq!(file_type("Dockerfile"), FileType::Config);
        assert_eq!(file_type("logo.png"), FileType::Other);
    }

    #[test]
    fn tests_are_matched_by_stem() {
        let all: Vec<String> = [
            "src/client.ts",
            "test/client.test.ts",
            "tests/test_client.py",
            "pkg/client_test.go",
            "test/other.test.ts",
        ]
        .map(String::from)
        .to_vec();
        let mut found = Tests::index(&all).of("src/client.ts");
        found.sort();
        assert_eq!(
            found,
            vec![
                "pkg/client_test.go",
                "test/client.test.ts",
                "tests/test_client.py"
            ]
        );
    }

    #[test]
    fn nothing_outside_the_project() {
        let outer = tempfile::tempdir().unwrap();
        let project = outer.path().join("p");
        std::fs::create_dir_all(project.join("src")).unwrap();
        std::fs::write(project.join("src/a.rs"), "").unwrap();
        std::fs::write(outer.path().join("secret.txt"), "").unwrap();
        std::os::unix::fs::symlink(outer.path().join("secret.txt"), project.join("link.txt"))
            .unwrap();
        assert_eq!(inside(&project, "src/a.rs").as_deref(), Some("src/a.rs"));
        assert_eq!(
            inside(&project, &project.join("src/a.rs").display().to_string()).as_deref(),
            Some("src/a.rs")
        );
        assert_eq!(inside(&project, "../secret.txt"), None);
        assert_eq!(
            inside(&project, "link.txt"),
            None,
            "a symlink out of the project"
        );
        assert_eq!(inside(&project, "/etc/passwd"), None);
    }

    #[test]
    fn git_lists_tracked_and_untracked_but_not_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(dir.path()).unwrap();
        std::fs::write(dir.path().join(".gitignore"), "secret.env\n").unwrap();
        std::fs::write(dir.path().join("a.rs"), "").unwrap();
        std::fs::write(dir.path().join("b.rs"), "").unwrap();
        std::fs::write(dir.path().join("secret.env"), "").unwrap();
        let mut index = repo.index().unwrap();
        index.add_path(Path::new("a.rs")).unwrap();
        index.write().unwrap();
        assert_eq!(list(dir.path(), true), vec![".gitignore", "a.rs", "b.rs"]);
        assert_eq!(list(dir.path(), false), vec!["a.rs"]);
    }
}

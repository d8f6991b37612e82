//! Which projects' files the user trusts, the way direnv's `allow` works: a
//! project's `.hookd.yaml` text settings and its templates reach the model
//! or the person only after `hookctl trust DIR`, which records a hash of each
//! file. A file that changed since needs trusting again.
//!
//! The store is one JSON file in the user's state directory.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The store's file name in the state directory.
pub const STORE_FILE: &str = "trust.json";
/// Where a project keeps its template overrides, relative to its root.
pub const TEMPLATES_DIR: &str = ".workflow/templates";
/// The largest project file hookd reads as configuration or template.
pub const MAX_FILE_BYTES: u64 = 64 * 1024;

/// The files of one project the user trusted: path relative to the project
/// root, and the SHA-256 of its content then.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectTrust {
    pub files: BTreeMap<String, String>,
    #[serde(default)]
    pub trusted_at: String,
}

impl ProjectTrust {
    /// Whether `rel` with this content is what the user trusted.
    pub fn allows(&self, rel: &str, content: &[u8]) -> bool {
        self.files.get(rel).is_some_and(|h| *h == hash(content))
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustStore {
    pub version: u32,
    /// By the project's absolute path.
    pub projects: BTreeMap<PathBuf, ProjectTrust>,
}

/// Projects are known by their canonical path, however a harness names them.
fn key(root: &Path) -> PathBuf {
    std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf())
}

pub fn hash(content: &[u8]) -> String {
    Sha256::digest(content)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl TrustStore {
    /// The store at `path`; an absent or unreadable one trusts nothing.
    pub fn load(path: &Path) -> TrustStore {
        std::fs::read(path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// Writes the store whole (temp file and rename), private to the user.
    pub fn save(&self, path: &Path) -> io::Result<()> {
        let dir = path.parent().unwrap_or(Path::new("."));
        crate::paths::ensure_private_dir(dir)?;
        let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
        let bytes = serde_json::to_vec_pretty(self).map_err(io::Error::other)?;
        let result = (|| {
            use std::io::Write;
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)?;
            file.write_all(&bytes)?;
            file.sync_all()?;
            std::fs::rename(&tmp, path)
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }

    /// What the user trusts of the project at `root` (by its canonical path).
    pub fn lookup(&self, root: &Path) -> Option<&ProjectTrust> {
        self.projects.get(&key(root))
    }

    /// Records (or replaces) what the user trusts of `root`.
    pub fn trust(&mut self, root: &Path, trust: ProjectTrust) {
        self.version = 1;
        self.projects.insert(key(root), trust);
    }

    /// Forgets `root`; whether it was trusted.
    pub fn untrust(&mut self, root: &Path) -> bool {
        self.projects.remove(&key(root)).is_some()
    }
}

/// Reads a project file for configuration: never through a symlink (the
/// last component), never a FIFO or device, at most [`MAX_FILE_BYTES`].
/// `Ok(None)` when it does not exist.
pub fn read_project_file(path: &Path) -> io::Result<Option<Vec<u8>>> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path);
    let file = match file {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "is a symlink; hookd does not follow links in a project",
            ));
        }
        Err(e) => return Err(e),
    };
    read_limited(file).map(Some)
}

fn read_limited(file: File) -> io::Result<Vec<u8>> {
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "is not a regular file",
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("is larger than {} KiB", MAX_FILE_BYTES / 1024),
        ));
    }
    Ok(bytes)
}

/// What `hookctl trust` records for a project: its `.hookd.yaml` and its
/// templates, each hashed; and the files it could not take, with why.
pub fn survey(root: &Path) -> (ProjectTrust, Vec<(String, String)>) {
    let mut trust = ProjectTrust::default();
    let mut refused = Vec::new();
    let mut take = |rel: String| match read_project_file(&root.join(&rel)) {
        Ok(Some(bytes)) => {
            trust.files.insert(rel, hash(&bytes));
        }
        Ok(None) => {}
        Err(e) => refused.push((rel, e.to_string())),
    };
    take(crate::project::PROJECT_FILE.to_owned());
    let templates = root.join(TEMPLATES_DIR);
    let is_real_dir = std::fs::symlink_metadata(root.join(".workflow")).is_ok_and(|m| m.is_dir())
        && std::fs::symlink_metadata(&templates).is_ok_and(|m| m.is_dir());
    if is_real_dir && let Ok(entries) = std::fs::read_dir(&templates) {
        let mut names: Vec<String> = entries
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.ends_with(".hbs"))
            .collect();
        names.sort();
        for name in names {
            take(format!("{TEMPLATES_DIR}/{name}"));
        }
    }
    (trust, refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_file_is_no_longer_trusted() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(
            root.path().join(".hookd.yaml"),
            "resume: {max_chars: 500}\n",
        )
        .unwrap();
        std::fs::create_dir_all(root.path().join(TEMPLATES_DIR)).unwrap();
        std::fs::write(root.path().join(TEMPLATES_DIR).join("a.md.hbs"), "x").unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret"),
            root.path().join(TEMPLATES_DIR).join("b.md.hbs"),
        )
        .unwrap();
        let (trust, refused) = survey(root.path());
        assert_eq!(trust.files.len(), 2, "{trust:?}");
        assert_eq!(refused.len(), 1);
        assert!(refused[0].1.contains("symlink"), "{refused:?}");
        assert!(trust.allows(".workflow/templates/a.md.hbs", b"x"));
        assert!(!trust.allows(".workflow/templates/a.md.hbs", b"y"));
        assert!(!trust.allows(".workflow/templates/b.md.hbs", b"s"));

        let store_path = outside.path().join("state").join(STORE_FILE);
        let mut store = TrustStore::load(&store_path);
        store.trust(root.path(), trust);
        store.save(&store_path).unwrap();
        let mut store = TrustStore::load(&store_path);
        assert_eq!(store.lookup(root.path()).map(|t| t.files.len()), Some(2));
        assert!(store.untrust(root.path()));
        assert!(store.lookup(root.path()).is_none());
    }

    #[test]
    fn project_files_are_read_without_following_links_and_bounded() {
        let root = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.path().join("link")).unwrap();
        assert!(read_project_file(&root.path().join("link")).is_err());
        assert!(
            read_project_file(&root.path().join("none"))
                .unwrap()
                .is_none()
        );
        std::fs::write(root.path().join("big"), vec![b'a'; 70 * 1024]).unwrap();
        assert!(read_project_file(&root.path().join("big")).is_err());
    }
}

//! Every file, directory and symlink under some roots, with contents and
//! modes: taken before and after a test's action to show what it changed.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// One node of a directory tree, as much of it as an attacker could change.
#[derive(Debug, PartialEq, Eq)]
enum Node {
    Dir(u32),
    File(u32, Vec<u8>),
    Link(PathBuf),
}

#[derive(Debug)]
pub struct FileTree(BTreeMap<PathBuf, Node>);

impl FileTree {
    /// The trees under `roots`, leaving out everything under `skip`.
    pub fn take(roots: &[PathBuf], skip: &[PathBuf]) -> FileTree {
        let mut nodes = BTreeMap::new();
        for root in roots {
            walk(root, skip, &mut nodes);
        }
        FileTree(nodes)
    }

    /// The tree under one directory.
    pub fn of(root: &Path) -> FileTree {
        FileTree::take(&[root.to_path_buf()], &[])
    }

    /// What changed since `self`, one entry per path (empty: nothing).
    pub fn changes(&self, now: &FileTree) -> Vec<String> {
        let mut out = Vec::new();
        for (path, node) in &self.0 {
            match now.0.get(path) {
                None => out.push(format!("lost {}", path.display())),
                Some(n) if n != node => out.push(format!("changed {}", describe(path, node, n))),
                Some(_) => {}
            }
        }
        for path in now.0.keys().filter(|p| !self.0.contains_key(*p)) {
            out.push(format!("gained {}", path.display()));
        }
        out
    }

    /// Fails the test, saying what `action` changed, when the tree under the
    /// same roots is not as it was.
    pub fn assert_unchanged(&self, now: &FileTree, action: &str) {
        let changes = self.changes(now);
        assert!(
            changes.is_empty(),
            "{action} changed: {}",
            changes.join("; ")
        );
    }
}

fn describe(path: &Path, before: &Node, after: &Node) -> String {
    match (before, after) {
        (Node::File(m0, b0), Node::File(m1, b1)) if m0 == m1 => {
            let gained = b1.strip_prefix(b0.as_slice()).map(|tail| {
                format!(
                    ", appended {:?}",
                    String::from_utf8_lossy(&tail[..tail.len().min(120)])
                )
            });
            format!(
                "{} ({} -> {} bytes{})",
                path.display(),
                b0.len(),
                b1.len(),
                gained.unwrap_or_default()
            )
        }
        (Node::File(m0, _), Node::File(m1, _)) | (Node::Dir(m0), Node::Dir(m1)) => {
            format!("{} (mode {m0:o} -> {m1:o})", path.display())
        }
        _ => format!("{} ({before:?} -> {after:?})", path.display()),
    }
}

fn walk(path: &Path, skip: &[PathBuf], out: &mut BTreeMap<PathBuf, Node>) {
    if skip.iter().any(|s| path.starts_with(s)) {
        return;
    }
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    let mode = meta.permissions().mode() & 0o7777;
    if meta.file_type().is_symlink() {
        out.insert(path.into(), Node::Link(std::fs::read_link(path).unwrap()));
    } else if meta.is_dir() {
        out.insert(path.into(), Node::Dir(mode));
        for entry in std::fs::read_dir(path).unwrap().flatten() {
            walk(&entry.path(), skip, out);
        }
    } else {
        out.insert(
            path.into(),
            Node::File(mode, std::fs::read(path).unwrap_or_default()),
        );
    }
}

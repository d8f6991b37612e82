//! One mutex per path, made on first use: for work that must not run twice
//! at once on the same project or repository.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

#[derive(Debug, Default)]
pub struct PathLocks(Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>);

impl PathLocks {
    /// The lock for `path`: lock it to hold it.
    pub fn for_path(&self, path: &Path) -> Arc<Mutex<()>> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(path.to_path_buf())
            .or_default()
            .clone()
    }
}

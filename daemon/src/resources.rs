//! What the engine keeps between requests for the blocking work it runs:
//! locks, caches and open stores. The engine owns one and passes it down,
//! so nothing of it is process-global (two engines in one process, as in
//! tests, share nothing).

use crate::git::Repositories;
use crate::memory::Memories;
use crate::path_locks::PathLocks;
use crate::saved_states::{self, SavedStates};
use std::path::Path;

#[derive(Default)]
pub struct Resources {
    /// One pipeline at a time per project: two sessions saving at once
    /// would otherwise interleave their files in `.workflow/`.
    pub projects: PathLocks,
    /// Per repository: the lock on hookd's private index, the last changes found.
    pub repositories: Repositories,
    /// The cross-task memories, each loaded once.
    pub memories: Memories,
    /// Which state files hookd wrote; the default records none and resumes none.
    pub saved_states: SavedStates,
    /// Where each harness process seen compacts, read once per process.
    pub launch_points: crate::harness::LaunchPoints,
    /// hookd's state directory (which machine this is, for sync); `None`
    /// in tests that sync nothing.
    pub state_dir: Option<std::path::PathBuf>,
}

impl Resources {
    /// The engine's: records of saved states kept in hookd's `state_dir`.
    pub fn in_state_dir(state_dir: &Path) -> Resources {
        Resources {
            saved_states: SavedStates::in_dir(state_dir.join(saved_states::DIR)),
            state_dir: Some(state_dir.to_path_buf()),
            ..Resources::default()
        }
    }
}

//! Sync through git remotes the user names: what goes where.
//!
//! Each machine writes only refs of its own, so two machines pushing at
//! once never race for one ref:
//!
//! - in a project's repository and its `sync.remote`:
//!   `refs/hookd/sync/<machine>/checkpoints/<branch>` (the checkpoint as it
//!   may leave the machine: secret files left out) and
//!   `refs/hookd/sync/<machine>/state/<branch>` (the saved state that goes
//!   with it);
//! - in the memory repository (`sync.memory_remote`):
//!   `refs/hookd/memory/<machine>`, a tree of the machine's task records.

pub mod export;
pub mod import;
pub mod ledger;
pub mod machine;
#[cfg(test)]
pub(crate) mod test_git;
pub mod transport;
pub mod worker;

pub use ledger::Ledger;
pub use machine::Machine;

/// Every ref sync writes or reads in a project's repository is under this.
pub const SYNC_REFS: &str = "refs/hookd/sync/";
/// Every ref of the memory repository is under this.
pub const MEMORY_REFS: &str = "refs/hookd/memory/";

/// `refs/hookd/sync/<machine>/checkpoints/<branch>`.
pub fn checkpoint_ref(machine: &str, branch: &str) -> String {
    format!("{SYNC_REFS}{machine}/checkpoints/{branch}")
}

/// `refs/hookd/sync/<machine>/state/<branch>`.
pub fn state_ref(machine: &str, branch: &str) -> String {
    format!("{SYNC_REFS}{machine}/state/{branch}")
}

/// `refs/hookd/memory/<machine>`.
pub fn memory_ref(machine: &str) -> String {
    format!("{MEMORY_REFS}{machine}")
}

/// The machine a sync ref belongs to, and what follows it
/// (`checkpoints/<branch>` or `state/<branch>`).
pub fn split_sync_ref(reference: &str) -> Option<(&str, &str)> {
    let rest = reference.strip_prefix(SYNC_REFS)?;
    let (machine, kind) = rest.split_once('/')?;
    (!machine.is_empty() && !kind.is_empty()).then_some((machine, kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_name_the_machine_first() {
        let r = checkpoint_ref("laptop-1a2b3c", "feature/x");
        assert_eq!(r, "refs/hookd/sync/laptop-1a2b3c/checkpoints/feature/x");
        assert_eq!(
            split_sync_ref(&r),
            Some(("laptop-1a2b3c", "checkpoints/feature/x"))
        );
        assert_eq!(
            split_sync_ref(&state_ref("m", "main")),
            Some(("m", "state/main"))
        );
        assert_eq!(split_sync_ref("refs/hookd/checkpoints/main"), None);
        assert_eq!(memory_ref("m"), "refs/hookd/memory/m");
    }
}

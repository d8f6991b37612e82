//! Which machine this is, in what it pushes: a name a person recognises
//! (`sync.machine_name`, or the host name) and a random suffix made once,
//! so that two machines with one host name never write the same refs.

use protocol::config::SyncConfig;
use std::io;
use std::path::Path;

/// The file in hookd's state directory that keeps the suffix.
pub const MACHINE_FILE: &str = "machine-id";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    /// What a person reads: `laptop`.
    pub name: String,
    /// What refs carry: `laptop-3f9c1a`.
    pub id: String,
}

impl Machine {
    /// This machine, its suffix read from `state_dir` or made and kept there.
    pub fn load(state_dir: &Path, configured_name: Option<&str>) -> io::Result<Machine> {
        let name = Machine::name(configured_name);
        let suffix = suffix(state_dir)?;
        Ok(Machine {
            id: format!("{name}-{suffix}"),
            name,
        })
    }

    /// [`Machine::load`] with sync's settings; the error says what could not
    /// be read or made, and where.
    pub fn for_sync(state_dir: &Path, sync: &SyncConfig) -> Result<Machine, String> {
        Machine::load(state_dir, sync.machine_name.as_deref()).map_err(|e| {
            format!(
                "cannot tell which machine this is: its id in {} cannot be read or made: {e}",
                state_dir.join(MACHINE_FILE).display()
            )
        })
    }

    /// This machine's name alone, nothing read or made in the state directory.
    pub fn name(configured_name: Option<&str>) -> String {
        configured_name.map(str::to_owned).unwrap_or_else(host_name)
    }
}

fn suffix(state_dir: &Path) -> io::Result<String> {
    let path = state_dir.join(MACHINE_FILE);
    if let Ok(text) = std::fs::read_to_string(&path) {
        let text = text.trim();
        if text.len() == 6 && text.chars().all(|c| c.is_ascii_hexdigit()) {
            return Ok(text.to_ascii_lowercase());
        }
    }
    let made =
        crate::random::hex(3).ok_or_else(|| io::Error::other("the OS gave no random bytes"))?;
    crate::fsutil::write_atomic(&path, format!("{made}\n").as_bytes())?;
    Ok(made)
}

/// The host name cut to what a ref takes (letters, digits, `-`), or
/// `machine` when nothing of it is left.
fn host_name() -> String {
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .unwrap_or_default();
    let cleaned: String = raw
        .trim()
        .split('.')
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .take(40)
        .collect();
    let cleaned = cleaned.trim_start_matches('-').to_ascii_lowercase();
    if cleaned.is_empty() {
        "machine".into()
    } else {
        cleaned
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suffix_is_made_once_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let first = Machine::load(dir.path(), Some("laptop")).unwrap();
        let again = Machine::load(dir.path(), Some("laptop")).unwrap();
        assert_eq!(first, again);
        assert!(first.id.starts_with("laptop-") && first.id.len() == "laptop-".len() + 6);
        let other = tempfile::tempdir().unwrap();
        assert_ne!(
            Machine::load(other.path(), Some("laptop")).unwrap().id,
            first.id
        );
        assert!(
            protocol::config::check_machine_name(&Machine::load(dir.path(), None).unwrap().id)
                .is_ok()
        );
    }
}

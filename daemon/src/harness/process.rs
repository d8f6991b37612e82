//! The harness process that ran a hook, read through `/proc`: its command
//! line and environment say where it compacts. Only processes of hookd's
//! own user are read, each through a handle on its `/proc/<pid>` directory,
//! so a process that ends and whose pid is given to another between two
//! reads fails the second read instead of answering for the newcomer.

use rustix::fs::{Mode, OFlags};
use std::collections::HashMap;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// `/proc/<pid>/stat` is read up to this many bytes (a command name is at
/// most 16 of them).
const STAT_LIMIT: u64 = 4 * 1024;
/// A process's `cmdline` or `environ` is read up to this many bytes.
const LIST_LIMIT: u64 = 256 * 1024;

/// A process, told apart from a later one given the same pid by when it
/// started (clock ticks after boot, `/proc/<pid>/stat` field 22).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProcessId {
    pub pid: u32,
    pub started: u64,
}

/// A running process of hookd's own user, held open.
#[derive(Debug)]
pub struct Process {
    dir: OwnedFd,
    pub id: ProcessId,
    /// Its command name (`comm`, at most 15 bytes).
    pub command: String,
    pub parent: u32,
}

impl Process {
    /// Opens `/proc/<pid>`; `None` when it is gone, cannot be read, or runs
    /// as another user (hookd reads nothing of theirs).
    pub fn open(pid: u32) -> Option<Process> {
        if pid == 0 {
            return None;
        }
        let dir = rustix::fs::open(
            format!("/proc/{pid}"),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok()?;
        if rustix::fs::fstat(&dir).ok()?.st_uid != rustix::process::geteuid().as_raw() {
            return None;
        }
        let raw = read_at(&dir, "stat", STAT_LIMIT)?;
        let (command, parent, started) = parse_stat(&String::from_utf8_lossy(&raw))?;
        Some(Process {
            dir,
            id: ProcessId { pid, started },
            command,
            parent,
        })
    }

    /// Its arguments (`cmdline`), up to a bound.
    pub fn args(&self) -> Option<Vec<String>> {
        #[cfg(test)]
        ARGS_READ.with(|n| n.set(n.get() + 1));
        read_at(&self.dir, "cmdline", LIST_LIMIT).map(|raw| nul_separated(&raw))
    }

    /// The environment it was started with (`environ`), up to a bound, as
    /// `NAME=value` entries.
    pub fn environment(&self) -> Option<Vec<String>> {
        read_at(&self.dir, "environ", LIST_LIMIT).map(|raw| nul_separated(&raw))
    }
}

/// What was learned of each harness process seen, by pid and start time
/// and the directory its files were found from (a harness process has one;
/// another would mean the walk found a process that is not this session's):
/// a harness reads its arguments and settings once, at start, so its later
/// hooks need no more than the walk to its process.
pub struct ProcessCache<T> {
    kept: std::sync::Mutex<HashMap<(ProcessId, PathBuf), T>>,
}

/// Processes whose launch is kept, per harness.
const PROCESSES_KEPT: usize = 256;

impl<T> Default for ProcessCache<T> {
    fn default() -> Self {
        ProcessCache {
            kept: std::sync::Mutex::default(),
        }
    }
}

impl<T: Clone> ProcessCache<T> {
    pub fn get(&self, id: ProcessId, files: &Path) -> Option<T> {
        self.lock().get(&(id, files.to_path_buf())).cloned()
    }

    /// Whether anything is kept for the process.
    pub fn contains(&self, id: ProcessId) -> bool {
        self.lock().keys().any(|(kept, _)| *kept == id)
    }

    pub fn put(&self, id: ProcessId, files: &Path, value: T) {
        let mut kept = self.lock();
        let key = (id, files.to_path_buf());
        if kept.len() >= PROCESSES_KEPT && !kept.contains_key(&key) {
            // Processes end; the oldest started are the likeliest gone.
            if let Some(oldest) = kept.keys().min_by_key(|(p, _)| p.started).cloned() {
                kept.remove(&oldest);
            }
        }
        kept.insert(key, value);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(ProcessId, PathBuf), T>> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl ProcessId {
    /// How `hookctl status` and the logs name the process.
    pub fn describe(&self, program: &str) -> String {
        format!(
            "{program} pid {} started at tick {}",
            self.pid, self.started
        )
    }
}

#[cfg(test)]
thread_local! {
    /// How many times this thread read a process's arguments.
    pub static ARGS_READ: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How far above a hook's process its harness's own is looked for. Codex
/// CLI and Gemini CLI run a hook's command themselves (Gemini CLI's is the
/// child node process its launcher restarts itself in): the harness is the
/// hook's parent, or a shell or two above it.
pub const HOOK_ANCESTORS: usize = 4;

/// The first of `peer_pid` and up to `max_up` of its ancestors that `is_it`
/// picks. The walk stops at init, at a process of another user and at one
/// that cannot be read.
pub fn find(
    peer_pid: u32,
    max_up: usize,
    mut is_it: impl FnMut(&Process) -> bool,
) -> Option<Process> {
    let mut pid = peer_pid;
    for _ in 0..=max_up {
        if pid <= 1 {
            return None;
        }
        let process = Process::open(pid)?;
        if is_it(&process) {
            return Some(process);
        }
        pid = process.parent;
    }
    None
}

/// At most `limit` bytes of the file `name` in the process's directory.
fn read_at(dir: &OwnedFd, name: &str, limit: u64) -> Option<Vec<u8>> {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let mut raw = Vec::new();
    std::fs::File::from(fd)
        .take(limit)
        .read_to_end(&mut raw)
        .ok()?;
    Some(raw)
}

/// `pid (comm) state ppid … starttime …`: the command name may hold spaces
/// and parentheses, so the fields are counted after its last `)`.
fn parse_stat(stat: &str) -> Option<(String, u32, u64)> {
    let (head, rest) = stat.rsplit_once(')')?;
    let command = head.split_once('(')?.1.to_owned();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state): ppid is field 4, starttime 22.
    Some((
        command,
        fields.get(1)?.parse().ok()?,
        fields.get(19)?.parse().ok()?,
    ))
}

fn nul_separated(raw: &[u8]) -> Vec<String> {
    raw.split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::process::{Child, Command, Stdio};
    use std::time::Duration;

    /// A copy of `/bin/sleep` named `name` in `dir`, running with a child
    /// `sleep` of its own under it (through `sh`), with `env` set: the
    /// harness process and the hook it ran. Returns the harness process
    /// (kill it to end both) and the child's pid, once both show in /proc.
    pub(crate) fn harness_with_child(
        dir: &Path,
        name: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> (Child, u32) {
        // `sh` under the harness's name runs `sleep` in the background and
        // waits: the sleep is the harness's child.
        let program = dir.join(name);
        if !program.exists() {
            std::os::unix::fs::symlink("/bin/sh", &program).unwrap();
        }
        let script = "sleep 30 & echo $!; wait";
        let mut child = Command::new(&program)
            .arg("-c")
            .arg(script)
            .arg(name)
            .args(args)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        {
            use std::io::BufRead;
            let out = child.stdout.as_mut().unwrap();
            std::io::BufReader::new(out).read_line(&mut line).unwrap();
        }
        let grandchild: u32 = line.trim().parse().unwrap();
        for _ in 0..100 {
            let shown = std::fs::read(format!("/proc/{grandchild}/cmdline"))
                .is_ok_and(|c| c.starts_with(b"sleep"));
            if shown {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        (child, grandchild)
    }

    fn end(mut child: Child, grandchild: u32) {
        let _ = Command::new("kill").arg(grandchild.to_string()).status();
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn the_walk_finds_the_named_ancestor_and_reads_it_through_its_handle() {
        let dir = tempfile::tempdir().unwrap();
        let (child, hook) = harness_with_child(
            dir.path(),
            "gemini",
            &["--flag"],
            &[("HOOKD_PROCESS_TEST", "yes")],
        );
        let found = find(hook, 1, |p| p.command == "gemini");
        let from_itself = find(child.id(), 0, |p| p.command == "gemini");
        let too_far = find(hook, 0, |p| p.command == "gemini");
        let own = Process::open(hook).expect("the hook's process");
        end(child, hook);

        let found = found.expect("the harness above the hook");
        assert_eq!(found.id, from_itself.unwrap().id);
        assert_eq!(own.parent, found.id.pid);
        assert!(found.id.started > 0);
        assert!(too_far.is_none(), "the walk goes no higher than asked");
        // The process is gone: its handle reads nothing, even were its pid
        // given to another.
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(found.args(), None);
        assert_eq!(found.environment(), None);
    }

    #[test]
    fn arguments_and_environment_are_read_while_it_runs() {
        let dir = tempfile::tempdir().unwrap();
        let (child, hook) = harness_with_child(
            dir.path(),
            "codex",
            &["-c", "model_auto_compact_token_limit=5"],
            &[("HOOKD_PROCESS_TEST", "yes")],
        );
        let found = find(hook, 3, |p| p.command == "codex").expect("the codex");
        let args = found.args();
        let env = found.environment();
        end(child, hook);
        let args = args.unwrap();
        assert!(args[0].ends_with("/codex"), "{args:?}");
        assert!(args.ends_with(&["-c".into(), "model_auto_compact_token_limit=5".into()]));
        assert!(env.unwrap().iter().any(|e| e == "HOOKD_PROCESS_TEST=yes"));
    }

    #[test]
    fn init_an_absent_pid_and_a_foreign_process_end_the_walk() {
        assert!(find(1, 5, |_| true).is_none());
        assert!(find(0, 5, |_| true).is_none());
        assert!(Process::open(u32::MAX).is_none());
    }

    #[test]
    fn a_command_name_with_parentheses_and_spaces_is_read_whole() {
        let stat = "42 (a) b (c)) S 7 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 98765 0";
        assert_eq!(parse_stat(stat), Some(("a) b (c)".to_owned(), 7, 98_765)));
        assert_eq!(parse_stat("42 (x) S"), None);
    }
}

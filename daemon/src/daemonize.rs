//! `hookd start`: fork into the background before any thread or runtime
//! exists, and tell the parent through a pipe when the socket is ready (or
//! why it is not).

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

pub enum Forked {
    /// We are the process the person started: wait for the daemon's word.
    Parent {
        child_pid: u32,
        readiness: Readiness,
    },
    /// We are the daemon: report readiness through this.
    Daemon(Notifier),
}

/// The parent's end of the readiness pipe.
pub struct Readiness(File);

/// The daemon's end of the readiness pipe.
pub struct Notifier(File);

/// Forks. The child starts a new session, moves to `/`, points stdin,
/// stdout and stderr at /dev/null (a hook's pipes must not stay open, or the
/// harness would wait for the daemon to exit) and closes inherited
/// descriptors.
///
/// Call this while the process has exactly one thread.
pub fn fork() -> io::Result<Forked> {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 just returned these two fresh descriptors; each is owned once.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: the caller guarantees a single-threaded process, so the child
    // may keep running ordinary Rust code.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            drop(read_end);
            detach(write_end.as_raw_fd())?;
            Ok(Forked::Daemon(Notifier(File::from(write_end))))
        }
        pid => {
            drop(write_end);
            Ok(Forked::Parent {
                child_pid: pid as u32,
                readiness: Readiness(File::from(read_end)),
            })
        }
    }
}

fn detach(keep_fd: i32) -> io::Result<()> {
    // SAFETY: plain syscalls on our own process; failures are checked.
    unsafe {
        if libc::setsid() == -1 {
            return Err(io::Error::last_os_error());
        }
        let devnull = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if devnull < 0 {
            return Err(io::Error::last_os_error());
        }
        for fd in 0..3 {
            libc::dup2(devnull, fd);
        }
        if devnull > 2 {
            libc::close(devnull);
        }
        libc::chdir(c"/".as_ptr());
    }
    close_inherited_fds(keep_fd);
    Ok(())
}

/// Closes descriptors above stderr that a harness may have leaked to us.
fn close_inherited_fds(keep_fd: i32) {
    let fds: Vec<i32> = match std::fs::read_dir("/proc/self/fd") {
        Ok(dir) => dir
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect(),
        Err(_) => (3..1024).collect(),
    };
    for fd in fds.into_iter().filter(|&fd| fd > 2 && fd != keep_fd) {
        // SAFETY: closing a descriptor we do not use; EBADF (the directory
        // handle read_dir already closed) is harmless.
        unsafe { libc::close(fd) };
    }
}

impl Readiness {
    /// Waits for the daemon's report: `Ok` once it listens, `Err` with its
    /// reason if it gave up, or a timeout.
    pub fn wait(mut self, timeout: Duration) -> Result<(), String> {
        let mut pfd = libc::pollfd {
            fd: self.0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut pfd, 1, ms) };
        if ready == 0 {
            return Err(format!(
                "the daemon did not report ready within {} ms",
                timeout.as_millis()
            ));
        }
        let mut text = String::new();
        let _ = self.0.read_to_string(&mut text);
        match text.trim() {
            "ready" => Ok(()),
            "" => Err("the daemon exited before it was ready (see its log)".to_owned()),
            reason => Err(reason.to_owned()),
        }
    }
}

impl Notifier {
    pub fn ready(mut self) {
        let _ = self.0.write_all(b"ready\n");
    }

    pub fn failed(mut self, reason: &str) {
        let _ = self.0.write_all(reason.as_bytes());
    }
}

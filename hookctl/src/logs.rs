//! `hookctl logs [-f] [-n N]`: the daemon's log. hookd writes one file a
//! day (`hookd.<date>.log`) in its log directory; this prints the end of the
//! newest and, with `-f`, follows it (across the change of day too).

use crate::Context;
use crate::client::Client;
use crate::display::terminal;
use anyhow::Context as _;
use protocol::wire::{Request, Response, StatusQuery};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// How often `-f` looks for new lines.
const FOLLOW_POLL: Duration = Duration::from_millis(250);
/// How long to wait for a running daemon to name its log directory.
const ASK_DAEMON: Duration = Duration::from_secs(1);
/// Bytes read from the end to find the last lines.
const TAIL_BYTES: u64 = 1024 * 1024;

pub fn run(ctx: &Context, follow: bool, lines: usize) -> anyhow::Result<ExitCode> {
    let dir = log_dir(ctx).context("cannot find hookd's log directory: is HOME set?")?;
    let Some(file) = newest_log(&dir) else {
        if !follow {
            eprintln!(
                "hookctl: no hookd log in {} yet (hookd writes one once it runs)",
                dir.display()
            );
            return Ok(ExitCode::FAILURE);
        }
        return follow_from(&dir, None);
    };
    print_tail(&file, lines)?;
    if !follow {
        return Ok(ExitCode::SUCCESS);
    }
    let len = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    follow_from(&dir, Some((file, len)))
}

/// The running daemon's log directory, else the default one.
fn log_dir(ctx: &Context) -> Option<PathBuf> {
    let from_daemon = Client::connect(&ctx.socket.path, Instant::now() + ASK_DAEMON)
        .ok()
        .and_then(
            |mut c| match c.request(&Request::Status(StatusQuery::default())) {
                Ok(Response::Status(report)) => report.daemon.log_dir,
                _ => None,
            },
        );
    from_daemon.or_else(|| Some(protocol::paths::state_dir()?.join("logs")))
}

/// `hookd.<date>.log` with the latest date (names sort by date).
fn newest_log(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("hookd.") && n.ends_with(".log"))
        })
        .max()
}

fn print_tail(path: &Path, lines: usize) -> anyhow::Result<()> {
    let mut f =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let len = f.metadata()?.len();
    let start = len.saturating_sub(TAIL_BYTES);
    f.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    let mut all: Vec<&str> = text.lines().collect();
    if start > 0 && !all.is_empty() {
        // The first line read may have started before `start`.
        all.remove(0);
    }
    let mut out = std::io::stdout().lock();
    for line in &all[all.len().saturating_sub(lines)..] {
        writeln!(out, "{}", terminal(line))?;
    }
    Ok(())
}

/// Prints what is appended to the newest log, switching to a newer file
/// when one appears. Runs until interrupted.
fn follow_from(dir: &Path, mut current: Option<(PathBuf, u64)>) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout();
    loop {
        if let Some(newest) = newest_log(dir)
            && current.as_ref().is_none_or(|(p, _)| *p != newest)
        {
            if current.is_some() {
                writeln!(out, "==> {} <==", newest.display())?;
            }
            current = Some((newest, 0));
        }
        if let Some((path, pos)) = &mut current
            && let Ok(mut f) = std::fs::File::open(&*path)
        {
            let len = f.metadata().map(|m| m.len()).unwrap_or(0);
            if len < *pos {
                *pos = 0; // truncated
            }
            if len > *pos {
                f.seek(SeekFrom::Start(*pos))?;
                let mut bytes = Vec::new();
                f.take(len - *pos).read_to_end(&mut bytes)?;
                out.write_all(terminal(&String::from_utf8_lossy(&bytes)).as_bytes())?;
                out.flush()?;
                *pos = len;
            }
        }
        std::thread::sleep(FOLLOW_POLL);
    }
}

//! `hookctl watch`: a live view of the sessions, redrawn as they change.
//! `q` or Ctrl-C leaves.

use crate::Context;
use crate::display::{self, now_ms};
use crate::status::{Detail, render};
use protocol::wire::{Request, Response, StatusQuery};
use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;

/// The line under each frame: how to leave.
pub const HOW_TO_LEAVE: &str = "q or Ctrl-C to leave";

pub fn run(ctx: &Context, session: Option<String>) -> anyhow::Result<ExitCode> {
    let mut client = ctx.connect(true)?;
    let terminal = std::io::stdout().is_terminal();
    let mut updates = client.stream(&Request::Watch(StatusQuery { session }))?;
    // Keys are read one at a time, without echo, only from a terminal.
    let keys = std::io::stdin()
        .is_terminal()
        .then(KeyMode::enable)
        .flatten();
    if let Some(keys) = &keys {
        keys.leave_on_q();
    }
    let project = ctx.project().ok();
    let detail = if ctx.verbose {
        Detail::Verbose
    } else {
        Detail::Plain
    };
    loop {
        match updates.next() {
            Some(Ok(Response::Status(report))) => {
                let mut out = std::io::stdout().lock();
                if terminal {
                    // Home the cursor and clear the screen, then draw.
                    write!(out, "\x1b[H\x1b[2J")?;
                } else {
                    writeln!(out, "---")?;
                }
                let size = terminal.then(terminal_size).flatten();
                let shown = frame(*report, detail, now_ms(), project.as_deref(), size);
                write!(out, "{}", display::terminal(&shown))?;
                if terminal {
                    write!(out, "\n{HOW_TO_LEAVE}\n")?;
                }
                out.flush()?;
            }
            Some(Ok(other)) => anyhow::bail!("unexpected message from hookd: {other:?}"),
            Some(Err(e)) => return Err(e.into()),
            None => {
                eprintln!("hookctl: hookd stopped");
                return Ok(ExitCode::SUCCESS);
            }
        }
    }
}

/// One frame: the live sessions only, those of the current project first
/// (then the most recently active), cut to the terminal's `rows` so that
/// the header and the first sessions never scroll off the top.
pub fn frame(
    mut report: protocol::wire::StatusReport,
    detail: Detail,
    now: u64,
    project: Option<&std::path::Path>,
    size: Option<(usize, usize)>,
) -> String {
    report.sessions.retain(|s| !s.ended);
    report.sessions.sort_by_key(|s| {
        (
            s.project_dir.as_deref() != project,
            std::cmp::Reverse(s.last_event_at_ms),
        )
    });
    let text = render(&report, detail, now);
    let Some((rows, columns)) = size else {
        return text;
    };
    // Rows a line takes: long ones wrap.
    let height = |line: &str| line.chars().count().max(1).div_ceil(columns.max(1));
    // Below the frame: a blank row and the one saying how to leave.
    let room = rows.saturating_sub(2);
    let lines: Vec<&str> = text.lines().collect();
    if lines.iter().map(|l| height(l)).sum::<usize>() <= room {
        return text;
    }
    // One row of the room is for the line saying what was cut.
    let mut used = 1;
    let mut shown = String::new();
    let mut kept = 0;
    for line in &lines {
        if used + height(line) > room {
            break;
        }
        used += height(line);
        shown += line;
        shown.push('\n');
        kept += 1;
    }
    shown += &format!(
        "… {} more lines: a taller terminal, or `hookctl status`, shows them all\n",
        lines.len() - kept
    );
    shown
}

/// The terminal's rows and columns, when standard output is one.
fn terminal_size() -> Option<(usize, usize)> {
    // SAFETY: TIOCGWINSZ fills a winsize we own, or fails.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    (ok && size.ws_row > 0 && size.ws_col > 0)
        .then_some((usize::from(size.ws_row), usize::from(size.ws_col)))
}

/// The terminal with line buffering, echo and signal keys off, put back as
/// it was when dropped (and by the key reader before it exits).
struct KeyMode {
    original: libc::termios,
}

impl KeyMode {
    fn enable() -> Option<KeyMode> {
        // SAFETY: termios is plain data; tcgetattr fills it or fails.
        let mut original: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: fd 0 is open for the process's life; `original` is valid.
        if unsafe { libc::tcgetattr(libc::STDIN_FILENO, &mut original) } != 0 {
            return None;
        }
        let mut raw = original;
        // ISIG off: Ctrl-C arrives as a key, so the terminal is restored first.
        raw.c_lflag &= !(libc::ICANON | libc::ECHO | libc::ISIG);
        raw.c_cc[libc::VMIN] = 1;
        raw.c_cc[libc::VTIME] = 0;
        // SAFETY: as above; `raw` is a valid termios.
        if unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &raw) } != 0 {
            return None;
        }
        Some(KeyMode { original })
    }

    /// Exits (terminal restored) on `q`, `Q`, Ctrl-C or the end of input.
    fn leave_on_q(&self) {
        let original = self.original;
        std::thread::spawn(move || {
            let mut stdin = std::io::stdin();
            let mut key = [0u8; 1];
            loop {
                match stdin.read(&mut key) {
                    Ok(1) if !matches!(key[0], b'q' | b'Q' | 0x03) => continue,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    _ => break,
                }
            }
            restore(&original);
            println!();
            std::process::exit(0);
        });
    }
}

fn restore(original: &libc::termios) {
    // SAFETY: `original` is the state tcgetattr gave for the same fd.
    unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, original) };
}

impl Drop for KeyMode {
    fn drop(&mut self) {
        restore(&self.original);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::tests::{NOW, report, session};
    use std::path::{Path, PathBuf};

    /// Four sessions in a short terminal: the header and the current
    /// project's live session stay on screen; an ended one is not shown.
    #[test]
    fn a_frame_fits_the_terminal_and_leads_with_the_current_project() {
        let at = |id: &str, project: &str, ago_ms: u64, ended: bool| {
            SessionStatusBuilder {
                id,
                project,
                ago_ms,
                ended,
            }
            .build()
        };
        let sessions = vec![
            at("aaaaaaaa-1", "/work/other", 1_000, false),
            at("bbbbbbbb-2", "/work/other", 2_000, false),
            at("cccccccc-3", "/work/gone", 500, true),
            at("dddddddd-4", "/work/mine", 60_000, false),
        ];
        let shown = frame(
            report(sessions.clone()),
            Detail::Plain,
            NOW,
            Some(Path::new("/work/mine")),
            Some((24, 80)),
        );
        // The frame, a blank row and the line saying how to leave: 24 rows,
        // long lines counted as they wrap at 80 columns.
        let rows: usize = shown
            .lines()
            .map(|l| l.chars().count().max(1).div_ceil(80))
            .sum();
        assert!(rows + 2 <= 24, "{rows} rows:\n{shown}");
        let lines: Vec<&str> = shown.lines().collect();
        assert!(lines[0].starts_with("hookd "), "{shown}");
        assert_eq!(lines[2], "3 sessions", "{shown}");
        assert!(lines[4].contains("dddddddd  /work/mine"), "{shown}");
        assert!(!shown.contains("cccccccc"), "{shown}");
        assert!(
            shown.ends_with("shows them all\n") && shown.contains("… "),
            "{shown}"
        );
        // A tall terminal shows every live session whole.
        let tall = frame(report(sessions), Detail::Plain, NOW, None, Some((200, 200)));
        assert!(
            tall.contains("aaaaaaaa") && tall.contains("bbbbbbbb"),
            "{tall}"
        );
        assert!(!tall.contains("more lines"), "{tall}");
    }

    struct SessionStatusBuilder<'a> {
        id: &'a str,
        project: &'a str,
        ago_ms: u64,
        ended: bool,
    }

    impl SessionStatusBuilder<'_> {
        fn build(self) -> protocol::wire::SessionStatus {
            protocol::wire::SessionStatus {
                session_id: self.id.to_owned(),
                project_dir: Some(PathBuf::from(self.project)),
                last_event_at_ms: NOW - self.ago_ms,
                ended: self.ended,
                ..session()
            }
        }
    }
}

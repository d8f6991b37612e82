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
                write!(
                    out,
                    "{}",
                    display::terminal(&render(&report, detail, now_ms()))
                )?;
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

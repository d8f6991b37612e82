//! `hookctl watch`: a live view of the sessions, redrawn as they change.

use crate::Context;
use protocol::wire::{Request, Response, StatusQuery};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

pub fn run(ctx: &Context, session: Option<String>) -> anyhow::Result<ExitCode> {
    let mut client = ctx.connect(true)?;
    let terminal = std::io::stdout().is_terminal();
    let mut updates = client.stream(&Request::Watch(StatusQuery { session }))?;
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
                write!(out, "{}", crate::status::render(&report))?;
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

//! Reading a session file of one JSON record per line for its figure and
//! compactions: forward from where the last reading stopped, or back from
//! the end to the latest record with a figure when there is no such place
//! or too much was appended. Each harness says which lines matter and what
//! they mean ([`Records`]); where reading stopped is its [`Cursor`].

use super::{Boundary, Cursor, Method, Reading, SessionReading, Usage};
use crate::tail::{ReverseLines, mentions_any, open_regular, read_complete_lines};
use std::io;
use std::path::Path;

/// Appended bytes read forward; more than this and the file is read from
/// its end.
const FORWARD_LIMIT: u64 = 8 * 1024 * 1024;
/// A backward scan of a session file gives up after this many bytes (every
/// harness's reader).
pub const SEARCH_LIMIT: u64 = 32 * 1024 * 1024;

/// What one harness's session file says, taken in a record at a time.
pub trait Records {
    /// Lines that mention none of these are skipped unparsed.
    fn needles(&self) -> &[&'static [u8]];

    /// Takes in the line starting at byte `at`, one that mentions a needle.
    fn take(&mut self, at: u64, line: &[u8]);

    /// Whether a line is a record that gives the figure: reading back from
    /// the end stops at the latest one.
    fn gives_figure(&self, line: &[u8]) -> bool;

    /// Reading back, at a line that [`Records::gives_figure`]: whether the
    /// reading has gone back far enough. Most files need only the latest
    /// such line; one whose figure and point are on lines of two kinds
    /// needs the latest of each.
    fn back_far_enough(&mut self, _line: &[u8]) -> bool {
        true
    }
}

/// Where a reading stopped and how it went.
pub struct Read {
    pub cursor: Cursor,
    pub method: Method,
    pub bytes_read: u64,
}

/// Reads what is new in the session file at `path` into `records`; `what`
/// names the file in errors ("Qwen Code chat file").
pub fn read(
    path: &Path,
    cursor: Option<&Cursor>,
    records: &mut dyn Records,
    what: &str,
) -> Result<Read, String> {
    use std::os::unix::fs::MetadataExt;
    let shown = path.display();
    let (file, meta) = match open_regular(path) {
        Ok(Some(opened)) => opened,
        Ok(None) => return Err(format!("{what} {shown} is not a regular file")),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(format!("{what} {shown} is missing"));
        }
        Err(e) => return Err(format!("cannot read {what} {shown}: {e}")),
    };
    let failed = |e: io::Error| format!("cannot read {what} {shown}: {e}");
    let (len, dev, ino) = (meta.len(), meta.dev(), meta.ino());
    let same_file = cursor.filter(|c| c.dev == dev && c.ino == ino && c.offset <= len);
    let (read_to, bytes_read, method) = match same_file {
        Some(c) if c.offset == len => (len, 0, Method::Unchanged),
        Some(c) if len - c.offset <= FORWARD_LIMIT => {
            let (read_to, bytes) = read_forward(&file, c.offset, len, records).map_err(failed)?;
            (read_to, bytes, Method::Forward)
        }
        // A compaction below where the last reading stopped was taken then.
        _ => {
            let floor = same_file.map_or(0, |c| c.offset);
            let (read_to, bytes) = read_backward(&file, len, floor, records).map_err(failed)?;
            (read_to, bytes, Method::Backward)
        }
    };
    Ok(Read {
        cursor: Cursor {
            offset: read_to,
            dev,
            ino,
        },
        method,
        bytes_read,
    })
}

/// Takes in the complete lines between `start` and `end`; returns the byte
/// after the last one and the bytes read.
fn read_forward(
    file: &std::fs::File,
    start: u64,
    end: u64,
    records: &mut dyn Records,
) -> io::Result<(u64, u64)> {
    read_complete_lines(file, start, end, |at, line| {
        if mentions_any(line, records.needles()) {
            records.take(at, line);
        }
    })
}

/// Reads back from the end to the latest record with a figure (see
/// [`Records::back_far_enough`]), then takes in what was found in the
/// file's order. Records below `floor` are not
/// taken in, but for that one.
fn read_backward(
    file: &std::fs::File,
    len: u64,
    floor: u64,
    records: &mut dyn Records,
) -> io::Result<(u64, u64)> {
    let mut lines = ReverseLines::new(file, len);
    lines.stop_below(len.saturating_sub(SEARCH_LIMIT));
    let mut found: Vec<(u64, Vec<u8>)> = Vec::new();
    while let Some(line) = lines.next_line()? {
        let at = lines.position();
        if !mentions_any(&line, records.needles()) {
            continue;
        }
        let gives_figure = records.gives_figure(&line);
        let far_enough = gives_figure && records.back_far_enough(&line);
        if at >= floor || gives_figure {
            found.push((at, line));
        }
        if far_enough {
            break;
        }
    }
    for (at, line) in found.iter().rev() {
        records.take(*at, line);
    }
    Ok((lines.end_of_complete_lines(), lines.bytes_read()))
}

/// A reading as every harness hands it to the core: what `read` went
/// through and what the records said.
pub fn session_reading(
    read: Read,
    usage: Option<Usage>,
    boundaries: Vec<Boundary>,
    window: Option<u64>,
) -> SessionReading {
    SessionReading {
        reading: Reading {
            usage,
            boundaries,
            cursor: read.cursor,
            method: read.method,
            bytes_read: read.bytes_read,
        },
        window,
        // Settled from the hook, which knows where the harness was started.
        compaction_point: None,
    }
}

/// The first answer `visit` gives, reading the file's lines back from its
/// end (within [`SEARCH_LIMIT`]); `None` when it gives none, or when the
/// file is not a regular file.
pub fn scan_back<T>(
    path: &Path,
    mut visit: impl FnMut(&[u8]) -> Option<T>,
) -> io::Result<Option<T>> {
    let Some((file, meta)) = open_regular(path)? else {
        return Ok(None);
    };
    let mut lines = ReverseLines::new(&file, meta.len());
    lines.stop_below(meta.len().saturating_sub(SEARCH_LIMIT));
    while let Some(line) = lines.next_line()? {
        if let Some(found) = visit(&line) {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

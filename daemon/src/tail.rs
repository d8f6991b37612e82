//! Reading session files from their end: the latest figure is at the end of
//! a file that may be hundreds of megabytes, so readers walk back from it,
//! a chunk at a time, and never past what they need.

use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

/// Bytes per backward read.
pub const CHUNK: usize = 64 * 1024;
/// Longer lines are skipped. Claude Code writes each content block of a
/// reply as its own line with the same usage, so a giant tool input (a
/// large Write) loses nothing: its siblings carry the figure.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// Opens a transcript (or any harness record) for reading, with its
/// metadata; `None` when it is not a regular file. O_NONBLOCK: a FIFO
/// someone put in its place must not hang the reader.
pub fn open_regular(path: &Path) -> io::Result<Option<(File, std::fs::Metadata)>> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    Ok(meta.is_file().then_some((file, meta)))
}

/// Complete lines of a file, last first, read in chunks from the end. The
/// bytes after the last newline (a line still being written) are left out,
/// and so are lines longer than [`MAX_LINE`].
pub struct ReverseLines<'f> {
    file: &'f File,
    /// Start of the bytes not yet read.
    pos: u64,
    /// Pieces of the line being assembled, newest chunk first.
    pieces: Vec<Vec<u8>>,
    pieces_len: usize,
    /// Lines of the current chunk with their start offsets, oldest first.
    ready: Vec<(u64, Vec<u8>)>,
    /// Still before the first newline from the end.
    in_partial_tail: bool,
    /// Inside a line longer than [`MAX_LINE`].
    skipping: bool,
    end_of_complete: u64,
    bytes_read: u64,
    line_start: u64,
    /// Lines starting below this offset are not wanted.
    floor: u64,
}

impl<'f> ReverseLines<'f> {
    pub fn new(file: &'f File, len: u64) -> Self {
        ReverseLines {
            file,
            pos: len,
            pieces: Vec::new(),
            pieces_len: 0,
            ready: Vec::new(),
            in_partial_tail: true,
            skipping: false,
            end_of_complete: 0,
            bytes_read: 0,
            line_start: len,
            floor: 0,
        }
    }

    /// Stops once the lines left all start below `floor`.
    pub fn stop_below(&mut self, floor: u64) {
        self.floor = floor;
    }

    /// Byte offset just after the last complete line (0 when there is none).
    pub fn end_of_complete_lines(&self) -> u64 {
        self.end_of_complete
    }

    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// Start offset of the line returned last.
    pub fn position(&self) -> u64 {
        self.line_start
    }

    pub fn next_line(&mut self) -> io::Result<Option<Vec<u8>>> {
        loop {
            if let Some((start, line)) = self.ready.pop() {
                self.line_start = start;
                return Ok(Some(line));
            }
            if self.pos <= self.floor && self.pos > 0 {
                // Whatever is left starts below the floor.
                self.pieces.clear();
                return Ok(None);
            }
            if self.pos == 0 {
                // The file's first line has no newline before it.
                if self.in_partial_tail || self.skipping || self.pieces.is_empty() {
                    self.pieces.clear();
                    return Ok(None);
                }
                self.line_start = 0;
                return Ok(Some(self.take_pieces(&[])));
            }
            self.read_chunk()?;
        }
    }

    fn read_chunk(&mut self) -> io::Result<()> {
        let start = self.pos.saturating_sub(CHUNK as u64);
        let mut chunk = vec![0u8; (self.pos - start) as usize];
        self.file.read_exact_at(&mut chunk, start)?;
        self.bytes_read += chunk.len() as u64;
        // chunk[..end] is not yet part of any line.
        let mut end = chunk.len();
        let mut found = Vec::new();
        for nl in memchr::memrchr_iter(b'\n', &chunk) {
            if self.in_partial_tail {
                self.in_partial_tail = false;
                self.end_of_complete = start + nl as u64 + 1;
            } else if self.skipping {
                self.skipping = false;
            } else {
                let line = self.take_pieces(&chunk[nl + 1..end]);
                found.push((start + nl as u64 + 1, line));
            }
            end = nl;
        }
        // What is left continues a line that began in an older chunk.
        if !self.in_partial_tail && !self.skipping {
            self.pieces.push(chunk[..end].to_vec());
            self.pieces_len += end;
            if self.pieces_len > MAX_LINE {
                self.skipping = true;
                self.pieces.clear();
                self.pieces_len = 0;
            }
        }
        self.pos = start;
        found.reverse();
        self.ready = found;
        Ok(())
    }

    /// `head` followed by the pieces gathered from newer chunks.
    fn take_pieces(&mut self, head: &[u8]) -> Vec<u8> {
        let mut line = Vec::with_capacity(head.len() + self.pieces_len);
        line.extend_from_slice(head);
        for piece in self.pieces.drain(..).rev() {
            line.extend_from_slice(&piece);
        }
        self.pieces_len = 0;
        line
    }
}

/// Reads the bytes of `file` between `start` and `end` and hands each
/// complete line to `each` with the offset it starts at; the bytes after
/// the last newline (a line still being written) are left for the next
/// reading. Returns where the complete lines end and the bytes read.
pub fn read_complete_lines(
    file: &File,
    start: u64,
    end: u64,
    mut each: impl FnMut(u64, &[u8]),
) -> io::Result<(u64, u64)> {
    let mut buf = vec![0u8; end.saturating_sub(start) as usize];
    file.read_exact_at(&mut buf, start)?;
    let complete = memchr::memrchr(b'\n', &buf).map_or(0, |i| i + 1);
    let mut at = start;
    for line in buf[..complete].split(|b| *b == b'\n') {
        each(at, line);
        at += line.len() as u64 + 1;
    }
    Ok((start + complete as u64, buf.len() as u64))
}

/// Whether `line` holds any of `needles`: a cheap look before a JSON parse.
pub fn mentions_any(line: &[u8], needles: &[&[u8]]) -> bool {
    needles
        .iter()
        .any(|needle| memchr::memmem::find(line, needle).is_some())
}

//! The one framing of the wire: a big-endian `u32` length, then that many
//! bytes of JSON. Every message in either direction is encoded and decoded
//! here, so a size cap or a decoding error is handled the same way everywhere.

use serde::{Serialize, de::DeserializeOwned};
use std::io::{self, Read, Write};

/// Largest frame either side accepts. Hook payloads carry tool output, which
/// can be large, but nothing legitimate comes near this.
pub const MAX_FRAME_BYTES: usize = 32 * 1024 * 1024;

/// Bytes in the length prefix.
pub const HEADER_BYTES: usize = 4;

/// How many bytes of an undecodable frame an error message shows.
const PREVIEW_BYTES: usize = 120;

#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("the peer closed the connection")]
    Closed,
    #[error("the connection closed in the middle of a frame ({got} of {want} bytes)")]
    Truncated { got: usize, want: usize },
    #[error("a frame of {len} bytes exceeds the limit of {max} bytes")]
    TooLarge { len: usize, max: usize },
    #[error("cannot encode a message: {0}")]
    Encode(serde_json::Error),
    #[error(
        "unexpected message ({error}); is hookctl the same version as hookd? \
         The message began with: {preview}"
    )]
    Decode {
        error: serde_json::Error,
        preview: String,
    },
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl FrameError {
    /// True when the error is a timeout of a socket with a deadline.
    pub fn is_timeout(&self) -> bool {
        matches!(self, FrameError::Io(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut))
    }
}

/// Serializes `msg` into one complete frame (header and body).
pub fn encode<T: Serialize + ?Sized>(msg: &T) -> Result<Vec<u8>, FrameError> {
    let mut buf = Vec::new();
    encode_into(&mut buf, msg)?;
    Ok(buf)
}

/// Appends `msg` to `buf` as one complete frame: several frames go out in
/// one buffer, with no copy of a large body.
pub fn encode_into<T: Serialize + ?Sized>(buf: &mut Vec<u8>, msg: &T) -> Result<(), FrameError> {
    let start = buf.len();
    buf.extend_from_slice(&[0; HEADER_BYTES]);
    let written = serde_json::to_writer(&mut *buf, msg).map_err(FrameError::Encode);
    let len = buf.len() - start - HEADER_BYTES;
    let result = match written {
        Err(e) => Err(e),
        Ok(()) if len > MAX_FRAME_BYTES => Err(FrameError::TooLarge {
            len,
            max: MAX_FRAME_BYTES,
        }),
        Ok(()) => {
            buf[start..start + HEADER_BYTES].copy_from_slice(&(len as u32).to_be_bytes());
            return Ok(());
        }
    };
    buf.truncate(start);
    result
}

/// Reads the body length from a header, refusing oversized frames before
/// anything is allocated for them.
pub fn body_len(header: [u8; HEADER_BYTES]) -> Result<usize, FrameError> {
    let len = u32::from_be_bytes(header) as usize;
    if len > MAX_FRAME_BYTES {
        return Err(FrameError::TooLarge {
            len,
            max: MAX_FRAME_BYTES,
        });
    }
    Ok(len)
}

/// Decodes a frame body.
pub fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, FrameError> {
    serde_json::from_slice(body).map_err(|error| FrameError::Decode {
        error,
        preview: preview(body),
    })
}

fn preview(body: &[u8]) -> String {
    let cut = body.len().min(PREVIEW_BYTES);
    let mut text = String::from_utf8_lossy(&body[..cut]).into_owned();
    if body.len() > cut {
        text.push('…');
    }
    text
}

/// Writes one message as a frame.
pub fn write_frame<W: Write, T: Serialize + ?Sized>(w: &mut W, msg: &T) -> Result<(), FrameError> {
    w.write_all(&encode(msg)?)?;
    w.flush()?;
    Ok(())
}

/// Reads one frame body. A clean end of stream before the first byte is
/// [`FrameError::Closed`]; an end anywhere later is [`FrameError::Truncated`].
pub fn read_frame<R: Read>(r: &mut R) -> Result<Vec<u8>, FrameError> {
    let mut header = [0u8; HEADER_BYTES];
    let got = read_full(r, &mut header)?;
    if got == 0 {
        return Err(FrameError::Closed);
    }
    if got < HEADER_BYTES {
        return Err(FrameError::Truncated {
            got,
            want: HEADER_BYTES,
        });
    }
    let len = body_len(header)?;
    let mut body = vec![0u8; len];
    let got = read_full(r, &mut body)?;
    if got < len {
        return Err(FrameError::Truncated {
            got: HEADER_BYTES + got,
            want: HEADER_BYTES + len,
        });
    }
    Ok(body)
}

/// Reads and decodes one message.
pub fn read_message<R: Read, T: DeserializeOwned>(r: &mut R) -> Result<T, FrameError> {
    decode(&read_frame(r)?)
}

/// Like `read_exact`, but reports how much arrived before the end of stream.
fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

#[cfg(feature = "async")]
mod nonblocking {
    use super::*;
    use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

    /// Async twin of [`write_frame`].
    pub async fn write_frame_async<W, T>(w: &mut W, msg: &T) -> Result<(), FrameError>
    where
        W: AsyncWrite + Unpin,
        T: Serialize + ?Sized,
    {
        w.write_all(&encode(msg)?).await?;
        w.flush().await?;
        Ok(())
    }

    /// Async twin of [`read_frame`].
    pub async fn read_frame_async<R: AsyncRead + Unpin>(r: &mut R) -> Result<Vec<u8>, FrameError> {
        let mut header = [0u8; HEADER_BYTES];
        let got = read_full_async(r, &mut header).await?;
        if got == 0 {
            return Err(FrameError::Closed);
        }
        if got < HEADER_BYTES {
            return Err(FrameError::Truncated {
                got,
                want: HEADER_BYTES,
            });
        }
        let len = body_len(header)?;
        let mut body = vec![0u8; len];
        let got = read_full_async(r, &mut body).await?;
        if got < len {
            return Err(FrameError::Truncated {
                got: HEADER_BYTES + got,
                want: HEADER_BYTES + len,
            });
        }
        Ok(body)
    }

    async fn read_full_async<R: AsyncRead + Unpin>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
        let mut filled = 0;
        while filled < buf.len() {
            match r.read(&mut buf[filled..]).await? {
                0 => break,
                n => filled += n,
            }
        }
        Ok(filled)
    }
}

#[cfg(feature = "async")]
pub use nonblocking::{read_frame_async, write_frame_async};

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::Cursor;

    proptest! {
        #[test]
        fn round_trip(values in proptest::collection::vec(any::<String>(), 0..8)) {
            let frame = encode(&values).unwrap();
            let back: Vec<String> = read_message(&mut Cursor::new(frame)).unwrap();
            prop_assert_eq!(back, values);
        }

        #[test]
        fn several_frames_in_one_stream(values in proptest::collection::vec(any::<u64>(), 1..16)) {
            let mut stream = Vec::new();
            for v in &values {
                encode_into(&mut stream, v).unwrap();
            }
            let mut cursor = Cursor::new(stream);
            for v in &values {
                let back: u64 = read_message(&mut cursor).unwrap();
                prop_assert_eq!(back, *v);
            }
            prop_assert!(matches!(read_frame(&mut cursor), Err(FrameError::Closed)));
        }

        #[test]
        fn every_truncation_is_reported(text in ".{0,64}", cut_seed in any::<usize>()) {
            let frame = encode(&text).unwrap();
            let cut = cut_seed % frame.len();
            let result = read_frame(&mut Cursor::new(&frame[..cut]));
            if cut == 0 {
                prop_assert!(matches!(result, Err(FrameError::Closed)));
            } else {
                let is_truncated = matches!(result, Err(FrameError::Truncated { got, .. }) if got == cut);
                prop_assert!(is_truncated);
            }
        }

        #[test]
        fn oversized_headers_are_refused_before_allocating(len in (MAX_FRAME_BYTES as u32 + 1)..=u32::MAX) {
            let mut stream = len.to_be_bytes().to_vec();
            stream.extend_from_slice(b"{}");
            let result = read_frame(&mut Cursor::new(stream));
            let is_too_large = matches!(result, Err(FrameError::TooLarge { len: l, .. }) if l == len as usize);
            prop_assert!(is_too_large);
        }

        #[test]
        fn garbage_bodies_decode_to_an_error(body in proptest::collection::vec(any::<u8>(), 0..256)) {
            // Any bytes at all: never a panic, and a message that says what came.
            if let Err(e) = decode::<Vec<u32>>(&body) {
                prop_assert!(e.to_string().contains("same version"));
            }
        }
    }

    #[test]
    fn oversized_messages_are_not_encoded() {
        let big = "x".repeat(MAX_FRAME_BYTES);
        assert!(matches!(encode(&big), Err(FrameError::TooLarge { .. })));
        // Appending leaves the frames before it whole.
        let mut buf = encode("first").unwrap();
        let before = buf.clone();
        assert!(matches!(
            encode_into(&mut buf, &big),
            Err(FrameError::TooLarge { .. })
        ));
        assert_eq!(buf, before);
    }

    #[test]
    fn decode_error_shows_the_start_of_the_message() {
        let err = decode::<u32>(b"HTTP/1.1 400 Bad Request").unwrap_err();
        assert!(err.to_string().contains("HTTP/1.1 400"), "{err}");
    }
}

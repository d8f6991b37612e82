//! Random bytes from the OS, in hex: the one place getrandom is called.

/// `bytes` random bytes as lowercase hex; `None` when the OS gives none.
pub fn hex(bytes: usize) -> Option<String> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).ok()?;
    Some(buf.iter().map(|b| format!("{b:02x}")).collect())
}

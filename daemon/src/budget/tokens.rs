//! Token counts without a tokenizer. The tokenizer of current Claude
//! models is not published, so any offline count is an estimate; this one
//! costs no memory and no load time. It is set from the newest Claude
//! tokenizer that is published (the Claude 2 era one in
//! anthropic-sdk-python 0.25), measured on this repository by
//! `tests/tools/calibrate_tokens.py`: 3.59 bytes per token for its code,
//! 3.63 for its Markdown (4.3 for a document of mostly English prose). Rounded down,
//! so budgets count a little high rather than low.

/// Bytes per token of source code and structured text.
const CODE_BYTES_PER_TOKEN: f64 = 3.5;
/// Bytes per token of documentation (Markdown, plain text).
const PROSE_BYTES_PER_TOKEN: f64 = 3.6;

/// What kind of text is being counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    Code,
    Prose,
}

impl TextKind {
    /// Prose for documentation extensions, code for everything else.
    pub fn of_path(path: &str) -> TextKind {
        let ext = path.rsplit('.').next().unwrap_or("").to_ascii_lowercase();
        if matches!(ext.as_str(), "md" | "markdown" | "txt" | "rst" | "adoc") {
            TextKind::Prose
        } else {
            TextKind::Code
        }
    }
}

/// Estimated tokens in `text`.
pub fn estimate(text: &str, kind: TextKind) -> usize {
    estimate_bytes(text.len(), kind)
}

/// Estimated tokens in `bytes` bytes of text.
pub fn estimate_bytes(bytes: usize, kind: TextKind) -> usize {
    let per_token = match kind {
        TextKind::Code => CODE_BYTES_PER_TOKEN,
        TextKind::Prose => PROSE_BYTES_PER_TOKEN,
    };
    (bytes as f64 / per_token).ceil() as usize
}

/// `text` cut to about `tokens` tokens, at a line boundary, with a note of what was cut.
pub fn truncate_to(text: &str, tokens: usize, kind: TextKind) -> String {
    if estimate(text, kind) <= tokens {
        return text.to_owned();
    }
    let note_room = 12;
    let budget_bytes = ((tokens.saturating_sub(note_room)) as f64
        * match kind {
            TextKind::Code => CODE_BYTES_PER_TOKEN,
            TextKind::Prose => PROSE_BYTES_PER_TOKEN,
        }) as usize;
    let mut out = String::new();
    let mut kept = 0;
    let total = text.lines().count();
    for line in text.lines() {
        if out.len() + line.len() + 1 > budget_bytes {
            break;
        }
        out.push_str(line);
        out.push('\n');
        kept += 1;
    }
    out.push_str(&format!("… ({} more lines)\n", total - kept));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_and_truncation() {
        assert_eq!(estimate("", TextKind::Code), 0);
        assert_eq!(estimate("abcdefg", TextKind::Code), 2);
        assert_eq!(TextKind::of_path("docs/a.md"), TextKind::Prose);
        assert_eq!(TextKind::of_path("src/a.rs"), TextKind::Code);
        let text: String = (0..1000).map(|i| format!("line number {i}\n")).collect();
        let cut = truncate_to(&text, 100, TextKind::Code);
        assert!(
            estimate(&cut, TextKind::Code) <= 100,
            "{}",
            estimate(&cut, TextKind::Code)
        );
        assert!(cut.ends_with("more lines)\n"));
        assert_eq!(truncate_to("short\n", 100, TextKind::Code), "short\n");
    }
}

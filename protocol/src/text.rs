//! Text from outside hookd (a repository, a session file, a payload, the
//! memory) made safe to show: on one line, with nothing a terminal or a
//! Markdown reader would take as structure.
//!
//! Control characters (newlines, escapes, C1 codes such as CSI), Unicode
//! line and paragraph separators and the marks that reorder text without
//! being seen all become spaces, and runs of spaces close up. A value
//! cleaned this way cannot start a line of its own, so it cannot forge a
//! heading or a list item, and cannot send an escape sequence to a
//! terminal.

/// Whether `c` must not reach a terminal or a prompt as it is.
pub fn is_hidden_control(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{061c}'
                | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}'
                // Zero-width characters and Unicode tags: invisible to the
                // person, read by the model (hidden text rides on them).
                | '\u{200b}'..='\u{200d}' | '\u{2060}'..='\u{2064}'
                | '\u{fff9}'..='\u{fffb}' | '\u{e0000}'..='\u{e007f}'
        )
}

/// `text` on one line: every [`is_hidden_control`] character and every run
/// of whitespace becomes one space, and the ends are trimmed.
pub fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text
        .split(|c: char| c.is_whitespace() || is_hidden_control(c))
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// `text` cut to at most `max` characters, with an ellipsis when cut.
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some(_) => {
            let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
            out.push('…');
            out
        }
    }
}

/// `text` for a terminal: every [`is_hidden_control`] character but the
/// newline and the tab becomes a space, so no escape sequence reaches the
/// terminal; clean text (the common case) is not copied.
pub fn for_terminal(text: &str) -> std::borrow::Cow<'_, str> {
    let hidden = |c: char| is_hidden_control(c) && c != '\n' && c != '\t';
    if !text.chars().any(hidden) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(
        text.chars()
            .map(|c| if hidden(c) { ' ' } else { c })
            .collect(),
    )
}

/// `n` and the word, plural unless `n` is one: "1 event", "3 events".
pub fn counted(n: impl Into<u64>, word: &str) -> String {
    let n = n.into();
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// Longest path [`is_plain_absolute_path`] takes.
pub const MAX_PLAIN_PATH: usize = 200;

/// An absolute path of letters, digits and `/._-` only, not too long: what
/// another machine says its project was may be shown to the model only so.
pub fn is_plain_absolute_path(path: &str) -> bool {
    path.starts_with('/')
        && path.len() <= MAX_PLAIN_PATH
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_newlines_and_direction_marks_become_spaces() {
        let osc = "claude\u{1b}]0;pwned\u{7}\u{1b}]52;c;Y3VybA==\u{7}-sonnet";
        assert_eq!(one_line(osc), "claude ]0;pwned ]52;c;Y3VybA== -sonnet");
        assert_eq!(
            one_line("keep LL(1)\n\n### URGENT\r\n- do it"),
            "keep LL(1) ### URGENT - do it"
        );
        assert_eq!(one_line("a\u{2028}b\u{202e}c\u{9b}31m d"), "a b c 31m d");
        // Unicode tags spell "run" unseen; a zero-width space hides a break.
        assert_eq!(one_line("ok\u{e0072}\u{e0075}\u{e006e}\u{200b}!"), "ok !");
        assert_eq!(one_line("  \n "), "");
        assert!(!one_line(osc).chars().any(is_hidden_control));
    }

    #[test]
    fn clipping_counts_characters() {
        assert_eq!(clip("héllo", 5), "héllo");
        assert_eq!(clip("héllo wörld", 5), "héll…");
        assert_eq!(clip("", 0), "");
    }

    #[test]
    fn clean_text_is_borrowed_for_the_terminal() {
        assert!(matches!(
            for_terminal("claude-sonnet-4"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(for_terminal("x\u{1b}[2Jy\u{9b}1m"), "x [2Jy 1m");
        assert_eq!(for_terminal("two\nlines\tkept\r"), "two\nlines\tkept ");
    }
}

//! How deep YAML text nests its flow collections (`[ ]`, `{ }`), found in
//! one linear pass before the text reaches the YAML parser: the parser's
//! time grows with the square of that depth (60,000 `[` take seconds), so
//! untrusted text nested deeper than [`MAX_DEPTH`] is refused unparsed.
//!
//! The pass never finds less depth than the parser would. It does not
//! follow the block structure (indentation, block scalars, multi-line plain
//! scalars), which needs the whole parser; instead it supposes that any `[`
//! or `{` may open a flow collection, and follows each supposition with the
//! parser's rules for flow context, where a bracket counts everywhere but
//! in a quoted scalar, a comment or a tag. Suppositions in the same lexical
//! state behave alike from there on, so they are kept as one (the deepest),
//! and the pass costs a few steps per character. A supposition ends where
//! the parser would stop with an error (its scanner reads at most a line,
//! or 1024 characters, ahead of that). What it may count too many are
//! brackets left open inside text (a quoted, plain or block scalar, a
//! comment): 64 of them in a row is not something a hand-written file does.
//!
//! Block nesting (indentation) costs the parser linear time, and the
//! parser refuses it beyond 128 levels itself.

use std::fmt;

/// Deepest flow nesting read from an untrusted file.
pub const MAX_DEPTH: usize = 64;

/// Text nested deeper than a limit, and the line where it went beyond.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooDeep {
    pub limit: usize,
    pub line: usize,
}

impl fmt::Display for TooDeep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`[` and `{{` are nested more than {} deep at line {}; hookd reads YAML nested at most {} deep (write deep lists as indented block lists)",
            self.limit, self.line, self.limit
        )
    }
}

/// Where a supposed flow collection's text is, as the parser would see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lex {
    /// Between tokens.
    Start,
    /// In a plain scalar.
    Plain,
    /// In whitespace after a plain scalar's text, which may go on.
    PlainSpace,
    Single,
    /// At the second quote of a `''` in a single-quoted scalar.
    SingleEscaped,
    Double,
    /// At the character after a `\` in a double-quoted scalar.
    DoubleEscaped,
    Comment,
    /// In an anchor or alias name.
    Anchor,
    /// In a tag (`!x`), which ends at whitespace or `,`.
    Tag,
    /// In a verbatim tag (`!<x>`), which may hold `,`, `[` and `]`.
    VerbatimTag,
}

const STATES: usize = 11;

impl Lex {
    const ALL: [Lex; STATES] = [
        Lex::Start,
        Lex::Plain,
        Lex::PlainSpace,
        Lex::Single,
        Lex::SingleEscaped,
        Lex::Double,
        Lex::DoubleEscaped,
        Lex::Comment,
        Lex::Anchor,
        Lex::Tag,
        Lex::VerbatimTag,
    ];
}

/// What comes after one character under one supposition.
enum Step {
    Go(Lex, usize),
    /// The collection closed, or the parser would stop with an error here.
    End,
}

/// The character at a position and what the rules look at around it.
struct At<'a> {
    c: char,
    next: Option<char>,
    /// At column 0 (the start of the text or after a line break).
    line_start: bool,
    /// The text from `c` on.
    rest: &'a str,
}

fn is_break(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// Whitespace, a line break or the end.
fn is_blankz(c: Option<char>) -> bool {
    c.is_none_or(|c| is_blank(c) || is_break(c) || c == '\0')
}

impl At<'_> {
    /// `---` or `...` at column 0: a document marker, an error in flow context.
    fn document_marker(&self) -> bool {
        self.line_start
            && (self.rest.starts_with("---") || self.rest.starts_with("..."))
            && is_blankz(self.rest[3..].chars().next())
    }
}

fn step(lex: Lex, depth: usize, at: &At) -> Step {
    let go = |lex| Step::Go(lex, depth);
    let c = at.c;
    match lex {
        Lex::Start => {
            if at.document_marker() || (at.line_start && c == '%') {
                return Step::End;
            }
            match c {
                '\u{feff}' if at.line_start => go(Lex::Start),
                c if is_blank(c) || is_break(c) => go(Lex::Start),
                '#' => go(Lex::Comment),
                '[' | '{' => Step::Go(Lex::Start, depth + 1),
                ']' | '}' if depth <= 1 => Step::End,
                ']' | '}' => Step::Go(Lex::Start, depth - 1),
                ',' | '?' | ':' => go(Lex::Start),
                // A block entry in flow context, or a character that
                // starts no token: the parser stops.
                '-' if is_blankz(at.next) => Step::End,
                '|' | '>' | '@' | '`' | '%' => Step::End,
                '*' | '&' => go(Lex::Anchor),
                '!' if at.next == Some('<') => go(Lex::VerbatimTag),
                '!' => go(Lex::Tag),
                '\'' => go(Lex::Single),
                '"' => go(Lex::Double),
                _ => go(Lex::Plain),
            }
        }
        Lex::Plain | Lex::PlainSpace => {
            if at.document_marker() {
                return Step::End;
            }
            match c {
                c if is_blank(c) || is_break(c) => go(Lex::PlainSpace),
                '#' if lex == Lex::PlainSpace => go(Lex::Comment),
                ':' if at.next.is_some_and(|n| ",?[]{}".contains(n)) => Step::End,
                ':' if is_blankz(at.next) => go(Lex::Start),
                ',' | '[' | ']' | '{' | '}' => step(Lex::Start, depth, at),
                _ => go(Lex::Plain),
            }
        }
        Lex::Single if at.document_marker() => Step::End,
        Lex::Single if c == '\'' && at.next == Some('\'') => go(Lex::SingleEscaped),
        Lex::Single if c == '\'' => go(Lex::Start),
        Lex::Single | Lex::SingleEscaped => go(Lex::Single),
        Lex::Double if at.document_marker() => Step::End,
        Lex::Double if c == '\\' => go(Lex::DoubleEscaped),
        Lex::Double if c == '"' => go(Lex::Start),
        Lex::Double | Lex::DoubleEscaped => go(Lex::Double),
        Lex::Comment if is_break(c) => go(Lex::Start),
        Lex::Comment => go(Lex::Comment),
        Lex::Anchor if c.is_ascii_alphanumeric() || c == '_' || c == '-' => go(Lex::Anchor),
        Lex::Anchor => step(Lex::Start, depth, at),
        Lex::Tag if is_blank(c) || is_break(c) || c == ',' => go(Lex::Start),
        Lex::Tag => go(Lex::Tag),
        Lex::VerbatimTag if is_blank(c) || is_break(c) => go(Lex::Start),
        Lex::VerbatimTag => go(Lex::VerbatimTag),
    }
}

/// `Err` when `text` nests flow collections deeper than `limit`, naming
/// the line where it does.
pub fn check(text: &str, limit: usize) -> Result<(), TooDeep> {
    // The deepest supposition in each lexical state, if any.
    let mut scans: [Option<usize>; STATES] = [None; STATES];
    let mut line = 1;
    let mut line_start = true;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let at = At {
            c,
            next: chars.peek().map(|&(_, n)| n),
            line_start,
            rest: &text[i..],
        };
        let mut next: [Option<usize>; STATES] = [None; STATES];
        let mut keep = |lex: Lex, depth: usize| {
            let slot = &mut next[lex as usize];
            *slot = Some(slot.map_or(depth, |d| d.max(depth)));
        };
        for lex in Lex::ALL {
            if let Some(depth) = scans[lex as usize]
                && let Step::Go(lex, depth) = step(lex, depth, &at)
            {
                keep(lex, depth);
            }
        }
        // Supposing the parser is in block context here, this opens a
        // flow collection.
        if c == '[' || c == '{' {
            keep(Lex::Start, 1);
        }
        if next.iter().flatten().any(|&d| d > limit) {
            return Err(TooDeep { limit, line });
        }
        scans = next;
        // `\r\n` is one line break.
        line_start = is_break(c);
        if is_break(c) && !(c == '\r' && at.next == Some('\n')) {
            line += 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn depth(text: &str) -> usize {
        (0..=200)
            .find(|&limit| check(text, limit).is_ok())
            .expect("less than 200 deep")
    }

    #[test]
    fn flow_nesting_is_counted() {
        assert_eq!(depth("a: 1\nb: [x, y]\n"), 1);
        assert_eq!(depth("a: [[1, 2], {b: [c]}]\n"), 3);
        assert_eq!(depth("- [a]\n- [b]\n- {c: [d]}\n"), 2);
        let deep = format!("a: {}{}\n", "[".repeat(64), "]".repeat(64));
        assert!(check(&deep, MAX_DEPTH).is_ok());
        let deeper = format!("a:\n  b: {}{}\n", "[".repeat(65), "]".repeat(65));
        assert_eq!(
            check(&deeper, MAX_DEPTH),
            Err(TooDeep {
                limit: MAX_DEPTH,
                line: 2
            })
        );
    }

    #[test]
    fn closers_in_quotes_comments_and_tags_do_not_hide_openers() {
        for unit in ["['x]]', ", "[\"]]\\\"]\", ", "[# ]]\n", "[!<x]]]> y, "] {
            let text = format!("a: [{}]\n", unit.repeat(70));
            assert!(check(&text, MAX_DEPTH).is_err(), "{text}");
        }
        assert_eq!(depth("a: [x # ]]]]\n, y]\n"), 1);
        assert_eq!(depth("a: [it's, don\"t, 'it''s [', \"a \\\" [\"]\n"), 1);
    }

    #[test]
    fn a_plain_scalar_in_flow_ends_at_brackets() {
        // In flow context `[` ends a plain scalar and opens a collection.
        assert_eq!(depth("a: [b[c[d]]]\n"), 3);
        // A quote inside a plain scalar opens nothing.
        let text = format!("a: [b 'c, {}x{}, d']\n", "[".repeat(70), "]".repeat(70));
        assert!(check(&text, MAX_DEPTH).is_err());
    }

    #[test]
    fn every_line_break_the_parser_knows_ends_a_comment() {
        for brk in ["\n", "\r", "\r\n", "\u{85}", "\u{2028}", "\u{2029}"] {
            let text = format!("a: [ # note{brk}{}x{}]\n", "[".repeat(70), "]".repeat(70));
            assert!(check(&text, MAX_DEPTH).is_err(), "{brk:?}");
        }
    }

    #[test]
    fn sixty_thousand_brackets_are_refused_at_once() {
        let text = format!("workflow_id: {}", "[".repeat(60_000));
        let started = std::time::Instant::now();
        assert!(check(&text, MAX_DEPTH).is_err());
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn ordinary_files_pass() {
        let text = "# the plan\nworkflow_id: w1\ntasks:\n  - {id: t1, title: \"Fix a[0] and {x}\", files: [a.rs, b.rs]}\n  - id: t2\n    title: don't [stop]\nnotes: |\n  if (a[i] == '[') { b[j] = c; }\n";
        assert!(check(text, MAX_DEPTH).is_ok());
        assert!(check("", MAX_DEPTH).is_ok());
    }

    /// Levels of flow collections a parsed value surely had: a mapping of
    /// one entry in a sequence may be a `[a: b]`, which opens no level.
    fn nesting(value: &serde_yaml::Value) -> usize {
        use serde_yaml::Value;
        let inner = |v: &Value| match v {
            Value::Mapping(map) if map.len() == 1 => nesting(v) - 1,
            _ => nesting(v),
        };
        match value {
            Value::Sequence(items) => 1 + items.iter().map(inner).max().unwrap_or(0),
            Value::Mapping(map) => {
                1 + map
                    .iter()
                    .map(|(k, v)| nesting(k).max(nesting(v)))
                    .max()
                    .unwrap_or(0)
            }
            Value::Tagged(t) => nesting(&t.value),
            _ => 0,
        }
    }

    /// Text the parser reads, and its deepest flow nesting.
    fn nested() -> impl Strategy<Value = (String, usize)> {
        let leaf = prop_oneof![
            Just(("x".to_owned(), 0)),
            Just(("'a]b'".to_owned(), 0)),
            Just(("\"c}\\\"d\"".to_owned(), 0)),
            Just(("e f".to_owned(), 0)),
        ];
        leaf.prop_recursive(12, 64, 4, |inner| {
            (proptest::collection::vec(inner, 0..4), any::<bool>()).prop_map(|(items, map)| {
                let depth = 1 + items.iter().map(|(_, d)| *d).max().unwrap_or(0);
                let body: Vec<String> = items
                    .iter()
                    .enumerate()
                    .map(|(i, (t, _))| if map { format!("k{i}: {t}") } else { t.clone() })
                    .collect();
                let text = if map {
                    format!("{{{}}}", body.join(", "))
                } else {
                    format!("[{}]", body.join(", # c\n "))
                };
                (text, depth)
            })
        })
    }

    proptest! {
        /// Never less than the parser's depth, and exact for flow text.
        #[test]
        fn the_depth_is_the_parsers((text, want) in nested()) {
            let doc = format!("a: {text}\n");
            let parsed: Result<serde_yaml::Value, _> = serde_yaml::from_str(&doc);
            prop_assert!(parsed.is_ok(), "{doc}: {parsed:?}");
            prop_assert_eq!(depth(&doc), want, "{}", doc);
        }

        /// Random flow text the parser reads: never less than its depth.
        #[test]
        fn never_less_than_the_parser(body in "(\\[|\\]|\\{|\\}|,|'|\"|#|:|x|!|<|>|&|\\*|\\?|-|\\||%|\\.|\\\\| |\t|\n|\r|\u{2028}|\u{85}){0,60}") {
            let doc = format!("a: [{body}]\n");
            if let Ok(value) = serde_yaml::from_str::<serde_yaml::Value>(&doc) {
                let parsed = nesting(&value) - 1;
                prop_assert!(depth(&doc) >= parsed, "{doc:?}: {} < {parsed}", depth(&doc));
            }
        }

        /// Any text at all: an answer, never a panic.
        #[test]
        fn any_text_is_checked(text in "(\\PC|\n|\r|\\[|\\]|'|\"|#|:| ){0,200}") {
            let _ = check(&text, 3);
        }
    }
}

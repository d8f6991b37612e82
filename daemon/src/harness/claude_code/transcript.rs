//! Claude Code transcripts (`~/.claude/projects/<dir>/<session>.jsonl`):
//! how full the context is, read without parsing the whole file.
//!
//! - The current figure is `input + cache_creation + cache_read` tokens of
//!   the latest main-chain assistant entry (sidechains and API errors
//!   skipped). After a `compact_boundary` the older figures are stale: the
//!   boundary's `postTokens` stands until the next reply.
//! - When a session's file has only grown a little since the last read, we
//!   read the appended bytes; otherwise we scan backwards from the end and
//!   stop at the first reply. Either way the cost follows what is new, not
//!   the file's size.
//! - Partial last lines, malformed lines, unknown entry types, huge lines
//!   and non-UTF-8 bytes are skipped, never fatal.
//! - A reply or compaction whose token counts are not believable (not whole
//!   non-negative JSON integers, or absurdly large) leaves the figure as it
//!   was and marks the reading invalid, with why.

use crate::harness::reading::{Boundary, Cursor, Method, Reading, Usage};
use protocol::pressure::{CONTEXT_COUNTS, token_count, token_sum};
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::tail::{ReverseLines, open_regular};

/// Appended bytes read forward; more than this and we scan from the end.
pub const FORWARD_LIMIT: u64 = 8 * 1024 * 1024;
/// After a big jump, how far back we still look for a compaction we missed.
const BOUNDARY_LOOKBACK: u64 = 64 * 1024 * 1024;
/// After a boundary found by a backward scan, how far back we look for the model.
const MODEL_LOOKBACK: u64 = 4 * 1024 * 1024;
/// A backward scan gives up after this many bytes without a figure.
pub const SEARCH_LIMIT: u64 = 64 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    #[error("transcript {path} is missing")]
    Missing { path: String },
    #[error("transcript {path} is not a regular file")]
    NotAFile { path: String },
    #[error("cannot read transcript {path}: {source}")]
    Io { path: String, source: io::Error },
}

/// Brings a session's view of its transcript up to date.
pub fn read(
    path: &Path,
    cursor: Option<&Cursor>,
    current: Option<&Usage>,
) -> Result<Reading, TranscriptError> {
    let shown = || path.display().to_string();
    let io_err = |source: io::Error| TranscriptError::Io {
        path: shown(),
        source,
    };
    let (file, meta) = match open_regular(path) {
        Ok(Some(opened)) => opened,
        Ok(None) => return Err(TranscriptError::NotAFile { path: shown() }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(TranscriptError::Missing { path: shown() });
        }
        Err(e) => return Err(io_err(e)),
    };
    let (len, dev, ino) = (meta.len(), meta.dev(), meta.ino());
    let same_file = cursor.filter(|c| c.dev == dev && c.ino == ino && c.offset <= len);
    match same_file {
        Some(c) if c.offset == len => Ok(Reading {
            usage: current.cloned(),
            boundaries: Vec::new(),
            cursor: c.clone(),
            method: Method::Unchanged,
            bytes_read: 0,
        }),
        Some(c) if len - c.offset <= FORWARD_LIMIT => {
            let mut reading = read_forward(&file, c.offset, len, current).map_err(io_err)?;
            reading.cursor.dev = dev;
            reading.cursor.ino = ino;
            Ok(reading)
        }
        Some(c) => scan_backward(
            &file,
            len,
            len.saturating_sub(BOUNDARY_LOOKBACK).max(c.offset),
            dev,
            ino,
        )
        .map_err(io_err),
        None => scan_backward(&file, len, len, dev, ino).map_err(io_err),
    }
}

fn read_forward(file: &File, start: u64, end: u64, current: Option<&Usage>) -> io::Result<Reading> {
    let mut usage = current.cloned();
    let mut boundaries = Vec::new();
    let (read_to, bytes_read) =
        crate::tail::read_complete_lines(file, start, end, |at, line| match classify(line) {
            Some(Entry::Reply(u)) => usage = Some(u),
            Some(Entry::Boundary(b)) => {
                usage = Some(boundary_usage(
                    &b,
                    usage.as_ref().and_then(|u| u.model.clone()),
                ));
                boundaries.push(b);
            }
            Some(Entry::Invalid(why)) => {
                usage = Some(Usage::invalidated(usage.take(), invalid(at, &why)))
            }
            None => {}
        })?;
    Ok(Reading {
        usage,
        boundaries,
        cursor: Cursor {
            offset: read_to,
            dev: 0,
            ino: 0,
        },
        method: Method::Forward,
        bytes_read,
    })
}

fn boundary_usage(b: &Boundary, model: Option<String>) -> Usage {
    Usage {
        tokens: b.post_tokens.unwrap_or(0),
        model,
        from_boundary: true,
        message_id: None,
        invalid: None,
    }
}

/// Where and why a line's figures were refused, for `hookctl status`.
fn invalid(offset: u64, why: &str) -> String {
    format!("invalid usage in transcript line at byte {offset}: {why}")
}

/// Scans from the end for the latest figure; keeps looking back to `floor`
/// for compactions (when the caller knows where it stopped last time).
fn scan_backward(file: &File, len: u64, floor: u64, dev: u64, ino: u64) -> io::Result<Reading> {
    let mut lines = ReverseLines::new(file, len);
    lines.stop_below(len.saturating_sub(SEARCH_LIMIT));
    let mut usage: Option<Usage> = None;
    let mut boundaries = Vec::new();
    // After a boundary, the model comes from the reply before it, if near.
    let mut model_floor: Option<u64> = None;
    // The latest entry was refused: the figure is the good one before it.
    let mut refused: Option<String> = None;
    let mut seen_any = false;
    while let Some(line) = lines.next_line()? {
        let pos = lines.position();
        let entry = classify(&line);
        if entry.is_some() && !seen_any {
            seen_any = true;
            if let Some(Entry::Invalid(why)) = &entry {
                refused = Some(invalid(pos, why));
            }
        }
        match entry {
            Some(Entry::Reply(reply)) => match usage.as_mut() {
                None => usage = Some(reply),
                Some(u) if model_floor.is_some() => {
                    u.model = reply.model;
                    model_floor = None;
                }
                Some(_) => {}
            },
            Some(Entry::Boundary(b)) => {
                if usage.is_none() {
                    usage = Some(boundary_usage(&b, None));
                    model_floor = Some(pos.saturating_sub(MODEL_LOOKBACK));
                    boundaries.push(b);
                } else if pos >= floor {
                    boundaries.push(b);
                }
            }
            Some(Entry::Invalid(_)) | None => {}
        }
        if usage.is_some() {
            // Found: now only compactions above `floor`, or the model, are of interest.
            let needed = model_floor.map_or(floor, |m| m.min(floor));
            if pos <= needed {
                break;
            }
            lines.stop_below(needed);
        }
    }
    boundaries.reverse();
    if let Some(why) = refused {
        usage = Some(Usage::invalidated(usage, why));
    }
    Ok(Reading {
        usage,
        boundaries,
        cursor: Cursor {
            offset: lines.end_of_complete_lines(),
            dev,
            ino,
        },
        method: Method::Backward,
        bytes_read: lines.bytes_read(),
    })
}

/// Whether a `hook_additional_context` attachment holding `marker` was
/// written since the latest compaction: how we know injected text reached
/// the model. Searches back from the end, at most [`SEARCH_LIMIT`] bytes.
pub fn injected_context_arrived(path: &Path, marker: &str) -> io::Result<bool> {
    let Some((file, meta)) = open_regular(path)? else {
        return Ok(false);
    };
    let len = meta.len();
    let mut lines = ReverseLines::new(&file, len);
    lines.stop_below(len.saturating_sub(SEARCH_LIMIT));
    while let Some(line) = lines.next_line()? {
        if memchr::memmem::find(&line, marker.as_bytes()).is_some()
            && memchr::memmem::find(&line, b"hook_additional_context").is_some()
            && let Ok(entry) = serde_json::from_slice::<serde_json::Value>(&line)
            && entry["attachment"]["type"] == "hook_additional_context"
        {
            let content = &entry["attachment"]["content"];
            let holds = |v: &serde_json::Value| v.as_str().is_some_and(|s| s.contains(marker));
            if holds(content)
                || content
                    .as_array()
                    .is_some_and(|items| items.iter().any(holds))
            {
                return Ok(true);
            }
        }
        if matches!(classify(&line), Some(Entry::Boundary(_))) {
            return Ok(false);
        }
    }
    Ok(false)
}

/// How far back from the end [`compact_summary`] looks.
const SUMMARY_LOOKBACK: u64 = 4 * 1024 * 1024;

/// The text of the latest compaction's summary entry (`isCompactSummary`),
/// if the transcript's last few MiB hold one written after its latest
/// `compact_boundary`.
pub fn compact_summary(path: &Path) -> io::Result<Option<String>> {
    let Some((file, meta)) = open_regular(path)? else {
        return Ok(None);
    };
    let len = meta.len();
    let mut lines = ReverseLines::new(&file, len);
    lines.stop_below(len.saturating_sub(SUMMARY_LOOKBACK));
    while let Some(line) = lines.next_line()? {
        if memchr::memmem::find(&line, b"isCompactSummary").is_some()
            && let Ok(entry) = serde_json::from_slice::<Value>(&line)
            && entry["isCompactSummary"] == true
        {
            let text = crate::harness::work::content_text(&entry["message"]["content"], "\n")
                .unwrap_or_default();
            return Ok((!text.is_empty()).then_some(text));
        }
        if matches!(classify(&line), Some(Entry::Boundary(_))) {
            return Ok(None);
        }
    }
    Ok(None)
}

enum Entry {
    Reply(Usage),
    Boundary(Boundary),
    /// A reply or compaction whose token counts cannot be right: why.
    Invalid(String),
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    subtype: Option<Cow<'a, str>>,
    #[serde(rename = "isSidechain", default)]
    sidechain: Option<bool>,
    #[serde(rename = "isApiErrorMessage", default)]
    api_error: Option<bool>,
    #[serde(borrow, default)]
    message: Option<Message<'a>>,
    /// Figures are checked by hand: a wrong type must be seen, not skip the line.
    #[serde(rename = "compactMetadata", default)]
    compact: Option<Value>,
    #[serde(default)]
    uuid: Option<String>,
    #[serde(default)]
    timestamp: Option<String>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(default)]
    usage: Option<Value>,
}

/// The usage figure or compaction a line records, if any. Cheap substring
/// checks come first so that most lines are never parsed.
fn classify(line: &[u8]) -> Option<Entry> {
    let boundary = memchr::memmem::find(line, b"compact_boundary").is_some();
    let reply = !boundary
        && memchr::memmem::find(line, b"assistant").is_some()
        && memchr::memmem::find(line, b"usage").is_some();
    if !boundary && !reply {
        return None;
    }
    let entry: Line = serde_json::from_slice(line).ok()?;
    match (entry.kind.as_deref(), entry.subtype.as_deref()) {
        (Some("system"), Some("compact_boundary")) => {
            let meta = entry.compact.unwrap_or(Value::Null);
            let counts = token_count("preTokens", meta.get("preTokens"))
                .and_then(|pre| Ok((pre, token_count("postTokens", meta.get("postTokens"))?)));
            let (pre_tokens, post_tokens) = match counts {
                Ok(counts) => counts,
                Err(why) => return Some(Entry::Invalid(why)),
            };
            Some(Entry::Boundary(Boundary {
                uuid: entry.uuid,
                trigger: meta["trigger"].as_str().map(crate::harness::Trigger::from),
                pre_tokens,
                post_tokens,
                timestamp: entry.timestamp,
            }))
        }
        (Some("assistant"), _)
            if entry.sidechain != Some(true) && entry.api_error != Some(true) =>
        {
            let message = entry.message?;
            let counts = message.usage?;
            let model = message.model.filter(|m| m != "<synthetic>")?;
            let tokens = match token_sum(&counts, &CONTEXT_COUNTS) {
                Ok(tokens) => tokens,
                Err(why) => return Some(Entry::Invalid(why)),
            };
            Some(Entry::Reply(Usage {
                tokens,
                model: Some(model.into_owned()),
                from_boundary: false,
                message_id: message.id.map(Cow::into_owned),
                invalid: None,
            }))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value;
    use std::io::Write;
    use std::path::PathBuf;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/claude-code-2.1.330/transcripts")
            .join(name)
    }

    fn cold(path: &Path) -> Reading {
        read(path, None, None).unwrap()
    }

    /// The rules written the slow, obvious way: parse every line, keep the
    /// last good figure, and whether the last figure given was good.
    fn reference(text: &[u8]) -> Option<Usage> {
        let complete = memchr::memrchr(b'\n', text).map_or(0, |i| i + 1);
        let mut usage: Option<Usage> = None;
        let mut at = 0;
        for line in text[..complete].split(|b| *b == b'\n') {
            let offset = at;
            at += line.len() + 1;
            let Ok(v) = serde_json::from_slice::<Value>(line) else {
                continue;
            };
            let refuse = |usage: Option<Usage>, why: String| {
                Some(Usage::invalidated(usage, invalid(offset as u64, &why)))
            };
            if v["type"] == "system" && v["subtype"] == "compact_boundary" {
                let meta = &v["compactMetadata"];
                let figures = token_count("preTokens", meta.get("preTokens"))
                    .and_then(|_| token_count("postTokens", meta.get("postTokens")));
                usage = match figures {
                    Ok(post) => Some(Usage {
                        tokens: post.unwrap_or(0),
                        model: usage.and_then(|u| u.model),
                        from_boundary: true,
                        message_id: None,
                        invalid: None,
                    }),
                    Err(why) => refuse(usage, why),
                };
            } else if v["type"] == "assistant"
                && v["isSidechain"] != true
                && v["isApiErrorMessage"] != true
                && !v["message"]["usage"].is_null()
                && v["message"]["model"].is_string()
                && v["message"]["model"] != "<synthetic>"
            {
                usage = match token_sum(&v["message"]["usage"], &CONTEXT_COUNTS) {
                    Ok(tokens) => Some(Usage {
                        tokens,
                        model: v["message"]["model"].as_str().map(str::to_owned),
                        from_boundary: false,
                        message_id: v["message"]["id"].as_str().map(str::to_owned),
                        invalid: None,
                    }),
                    Err(why) => refuse(usage, why),
                };
            }
        }
        usage
    }

    /// A main-chain reply with `usage` as given.
    fn reply_with(usage: &str) -> String {
        format!(
            r#"{{"type":"assistant","uuid":"r","message":{{"id":"msg_x","model":"claude-opus-5-5","usage":{usage}}}}}"#
        )
    }

    #[test]
    fn figures_that_cannot_be_right_are_refused_not_wrapped_or_guessed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let good = std::fs::read(fixture("basic.90fcfea3.jsonl")).unwrap();
        let boundary = |meta: &str| {
            format!(
                r#"{{"type":"system","subtype":"compact_boundary","uuid":"b","compactMetadata":{meta}}}"#
            )
        };
        for (line, why) in [
            (
                reply_with(&format!(
                    r#"{{"input_tokens":{},"cache_creation_input_tokens":5}}"#,
                    u64::MAX
                )),
                "input_tokens is 18446744073709551615, above",
            ),
            (
                reply_with(r#"{"input_tokens":60000000,"cache_read_input_tokens":60000000}"#),
                "add up to 120000000",
            ),
            (
                reply_with(r#"{"input_tokens":1e12}"#),
                "input_tokens is not a whole number (1000000000000.0)",
            ),
            (reply_with("[100,200,300]"), "usage is an array"),
            (
                reply_with(r#"{"input_tokens":"150000"}"#),
                "input_tokens is a string",
            ),
            (
                reply_with(r#"{"cache_read_input_tokens":-1}"#),
                "cache_read_input_tokens is negative (-1)",
            ),
            (
                boundary(r#"{"trigger":"auto","preTokens":-5,"postTokens":3000}"#),
                "preTokens is negative",
            ),
            (
                boundary(r#"{"trigger":"auto","preTokens":160000,"postTokens":"3000"}"#),
                "postTokens is a string",
            ),
        ] {
            let mut text = good.clone();
            let offset = text.len();
            text.extend_from_slice(line.as_bytes());
            text.push(b'\n');
            std::fs::write(&path, &text).unwrap();
            let expected = format!("invalid usage in transcript line at byte {offset}: ");
            // Read from scratch (backwards) and following the file (forwards).
            let behind = read(&path, None, None).unwrap();
            let before = Cursor {
                offset: offset as u64,
                ..behind.cursor.clone()
            };
            let forward = read(&path, Some(&before), Some(&cold_usage(&good))).unwrap();
            for r in [behind, forward] {
                let u = r.usage.unwrap();
                let shown = u.invalid.unwrap_or_default();
                assert!(
                    shown.starts_with(&expected) && shown.contains(why),
                    "{line}: {shown}"
                );
                assert_eq!(u.tokens, 154_500, "the good figure stands: {line}");
                assert!(r.boundaries.is_empty(), "not a compaction: {line}");
            }
            assert_eq!(reference(&text), cold(&path).usage, "{line}");
        }
        // The next good figure makes the reading valid again.
        let mut text = good.clone();
        text.extend_from_slice(reply_with(r#"{"input_tokens":"x"}"#).as_bytes());
        text.push(b'\n');
        text.extend_from_slice(reply_with(r#"{"input_tokens":1000}"#).as_bytes());
        text.push(b'\n');
        std::fs::write(&path, &text).unwrap();
        let u = cold(&path).usage.unwrap();
        assert_eq!((u.tokens, u.invalid), (1000, None));
    }

    fn cold_usage(text: &[u8]) -> Usage {
        reference(text).unwrap()
    }

    #[test]
    fn the_compaction_summary_is_read_from_its_entry_after_the_boundary() {
        let summary = compact_summary(&fixture("compact_manual.b38af9dc.jsonl"))
            .unwrap()
            .expect("the isCompactSummary entry");
        assert!(
            summary.starts_with("This session is being continued"),
            "{summary}"
        );
        assert_eq!(
            compact_summary(&fixture("basic.90fcfea3.jsonl")).unwrap(),
            None
        );
        // A summary before the latest boundary belongs to an earlier compaction.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(
            &path,
            "{\"type\":\"user\",\"isCompactSummary\":true,\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"old\"}]}}\n\
             {\"type\":\"system\",\"subtype\":\"compact_boundary\",\"compactMetadata\":{\"trigger\":\"auto\",\"preTokens\":9,\"postTokens\":1}}\n",
        )
        .unwrap();
        assert_eq!(compact_summary(&path).unwrap(), None);
    }

    #[test]
    fn fixture_transcripts_give_the_exact_figures() {
        let cases: [(&str, Option<(u64, &str)>); 8] = [
            ("basic.90fcfea3.jsonl", Some((154_500, "claude-opus-5-5"))),
            (
                "compact_auto.e251d151.jsonl",
                Some((3000, "claude-opus-5-5")),
            ),
            (
                "compact_manual.b38af9dc.jsonl",
                Some((2000, "claude-opus-5-5")),
            ),
            (
                "compact_reactive.05a8b24f.jsonl",
                Some((3000, "claude-sonnet-4-5-20250929")),
            ),
            (
                "resume_clear.8260196e.jsonl",
                Some((100, "claude-opus-5-5")),
            ),
            ("resume_clear.bb328964.jsonl", None),
            ("subagent.e89db3f9.jsonl", Some((100, "claude-opus-5-5"))),
            // A subagent's own transcript is all sidechain: no main-chain figure.
            ("subagent.subagent.jsonl", None),
        ];
        for (name, expected) in cases {
            let reading = cold(&fixture(name));
            let got = reading
                .usage
                .as_ref()
                .map(|u| (u.tokens, u.model.as_deref().unwrap_or("")));
            assert_eq!(got, expected, "{name}");
            assert_eq!(
                reading.cursor.offset,
                std::fs::metadata(fixture(name)).unwrap().len(),
                "{name}"
            );
        }
    }

    #[test]
    fn every_prefix_of_every_fixture_matches_the_reference() {
        let dir = tempfile::tempdir().unwrap();
        for entry in std::fs::read_dir(fixture("")).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read(&path).unwrap();
            let ends: Vec<usize> = memchr::memchr_iter(b'\n', &text).map(|i| i + 1).collect();
            let copy = dir.path().join("t.jsonl");
            let mut cursor: Option<Cursor> = None;
            let mut running: Option<Usage> = None;
            for end in ends {
                std::fs::write(&copy, &text[..end]).unwrap();
                let expected = reference(&text[..end]);
                // From scratch, scanning backwards.
                let backward = cold(&copy);
                assert_eq!(
                    backward.usage,
                    expected,
                    "{} backward at {end}",
                    path.display()
                );
                // Following the file as it grows, forwards.
                let forward = read(&copy, cursor.as_ref(), running.as_ref()).unwrap();
                assert_eq!(
                    forward.usage,
                    expected,
                    "{} forward at {end}",
                    path.display()
                );
                assert!(
                    cursor.is_none() || forward.method != Method::Backward,
                    "a growing file is read forwards"
                );
                cursor = Some(forward.cursor);
                running = forward.usage;
            }
        }
    }

    #[test]
    fn compactions_are_reported_once_with_their_figures() {
        let path = fixture("compact_auto.e251d151.jsonl");
        let text = std::fs::read(&path).unwrap();
        let at = memchr::memmem::find(&text, b"compact_boundary").unwrap();
        let line_end = at + memchr::memchr(b'\n', &text[at..]).unwrap() + 1;
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("t.jsonl");
        // Up to and including the boundary: its estimate stands.
        std::fs::write(&copy, &text[..line_end]).unwrap();
        let r = cold(&copy);
        let u = r.usage.unwrap();
        assert_eq!(
            (u.tokens, u.from_boundary, u.model.as_deref()),
            (2679, true, Some("claude-opus-5-5"))
        );
        assert_eq!(r.boundaries.len(), 1);
        assert_eq!(r.boundaries[0].trigger, Some(crate::harness::Trigger::Auto));
        assert_eq!(r.boundaries[0].pre_tokens, Some(990_220));
        // Reading on from there, the boundary is not reported again.
        std::fs::write(&copy, &text).unwrap();
        let on = read(&copy, Some(&r.cursor), Some(&u)).unwrap();
        assert!(on.boundaries.is_empty());
        assert_eq!(on.usage.unwrap().tokens, 3000);
    }

    #[test]
    fn a_partial_last_line_waits_until_it_is_complete() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let text = std::fs::read(fixture("basic.90fcfea3.jsonl")).unwrap();
        let last = memchr::memmem::rfind(&text, b"msg_mock_0002").unwrap();
        let line_start = memchr::memrchr(b'\n', &text[..last]).unwrap() + 1;
        let cut = last + 20;
        std::fs::write(&path, &text[..cut]).unwrap();
        let r = cold(&path);
        assert_eq!(
            r.usage.as_ref().unwrap().tokens,
            154_200,
            "the half-written reply is not counted"
        );
        assert_eq!(r.cursor.offset as usize, line_start);
        std::fs::write(&path, &text).unwrap();
        let r = read(&path, Some(&r.cursor), r.usage.as_ref()).unwrap();
        assert_eq!(r.method, Method::Forward);
        assert_eq!(r.usage.unwrap().tokens, 154_500);
    }

    #[test]
    fn garbage_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut text = std::fs::read(fixture("basic.90fcfea3.jsonl")).unwrap();
        for junk in [
            &b"not json at all assistant usage\n"[..],
            b"{\"type\":\"assistant\",\"message\":{\"usage\":\"lots\"}}\n",
            b"{\"type\":\"assistant\",\"isSidechain\":\"maybe\",\"message\":{}}\n",
            b"\xff\xfe\xfd assistant usage \x00\n",
            b"{\"type\":\"brand-new-entry\",\"usage\":1}\n",
            b"{\"type\": \"assistant\", \"message\": {\"model\": \"<synthetic>\", \"usage\": {\"input_tokens\": 0}}}\n",
            b"\n\n",
        ] {
            text.extend_from_slice(junk);
        }
        std::fs::write(&path, &text).unwrap();
        assert_eq!(cold(&path).usage.unwrap().tokens, 154_500);
    }

    #[test]
    fn any_json_spacing_is_accepted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut out = Vec::new();
        for line in std::fs::read_to_string(fixture("compact_manual.b38af9dc.jsonl"))
            .unwrap()
            .lines()
        {
            let v: Value = serde_json::from_str(line).unwrap();
            out.extend(
                serde_json::to_vec_pretty(&v)
                    .unwrap()
                    .into_iter()
                    .map(|b| if b == b'\n' { b' ' } else { b }),
            );
            out.push(b'\n');
        }
        std::fs::write(&path, &out).unwrap();
        assert_eq!(cold(&path).usage.unwrap().tokens, 2000);
    }

    #[test]
    fn a_huge_file_is_read_from_the_end_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let tail = std::fs::read(fixture("basic.90fcfea3.jsonl")).unwrap();
        let mut file = File::create(&path).unwrap();
        file.write_all(&tail).unwrap();
        // 300 MB of history (sparse: no disk is used), then the latest turn.
        let len = 300 * 1024 * 1024;
        file.set_len(len).unwrap();
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        file.write_all(b"\n").unwrap();
        file.write_all(&tail).unwrap();
        drop(file);
        let r = cold(&path);
        assert_eq!(r.usage.unwrap().tokens, 154_500);
        assert!(
            r.bytes_read < 256 * 1024,
            "read {} bytes of a 300 MB file",
            r.bytes_read
        );

        // A cursor far behind (the daemon was away): still the tail only, not the gap.
        let behind = Cursor {
            offset: 10,
            ..r.cursor.clone()
        };
        let r = read(&path, Some(&behind), None).unwrap();
        assert_eq!(r.method, Method::Backward);
        assert_eq!(r.usage.unwrap().tokens, 154_500);
        assert!(
            r.bytes_read <= BOUNDARY_LOOKBACK + crate::tail::CHUNK as u64,
            "read {}",
            r.bytes_read
        );
    }

    #[test]
    fn lines_longer_than_the_limit_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let text = std::fs::read(fixture("basic.90fcfea3.jsonl")).unwrap();
        let mut file = File::create(&path).unwrap();
        file.write_all(&text).unwrap();
        file.set_len(text.len() as u64 + crate::tail::MAX_LINE as u64 + 10)
            .unwrap();
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        file.write_all(
            b"\n{\"type\":\"user\",\"message\":{\"content\":\"after the giant line\"}}\n",
        )
        .unwrap();
        drop(file);
        assert_eq!(
            cold(&path).usage.unwrap().tokens,
            154_500,
            "found behind the giant line"
        );
    }

    #[test]
    fn truncated_and_replaced_files_are_read_afresh() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::copy(fixture("basic.90fcfea3.jsonl"), &path).unwrap();
        let first = cold(&path);
        // Replaced by a shorter file (a new inode).
        let other = dir.path().join("other.jsonl");
        std::fs::copy(fixture("resume_clear.8260196e.jsonl"), &other).unwrap();
        std::fs::rename(&other, &path).unwrap();
        let r = read(&path, Some(&first.cursor), first.usage.as_ref()).unwrap();
        assert_eq!((r.method, r.usage.unwrap().tokens), (Method::Backward, 100));
        // Truncated in place.
        let again = cold(&path);
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(100)
            .unwrap();
        let r = read(&path, Some(&again.cursor), again.usage.as_ref()).unwrap();
        assert_eq!(r.method, Method::Backward);
        assert_eq!(r.usage, None);
    }

    #[test]
    fn what_is_not_a_transcript_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            read(dir.path(), None, None),
            Err(TranscriptError::NotAFile { .. })
        ));
        assert!(matches!(
            read(&dir.path().join("nope"), None, None),
            Err(TranscriptError::Missing { .. })
        ));
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(matches!(
            read(&fifo, None, None),
            Err(TranscriptError::NotAFile { .. })
        ));
    }

    #[test]
    fn arrival_is_an_attachment_after_the_latest_compaction() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let text = std::fs::read_to_string(fixture("compact_manual.b38af9dc.jsonl")).unwrap();
        std::fs::write(&path, &text).unwrap();
        // The fixture's SessionStart(compact) hook injected this text after the boundary.
        assert!(
            injected_context_arrived(&path, "HOOKMARK_SESSIONSTART_JSON source=compact").unwrap()
        );
        // Injected before the boundary: stale, it does not count.
        assert!(
            !injected_context_arrived(&path, "HOOKMARK_SESSIONSTART_JSON source=resume").unwrap()
        );
        assert!(!injected_context_arrived(&path, "never injected").unwrap());
    }

    proptest! {
        /// Fixture lines, torn, duplicated, shuffled and mixed with noise:
        /// the fast reader agrees with the slow one, backwards and forwards.
        #[test]
        fn any_mix_of_real_lines_reads_like_the_reference(
            picks in proptest::collection::vec((0usize..1000, 0usize..4, any::<u8>()), 0..120),
        ) {
            let lines: Vec<String> = std::fs::read_dir(fixture(""))
                .unwrap()
                .flat_map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap().lines().map(str::to_owned).collect::<Vec<_>>())
                .collect();
            let mut text = Vec::new();
            for (i, how, byte) in picks {
                let line = lines[i % lines.len()].as_bytes();
                match how {
                    0 | 1 => text.extend_from_slice(line),
                    2 => text.extend_from_slice(&line[..line.len() / 3]),
                    _ => text.extend_from_slice(&[byte, b'{', byte, b'"']),
                }
                text.push(b'\n');
            }
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("t.jsonl");
            std::fs::write(&path, &text).unwrap();
            let expected = reference(&text);
            prop_assert_eq!(&cold(&path).usage, &expected);
            // Forwards, from a cursor at a line boundary in the middle.
            let half = memchr::memchr(b'\n', &text[text.len() / 2..]).map_or(0, |i| text.len() / 2 + i + 1);
            std::fs::write(&path, &text[..half]).unwrap();
            let first = cold(&path);
            std::fs::write(&path, &text).unwrap();
            let on = read(&path, Some(&first.cursor), first.usage.as_ref()).unwrap();
            prop_assert_eq!(&on.usage, &expected);
        }

        #[test]
        fn reverse_lines_are_the_complete_lines_backwards(
            lines in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 0..400),
            tail in proptest::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 0..50),
        ) {
            let mut text = Vec::new();
            for l in &lines {
                text.extend(l.iter().map(|b| if *b == b'\n' { b' ' } else { *b }));
                text.push(b'\n');
            }
            let complete = text.len();
            text.extend(&tail);
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("t");
            std::fs::write(&path, &text).unwrap();
            let file = File::open(&path).unwrap();
            let mut rev = ReverseLines::new(&file, text.len() as u64);
            let mut got = Vec::new();
            while let Some(l) = rev.next_line().unwrap() {
                prop_assert_eq!(&text[rev.position() as usize..rev.position() as usize + l.len()], &l[..]);
                got.push(l);
            }
            got.reverse();
            let expected: Vec<Vec<u8>> = if complete == 0 { vec![] } else {
                text[..complete - 1].split(|b| *b == b'\n').map(<[u8]>::to_vec).collect()
            };
            prop_assert_eq!(got, expected);
            prop_assert_eq!(rev.end_of_complete_lines() as usize, complete);
        }
    }
}

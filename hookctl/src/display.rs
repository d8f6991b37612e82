//! Small formatting helpers shared by the human-readable commands.

use std::time::{SystemTime, UNIX_EPOCH};

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// `42s`, `3m 5s`, `2h 10m`, `3d 4h`.
pub fn duration(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m {}s", s / 60, s % 60),
        s if s < 86_400 => format!("{}h {}m", s / 3600, (s % 3600) / 60),
        s => format!("{}d {}h", s / 86_400, (s % 86_400) / 3600),
    }
}

/// `5s ago` for a Unix-millisecond time; `never` for 0.
pub fn ago(ms: u64) -> String {
    ago_at(ms, now_ms())
}

/// [`ago`] as seen at `now` (Unix milliseconds).
pub fn ago_at(ms: u64, now: u64) -> String {
    if ms == 0 {
        return "never".into();
    }
    format!("{} ago", duration(now.saturating_sub(ms) / 1000))
}

/// What is printed for a person: text from outside hookd (a model id, a
/// file or branch name, a log line) may hold escape sequences, which a
/// terminal would act on.
pub use protocol::text::for_terminal as terminal;

/// A write to standard output failed for another reason than a reader
/// gone (a full disk): the command must not end as if all was written.
static OUTPUT_LOST: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Writes to standard output. The standard macros panic when the reader
/// has gone (`hookctl status | head -1`); here the rest of the output is
/// dropped and the command goes on, so that one which changes something
/// (an install) still finishes. Any other failure is kept for
/// [`output_lost`].
pub fn out(text: &str) {
    use std::io::Write;
    if let Err(e) = std::io::stdout().lock().write_all(text.as_bytes())
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        let mut lost = OUTPUT_LOST.lock().unwrap_or_else(|p| p.into_inner());
        lost.get_or_insert_with(|| e.to_string());
    }
}

/// Why some of standard output could not be written, if it could not.
pub fn output_lost() -> Option<String> {
    OUTPUT_LOST
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
}

/// [`out`] for standard error, where nothing is left to report a failure to.
pub fn err(text: &str) {
    use std::io::Write;
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// Whether a command failed only because its reader went away.
pub fn is_closed_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The first 8 characters of an id, as git shortens hashes.
pub fn short_id(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(5), "5s");
        assert_eq!(duration(185), "3m 5s");
        assert_eq!(duration(7800), "2h 10m");
        assert_eq!(duration(2 * 86_400 + 3600), "2d 1h");
        assert_eq!(short_id("90fcfea3-eaa5"), "90fcfea3");
        assert_eq!(short_id("abc"), "abc");
    }
}

pub use protocol::figures::{compaction_percent, percent, thousands, window_percent};
use protocol::wire::{ContextPoint, PointMark};

/// `▓▓▓▓▓░░│░░`: the window filled to `used`, with `│` where compaction
/// happens (none when it only happens at the very end).
pub fn window_bar(used: f64, compaction: f64, cells: usize) -> String {
    let mut out: Vec<char> = bar(used, cells).chars().collect();
    let tick = (compaction.clamp(0.0, 1.0) * cells as f64).round() as usize;
    if let Some(cell) = out.get_mut(tick) {
        *cell = '│';
    }
    out.into_iter().collect()
}

const LEVELS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// The mark shown under a point of a [`sparkline`].
pub fn mark_char(mark: PointMark) -> char {
    match mark {
        PointMark::Save => 's',
        PointMark::Checkpoint => '✓',
        PointMark::Compaction => '↓',
    }
}

/// The readings as `▂▃▅▇█▁▂` (`█` at or past `full` tokens), and under each
/// the mark of what happened there (blank for nothing; trailing blanks cut).
pub fn sparkline(points: &[ContextPoint], full: u64) -> (String, String) {
    let full = full.max(1) as f64;
    let line = points
        .iter()
        .map(|p| {
            let eighths = (p.tokens as f64 / full * 8.0).ceil() as usize;
            LEVELS[eighths.clamp(1, 8) - 1]
        })
        .collect();
    let marks: String = points
        .iter()
        .map(|p| p.mark.map_or(' ', mark_char))
        .collect();
    (line, marks.trim_end().to_owned())
}

/// What the marks under a sparkline mean, for those present.
pub fn sparkline_legend(points: &[ContextPoint]) -> String {
    let mut present: Vec<PointMark> = points.iter().filter_map(|p| p.mark).collect();
    present.sort();
    present.dedup();
    present
        .iter()
        .rev()
        .map(|m| {
            let what = match m {
                PointMark::Save => "state saved",
                PointMark::Checkpoint => "saved with a git checkpoint",
                PointMark::Compaction => "compacted",
            };
            format!("{} {what}", mark_char(*m))
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

/// `▓▓▓▓▓▓▓░░░` for 0.72 in 10 cells (clamped to full).
pub fn bar(fraction: f64, cells: usize) -> String {
    let filled = ((fraction.clamp(0.0, 1.0) * cells as f64).round() as usize).min(cells);
    "▓".repeat(filled) + &"░".repeat(cells - filled)
}

#[cfg(test)]
mod more_tests {
    use super::*;

    #[test]
    fn figures_read_naturally() {
        assert_eq!(bar(0.72, 10), "▓▓▓▓▓▓▓░░░");
        assert_eq!(bar(1.4, 4), "▓▓▓▓");
        assert_eq!(window_bar(0.5, 0.835, 10), "▓▓▓▓▓░░░│░");
        assert_eq!(window_bar(0.5, 1.0, 10), "▓▓▓▓▓░░░░░");
    }

    #[test]
    fn the_window_share_is_claude_codes_own() {
        // round(100 * sum / window), .5 up, clamped to 0..100.
        assert_eq!(window_percent(120_240, 200_000), 60);
        assert_eq!(window_percent(85_000, 200_000), 43);
        assert_eq!(window_percent(84_999, 200_000), 42);
        assert_eq!(window_percent(0, 200_000), 0);
        assert_eq!(window_percent(300_000, 200_000), 100);
        assert_eq!(window_percent(u64::MAX, 1), 100);
        assert_eq!(window_percent(5, 0), 0);
        assert_eq!(compaction_percent(167_000, 200_000), 83);
        assert_eq!(compaction_percent(967_000, 1_000_000), 96);
        assert_eq!(compaction_percent(5, 0), 100);
    }

    #[test]
    fn a_sparkline_marks_what_happened() {
        let point = |tokens, mark| ContextPoint {
            at_ms: 0,
            tokens,
            mark,
        };
        let points = [
            point(0, None),
            point(40, None),
            point(80, Some(PointMark::Checkpoint)),
            point(100, None),
            point(250, None),
            point(10, Some(PointMark::Compaction)),
            point(30, None),
        ];
        let (line, marks) = sparkline(&points, 100);
        assert_eq!(line, "▁▄▇██▁▃");
        assert_eq!(marks, "  ✓  ↓");
        assert_eq!(
            sparkline_legend(&points),
            "↓ compacted · ✓ saved with a git checkpoint"
        );
        assert_eq!(sparkline(&[], 100), (String::new(), String::new()));
    }
}

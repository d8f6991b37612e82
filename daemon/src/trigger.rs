//! What asked for a save, as the pipeline receives it and as a saved state
//! names it (its `trigger` text, which [`SaveTrigger`] reads back exactly).

use std::fmt;
use std::str::FromStr;

/// What asked for a save.
#[derive(Debug, Clone, PartialEq)]
pub enum SaveTrigger {
    Threshold(f64),
    PreCompact(String),
    Manual,
    /// The transcript shows a compaction no PreCompact hook announced.
    UnannouncedCompaction,
}

impl fmt::Display for SaveTrigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SaveTrigger::Threshold(level) => write!(f, "threshold {level:.2}"),
            SaveTrigger::PreCompact(trigger) => write!(f, "pre-compact {trigger}"),
            SaveTrigger::Manual => f.write_str("manual"),
            SaveTrigger::UnannouncedCompaction => f.write_str("unannounced compaction"),
        }
    }
}

/// The text of a trigger hookd did not write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown save trigger `{0}`")]
pub struct UnknownTrigger(pub String);

impl FromStr for SaveTrigger {
    type Err = UnknownTrigger;

    /// The inverse of `Display`, for the `trigger` of a saved state.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let unknown = || UnknownTrigger(text.to_owned());
        match text {
            "manual" => Ok(SaveTrigger::Manual),
            "unannounced compaction" => Ok(SaveTrigger::UnannouncedCompaction),
            _ => {
                if let Some(level) = text.strip_prefix("threshold ") {
                    let level: f64 = level.parse().map_err(|_| unknown())?;
                    return Ok(SaveTrigger::Threshold(level));
                }
                match text.strip_prefix("pre-compact ") {
                    Some(how) if !how.is_empty() => Ok(SaveTrigger::PreCompact(how.to_owned())),
                    _ => Err(unknown()),
                }
            }
        }
    }
}

impl SaveTrigger {
    /// Whether the save was for a compaction (before it, or just after).
    pub fn is_compaction(&self) -> bool {
        matches!(
            self,
            SaveTrigger::PreCompact(_) | SaveTrigger::UnannouncedCompaction
        )
    }

    /// The first word of the capture's name: what it was for.
    pub fn capture_name(&self) -> &'static str {
        match self {
            SaveTrigger::Threshold(_) => "threshold",
            SaveTrigger::PreCompact(_) | SaveTrigger::UnannouncedCompaction => "compact",
            SaveTrigger::Manual => "save",
        }
    }

    /// In words a person reads: `before automatic compaction`.
    pub fn describe(&self) -> String {
        match self {
            SaveTrigger::Threshold(level) => {
                format!("at {:.0}% of the way to compaction", level * 100.0)
            }
            SaveTrigger::PreCompact(how) if how == "auto" => "before automatic compaction".into(),
            SaveTrigger::PreCompact(how) if how == "manual" => "before /compact".into(),
            SaveTrigger::PreCompact(how) => format!("before compaction ({how})"),
            SaveTrigger::Manual => "with hookctl save".into(),
            SaveTrigger::UnannouncedCompaction => "after a compaction no hook announced".into(),
        }
    }
}

/// A saved state's `trigger` in words; text hookd did not write, as it is.
pub fn describe(text: &str) -> String {
    text.parse::<SaveTrigger>()
        .map_or_else(|_| text.to_owned(), |t| t.describe())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_trigger_reads_back_from_its_text() {
        for t in [
            SaveTrigger::Threshold(0.8),
            SaveTrigger::Threshold(0.95),
            SaveTrigger::PreCompact("auto".into()),
            SaveTrigger::PreCompact("manual".into()),
            SaveTrigger::Manual,
            SaveTrigger::UnannouncedCompaction,
        ] {
            assert_eq!(t.to_string().parse::<SaveTrigger>(), Ok(t.clone()), "{t}");
        }
        for bad in ["", "threshold", "threshold x", "pre-compact ", "Manual"] {
            assert!(bad.parse::<SaveTrigger>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn triggers_in_words() {
        assert_eq!(
            describe("threshold 0.80"),
            "at 80% of the way to compaction"
        );
        assert_eq!(describe("pre-compact auto"), "before automatic compaction");
        assert_eq!(describe("pre-compact manual"), "before /compact");
        assert_eq!(describe("manual"), "with hookctl save");
        assert_eq!(describe("from a script"), "from a script");
        assert!(SaveTrigger::UnannouncedCompaction.is_compaction());
        assert!(!SaveTrigger::Manual.is_compaction());
        assert_eq!(SaveTrigger::Manual.capture_name(), "save");
    }
}

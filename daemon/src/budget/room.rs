//! The room a session has for what hookd injects, and what the resume
//! prompt may take of it: the reload list's tokens and files, and how many
//! similar past tasks' lessons. The retrieval strategy follows from how full
//! the context is (stuff below 30% of the compaction point, hybrid to 70%,
//! selective above, nothing extra above 95%).

use protocol::pressure::{Advice, BASE_PREFETCH_LIMIT, Strategy};

/// What a compacted context is taken to hold before the resume prompt (the
/// system prompt, tools and the summary), while the session's own figure
/// after the compaction is not known.
pub const AFTER_COMPACTION_ESTIMATE: u64 = 25_000;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Room {
    /// Where the session compacts.
    pub point: u64,
    /// Tokens in the context (after the compaction, for one).
    pub used: u64,
    /// `used` is [`AFTER_COMPACTION_ESTIMATE`], not a figure the session reported.
    pub estimated: bool,
    pub advice: Advice,
}

impl Room {
    /// A session at `used` tokens of a context that compacts at `point`.
    pub fn at(point: u64, used: u64) -> Room {
        let pressure = if point == 0 {
            1.0
        } else {
            used as f64 / point as f64
        };
        Room {
            point,
            used,
            estimated: false,
            advice: Advice::for_pressure(pressure),
        }
    }

    /// A session right after its compaction, before it reported a figure.
    pub fn after_compaction(point: u64) -> Room {
        Room {
            estimated: true,
            ..Room::at(point, AFTER_COMPACTION_ESTIMATE.min(point))
        }
    }

    pub fn free(&self) -> u64 {
        self.point.saturating_sub(self.used)
    }

    /// Tokens the reload list may take: half the free room when there is
    /// plenty (stuff), a quarter (hybrid), a tenth (selective), none when
    /// the context is all but full.
    pub fn reload_tokens(&self) -> u64 {
        if self.advice.skip_prefetch {
            return 0;
        }
        let share = match self.advice.strategy {
            Strategy::Stuff => 0.5,
            Strategy::Hybrid => 0.25,
            Strategy::Selective => 0.1,
        };
        (self.free() as f64 * share) as u64
    }

    /// Files the reload list may name, of at most `max`: all of them with
    /// plenty of room, half (hybrid), a quarter (selective, at least one),
    /// none when the context is all but full.
    pub fn reload_files(&self, max: usize) -> usize {
        if self.advice.skip_prefetch {
            return 0;
        }
        match self.advice.strategy {
            Strategy::Stuff => max,
            Strategy::Hybrid => max.div_ceil(2),
            Strategy::Selective => max.div_ceil(4),
        }
    }

    /// Similar past tasks whose lessons go in, for `top_k` at standard
    /// pressure: as many more as the strategy prefetches (three times at
    /// stuff, fewer at selective, none when the context is all but full).
    pub fn lessons(&self, top_k: usize) -> usize {
        let scaled = top_k * self.advice.prefetch_limit as usize;
        scaled.div_ceil(BASE_PREFETCH_LIMIT as usize)
    }

    /// `142,000 of 167,000 tokens free after the compaction (estimated):
    /// room for every file`.
    pub fn describe(&self) -> String {
        format!(
            "{} of {} tokens free{}: {}",
            protocol::figures::thousands(self.free()),
            protocol::figures::thousands(self.point),
            if self.estimated {
                " after the compaction (estimated)"
            } else {
                ""
            },
            self.reload_words()
        )
    }

    /// What the room allows the reload list, in words.
    fn reload_words(&self) -> String {
        if self.advice.skip_prefetch {
            return "no room to reload files".to_owned();
        }
        format!("room for {}", self.advice.files_words())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_window_gets_more_and_a_full_one_less() {
        let wide = Room::after_compaction(967_000);
        let standard = Room::after_compaction(167_000);
        let half_full = Room::at(167_000, 90_000);
        let nearly_full = Room::at(167_000, 150_000);
        let full = Room::at(167_000, 165_000);
        assert_eq!(wide.advice.strategy, Strategy::Stuff);
        assert_eq!(standard.advice.strategy, Strategy::Stuff);
        assert_eq!(half_full.advice.strategy, Strategy::Hybrid);
        assert_eq!(nearly_full.advice.strategy, Strategy::Selective);
        let tokens: Vec<u64> = [wide, standard, half_full, nearly_full, full]
            .iter()
            .map(Room::reload_tokens)
            .collect();
        assert_eq!(tokens, [471_000, 71_000, 19_250, 1_700, 0]);
        let files: Vec<usize> = [wide, half_full, nearly_full, full]
            .iter()
            .map(|r| r.reload_files(12))
            .collect();
        assert_eq!(files, [12, 6, 3, 0]);
        let lessons: Vec<usize> = [wide, half_full, nearly_full, full]
            .iter()
            .map(|r| r.lessons(3))
            .collect();
        assert_eq!(lessons, [9, 3, 2, 0]);
    }

    #[test]
    fn the_room_in_words() {
        assert_eq!(
            Room::after_compaction(167_000).describe(),
            "142,000 of 167,000 tokens free after the compaction (estimated): room for every file"
        );
        assert_eq!(
            Room::at(167_000, 150_000).describe(),
            "17,000 of 167,000 tokens free: room for a quarter of the files"
        );
        assert_eq!(
            Room::at(167_000, 165_000).describe(),
            "2,000 of 167,000 tokens free: no room to reload files"
        );
        assert_eq!(Room::at(0, 0).reload_tokens(), 0);
    }
}

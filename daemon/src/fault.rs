//! Test-only fault injection. With `HOOKD_FAULT_DELAY_MS=N` in the daemon's
//! environment, [`pause`] sleeps a random 0..N ms at the points where a
//! crash would hurt most (between writing a file and renaming it, between a
//! commit and its ref), so a test that kills the daemon at random lands in
//! those windows often. Without the variable it does nothing.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

pub const DELAY_ENV: &str = "HOOKD_FAULT_DELAY_MS";

fn max_delay_ms() -> u64 {
    static MAX: OnceLock<u64> = OnceLock::new();
    *MAX.get_or_init(|| {
        std::env::var(DELAY_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    })
}

/// Sleeps a random time at a named point, if fault injection is on.
pub fn pause(point: &str) {
    let max = max_delay_ms();
    if max == 0 {
        return;
    }
    static STATE: AtomicU64 = AtomicU64::new(0x2545_F491_4F6C_DD1D);
    // xorshift: no dependency for a test knob.
    let mut x =
        STATE.load(Ordering::Relaxed) ^ crate::time::now_ms() ^ u64::from(std::process::id());
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    STATE.store(x, Ordering::Relaxed);
    let ms = x % (max + 1);
    tracing::trace!(point, ms, "fault injection pause");
    std::thread::sleep(Duration::from_millis(ms));
}

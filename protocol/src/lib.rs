//! What hookd and hookctl agree on: the wire messages and their framing, the
//! protocol number, where the socket and other files live, and the
//! configuration schema. hookctl depends on this crate and on nothing heavy,
//! so it starts fast.

pub mod budget;
pub mod config;
pub mod figures;
pub mod frame;
pub mod memory;
pub mod paths;
pub mod pressure;
pub mod wire;

/// Bumped whenever a message changes incompatibly.
pub const PROTOCOL_VERSION: u32 = 1;

/// Version of this crate (and of hookd and hookctl, which share it).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

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
pub mod project;
pub mod sync;
pub mod templates;
pub mod text;
pub mod trust;
pub mod wire;
pub mod yaml_nesting;

/// Bumped whenever a message changes incompatibly.
pub const PROTOCOL_VERSION: u32 = 1;

/// Version of this crate (and of hookd and hookctl, which share it).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// This process's environment variables whose name passes `keep`. Names or
/// values that are not UTF-8 are skipped (`std::env::vars` would panic on
/// them, and any variable of the user's may be one).
pub fn env_vars<C: FromIterator<(String, String)>>(keep: impl Fn(&str) -> bool) -> C {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| keep(k))
        .collect()
}

//! hookd: a per-user daemon that watches AI coding agent sessions, warns as
//! their context fills, and keeps their working state across compaction.
//!
//! The binary (`main.rs`) only parses arguments; everything else is here so
//! tests can run a real daemon in-process on a temporary socket.

pub mod budget;
pub mod capture;
#[cfg(test)]
mod code_shape;
pub mod daemonize;
pub mod engine;
pub mod events;
pub mod fault;
pub mod fsutil;
pub mod git;
pub mod harness;
pub mod logging;
pub mod memory;
pub mod monitor;
pub mod path_locks;
pub mod pidlock;
pub mod pipeline;
pub mod project_fs;
pub mod prompt;
pub mod random;
pub mod render;
pub mod resources;
pub mod resume;
pub mod saved_states;
pub mod secrets;
pub mod server;
pub mod session_machine;
pub mod sessions;
pub mod settings;
pub mod shutdown;
pub mod state;
pub mod sync;
pub mod tail;
pub mod test_events;
pub mod time;
pub mod watch;
pub mod workflow;

pub use server::{Daemon, DaemonOptions, StartError};
pub use shutdown::Shutdown;

use protocol::config::{Effective, Layers};
use protocol::paths::SocketPath;
use std::path::PathBuf;

impl DaemonOptions {
    /// Defaults for a daemon on `socket` keeping its state in `state_dir`,
    /// with no user file and no log directory: what tests use.
    pub fn new(socket: SocketPath, state_dir: PathBuf) -> Self {
        DaemonOptions {
            socket,
            state_dir,
            log_dir: None,
            layers: Layers::default(),
            allow_shared_dir: false,
            test_events: test_events::TestEvents::default(),
        }
    }

    /// Sends the daemon's test events to the datagram socket at `path`.
    pub fn test_events_to(mut self, path: &std::path::Path) -> Self {
        self.test_events = test_events::TestEvents::to_socket(path);
        self
    }

    /// Sets one configuration key, as a command-line flag would.
    pub fn set(mut self, key: &str, value: impl Into<serde_yaml::Value>) -> Self {
        self.layers
            .flags
            .push((format!("set {key}"), key.to_owned(), value.into()));
        self
    }
}

/// The daemon's own configuration. A broken file must not keep the daemon
/// from serving hooks: fall back to defaults and say why.
pub fn load_daemon_config(layers: &Layers) -> (Effective, Option<String>) {
    match protocol::config::load(layers) {
        Ok(effective) => (effective, None),
        Err(e) => (
            Effective::defaults(),
            Some(format!("{e}; using the built-in defaults")),
        ),
    }
}

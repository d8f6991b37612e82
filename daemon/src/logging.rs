//! The daemon's log: tracing to a daily file in the state directory, and to
//! stderr when running in the foreground. The level comes from `HOOKD_LOG`,
//! else `RUST_LOG`, else `-v` (info, debug, trace). Hook payloads can hold
//! secrets, so they are logged only at trace level.

use std::path::Path;
use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, fmt};

/// Log files kept (one per day).
const KEPT_LOG_FILES: usize = 7;

/// Keeps the log writer flushing; drop it last.
pub struct LogGuard(#[allow(dead_code)] Option<WorkerGuard>);

pub fn init(log_dir: Option<&Path>, verbosity: u8, to_stderr: bool) -> anyhow::Result<LogGuard> {
    let default_level = match verbosity {
        0 => "info",
        1 => "debug",
        _ => "trace",
    };
    let filter = || {
        EnvFilter::try_from_env("HOOKD_LOG")
            .or_else(|_| EnvFilter::try_from_default_env())
            .unwrap_or_else(|_| EnvFilter::new(default_level))
    };
    let mut guard = None;
    let file_layer = match log_dir {
        Some(dir) => {
            // tracing-appender's pruning pass complains when the directory is missing.
            protocol::paths::ensure_private_dir(dir)?;
            let appender = tracing_appender::rolling::RollingFileAppender::builder()
                .rotation(tracing_appender::rolling::Rotation::DAILY)
                .filename_prefix("hookd")
                .filename_suffix("log")
                .max_log_files(KEPT_LOG_FILES)
                .build(dir)?;
            let (writer, g) = tracing_appender::non_blocking(appender);
            guard = Some(g);
            Some(
                fmt::layer()
                    .with_writer(writer)
                    .with_ansi(false)
                    .with_filter(filter()),
            )
        }
        None => None,
    };
    let stderr_layer = to_stderr.then(|| {
        fmt::layer()
            .with_writer(std::io::stderr)
            .compact()
            .with_filter(filter())
    });
    tracing_subscriber::registry()
        .with(file_layer)
        .with(stderr_layer)
        .try_init()?;
    Ok(LogGuard(guard))
}

use tracing_subscriber::Layer as _;

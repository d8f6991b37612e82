//! One shutdown path: signals, a `Shutdown` request and the idle timer all
//! trigger the same handle, and everything that must stop waits on it.

use std::sync::Arc;
use tokio::sync::watch;

#[derive(Clone, Debug)]
pub struct Shutdown {
    tx: Arc<watch::Sender<Option<&'static str>>>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Shutdown {
            tx: Arc::new(watch::channel(None).0),
        }
    }
}

impl Shutdown {
    /// Asks everything to stop. The first reason given is kept.
    pub fn trigger(&self, reason: &'static str) {
        self.tx.send_if_modified(|current| {
            if current.is_none() {
                tracing::info!(reason, "shutting down");
                *current = Some(reason);
                true
            } else {
                false
            }
        });
    }

    pub fn is_triggered(&self) -> bool {
        self.tx.borrow().is_some()
    }

    /// Resolves once shutdown was triggered.
    pub async fn wait(&self) {
        let mut rx = self.tx.subscribe();
        // The sender lives in `self`, so the channel cannot close under us.
        let _ = rx.wait_for(Option::is_some).await;
    }
}

/// SIGTERM and SIGINT, caught from the moment [`Signals::catch`] returns.
/// Catch them before the socket exists: a signal that finds no handler kills
/// the daemon and leaves its socket behind.
pub struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    /// Installs the handlers. Call it inside the runtime.
    pub fn catch() -> std::io::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Signals {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    /// The first signal (also one caught before this call) triggers
    /// `shutdown`; a second one runs `at_once` and exits without draining.
    pub fn on(self, shutdown: Shutdown, at_once: impl FnOnce() + Send + 'static) {
        let Signals { mut term, mut int } = self;
        tokio::spawn(async move {
            tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
            shutdown.trigger("signal");
            tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
            tracing::warn!("second signal: exiting without draining");
            at_once();
            std::process::exit(130);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waiters_wake_on_the_first_trigger() {
        let s = Shutdown::default();
        let waiter = tokio::spawn({
            let s = s.clone();
            async move { s.wait().await }
        });
        assert!(!s.is_triggered());
        s.trigger("test");
        s.trigger("again");
        waiter.await.unwrap();
        assert!(s.is_triggered());
        s.wait().await; // already triggered: returns at once
    }
}

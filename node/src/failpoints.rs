//! Fault hooks for crash tests, compiled only with the `failpoints` cargo
//! feature (the workspace build of `deploy/build.sh`, which `deploy/dev.sh`
//! and `tests/run.sh` share, enables it; the Docker image builds without
//! it): each reads its environment variable once, at start, and does
//! nothing when it is unset.

use std::time::Duration;

/// Makes every log sync this many milliseconds slower (before the WAL is
/// written out), as a slow disk would.
pub const LOG_SYNC_DELAY_MS: &str = "HANDLESTORE_FAILPOINT_LOG_SYNC_DELAY_MS";

/// The delay [`LOG_SYNC_DELAY_MS`] asks for.
#[cfg(feature = "failpoints")]
pub(crate) fn log_sync_delay() -> Option<Duration> {
    let delay = std::env::var(LOG_SYNC_DELAY_MS)
        .ok()
        .and_then(|v| v.parse().ok())
        .map(Duration::from_millis);
    if let Some(d) = delay {
        tracing::warn!("failpoint {LOG_SYNC_DELAY_MS}: every log sync is {d:?} slower");
    }
    delay
}

/// Without failpoints: none.
#[cfg(not(feature = "failpoints"))]
pub(crate) fn log_sync_delay() -> Option<Duration> {
    None
}

//! Whether each peer answers this node's Raft calls, told in the log as an
//! operator reads it: one line when a peer stops answering, one when it
//! answers again, and while it stays silent one line every
//! [`SUMMARY_EVERY`] with the count of calls that failed. openraft's own
//! lines about failed calls (an error and a warning per call, ten a second
//! per peer) are left out of the log ([`observe::logs`](crate::observe::logs)).
//!
//! A peer is taken for silent once its calls have failed for
//! [`SILENT_AFTER`] with no answer between: one call lost, or a slow
//! answer, is not worth a line.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::raft::NodeId;

/// How long a peer's calls must fail before it is said to be silent.
pub const SILENT_AFTER: Duration = Duration::from_secs(1);
/// How often a peer that stays silent is mentioned again.
pub const SUMMARY_EVERY: Duration = Duration::from_secs(30);

#[derive(Debug, Default)]
struct Peer {
    /// The first failure since the last answer.
    failing_since: Option<Instant>,
    /// Failures since the last answer.
    failures: u64,
    /// Said to be silent, and when that was last said.
    said: Option<Instant>,
}

/// What to log, decided under the lock and logged outside it.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    Silent { failures: u64, since: Duration },
    StillSilent { failures: u64, since: Duration },
    Back { failures: u64, since: Duration },
}

/// Every peer's reach, shared by every connection of this node.
#[derive(Default)]
pub struct Reach {
    peers: Mutex<HashMap<NodeId, Peer>>,
}

impl Reach {
    /// A call to `peer` starts; it fails unless it is answered.
    pub fn call(self: &Arc<Self>, peer: NodeId) -> Call {
        Call {
            reach: self.clone(),
            peer,
            done: false,
        }
    }

    fn answered(&self, id: NodeId, now: Instant) -> Option<Line> {
        let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        let peer = std::mem::take(peers.entry(id).or_default());
        let since = peer.failing_since.map(|t| now.saturating_duration_since(t))?;
        peer.said.map(|_| Line::Back {
            failures: peer.failures,
            since,
        })
    }

    fn failed(&self, id: NodeId, now: Instant) -> Option<Line> {
        let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        let peer = peers.entry(id).or_default();
        peer.failures += 1;
        let first = *peer.failing_since.get_or_insert(now);
        let since = now.saturating_duration_since(first);
        let failures = peer.failures;
        match peer.said {
            None if since >= SILENT_AFTER => {
                peer.said = Some(now);
                Some(Line::Silent { failures, since })
            }
            Some(said) if now.saturating_duration_since(said) >= SUMMARY_EVERY => {
                peer.said = Some(now);
                Some(Line::StillSilent { failures, since })
            }
            _ => None,
        }
    }
}

fn log(peer: NodeId, line: Option<Line>, why: &str) {
    match line {
        Some(Line::Silent { failures, since }) => tracing::warn!(
            peer,
            failures,
            "peer {peer} does not answer: its calls failed for {} ms ({why})",
            since.as_millis()
        ),
        Some(Line::StillSilent { failures, since }) => tracing::warn!(
            peer,
            failures,
            "peer {peer} still does not answer, for {} s now ({why})",
            since.as_secs()
        ),
        Some(Line::Back { failures, since }) => tracing::info!(
            peer,
            failures,
            "peer {peer} answers again, after {} ms",
            since.as_millis()
        ),
        None => {}
    }
}

/// One call to a peer: answered, failed, or dropped unanswered (openraft
/// gave up waiting), which counts as failed.
pub struct Call {
    reach: Arc<Reach>,
    peer: NodeId,
    done: bool,
}

impl Call {
    pub fn answered(mut self) {
        self.done = true;
        log(self.peer, self.reach.answered(self.peer, Instant::now()), "");
    }

    pub fn failed(mut self, why: &dyn std::fmt::Display) {
        self.done = true;
        log(
            self.peer,
            self.reach.failed(self.peer, Instant::now()),
            &why.to_string(),
        );
    }

    /// Records the outcome of `result`.
    pub fn outcome<T, E: std::fmt::Display>(self, result: &Result<T, E>) {
        match result {
            Ok(_) => self.answered(),
            Err(e) => self.failed(e),
        }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        if !self.done {
            log(
                self.peer,
                self.reach.failed(self.peer, Instant::now()),
                "no answer in time",
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_silent_peer_is_told_once_then_summarized_then_told_back() {
        let reach = Reach::default();
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        assert_eq!(reach.failed(2, t0), None, "one failure is not silence");
        assert_eq!(reach.failed(2, t0 + ms(500)), None);
        assert_eq!(
            reach.failed(2, t0 + ms(1000)),
            Some(Line::Silent {
                failures: 3,
                since: ms(1000)
            })
        );
        for i in 1..100 {
            assert_eq!(
                reach.failed(2, t0 + ms(1000 + i * 100)),
                None,
                "quiet while it stays silent"
            );
        }
        assert!(matches!(
            reach.failed(2, t0 + ms(1000) + SUMMARY_EVERY),
            Some(Line::StillSilent { failures: 103, .. })
        ));
        assert_eq!(reach.failed(3, t0), None, "each peer on its own");
        assert!(matches!(
            reach.answered(2, t0 + ms(40_000)),
            Some(Line::Back { failures: 103, .. })
        ));
        assert_eq!(reach.failed(2, t0 + ms(40_100)), None, "counting starts again");
    }

    #[test]
    fn a_failure_healed_before_it_was_told_is_never_told() {
        let reach = Reach::default();
        let t0 = Instant::now();
        assert_eq!(reach.failed(2, t0), None);
        assert_eq!(reach.answered(2, t0 + Duration::from_millis(300)), None);
        assert_eq!(reach.answered(2, t0 + Duration::from_millis(400)), None);
    }

    #[test]
    fn a_call_dropped_unanswered_counts_as_failed() {
        let reach = Arc::new(Reach::default());
        drop(reach.call(2));
        reach.call(2).failed(&"refused");
        let failures = reach.peers.lock().expect("lock")[&2].failures;
        assert_eq!(failures, 2);
        reach.call(2).answered();
        assert_eq!(reach.peers.lock().expect("lock")[&2].failures, 0);
    }
}

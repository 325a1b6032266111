//! How long this node, as leader, has not heard from a majority.
//!
//! openraft reports the time since a majority last answered the leader
//! (`millis_since_quorum_ack`), but nothing at all before the first answer
//! of its term: a leader elected and cut off at once (or one whose
//! followers never answer in time) would pass for one that just heard.
//! Here the time since it was elected stands in until then. The proposer
//! refuses writes and reads past a silence, and `status` calls such a
//! leader "leader (no quorum)", both from this one reading.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use openraft::{RaftMetrics, ServerState};

use crate::config::Member;
use crate::raft::{NodeId, Vote};

/// When this node last began to lead, and under which vote.
#[derive(Debug, Default)]
pub struct Tenure(Mutex<Option<(Vote, Instant)>>);

impl Tenure {
    /// Notes this node's role and vote (from openraft's server metrics,
    /// which change with them).
    pub fn note(&self, leads: bool, vote: Vote) {
        let mut t = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match (leads, t.as_ref()) {
            (false, _) => *t = None,
            (true, Some((v, _))) if *v == vote => {}
            (true, _) => *t = Some((vote, Instant::now())),
        }
    }

    /// How long a leader has not heard from a majority (None: it does not
    /// lead).
    pub fn silence(&self, m: &RaftMetrics<NodeId, Member>) -> Option<Duration> {
        if m.state != ServerState::Leader {
            return None;
        }
        if let Some(ms) = m.millis_since_quorum_ack {
            return Some(Duration::from_millis(ms));
        }
        let t = self.0.lock().unwrap_or_else(|p| p.into_inner());
        Some(match t.as_ref() {
            Some((vote, since)) if *vote == m.vote => since.elapsed(),
            // Not noted yet: it was elected just now.
            _ => Duration::ZERO,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leader(vote: Vote, acked_ms: Option<u64>) -> RaftMetrics<NodeId, Member> {
        let mut m = RaftMetrics::new_initial(1);
        m.state = ServerState::Leader;
        m.vote = vote;
        m.millis_since_quorum_ack = acked_ms;
        m
    }

    #[test]
    fn a_leader_never_answered_has_been_silent_since_it_was_elected() {
        let tenure = Tenure::default();
        let vote = Vote::new_committed(3, 1);
        assert_eq!(
            tenure.silence(&leader(vote, None)),
            Some(Duration::ZERO),
            "not noted yet"
        );
        tenure.note(true, vote);
        std::thread::sleep(Duration::from_millis(20));
        assert!(tenure.silence(&leader(vote, None)).expect("leads") >= Duration::from_millis(20));
        assert_eq!(
            tenure.silence(&leader(vote, Some(5))),
            Some(Duration::from_millis(5)),
            "openraft's own once a majority answered"
        );
        let mut follower = leader(vote, None);
        follower.state = ServerState::Follower;
        assert_eq!(tenure.silence(&follower), None);
    }

    #[test]
    fn a_new_term_starts_a_new_tenure() {
        let tenure = Tenure::default();
        tenure.note(true, Vote::new_committed(3, 1));
        std::thread::sleep(Duration::from_millis(20));
        tenure.note(true, Vote::new_committed(3, 1));
        assert!(tenure.silence(&leader(Vote::new_committed(3, 1), None)).expect("leads") >= Duration::from_millis(20));
        tenure.note(true, Vote::new_committed(4, 1));
        assert!(tenure.silence(&leader(Vote::new_committed(4, 1), None)).expect("leads") < Duration::from_millis(20));
        tenure.note(false, Vote::new_committed(4, 1));
        assert_eq!(
            tenure.silence(&leader(Vote::new_committed(4, 1), None)),
            Some(Duration::ZERO)
        );
    }
}

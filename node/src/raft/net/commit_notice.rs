//! Commit-only AppendEntries, deferred and usually carried by the next one.
//!
//! openraft 0.9 follows every commit with an AppendEntries to each follower
//! that carries nothing but the new commit index, and its replication
//! stream to that follower sends nothing else until that one is answered.
//! Under load this is a third of all replication RPCs, each a full round
//! trip (HTTP/2 stream, a task, openraft's core on the follower), and the
//! next entry waits behind it on the stream.
//!
//! The commit index needs no answer: every AppendEntries carries it, and a
//! follower commits `min(leader_commit, the request's last entry)`. So when
//! a replication connection is asked to send one that only moves the
//! commit index, right after the follower confirmed exactly what the
//! request assumes, it answers "success" at once and keeps the notice. The
//! next request on the connection carries the commit index anyway; if none
//! is sent within [`DEFER`], the notice is sent on its own.
//!
//! Why answering locally is safe:
//!
//! - It claims nothing new about the follower's log. The request's
//!   `prev_log_id` is the follower's matching entry as it last confirmed
//!   it, on this connection, for this leader's vote, and an empty request
//!   adds nothing to confirm. openraft advances neither `matching` nor the
//!   commit index on it.
//! - The only thing openraft takes from it is the time of the answer, for
//!   the leader's "time since a quorum answered" (a metric, which the
//!   proposer uses to refuse writes fast without a quorum). The follower
//!   really answered one request earlier, moments before; a follower that
//!   stops answering is found by the next request with entries or the next
//!   heartbeat, which are always sent (only one notice is held at a time).
//! - A new connection has confirmed nothing, so the leader's read-index
//!   rounds (openraft opens a connection per round) always reach the
//!   followers: linearizable reads still confirm leadership with a quorum,
//!   and they carry the commit index to the followers too.
//!
//! What it costs: a follower learns of a commit with the next entry or
//! within `DEFER`, not one round trip after it, so its apply lags by that
//! much (a read with `AtLeast` or `Linearizable` on a follower waits for
//! its apply as before; see docs/consistency.md).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use openraft::raft::{AppendEntriesRequest, AppendEntriesResponse};

use crate::raft::{LogId, TypeConfig, Vote};

/// How long a held commit notice waits for a request to carry it before it
/// is sent on its own. Under load the next entry goes out well within it;
/// after the last write of a burst, followers learn of the commit this
/// much later.
pub const DEFER: Duration = Duration::from_millis(1);

/// What the follower confirmed on this connection, by its last answer.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Confirmed {
    vote: Vote,
    /// The follower's log matches the leader's up to here.
    matching: Option<LogId>,
    /// The commit index the follower has been sent (or is held in a notice).
    commit: Option<LogId>,
}

/// A commit notice answered locally and not sent yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub vote: Vote,
    pub prev_log_id: Option<LogId>,
    pub leader_commit: Option<LogId>,
    /// Which notice of this connection, so a later one is not sent for it.
    generation: u64,
}

impl Notice {
    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn request(&self) -> AppendEntriesRequest<TypeConfig> {
        AppendEntriesRequest {
            vote: self.vote,
            prev_log_id: self.prev_log_id,
            leader_commit: self.leader_commit,
            entries: Vec::new(),
        }
    }
}

/// Per replication connection: what was confirmed, and the notice held.
#[derive(Default)]
pub struct CommitNotices {
    confirmed: Option<Confirmed>,
    held: Arc<Mutex<Option<Notice>>>,
    generation: u64,
}

/// Takes the held notice if it is still `generation` (nothing carried it
/// since): the deferred sender's side.
pub fn take_if_still_held(held: &Mutex<Option<Notice>>, generation: u64) -> Option<Notice> {
    let mut h = held.lock().unwrap_or_else(|p| p.into_inner());
    match &*h {
        Some(n) if n.generation == generation => h.take(),
        _ => None,
    }
}

impl CommitNotices {
    /// Called before `rpc` is sent. Returns a notice when the request only
    /// moves the commit index past what the follower confirmed: it is then
    /// answered with success without being sent, and the caller sends the
    /// notice after [`DEFER`] unless `take_if_still_held` says a later
    /// request carried it. Otherwise the request goes, and carries any held
    /// notice with it.
    pub fn hold(&mut self, rpc: &AppendEntriesRequest<TypeConfig>) -> Option<(Notice, Arc<Mutex<Option<Notice>>>)> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let only_commit = rpc.entries.is_empty()
            && held.is_none()
            && self
                .confirmed
                .as_ref()
                .is_some_and(|c| c.vote == rpc.vote && c.matching == rpc.prev_log_id && rpc.leader_commit > c.commit);
        if !only_commit {
            // This request carries the commit index (it never goes back).
            *held = None;
            return None;
        }
        self.generation += 1;
        let notice = Notice {
            vote: rpc.vote,
            prev_log_id: rpc.prev_log_id,
            leader_commit: rpc.leader_commit,
            generation: self.generation,
        };
        *held = Some(notice.clone());
        if let Some(c) = &mut self.confirmed {
            c.commit = rpc.leader_commit;
        }
        Some((notice, self.held.clone()))
    }

    /// Called with the answer to a request that was sent.
    pub fn answered(
        &mut self,
        rpc: &AppendEntriesRequest<TypeConfig>,
        resp: Option<&AppendEntriesResponse<crate::raft::NodeId>>,
    ) {
        let matching = match resp {
            Some(AppendEntriesResponse::Success) => rpc.entries.last().map(|e| e.log_id).or(rpc.prev_log_id),
            Some(AppendEntriesResponse::PartialSuccess(m)) => *m,
            _ => {
                self.confirmed = None;
                return;
            }
        };
        self.confirmed = Some(Confirmed {
            vote: rpc.vote,
            matching,
            commit: rpc.leader_commit,
        });
    }
}

#[cfg(test)]
mod tests {
    use openraft::{CommittedLeaderId, EntryPayload};

    use super::*;
    use crate::raft::Entry;

    fn id(index: u64) -> LogId {
        LogId::new(CommittedLeaderId::new(2, 1), index)
    }

    fn vote() -> Vote {
        Vote::new_committed(2, 1)
    }

    fn req(prev: u64, entries: impl IntoIterator<Item = u64>, commit: u64) -> AppendEntriesRequest<TypeConfig> {
        AppendEntriesRequest {
            vote: vote(),
            prev_log_id: Some(id(prev)),
            leader_commit: Some(id(commit)),
            entries: entries
                .into_iter()
                .map(|i| Entry {
                    log_id: id(i),
                    payload: EntryPayload::Blank,
                })
                .collect(),
        }
    }

    fn empty(prev: u64, commit: u64) -> AppendEntriesRequest<TypeConfig> {
        req(prev, [], commit)
    }

    #[test]
    fn a_new_connection_sends_everything() {
        // openraft's read-index rounds open a connection per round: their
        // heartbeats must reach the followers.
        let mut n = CommitNotices::default();
        assert!(n.hold(&empty(5, 6)).is_none());
        assert!(n.hold(&empty(5, 6)).is_none());
    }

    #[test]
    fn only_a_commit_move_after_a_confirmed_append_is_held() {
        let mut n = CommitNotices::default();
        let append = req(4, 5..=6, 4);
        assert!(n.hold(&append).is_none());
        n.answered(&append, Some(&AppendEntriesResponse::Success));
        // Same commit index: a heartbeat, sent.
        assert!(n.hold(&empty(6, 4)).is_none());
        n.answered(&empty(6, 4), Some(&AppendEntriesResponse::Success));
        // Assumes a different match than confirmed: sent.
        assert!(n.hold(&empty(5, 6)).is_none());
        // Another leader's vote: sent.
        let mut other = empty(6, 6);
        other.vote = Vote::new_committed(3, 2);
        assert!(n.hold(&other).is_none());
        // Exactly the commit moving: held.
        let (notice, held) = n.hold(&empty(6, 6)).expect("held");
        assert_eq!(notice.request().leader_commit, Some(id(6)));
        assert_eq!(notice.request().prev_log_id, Some(id(6)));
        assert!(notice.request().entries.is_empty());
        assert_eq!(take_if_still_held(&held, notice.generation), Some(notice));
    }

    #[test]
    fn one_notice_at_a_time_and_the_next_request_carries_it() {
        let mut n = CommitNotices::default();
        let append = req(4, 5..=6, 4);
        n.hold(&append);
        n.answered(&append, Some(&AppendEntriesResponse::Success));
        let (first, held) = n.hold(&empty(6, 5)).expect("held");
        // A second commit move while one is held (or a heartbeat tick) is
        // sent: a follower that stopped answering is found at once.
        assert!(n.hold(&empty(6, 6)).is_none());
        assert_eq!(take_if_still_held(&held, first.generation), None, "carried by the send");
        n.answered(&empty(6, 6), Some(&AppendEntriesResponse::Success));
        // The next entry carries the held commit index.
        let (second, held) = n.hold(&empty(6, 7)).expect("held");
        let next = req(6, 7..=7, 7);
        assert!(n.hold(&next).is_none());
        assert_eq!(take_if_still_held(&held, second.generation), None);
    }

    #[test]
    fn a_failed_or_refused_answer_confirms_nothing() {
        for resp in [
            None,
            Some(AppendEntriesResponse::Conflict),
            Some(AppendEntriesResponse::HigherVote(Vote::new(3, 2))),
        ] {
            let mut n = CommitNotices::default();
            let append = req(4, 5..=6, 4);
            n.answered(&append, Some(&AppendEntriesResponse::Success));
            n.answered(&append, resp.as_ref());
            assert!(n.hold(&empty(6, 6)).is_none(), "{resp:?}");
        }
    }

    #[test]
    fn a_partial_success_confirms_what_it_names() {
        let mut n = CommitNotices::default();
        let append = req(4, 5..=8, 4);
        n.answered(&append, Some(&AppendEntriesResponse::PartialSuccess(Some(id(6)))));
        assert!(n.hold(&empty(8, 6)).is_none(), "8 was not confirmed");
        assert!(n.hold(&empty(6, 6)).is_some());
    }
}

//! The leader's read lease: linearizable reads served on the leader without
//! a quorum round while the followers that last confirmed it still refuse
//! to elect anyone else (the safety argument: docs/dev/design.md, "Reads
//! on a leader lease").
//!
//! A quorum round (`read_index`) that began at `t` on this node's monotonic
//! clock was answered by a majority, each of which received the leader's
//! AppendEntries after `t` and from then on refuses every vote for one
//! `election_max` of its own clock (openraft's follower lease). No other
//! leader can be elected before `t + election_max` without this leader's
//! own vote, and this leader grants that only by stepping down inside
//! Raft's core, which a read sees (`Office`). So, until `t + length`
//! (`length` shorter than `election_max`, the rest a margin for clocks
//! running at different rates), this node leads, alone, and the read index
//! is its commit index once that is of its own term.
//!
//! What ends a lease early: a change of vote (term) or of membership (the
//! majorities that promised are no longer the ones that elect), and a
//! leader transfer (the target campaigns against its own promise), which
//! suspends leases from before it asks until it ends.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use openraft::{LogId, ServerState, Vote};

use crate::failpoints;
use crate::raft::{NodeId, Raft};

/// What a lease is held under: the leader's vote (its term) and the
/// membership whose majority confirmed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Office {
    pub vote: Vote<NodeId>,
    pub membership: Option<LogId<NodeId>>,
}

/// This node's Raft state as a read needs it, read inside Raft's core (so
/// in order with the votes it grants).
#[derive(Debug, Clone)]
pub struct Leadership {
    pub leads: bool,
    pub office: Office,
    /// The commit index, if the entry committed last is this leader's
    /// (same leader id: term and node, as openraft may elect two leaders in
    /// one term): its first entry committed, so every earlier commit is
    /// known.
    pub committed_in_term: Option<u64>,
}

impl Leadership {
    pub async fn read(raft: &Raft) -> Option<Leadership> {
        raft.with_raft_state(|st| {
            let vote = *st.vote_ref();
            let committed = st.committed.as_ref();
            Leadership {
                leads: st.server_state == ServerState::Leader,
                committed_in_term: committed.filter(|c| &c.leader_id == vote.leader_id()).map(|c| c.index),
                office: Office {
                    vote,
                    membership: *st.membership_state.effective().log_id(),
                },
            }
        })
        .await
        .ok()
    }
}

/// A quorum round's start, for the lease it may grant.
#[derive(Debug, Clone)]
pub struct RoundStart {
    at: Instant,
    office: Office,
    epoch: u64,
}

#[derive(Debug, Clone)]
struct Held {
    until: Instant,
    office: Office,
}

/// This node's lease. Shared by the read rounds and a leader transfer.
#[derive(Debug)]
pub struct ReadLease {
    /// None: leases are off (`--read-lease false`).
    length: Option<Duration>,
    held: Mutex<Option<Held>>,
    /// Transfers in progress: no lease is granted or used meanwhile.
    suspended: AtomicUsize,
    /// Bumped by every suspension: a round that began before one grants
    /// nothing.
    epoch: AtomicU64,
    renewing: AtomicBool,
}

impl ReadLease {
    /// A lease `length` long (None: off).
    pub fn new(length: Option<Duration>) -> Self {
        Self {
            length,
            held: Mutex::new(None),
            suspended: AtomicUsize::new(0),
            epoch: AtomicU64::new(0),
            renewing: AtomicBool::new(false),
        }
    }

    pub fn is_on(&self) -> bool {
        self.length.is_some()
    }

    /// The lease length for a cluster whose followers refuse votes for
    /// `election_max` after hearing from the leader: three quarters of it,
    /// so a follower's clock may run up to a third slower than this one's.
    pub fn length_for(election_max: Duration) -> Duration {
        election_max * 3 / 4
    }

    /// Before a quorum round, under `office`: what a lease would start from
    /// (None if leases are off or suspended).
    pub fn round_starts(&self, office: Office) -> Option<RoundStart> {
        self.length?;
        let epoch = self.epoch.load(Ordering::SeqCst);
        (self.suspended.load(Ordering::SeqCst) == 0).then(|| RoundStart {
            at: Instant::now(),
            office,
            epoch,
        })
    }

    /// After that round confirmed leadership, with this node still in the
    /// same office: the lease runs from the round's start.
    pub fn grant(&self, start: RoundStart, now: &Office) {
        let Some(length) = self.length else { return };
        if &start.office != now {
            return;
        }
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        // Checked under the lock a suspension clears the lease under.
        if self.epoch.load(Ordering::SeqCst) != start.epoch || self.suspended.load(Ordering::SeqCst) > 0 {
            return;
        }
        let until = start.at + length;
        if held
            .as_ref()
            .is_none_or(|h| h.office != start.office || h.until < until)
        {
            *held = Some(Held {
                until,
                office: start.office,
            });
        }
    }

    /// The office a lease is held under at `now`, if one is.
    pub fn held_at(&self, now: Instant) -> Option<Office> {
        if self.suspended.load(Ordering::SeqCst) > 0 {
            return None;
        }
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let h = held.as_ref()?;
        (h.until > now || failpoints::error_here(failpoints::READ_LEASE_UNBOUNDED)).then(|| h.office.clone())
    }

    /// Whether a lease held at `now` is past half its length (time to
    /// renew it in the background); true for one caller until
    /// [`renewed`](Self::renewed).
    pub fn should_renew(&self, now: Instant) -> bool {
        let (Some(length), Some(until)) = (self.length, self.until()) else {
            return false;
        };
        until.saturating_duration_since(now) < length / 2 && !self.renewing.swap(true, Ordering::SeqCst)
    }

    pub fn renewed(&self) {
        self.renewing.store(false, Ordering::SeqCst);
    }

    fn until(&self) -> Option<Instant> {
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|h| h.until)
    }

    /// No lease is used or granted until the guard drops; the one held
    /// ends now.
    pub fn suspend(&self) -> Suspension<'_> {
        self.suspended.fetch_add(1, Ordering::SeqCst);
        self.epoch.fetch_add(1, Ordering::SeqCst);
        *self.held.lock().unwrap_or_else(|e| e.into_inner()) = None;
        Suspension(self)
    }
}

/// Leases suspended while this lives (a leader transfer).
pub struct Suspension<'a>(&'a ReadLease);

impl Drop for Suspension<'_> {
    fn drop(&mut self) {
        self.0.suspended.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use openraft::LeaderId;

    use super::*;

    fn office(term: u64) -> Office {
        Office {
            vote: Vote::new_committed(term, 1),
            membership: None,
        }
    }

    const LEN: Duration = Duration::from_millis(1200);

    #[test]
    fn a_lease_runs_from_the_rounds_start_for_its_length() {
        let lease = ReadLease::new(Some(LEN));
        let start = lease.round_starts(office(2)).expect("on");
        let at = start.at;
        lease.grant(start, &office(2));
        assert_eq!(lease.held_at(at + LEN - Duration::from_millis(1)), Some(office(2)));
        assert_eq!(lease.held_at(at + LEN), None, "ends at its length, not after");
    }

    #[test]
    fn a_round_that_saw_the_office_change_grants_nothing() {
        let lease = ReadLease::new(Some(LEN));
        let start = lease.round_starts(office(2)).expect("on");
        lease.grant(start, &office(3));
        assert_eq!(lease.held_at(Instant::now()), None);
        let mut other_members = office(2);
        other_members.membership = Some(LogId::new(LeaderId::new(2, 1), 9));
        let start = lease.round_starts(office(2)).expect("on");
        lease.grant(start, &other_members);
        assert_eq!(lease.held_at(Instant::now()), None);
    }

    #[test]
    fn a_suspension_ends_the_lease_and_voids_rounds_begun_before_it() {
        let lease = ReadLease::new(Some(LEN));
        let start = lease.round_starts(office(2)).expect("on");
        lease.grant(start, &office(2));
        let before = lease.round_starts(office(2)).expect("on");
        let held = lease.suspend();
        assert_eq!(lease.held_at(Instant::now()), None, "ended at once");
        assert!(lease.round_starts(office(2)).is_none(), "no round starts one");
        drop(held);
        lease.grant(before, &office(2));
        assert_eq!(
            lease.held_at(Instant::now()),
            None,
            "a round from before grants nothing"
        );
        let after = lease.round_starts(office(2)).expect("on again");
        lease.grant(after, &office(2));
        assert_eq!(lease.held_at(Instant::now()), Some(office(2)));
    }

    #[test]
    fn off_means_no_lease_ever() {
        let lease = ReadLease::new(None);
        assert!(lease.round_starts(office(2)).is_none());
        assert_eq!(lease.held_at(Instant::now()), None);
    }

    #[test]
    fn one_caller_renews_once_past_half_the_length() {
        let lease = ReadLease::new(Some(LEN));
        let start = lease.round_starts(office(2)).expect("on");
        let at = start.at;
        lease.grant(start, &office(2));
        assert!(!lease.should_renew(at + LEN / 4));
        assert!(lease.should_renew(at + LEN * 3 / 4));
        assert!(!lease.should_renew(at + LEN * 3 / 4), "one renewal at a time");
        lease.renewed();
        assert!(lease.should_renew(at + LEN * 3 / 4));
    }

    #[test]
    fn the_length_leaves_a_margin_under_the_followers_lease() {
        assert_eq!(ReadLease::length_for(Duration::from_millis(1600)), LEN);
    }
}

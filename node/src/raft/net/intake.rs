//! What a node whose disk is under its reserve ([`storage::disk`](crate::storage::disk)) takes from
//! its leader, on both ends of the wire.
//!
//! It takes no client writes, but it must go on hearing its leader, or it
//! loses it (and campaigns once space comes back), and it must take the
//! entries Raft itself needs to move on: a new leader's first entry, which
//! must commit before that leader serves a linearizable read, and
//! membership changes. Entries of earlier terms than the leader's are
//! taken too: a new leader carries them before its first entry, and they
//! were written before the disks filled (the leader refuses writes once a
//! majority is full, [`raft::log::room`](crate::raft::log::room)), so they are few. Below half the
//! reserve nothing is taken.
//!
//! The follower trims what it will not take from the end of a request,
//! hands the rest to Raft (which checks the leader's vote and the log's
//! match as for any request, so the node keeps its leader) and answers
//! `PartialSuccess` up to what it took. A leader that gets such an answer
//! sends no more client entries to that node while it is known to be full
//! ([`raft::log::room`](crate::raft::log::room)), and paces its requests to it ([`PACE`]): replication to
//! it carries the commit index and heartbeats, and nothing it would refuse.

use std::time::Duration;

use openraft::EntryPayload;
use openraft::raft::{AppendEntriesRequest, AppendEntriesResponse};

use crate::raft::{Entry, LogId, NodeId, TypeConfig};

/// How long a leader waits before answering openraft for a trimmed
/// request to a full node: openraft sends the next one at once, and each
/// would be trimmed alike. Kept under half the heartbeat interval (the
/// deadline openraft gives each request).
pub const PACE: Duration = Duration::from_millis(50);

/// What a node takes from its leader, by its disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intake {
    /// Everything: the disk has room.
    All,
    /// Under the reserve: Raft's own entries and earlier terms', no client
    /// writes of the leader's term.
    RaftOnly,
    /// Under half the reserve: no entries at all (heartbeats still).
    Nothing,
}

impl Intake {
    pub fn of(report: &crate::storage::disk::DiskReport) -> Self {
        if report.exhausted() {
            Intake::Nothing
        } else if report.full {
            Intake::RaftOnly
        } else {
            Intake::All
        }
    }

    /// Whether `entry`, sent by a leader of `leader_term`, is taken.
    fn takes(self, entry: &Entry, leader_term: u64) -> bool {
        match self {
            Intake::All => true,
            Intake::Nothing => false,
            Intake::RaftOnly => {
                !matches!(entry.payload, EntryPayload::Normal(_)) || entry.log_id.leader_id.term < leader_term
            }
        }
    }
}

/// A request cut down to what `intake` takes: the longest prefix of its
/// entries that is taken. `None`: it was taken whole.
pub struct Trimmed {
    pub request: AppendEntriesRequest<TypeConfig>,
    /// The last entry kept, or the request's `prev_log_id`: what a success
    /// of the trimmed request confirms.
    pub matching: Option<LogId>,
}

/// Cuts `request` down to what `intake` takes, or gives it back whole.
pub fn trim(
    mut request: AppendEntriesRequest<TypeConfig>,
    intake: Intake,
) -> Result<AppendEntriesRequest<TypeConfig>, Trimmed> {
    let term = request.vote.leader_id().term;
    let kept = request.entries.iter().take_while(|e| intake.takes(e, term)).count();
    if kept == request.entries.len() {
        return Ok(request);
    }
    request.entries.truncate(kept);
    let matching = request.entries.last().map(|e| e.log_id).or(request.prev_log_id);
    Err(Trimmed { request, matching })
}

/// The answer to a trimmed request: a success confirms only what was kept.
pub fn answer(resp: AppendEntriesResponse<NodeId>, matching: Option<LogId>) -> AppendEntriesResponse<NodeId> {
    match resp {
        AppendEntriesResponse::Success => AppendEntriesResponse::PartialSuccess(matching),
        AppendEntriesResponse::PartialSuccess(m) => AppendEntriesResponse::PartialSuccess(m.min(matching)),
        other => other,
    }
}

/// Whether an answer to `request` confirms less than all of it: the
/// follower trimmed it (the only reason handlestore answers so).
pub fn refused_some(request: &AppendEntriesRequest<TypeConfig>, resp: &AppendEntriesResponse<NodeId>) -> bool {
    let last = request.entries.last().map(|e| e.log_id);
    matches!(resp, AppendEntriesResponse::PartialSuccess(m) if *m < last)
}

#[cfg(test)]
mod tests {
    use openraft::{CommittedLeaderId, Membership, Vote};

    use super::*;
    use crate::raft::payload::Payload;

    fn id(term: u64, index: u64) -> LogId {
        LogId::new(CommittedLeaderId::new(term, 1), index)
    }

    fn normal(term: u64, index: u64) -> Entry {
        Entry {
            log_id: id(term, index),
            payload: EntryPayload::Normal(Payload::new(Default::default())),
        }
    }

    fn blank(term: u64, index: u64) -> Entry {
        Entry {
            log_id: id(term, index),
            payload: EntryPayload::Blank,
        }
    }

    fn membership(term: u64, index: u64) -> Entry {
        Entry {
            log_id: id(term, index),
            payload: EntryPayload::Membership(Membership::new(vec![[1u64].into()], ())),
        }
    }

    fn req(term: u64, entries: Vec<Entry>) -> AppendEntriesRequest<TypeConfig> {
        AppendEntriesRequest {
            vote: Vote::new_committed(term, 1),
            prev_log_id: Some(id(2, 9)),
            entries,
            leader_commit: Some(id(2, 9)),
        }
    }

    fn indexes(r: &AppendEntriesRequest<TypeConfig>) -> Vec<u64> {
        r.entries.iter().map(|e| e.log_id.index).collect()
    }

    #[test]
    fn with_room_everything_is_taken() {
        let r = req(3, vec![normal(3, 10), normal(3, 11)]);
        assert!(trim(r, Intake::All).is_ok());
    }

    #[test]
    fn a_full_node_takes_raft_entries_and_earlier_terms_but_no_new_writes() {
        let r = req(
            3,
            vec![
                normal(2, 10),
                blank(3, 11),
                membership(3, 12),
                normal(3, 13),
                blank(3, 14),
            ],
        );
        let t = trim(r, Intake::RaftOnly).expect_err("trimmed");
        assert_eq!(indexes(&t.request), [10, 11, 12], "up to the first new write");
        assert_eq!(t.matching, Some(id(3, 12)));
        let r = req(3, vec![blank(3, 10), membership(3, 11)]);
        assert!(trim(r, Intake::RaftOnly).is_ok(), "nothing to cut");
    }

    #[test]
    fn an_exhausted_node_takes_nothing_and_confirms_only_the_match() {
        let t = trim(req(3, vec![blank(3, 10)]), Intake::Nothing).expect_err("trimmed");
        assert!(t.request.entries.is_empty());
        assert_eq!(t.matching, Some(id(2, 9)));
        assert!(trim(req(3, vec![]), Intake::Nothing).is_ok(), "a heartbeat passes");
    }

    #[test]
    fn a_trimmed_success_confirms_only_what_was_kept() {
        let m = Some(id(3, 11));
        assert_eq!(
            answer(AppendEntriesResponse::Success, m),
            AppendEntriesResponse::PartialSuccess(m)
        );
        assert_eq!(
            answer(AppendEntriesResponse::PartialSuccess(Some(id(3, 12))), m),
            AppendEntriesResponse::PartialSuccess(m)
        );
        assert_eq!(
            answer(AppendEntriesResponse::Conflict, m),
            AppendEntriesResponse::Conflict
        );
        let sent = req(3, vec![blank(3, 10), normal(3, 11)]);
        assert!(refused_some(
            &sent,
            &AppendEntriesResponse::PartialSuccess(Some(id(3, 10)))
        ));
        assert!(!refused_some(
            &sent,
            &AppendEntriesResponse::PartialSuccess(Some(id(3, 11)))
        ));
        assert!(!refused_some(&sent, &AppendEntriesResponse::Success));
    }
}

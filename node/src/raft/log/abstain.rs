//! A node whose log lost entries above its applied index to damage on disk
//! ([`raft::log::log_check`](crate::raft::log::log_check)) takes no part in elections until it holds again
//! every entry it may have helped commit: it neither votes (`vote` and the
//! leader-transfer request are refused in [`raft::service`](crate::raft::service)) nor stands
//! (elections stay off), and it takes the leader's entries as any
//! follower does.
//!
//! Why this is enough (the argument of "Protocol-Aware Recovery for
//! Consensus-Based Storage", FAST '18): an entry committed with this
//! node's help is on a majority counting this node. While it abstains, a
//! leader needs the votes of a majority of the others, and so of a member
//! that holds the entry, which grants its vote only to a log at least as
//! up to date: every new leader holds the entry. The node ends its
//! abstention once it has applied an entry at or past (T, L), where T is
//! its vote's term at the repair (no entry it held was of a later term)
//! and L the last index it held: an entry of a later term than T came from
//! a leader holding every entry committed before that term, and its
//! earlier entries were sent first; an entry of term T at or past L came
//! from T's only leader, whose log then matches what this node held. Both
//! are behind an applied entry, so the node holds them again.
//!
//! The mark is stored (`log_store::KEY_REPAIR`), so a restart while
//! abstaining abstains again.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rocksdb::DB;

use crate::raft::Raft;
use crate::raft::log::log_store::{clear_repair, read_repair};
use crate::raft::log::room::Room;
use crate::raft::{LogId, StorageError};

pub struct Abstention {
    until: Option<(u64, u64)>,
    over: AtomicBool,
}

impl Abstention {
    /// This node's abstention, as the stored mark says.
    pub fn load(db: &DB) -> Result<Arc<Self>, StorageError> {
        let until = read_repair(db)?;
        Ok(Arc::new(Self {
            until,
            over: AtomicBool::new(until.is_none()),
        }))
    }

    /// Why this node takes no part in elections now, if it does not.
    pub fn refusal(&self) -> Option<String> {
        if self.over.load(Ordering::Acquire) {
            return None;
        }
        let (term, index) = self.until?;
        Some(format!(
            "this node lost Raft log entries to damage on its disk and takes no part in elections \
             until it has applied an entry at or past term {term}, index {index}"
        ))
    }

    fn reached(&self, applied: Option<&LogId>) -> bool {
        match (self.until, applied) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(until), Some(a)) => (a.leader_id.term, a.index) >= until,
        }
    }
}

/// Ends the abstention once the node has applied past its mark: forgets
/// the mark and lets the node stand again (`may_stand` says whether the
/// rest allows it).
pub fn spawn(raft: Raft, db: Arc<DB>, abstention: Arc<Abstention>, may_stand: impl Fn() -> bool + Send + 'static) {
    if abstention.refusal().is_none() {
        return;
    }
    tracing::warn!("{}", abstention.refusal().unwrap_or_default());
    tokio::spawn(async move {
        let mut metrics = raft.metrics();
        loop {
            let applied = metrics.borrow_and_update().last_applied;
            if abstention.reached(applied.as_ref()) {
                break;
            }
            if metrics.changed().await.is_err() {
                return;
            }
        }
        if let Err(e) = clear_repair(&db) {
            tracing::error!("could not forget the log repair's mark (the node abstains again after a restart): {e}");
        }
        abstention.over.store(true, Ordering::Release);
        raft.runtime_config().elect(may_stand());
        tracing::info!(
            "the Raft log holds again every entry this node held before the repair: it takes part in elections again"
        );
    });
}

/// Whether this node may stand for election as far as storage goes: its
/// log is whole (`Abstention`), and its disk has room or no leader with
/// room could commit writes either. The clock's guard (`clock_probe`) asks
/// this too.
#[derive(Clone)]
pub struct Standing {
    pub room: Arc<Room>,
    pub log: Arc<Abstention>,
}

impl Standing {
    pub fn allows(&self) -> bool {
        let disk_allows = self.room.disk().room().is_ok() || self.room.commit_blocked().is_some();
        disk_allows && self.log.refusal().is_none()
    }
}

#[cfg(test)]
mod tests {
    use openraft::CommittedLeaderId;

    use super::*;

    fn at(term: u64, index: u64) -> LogId {
        LogId::new(CommittedLeaderId::new(term, 1), index)
    }

    #[test]
    fn abstains_until_an_entry_at_or_past_the_mark_is_applied() {
        let a = Abstention {
            until: Some((5, 100)),
            over: AtomicBool::new(false),
        };
        assert!(a.refusal().is_some_and(|r| r.contains("term 5, index 100")));
        assert!(!a.reached(None));
        assert!(
            !a.reached(Some(&at(5, 99))),
            "the same term, short of the last index held"
        );
        assert!(!a.reached(Some(&at(4, 500))), "an older term, whatever the index");
        assert!(a.reached(Some(&at(5, 100))));
        assert!(
            a.reached(Some(&at(6, 3))),
            "a later term's leader holds every entry committed before"
        );
        let whole = Abstention {
            until: None,
            over: AtomicBool::new(true),
        };
        assert!(whole.refusal().is_none());
    }
}

//! What Raft does while this node's disk is under its reserve
//! (`crate::disk`): the node does not campaign (it could not take the
//! entries a leader must write), and if it leads it hands leadership to a
//! member with room, trying again every few seconds while no member has
//! any. Refusing the entries themselves is done where they arrive: the
//! proposer (client writes) and `raft::service` (the leader's appends and
//! snapshots).

use std::sync::Arc;
use std::time::Duration;

use openraft::ServerState;

use super::Raft;
use super::abstain::Abstention;
use super::admin::RaftAdmin;
use crate::clock::Clock;
use crate::disk::Disk;

/// How long a leader with a full disk waits between attempts to hand
/// leadership over.
const RETRY: Duration = Duration::from_secs(3);

/// How long one attempt may take.
const HAND_OVER_WITHIN: Duration = Duration::from_secs(5);

/// Whether this node may stand for election as far as its own storage
/// goes: its disk has room and its log is whole (`raft::abstain`). The
/// clock's guard (`clock_probe`) asks this too.
#[derive(Clone)]
pub struct Standing {
    pub disk: Arc<Disk>,
    pub log: Arc<Abstention>,
}

impl Standing {
    pub fn allows(&self) -> bool {
        self.disk.room().is_ok() && self.log.refusal().is_none()
    }
}

pub fn spawn(raft: Raft, admin: RaftAdmin, standing: Standing, clock: Arc<Clock>) {
    tokio::spawn(async move {
        let mut full = standing.disk.subscribe();
        loop {
            let is_full = *full.borrow_and_update();
            raft.runtime_config().elect(may_campaign(&standing, &clock));
            if is_full && raft.metrics().borrow().state == ServerState::Leader {
                hand_over(&admin).await;
            }
            tokio::select! {
                changed = full.changed() => if changed.is_err() { return },
                () = tokio::time::sleep(RETRY), if is_full => {}
            }
        }
    });
}

/// Whether this node may stand for election: its clock is trusted, its
/// disk has room and its log is whole.
pub fn may_campaign(standing: &Standing, clock: &Clock) -> bool {
    standing.allows() && clock.check().is_ok()
}

async fn hand_over(admin: &RaftAdmin) {
    match admin.transfer_leader(None, HAND_OVER_WITHIN).await {
        Ok(t) => tracing::warn!(
            to = t.to,
            term = t.term,
            "disk full: handed leadership to a member with room"
        ),
        Err(e) => tracing::warn!("disk full: could not hand leadership over ({e}); writes are refused here"),
    }
}

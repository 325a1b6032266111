//! The read gate: before a read is served from local state, make sure this
//! node has applied enough for the consistency the caller asked for.
//!
//! - Linearizable: ask the leader for a read index through the proposer,
//!   as writes go (the leader confirms it is still leader with a quorum
//!   round, so a deposed or paused leader cannot answer), then wait until
//!   this node has applied it.
//! - AtLeast(revision): wait until this node has applied `revision`.
//! - Stale: serve what is applied now.
//!
//! And the time the read judges expiry at, never this node's own clock:
//! for a linearizable read the leader's clock, read once its leadership
//! was confirmed and carried with the read index; for the others the
//! time of the state read (the latest leader stamp applied), which the
//! leader's sweep moves on as entries fall due. Either is bounded below by
//! the latest stamp applied. A node whose own clock is not trusted
//! (`crate::clock`: off the cluster's by more than the maximum, or not
//! measured) refuses linearizable and at-least reads that meet an entry
//! with a TTL; stale reads promise nothing about time and are served.

use std::sync::Arc;
use std::time::Duration;

use handlestore_proto::reason::Reason;
use handlestore_proto::v1 as pb;
use tonic::Status;

use crate::observe::logs::request::stage;
use crate::raft::Proposer;
use crate::state::{ExpiryTime, StateStore};
use crate::status;

/// Where a read stands: the revision it observes (at least), and the time
/// it judges expiry at.
#[derive(Debug, Clone)]
pub struct ReadAt {
    pub revision: u64,
    pub time: ExpiryTime,
}

/// How long a follower whose disk is full waits to apply a read's
/// revision before it sends the reader elsewhere.
const FULL_PATIENCE: Duration = Duration::from_millis(250);

pub struct ReadGate {
    pub proposer: Arc<Proposer>,
    pub state: Arc<StateStore>,
    /// Longest a read waits for this node to apply what it must.
    pub timeout: Duration,
}

impl ReadGate {
    /// Waits until this node may serve the read, and says at what revision
    /// and time.
    pub async fn ready(&self, opts: Option<&pb::ReadOptions>) -> Result<ReadAt, Status> {
        let opts = opts.cloned().unwrap_or_default();
        let (revision, leader_time) = match pb::Consistency::try_from(opts.consistency) {
            Ok(pb::Consistency::Stale) => {
                return Ok(ReadAt {
                    revision: self.state.applied_index(),
                    time: ExpiryTime::At(self.state.applied_clock()),
                });
            }
            Ok(pb::Consistency::AtLeast) => (self.wait_applied(opts.min_revision).await?, 0),
            Ok(pb::Consistency::Linearizable) => {
                let point = stage("read_index", self.proposer.read_point())
                    .await
                    .map_err(Status::from)?;
                (self.wait_applied(point.index).await?, point.time_ms)
            }
            Err(_) => return Err(status::invalid(format!("unknown consistency {}", opts.consistency))),
        };
        let time = match self.proposer.clock().check() {
            Ok(()) => ExpiryTime::At(leader_time.max(self.state.applied_clock())),
            Err(e) => ExpiryTime::Unknown(e.to_string().into()),
        };
        Ok(ReadAt { revision, time })
    }

    /// Waits until this node has applied `index`. A follower whose disk is
    /// full takes no client writes, so it may never get there: it waits
    /// only [`FULL_PATIENCE`], and the client reads elsewhere.
    pub async fn wait_applied(&self, index: u64) -> Result<u64, Status> {
        let mut rx = self.state.subscribe_applied();
        let full = self.proposer.disk().report().full && !self.proposer.leader_view().is_leader();
        let patience = if full {
            FULL_PATIENCE.min(self.timeout)
        } else {
            self.timeout
        };
        let waited = tokio::time::timeout(patience, rx.wait_for(|a| *a >= index));
        let applied = stage("apply_wait", waited)
            .await
            .map_err(|_| {
                let why = if full {
                    " (its disk is full: it takes no writes)"
                } else {
                    ""
                };
                status::unavailable(
                    Reason::Behind,
                    format!(
                        "this node has applied revision {} and did not reach {index} within {patience:?}{why}; \
                         try another node",
                        self.state.applied_index(),
                    ),
                    None,
                )
            })?
            .map_err(|_| status::unavailable(Reason::Shutdown, "node is shutting down", None))?;
        Ok(*applied)
    }
}

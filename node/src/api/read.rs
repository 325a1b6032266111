//! The read gate: before a read is served from local state, make sure this
//! node has applied enough for the consistency the caller asked for.
//!
//! - Linearizable: ask the leader for a read index (the leader confirms it is
//!   still leader with a quorum round, so a deposed or paused leader cannot
//!   answer), then wait until this node has applied it.
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

use handlestore_proto::internal::v1 as ipb;
use handlestore_proto::reason;
use handlestore_proto::v1 as pb;
use openraft::ServerState;
use tonic::Status;

use crate::raft::network::Peers;
use crate::raft::proposer::{ProposeError, Proposer};
use crate::raft::read_index::ReadPoint;
use crate::state::{ExpiryTime, StateStore};
use crate::status;

/// Where a read stands: the revision it observes (at least), and the time
/// it judges expiry at.
#[derive(Debug, Clone)]
pub struct ReadAt {
    pub revision: u64,
    pub time: ExpiryTime,
}

pub struct ReadGate {
    pub proposer: Arc<Proposer>,
    pub state: Arc<StateStore>,
    pub raft_peers: Arc<Peers>,
    pub timeout: Duration,
    pub quorum_silence: Duration,
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
                let point = self.read_index().await?;
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

    async fn read_index(&self) -> Result<ReadPoint, Status> {
        let view = self.proposer.leader_view();
        if view.state == ServerState::Leader {
            if let Some(ms) = view.millis_since_quorum_ack
                && ms > self.quorum_silence.as_millis() as u64
            {
                return Err(ProposeError::NoQuorum(format!(
                    "no quorum: the leader has not heard from a majority for {ms} ms; cannot serve a linearizable read"
                ))
                .to_status());
            }
            return tokio::time::timeout(self.timeout, self.proposer.read_index())
                .await
                .map_err(|_| self.timed_out("confirming leadership"))?
                .map_err(|e| e.to_status());
        }
        let Some(leader) = view.leader.filter(|l| !l.addr.is_empty()) else {
            return Err(ProposeError::NotLeader(None).to_status());
        };
        let mut client = self
            .raft_peers
            .raft_client(&leader.addr)
            .map_err(|e| status::unavailable(reason::LEADER_UNREACHABLE, e.to_string(), Some(&leader)))?;
        let mut req = tonic::Request::new(ipb::ReadIndexRequest {});
        req.set_timeout(self.timeout);
        match client.read_index(req).await {
            Ok(r) => Ok(ReadPoint {
                index: r.get_ref().index,
                time_ms: r.get_ref().leader_time_ms,
            }),
            Err(s) if !s.details().is_empty() => Err(s),
            Err(s) => Err(status::unavailable(
                reason::LEADER_UNREACHABLE,
                format!(
                    "could not get a read index from the leader (node {} at {}): {}",
                    leader.id,
                    leader.addr,
                    s.message()
                ),
                Some(&leader),
            )),
        }
    }

    async fn wait_applied(&self, index: u64) -> Result<u64, Status> {
        let mut rx = self.state.subscribe_applied();
        let applied = tokio::time::timeout(self.timeout, rx.wait_for(|a| *a >= index))
            .await
            .map_err(|_| {
                status::unavailable(
                    reason::BEHIND,
                    format!(
                        "this node has applied revision {} and did not reach {index} within {:?}; try another node",
                        self.state.applied_index(),
                        self.timeout
                    ),
                    None,
                )
            })?
            .map_err(|_| status::unavailable(reason::SHUTDOWN, "node is shutting down", None))?;
        Ok(*applied)
    }

    fn timed_out(&self, what: &str) -> Status {
        status::unavailable(
            reason::TIMEOUT,
            format!("{what} took longer than {:?} (no quorum?)", self.timeout),
            None,
        )
    }
}

//! The read gate: before a read is served from local state, make sure this
//! node has applied enough for the consistency the caller asked for.
//!
//! - Linearizable: ask the leader for a read index (the leader confirms it is
//!   still leader with a quorum round, so a deposed or paused leader cannot
//!   answer), then wait until this node has applied it.
//! - AtLeast(revision): wait until this node has applied `revision`.
//! - Stale: serve what is applied now.

use std::sync::Arc;
use std::time::Duration;

use handlestore_proto::v1 as pb;
use openraft::ServerState;
use tonic::Status;

use crate::raft::network::Peers;
use crate::raft::proposer::{ProposeError, Proposer};
use crate::state::StateStore;
use crate::status;

pub struct ReadGate {
    pub proposer: Arc<Proposer>,
    pub state: Arc<StateStore>,
    pub raft_peers: Arc<Peers>,
    pub timeout: Duration,
    pub quorum_silence: Duration,
}

impl ReadGate {
    /// Returns the revision the read will observe (at least).
    pub async fn ready(&self, opts: Option<&pb::ReadOptions>) -> Result<u64, Status> {
        let opts = opts.cloned().unwrap_or_default();
        match pb::Consistency::try_from(opts.consistency) {
            Ok(pb::Consistency::Stale) => Ok(self.state.applied_index()),
            Ok(pb::Consistency::AtLeast) => self.wait_applied(opts.min_revision).await,
            Ok(pb::Consistency::Linearizable) => {
                let index = self.read_index().await?;
                self.wait_applied(index).await
            }
            Err(_) => Err(status::invalid(format!("unknown consistency {}", opts.consistency))),
        }
    }

    async fn read_index(&self) -> Result<u64, Status> {
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
            .map_err(|e| status::unavailable("leader_unreachable", e.to_string(), Some(&leader)))?;
        let mut req = tonic::Request::new(pb::ReadIndexRequest {});
        req.set_timeout(self.timeout);
        match client.read_index(req).await {
            Ok(r) => Ok(r.into_inner().index),
            Err(s) if !s.details().is_empty() => Err(s),
            Err(s) => Err(status::unavailable(
                "leader_unreachable",
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
                    "behind",
                    format!(
                        "this node has applied revision {} and did not reach {index} within {:?}; try another node",
                        self.state.applied_index(),
                        self.timeout
                    ),
                    None,
                )
            })?
            .map_err(|_| status::unavailable("shutdown", "node is shutting down", None))?;
        Ok(*applied)
    }

    fn timed_out(&self, what: &str) -> Status {
        status::unavailable(
            "timeout",
            format!("{what} took longer than {:?} (no quorum?)", self.timeout),
            None,
        )
    }
}

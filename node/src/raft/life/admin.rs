//! Cluster administration through Raft: the status view, membership
//! changes, snapshots. The Admin service ([`api::admin`](crate::api::admin)) calls these and
//! never openraft itself.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use handlestore_proto::v1 as pb;
use openraft::ServerState;

use crate::config::Member;

use crate::raft::error::{ProposeError, raft_error};
use crate::raft::life::transfer::{self, Transferred};
use crate::raft::net::network::Peers;
use crate::raft::net::protocol::PeerProtocols;
use crate::raft::reads::lease::ReadLease;
use crate::raft::reads::tenure::Tenure;
use crate::raft::writes::batch::WriteGate;
use crate::raft::{NodeId, Raft};

/// What Raft says of this node, for `Admin.Status`.
#[derive(Debug, Clone)]
pub struct RaftStatus {
    /// "leader", "leader (no quorum)", "follower", "candidate",
    /// "learner", "shutdown" (`state_name`).
    pub state: &'static str,
    pub term: u64,
    pub last_log_index: u64,
    pub applied_index: u64,
    pub snapshot_index: u64,
    pub purged_index: u64,
    /// Since the leader last heard from a quorum (leader only).
    pub millis_since_quorum_ack: Option<u64>,
    /// The leader this node knows, if any.
    pub leader: Option<NodeId>,
    /// On the leader: each other member's last log index known to be on
    /// its disk (0: none yet).
    pub followers: Vec<(NodeId, u64)>,
}

/// Membership, snapshots, leadership and status over one node's Raft.
#[derive(Clone)]
pub struct RaftAdmin {
    raft: Raft,
    protocols: Arc<PeerProtocols>,
    /// Channels to the other nodes, for leader transfer.
    peers: Arc<Peers>,
    /// Holds this node's writes back during a leader transfer.
    writes: WriteGate,
    /// Suspended during a leader transfer.
    lease: Arc<ReadLease>,
    /// How long this node, as leader, has not heard from a majority.
    tenure: Arc<Tenure>,
    /// The longest election timeout (a follower's lease).
    election_max: Duration,
}

/// How long a leader stopping on SIGTERM tries to hand leadership over
/// before it stops anyway.
pub const HANDOVER_WITHIN: Duration = Duration::from_secs(3);

/// How long `member transfer-leader` may take.
pub const TRANSFER_WITHIN: Duration = Duration::from_secs(10);

impl RaftAdmin {
    pub fn new(
        raft: Raft,
        protocols: Arc<PeerProtocols>,
        peers: Arc<Peers>,
        writes: WriteGate,
        lease: Arc<ReadLease>,
        tenure: Arc<Tenure>,
        election_max: Duration,
    ) -> Self {
        Self {
            raft,
            protocols,
            peers,
            writes,
            lease,
            tenure,
            election_max,
        }
    }

    /// Hands leadership to `to` (None: the most caught-up voter); this
    /// node must lead.
    pub async fn transfer_leader(&self, to: Option<NodeId>, within: Duration) -> Result<Transferred, ProposeError> {
        self.transfer(to, &[], false, within).await
    }

    /// Hands leadership to the most caught-up voter not in `avoid`.
    pub async fn transfer_leader_avoiding(
        &self,
        avoid: &[NodeId],
        within: Duration,
    ) -> Result<Transferred, ProposeError> {
        self.transfer(None, avoid, false, within).await
    }

    async fn transfer(
        &self,
        to: Option<NodeId>,
        avoid: &[NodeId],
        give_up_on_silence: bool,
        within: Duration,
    ) -> Result<Transferred, ProposeError> {
        let cluster = transfer::Cluster {
            raft: &self.raft,
            peers: &self.peers,
            writes: &self.writes,
            lease: &self.lease,
            election_max: self.election_max,
            give_up_on_silence,
        };
        transfer::transfer(&cluster, transfer::Target { to, avoid }, within).await
    }

    /// If this node leads a cluster of more than one voter, hands
    /// leadership over before it stops (SIGTERM), so writes wait one round
    /// trip instead of an election timeout; logs how it went.
    pub async fn hand_over(&self) {
        let m = self.raft.metrics().borrow().clone();
        if m.state != ServerState::Leader || m.membership_config.membership().voter_ids().count() < 2 {
            return;
        }
        let deadline = std::time::Instant::now() + HANDOVER_WITHIN;
        // Voters that said they are stopping too (the whole cluster is
        // being stopped, say): the next is asked, none waited for.
        let mut stopping = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.transfer(None, &stopping, true, left).await {
                Ok(t) => {
                    tracing::info!(
                        to = t.to,
                        term = t.term,
                        took_ms = t.took.as_millis() as u64,
                        "stopping: handed leadership over"
                    );
                    return;
                }
                Err(ProposeError::TargetStopping(id)) => stopping.push(id),
                Err(ProposeError::Precondition(m)) if m == transfer::NO_OTHER_VOTER && !stopping.is_empty() => {
                    tracing::info!(
                        ?stopping,
                        "stopping: the other voters are stopping too; no leadership to hand over"
                    );
                    return;
                }
                Err(e) => {
                    tracing::warn!(
                        "stopping: could not hand leadership over ({e}); the others elect a leader after an election timeout"
                    );
                    return;
                }
            }
        }
    }

    /// What each peer speaks, and why this node cannot talk to one.
    pub fn peer_protocols(&self) -> Vec<pb::PeerProtocol> {
        self.protocols
            .report()
            .into_iter()
            .map(|p| pb::PeerProtocol {
                id: p.id,
                version: p.version,
                problem: p.problem.unwrap_or_default(),
            })
            .collect()
    }

    /// Every member, voters and learners, with its address.
    pub fn members(&self) -> Vec<pb::Member> {
        let metrics = self.raft.metrics();
        let m = metrics.borrow();
        let membership = m.membership_config.membership();
        let voters: BTreeSet<NodeId> = membership.voter_ids().collect();
        membership
            .nodes()
            .map(|(id, node)| pb::Member {
                id: *id,
                addr: node.addr.clone(),
                peer_addr: node.peer_addr.clone(),
                voter: voters.contains(id),
            })
            .collect()
    }

    pub fn status(&self) -> RaftStatus {
        let metrics = self.raft.metrics();
        let m = metrics.borrow();
        let silent = self.tenure.silence(&m).is_some_and(|d| d > self.election_max);
        RaftStatus {
            state: state_name(m.state, silent),
            term: m.current_term,
            last_log_index: m.last_log_index.unwrap_or(0),
            applied_index: m.last_applied.map(|l| l.index).unwrap_or(0),
            snapshot_index: m.snapshot.map(|l| l.index).unwrap_or(0),
            purged_index: m.purged.map(|l| l.index).unwrap_or(0),
            millis_since_quorum_ack: if m.state == ServerState::Leader {
                m.millis_since_quorum_ack
            } else {
                None
            },
            leader: m.current_leader,
            followers: m
                .replication
                .iter()
                .flatten()
                .filter(|(id, _)| **id != m.id)
                .map(|(id, matched)| (*id, matched.map(|l| l.index).unwrap_or(0)))
                .collect(),
        }
    }

    /// Adds a learner (on the leader); answers with the membership's log
    /// index.
    pub async fn add_learner(&self, id: NodeId, member: Member, blocking: bool) -> Result<u64, ProposeError> {
        let resp = self.raft.add_learner(id, member, blocking).await.map_err(raft_error)?;
        Ok(resp.log_id.index)
    }

    /// Replaces the voters (on the leader); `retain` keeps removed voters
    /// as learners.
    pub async fn change_membership(&self, voters: BTreeSet<NodeId>, retain: bool) -> Result<u64, ProposeError> {
        let resp = self.raft.change_membership(voters, retain).await.map_err(raft_error)?;
        Ok(resp.log_id.index)
    }

    /// Builds a snapshot covering at least `applied` and purges the log
    /// behind it; answers with the snapshot's index and how far the purge
    /// got (openraft delays a purge while a replication stream still reads
    /// those entries).
    pub async fn snapshot(&self, applied: u64) -> Result<(u64, u64), ProposeError> {
        let snapshot_index = self.build_snapshot(applied).await?;
        self.raft
            .trigger()
            .purge_log(snapshot_index)
            .await
            .map_err(|e| ProposeError::Stopped(e.to_string()))?;
        let _ = self
            .raft
            .wait(Some(Duration::from_secs(10)))
            .metrics(|m| m.purged.is_some_and(|p| p.index >= snapshot_index), "log purged")
            .await;
        let purged_index = self.raft.metrics().borrow().purged.map(|p| p.index).unwrap_or(0);
        Ok((snapshot_index, purged_index))
    }

    /// Triggers snapshots until one covers `applied`. openraft ignores a
    /// trigger while a snapshot is being built (one the log's policy
    /// started, say), and that one may end below `applied`: trigger again.
    async fn build_snapshot(&self, applied: u64) -> Result<u64, ProposeError> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            self.raft
                .trigger()
                .snapshot()
                .await
                .map_err(|e| ProposeError::Stopped(e.to_string()))?;
            let built = self
                .raft
                .wait(Some(Duration::from_secs(2)))
                .metrics(|m| m.snapshot.is_some_and(|s| s.index >= applied), "snapshot built")
                .await;
            if let Ok(m) = built {
                return Ok(m.snapshot.map(|s| s.index).unwrap_or(0));
            }
            if tokio::time::Instant::now() >= deadline {
                let at = self.raft.metrics().borrow().snapshot.map(|s| s.index).unwrap_or(0);
                return Err(ProposeError::TookTooLong(format!(
                    "snapshot not built: none covers revision {applied} after 60s (the latest is at {at})"
                )));
            }
        }
    }
}

/// What a node reports itself as. A leader that has not heard from a
/// majority for longer than the longest election timeout (`silent`) is
/// "leader (no quorum)": it refuses writes and reads by then (the
/// proposer's `quorum_silence`), and the followers elect another leader
/// only after their lease and an election timeout more, so no two nodes
/// report themselves plain "leader" (openraft 0.9 has no check-quorum
/// step-down; this is what it can say safely).
fn state_name(s: ServerState, silent: bool) -> &'static str {
    match s {
        ServerState::Leader if silent => "leader (no quorum)",
        ServerState::Leader => "leader",
        ServerState::Follower => "follower",
        ServerState::Candidate => "candidate",
        ServerState::Learner => "learner",
        ServerState::Shutdown => "shutdown",
    }
}

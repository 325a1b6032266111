//! Why a write or a read index was refused, in one vocabulary for the
//! proposer, the read index and the admin calls. These are domain errors:
//! `crate::status` maps them to gRPC statuses through the error table.

use std::time::Duration;

use openraft::error::{ClientWriteError, RaftError};

use super::NodeId;
use crate::clock::ClockError;
use crate::status::LeaderHint;

/// Why a write (or a read index, or an admin change) was not (known to
/// be) done.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProposeError {
    #[error("{}", not_leader(.0.as_ref()))]
    NotLeader(Option<LeaderHint>),
    /// Leadership could not be confirmed: openraft said why.
    #[error("{0}")]
    NotConfirmed(String),
    #[error("{0}")]
    NoQuorum(String),
    #[error("write not committed within {0:?}; it may still be applied: retry with the same write id")]
    Timeout(Duration),
    /// Something other than a write's commit took too long.
    #[error("{0}")]
    TookTooLong(String),
    /// The leader could not be reached from this follower.
    #[error("{1}")]
    LeaderUnreachable(LeaderHint, String),
    #[error("node is shutting down")]
    Shutdown,
    /// Raft is not running (any more) on this node.
    #[error("raft is not running: {0}")]
    Stopped(String),
    /// This node's disk, or a majority of the voters', is under its
    /// reserve: no client writes are taken.
    #[error("{0}")]
    DiskFull(String),
    /// This node (the leader) may not stamp time: its clock is off.
    #[error("{0}")]
    Clock(ClockError),
    /// The voter asked to take leadership over is stopping too.
    #[error("node {0} is stopping and will not take leadership over")]
    TargetStopping(NodeId),
    /// What the cluster's state does not allow now (no voter to hand
    /// leadership to, say).
    #[error("{0}")]
    Precondition(String),
    /// A bug: what should not happen did.
    #[error("{0}")]
    Internal(String),
    /// The leader's own answer to a forwarded call, passed on as it came.
    #[error("{}", .0.message())]
    Remote(tonic::Status),
}

fn not_leader(hint: Option<&LeaderHint>) -> String {
    match hint {
        Some(h) => format!("not the leader; the leader is node {} at {}", h.id, h.addr),
        None => "no leader is known right now (election in progress or no quorum)".into(),
    }
}

pub(super) fn write_error(e: ClientWriteError<NodeId, crate::config::Member>) -> ProposeError {
    match e {
        ClientWriteError::ForwardToLeader(f) => {
            ProposeError::NotLeader(f.leader_id.map(|id| LeaderHint::new(id, f.leader_node.as_ref())))
        }
        ClientWriteError::ChangeMembershipError(e) => ProposeError::Internal(e.to_string()),
    }
}

/// Maps errors of `Raft` calls that confirm leadership (read-index,
/// membership changes) to the same vocabulary.
pub fn raft_error<E: std::fmt::Display>(e: RaftError<NodeId, E>) -> ProposeError {
    match e {
        RaftError::Fatal(_) => ProposeError::Shutdown,
        RaftError::APIError(e) => ProposeError::NotConfirmed(e.to_string()),
    }
}

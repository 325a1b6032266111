//! Why a write or a read index was refused, in one vocabulary for the
//! proposer, the read index and the admin calls. These are domain errors:
//! each has its reason in the error table, and `crate::status` makes the
//! gRPC status of it.

use std::time::Duration;

use openraft::error::{ClientWriteError, RaftError};

use crate::clock::ClockError;
use crate::raft::NodeId;
use handlestore_proto::reason::Reason;
use handlestore_proto::v1 as pb;
use tonic::Status;

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

/// Who the leader is, as far as this node knows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaderHint {
    pub id: u64,
    /// Where clients reach the leader (what they are told).
    pub addr: String,
    /// Where other nodes reach it; empty: at `addr`.
    pub peer_addr: String,
}

impl LeaderHint {
    pub fn new(id: u64, member: Option<&crate::config::Member>) -> Self {
        let member = member.cloned().unwrap_or_default();
        Self {
            id,
            addr: member.addr,
            peer_addr: member.peer_addr,
        }
    }

    /// Where other nodes reach the leader.
    pub fn peer(&self) -> &str {
        crate::config::peer_of(&self.addr, &self.peer_addr)
    }
}

impl ProposeError {
    /// The table's reason for a refused write or read index (none: the
    /// leader's own status, passed on, named none).
    pub fn reason(&self) -> Option<Reason> {
        Some(match self {
            ProposeError::NotLeader(_) | ProposeError::NotConfirmed(_) => Reason::NotLeader,
            ProposeError::NoQuorum(_) => Reason::NoQuorum,
            ProposeError::Timeout(_) | ProposeError::TookTooLong(_) => Reason::Timeout,
            ProposeError::LeaderUnreachable(..) => Reason::LeaderUnreachable,
            ProposeError::Shutdown | ProposeError::Stopped(_) => Reason::Shutdown,
            ProposeError::Clock(_) => Reason::ClockOffset,
            ProposeError::DiskFull(_) => Reason::DiskFull,
            ProposeError::Precondition(_) | ProposeError::TargetStopping(_) => Reason::Precondition,
            ProposeError::Internal(_) => Reason::Internal,
            ProposeError::Remote(s) => return Reason::of(s),
        })
    }
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

impl From<ProposeError> for Status {
    fn from(e: ProposeError) -> Status {
        let message = e.to_string();
        match (e.reason(), e) {
            (_, ProposeError::Remote(s)) => s,
            (Some(reason), ProposeError::NotLeader(hint)) => unavailable(reason, message, hint.as_ref()),
            (Some(reason), ProposeError::LeaderUnreachable(leader, _)) => unavailable(reason, message, Some(&leader)),
            (Some(reason), _) => reason.status(message),
            (None, _) => Reason::Internal.status(message),
        }
    }
}

/// An UNAVAILABLE status naming the leader, when it is known.
pub fn unavailable(reason: Reason, message: impl Into<String>, leader: Option<&LeaderHint>) -> Status {
    debug_assert_eq!(reason.code(), tonic::Code::Unavailable, "{reason}");
    let mut detail = pb::ErrorDetail::default();
    if let Some(l) = leader {
        detail.leader_id = l.id;
        detail.leader_addr = l.addr.clone();
    }
    reason.status_with(message, detail)
}

//! Why a write or a read index was refused, in one vocabulary for the
//! proposer, the read index and the admin calls, and how each maps to a
//! gRPC status.

use std::time::Duration;

use handlestore_proto::reason;
use openraft::error::{ClientWriteError, RaftError};

use super::NodeId;
use crate::clock::ClockError;
use crate::status::{self, LeaderHint};

/// Why a write was not (known to be) applied.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProposeError {
    #[error("this node is not the leader")]
    NotLeader(Option<LeaderHint>),
    #[error("{0}")]
    NoQuorum(String),
    #[error("write not committed within {0:?}; it may still be applied: retry with the same write id")]
    Timeout(Duration),
    #[error("node is shutting down")]
    Shutdown,
    /// This node (the leader) may not stamp time: its clock is off.
    #[error("{0}")]
    Clock(ClockError),
    #[error("{0}")]
    Remote(tonic::Status),
}

impl ProposeError {
    pub fn to_status(&self) -> tonic::Status {
        match self {
            ProposeError::NotLeader(hint) => status::unavailable(
                reason::NOT_LEADER,
                match hint {
                    Some(h) => format!("not the leader; the leader is node {} at {}", h.id, h.addr),
                    None => "no leader is known right now (election in progress or no quorum)".into(),
                },
                hint.as_ref(),
            ),
            ProposeError::NoQuorum(msg) => status::unavailable(reason::NO_QUORUM, msg.clone(), None),
            ProposeError::Timeout(_) => status::unavailable(reason::TIMEOUT, self.to_string(), None),
            ProposeError::Shutdown => status::unavailable(reason::SHUTDOWN, self.to_string(), None),
            ProposeError::Clock(e) => status::clock(e),
            ProposeError::Remote(s) => s.clone(),
        }
    }
}

pub(super) fn write_error(e: ClientWriteError<NodeId, crate::config::Member>) -> ProposeError {
    match e {
        ClientWriteError::ForwardToLeader(f) => {
            ProposeError::NotLeader(f.leader_id.map(|id| LeaderHint::new(id, f.leader_node.as_ref())))
        }
        ClientWriteError::ChangeMembershipError(e) => ProposeError::Remote(status::internal(e.to_string())),
    }
}

/// Maps errors of `Raft` calls that confirm leadership (read-index,
/// membership changes) to the same vocabulary.
pub fn raft_error<E: std::fmt::Display>(e: RaftError<NodeId, E>) -> ProposeError {
    match e {
        RaftError::Fatal(_) => ProposeError::Shutdown,
        RaftError::APIError(e) => ProposeError::Remote(status::unavailable(reason::NOT_LEADER, e.to_string(), None)),
    }
}

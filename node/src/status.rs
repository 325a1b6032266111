//! The node's errors as gRPC statuses: the domain errors of `raft/`,
//! `state/` and `clock` mapped to a reason of the error table
//! (`handlestore_proto::reason`), which fixes the code. Statuses are made
//! by the table and mapped here; the services in `api/` (and the peer
//! service's answers) use nothing else.

use std::cell::Cell;

use handlestore_proto::internal::v1 as ipb;
use handlestore_proto::reason::Reason;
use handlestore_proto::v1 as pb;
use tonic::Status;

use crate::raft::error::ProposeError;

/// Metadata key carrying the leader's client address, for clients that
/// follow the leader instead of being forwarded: on UNAVAILABLE answers,
/// and on the answer to a write this node forwarded to the leader.
pub use handlestore_proto::meta::LEADER_HEADER as LEADER_ADDR_HEADER;

tokio::task_local! {
    /// Where the request being served was forwarded, if it was: set by the
    /// write path, turned into a `LEADER_ADDR_HEADER` on the answer by
    /// [`leader_header`].
    static FORWARDED_TO: Cell<Option<String>>;
}

/// Notes that the request being served was forwarded to the leader at
/// `addr`; its answer names that leader. Outside a request (no
/// [`leader_header`] around it) this does nothing.
pub fn note_forwarded(addr: &str) {
    let _ = FORWARDED_TO.try_with(|cell| cell.set(Some(addr.to_string())));
}

/// Middleware around every request: an answer to a write that was forwarded
/// to the leader carries the leader's address, so a client sends its next
/// call there instead of paying the extra hop on every write (after a
/// failover a client may have settled on a follower).
pub async fn leader_header(req: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    let served = FORWARDED_TO.scope(Cell::new(None), next.run(req));
    tokio::pin!(served);
    let mut resp = (&mut served).await;
    if let Some(addr) = served.as_mut().take_value().and_then(Cell::into_inner)
        && let Ok(v) = addr.parse()
    {
        resp.headers_mut().insert(LEADER_ADDR_HEADER, v);
    }
    resp
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

/// The status for a command the state machine refused (its result code
/// and message, deterministic on every node).
pub fn refused(r: &ipb::CommandResult) -> Status {
    use ipb::ResultCode as R;
    let reason = match R::try_from(r.code) {
        Ok(R::ResultOk) | Err(_) => Reason::Internal,
        Ok(R::ResultNotFound) => Reason::NotFound,
        Ok(R::ResultAlreadyExists) => Reason::AlreadyExists,
        Ok(R::ResultRevisionMismatch) => Reason::RevisionMismatch,
        Ok(R::ResultInvalid) => Reason::InvalidArgument,
        Ok(R::ResultPrecondition) => Reason::Precondition,
        Ok(R::ResultStaleWrite) => Reason::StaleWrite,
        Ok(R::ResultQuota) => Reason::Quota,
        // Only when the node's own retries ran out (write_authorized).
        Ok(R::ResultAuthStale) => Reason::AuthChanging,
    };
    let detail = pb::ErrorDetail {
        current_revision: r.current_revision,
        ..Default::default()
    };
    reason.status_with(r.message.clone(), detail)
}

/// The table's reason for a refused write or read index (none: the
/// leader's own status, passed on, named none).
pub fn reason_of(e: &ProposeError) -> Option<Reason> {
    Some(match e {
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

impl From<ProposeError> for Status {
    fn from(e: ProposeError) -> Status {
        let message = e.to_string();
        match (reason_of(&e), e) {
            (_, ProposeError::Remote(s)) => s,
            (Some(reason), ProposeError::NotLeader(hint)) => unavailable(reason, message, hint.as_ref()),
            (Some(reason), ProposeError::LeaderUnreachable(leader, _)) => unavailable(reason, message, Some(&leader)),
            (Some(reason), _) => reason.status(message),
            (None, _) => Reason::Internal.status(message),
        }
    }
}

pub fn invalid(message: impl Into<String>) -> Status {
    Reason::InvalidArgument.status(message)
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

pub fn internal(message: impl Into<String>) -> Status {
    Reason::Internal.status(message)
}

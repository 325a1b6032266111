//! The node's errors as gRPC statuses for the services in `api/`: a
//! command the state machine refused, mapped to a reason of the error
//! table (`handlestore_proto::reason`), which fixes the code, and the
//! shortcuts every service uses. A refused write or read index
//! ([`raft::error::ProposeError`](crate::raft::error::ProposeError)) becomes a status by its own reason,
//! where it is defined, so the peer service below can answer with it.

use handlestore_proto::internal::v1 as ipb;
use handlestore_proto::reason::Reason;
use handlestore_proto::v1 as pb;
use tonic::Status;

/// An UNAVAILABLE status naming the leader (made where the domain errors
/// are: [`raft::error`](crate::raft::error)).
pub(crate) use crate::raft::unavailable;

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

pub fn invalid(message: impl Into<String>) -> Status {
    Reason::InvalidArgument.status(message)
}

pub fn internal(message: impl Into<String>) -> Status {
    Reason::Internal.status(message)
}

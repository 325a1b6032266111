//! The client's error type: one variant per gRPC status class a caller acts
//! on differently.

use std::time::Duration;

use handlestore_proto::v1 as pb;
use tonic::Code;

pub use handlestore_proto::reason::{Reason, Retry};

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error of the client. A node's refusal keeps the node's message and,
/// where one class has several causes, its reason (the error table:
/// docs/consistency.md); [`Error::reason`] gives the reason of any error.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// Malformed id, store name, TTL, or a value over the size limit.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error("not found: {0}")]
    NotFound(String),
    #[error("already exists: {0}")]
    AlreadyExists(String),
    /// Compare-and-set lost: the entry is now at `current_revision` (0:
    /// absent). Reason `revision_mismatch`, and only that.
    #[error("revision mismatch: {message}")]
    Conflict { current_revision: u64, message: String },
    /// The cluster's state does not allow the change (reason
    /// `precondition`: e.g. retiring the key ring's primary key), or the
    /// write id was already declared done (`stale_write`). Retrying the
    /// same call fails the same way.
    #[error("failed precondition: {message}")]
    Precondition { reason: Option<Reason>, message: String },
    /// No quorum, no leader, or no node reachable; the write was not
    /// acknowledged (a retry with the same write id is safe). `reason`:
    /// the node's, when a node answered.
    #[error("unavailable: {message}")]
    Unavailable { reason: Option<Reason>, message: String },
    /// The call's overall deadline passed while retrying. The outcome of a
    /// write is unknown.
    #[error("deadline of {deadline:?} exceeded; last error: {last}")]
    Deadline { deadline: Duration, last: String },
    #[error("unauthenticated: {0}")]
    Unauthenticated(String),
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    /// A namespace's quota is full (reason `quota`), or a watcher fell
    /// behind (`slow_watcher`; the watch streams resume these themselves).
    #[error("resource exhausted: {message}")]
    ResourceExhausted { reason: Option<Reason>, message: String },
    /// A watch from a revision older than the history the node keeps:
    /// read the current state, then watch from its revision + 1.
    #[error("compacted: {message}")]
    Compacted { compact_revision: u64, message: String },
    /// A bug or a storage failure on the node (reason `internal`).
    #[error("internal error on the node: {0}")]
    Internal(String),
    /// The value could not be encoded or decoded as JSON.
    #[error("value codec: {0}")]
    Codec(String),
    /// The store was closed.
    #[error("store is closed")]
    Closed,
    #[error("{0}")]
    Other(String),
}

impl Error {
    /// The reason of the error table this error stands for: the node's own
    /// where a class has several, the class's one otherwise; `None` for
    /// errors no node gave (a deadline, a codec error, a closed store).
    pub fn reason(&self) -> Option<Reason> {
        match self {
            Error::InvalidArgument(_) => Some(Reason::InvalidArgument),
            Error::NotFound(_) => Some(Reason::NotFound),
            Error::AlreadyExists(_) => Some(Reason::AlreadyExists),
            Error::Conflict { .. } => Some(Reason::RevisionMismatch),
            Error::Precondition { reason, .. }
            | Error::Unavailable { reason, .. }
            | Error::ResourceExhausted { reason, .. } => *reason,
            Error::Unauthenticated(_) => Some(Reason::Unauthenticated),
            Error::PermissionDenied(_) => Some(Reason::PermissionDenied),
            Error::Compacted { .. } => Some(Reason::Compacted),
            Error::Internal(_) => Some(Reason::Internal),
            Error::Deadline { .. } | Error::Codec(_) | Error::Closed | Error::Other(_) => None,
        }
    }

    /// Unavailable, for a cause found by the client itself.
    pub fn unavailable(message: impl Into<String>) -> Error {
        Error::Unavailable {
            reason: None,
            message: message.into(),
        }
    }
}

/// What a node said about an error, decoded from the status details.
pub(crate) fn detail(status: &tonic::Status) -> pb::ErrorDetail {
    handlestore_proto::reason::detail(status)
}

/// A write's (or read's) failure, as a node answers it inside a batch, as
/// the status its own method would have returned.
pub(crate) fn status(f: &pb::WriteFailure) -> tonic::Status {
    tonic::Status::with_details(
        tonic::Code::from_i32(f.code),
        f.message.clone(),
        f.details.clone().into(),
    )
}

impl From<tonic::Status> for Error {
    fn from(s: tonic::Status) -> Self {
        let detail = detail(&s);
        let reason = Reason::from_name(&detail.reason);
        let message = s.message().to_string();
        match (s.code(), reason) {
            (Code::OutOfRange, Some(Reason::Compacted)) => Error::Compacted {
                compact_revision: detail.compact_revision,
                message,
            },
            (Code::InvalidArgument | Code::OutOfRange, _) => Error::InvalidArgument(message),
            (Code::NotFound, _) => Error::NotFound(message),
            (Code::AlreadyExists, _) => Error::AlreadyExists(message),
            (Code::FailedPrecondition, Some(Reason::RevisionMismatch)) => Error::Conflict {
                current_revision: detail.current_revision,
                message,
            },
            (Code::FailedPrecondition, reason) => Error::Precondition { reason, message },
            (Code::Unavailable | Code::DeadlineExceeded | Code::Aborted | Code::Cancelled, reason) => {
                Error::Unavailable { reason, message }
            }
            (Code::Unauthenticated, _) => Error::Unauthenticated(message),
            (Code::PermissionDenied, _) => Error::PermissionDenied(message),
            (Code::ResourceExhausted, reason) => Error::ResourceExhausted { reason, message },
            (Code::Internal, Some(Reason::Internal)) => Error::Internal(message),
            (c, _) => Error::Other(format!("{c:?}: {message}")),
        }
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::Codec(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(reason: Reason) -> Error {
        Error::from(reason.status("what the node said"))
    }

    #[test]
    fn only_a_revision_mismatch_is_a_conflict() {
        assert!(matches!(from(Reason::RevisionMismatch), Error::Conflict { .. }));
        for r in [Reason::Precondition, Reason::StaleWrite] {
            let e = from(r);
            assert_eq!(e.reason(), Some(r));
            assert!(matches!(e, Error::Precondition { .. }), "{e:?}");
            assert_eq!(e.to_string(), "failed precondition: what the node said");
        }
    }

    #[test]
    fn every_reason_a_node_sends_is_kept() {
        for r in Reason::ALL {
            let e = from(r);
            // value_too_large is an invalid argument (the class's reason).
            let want = if r == Reason::ValueTooLarge {
                Reason::InvalidArgument
            } else {
                r
            };
            assert_eq!(e.reason(), Some(want), "{e:?}");
        }
    }

    /// The shared error-details vectors (proto/vectors/error_details.json):
    /// a call's status and a write's failure inside a Submit keep the
    /// node's detail in both forms (google.rpc.Status, and the bare
    /// ErrorDetail of the previous release), and find none in the rest.
    #[test]
    fn the_error_details_vectors() {
        let all: serde_json::Value =
            serde_json::from_str(include_str!("../../../proto/vectors/error_details.json")).expect("vectors");
        for case in all["cases"].as_array().expect("cases") {
            let name = case["name"].as_str().expect("name");
            let details = data_encoding::HEXLOWER
                .decode(case["details"].as_str().expect("details").as_bytes())
                .expect("hex");
            let failure = pb::WriteFailure {
                code: i32::try_from(case["code"].as_i64().expect("code")).expect("code"),
                message: case["message"].as_str().expect("message").into(),
                details,
            };
            let call = status(&failure);
            let want = &case["expect"];
            let d = detail(&call);
            let n = |k: &str| want[k].as_u64().unwrap_or(0);
            assert_eq!(d.reason, want["reason"].as_str().unwrap_or(""), "{name}");
            assert_eq!(d.leader_id, n("leader_id"), "{name}");
            assert_eq!(d.leader_addr, want["leader_addr"].as_str().unwrap_or(""), "{name}");
            assert_eq!(d.current_revision, n("current_revision"), "{name}");
            assert_eq!(d.compact_revision, n("compact_revision"), "{name}");
            assert_eq!(Error::from(call).reason(), Reason::from_name(&d.reason), "{name}");
        }
    }
}

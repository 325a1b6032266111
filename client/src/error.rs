//! The client's error type: one variant per gRPC status class a caller acts
//! on differently.

use std::time::Duration;

use handlestore_proto::v1 as pb;
use prost::Message;
use tonic::Code;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    /// Malformed id, store name, TTL, or a value over the size limit.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error("not found: {0}")]
    NotFound(String),
    #[error("already exists: {0}")]
    AlreadyExists(String),
    /// Compare-and-set lost: the entry is now at `current_revision`.
    #[error("revision mismatch: {message}")]
    Conflict { current_revision: u64, message: String },
    /// No quorum, no leader, or no node reachable; the write was not
    /// acknowledged (a retry with the same write id is safe).
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// The call's overall deadline passed while retrying. The outcome of a
    /// write is unknown.
    #[error("deadline of {deadline:?} exceeded; last error: {last}")]
    Deadline { deadline: Duration, last: String },
    #[error("unauthenticated: {0}")]
    Unauthenticated(String),
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    #[error("resource exhausted: {0}")]
    ResourceExhausted(String),
    /// A watch from a revision older than the history the node keeps:
    /// read the current state, then watch from its revision + 1.
    #[error("compacted: {message}")]
    Compacted { compact_revision: u64, message: String },
    /// The value could not be encoded or decoded as JSON.
    #[error("value codec: {0}")]
    Codec(String),
    /// The store was closed.
    #[error("store is closed")]
    Closed,
    #[error("{0}")]
    Other(String),
}

/// What a node said about an error, decoded from the status details.
pub(crate) fn detail(status: &tonic::Status) -> pb::ErrorDetail {
    pb::ErrorDetail::decode(status.details()).unwrap_or_default()
}

impl From<tonic::Status> for Error {
    fn from(s: tonic::Status) -> Self {
        let msg = s.message().to_string();
        match s.code() {
            Code::OutOfRange if detail(&s).reason == handlestore_proto::reason::COMPACTED => Error::Compacted {
                compact_revision: detail(&s).compact_revision,
                message: msg,
            },
            Code::InvalidArgument | Code::OutOfRange => Error::InvalidArgument(msg),
            Code::NotFound => Error::NotFound(msg),
            Code::AlreadyExists => Error::AlreadyExists(msg),
            Code::FailedPrecondition => Error::Conflict {
                current_revision: detail(&s).current_revision,
                message: msg,
            },
            Code::Unavailable | Code::DeadlineExceeded | Code::Aborted | Code::Cancelled => Error::Unavailable(msg),
            Code::Unauthenticated => Error::Unauthenticated(msg),
            Code::PermissionDenied => Error::PermissionDenied(msg),
            Code::ResourceExhausted => Error::ResourceExhausted(msg),
            c => Error::Other(format!("{c:?}: {msg}")),
        }
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::Codec(e.to_string())
    }
}

//! The stable, machine-readable `reason` of an error (`v1::ErrorDetail`),
//! by gRPC code.

// INVALID_ARGUMENT
pub const INVALID_ARGUMENT: &str = "invalid_argument";
pub const VALUE_TOO_LARGE: &str = "value_too_large";
// NOT_FOUND, ALREADY_EXISTS
pub const NOT_FOUND: &str = "not_found";
pub const ALREADY_EXISTS: &str = "already_exists";
// FAILED_PRECONDITION
pub const REVISION_MISMATCH: &str = "revision_mismatch";
pub const PRECONDITION: &str = "precondition";
pub const STALE_WRITE: &str = "stale_write";
// UNAVAILABLE: try again, elsewhere or later.
pub const NOT_LEADER: &str = "not_leader";
pub const NO_QUORUM: &str = "no_quorum";
pub const TIMEOUT: &str = "timeout";
pub const BEHIND: &str = "behind";
pub const LEADER_UNREACHABLE: &str = "leader_unreachable";
pub const SHUTDOWN: &str = "shutdown";
/// This node's clock is out of bounds for what was asked.
pub const CLOCK_OFFSET: &str = "clock_offset";
pub const SNAPSHOT_STREAM: &str = "snapshot_stream";
// OUT_OF_RANGE
/// A watch from a revision older than the history the node keeps.
pub const COMPACTED: &str = "compacted";
// RESOURCE_EXHAUSTED
/// A watcher fell behind the history kept while it was being served.
pub const SLOW_WATCHER: &str = "slow_watcher";
// INTERNAL
pub const INTERNAL: &str = "internal";

/// Missing, malformed or unknown credentials (UNAUTHENTICATED).
pub const UNAUTHENTICATED: &str = "unauthenticated";
/// The caller's roles do not grant the call (PERMISSION_DENIED).
pub const PERMISSION_DENIED: &str = "permission_denied";
/// The auth state kept changing while a call was being authorized
/// (UNAVAILABLE: retry).
pub const AUTH_CHANGING: &str = "auth_changing";
/// A write would take its namespace over a quota (RESOURCE_EXHAUSTED).
pub const QUOTA: &str = "quota";

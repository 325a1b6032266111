//! gRPC metadata keys.

/// The leader's client address ("host:port"): on UNAVAILABLE answers, and
/// on the answer to a write a follower forwarded to the leader, so a client
/// sends its next call there.
pub use crate::wire::LEADER_HEADER;

/// Credentials: `authorization: Bearer <token>` (a user's token, made by
/// `handlestore user add` or `user token-rotate`).
pub const AUTHORIZATION_HEADER: &str = "authorization";

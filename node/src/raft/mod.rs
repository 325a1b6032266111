//! Raft: openraft's type configuration and the node's consensus, by
//! stage: [`log`] (what openraft stores: the log, its durability and
//! checks, the state machine adapter), [`net`] (the peers: the Raft wire
//! and its client), [`reads`] (read index, lease), [`writes`] (the
//! proposer, batching, the expiry sweep), [`life`] (boot, founding,
//! joining, membership, transfer, the clock and disk guards), and on top
//! [`service`], the peer service that dispatches into all of them. Here:
//! the types every stage shares ([`error`], [`payload`], [`codec`]), and
//! the stages' face to the rest of the node (the `pub use` items below:
//! the stages themselves are private). Everything openraft-specific
//! stays inside this module so an openraft upgrade is contained here; it
//! never imports `status`, `api`, `server` or `cli`.

// openraft's error types (StorageError, RPCError) are large, and their shape
// is fixed by its traits; boxing them here would only add conversions.
#![allow(clippy::result_large_err)]

pub mod codec;
pub mod error;
mod life;
mod log;
mod net;
pub mod payload;
mod reads;
mod service;
mod writes;

// The face of raft/ to the rest of the node: the stages stay private, and
// what `server`, `api`, `cli` and `status` use of them is named here, so a
// stage can change its inside without a caller three levels deep noticing.
pub(crate) use error::{ProposeError, unavailable};
pub(crate) use life::admin::{RaftAdmin, TRANSFER_WITHIN};
pub(crate) use life::restore::restore;
pub(crate) use life::{boot, join};
pub(crate) use log::durability::Durability;
pub(crate) use log::log_check;
pub(crate) use log::log_store::LogStore;
pub(crate) use net::identity::Identity;
pub(crate) use net::network::MAX_PEER_MESSAGE;
pub(crate) use net::peer_wire;
pub(crate) use net::protocol::VERSION as PROTOCOL_VERSION;
pub(crate) use service::{RaftService, append_entries_unsynced};
pub(crate) use writes::forwarded;
pub(crate) use writes::proposer::Proposer;
// For the fuzz tests of every decoder of outside bytes (`crate::fuzz`).
#[cfg(test)]
pub(crate) use log::log_store::decode_entry;

use std::time::{Duration, Instant};

use handlestore_proto::internal::v1 as ipb;

/// Log filter directive for the Raft library's own lines: its info lines
/// are internal detail.
pub const LIBRARY_LOG_FILTER: &str = "openraft=warn";

/// A storage step slower than this is logged as a warning: the first place
/// to look when write latency spikes (etcd warns at the same 100 ms for an
/// apply). Each step is on the path of every write behind it.
pub const SLOW_STORAGE_STEP: Duration = Duration::from_millis(100);

/// Warns that `what` took longer than [`SLOW_STORAGE_STEP`] since `started`.
pub(crate) fn warn_if_slow(what: &str, started: Instant, detail: std::fmt::Arguments<'_>) {
    let took = started.elapsed();
    if took > SLOW_STORAGE_STEP {
        tracing::warn!(took_ms = took.as_millis() as u64, "{what} was slow: {detail}");
    }
}

openraft::declare_raft_types!(
    /// handlestore's Raft types: a log entry carries a batch of commands
    /// (a `Proposal`, shared and encoded once: see `payload`), applying it
    /// yields one result per command.
    pub TypeConfig:
        D = payload::Payload,
        R = ipb::ProposalResult,
        NodeId = u64,
        Node = crate::config::Member,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = tokio::fs::File,
        AsyncRuntime = openraft::TokioRuntime,
);

pub type NodeId = u64;
pub type Raft = openraft::Raft<TypeConfig>;
pub type LogId = openraft::LogId<NodeId>;
pub type Vote = openraft::Vote<NodeId>;
pub type Entry = openraft::Entry<TypeConfig>;
pub type StorageError = openraft::StorageError<NodeId>;
pub type StoredMembership = openraft::StoredMembership<NodeId, crate::config::Member>;
pub type Membership = openraft::Membership<NodeId, crate::config::Member>;
pub type SnapshotMeta = openraft::SnapshotMeta<NodeId, crate::config::Member>;

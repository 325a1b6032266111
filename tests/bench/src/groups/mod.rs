//! The cost of many Raft groups sharing a node, measured before anyone
//! builds them (docs/dev/scale.md, §2 and §7).
//!
//! Three nodes in one process, each on its own thread with one event loop
//! (as a handlestore node runs on two cores), each with its own RocksDB
//! on disk under `--dir`. A node holds a replica of every group: G
//! openraft 0.9 instances whose logs and state share that one database
//! under a 4-byte group prefix (`disk.rs`, `log.rs`, `machine.rs`). Their
//! appends go to the node's log writers: one writer that merges every
//! group's appends queued since its last sync into one write and one
//! `FlushWAL(sync)` (`Writers::Merged`, the design), or a writer per group
//! (`Writers::PerGroup`, what G separate logs would do, left to RocksDB to
//! share syncs if it can). Each append's `LogFlushed` fires after the sync
//! that covers it. Nodes talk over loopback TCP, one connection per node
//! pair in each direction carrying every group's calls, frames tagged
//! with group and call ids and coalesced into one socket write per wake
//! (`wire.rs`; `net.rs` is openraft's side of it). Writes reach a group
//! through its proposer on the leader's node, which batches them into
//! entries as the node's does (`proposer.rs`). `cluster.rs` starts the
//! three and spreads the groups' leaders over them; `cells.rs` is the
//! load and what is measured, `plan.rs` the cells of a run, `report.rs`
//! its tables.
//!
//! Left out, as the cost question does not need them: snapshots (the
//! logs are kept whole for the few seconds of a cell), the node's
//! command set (a write is 300 opaque bytes, a mint's size), TLS on the
//! peer wire, reads.

pub mod cells;
pub mod cluster;
mod disk;
pub mod log;
pub mod machine;
mod net;
mod node;
pub mod plan;
mod proposer;
pub mod report;
mod wire;

use std::io::Cursor;

pub use self::disk::Writers;

openraft::declare_raft_types!(
    /// The groups' type configuration: an entry is opaque bytes.
    pub Cfg:
        D = Vec<u8>,
        R = u64,
        NodeId = u64,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<Cfg>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);

/// One group's Raft on one node.
pub type Raft = openraft::Raft<Cfg>;

type StorageErr = openraft::StorageError<u64>;

/// A write's payload: about one mint's command; an entry carries a batch of them.
pub const WRITE_BYTES: usize = 300;

/// A key of group `gid`: the group's 4-byte big-endian id, then `tail`.
fn key(gid: u32, tail: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(4 + tail.len());
    k.extend_from_slice(&gid.to_be_bytes());
    k.extend_from_slice(tail);
    k
}

/// A storage error for openraft from any error of ours.
fn io_err(e: impl std::fmt::Display) -> StorageErr {
    openraft::StorageIOError::write(&std::io::Error::other(e.to_string())).into()
}

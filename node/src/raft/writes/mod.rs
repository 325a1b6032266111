//! The way in for writes: the proposer (batching into entries on the
//! leader, forwarding from a follower), the batcher, the expiry sweep
//! that proposes deletions. Uses `reads` for read-index reads and `net`
//! to forward; the cluster's life (`life`) sits above it.

pub mod batch;
pub mod forwarded;
pub mod proposer;
pub mod sweeper;

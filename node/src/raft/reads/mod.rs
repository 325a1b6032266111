//! Linearizable reads: the read index (one quorum round for many reads)
//! and the leader's read lease, and how long the leader has gone without
//! a majority. Uses `net` to ask the leader; never proposes.

pub mod lease;
pub mod read_index;
pub mod tenure;

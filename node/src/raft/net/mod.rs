//! The peers: the Raft wire (`peer_wire`) and openraft's network over
//! it, where each is (`names`: resolved at every connection), which peer
//! speaks what, whether each answers, what one
//! AppendEntries may carry and what a full follower takes. Below reads,
//! writes and the cluster's life, which call peers through it.

pub mod append_budget;
pub mod commit_notice;
pub mod identity;
pub mod intake;
pub mod names;
pub mod network;
pub mod peer_wire;
pub mod protocol;
pub mod reach;

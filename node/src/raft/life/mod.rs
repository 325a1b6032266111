//! The cluster's life: starting this node's Raft (`boot`), founding a
//! cluster, joining one by itself (`join`), naming it, membership and
//! status (`admin`), leader transfer, the clock probe and the disk guard
//! that decide who may lead, restoring a backup. It assembles the stages
//! below it.

pub mod admin;
pub mod boot;
pub mod clock_probe;
pub mod disk_guard;
pub mod founding;
pub mod join;
pub mod naming;
pub mod restore;
pub mod transfer;

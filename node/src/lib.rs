//! handlestore node: a Raft-replicated store (Raft + RocksDB) for the
//! state stateless MCP servers need, served over gRPC.
//!
//! Data flows one way: `api` -> `raft` (writes) / `state` (reads);
//! `raft` -> `state` (apply). `state` knows nothing of gRPC, `api` never
//! touches RocksDB. `metrics` is written to by all and reads none: the
//! node hands it what a scrape reads.

pub(crate) mod admission;
pub(crate) mod api;
pub(crate) mod calls;
pub mod cli;
pub(crate) mod clock;
pub(crate) mod config;
pub(crate) mod db;
pub(crate) mod disk;
pub(crate) mod durable_dir;
pub mod failpoints;
pub(crate) mod format;
#[cfg(test)]
mod fuzz;
pub(crate) mod health;
pub(crate) mod logs;
pub(crate) mod memory;
pub(crate) mod metrics;
pub(crate) mod node;
pub(crate) mod ports;
pub(crate) mod raft;
pub(crate) mod readings;
pub(crate) mod state;
pub(crate) mod status;
pub(crate) mod tls;

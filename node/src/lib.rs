//! handlestore node: a Raft-replicated store (Raft + RocksDB) for the
//! state stateless MCP servers need, served over gRPC.
//!
//! Data flows one way: `api` -> `raft` (writes) / `state` (reads);
//! `raft` -> `state` (apply). `state` knows nothing of gRPC, `api` never
//! touches RocksDB.

pub mod api;
pub mod cli;
pub mod clock;
pub mod config;
pub mod db;
pub mod health;
pub mod memory;
pub mod node;
pub mod raft;
pub mod state;
pub mod status;

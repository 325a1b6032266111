//! handlestore node: a Raft-replicated store (Raft + RocksDB) for the
//! state stateless MCP servers need, served over gRPC.
//!
//! Data flows one way, top to bottom (docs/dev/design.md, "The map";
//! tests/tests/layering checks it): `cli` runs a `server`, which
//! assembles the `api` services; they write through `raft` and read
//! `state`; `raft` applies to `state`; both keep their bytes in
//! `storage`. `status` maps the domain errors of the layers below it to
//! gRPC statuses. `config`, `tls`, `clock`, `failpoints` and `observe`
//! (metrics and logs, written to by all, reading none) sit at the bottom.

pub(crate) mod api;
pub mod cli;
pub(crate) mod clock;
pub(crate) mod config;
pub mod failpoints;
#[cfg(test)]
mod fuzz;
pub(crate) mod observe;
pub(crate) mod raft;
pub(crate) mod server;
pub(crate) mod state;
pub(crate) mod status;
pub(crate) mod storage;
pub(crate) mod tls;

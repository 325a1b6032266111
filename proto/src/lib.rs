//! Generated protobuf and gRPC code for handlestore's wire protocol
//! (`proto/handlestore/v1/*.proto`). Generated code only: conversions and
//! logic live in `handlestore-node` and `handlestore-client`.

#![allow(clippy::all, clippy::pedantic)]

/// `handlestore.v1`: handles, state, coalesced writes, admin and node-to-node
/// Raft messages.
pub mod v1 {
    tonic::include_proto!("handlestore.v1");
}

pub use v1::*;

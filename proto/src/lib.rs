//! The wire contract of handlestore, as etcd's `api/` is: the generated
//! protobuf and gRPC code, and the hand-written rules of the wire that the
//! node and the client both hold to (id and key formats and their
//! validation, page tokens, metadata keys, error reasons, protocol limits,
//! and the wire constants and client defaults of `wire.txt`).
//! One place, so the two sides cannot drift apart.
//!
//! Two packages, by audience:
//! - [`v1`] (`handlestore.v1`): the public API (handles, state, writes,
//!   admin), what clients speak;
//! - [`internal::v1`] (`handlestore.internal.v1`): what only nodes speak
//!   and store: peer RPCs, the replicated log's commands, storage records.
//!   Not a stable API; the client crate does not re-export it.

pub mod conn;
pub mod id;
pub mod key;
pub mod limits;
pub mod meta;

/// Every gRPC method, generated from the protos (`build.rs`).
pub mod methods {
    include!(concat!(env!("OUT_DIR"), "/methods.rs"));
}
pub mod reason;
pub mod status_details;
#[cfg(feature = "testkit")]
pub mod testkit;
pub mod watch_out;
pub mod wire;

/// `handlestore.v1`: the public API. Its doc comments are the .proto
/// files', written for every language's generated code (where `<prefix>`
/// is text, not an HTML tag).
#[allow(clippy::all, clippy::pedantic, rustdoc::invalid_html_tags)]
pub mod v1 {
    tonic::include_proto!("handlestore.v1");
}

/// Nodes only: `handlestore.internal.v1`.
pub mod internal {
    /// `handlestore.internal.v1`: peer RPCs, log commands, storage records.
    #[allow(clippy::all, clippy::pedantic, rustdoc::invalid_html_tags)]
    pub mod v1 {
        tonic::include_proto!("handlestore.internal.v1");
    }
}

pub use v1::*;

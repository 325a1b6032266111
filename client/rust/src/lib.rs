//! Client for handlestore, the Raft-replicated store for the state that
//! stateless MCP servers still need.
//!
//! ```no_run
//! use std::time::Duration;
//! use handlestore_client::{Client, ClusterHandleStore, HandleStore, Ttl};
//!
//! #[derive(serde::Serialize, serde::Deserialize, Default, Clone)]
//! struct Cart { items: Vec<String> }
//!
//! # async fn demo() -> handlestore_client::Result<()> {
//! let client = Client::connect(["http://127.0.0.1:7401", "http://127.0.0.1:7402"]).await?;
//! let carts: ClusterHandleStore<Cart> = client
//!     .handle_store("cart")
//!     .default_ttl(Duration::from_secs(3600))
//!     .build();
//! let id = carts.mint(Cart::default(), Ttl::Default).await?;
//! carts.update(&id, &mut |c: &mut Cart| c.items.push("sku-1".into())).await?;
//! let cart: Option<Cart> = carts.get(&id).await?;
//! # Ok(()) }
//! ```

pub mod auth;
pub mod client_state;
pub mod cluster;
pub mod cluster_state;
pub mod cluster_store;
mod coalesce;
pub mod conn;
pub mod error;
mod failover;
pub mod handle_store;
pub mod keyring;
pub mod memory;
pub mod memory_state;
pub mod reads;
pub mod request_state;
pub mod resource_bus;
mod retry;
#[cfg(feature = "rmcp")]
pub mod rmcp_seams;
pub mod single_use;
pub mod state_tool;
mod stubs;
#[cfg(feature = "testkit")]
pub mod testkit;
pub mod tls;
mod transport;
pub mod ttl;
pub mod watch;
mod write_ids;
pub mod writes;

pub use client_state::ClientStateStore;
pub use cluster::{Client, ClientBuilder, Consistency};
pub use cluster_state::ClusterStateTool;
pub use cluster_store::{ClusterHandleStore, ClusterHandleStoreBuilder, Versioned, WriteOutcome};
pub use error::{Error, Reason, Result, Retry};
pub use handle_store::HandleStore;
pub use keyring::RingKey;
pub use memory::{MemoryHandleStore, MemoryOptions};
pub use memory_state::MemoryStateTool;
pub use reads::ReadStats;
pub use request_state::RequestStateCodec;
pub use resource_bus::{ResourceBus, ResourceListener, ResourceUpdate};
pub use single_use::SingleUse;
pub use state_tool::{
    DeleteOptions, Deleted, ListOptions, ListPage, StateEntry, StateTool, StateValue, StoreItem, StoreOptions,
};
pub use tls::ClientTls;
pub use transport::NodeChannel;
pub use ttl::Ttl;
pub use watch::{Change, ChangeKind, Watch, WatchBatch, WatchOptions, WatchTarget};
pub use writes::WriteStats;

/// Handle ids and state keys: their formats and validation, as the node
/// checks them (the wire contract, `handlestore-proto`).
pub use handlestore_proto::{id, key};

/// The public API's generated wire types, for tools that talk to the
/// services directly. (Nodes' internal messages are not exported.)
pub use handlestore_proto::v1 as proto;

//! A subscription bus across replicas: a replica that changes a resource
//! publishes its URI, and every listener, on any replica, hears it. The
//! MCP SDKs fan `notifications/resources/updated` out to the listeners
//! connected to the same process only; here a publish is a replicated
//! write of the state key `mcp/resources/<digest of the URI>` and a
//! listener is a watch on that prefix, so it resumes on another node after
//! a failure and hears every publish made after it started, exactly once.
//!
//! A resource that is a handle (a cart kept in a handle store) needs no
//! publish: [`ResourceBus::following_store`] makes a bus whose listeners
//! hear every change to the store's handles as an update of
//! `<uri prefix><handle id>`, from the same watch, so a change costs one
//! replicated write instead of two.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OnceCell, broadcast};

use serde_json::json;
use sha2::{Digest, Sha256};

use crate::cluster::Client;
use crate::cluster_state::ClusterStateTool;
use crate::error::{Error, Result};
use crate::state_tool::{StateTool, StateValue, StoreOptions};
use crate::ttl::Ttl;
use crate::watch::{Change, ChangeKind, Watch, WatchOptions, WatchTarget};

/// The key prefix updates are published under, in the client's namespace.
pub const RESOURCES_PREFIX: &str = "mcp/resources";
/// A published update's key is kept this long (the last update of each URI).
const KEEP: Duration = Duration::from_secs(3600);
/// Updates a local subscriber may fall behind by before it skips some.
pub const FAN_OUT_BUFFER: usize = 1024;

/// Publishes resource updates; cheap to clone.
#[derive(Clone)]
pub struct ResourceBus {
    client: Client,
    state: ClusterStateTool,
    source: Source,
    /// The process's fan-out: one watch for every local subscriber.
    fan_out: Arc<OnceCell<broadcast::Sender<ResourceUpdate>>>,
}

/// What a bus's listeners hear.
#[derive(Clone, Debug)]
enum Source {
    /// The URIs published under this key prefix.
    Published(String),
    /// The changes to this handle store's handles, each as the URI
    /// `<uri_prefix><handle id>`.
    Store { store: String, uri_prefix: String },
}

impl Source {
    fn target(&self) -> WatchTarget {
        match self {
            Source::Published(prefix) => WatchTarget::prefix(format!("{prefix}/")),
            Source::Store { store, .. } => WatchTarget::store(store.clone()),
        }
    }

    /// The update a watched change is, if it is one.
    fn update(&self, c: Change) -> Option<ResourceUpdate> {
        let uri = match self {
            Source::Published(_) if c.kind == ChangeKind::Put => {
                c.value.as_ref()?.as_json()?.get("uri")?.as_str()?.to_string()
            }
            Source::Published(_) => return None,
            Source::Store { uri_prefix, .. } => format!("{uri_prefix}{}", c.key),
        };
        Some(ResourceUpdate {
            uri,
            revision: c.revision,
        })
    }
}

/// One published update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceUpdate {
    pub uri: String,
    /// The publish's revision: resume a listener after it with
    /// [`ResourceBus::listen_from`]`(revision + 1)`.
    pub revision: u64,
}

impl ResourceBus {
    /// A bus in `client`'s namespace, under [`RESOURCES_PREFIX`].
    pub fn new(client: &Client) -> Self {
        Self {
            client: client.clone(),
            state: client.state_tool(),
            source: Source::Published(RESOURCES_PREFIX.to_string()),
            fan_out: Arc::default(),
        }
    }

    /// A bus whose updates are the changes to the handles of `store` (in
    /// `client`'s namespace): a put, delete or expiry of handle `id` is an
    /// update of `<uri_prefix><id>`, heard once committed, with nothing to
    /// publish. For resources that are handles, as a cart is.
    pub fn following_store(client: &Client, store: impl Into<String>, uri_prefix: impl Into<String>) -> Self {
        Self {
            source: Source::Store {
                store: store.into(),
                uri_prefix: uri_prefix.into(),
            },
            ..Self::new(client)
        }
    }

    /// Another key prefix (several buses in one namespace); a bus that
    /// followed a store publishes under it instead.
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.source = Source::Published(prefix.into());
        self
    }

    /// Tells every listener that `uri` changed; returns once the update is
    /// committed (its revision). A bus [following a
    /// store](Self::following_store) has nothing to publish: its store's
    /// writes are its updates (`InvalidArgument`).
    pub async fn publish(&self, uri: &str) -> Result<u64> {
        let prefix = match &self.source {
            Source::Published(prefix) => prefix,
            Source::Store { store, .. } => {
                return Err(Error::InvalidArgument(format!(
                    "this resource bus follows the handle store {store:?}: its writes are the updates, nothing is published"
                )));
            }
        };
        let digest = Sha256::digest(uri.as_bytes());
        let key = format!("{prefix}/{}", data_encoding::BASE32_NOPAD.encode(&digest[..16]));
        let opts = StoreOptions {
            ttl: Ttl::After(KEEP),
            expected_revision: None,
        };
        let value = StateValue::Json(json!({ "uri": uri }));
        self.state.store(&key, value, opts).await
    }

    /// Listens from now on.
    pub async fn listen(&self) -> Result<ResourceListener> {
        self.listen_with(None).await
    }

    /// Listens from `revision` (inclusive), within the history the nodes
    /// keep ([`crate::Error::Compacted`] before it).
    pub async fn listen_from(&self, revision: u64) -> Result<ResourceListener> {
        self.listen_with(Some(revision)).await
    }

    /// A local subscriber: the updates published after this call, from
    /// this bus's one watch, shared by every subscriber of this process.
    /// The first call starts the watch and returns once it is established;
    /// later calls return at once. A subscriber more than
    /// [`FAN_OUT_BUFFER`] updates behind gets `Lagged` and skips them.
    pub async fn subscribe(&self) -> Result<broadcast::Receiver<ResourceUpdate>> {
        let tx = self
            .fan_out
            .get_or_try_init(|| async {
                let listener = self.listen().await?;
                let (tx, _) = broadcast::channel(FAN_OUT_BUFFER);
                tokio::spawn(fan_out(self.clone(), listener, tx.clone()));
                Ok::<_, Error>(tx)
            })
            .await?;
        Ok(tx.subscribe())
    }

    async fn listen_with(&self, from: Option<u64>) -> Result<ResourceListener> {
        let opts = WatchOptions {
            from,
            // A store's values (a whole cart) are not the update.
            keys_only: matches!(self.source, Source::Store { .. }),
            ..WatchOptions::default()
        };
        Ok(ResourceListener {
            watch: self.client.watch(self.source.target(), opts).await?,
            source: self.source.clone(),
            pending: Vec::new(),
        })
    }
}

/// Hears the updates published after it started, in order.
pub struct ResourceListener {
    watch: Watch,
    source: Source,
    pending: Vec<ResourceUpdate>,
}

impl ResourceListener {
    /// The next revision this listener delivers (resume from here).
    pub fn position(&self) -> u64 {
        self.watch.position()
    }

    /// The next update; waits for one. Errors only when the watch cannot go
    /// on (see [`Watch::next`]).
    pub async fn next(&mut self) -> Result<ResourceUpdate> {
        loop {
            if !self.pending.is_empty() {
                return Ok(self.pending.remove(0));
            }
            let batch = self.watch.next().await?;
            self.pending = batch
                .changes
                .into_iter()
                .filter_map(|c| self.source.update(c))
                .collect();
        }
    }
}

/// Forwards every update to the local subscribers, for the life of the
/// process; after an error it resumes from the last update it forwarded.
async fn fan_out(bus: ResourceBus, mut listener: ResourceListener, tx: broadcast::Sender<ResourceUpdate>) {
    loop {
        match listener.next().await {
            Ok(update) => {
                // No subscriber right now is fine.
                let _ = tx.send(update);
            }
            Err(e) => {
                tracing::warn!(error = %e, "resource bus watch broke; resuming");
                let from = listener.position();
                listener = loop {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    let resumed = match bus.listen_from(from).await {
                        Err(Error::Compacted { .. }) => {
                            tracing::warn!("resource bus: updates lost to compaction; going on from now");
                            bus.listen().await
                        }
                        other => other,
                    };
                    match resumed {
                        Ok(l) => break l,
                        Err(e) => tracing::warn!(error = %e, "resource bus watch not resumed yet"),
                    }
                };
            }
        }
    }
}

//! A subscription bus across replicas: a replica that changes a resource
//! publishes its URI, and every listener, on any replica, hears it. The
//! MCP SDKs fan `notifications/resources/updated` out to the listeners
//! connected to the same process only; here a publish is a replicated
//! write of the state key `mcp/resources/<digest of the URI>` and a
//! listener is a watch on that prefix, so it resumes on another node after
//! a failure and hears every publish made after it started, exactly once.

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
use crate::watch::{ChangeKind, Watch, WatchOptions, WatchTarget};

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
    prefix: String,
    /// The process's fan-out: one watch for every local subscriber.
    fan_out: Arc<OnceCell<broadcast::Sender<ResourceUpdate>>>,
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
            prefix: RESOURCES_PREFIX.to_string(),
            fan_out: Arc::default(),
        }
    }

    /// Another key prefix (several buses in one namespace).
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    fn key(&self, uri: &str) -> String {
        let digest = Sha256::digest(uri.as_bytes());
        format!("{}/{}", self.prefix, data_encoding::BASE32_NOPAD.encode(&digest[..16]))
    }

    /// Tells every listener that `uri` changed; returns once the update is
    /// committed (its revision).
    pub async fn publish(&self, uri: &str) -> Result<u64> {
        let opts = StoreOptions {
            ttl: Ttl::After(KEEP),
            expected_revision: None,
        };
        let value = StateValue::Json(json!({ "uri": uri }));
        self.state.store(&self.key(uri), value, opts).await
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
            ..WatchOptions::default()
        };
        let target = WatchTarget::prefix(format!("{}/", self.prefix));
        Ok(ResourceListener {
            watch: self.client.watch(target, opts).await?,
            pending: Vec::new(),
        })
    }
}

/// Hears the updates published after it started, in order.
pub struct ResourceListener {
    watch: Watch,
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
                .filter(|c| c.kind == ChangeKind::Put)
                .filter_map(|c| {
                    let uri = c.value.as_ref()?.as_json()?.get("uri")?.as_str()?.to_string();
                    Some(ResourceUpdate {
                        uri,
                        revision: c.revision,
                    })
                })
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

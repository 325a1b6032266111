//! Cart updates through Redis pub/sub (`cart_server --redis`), as a
//! Redis-backed server would tell listeners on every replica: a change is
//! one `PUBLISH`, and each replica `SUBSCRIBE`s once and hands what it
//! hears to its local listeners. Pub/sub keeps nothing: a replica that is
//! not connected when an update is published never hears it.

use std::time::Duration;

use deadpool_redis::{Config, Pool, Runtime};
use futures::StreamExt;
use handlestore_client::ResourceUpdate;
use tokio::sync::broadcast;

const CHANNEL: &str = "cart-updates";

pub struct RedisBus {
    pool: Pool,
    local: broadcast::Sender<ResourceUpdate>,
}

impl RedisBus {
    /// Publishes through the Redis at `url`, and follows its channel from
    /// now on (reconnecting after a second if the subscription drops).
    pub fn start(url: &str) -> anyhow::Result<Self> {
        let pool = Config::from_url(url).create_pool(Some(Runtime::Tokio1))?;
        let local = broadcast::channel(1024).0;
        let client = redis::Client::open(url)?;
        let tx = local.clone();
        tokio::spawn(async move {
            loop {
                if let Err(e) = follow(&client, &tx).await {
                    tracing::warn!(error = %e, "cart updates from redis interrupted; subscribing again");
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        Ok(Self { pool, local })
    }

    pub async fn publish(&self, uri: &str) -> anyhow::Result<()> {
        let mut conn = self.pool.get().await?;
        redis::cmd("PUBLISH")
            .arg(CHANNEL)
            .arg(uri)
            .query_async::<u64>(&mut conn)
            .await?;
        Ok(())
    }

    pub fn subscribe(&self) -> broadcast::Receiver<ResourceUpdate> {
        self.local.subscribe()
    }
}

async fn follow(client: &redis::Client, tx: &broadcast::Sender<ResourceUpdate>) -> anyhow::Result<()> {
    let mut pubsub = client.get_async_pubsub().await?;
    pubsub.subscribe(CHANNEL).await?;
    let mut messages = pubsub.on_message();
    while let Some(msg) = messages.next().await {
        let uri: String = msg.get_payload()?;
        let _ = tx.send(ResourceUpdate { uri, revision: 0 });
    }
    anyhow::bail!("the subscription ended")
}

//! Carts in Redis, kept as a careful author of a Redis-backed MCP server
//! would (`cart_server --redis`), so that the bench compares handlestore
//! with the server users would otherwise write: each handle is one key
//! holding its JSON with the handle's TTL, a new handle is `SET NX` (an
//! id never overwrites another), and a read-modify-write is
//! `WATCH`/`MULTI`/`EXEC`, retried when another writer got there first. A
//! transaction needs a connection of its own while it runs, so calls take
//! one from a pool. Redis acknowledges a write once it is in its memory
//! (and, with `appendfsync always`, in its own file): nothing is
//! replicated, so a failover loses what a replica had not received yet.
//!
//! It passes the same `HandleStore` contract suite as handlestore's stores
//! (`tests/bench/tests/redis_store.rs`).

use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use deadpool_redis::{Config, Pool, Runtime};
use handlestore_client::id::{new_handle_id, validate_handle_id};
use handlestore_client::{Error, HandleStore, Result, Ttl};
use redis::AsyncCommands;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Handles of one store (`name`) in one Redis.
pub struct RedisHandleStore<T> {
    pool: Pool,
    /// Keys are `hs:<name>:<id>`.
    keys: String,
    prefix: String,
    default_ttl: Option<Duration>,
    closed: AtomicBool,
    _values: PhantomData<fn() -> T>,
}

/// A Redis error as the caller of a store sees it: the outcome is unknown.
fn unavailable(e: impl std::fmt::Display) -> Error {
    Error::Unavailable {
        reason: None,
        message: format!("redis: {e}"),
    }
}

fn checked(id: &str) -> Result<()> {
    validate_handle_id(id).map_err(Error::InvalidArgument)
}

impl<T> RedisHandleStore<T> {
    /// A store named `name` in the Redis at `url` (`redis://host:port/`);
    /// minted ids start with `prefix-` when `prefix` is not empty.
    pub fn new(url: &str, name: &str, prefix: &str, default_ttl: Option<Duration>) -> anyhow::Result<Self> {
        let pool = Config::from_url(url).create_pool(Some(Runtime::Tokio1))?;
        Ok(Self {
            pool,
            keys: format!("hs:{name}:"),
            prefix: prefix.to_string(),
            default_ttl,
            closed: AtomicBool::new(false),
            _values: PhantomData,
        })
    }

    fn key(&self, id: &str) -> String {
        format!("{}{id}", self.keys)
    }

    /// The expiry a write with `ttl` sets: `None` never expires.
    fn expiry(&self, ttl: Ttl) -> Option<Duration> {
        match ttl {
            Ttl::Never => None,
            Ttl::After(d) if !d.is_zero() => Some(d),
            Ttl::Default | Ttl::After(_) => self.default_ttl,
        }
    }

    async fn conn(&self) -> Result<deadpool_redis::Connection> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        self.pool.get().await.map_err(unavailable)
    }
}

/// `SET key value [PX ms] [NX]`, as one command.
fn set_cmd(key: &str, json: &str, expiry: Option<Duration>, only_new: bool) -> redis::Cmd {
    let mut cmd = redis::cmd("SET");
    cmd.arg(key).arg(json);
    if let Some(d) = expiry {
        cmd.arg("PX").arg(d.as_millis().max(1) as u64);
    }
    if only_new {
        cmd.arg("NX");
    }
    cmd
}

fn encode<T: Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| Error::InvalidArgument(format!("value does not encode: {e}")))
}

fn decode<T: DeserializeOwned>(json: &str) -> Result<T> {
    serde_json::from_str(json).map_err(|e| unavailable(format!("a stored value does not decode: {e}")))
}

#[async_trait]
impl<T> HandleStore<T> for RedisHandleStore<T>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    async fn mint(&self, value: T, ttl: Ttl) -> Result<String> {
        let json = encode(&value)?;
        let mut conn = self.conn().await?;
        loop {
            let id = new_handle_id(&self.prefix);
            let set = set_cmd(&self.key(&id), &json, self.expiry(ttl), true);
            let stored: Option<String> = set.query_async(&mut conn).await.map_err(unavailable)?;
            if stored.is_some() {
                return Ok(id);
            }
        }
    }

    async fn put(&self, id: &str, value: T, ttl: Ttl) -> Result<bool> {
        checked(id)?;
        let json = encode(&value)?;
        let mut conn = self.conn().await?;
        // SET ... GET answers the value it replaced: nil if none was live.
        let mut set = set_cmd(&self.key(id), &json, self.expiry(ttl), false);
        set.arg("GET");
        let old: Option<String> = set.query_async(&mut conn).await.map_err(unavailable)?;
        Ok(old.is_some())
    }

    async fn get(&self, id: &str) -> Result<Option<T>> {
        checked(id)?;
        let mut conn = self.conn().await?;
        let json: Option<String> = conn.get(self.key(id)).await.map_err(unavailable)?;
        json.as_deref().map(decode).transpose()
    }

    async fn delete(&self, id: &str) -> Result<bool> {
        checked(id)?;
        let mut conn = self.conn().await?;
        let removed: u64 = conn.del(self.key(id)).await.map_err(unavailable)?;
        Ok(removed > 0)
    }

    async fn len(&self) -> Result<u64> {
        let mut conn = self.conn().await?;
        // SCAN leaves out keys past their expiry.
        let mut keys = conn
            .scan_match::<_, String>(format!("{}*", self.keys))
            .await
            .map_err(unavailable)?;
        let mut n = 0;
        while let Some(k) = futures::StreamExt::next(&mut keys).await {
            k.map_err(unavailable)?;
            n += 1;
        }
        Ok(n)
    }

    async fn update(&self, id: &str, f: &mut (dyn for<'a> FnMut(&'a mut T) + Send)) -> Result<Option<T>> {
        checked(id)?;
        let key = self.key(id);
        let mut conn = self.conn().await?;
        loop {
            redis::cmd("WATCH")
                .arg(&key)
                .query_async::<()>(&mut conn)
                .await
                .map_err(unavailable)?;
            let json: Option<String> = conn.get(&key).await.map_err(unavailable)?;
            let changed = json.as_deref().map(|json| {
                let mut value: T = decode(json)?;
                f(&mut value);
                Ok((encode(&value)?, value))
            });
            let (encoded, value) = match changed {
                Some(Ok(changed)) => changed,
                // No handle, or a value that does not decode: the pooled
                // connection must not stay WATCHing for its next user.
                other => {
                    redis::cmd("UNWATCH")
                        .query_async::<()>(&mut conn)
                        .await
                        .map_err(unavailable)?;
                    return other.transpose().map(|_| None);
                }
            };
            // The handle keeps its expiry (KEEPTTL); EXEC answers nil if the
            // key changed since WATCH, and the loop reads it again.
            let mut set = redis::cmd("SET");
            set.arg(&key).arg(encoded).arg("KEEPTTL");
            let done: Option<(String,)> = redis::pipe()
                .atomic()
                .add_command(set)
                .query_async(&mut conn)
                .await
                .map_err(unavailable)?;
            if done.is_some() {
                return Ok(Some(value));
            }
        }
    }

    async fn close(&self) -> Result<()> {
        self.closed.store(true, Ordering::Release);
        self.pool.close();
        Ok(())
    }
}

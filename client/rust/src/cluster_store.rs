//! `ClusterHandleStore<T>`: the HandleStore over a handlestore cluster,
//! values as JSON.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use handlestore_proto::v1 as pb;
use pb::write::Op;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::cluster::{Client, Consistency};
use crate::error::{Error, Result};
use crate::failover::rpc;
use crate::handle_store::HandleStore;
use crate::reads::read_answer;
use crate::stubs::handles;
use crate::ttl::Ttl;
use crate::writes::answer;

impl Client {
    /// A handle store of JSON values named `store` (e.g. "cart").
    pub fn handle_store<T>(&self, store: &str) -> ClusterHandleStoreBuilder<T> {
        ClusterHandleStoreBuilder::new(self.clone(), store)
    }
}

/// Builds a [`ClusterHandleStore`].
pub struct ClusterHandleStoreBuilder<T> {
    client: Client,
    store: String,
    default_ttl: Option<Duration>,
    prefix: String,
    consistency: Consistency,
    _t: PhantomData<fn() -> T>,
}

impl<T> ClusterHandleStoreBuilder<T> {
    fn new(client: Client, store: &str) -> Self {
        Self {
            client,
            store: store.to_string(),
            default_ttl: None,
            prefix: String::new(),
            consistency: Consistency::Linearizable,
            _t: PhantomData,
        }
    }

    /// TTL used for `Ttl::Default` (none: never expires).
    pub fn default_ttl(mut self, ttl: Duration) -> Self {
        self.default_ttl = Some(ttl).filter(|d| !d.is_zero());
        self
    }

    /// Minted ids look like `<prefix>-<26 chars>`.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Consistency of `get` and `len` (default linearizable).
    pub fn consistency(mut self, c: Consistency) -> Self {
        self.consistency = c;
        self
    }

    pub fn build(self) -> ClusterHandleStore<T> {
        ClusterHandleStore {
            client: self.client,
            store: self.store,
            default_ttl: self.default_ttl,
            prefix: self.prefix,
            consistency: self.consistency,
            closed: AtomicBool::new(false),
            _t: PhantomData,
        }
    }
}

/// A value with its revisions, for compare-and-set.
#[derive(Debug, Clone, PartialEq)]
pub struct Versioned<T> {
    pub value: T,
    pub create_revision: u64,
    pub mod_revision: u64,
    /// Unix milliseconds; `None` = never expires.
    pub expires_at_ms: Option<u64>,
}

/// Outcome of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteOutcome {
    /// Whether a live handle existed before.
    pub existed: bool,
    /// The revision of the write (usable with `Consistency::AtLeast`).
    pub revision: u64,
}

/// A replicated [`HandleStore`] of JSON-encoded `T` values.
pub struct ClusterHandleStore<T> {
    client: Client,
    store: String,
    default_ttl: Option<Duration>,
    prefix: String,
    consistency: Consistency,
    closed: AtomicBool,
    _t: PhantomData<fn() -> T>,
}

impl<T> ClusterHandleStore<T>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    pub fn store_name(&self) -> &str {
        &self.store
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            Err(Error::Closed)
        } else {
            Ok(())
        }
    }

    fn ttl(&self, ttl: Ttl, keep: bool) -> pb::Ttl {
        pb::Ttl {
            ttl_ms: ttl.to_millis(),
            default_ttl_ms: self.default_ttl.map(|d| d.as_millis() as u64).unwrap_or(0),
            keep,
        }
    }

    /// Mints with a caller-chosen id (normally `mint` draws it).
    pub async fn mint_with_id(&self, id: &str, value: &T, ttl: Ttl) -> Result<WriteOutcome> {
        self.check_open()?;
        crate::id::validate_handle_id(id).map_err(Error::InvalidArgument)?;
        let value = serde_json::to_vec(value)?;
        let ticket = self.client.write_ticket();
        let msg = pb::MintRequest {
            namespace: self.client.namespace().to_string(),
            store: self.store.clone(),
            id: id.to_string(),
            value,
            ttl: Some(self.ttl(ttl, false)),
            write_id: Some(ticket.id),
        };
        let resp = answer!(self.client.write(Op::Mint(msg), ticket).await, Mint);
        Ok(WriteOutcome {
            existed: false,
            revision: resp.revision,
        })
    }

    /// Upsert, or compare-and-set when `expected_revision` is given (fails
    /// with [`Error::Conflict`] if the handle changed, [`Error::NotFound`]
    /// if it is gone).
    pub async fn put_with(
        &self,
        id: &str,
        value: &T,
        ttl: Ttl,
        expected_revision: Option<u64>,
    ) -> Result<WriteOutcome> {
        self.put_raw(id, value, self.ttl(ttl, false), expected_revision).await
    }

    async fn put_raw(&self, id: &str, value: &T, ttl: pb::Ttl, expected_revision: Option<u64>) -> Result<WriteOutcome> {
        self.check_open()?;
        crate::id::validate_handle_id(id).map_err(Error::InvalidArgument)?;
        let value = serde_json::to_vec(value)?;
        let ticket = self.client.write_ticket();
        let msg = pb::PutRequest {
            namespace: self.client.namespace().to_string(),
            store: self.store.clone(),
            id: id.to_string(),
            value,
            ttl: Some(ttl),
            write_id: Some(ticket.id),
            expected_revision,
        };
        let resp = answer!(self.client.write(Op::Put(msg), ticket).await, Put);
        Ok(WriteOutcome {
            existed: resp.existed,
            revision: resp.revision,
        })
    }

    /// Reads with revisions, at the store's consistency.
    pub async fn get_versioned(&self, id: &str) -> Result<Option<Versioned<T>>> {
        self.get_versioned_with(id, self.consistency).await
    }

    /// Reads with revisions at a chosen consistency.
    pub async fn get_versioned_with(&self, id: &str, consistency: Consistency) -> Result<Option<Versioned<T>>> {
        self.check_open()?;
        crate::id::validate_handle_id(id).map_err(Error::InvalidArgument)?;
        let msg = pb::GetRequest {
            namespace: self.client.namespace().to_string(),
            store: self.store.clone(),
            id: id.to_string(),
            read: Some(consistency.to_pb()),
        };
        let resp = read_answer!(self.client.read(pb::read::Op::Get(msg)).await, Get);
        match resp {
            Ok(r) => Ok(Some(Versioned {
                value: serde_json::from_slice(&r.value)?,
                create_revision: r.create_revision,
                mod_revision: r.mod_revision,
                expires_at_ms: Some(r.expires_at_ms).filter(|e| *e != 0),
            })),
            Err(Error::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `get` at a chosen consistency.
    pub async fn get_with(&self, id: &str, consistency: Consistency) -> Result<Option<T>> {
        Ok(self.get_versioned_with(id, consistency).await?.map(|v| v.value))
    }

    /// Deletes; with `expected_revision`, only if unchanged.
    pub async fn delete_with(&self, id: &str, expected_revision: Option<u64>) -> Result<WriteOutcome> {
        self.check_open()?;
        crate::id::validate_handle_id(id).map_err(Error::InvalidArgument)?;
        let ticket = self.client.write_ticket();
        let msg = pb::DeleteRequest {
            namespace: self.client.namespace().to_string(),
            store: self.store.clone(),
            id: id.to_string(),
            write_id: Some(ticket.id),
            expected_revision,
        };
        let resp = answer!(self.client.write(Op::Delete(msg), ticket).await, Delete);
        Ok(WriteOutcome {
            existed: resp.existed,
            revision: resp.revision,
        })
    }

    /// `len` at a chosen consistency.
    pub async fn len_with(&self, consistency: Consistency) -> Result<u64> {
        self.check_open()?;
        let msg = pb::LenRequest {
            namespace: self.client.namespace().to_string(),
            store: self.store.clone(),
            read: Some(consistency.to_pb()),
        };
        let resp = rpc!(self.client, handles, len, msg)?;
        Ok(resp.len)
    }
}

#[async_trait]
impl<T> HandleStore<T> for ClusterHandleStore<T>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    async fn mint(&self, value: T, ttl: Ttl) -> Result<String> {
        let id = crate::id::new_handle_id(&self.prefix);
        self.mint_with_id(&id, &value, ttl).await?;
        Ok(id)
    }

    async fn put(&self, id: &str, value: T, ttl: Ttl) -> Result<bool> {
        Ok(self.put_with(id, &value, ttl, None).await?.existed)
    }

    async fn get(&self, id: &str) -> Result<Option<T>> {
        Ok(self.get_versioned(id).await?.map(|v| v.value))
    }

    async fn delete(&self, id: &str) -> Result<bool> {
        Ok(self.delete_with(id, None).await?.existed)
    }

    async fn len(&self) -> Result<u64> {
        self.len_with(self.consistency).await
    }

    async fn update(&self, id: &str, f: &mut (dyn for<'a> FnMut(&'a mut T) + Send)) -> Result<Option<T>> {
        // The first read is stale: the leader checks the compare-and-set
        // against the revision read, so a value that is not the latest is
        // refused, never written over, and the update stays linearizable
        // without a read-index round. After a conflict, or if the handle
        // seems absent (a node behind the write that made it), the next read
        // is linearizable, so a lagging node cannot keep the loop going or
        // make `update` answer `None` for a handle that exists.
        let mut consistency = Consistency::Stale;
        loop {
            let Some(mut current) = self.get_versioned_with(id, consistency).await? else {
                if consistency == Consistency::Linearizable {
                    return Ok(None);
                }
                consistency = Consistency::Linearizable;
                continue;
            };
            consistency = Consistency::Linearizable;
            f(&mut current.value);
            match self
                .put_raw(
                    id,
                    &current.value,
                    self.ttl(Ttl::Default, true),
                    Some(current.mod_revision),
                )
                .await
            {
                Ok(_) => return Ok(Some(current.value)),
                Err(Error::Conflict { .. }) => continue,
                Err(Error::NotFound(_)) => return Ok(None),
                Err(e) => return Err(e),
            }
        }
    }

    async fn close(&self) -> Result<()> {
        self.closed.store(true, Ordering::Release);
        Ok(())
    }
}

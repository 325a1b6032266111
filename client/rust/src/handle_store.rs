//! The `HandleStore` trait: opaque, server-minted handles to state that
//! must outlive one tool call (a cart, a job, a draft).

use async_trait::async_trait;

use crate::error::Result;
use crate::ttl::Ttl;

/// A store of values of type `T` under opaque ids, with the semantics of
/// mcpkit's HandleStore:
///
/// - `mint` draws a new id (128 CSPRNG bits, 26 base32 characters, with the
///   store's prefix as `<prefix>-<id>`) and stores the value;
/// - `put` is an upsert that answers whether a live handle existed;
/// - `delete` answers whether a live handle existed;
/// - an expired handle is gone for every call (`get` is `None`, `put` and
///   `delete` say it did not exist, `len` does not count it);
/// - `len` counts the live handles of this store.
///
/// Implementations: [`crate::ClusterHandleStore`] (replicated) and
/// [`crate::MemoryHandleStore`] (in process); both pass the same contract
/// suite.
#[async_trait]
pub trait HandleStore<T>: Send + Sync
where
    T: Send + Sync + 'static,
{
    /// Stores `value` under a new id and returns the id.
    async fn mint(&self, value: T, ttl: Ttl) -> Result<String>;

    /// Stores `value` under `id` (creating it if needed); `true` if a live
    /// handle existed. The TTL is reset to `ttl`.
    async fn put(&self, id: &str, value: T, ttl: Ttl) -> Result<bool>;

    /// The value under `id`, if it exists and has not expired.
    async fn get(&self, id: &str) -> Result<Option<T>>;

    /// Removes `id`; `true` if a live handle existed.
    async fn delete(&self, id: &str) -> Result<bool>;

    /// The number of live handles in this store.
    async fn len(&self) -> Result<u64>;

    /// Whether this store has no live handles.
    async fn is_empty(&self) -> Result<bool> {
        Ok(self.len().await? == 0)
    }

    /// Read-modify-write without lost updates: applies `f` to the current
    /// value and stores the result if nobody changed it in between, else
    /// re-reads and tries again. Keeps the handle's expiry. Returns the new
    /// value, or `None` if the handle does not exist.
    async fn update(&self, id: &str, f: &mut (dyn for<'a> FnMut(&'a mut T) + Send)) -> Result<Option<T>>;

    /// Releases resources; later calls fail with [`crate::Error::Closed`].
    async fn close(&self) -> Result<()>;
}

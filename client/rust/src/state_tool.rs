//! The `StateTool` trait: the interface MCP state tools implement for agents
//! (store, retrieve, delete, list, exists, batch_store, batch_retrieve) over
//! hierarchical `/`-separated keys.

use async_trait::async_trait;

use crate::error::Result;
use crate::ttl::Ttl;

/// A state value: a JSON document or raw bytes.
#[derive(Debug, Clone, PartialEq)]
pub enum StateValue {
    Json(serde_json::Value),
    Bytes(Vec<u8>),
}

impl From<serde_json::Value> for StateValue {
    fn from(v: serde_json::Value) -> Self {
        StateValue::Json(v)
    }
}

impl From<Vec<u8>> for StateValue {
    fn from(v: Vec<u8>) -> Self {
        StateValue::Bytes(v)
    }
}

impl StateValue {
    /// The JSON document, if this is one.
    pub fn as_json(&self) -> Option<&serde_json::Value> {
        match self {
            StateValue::Json(v) => Some(v),
            StateValue::Bytes(_) => None,
        }
    }
}

/// A key with its value and revisions.
#[derive(Debug, Clone, PartialEq)]
pub struct StateEntry {
    pub key: String,
    /// `None` only in a list that did not ask for values.
    pub value: Option<StateValue>,
    pub create_revision: u64,
    pub mod_revision: u64,
    /// Unix milliseconds; `None` = never expires.
    pub expires_at_ms: Option<u64>,
}

/// Options of `store`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreOptions {
    pub ttl: Ttl,
    /// Compare-and-set: store only if the key is at this revision
    /// ([`crate::Error::Conflict`] otherwise, [`crate::Error::NotFound`] if
    /// it is gone). `Some(0)`: create only ([`crate::Error::Conflict`] if
    /// the key exists).
    pub expected_revision: Option<u64>,
}

/// One item of `batch_store`.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreItem {
    pub key: String,
    pub value: StateValue,
    pub ttl: Ttl,
    pub expected_revision: Option<u64>,
}

impl StoreItem {
    pub fn new(key: impl Into<String>, value: impl Into<StateValue>) -> Self {
        Self {
            key: key.into(),
            value: value.into(),
            ttl: Ttl::Default,
            expected_revision: None,
        }
    }
}

/// What `delete` removes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    /// Treat the key as a prefix and delete up to `limit` keys under it,
    /// atomically.
    pub prefix: bool,
    /// Most keys a prefix delete removes (0 = 1000; at most 10000).
    pub limit: u32,
    /// Single keys only: delete only if the key is at this revision.
    pub expected_revision: Option<u64>,
}

impl DeleteOptions {
    /// A prefix delete of at most `limit` keys.
    pub fn prefix(limit: u32) -> Self {
        Self {
            prefix: true,
            limit,
            expected_revision: None,
        }
    }
}

/// What `delete` did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Deleted {
    /// Live keys deleted (0 or 1 for a single key).
    pub count: u64,
    /// A prefix delete stopped at its limit: more keys remain.
    pub more: bool,
}

/// Options of `list`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// Keys per page (0 = 100; at most 1000).
    pub limit: u32,
    /// The previous page's `next_page_token`.
    pub page_token: Option<String>,
    pub with_values: bool,
}

/// One page of keys, in key order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListPage {
    pub entries: Vec<StateEntry>,
    /// Pass to the next `list` call; `None` at the end.
    pub next_page_token: Option<String>,
}

/// Hierarchical key-value state for agents. Keys are `/`-separated paths
/// (`checkpoints/agent-7/latest`); `batch_store` is atomic; `list` returns
/// keys in order, a page at a time; every call sees only the namespace it
/// was created for.
///
/// Implementations: [`crate::ClusterStateTool`] (replicated) and
/// [`crate::MemoryStateTool`] (in process); both pass one contract suite.
#[async_trait]
pub trait StateTool: Send + Sync {
    /// Stores a value; returns the write's revision.
    async fn store(&self, key: &str, value: StateValue, opts: StoreOptions) -> Result<u64>;

    /// The entry under `key`, if it exists and has not expired.
    async fn retrieve(&self, key: &str) -> Result<Option<StateEntry>>;

    /// Deletes a key (or, with `opts.prefix`, keys under a prefix).
    async fn delete(&self, key: &str, opts: DeleteOptions) -> Result<Deleted>;

    /// One page of keys under `prefix` ("" = all), in key order.
    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListPage>;

    async fn exists(&self, key: &str) -> Result<bool>;

    /// Stores every item or none (one compare-and-set failing fails all);
    /// returns the batch's revision.
    async fn batch_store(&self, items: Vec<StoreItem>) -> Result<u64>;

    /// Reads several keys from one consistent view, in request order.
    async fn batch_retrieve(&self, keys: &[String]) -> Result<Vec<Option<StateEntry>>>;
}

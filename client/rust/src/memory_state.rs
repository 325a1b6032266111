//! `MemoryStateTool`: the StateTool in process, with the same semantics as
//! the cluster (it passes the same contract suite).

use std::collections::{BTreeMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use handlestore_proto::limits;

use crate::error::{Error, Result};
use crate::key::{MAX_KEY_LEN, page_token, parse_page_token, validate_key, validate_prefix};
use crate::state_tool::*;
use crate::ttl::Ttl;

struct Entry {
    value: StateValue,
    create_revision: u64,
    mod_revision: u64,
    expires_at_ms: Option<u64>,
}

#[derive(Default)]
struct Inner {
    map: BTreeMap<String, Entry>,
    revision: u64,
}

/// Expired entries are invisible at once; their memory is freed by a sweep
/// every this many writes (amortized O(1) per write).
const PURGE_EVERY: u64 = 1024;

/// An in-process [`StateTool`].
#[derive(Default)]
pub struct MemoryStateTool {
    inner: Mutex<Inner>,
    default_ttl: Option<Duration>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn live(e: &Entry, now: u64) -> bool {
    e.expires_at_ms.is_none_or(|x| x > now)
}

fn check_key(key: &str) -> Result<()> {
    validate_key(key, MAX_KEY_LEN).map_err(Error::InvalidArgument)
}

fn to_entry(key: &str, e: &Entry, with_value: bool) -> StateEntry {
    StateEntry {
        key: key.to_string(),
        value: with_value.then(|| e.value.clone()),
        create_revision: e.create_revision,
        mod_revision: e.mod_revision,
        expires_at_ms: e.expires_at_ms,
    }
}

impl MemoryStateTool {
    pub fn new() -> Self {
        Self::default()
    }

    /// Entries held, expired or not (for tests of the purge).
    pub fn raw_len(&self) -> usize {
        self.lock().map.len()
    }

    /// TTL used for `Ttl::Default` (none: never expires).
    pub fn with_default_ttl(mut self, ttl: Duration) -> Self {
        self.default_ttl = Some(ttl).filter(|d| !d.is_zero());
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn expiry(&self, ttl: Ttl, now: u64) -> Option<u64> {
        ttl.resolve(self.default_ttl)
            .map(|d| now.saturating_add(d.as_millis() as u64))
    }
}

/// Checks a compare-and-set against the current (live) entry.
fn check_revision(key: &str, current: Option<&Entry>, expected: Option<u64>) -> Result<()> {
    match (expected, current) {
        (None, _) | (Some(0), None) => Ok(()),
        (Some(_), None) => Err(Error::NotFound(format!("key {key} does not exist (or expired)"))),
        (Some(want), Some(e)) if e.mod_revision != want => Err(Error::Conflict {
            current_revision: e.mod_revision,
            message: format!("key {key} is at revision {}, not the expected {want}", e.mod_revision),
        }),
        _ => Ok(()),
    }
}

impl Inner {
    /// Advances the revision for a write, freeing expired entries now and
    /// then.
    fn next_revision(&mut self, now: u64) -> u64 {
        self.revision += 1;
        if self.revision.is_multiple_of(PURGE_EVERY) {
            self.map.retain(|_, e| live(e, now));
        }
        self.revision
    }

    fn live(&self, key: &str, now: u64) -> Option<&Entry> {
        self.map.get(key).filter(|e| live(e, now))
    }

    fn put(&mut self, key: String, value: StateValue, expires_at_ms: Option<u64>, revision: u64, now: u64) {
        let create_revision = self.live(&key, now).map(|e| e.create_revision).unwrap_or(revision);
        self.map.insert(
            key,
            Entry {
                value,
                create_revision,
                mod_revision: revision,
                expires_at_ms,
            },
        );
    }
}

#[async_trait]
impl StateTool for MemoryStateTool {
    async fn store(&self, key: &str, value: StateValue, opts: StoreOptions) -> Result<u64> {
        check_key(key)?;
        let now = now_ms();
        let mut s = self.lock();
        check_revision(key, s.live(key, now), opts.expected_revision)?;
        let rev = s.next_revision(now);
        s.put(key.to_string(), value, self.expiry(opts.ttl, now), rev, now);
        Ok(rev)
    }

    async fn retrieve(&self, key: &str) -> Result<Option<StateEntry>> {
        check_key(key)?;
        let s = self.lock();
        Ok(s.live(key, now_ms()).map(|e| to_entry(key, e, true)))
    }

    async fn delete(&self, key: &str, opts: DeleteOptions) -> Result<Deleted> {
        let now = now_ms();
        let mut s = self.lock();
        if !opts.prefix {
            check_key(key)?;
            check_revision(key, s.live(key, now), opts.expected_revision)?;
            let existed = s.map.remove(key).is_some_and(|e| live(&e, now));
            s.next_revision(now);
            return Ok(Deleted {
                count: existed as u64,
                more: false,
            });
        }
        validate_prefix(key, MAX_KEY_LEN).map_err(Error::InvalidArgument)?;
        if key.is_empty() {
            return Err(Error::InvalidArgument(
                "a prefix delete needs a non-empty prefix".into(),
            ));
        }
        if opts.expected_revision.is_some() {
            return Err(Error::InvalidArgument(
                "expected_revision applies to single-key deletes only".into(),
            ));
        }
        if opts.limit > limits::MAX_PREFIX_DELETE {
            return Err(Error::InvalidArgument(format!(
                "limit {} exceeds {}",
                opts.limit,
                limits::MAX_PREFIX_DELETE
            )));
        }
        let limit = if opts.limit == 0 {
            limits::DEFAULT_PREFIX_DELETE
        } else {
            opts.limit
        } as usize;
        let under: Vec<String> = s
            .map
            .range(key.to_string()..)
            .take_while(|(k, _)| k.starts_with(key))
            .take(limit + 1)
            .map(|(k, _)| k.clone())
            .collect();
        let mut count = 0;
        for k in under.iter().take(limit) {
            if s.map.remove(k).is_some_and(|e| live(&e, now)) {
                count += 1;
            }
        }
        s.next_revision(now);
        Ok(Deleted {
            count,
            more: under.len() > limit,
        })
    }

    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListPage> {
        validate_prefix(prefix, MAX_KEY_LEN).map_err(Error::InvalidArgument)?;
        if opts.limit > limits::MAX_PAGE {
            return Err(Error::InvalidArgument(format!(
                "limit {} exceeds {} keys per page",
                opts.limit,
                limits::MAX_PAGE
            )));
        }
        let limit = if opts.limit == 0 {
            limits::DEFAULT_PAGE
        } else {
            opts.limit
        } as usize;
        let after = opts
            .page_token
            .as_deref()
            .map(parse_page_token)
            .transpose()
            .map_err(Error::InvalidArgument)?;
        let now = now_ms();
        let s = self.lock();
        let start = match &after {
            Some(a) if a.as_str() >= prefix => std::ops::Bound::Excluded(a.clone()),
            _ => std::ops::Bound::Included(prefix.to_string()),
        };
        let mut iter = s
            .map
            .range((start, std::ops::Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix))
            .filter(|(_, e)| live(e, now));
        let entries: Vec<StateEntry> = iter
            .by_ref()
            .take(limit)
            .map(|(k, e)| to_entry(k, e, opts.with_values))
            .collect();
        let more = iter.next().is_some();
        let next_page_token = match (more, entries.last()) {
            (true, Some(e)) => Some(page_token(&e.key)),
            _ => None,
        };
        Ok(ListPage {
            entries,
            next_page_token,
        })
    }

    async fn exists(&self, key: &str) -> Result<bool> {
        check_key(key)?;
        Ok(self.lock().live(key, now_ms()).is_some())
    }

    async fn batch_store(&self, items: Vec<StoreItem>) -> Result<u64> {
        if items.is_empty() {
            return Err(Error::InvalidArgument("a batch needs at least one item".into()));
        }
        let mut seen = HashSet::new();
        for item in &items {
            check_key(&item.key)?;
            if !seen.insert(item.key.as_str()) {
                return Err(Error::InvalidArgument(format!(
                    "key {:?} appears twice in the batch",
                    item.key
                )));
            }
        }
        let now = now_ms();
        let mut s = self.lock();
        for item in &items {
            check_revision(&item.key, s.live(&item.key, now), item.expected_revision)?;
        }
        let rev = s.next_revision(now);
        for item in items {
            let exp = self.expiry(item.ttl, now);
            s.put(item.key, item.value, exp, rev, now);
        }
        Ok(rev)
    }

    async fn batch_retrieve(&self, keys: &[String]) -> Result<Vec<Option<StateEntry>>> {
        for k in keys {
            check_key(k)?;
        }
        let now = now_ms();
        let s = self.lock();
        Ok(keys
            .iter()
            .map(|k| s.live(k, now).map(|e| to_entry(k, e, true)))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn expired_entries_are_freed() {
        let t = MemoryStateTool::new();
        let short = StoreOptions {
            ttl: Ttl::After(Duration::from_millis(1)),
            expected_revision: None,
        };
        for i in 0..10 {
            t.store(&format!("gone/{i}"), serde_json::json!(i).into(), short)
                .await
                .unwrap();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        for i in 0..PURGE_EVERY {
            t.store("kept", serde_json::json!(i).into(), StoreOptions::default())
                .await
                .unwrap();
        }
        assert_eq!(t.raw_len(), 1, "expired entries were freed");
    }
}

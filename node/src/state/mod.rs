//! The replicated state machine: keyspace, expiry, revisions, exactly-once
//! answers. It knows RocksDB and the prost command types, nothing of gRPC or
//! of the Raft library (the `raft` module adapts it to the library's traits).
//!
//! Reads here are local: callers (the api layer) decide beforehand whether
//! this node has applied enough for the consistency they promised.

mod answers;
mod apply;
pub mod auth;
pub mod backup;
pub mod history;
pub mod keys;
pub mod recent;
pub mod snapshot;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use handlestore_proto::internal::v1 as ipb;
use prost::Message;
use rocksdb::{DB, IteratorMode, ReadOptions};
use tokio::sync::watch;

use crate::storage::db::{self, CF_EXPIRY, CF_KV, CF_SM_META};

pub use apply::{ApplyBatch, ApplyEntry};

/// Meta keys in `CF_SM_META`.
pub(crate) mod meta {
    pub const APPLIED: &[u8] = b"applied";
    pub const MEMBERSHIP: &[u8] = b"membership";
    pub const CLOCK: &[u8] = b"clock";
    /// Exactly-once answers remembered, over all clients.
    pub const ANSWER_COUNT: &[u8] = b"answer_count";
    /// Answers stamped before this are dropped when their client's record
    /// is next written (the last `Expire`'s `dedup_before_ms`).
    pub const ANSWER_HORIZON: &[u8] = b"answer_horizon";
    /// Present while a snapshot is being installed: the state is only partly
    /// replaced and must be installed again from the snapshot file on start.
    pub const INSTALLING: &[u8] = b"installing";
    /// The auth state ([`state::auth`](crate::state::auth)).
    pub const AUTH: &[u8] = b"auth";
    /// The oldest revision whose changes the watch history holds (u64 BE).
    pub const HISTORY_FLOOR: &[u8] = b"history_floor";
    /// The cluster's name (`raft::net::identity`), UTF-8; absent until named.
    pub const CLUSTER_ID: &[u8] = b"cluster_id";
}

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("rocksdb: {0}")]
    Db(#[from] rocksdb::Error),
    #[error("corrupt record under {what}: {err}")]
    Decode { what: &'static str, err: String },
    #[error("snapshot: {0}")]
    Snapshot(String),
    /// A backup file that cannot be read (`backup`); says why in full.
    #[error("{0}")]
    Backup(String),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    /// The read depends on expiry and this node may not judge it now.
    #[error("{0}")]
    ExpiryUnknown(Arc<str>),
}

pub type Result<T, E = StateError> = std::result::Result<T, E>;

/// Tunables of the state machine that every replica must agree on are in the
/// commands themselves; these are local bounds.
#[derive(Debug, Clone)]
pub struct StateLimits {
    /// Upper bound on remembered write answers; the oldest are forgotten
    /// first when it is exceeded.
    pub dedup_max_entries: u64,
    /// The watch history keeps at least this many revisions (log entries)
    /// of changes.
    pub history_revisions: u64,
    /// Bytes of recent changes kept in memory for live watchers
    /// (`recent`).
    pub recent_bytes: usize,
}

/// The node's defaults ([`config::defaults`](crate::config::defaults)).
impl Default for StateLimits {
    fn default() -> Self {
        let t = crate::config::Tuning::default();
        Self {
            dedup_max_entries: t.dedup_max_entries,
            history_revisions: t.watch_history,
            recent_bytes: t.watch_split().0,
        }
    }
}

/// A handle as stored, with its revisions.
pub type Record = ipb::Record;

/// The time a read judges expiry at (unix ms), or why this node may not
/// judge it: then a read that meets an entry with a TTL fails with
/// [`StateError::ExpiryUnknown`], and entries without one are served.
#[derive(Debug, Clone)]
pub enum ExpiryTime {
    At(u64),
    Unknown(Arc<str>),
}

impl ExpiryTime {
    /// Whether `rec` is visible at this time.
    pub fn is_live(&self, rec: &Record) -> Result<bool> {
        match self {
            _ if rec.expires_at_ms == 0 => Ok(true),
            ExpiryTime::At(now) => Ok(is_live(rec, *now)),
            ExpiryTime::Unknown(why) => Err(StateError::ExpiryUnknown(why.clone())),
        }
    }

    fn at(&self) -> Result<u64> {
        match self {
            ExpiryTime::At(now) => Ok(*now),
            ExpiryTime::Unknown(why) => Err(StateError::ExpiryUnknown(why.clone())),
        }
    }
}

/// The state machine over the shared RocksDB.
pub struct StateStore {
    db: Arc<DB>,
    applied_tx: watch::Sender<u64>,
    /// The state machine's clock: the latest leader stamp applied (unix ms).
    applied_clock: AtomicU64,
    limits: StateLimits,
    /// See `answers::AnswerHints`.
    apply_hints: std::sync::Mutex<answers::AnswerHints>,
    /// The auth state as applied, indexed (replaced whole on a change).
    auth: RwLock<Arc<auth::AuthView>>,
    /// Applied changes, for live watchers.
    recent: recent::Recent,
    /// Set once the node is stopping: watchers end, whatever they wait on.
    stopping: watch::Sender<bool>,
    /// The cluster's name as applied (`raft::net::identity`); empty until named.
    cluster_id: RwLock<Arc<str>>,
}

impl StateStore {
    pub fn open(db: Arc<DB>, limits: StateLimits) -> Result<Arc<Self>> {
        let applied = read_meta::<ipb::LogId>(&db, meta::APPLIED)?
            .map(|l| l.index)
            .unwrap_or(0);
        let (applied_tx, _) = watch::channel(applied);
        let clock = read_clock(&db)?;
        let auth = auth::AuthView::new(auth::load(&db)?);
        history::ensure_floor(&db, applied)?;
        let cluster_id = read_cluster_id(&db)?;
        Ok(Arc::new(Self {
            db,
            applied_tx,
            applied_clock: AtomicU64::new(clock),
            recent: recent::Recent::new(limits.recent_bytes, applied),
            limits,
            apply_hints: Default::default(),
            auth: RwLock::new(Arc::new(auth)),
            stopping: watch::channel(false).0,
            cluster_id: RwLock::new(cluster_id),
        }))
    }

    pub fn db(&self) -> &Arc<DB> {
        &self.db
    }

    /// The index of the last applied Raft entry: the store's revision.
    pub fn applied_index(&self) -> u64 {
        *self.applied_tx.borrow()
    }

    /// Watch the applied index (for read gates that wait for a revision).
    pub fn subscribe_applied(&self) -> watch::Receiver<u64> {
        self.applied_tx.subscribe()
    }

    /// Drops what applying knew about the database (the state was
    /// replaced).
    pub(crate) fn reset_apply_hints(&self) {
        *self.apply_hints.lock().unwrap_or_else(|p| p.into_inner()) = Default::default();
    }

    /// The latest leader stamp applied (unix ms): the time of the state
    /// this node holds. Never decreases.
    pub fn applied_clock(&self) -> u64 {
        self.applied_clock.load(Ordering::Acquire)
    }

    /// The auth state as applied (users, roles, tokens' digests).
    pub fn auth(&self) -> Arc<auth::AuthView> {
        self.auth.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn publish_auth(&self, state: ipb::AuthState) {
        *self.auth.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(auth::AuthView::new(state));
    }

    /// Publishes what an install of a snapshot brought.
    pub(crate) fn publish_installed(&self, index: u64) -> Result<()> {
        history::ensure_floor(&self.db, index)?;
        self.applied_clock.store(read_clock(&self.db)?, Ordering::Release);
        self.publish_auth(auth::load(&self.db)?);
        *self.cluster_id.write().unwrap_or_else(|p| p.into_inner()) = read_cluster_id(&self.db)?;
        self.publish_applied(index);
        self.recent.replaced(index);
        Ok(())
    }

    /// Makes this state that of a member of a new cluster (a restored
    /// backup, `raft::life::restore`): its membership and its name.
    pub fn restart_as(&self, membership: &ipb::StoredMembership, cluster_id: &str) -> Result<()> {
        let meta_cf = db::cf(&self.db, CF_SM_META);
        let mut wb = rocksdb::WriteBatch::default();
        wb.put_cf(meta_cf, meta::MEMBERSHIP, membership.encode_to_vec());
        wb.put_cf(meta_cf, meta::CLUSTER_ID, cluster_id.as_bytes());
        let mut sync = rocksdb::WriteOptions::default();
        sync.set_sync(true);
        self.db.write_opt(wb, &sync)?;
        *self.cluster_id.write().unwrap_or_else(|p| p.into_inner()) = cluster_id.into();
        Ok(())
    }

    /// The cluster's name as applied; empty until it is named.
    pub fn cluster_id(&self) -> Arc<str> {
        self.cluster_id.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The recent changes live watchers follow (`recent`).
    pub fn recent(&self) -> &recent::Recent {
        &self.recent
    }

    /// Tells every watcher the node is stopping.
    pub fn close_watchers(&self) {
        self.stopping.send_replace(true);
    }

    /// Becomes true when the node starts stopping (see `close_watchers`).
    pub fn stopping(&self) -> watch::Receiver<bool> {
        self.stopping.subscribe()
    }

    /// Reads the watch history (see `history::read`).
    pub fn read_history(&self, from: u64, through: u64, max_bytes: usize) -> Result<history::Page> {
        history::read(&self.db, from, through, max_bytes)
    }

    pub(crate) fn publish_applied(&self, index: u64) {
        self.applied_tx.send_if_modified(|cur| {
            let changed = index != *cur;
            *cur = index;
            changed
        });
    }

    /// The last applied log id and membership, as persisted.
    pub fn applied_state(&self) -> Result<(Option<ipb::LogId>, Option<ipb::StoredMembership>)> {
        Ok((
            read_meta(&self.db, meta::APPLIED)?,
            read_meta(&self.db, meta::MEMBERSHIP)?,
        ))
    }

    /// Reads one handle, hiding it if it expired at `now`.
    pub fn get_handle(&self, ns: &str, store: &str, id: &str, now: &ExpiryTime) -> Result<Option<Record>> {
        let key = keys::handle_key(ns, store, id);
        let Some(raw) = self.db.get_pinned_cf(db::cf(&self.db, CF_KV), &key)? else {
            return Ok(None);
        };
        let rec = decode::<Record>(&raw, "kv")?;
        Ok(now.is_live(&rec)?.then_some(rec))
    }

    /// Reads one state key, hiding it if it expired at `now`.
    pub fn get_state(&self, ns: &str, key: &str, now: &ExpiryTime) -> Result<Option<Record>> {
        let Some(raw) = self
            .db
            .get_pinned_cf(db::cf(&self.db, CF_KV), keys::state_key(ns, key))?
        else {
            return Ok(None);
        };
        let rec = decode::<Record>(&raw, "kv")?;
        Ok(now.is_live(&rec)?.then_some(rec))
    }

    /// Reads several state keys from one consistent snapshot.
    pub fn get_state_many(&self, ns: &str, keys_: &[String], now: &ExpiryTime) -> Result<Vec<Option<Record>>> {
        let snap = self.db.snapshot();
        let cf = db::cf(&self.db, CF_KV);
        let mut out = Vec::with_capacity(keys_.len());
        for k in keys_ {
            let rec = match snap.get_cf(cf, keys::state_key(ns, k))? {
                Some(raw) => {
                    let rec = decode::<Record>(&raw, "kv")?;
                    now.is_live(&rec)?.then_some(rec)
                }
                None => None,
            };
            out.push(rec);
        }
        Ok(out)
    }

    /// One page of live state keys under `prefix`, in key order, strictly
    /// after `after` if given. Stops at `limit` keys or once the page holds
    /// `max_bytes` of values, so a page is bounded whatever the data.
    pub fn list_state(&self, ns: &str, page: &ListQuery<'_>, now: &ExpiryTime) -> Result<ListPage> {
        self.list_under(keys::state_ns_prefix(ns), page, now)
    }

    /// One page of the handles of a store whose ids begin with
    /// `page.prefix`, as `list_state` lists keys.
    pub fn list_handles(&self, ns: &str, store: &str, page: &ListQuery<'_>, now: &ExpiryTime) -> Result<ListPage> {
        self.list_under(keys::handle_store_prefix(ns, store), page, now)
    }

    /// One page of the entries under `base` (a namespace's state keys, a
    /// store's handles) named `page.prefix...`, as `page.held` says.
    fn list_under(&self, base: Vec<u8>, page: &ListQuery<'_>, now: &ExpiryTime) -> Result<ListPage> {
        let under = |name: &str| [base.as_slice(), name.as_bytes()].concat();
        let prefix = under(page.prefix);
        let start = match page.after {
            Some(a) if under(a) >= prefix => {
                let mut k = under(a);
                k.push(0);
                k
            }
            _ => prefix.clone(),
        };
        let mut opts = ReadOptions::default();
        if let Some(end) = keys::prefix_end(&prefix) {
            opts.set_iterate_upper_bound(end);
        }
        let iter = self.db.iterator_cf_opt(
            db::cf(&self.db, CF_KV),
            opts,
            IteratorMode::From(&start, rocksdb::Direction::Forward),
        );
        let mut entries = Vec::new();
        let mut bytes = 0usize;
        let mut more = false;
        for item in iter {
            let (k, v) = item?;
            let rec = decode::<Record>(&v, "kv")?;
            let wanted = match page.held {
                Held::Live => now.is_live(&rec)?,
                Held::Expired => !now.is_live(&rec)?,
                Held::Any => true,
            };
            if !wanted {
                continue;
            }
            if entries.len() >= page.limit || bytes >= page.max_bytes {
                more = true;
                break;
            }
            let key = String::from_utf8_lossy(&k[base.len()..]).into_owned();
            bytes += key.len() + if page.with_values { rec.value.len() } else { 0 };
            entries.push((key, rec));
        }
        Ok(ListPage { entries, more })
    }

    /// Every namespace's usage (handles and state keys, live or awaiting
    /// expiry), by name.
    pub fn usage(&self) -> Result<Vec<(String, Usage)>> {
        let prefix = [keys::USAGE_TAG];
        let mut opts = ReadOptions::default();
        opts.set_iterate_upper_bound(vec![keys::USAGE_TAG + 1]);
        let iter = self.db.iterator_cf_opt(
            db::cf(&self.db, CF_SM_META),
            opts,
            IteratorMode::From(&prefix, rocksdb::Direction::Forward),
        );
        let mut out = Vec::new();
        for item in iter {
            let (k, v) = item?;
            let u = Usage::decode(&v).ok_or(StateError::Decode {
                what: "usage",
                err: format!("{} bytes", v.len()),
            })?;
            out.push((String::from_utf8_lossy(&k[1..]).into_owned(), u));
        }
        Ok(out)
    }

    /// A namespace's key ring, oldest key first.
    pub fn keyring(&self, ns: &str) -> Result<Vec<ipb::KeyRecord>> {
        let prefix = keys::keyring_prefix(ns);
        let mut opts = ReadOptions::default();
        if let Some(end) = keys::prefix_end(&prefix) {
            opts.set_iterate_upper_bound(end);
        }
        let iter = self.db.iterator_cf_opt(
            db::cf(&self.db, CF_KV),
            opts,
            IteratorMode::From(&prefix, rocksdb::Direction::Forward),
        );
        let mut out = Vec::new();
        for item in iter {
            let (_, v) = item?;
            let rec = decode::<Record>(&v, "kv")?;
            out.push(decode::<ipb::KeyRecord>(&rec.value, "keyring")?);
        }
        out.sort_by(|a, b| (a.created_ms, a.id.len(), &a.id).cmp(&(b.created_ms, b.id.len(), &b.id)));
        Ok(out)
    }

    /// The number of live handles in one store at `now`: the stored count
    /// minus entries that are due but not yet swept (read from the expiry
    /// index, which the sweep keeps short), from one consistent snapshot.
    /// Always depends on expiry.
    pub fn len(&self, ns: &str, store: &str, now: &ExpiryTime) -> Result<u64> {
        let now_ms = now.at()?;
        let scope = keys::handle_store_prefix(ns, store);
        let snap = self.db.snapshot();
        let count = decode_opt_u64(
            snap.get_cf(db::cf(&self.db, CF_SM_META), keys::count_key(&scope))?,
            "store count",
        )?;
        let mut due = 0u64;
        let mut opts = ReadOptions::default();
        opts.set_iterate_upper_bound(keys::expiry_key(now_ms.saturating_add(1), &[]));
        let iter = snap.iterator_cf_opt(db::cf(&self.db, CF_EXPIRY), opts, IteratorMode::Start);
        for item in iter {
            let (k, _) = item?;
            if let Some((_, key)) = keys::split_expiry_key(&k)
                && key.starts_with(&scope)
            {
                due += 1;
            }
        }
        Ok(count.saturating_sub(due))
    }

    /// Entries whose expiry has passed at `now_ms`, oldest first, at most
    /// `limit`: the input of one sweep command.
    pub fn due_expiries(&self, now_ms: u64, limit: usize) -> Result<Vec<ipb::ExpireItem>> {
        let mut opts = ReadOptions::default();
        opts.set_iterate_upper_bound(keys::expiry_key(now_ms.saturating_add(1), &[]));
        let iter = self
            .db
            .iterator_cf_opt(db::cf(&self.db, CF_EXPIRY), opts, IteratorMode::Start);
        let mut out = Vec::new();
        for item in iter.take(limit) {
            let (k, _) = item?;
            if let Some((ts, key)) = keys::split_expiry_key(&k) {
                out.push(ipb::ExpireItem {
                    key: key.to_vec(),
                    expires_at_ms: ts,
                });
            }
        }
        Ok(out)
    }

    /// Applies committed entries (blocking: call from a blocking thread).
    pub fn apply(&self, batch: ApplyBatch) -> Result<Vec<Option<ipb::ProposalResult>>> {
        let last = batch.last_log_id.index;
        let applied = apply::apply(&self.db, &self.limits, &self.apply_hints, self.auth(), batch)?;
        self.applied_clock.fetch_max(applied.clock, Ordering::AcqRel);
        if let Some(auth) = applied.auth {
            // Before the index: a read gated on this index sees this auth.
            self.publish_auth(auth);
        }
        if let Some(id) = applied.cluster_id {
            *self.cluster_id.write().unwrap_or_else(|p| p.into_inner()) = id.into();
        }
        // The index before the changes: a watcher that subscribed and then
        // read the index either reads these changes from the history or
        // receives them here.
        self.publish_applied(last);
        self.recent.publish(last, applied.events);
        Ok(applied.results)
    }
}

/// Entries and bytes, as stored or as a change.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub entries: i64,
    pub bytes: i64,
}

impl Usage {
    /// What storing `rec` under `key` holds.
    pub fn of(key: &[u8], rec: &Record) -> Self {
        Usage {
            entries: 1,
            bytes: (key.len() + rec.value.len()) as i64,
        }
    }

    pub fn add(&mut self, d: Usage) {
        self.entries += d.entries;
        self.bytes += d.bytes;
    }

    /// Decodes a stored usage (entries BE ++ bytes BE).
    pub fn decode(raw: &[u8]) -> Option<Self> {
        let (e, b) = raw.split_at_checked(8)?;
        Some(Usage {
            entries: u64::from_be_bytes(e.try_into().ok()?) as i64,
            bytes: u64::from_be_bytes(b.try_into().ok()?) as i64,
        })
    }

    pub fn encode(&self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&(self.entries.max(0) as u64).to_be_bytes());
        out[8..].copy_from_slice(&(self.bytes.max(0) as u64).to_be_bytes());
        out
    }
}

/// What one page of a listing asks for.
pub struct ListQuery<'a> {
    pub prefix: &'a str,
    pub after: Option<&'a str>,
    pub limit: usize,
    pub with_values: bool,
    pub max_bytes: usize,
    pub held: Held,
}

/// Which entries a listing shows, by their expiry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// Those not expired (what reads see).
    Live,
    /// Those expired and not swept yet.
    Expired,
    /// Both.
    Any,
}

/// One page of a listing.
pub struct ListPage {
    pub entries: Vec<(String, Record)>,
    /// More live keys follow the last entry.
    pub more: bool,
}

/// Whether a record is visible at `now_ms`.
pub fn is_live(rec: &Record, now_ms: u64) -> bool {
    rec.expires_at_ms == 0 || rec.expires_at_ms > now_ms
}

pub(crate) fn read_meta<M: Message + Default>(db: &DB, key: &[u8]) -> Result<Option<M>> {
    match db.get_pinned_cf(db::cf(db, CF_SM_META), key)? {
        Some(raw) => Ok(Some(decode(&raw, "sm_meta")?)),
        None => Ok(None),
    }
}

pub(crate) fn decode<M: Message + Default>(raw: &[u8], what: &'static str) -> Result<M> {
    M::decode(raw).map_err(|e| StateError::Decode {
        what,
        err: e.to_string(),
    })
}

fn read_cluster_id(db: &DB) -> Result<Arc<str>> {
    let raw = db.get_cf(db::cf(db, CF_SM_META), meta::CLUSTER_ID)?.unwrap_or_default();
    String::from_utf8(raw).map(Into::into).map_err(|e| StateError::Decode {
        what: "cluster_id",
        err: e.to_string(),
    })
}

fn read_clock(db: &DB) -> Result<u64> {
    decode_opt_u64(db.get_cf(db::cf(db, CF_SM_META), meta::CLOCK)?, "clock")
}

/// A stored big-endian u64 (counters, the clock); a value of any other
/// length is corrupt, never taken as 0.
pub(crate) fn decode_u64(raw: &[u8], what: &'static str) -> Result<u64> {
    raw.try_into().map(u64::from_be_bytes).map_err(|_| StateError::Decode {
        what,
        err: format!("{} bytes where a u64 (8 bytes) was stored", raw.len()),
    })
}

/// [`decode_u64`] of a value that may be absent (then 0).
pub(crate) fn decode_opt_u64(raw: Option<impl AsRef<[u8]>>, what: &'static str) -> Result<u64> {
    raw.map_or(Ok(0), |v| decode_u64(v.as_ref(), what))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_stored_u64_is_an_error_not_zero() {
        assert_eq!(decode_u64(&7u64.to_be_bytes(), "x").expect("8 bytes"), 7);
        let err = decode_u64(&[1, 2, 3], "store count").expect_err("3 bytes");
        assert!(err.to_string().contains("store count"), "{err}");
        assert_eq!(decode_opt_u64(None::<Vec<u8>>, "x").expect("absent"), 0);
        assert!(decode_opt_u64(Some(vec![0u8; 9]), "x").is_err());
    }
}

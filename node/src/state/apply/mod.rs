//! Applying committed Raft entries: one RocksDB write batch per call, with an
//! in-memory overlay so later commands in the batch see earlier ones.
//!
//! Everything here is deterministic given the entries and the prior state:
//! time comes from the leader's stamp in each proposal (never this node's
//! clock), so every replica computes the same expiries and answers.

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use handlestore_proto::internal::v1 as ipb;
use handlestore_proto::v1 as pb;
use ipb::command::Op;
use prost::Message;
use rocksdb::{DB, Direction, IteratorMode, ReadOptions, WriteBatch};

use super::answers::{AnswerHints, Answers, Seen};
use super::auth::AuthView;
use super::history::{self, Event};
use super::{Record, Result, StateLimits, Usage, decode, decode_opt_u64, is_live, keys, meta};
use crate::failpoints;
use crate::storage::db::{self, CF_EXPIRY, CF_HISTORY, CF_KV, CF_SM_META};
use handlestore_proto::v1::EventKind;

mod auth;
mod keyring;
mod policy;

/// A run of committed entries to apply.
pub struct ApplyBatch {
    pub entries: Vec<ApplyEntry>,
    /// The log id of the last entry (stored as the applied id).
    pub last_log_id: ipb::LogId,
    /// The membership to record, if an entry in the batch changed it.
    pub membership: Option<ipb::StoredMembership>,
}

pub struct ApplyEntry {
    pub index: u64,
    /// None for blank and membership entries.
    pub proposal: Option<ipb::Proposal>,
}

/// What applying a batch answers.
pub(super) struct Applied {
    /// Each entry's results (None for blank and membership entries).
    pub results: Vec<Option<ipb::ProposalResult>>,
    /// The state machine's clock after the batch.
    pub clock: u64,
    /// The auth state after the batch, if the batch changed it.
    pub auth: Option<ipb::AuthState>,
    /// The changes to handles and state keys, in order.
    pub events: Vec<Event>,
    /// The cluster's name, if the batch gave it one.
    pub cluster_id: Option<String>,
}

/// Applies `batch`. The hints are taken for the batch and put back once it
/// is written.
pub(super) fn apply(
    db: &DB,
    limits: &StateLimits,
    hints: &Mutex<AnswerHints>,
    auth: Arc<AuthView>,
    batch: ApplyBatch,
) -> Result<Applied> {
    let taken = std::mem::take(&mut *hints.lock().unwrap_or_else(|p| p.into_inner()));
    let mut tx = Tx::new(db, limits, taken, auth)?;
    let mut out = Vec::with_capacity(batch.entries.len());
    let several = batch.entries.len() > 1;
    for entry in batch.entries {
        if several && !out.is_empty() {
            failpoints::hit(failpoints::APPLY_MID_BATCH);
        }
        let Some(proposal) = entry.proposal else {
            out.push(None);
            continue;
        };
        tx.clock = tx.clock.max(proposal.stamp_ms);
        let mut results = Vec::with_capacity(proposal.commands.len());
        for cmd in proposal.commands {
            results.push(tx.apply_command(entry.index, cmd)?);
        }
        out.push(Some(ipb::ProposalResult { results }));
    }
    let clock = tx.clock;
    let auth = tx.auth.changed.clone();
    let events = std::mem::take(&mut tx.events);
    let cluster_id = tx.cluster_id.take();
    let kept = tx.commit(&batch.last_log_id, batch.membership.as_ref())?;
    failpoints::hit(failpoints::APPLY_AFTER_COMMIT);
    *hints.lock().unwrap_or_else(|p| p.into_inner()) = kept;
    Ok(Applied {
        results: out,
        clock,
        auth,
        events,
        cluster_id,
    })
}

/// A data key with its record.
type KeyedRecord = (Vec<u8>, Record);

/// How an entry write treats an existing live entry.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Fail with ALREADY_EXISTS.
    Create,
    Upsert,
}

/// One entry write, for handles and state keys alike.
struct EntryWrite {
    key: Vec<u8>,
    /// How the key is named in messages ("handle X", "key Y").
    label: String,
    value: Vec<u8>,
    json: bool,
    mode: Mode,
    ttl_ms: u64,
    keep_ttl: bool,
    expected_revision: Option<u64>,
    /// The owner of the entry if this write creates it.
    owner: String,
}

struct Tx<'a> {
    db: &'a DB,
    limits: &'a StateLimits,
    wb: WriteBatch,
    clock: u64,
    /// Entries written or deleted in this batch (None = deleted).
    kv: BTreeMap<Vec<u8>, Option<Record>>,
    counts: HashMap<Vec<u8>, i64>,
    answers: Answers<'a>,
    /// The auth state as this batch sees it.
    auth: auth::TxAuth,
    /// Usage changes per namespace.
    usage: HashMap<String, Usage>,
    /// The entry being applied, and how many changes it has recorded.
    index: u64,
    seq: u32,
    /// The changes recorded in the history, in order.
    events: Vec<Event>,
    /// The name this batch gave the cluster.
    cluster_id: Option<String>,
}

fn ok() -> ipb::CommandResult {
    ipb::CommandResult::default()
}

fn fail(code: ipb::ResultCode, message: impl Into<String>) -> ipb::CommandResult {
    ipb::CommandResult {
        code: code as i32,
        message: message.into(),
        ..Default::default()
    }
}

fn mismatch(label: &str, current: u64, expected: u64) -> ipb::CommandResult {
    let mut res = fail(
        ipb::ResultCode::ResultRevisionMismatch,
        format!("{label} is at revision {current}, not the expected {expected}"),
    );
    res.current_revision = current;
    res
}

/// A write below its client's floor: not applied (again).
fn stale(w: &pb::WriteId, floor: u64) -> ipb::CommandResult {
    fail(
        ipb::ResultCode::ResultStaleWrite,
        format!(
            "write {} of client {:x} is below the first incomplete write that client reported since ({floor}): \
             it was answered or abandoned before and is not applied again",
            w.seq, w.client_id
        ),
    )
}

fn gone(label: &str) -> ipb::CommandResult {
    fail(
        ipb::ResultCode::ResultNotFound,
        format!("{label} does not exist (or expired)"),
    )
}

impl<'a> Tx<'a> {
    fn new(db: &'a DB, limits: &'a StateLimits, hints: AnswerHints, auth: Arc<AuthView>) -> Result<Self> {
        let meta_cf = db::cf(db, CF_SM_META);
        let clock = decode_opt_u64(db.get_cf(meta_cf, meta::CLOCK)?, "clock")?;
        Ok(Self {
            db,
            limits,
            wb: WriteBatch::default(),
            clock,
            kv: BTreeMap::new(),
            counts: HashMap::new(),
            answers: Answers::new(db, hints)?,
            auth: auth::TxAuth::new(auth),
            usage: HashMap::new(),
            index: 0,
            seq: 0,
            events: Vec::new(),
            cluster_id: None,
        })
    }

    fn apply_command(&mut self, index: u64, cmd: ipb::Command) -> Result<ipb::CommandResult> {
        if index != self.index {
            (self.index, self.seq) = (index, 0);
        }
        let write_id = cmd.write_id.filter(|w| w.client_id != 0);
        if let Some(w) = &write_id {
            match self.answers.seen(w)? {
                Seen::New => {}
                Seen::Answered(first) => return Ok(first),
                Seen::Stale { floor } => return Ok(stale(w, floor)),
            }
        }
        if let Some(mut refused) = self.auth_refusal(&cmd) {
            // Not remembered: the caller authorizes again and retries
            // under the same write id.
            refused.revision = index;
            return Ok(refused);
        }
        let caller = policy::Caller::of(&cmd);
        let mut result = match cmd.op {
            Some(Op::HandleWrite(w)) => self.handle_write(index, w, &caller)?,
            Some(Op::HandleDelete(d)) => self.handle_delete(d, &caller)?,
            Some(Op::StateWrite(w)) => self.write_entry(index, state_write(w))?,
            Some(Op::StateDelete(d)) => {
                let label = format!("key {}", d.key);
                self.delete_entry(keys::state_key(&d.namespace, &d.key), &label, d.expected_revision)?
            }
            Some(Op::StateDeletePrefix(d)) => self.delete_prefix(d)?,
            Some(Op::StateBatch(b)) => self.state_batch(index, b)?,
            Some(Op::Expire(e)) => self.expire(e)?,
            Some(Op::KeyringRotate(r)) => self.keyring_rotate(index, r)?,
            Some(Op::KeyringRetire(r)) => self.keyring_retire(r)?,
            Some(Op::AuthChange(c)) => self.auth_change(index, c)?,
            Some(Op::ClusterIdentity(c)) => self.name_cluster(c)?,
            None => fail(ipb::ResultCode::ResultInvalid, "empty command"),
        };
        result.revision = index;
        if let Some(w) = write_id {
            self.answers.remember(&w, &result, self.clock)?;
        }
        Ok(result)
    }

    /// Names the cluster, unless it has a name: the first name committed
    /// stays.
    fn name_cluster(&mut self, c: ipb::ClusterIdentity) -> Result<ipb::CommandResult> {
        let meta_cf = db::cf(self.db, CF_SM_META);
        let named = self.cluster_id.is_some() || self.db.get_pinned_cf(meta_cf, meta::CLUSTER_ID)?.is_some();
        if named || c.id.is_empty() {
            return Ok(fail(ipb::ResultCode::ResultInvalid, "the cluster has a name already"));
        }
        self.wb.put_cf(meta_cf, meta::CLUSTER_ID, c.id.as_bytes());
        self.cluster_id = Some(c.id);
        Ok(ok())
    }

    fn handle_write(&mut self, index: u64, w: ipb::HandleWrite, caller: &policy::Caller) -> Result<ipb::CommandResult> {
        if w.store.is_empty() || w.id.is_empty() {
            return Ok(fail(ipb::ResultCode::ResultInvalid, "store and id must not be empty"));
        }
        let mode = if w.mode == ipb::WriteMode::Create as i32 {
            Mode::Create
        } else {
            Mode::Upsert
        };
        let key = keys::handle_key(&w.namespace, &w.store, &w.id);
        let label = format!("handle {}", w.id);
        let bound = self.owner_bound(&w.namespace, &w.store);
        if bound && mode == Mode::Upsert && self.owned_by_another(&key, caller)? {
            return Ok(gone(&label));
        }
        let mut res = self.write_entry(
            index,
            EntryWrite {
                key,
                label,
                value: w.value,
                json: false,
                mode,
                ttl_ms: w.ttl_ms,
                keep_ttl: w.keep_ttl,
                expected_revision: w.expected_revision,
                owner: if bound { caller.subject.clone() } else { String::new() },
            },
        )?;
        if res.code == ipb::ResultCode::ResultOk as i32 {
            res.id = w.id;
        }
        Ok(res)
    }

    /// Deletes a handle; in an owner-bound store, another user's handle is
    /// as good as absent.
    fn handle_delete(&mut self, d: ipb::HandleDelete, caller: &policy::Caller) -> Result<ipb::CommandResult> {
        let key = keys::handle_key(&d.namespace, &d.store, &d.id);
        let label = format!("handle {}", d.id);
        if self.owner_bound(&d.namespace, &d.store) && self.owned_by_another(&key, caller)? {
            return Ok(if d.expected_revision.is_some() {
                gone(&label)
            } else {
                ok()
            });
        }
        self.delete_entry(key, &label, d.expected_revision)
    }

    /// Whether the live entry at `key` belongs to someone `caller` may not
    /// see.
    fn owned_by_another(&mut self, key: &[u8], caller: &policy::Caller) -> Result<bool> {
        let old = self.get_record(key)?;
        let live = old.filter(|r| is_live(r, self.clock));
        Ok(live.is_some_and(|r| !caller.all_owners && r.owner != caller.subject))
    }

    /// Checks a write's preconditions against the current entry; None if it
    /// may proceed.
    fn precondition(&self, live: Option<&Record>, w: &EntryWrite) -> Option<ipb::CommandResult> {
        if let Some(expected) = w.expected_revision {
            match live {
                // Revision 0: create only (no live entry may be there).
                None if expected == 0 => {}
                None => return Some(gone(&w.label)),
                Some(r) if r.mod_revision != expected => return Some(mismatch(&w.label, r.mod_revision, expected)),
                Some(_) => {}
            }
        }
        if w.mode == Mode::Create && live.is_some() {
            return Some(fail(
                ipb::ResultCode::ResultAlreadyExists,
                format!("{} already exists", w.label),
            ));
        }
        None
    }

    fn write_entry(&mut self, index: u64, w: EntryWrite) -> Result<ipb::CommandResult> {
        let old = self.get_record(&w.key)?;
        let live = old.as_ref().filter(|r| is_live(r, self.clock));
        if let Some(failed) = self.precondition(live, &w) {
            return Ok(failed);
        }
        if let Some(ns) = keys::namespace_of(&w.key).map(String::from)
            && let Some(refused) = self.over_quota(&ns, growth(&w, old.as_ref()))?
        {
            return Ok(refused);
        }
        Ok(self.put_checked(index, w, old))
    }

    /// Writes an entry whose preconditions hold.
    fn put_checked(&mut self, index: u64, w: EntryWrite, old: Option<Record>) -> ipb::CommandResult {
        let live = old.as_ref().filter(|r| is_live(r, self.clock));
        let expires_at_ms = match live {
            Some(r) if w.keep_ttl => r.expires_at_ms,
            _ if w.ttl_ms > 0 => self.clock.saturating_add(w.ttl_ms),
            _ => 0,
        };
        let existed = live.is_some();
        let rec = Record {
            value: w.value,
            create_revision: live.map(|r| r.create_revision).unwrap_or(index),
            mod_revision: index,
            expires_at_ms,
            owner: live.map(|r| r.owner.clone()).unwrap_or(w.owner),
            json: w.json,
        };
        self.put_record(w.key, rec, old.as_ref());
        ipb::CommandResult {
            existed,
            expires_at_ms,
            ..ok()
        }
    }

    fn delete_entry(
        &mut self,
        key: Vec<u8>,
        label: &str,
        expected_revision: Option<u64>,
    ) -> Result<ipb::CommandResult> {
        let Some(old) = self.get_record(&key)? else {
            return Ok(if expected_revision.is_some() { gone(label) } else { ok() });
        };
        let live = is_live(&old, self.clock);
        if let Some(expected) = expected_revision {
            if !live {
                return Ok(gone(label));
            }
            if old.mod_revision != expected {
                return Ok(mismatch(label, old.mod_revision, expected));
            }
        }
        // An expired entry is removed as well, but was not "existing".
        self.delete_record(key, &old);
        Ok(ipb::CommandResult {
            existed: live,
            count: live as u64,
            ..ok()
        })
    }

    /// Deletes up to `limit` entries under a prefix, atomically (they are all
    /// in this command's write batch). `count` is how many were live.
    fn delete_prefix(&mut self, d: ipb::StateDeletePrefix) -> Result<ipb::CommandResult> {
        if d.prefix.is_empty() {
            return Ok(fail(
                ipb::ResultCode::ResultInvalid,
                "a prefix delete needs a non-empty prefix",
            ));
        }
        let limit = d.limit.clamp(1, handlestore_proto::limits::MAX_PREFIX_DELETE) as usize;
        let prefix = keys::state_key(&d.namespace, &d.prefix);
        let (entries, more) = self.range(&prefix, limit)?;
        let mut deleted = 0u64;
        for (key, rec) in entries {
            deleted += is_live(&rec, self.clock) as u64;
            self.delete_record(key, &rec);
        }
        Ok(ipb::CommandResult {
            count: deleted,
            existed: deleted > 0,
            more,
            ..ok()
        })
    }

    /// All or nothing: every precondition is checked before anything is
    /// written. (The api rejects batches that name a key twice.)
    fn state_batch(&mut self, index: u64, b: ipb::StateBatch) -> Result<ipb::CommandResult> {
        let writes: Vec<EntryWrite> = b.writes.into_iter().map(state_write).collect();
        let mut olds = Vec::with_capacity(writes.len());
        for w in &writes {
            let old = self.get_record(&w.key)?;
            let live = old.as_ref().filter(|r| is_live(r, self.clock));
            if let Some(mut failed) = self.precondition(live, w) {
                failed.message = format!("batch not applied: {}", failed.message);
                return Ok(failed);
            }
            olds.push(old);
        }
        let mut grows: BTreeMap<String, Usage> = BTreeMap::new();
        for (w, old) in writes.iter().zip(&olds) {
            if let Some(ns) = keys::namespace_of(&w.key) {
                let g = grows.entry(ns.to_string()).or_default();
                let d = growth(w, old.as_ref());
                (g.entries, g.bytes) = (g.entries + d.entries, g.bytes + d.bytes);
            }
        }
        for (ns, grow) in grows {
            if let Some(mut refused) = self.over_quota(&ns, grow)? {
                refused.message = format!("batch not applied: {}", refused.message);
                return Ok(refused);
            }
        }
        let n = writes.len() as u64;
        for (w, old) in writes.into_iter().zip(olds) {
            self.put_checked(index, w, old);
        }
        Ok(ipb::CommandResult { count: n, ..ok() })
    }

    fn expire(&mut self, e: ipb::Expire) -> Result<ipb::CommandResult> {
        let mut removed = 0u64;
        for item in e.items {
            let current = self.get_record(&item.key)?;
            match current {
                Some(rec)
                    if rec.expires_at_ms == item.expires_at_ms
                        && rec.expires_at_ms != 0
                        && rec.expires_at_ms <= self.clock =>
                {
                    self.delete_record(item.key, &rec);
                    removed += 1;
                }
                // Renewed since the sweep read the index: leave it. A stale
                // index entry (the record is gone or has another expiry) is
                // dropped.
                Some(rec) if rec.expires_at_ms == item.expires_at_ms => {}
                _ => self.wb.delete_cf(
                    db::cf(self.db, CF_EXPIRY),
                    keys::expiry_key(item.expires_at_ms, &item.key),
                ),
            }
        }
        self.answers.age_out(e.dedup_before_ms, self.limits.dedup_max_entries)?;
        Ok(ipb::CommandResult { count: removed, ..ok() })
    }

    // ---- records ----------------------------------------------------------

    fn get_record(&mut self, key: &[u8]) -> Result<Option<Record>> {
        if let Some(v) = self.kv.get(key) {
            return Ok(v.clone());
        }
        match self.db.get_pinned_cf(db::cf(self.db, CF_KV), key)? {
            Some(raw) => Ok(Some(decode(&raw, "kv")?)),
            None => Ok(None),
        }
    }

    /// The first `limit` entries under `prefix` (live or expired), as this
    /// batch sees them: the database merged with the overlay. Also says
    /// whether more exist.
    fn range(&mut self, prefix: &[u8], limit: usize) -> Result<(Vec<KeyedRecord>, bool)> {
        let end = keys::prefix_end(prefix);
        let in_range = |k: &[u8]| k.starts_with(prefix);
        // The overlay can hide at most as many database entries as it holds
        // in the range, so reading that many more suffices.
        let overlay: Vec<(Vec<u8>, Option<Record>)> = self
            .kv
            .range(prefix.to_vec()..)
            .take_while(|(k, _)| in_range(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut opts = ReadOptions::default();
        if let Some(end) = &end {
            opts.set_iterate_upper_bound(end.clone());
        }
        let iter = self.db.iterator_cf_opt(
            db::cf(self.db, CF_KV),
            opts,
            IteratorMode::From(prefix, Direction::Forward),
        );
        let mut merged: BTreeMap<Vec<u8>, Option<Record>> = BTreeMap::new();
        for item in iter.take(limit + 1 + overlay.len()) {
            let (k, v) = item?;
            merged.insert(k.to_vec(), Some(decode(&v, "kv")?));
        }
        merged.extend(overlay);
        let mut present = merged.into_iter().filter_map(|(k, v)| v.map(|r| (k, r)));
        let out: Vec<_> = present.by_ref().take(limit).collect();
        let more = present.next().is_some();
        Ok((out, more))
    }

    fn put_record(&mut self, key: Vec<u8>, rec: Record, old: Option<&Record>) {
        let expiry_cf = db::cf(self.db, CF_EXPIRY);
        if let Some(old) = old
            && old.expires_at_ms != 0
        {
            self.wb.delete_cf(expiry_cf, keys::expiry_key(old.expires_at_ms, &key));
        }
        if rec.expires_at_ms != 0 {
            self.wb.put_cf(expiry_cf, keys::expiry_key(rec.expires_at_ms, &key), []);
        }
        if old.is_none() {
            self.bump_count(&key, 1);
        }
        if let Some(old) = old.filter(|o| !is_live(o, self.clock)) {
            self.record_event(EventKind::Expire, &key, history::removed(old));
        }
        self.record_event(EventKind::Put, &key, rec.clone());
        self.track_usage(&key, Some(&rec), old);
        self.wb.put_cf(db::cf(self.db, CF_KV), &key, rec.encode_to_vec());
        self.kv.insert(key, Some(rec));
    }

    fn delete_record(&mut self, key: Vec<u8>, old: &Record) {
        if old.expires_at_ms != 0 {
            self.wb
                .delete_cf(db::cf(self.db, CF_EXPIRY), keys::expiry_key(old.expires_at_ms, &key));
        }
        self.wb.delete_cf(db::cf(self.db, CF_KV), &key);
        let kind = if is_live(old, self.clock) {
            EventKind::Delete
        } else {
            EventKind::Expire
        };
        self.record_event(kind, &key, history::removed(old));
        self.bump_count(&key, -1);
        self.track_usage(&key, None, Some(old));
        self.kv.insert(key, None);
    }

    /// Records a change in the watch history (handles and state keys
    /// only), in this batch's write.
    fn record_event(&mut self, kind: EventKind, key: &[u8], record: Record) {
        if !history::is_watched(key) {
            return;
        }
        let hk = history::key(self.index, self.seq);
        self.seq += 1;
        self.wb
            .put_cf(db::cf(self.db, CF_HISTORY), hk, history::encode(kind, key, &record));
        self.events.push(Event {
            revision: self.index,
            kind,
            key: key.to_vec(),
            record,
        });
    }

    fn bump_count(&mut self, key: &[u8], delta: i64) {
        if let Some(scope) = keys::count_scope(key) {
            *self.counts.entry(scope.to_vec()).or_default() += delta;
        }
    }

    // ---- commit -----------------------------------------------------------

    /// Writes the batch; returns the answer hints to keep.
    fn commit(mut self, last: &ipb::LogId, membership: Option<&ipb::StoredMembership>) -> Result<AnswerHints> {
        let meta_cf = db::cf(self.db, CF_SM_META);
        for (scope, delta) in std::mem::take(&mut self.counts) {
            if delta == 0 {
                continue;
            }
            let ck = keys::count_key(&scope);
            let cur = decode_opt_u64(self.db.get_cf(meta_cf, &ck)?, "store count")?;
            let new = (cur as i64).saturating_add(delta).max(0) as u64;
            if new == 0 {
                self.wb.delete_cf(meta_cf, ck);
            } else {
                self.wb.put_cf(meta_cf, ck, new.to_be_bytes());
            }
        }
        self.wb.put_cf(meta_cf, meta::CLOCK, self.clock.to_be_bytes());
        self.wb.put_cf(meta_cf, meta::APPLIED, last.encode_to_vec());
        self.trim_history(last.index)?;
        if let Some(m) = membership {
            self.wb.put_cf(meta_cf, meta::MEMBERSHIP, m.encode_to_vec());
        }
        if let Some(auth) = &self.auth.changed {
            self.wb.put_cf(meta_cf, meta::AUTH, auth.encode_to_vec());
        }
        self.commit_usage()?;
        let hints = self.answers.commit(&mut self.wb);
        // Not synced here: the Raft log (same WAL) is the durable source, and
        // a restart re-applies from the persisted applied id.
        self.db.write(self.wb)?;
        Ok(hints)
    }
}

impl Tx<'_> {
    /// Drops the history older than the revisions kept, once a step's
    /// worth has aged out (one range delete, no scan).
    fn trim_history(&mut self, last: u64) -> Result<()> {
        let floor = history::floor(self.db)?;
        if let Some(new) = history::next_floor(floor, last, self.limits.history_revisions) {
            let cf = db::cf(self.db, CF_HISTORY);
            self.wb
                .delete_range_cf(cf, history::key(floor, 0), history::key(new, 0));
            self.wb
                .put_cf(db::cf(self.db, CF_SM_META), meta::HISTORY_FLOOR, new.to_be_bytes());
        }
        Ok(())
    }
}

/// How much a write grows its namespace (negative where it shrinks it).
fn growth(w: &EntryWrite, old: Option<&Record>) -> Usage {
    let new = (w.key.len() + w.value.len()) as i64;
    match old {
        Some(o) => Usage {
            entries: 0,
            bytes: new - (w.key.len() + o.value.len()) as i64,
        },
        None => Usage { entries: 1, bytes: new },
    }
}

fn state_write(w: ipb::StateWrite) -> EntryWrite {
    EntryWrite {
        key: keys::state_key(&w.namespace, &w.key),
        label: format!("key {}", w.key),
        value: w.value,
        json: w.json,
        mode: Mode::Upsert,
        ttl_ms: w.ttl_ms,
        keep_ttl: w.keep_ttl,
        expected_revision: w.expected_revision,
        owner: String::new(),
    }
}

#[cfg(test)]
mod tests;

//! Applying committed Raft entries: one RocksDB write batch per call, with an
//! in-memory overlay so later commands in the batch see earlier ones.
//!
//! Everything here is deterministic given the entries and the prior state:
//! time comes from the leader's stamp in each proposal (never this node's
//! clock), so every replica computes the same expiries and answers.

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::sync::Mutex;

use handlestore_proto::v1 as pb;
use pb::command::Op;
use prost::Message;
use rocksdb::{DB, Direction, IteratorMode, ReadOptions, WriteBatch};

use super::{Record, Result, StateLimits, decode, decode_u64, is_live, keys, meta};
use crate::db::{self, CF_DEDUP, CF_DEDUP_AGE, CF_EXPIRY, CF_KV, CF_SM_META};

/// Most remembered answers one command prunes or ages out, so a single entry
/// never turns into an unbounded amount of work.
const MAX_DEDUP_REMOVALS_PER_COMMAND: usize = 10_000;
/// How far below a client's first incomplete write one write looks for
/// answers to forget.
const PRUNE_WINDOW: u64 = 256;
/// Most clients whose pruning `ApplyHints` remembers; past it the hints
/// start over (they only save work).
const MAX_PRUNE_HINTS: usize = 100_000;
/// Most keys one namespace's key ring holds.
const MAX_RING_KEYS: usize = 64;
/// Most keys one prefix delete removes.
pub const MAX_PREFIX_DELETE: u32 = 10_000;

/// A run of committed entries to apply.
pub struct ApplyBatch {
    pub entries: Vec<ApplyEntry>,
    /// The log id of the last entry (stored as the applied id).
    pub last_log_id: pb::LogId,
    /// The membership to record, if an entry in the batch changed it.
    pub membership: Option<pb::StoredMembership>,
}

pub struct ApplyEntry {
    pub index: u64,
    /// None for blank and membership entries.
    pub proposal: Option<pb::Proposal>,
}

/// What this node knows about the remembered answers in its database that
/// lets it skip the tombstones of answers it forgot before. Pure hints: the
/// answers forgotten are the same with or without them (so every node
/// forgets the same ones); they only save walking deleted keys. Dropped when
/// the state is replaced (snapshot install) or an apply fails.
#[derive(Default)]
pub(crate) struct ApplyHints {
    /// No remembered answer in the database is stamped below this.
    age_floor: u64,
    /// Per client, a range of sequence numbers `[lo, hi)` for which the
    /// database holds no remembered answer (it was pruned).
    pruned: HashMap<u64, (u64, u64)>,
}

/// Applies `batch`. The hints are taken for the batch and put back once it
/// is written.
pub(super) fn apply(
    db: &DB,
    limits: &StateLimits,
    hints: &Mutex<ApplyHints>,
    batch: ApplyBatch,
) -> Result<Vec<Option<pb::ProposalResult>>> {
    let mut tx = Tx::new(db, limits)?;
    tx.hints = std::mem::take(&mut *hints.lock().unwrap_or_else(|p| p.into_inner()));
    let mut out = Vec::with_capacity(batch.entries.len());
    for entry in batch.entries {
        let Some(proposal) = entry.proposal else {
            out.push(None);
            continue;
        };
        tx.clock = tx.clock.max(proposal.stamp_ms);
        let mut results = Vec::with_capacity(proposal.commands.len());
        for cmd in proposal.commands {
            results.push(tx.apply_command(entry.index, cmd)?);
        }
        out.push(Some(pb::ProposalResult { results }));
    }
    let mut kept = std::mem::take(&mut tx.hints);
    tx.commit(&batch.last_log_id, batch.membership.as_ref())?;
    if kept.pruned.len() > MAX_PRUNE_HINTS {
        kept.pruned.clear();
    }
    *hints.lock().unwrap_or_else(|p| p.into_inner()) = kept;
    Ok(out)
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
}

struct Tx<'a> {
    db: &'a DB,
    limits: &'a StateLimits,
    wb: WriteBatch,
    clock: u64,
    /// Entries written or deleted in this batch (None = deleted).
    kv: BTreeMap<Vec<u8>, Option<Record>>,
    counts: HashMap<Vec<u8>, i64>,
    dedup: HashMap<[u8; 16], Option<pb::DedupRecord>>,
    dedup_count: u64,
    /// Answers remembered in this batch, by (client, seq): their stamps.
    remembered: BTreeMap<(u64, u64), u64>,
    hints: ApplyHints,
}

fn ok() -> pb::CommandResult {
    pb::CommandResult::default()
}

fn fail(code: pb::ResultCode, message: impl Into<String>) -> pb::CommandResult {
    pb::CommandResult {
        code: code as i32,
        message: message.into(),
        ..Default::default()
    }
}

fn mismatch(label: &str, current: u64, expected: u64) -> pb::CommandResult {
    let mut res = fail(
        pb::ResultCode::ResultRevisionMismatch,
        format!("{label} is at revision {current}, not the expected {expected}"),
    );
    res.current_revision = current;
    res
}

fn gone(label: &str) -> pb::CommandResult {
    fail(
        pb::ResultCode::ResultNotFound,
        format!("{label} does not exist (or expired)"),
    )
}

impl<'a> Tx<'a> {
    fn new(db: &'a DB, limits: &'a StateLimits) -> Result<Self> {
        let meta_cf = db::cf(db, CF_SM_META);
        let clock = db.get_cf(meta_cf, meta::CLOCK)?.map(|v| decode_u64(&v)).unwrap_or(0);
        let dedup_count = db
            .get_cf(meta_cf, meta::DEDUP_COUNT)?
            .map(|v| decode_u64(&v))
            .unwrap_or(0);
        Ok(Self {
            db,
            limits,
            wb: WriteBatch::default(),
            clock,
            kv: BTreeMap::new(),
            counts: HashMap::new(),
            dedup: HashMap::new(),
            dedup_count,
            remembered: BTreeMap::new(),
            hints: ApplyHints::default(),
        })
    }

    fn apply_command(&mut self, index: u64, cmd: pb::Command) -> Result<pb::CommandResult> {
        let write_id = cmd.write_id.filter(|w| w.client_id != 0);
        if let Some(w) = &write_id
            && let Some(prev) = self.dedup_get(w.client_id, w.seq)?
        {
            return Ok(prev.result.unwrap_or_default());
        }
        let mut result = match cmd.op {
            Some(Op::HandleWrite(w)) => self.handle_write(index, w)?,
            Some(Op::HandleDelete(d)) => {
                let label = format!("handle {}", d.id);
                self.delete_entry(
                    keys::handle_key(&d.namespace, &d.store, &d.id),
                    &label,
                    d.expected_revision,
                )?
            }
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
            None => fail(pb::ResultCode::ResultInvalid, "empty command"),
        };
        result.revision = index;
        if let Some(w) = write_id {
            self.remember(&w, &result)?;
        }
        Ok(result)
    }

    fn handle_write(&mut self, index: u64, w: pb::HandleWrite) -> Result<pb::CommandResult> {
        if w.store.is_empty() || w.id.is_empty() {
            return Ok(fail(pb::ResultCode::ResultInvalid, "store and id must not be empty"));
        }
        let mode = if w.mode == pb::WriteMode::Create as i32 {
            Mode::Create
        } else {
            Mode::Upsert
        };
        let mut res = self.write_entry(
            index,
            EntryWrite {
                key: keys::handle_key(&w.namespace, &w.store, &w.id),
                label: format!("handle {}", w.id),
                value: w.value,
                json: false,
                mode,
                ttl_ms: w.ttl_ms,
                keep_ttl: w.keep_ttl,
                expected_revision: w.expected_revision,
            },
        )?;
        if res.code == pb::ResultCode::ResultOk as i32 {
            res.id = w.id;
        }
        Ok(res)
    }

    /// Checks a write's preconditions against the current entry; None if it
    /// may proceed.
    fn precondition(&self, live: Option<&Record>, w: &EntryWrite) -> Option<pb::CommandResult> {
        if let Some(expected) = w.expected_revision {
            match live {
                None => return Some(gone(&w.label)),
                Some(r) if r.mod_revision != expected => return Some(mismatch(&w.label, r.mod_revision, expected)),
                Some(_) => {}
            }
        }
        if w.mode == Mode::Create && live.is_some() {
            return Some(fail(
                pb::ResultCode::ResultAlreadyExists,
                format!("{} already exists", w.label),
            ));
        }
        None
    }

    fn write_entry(&mut self, index: u64, w: EntryWrite) -> Result<pb::CommandResult> {
        let old = self.get_record(&w.key)?;
        let live = old.as_ref().filter(|r| is_live(r, self.clock));
        if let Some(failed) = self.precondition(live, &w) {
            return Ok(failed);
        }
        Ok(self.put_checked(index, w, old))
    }

    /// Writes an entry whose preconditions hold.
    fn put_checked(&mut self, index: u64, w: EntryWrite, old: Option<Record>) -> pb::CommandResult {
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
            owner: String::new(),
            json: w.json,
        };
        self.put_record(w.key, rec, old.as_ref());
        pb::CommandResult {
            existed,
            expires_at_ms,
            ..ok()
        }
    }

    fn delete_entry(&mut self, key: Vec<u8>, label: &str, expected_revision: Option<u64>) -> Result<pb::CommandResult> {
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
        Ok(pb::CommandResult {
            existed: live,
            count: live as u64,
            ..ok()
        })
    }

    /// Deletes up to `limit` entries under a prefix, atomically (they are all
    /// in this command's write batch). `count` is how many were live.
    fn delete_prefix(&mut self, d: pb::StateDeletePrefix) -> Result<pb::CommandResult> {
        if d.prefix.is_empty() {
            return Ok(fail(
                pb::ResultCode::ResultInvalid,
                "a prefix delete needs a non-empty prefix",
            ));
        }
        let limit = d.limit.clamp(1, MAX_PREFIX_DELETE) as usize;
        let prefix = keys::state_key(&d.namespace, &d.prefix);
        let (entries, more) = self.range(&prefix, limit)?;
        let mut deleted = 0u64;
        for (key, rec) in entries {
            deleted += is_live(&rec, self.clock) as u64;
            self.delete_record(key, &rec);
        }
        Ok(pb::CommandResult {
            count: deleted,
            existed: deleted > 0,
            more,
            ..ok()
        })
    }

    /// All or nothing: every precondition is checked before anything is
    /// written. (The api rejects batches that name a key twice.)
    fn state_batch(&mut self, index: u64, b: pb::StateBatch) -> Result<pb::CommandResult> {
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
        let n = writes.len() as u64;
        for (w, old) in writes.into_iter().zip(olds) {
            self.put_checked(index, w, old);
        }
        Ok(pb::CommandResult { count: n, ..ok() })
    }

    /// The keys of a namespace's ring, as this batch sees them.
    fn ring(&mut self, ns: &str) -> Result<Vec<(Vec<u8>, pb::KeyRecord)>> {
        let (entries, _) = self.range(&keys::keyring_prefix(ns), MAX_RING_KEYS)?;
        entries
            .into_iter()
            .map(|(k, rec)| Ok((k, decode::<pb::KeyRecord>(&rec.value, "keyring")?)))
            .collect()
    }

    fn put_ring_key(&mut self, index: u64, key: Vec<u8>, k: &pb::KeyRecord, old: Option<&Record>) {
        let rec = Record {
            value: k.encode_to_vec(),
            create_revision: old.map(|r| r.create_revision).unwrap_or(index),
            mod_revision: index,
            ..Default::default()
        };
        self.put_record(key, rec, old);
    }

    /// A new primary key; the old primary keeps verifying (state active).
    fn keyring_rotate(&mut self, index: u64, r: pb::KeyringRotate) -> Result<pb::CommandResult> {
        if r.secret.len() < 32 {
            return Ok(fail(pb::ResultCode::ResultInvalid, "key secrets are 32 bytes"));
        }
        let ring = self.ring(&r.namespace)?;
        if r.create_only && !ring.is_empty() {
            return Ok(fail(
                pb::ResultCode::ResultAlreadyExists,
                format!("namespace {} already has a key ring; use rotate", r.namespace),
            ));
        }
        if ring.len() >= MAX_RING_KEYS {
            return Ok(fail(
                pb::ResultCode::ResultPrecondition,
                format!("the key ring holds {MAX_RING_KEYS} keys; retire old ones first"),
            ));
        }
        for (key, mut k) in ring {
            if k.state == pb::KeyState::KeyPrimary as i32 {
                let old = self.get_record(&key)?;
                k.state = pb::KeyState::KeyActive as i32;
                self.put_ring_key(index, key, &k, old.as_ref());
            }
        }
        let id = format!("k{index}");
        let mut key = keys::keyring_prefix(&r.namespace);
        key.extend_from_slice(id.as_bytes());
        let k = pb::KeyRecord {
            id: id.clone(),
            secret: r.secret,
            created_ms: self.clock,
            state: pb::KeyState::KeyPrimary as i32,
        };
        self.put_ring_key(index, key, &k, None);
        Ok(pb::CommandResult { id, ..ok() })
    }

    fn keyring_retire(&mut self, r: pb::KeyringRetire) -> Result<pb::CommandResult> {
        let mut key = keys::keyring_prefix(&r.namespace);
        key.extend_from_slice(r.key_id.as_bytes());
        let Some(rec) = self.get_record(&key)? else {
            return Ok(fail(
                pb::ResultCode::ResultNotFound,
                format!("no key {} in the ring", r.key_id),
            ));
        };
        let k: pb::KeyRecord = decode(&rec.value, "keyring")?;
        if k.state == pb::KeyState::KeyPrimary as i32 {
            return Ok(fail(
                pb::ResultCode::ResultPrecondition,
                format!("key {} is the primary; rotate first, then retire it", r.key_id),
            ));
        }
        self.delete_record(key, &rec);
        Ok(pb::CommandResult {
            id: r.key_id,
            existed: true,
            ..ok()
        })
    }

    fn expire(&mut self, e: pb::Expire) -> Result<pb::CommandResult> {
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
        self.age_out_dedup(e.dedup_before_ms)?;
        Ok(pb::CommandResult { count: removed, ..ok() })
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
        self.wb.put_cf(db::cf(self.db, CF_KV), &key, rec.encode_to_vec());
        self.kv.insert(key, Some(rec));
    }

    fn delete_record(&mut self, key: Vec<u8>, old: &Record) {
        if old.expires_at_ms != 0 {
            self.wb
                .delete_cf(db::cf(self.db, CF_EXPIRY), keys::expiry_key(old.expires_at_ms, &key));
        }
        self.wb.delete_cf(db::cf(self.db, CF_KV), &key);
        self.bump_count(&key, -1);
        self.kv.insert(key, None);
    }

    fn bump_count(&mut self, key: &[u8], delta: i64) {
        if let Some(scope) = keys::count_scope(key) {
            *self.counts.entry(scope.to_vec()).or_default() += delta;
        }
    }

    // ---- exactly-once answers ---------------------------------------------

    fn dedup_get(&mut self, client_id: u64, seq: u64) -> Result<Option<pb::DedupRecord>> {
        let k = keys::dedup_key(client_id, seq);
        if let Some(v) = self.dedup.get(&k) {
            return Ok(v.clone());
        }
        match self.db.get_pinned_cf(db::cf(self.db, CF_DEDUP), k)? {
            Some(raw) => Ok(Some(decode(&raw, "dedup")?)),
            None => Ok(None),
        }
    }

    fn remember(&mut self, w: &pb::WriteId, result: &pb::CommandResult) -> Result<()> {
        let rec = pb::DedupRecord {
            stamp_ms: self.clock,
            result: Some(result.clone()),
        };
        let k = keys::dedup_key(w.client_id, w.seq);
        self.wb.put_cf(db::cf(self.db, CF_DEDUP), k, rec.encode_to_vec());
        self.wb.put_cf(
            db::cf(self.db, CF_DEDUP_AGE),
            keys::dedup_age_key(self.clock, w.client_id, w.seq),
            [],
        );
        self.remembered.insert((w.client_id, w.seq), rec.stamp_ms);
        // A (late) answer inside a range known to be empty: not any more.
        if let Some(&(lo, hi)) = self.hints.pruned.get(&w.client_id)
            && (lo..hi).contains(&w.seq)
        {
            self.hints.pruned.remove(&w.client_id);
        }
        self.dedup.insert(k, Some(rec));
        self.dedup_count += 1;
        if w.first_incomplete_seq > 0 {
            self.prune_client(w.client_id, w.first_incomplete_seq.min(w.seq))?;
        }
        Ok(())
    }

    /// Forgets a client's answers below `below`: it told us it will never
    /// retry those.
    ///
    /// Only the last `PRUNE_WINDOW` sequence numbers below `below` are
    /// looked at. Each write moves `below` up by about one, so the window
    /// catches every answer as it becomes prunable; an answer `below` jumped
    /// past is aged out with the dedup window instead. Both are functions of
    /// the replicated state only, so every node forgets the same answers.
    ///
    /// The part of the window this node pruned before (`ApplyHints`) is not
    /// read again: walking the tombstones of the previous writes' answers
    /// made every write cost about `PRUNE_WINDOW` deleted keys.
    fn prune_client(&mut self, client_id: u64, below: u64) -> Result<()> {
        let from = below.saturating_sub(PRUNE_WINDOW);
        let known = self.hints.pruned.get(&client_id).copied();
        // The stretch of [from, below) the database may still hold answers
        // in: all of it, unless a known-empty range covers its start.
        let scan_from = match known {
            Some((lo, hi)) if lo <= from && from < hi => hi.min(below),
            _ => from,
        };
        let mut victims = Vec::new();
        if scan_from < below {
            let mut opts = ReadOptions::default();
            opts.set_iterate_lower_bound(keys::dedup_key(client_id, scan_from).to_vec());
            opts.set_iterate_upper_bound(keys::dedup_key(client_id, below).to_vec());
            let iter = self
                .db
                .iterator_cf_opt(db::cf(self.db, CF_DEDUP), opts, IteratorMode::Start);
            for item in iter {
                let (k, v) = item?;
                let rec: pb::DedupRecord = decode(&v, "dedup")?;
                if let Some((c, s)) = keys::split_dedup_key(&k) {
                    victims.push((rec.stamp_ms, c, s));
                }
            }
        }
        // Answers remembered earlier in this same batch are not in the
        // database yet; how entries are grouped into batches differs between
        // nodes, so they must be found here too.
        for (&(c, s), &stamp) in self.remembered.range((client_id, from)..(client_id, below)) {
            victims.push((stamp, c, s));
        }
        for (stamp, c, s) in victims {
            self.forget(stamp, c, s);
        }
        // [from, below) holds nothing now; grow the known-empty range.
        let range = match known {
            Some((lo, hi)) if lo <= below && from <= hi => (lo.min(from), hi.max(below)),
            _ => (from, below),
        };
        if range.0 < range.1 {
            self.hints.pruned.insert(client_id, range);
        }
        Ok(())
    }

    /// Ages out answers stamped before `before_ms`, and the oldest beyond the
    /// size bound, at most `MAX_DEDUP_REMOVALS_PER_COMMAND` of them.
    ///
    /// Candidates come oldest first from the database merged with the
    /// answers remembered earlier in this batch, skipping those already
    /// forgotten in it: that is the replicated state as of this command,
    /// whichever way this node grouped entries into batches, so every node
    /// forgets the same answers. The scan starts at the hinted age floor, so the
    /// tombstones of answers aged out before are not walked again.
    fn age_out_dedup(&mut self, before_ms: u64) -> Result<()> {
        let mut opts = ReadOptions::default();
        opts.set_iterate_lower_bound(keys::dedup_age_key(self.hints.age_floor, 0, 0).to_vec());
        let mut stored = self
            .db
            .iterator_cf_opt(db::cf(self.db, CF_DEDUP_AGE), opts, IteratorMode::Start);
        let mut next_stored = move || -> Result<Option<(u64, u64, u64)>> {
            for item in stored.by_ref() {
                let (k, _) = item?;
                if let Some(parts) = keys::split_dedup_age_key(&k) {
                    return Ok(Some(parts));
                }
            }
            Ok(None)
        };
        let mut in_batch: Vec<(u64, u64, u64)> = self.remembered.iter().map(|(&(c, s), &t)| (t, c, s)).collect();
        in_batch.sort_unstable();
        let mut in_batch = in_batch.into_iter().peekable();

        let mut victims = Vec::new();
        let mut projected = self.dedup_count;
        let mut db_head = next_stored()?;
        let stopped_at = loop {
            let cand = match (db_head, in_batch.peek().copied()) {
                (None, None) => break None,
                (Some(d), Some(b)) if b < d => {
                    in_batch.next();
                    b
                }
                (Some(d), _) => {
                    db_head = next_stored()?;
                    d
                }
                (None, Some(b)) => {
                    in_batch.next();
                    b
                }
            };
            let (stamp, c, s) = cand;
            if matches!(self.dedup.get(&keys::dedup_key(c, s)), Some(None)) {
                continue; // forgotten earlier in this batch
            }
            if victims.len() >= MAX_DEDUP_REMOVALS_PER_COMMAND
                || (stamp >= before_ms && projected <= self.limits.dedup_max_entries)
            {
                break Some(stamp);
            }
            victims.push(cand);
            projected = projected.saturating_sub(1);
        };
        // Everything before the stopping point is gone once this batch is
        // written; with nothing left, the newest victim bounds what remains
        // (answers remembered later carry the clock, which never goes back).
        let floor = stopped_at
            .or(victims.last().map(|v| v.0))
            .unwrap_or(self.hints.age_floor);
        self.hints.age_floor = self.hints.age_floor.max(floor);
        for (stamp, c, s) in victims {
            self.forget(stamp, c, s);
        }
        Ok(())
    }

    fn forget(&mut self, stamp: u64, client_id: u64, seq: u64) {
        let k = keys::dedup_key(client_id, seq);
        if matches!(self.dedup.get(&k), Some(None)) {
            return; // already forgotten in this batch
        }
        self.wb.delete_cf(db::cf(self.db, CF_DEDUP), k);
        self.wb.delete_cf(
            db::cf(self.db, CF_DEDUP_AGE),
            keys::dedup_age_key(stamp, client_id, seq),
        );
        self.dedup.insert(k, None);
        self.dedup_count = self.dedup_count.saturating_sub(1);
    }

    // ---- commit -----------------------------------------------------------

    fn commit(mut self, last: &pb::LogId, membership: Option<&pb::StoredMembership>) -> Result<()> {
        let meta_cf = db::cf(self.db, CF_SM_META);
        for (scope, delta) in std::mem::take(&mut self.counts) {
            if delta == 0 {
                continue;
            }
            let ck = keys::count_key(&scope);
            let cur = self.db.get_cf(meta_cf, &ck)?.map(|v| decode_u64(&v)).unwrap_or(0);
            let new = (cur as i64).saturating_add(delta).max(0) as u64;
            if new == 0 {
                self.wb.delete_cf(meta_cf, ck);
            } else {
                self.wb.put_cf(meta_cf, ck, new.to_be_bytes());
            }
        }
        self.wb.put_cf(meta_cf, meta::CLOCK, self.clock.to_be_bytes());
        self.wb
            .put_cf(meta_cf, meta::DEDUP_COUNT, self.dedup_count.to_be_bytes());
        self.wb.put_cf(meta_cf, meta::APPLIED, last.encode_to_vec());
        if let Some(m) = membership {
            self.wb.put_cf(meta_cf, meta::MEMBERSHIP, m.encode_to_vec());
        }
        // Not synced here: the Raft log (same WAL) is the durable source, and
        // a restart re-applies from the persisted applied id.
        self.db.write(self.wb)?;
        Ok(())
    }
}

fn state_write(w: pb::StateWrite) -> EntryWrite {
    EntryWrite {
        key: keys::state_key(&w.namespace, &w.key),
        label: format!("key {}", w.key),
        value: w.value,
        json: w.json,
        mode: Mode::Upsert,
        ttl_ms: w.ttl_ms,
        keep_ttl: w.keep_ttl,
        expected_revision: w.expected_revision,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(seq: u64, first_incomplete_seq: u64) -> pb::Command {
        pb::Command {
            write_id: Some(pb::WriteId {
                client_id: 7,
                seq,
                first_incomplete_seq,
            }),
            op: Some(Op::HandleWrite(pb::HandleWrite {
                namespace: "ns".into(),
                store: "s".into(),
                id: format!("id{seq}"),
                value: b"1".to_vec(),
                ..Default::default()
            })),
        }
    }

    fn expire(dedup_before_ms: u64) -> pb::Command {
        pb::Command {
            write_id: None,
            op: Some(Op::Expire(pb::Expire {
                items: Vec::new(),
                dedup_before_ms,
            })),
        }
    }

    /// Applies one command per entry, `per_batch` entries per apply call.
    fn run(cmds: &[pb::Command], per_batch: usize) -> (tempfile::TempDir, Vec<u64>) {
        run_with(cmds, per_batch, StateLimits::default(), true)
    }

    /// As `run`, with the given limits; without `keep_hints` the apply
    /// hints are dropped before every batch (as after a restart).
    fn run_with(
        cmds: &[pb::Command],
        per_batch: usize,
        limits: StateLimits,
        keep_hints: bool,
    ) -> (tempfile::TempDir, Vec<u64>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = crate::db::open(dir.path(), crate::db::DbMemory::default()).expect("db");
        let hints = Mutex::new(ApplyHints::default());
        let mut index = 0;
        for chunk in cmds.chunks(per_batch) {
            if !keep_hints {
                *hints.lock().unwrap() = ApplyHints::default();
            }
            let entries: Vec<ApplyEntry> = chunk
                .iter()
                .map(|c| {
                    index += 1;
                    ApplyEntry {
                        index,
                        proposal: Some(pb::Proposal {
                            stamp_ms: 1_000 + index,
                            commands: vec![c.clone()],
                        }),
                    }
                })
                .collect();
            let last_log_id = pb::LogId { leader_id: None, index };
            apply(
                &db,
                &limits,
                &hints,
                ApplyBatch {
                    entries,
                    last_log_id,
                    membership: None,
                },
            )
            .expect("apply");
        }
        let seqs: Vec<u64> = db
            .iterator_cf(crate::db::cf(&db, CF_DEDUP), IteratorMode::Start)
            .map(|item| keys::split_dedup_key(&item.expect("read").0).expect("dedup key").1)
            .collect();
        let count = db
            .get_cf(crate::db::cf(&db, CF_SM_META), meta::DEDUP_COUNT)
            .expect("read")
            .map(|v| decode_u64(&v))
            .unwrap_or(0);
        assert_eq!(count, seqs.len() as u64, "the dedup count matches the table");
        drop(db);
        (dir, seqs)
    }

    /// Runs `cmds` at each of `batchings` entries per apply call, keeping
    /// and dropping the hints; asserts every run forgot the same answers and
    /// returns them.
    fn forgotten_alike(cmds: &[pb::Command], batchings: [usize; 4], limits: StateLimits) -> Vec<u64> {
        let mut runs = Vec::new();
        for per_batch in batchings {
            for keep_hints in [true, false] {
                runs.push(run_with(cmds, per_batch, limits.clone(), keep_hints).1);
            }
        }
        for r in &runs[1..] {
            assert_eq!(r, &runs[0], "batching or the hints changed what was forgotten");
        }
        runs.swap_remove(0)
    }

    #[test]
    fn answers_below_the_first_incomplete_write_are_forgotten() {
        let cmds: Vec<_> = (1..=600).map(|s| write(s, s)).collect();
        let (_d, one_by_one) = run(&cmds, 1);
        assert_eq!(one_by_one, vec![600]);
    }

    #[test]
    fn pruning_is_the_same_however_entries_are_batched() {
        // Answers 1..=500 stay (the client has 1 in flight), then it jumps:
        // the window forgets the newest, the rest wait to age out.
        let mut cmds: Vec<_> = (1..=500).map(|s| write(s, 1)).collect();
        cmds.push(write(501, 501));
        cmds.extend((502..=520).map(|s| write(s, s - 3)));
        let forgotten = forgotten_alike(&cmds, [1, 7, 64, cmds.len()], StateLimits::default());
        // The last write (520) said 517 is its first incomplete one; the
        // windows of writes 501..=520 reached down to 499 - PRUNE_WINDOW.
        let mut expected: Vec<u64> = (1..499 - PRUNE_WINDOW).collect();
        expected.extend(517..=520);
        assert_eq!(forgotten, expected);
    }

    #[test]
    fn a_late_answer_inside_a_pruned_range_is_still_pruned() {
        // 1..=300 pruned as they go (the known-empty range grows to
        // [44, 300)); then a stale duplicate of 100 arrives (its answer was
        // forgotten, so it is remembered again, inside that range); the
        // windows of 301..=310 reach down to 54 and must find it.
        let mut cmds: Vec<_> = (1..=300).map(|s| write(s, s)).collect();
        cmds.push(write(100, 100));
        cmds.extend((301..=310).map(|s| write(s, s)));
        let forgotten = forgotten_alike(&cmds, [1, 5, 301, cmds.len()], StateLimits::default());
        assert_eq!(forgotten, vec![310]);
    }

    #[test]
    fn aging_out_is_the_same_however_entries_are_batched() {
        // Entry i is stamped 1000 + i. Nothing is pruned by the window (the
        // client keeps write 1 in flight), so only age and size forget.
        let mut cmds: Vec<_> = (1..=200).map(|s| write(s, 1)).collect();
        cmds.push(expire(1_000 + 50)); // entry 201: ages out seqs 1..=49
        cmds.extend((201..=300).map(|s| write(s, 1))); // entries 202..=301
        cmds.push(expire(1_000 + 120)); // entry 302: ages out 50..=119
        cmds.extend((301..=330).map(|s| write(s, 1))); // entries 303..=332
        cmds.push(expire(0)); // entry 333: only the size bound (150)
        cmds.extend((331..=340).map(|s| write(s, 1)));
        let limits = StateLimits { dedup_max_entries: 150 };
        let forgotten = forgotten_alike(&cmds, [1, 3, 64, cmds.len()], limits);
        // Before the size-bound expire: 120..=330 (211 answers); it keeps the
        // newest 150, 181..=330; then 331..=340 arrive.
        let expected: Vec<u64> = (181..=340).collect();
        assert_eq!(forgotten, expected);
    }
}

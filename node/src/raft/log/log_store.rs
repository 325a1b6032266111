//! The Raft log in RocksDB, with group commit, written in parallel with
//! replication.
//!
//! `append` writes entries to RocksDB (memtable and WAL buffer: the database
//! runs with `manual_wal_flush`, so nothing reaches the WAL file before a
//! sync) and tells openraft at once that they are flushed; a dedicated sync
//! thread takes every append that has queued up and syncs the WAL once
//! (`FlushWAL(sync=true)`). Many appends, one fsync, and the leader sends
//! entries to followers while its own fsync runs.
//!
//! Reporting "flushed" early is safe only because acknowledgements are held
//! back until the sync lands: see `durability` for the rule and where it is
//! enforced. openraft 0.9 waits for the flush callback before it replicates,
//! so an honest callback would put one fsync on the leader in front of every
//! round trip.
//!
//! Vote, truncation and the purge marker are written with `sync=true`
//! directly: they are rare and must be durable before the call returns.
//!
//! The last appended entries are also kept in memory (`Recent`, bounded),
//! so the apply and the replication to each follower, which read back what
//! was just appended, do not go through a RocksDB iterator and a decode.

use std::collections::VecDeque;
use std::fmt::Debug;
use std::io;
use std::ops::{Bound, RangeBounds};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex};

use handlestore_proto::internal::v1 as ipb;
use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{LogState, OptionalSend, RaftLogReader, StorageIOError};
use prost::Message;
use rocksdb::{DB, Direction, IteratorMode, ReadOptions, WriteBatch, WriteOptions};

use crate::failpoints;
use crate::raft::codec::{entry_from_wire, entry_to_wire, log_id_from_pb, log_id_to_pb, vote_from_pb, vote_to_pb};
use crate::raft::log::durability::Durability;
use crate::raft::{Entry, LogId, NodeId, StorageError, TypeConfig, Vote};
use crate::storage::db::{self, CF_LOG, CF_LOG_META};

const KEY_VOTE: &[u8] = b"vote";
pub(in crate::raft) const KEY_COMMITTED: &[u8] = b"committed";
pub(in crate::raft) const KEY_PURGED: &[u8] = b"last_purged";
/// Set by a repair that lost entries above the applied index
/// ([`raft::log::log_check`](crate::raft::log::log_check)): (term, index), big-endian, that the node must have
/// applied before it takes part in elections again ([`raft::log::abstain`](crate::raft::log::abstain)).
pub(in crate::raft) const KEY_REPAIR: &[u8] = b"repair_until";

pub(in crate::raft) fn encode_repair(term: u64, index: u64) -> Vec<u8> {
    [term.to_be_bytes(), index.to_be_bytes()].concat()
}

/// The (term, index) a repair left this node to reach, if one did.
pub(in crate::raft) fn read_repair(db: &DB) -> Result<Option<(u64, u64)>, StorageError> {
    let raw = db
        .get_cf(db::cf(db, CF_LOG_META), KEY_REPAIR)
        .map_err(|e| StorageIOError::read_logs(&e))?;
    Ok(raw.and_then(|r| {
        let term = r.get(..8)?.try_into().ok().map(u64::from_be_bytes)?;
        let index = r.get(8..16)?.try_into().ok().map(u64::from_be_bytes)?;
        Some((term, index))
    }))
}

/// Forgets the repair's mark: the node has applied past it.
pub(in crate::raft) fn clear_repair(db: &DB) -> Result<(), rocksdb::Error> {
    let mut opts = WriteOptions::default();
    opts.set_sync(true);
    db.delete_cf_opt(db::cf(db, CF_LOG_META), KEY_REPAIR, &opts)
}

/// The term of this node's stored vote (0 if it has none).
pub(in crate::raft) fn read_vote_term(db: &DB) -> Result<u64, StorageError> {
    Ok(read_vote(db)?.map_or(0, |v| v.leader_id().term))
}

/// The Raft log store. Cheap to clone; clones share the database, the sync
/// thread and the durability tracker.
#[derive(Clone)]
pub struct LogStore {
    db: Arc<DB>,
    sync_tx: std_mpsc::Sender<u64>,
    syncs: Arc<AtomicU64>,
    durability: Arc<Durability>,
    recent: Arc<Mutex<Recent>>,
}

/// The most recently appended entries, in memory: the apply and the
/// replication of each follower read back what was just appended, and
/// serving them from here saves a RocksDB iterator and a decode per read.
/// Holds a contiguous run of indexes ending at the log's last entry.
#[derive(Default)]
struct Recent {
    entries: VecDeque<(Entry, usize)>,
    bytes: usize,
}

const RECENT_MAX_ENTRIES: usize = 1024;
/// Bound on what the held entries take in memory, estimated as
/// `HELD_PER_ENCODED_BYTE` times their encoded size.
const RECENT_MAX_BYTES: usize = 16 << 20;
/// An entry is held twice, as its encoding and decoded, and each decoded
/// write has allocations of its own: a node holding 16 MiB of encoded
/// entries took ~55 MiB more memory than one holding 1 MiB (the scale run,
/// a million mints at 256 clients).
const HELD_PER_ENCODED_BYTE: usize = 3;

impl Recent {
    fn first(&self) -> Option<u64> {
        self.entries.front().map(|(e, _)| e.log_id.index)
    }

    fn push(&mut self, entry: Entry, size: usize) {
        let next = self.entries.back().map(|(e, _)| e.log_id.index + 1);
        if next.is_some_and(|n| n != entry.log_id.index) {
            self.clear();
        }
        self.bytes += size;
        self.entries.push_back((entry, size));
        while self.entries.len() > RECENT_MAX_ENTRIES || self.bytes > RECENT_MAX_BYTES {
            let Some((_, s)) = self.entries.pop_front() else { break };
            self.bytes -= s;
        }
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
    }

    /// Drops entries at and after `index`.
    fn truncate(&mut self, index: u64) {
        while let Some(&(ref e, size)) = self.entries.back()
            && e.log_id.index >= index
        {
            self.bytes -= size;
            self.entries.pop_back();
        }
    }

    /// Drops entries at and before `index`.
    fn purge(&mut self, index: u64) {
        while let Some(&(ref e, size)) = self.entries.front()
            && e.log_id.index <= index
        {
            self.bytes -= size;
            self.entries.pop_front();
        }
    }

    /// `[start, end)` if all of it is held here; None sends the read to the
    /// database (also for an open-ended `end`).
    fn get(&self, start: u64, end: Option<u64>) -> Option<Vec<Entry>> {
        let first = self.first()?;
        if start < first {
            return None;
        }
        let from = (start - first) as usize;
        // Past the last entry held here: RocksDB may have more (an append
        // in progress), so it answers.
        let to = (end?.saturating_sub(first)) as usize;
        if to > self.entries.len() {
            return None;
        }
        if from >= to {
            return Some(Vec::new());
        }
        Some(self.entries.range(from..to).map(|(e, _)| e.clone()).collect())
    }
}

impl LogStore {
    /// Opens the log of node `id`.
    pub fn new(db: Arc<DB>, id: NodeId) -> Result<Self, StorageError> {
        // Whatever the WAL holds from before (a crash leaves it unsynced) is
        // made durable before any of it is acknowledged again.
        db.flush_wal(true).map_err(|e| StorageIOError::write_logs(&e))?;
        step_down_at_start(&db, id)?;
        let last = last_entry_id(&db)?.or(read_log_id(&db, KEY_PURGED)?);
        let durability = Arc::new(Durability::new(last.map_or(0, |l| l.index)));
        let (sync_tx, sync_rx) = std_mpsc::channel::<u64>();
        let syncs = Arc::new(AtomicU64::new(0));
        let (sync_db, counter, sync_durability) = (db.clone(), syncs.clone(), durability.clone());
        std::thread::Builder::new()
            .name("raft-log-sync".into())
            .spawn(move || sync_loop(&sync_db, &sync_rx, &counter, &sync_durability))
            .map_err(|e| StorageIOError::write_logs(&e))?;
        Ok(Self {
            db,
            sync_tx,
            syncs,
            durability,
            recent: Arc::default(),
        })
    }

    /// What of this log is on disk; shared with the network, the Raft
    /// service and the state machine, which hold acknowledgements until it
    /// is.
    pub fn durability(&self) -> Arc<Durability> {
        self.durability.clone()
    }

    /// The number of WAL syncs done for log appends so far.
    pub fn sync_counter(&self) -> Arc<AtomicU64> {
        self.syncs.clone()
    }

    /// What the recently appended entries held in memory are charged
    /// against their bound (`HELD_PER_ENCODED_BYTE` x encoded size).
    pub fn cache_bytes(&self) -> u64 {
        self.recent.lock().unwrap_or_else(|p| p.into_inner()).bytes as u64
    }

    fn cf_log(&self) -> &rocksdb::ColumnFamily {
        db::cf(&self.db, CF_LOG)
    }

    fn cf_meta(&self) -> &rocksdb::ColumnFamily {
        db::cf(&self.db, CF_LOG_META)
    }

    fn put_meta_sync(&self, key: &[u8], value: Vec<u8>) -> Result<(), rocksdb::Error> {
        put_meta_sync(&self.db, key, value)
    }

    fn read_log_id(&self, key: &[u8]) -> Result<Option<LogId>, StorageError> {
        read_log_id(&self.db, key)
    }

    fn last_entry_id(&self) -> Result<Option<LogId>, StorageError> {
        last_entry_id(&self.db)
    }
}

/// A node that was leader when it stopped starts as a follower, and leads
/// again only by winning an election in a new term.
///
/// openraft 0.9 restores a node whose stored vote is its own committed vote
/// as leader at once, in the same term, and goes on appending after the
/// last entry in its log. That is only sound if the leader's log holds
/// every entry it ever sent, and here it does not: a leader sends entries
/// while it syncs them (see `durability`), so a leader killed mid-write can
/// come back without entries that followers hold. Restored in the same
/// term, it would write different entries under the same log ids
/// (leader id + index), which followers take as ones they already have:
/// the logs diverge, and writes acknowledged on either side are lost (the
/// chaos suite found this: a quorum killed, the old leader back first).
/// Storing the vote as not committed keeps what it means for voting (the
/// same leader id, which only this node uses) and sends the node through an
/// election; the next term's entries have ids of their own, and the
/// election picks a log holding every committed entry, as Raft requires.
/// Makes the empty log of a restored node begin after `last` (see
/// [`raft::life::restore`](crate::raft::life::restore)): purged and committed up to it, and this node's vote at
/// its term, so the new cluster's first election is for a later term than
/// any entry it holds.
pub fn begin_after(db: &DB, last: &LogId, id: NodeId) -> Result<(), rocksdb::Error> {
    let at = log_id_to_pb(last).encode_to_vec();
    put_meta_sync(db, KEY_PURGED, at.clone())?;
    put_meta_sync(db, KEY_COMMITTED, at)?;
    put_meta_sync(
        db,
        KEY_VOTE,
        vote_to_pb(&Vote::new(last.leader_id.term, id)).encode_to_vec(),
    )
}

fn step_down_at_start(db: &DB, id: NodeId) -> Result<(), StorageError> {
    let Some(vote) = read_vote(db)? else {
        return Ok(());
    };
    if !vote.is_committed() || vote.leader_id().voted_for() != Some(id) {
        return Ok(());
    }
    let uncommitted = Vote::new(vote.leader_id().term, id);
    tracing::info!("was leader ({vote}) when stopped: starting as a follower with vote {uncommitted}");
    save_vote(db, &uncommitted)
}

fn put_meta_sync(db: &DB, key: &[u8], value: Vec<u8>) -> Result<(), rocksdb::Error> {
    let mut opts = WriteOptions::default();
    opts.set_sync(true);
    db.put_cf_opt(db::cf(db, CF_LOG_META), key, value, &opts)
}

fn read_vote(db: &DB) -> Result<Option<Vote>, StorageError> {
    let raw = db
        .get_pinned_cf(db::cf(db, CF_LOG_META), KEY_VOTE)
        .map_err(|e| StorageIOError::read_vote(&e))?;
    match raw {
        None => Ok(None),
        Some(raw) => {
            let pb = ipb::Vote::decode(raw.as_ref()).map_err(|e| StorageIOError::read_vote(&e))?;
            Ok(Some(
                vote_from_pb(Some(&pb)).map_err(|e| StorageIOError::read_vote(&e))?,
            ))
        }
    }
}

fn save_vote(db: &DB, vote: &Vote) -> Result<(), StorageError> {
    put_meta_sync(db, KEY_VOTE, vote_to_pb(vote).encode_to_vec()).map_err(|e| StorageIOError::write_vote(&e).into())
}

pub(in crate::raft) fn read_log_id(db: &DB, key: &[u8]) -> Result<Option<LogId>, StorageError> {
    let raw = db
        .get_pinned_cf(db::cf(db, CF_LOG_META), key)
        .map_err(|e| StorageIOError::read_logs(&e))?;
    match raw {
        None => Ok(None),
        Some(raw) => {
            let pb = ipb::LogId::decode(raw.as_ref()).map_err(|e| StorageIOError::read_logs(&e))?;
            Ok(Some(log_id_from_pb(&pb).map_err(|e| StorageIOError::read_logs(&e))?))
        }
    }
}

/// The last entry's log id, if any entry is stored.
fn last_entry_id(db: &DB) -> Result<Option<LogId>, StorageError> {
    let mut iter = db.iterator_cf(db::cf(db, CF_LOG), IteratorMode::End);
    match iter.next() {
        None => Ok(None),
        Some(item) => {
            let (_, v) = item.map_err(|e| StorageIOError::read_logs(&e))?;
            Ok(Some(decode_entry(&v)?.log_id))
        }
    }
}

fn sync_loop(db: &DB, rx: &std_mpsc::Receiver<u64>, syncs: &AtomicU64, durability: &Durability) {
    // Ends when every LogStore clone is dropped.
    while let Ok(first) = rx.recv() {
        // A delay injected here is a slow disk: timed as the sync.
        let started = std::time::Instant::now();
        failpoints::hit(failpoints::LOG_SYNC_BEFORE);
        let seq = rx.try_iter().fold(first, u64::max);
        let flushed = db.flush_wal(true);
        crate::observe::metrics::recorders()
            .log_fsync_seconds
            .observe(started.elapsed().as_secs_f64());
        durability.note_sync(started.elapsed());
        crate::raft::warn_if_slow("syncing the Raft log", started, format_args!("WAL write and fdatasync"));
        if let Err(e) = flushed {
            // openraft was told these entries were flushed, and whether the
            // kernel kept them is unknown after a failed fsync (retrying can
            // report success for lost pages). Stop here, before anything
            // waiting on this sync is acknowledged; a restart recovers from
            // what is on disk.
            tracing::error!("syncing the Raft log failed, stopping the node: {e}");
            eprintln!("handlestore: syncing the Raft log failed, stopping the node: {e}");
            std::process::abort();
        }
        failpoints::hit(failpoints::LOG_SYNC_AFTER);
        syncs.fetch_add(1, Ordering::Relaxed);
        durability.synced(seq);
    }
}

fn index_key(index: u64) -> [u8; 8] {
    index.to_be_bytes()
}

pub(crate) fn decode_entry(raw: &[u8]) -> Result<Entry, StorageError> {
    let pb = ipb::WireEntry::decode(raw).map_err(|e| StorageIOError::read_logs(&e))?;
    entry_from_wire(pb).map_err(|e| StorageIOError::read_logs(&e).into())
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        let start = match range.start_bound() {
            Bound::Included(x) => *x,
            Bound::Excluded(x) => x.saturating_add(1),
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(x) => Some(x.saturating_add(1)),
            Bound::Excluded(x) => Some(*x),
            Bound::Unbounded => None,
        };
        if let Some(hit) = self.recent.lock().unwrap_or_else(|p| p.into_inner()).get(start, end) {
            return Ok(hit);
        }
        let mut opts = ReadOptions::default();
        if let Some(end) = end {
            opts.set_iterate_upper_bound(index_key(end));
        }
        let iter = self.db.iterator_cf_opt(
            self.cf_log(),
            opts,
            IteratorMode::From(&index_key(start), Direction::Forward),
        );
        let mut out = Vec::new();
        for item in iter {
            let (_, v) = item.map_err(|e| StorageIOError::read_logs(&e))?;
            out.push(decode_entry(&v)?);
        }
        Ok(out)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = Self;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError> {
        let last_purged_log_id = self.read_log_id(KEY_PURGED)?;
        let last_log_id = self.last_entry_id()?.or(last_purged_log_id);
        Ok(LogState {
            last_purged_log_id,
            last_log_id,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), StorageError> {
        save_vote(&self.db, vote)
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, StorageError> {
        read_vote(&self.db)
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StorageError> {
        let res = match committed {
            Some(c) => self
                .db
                .put_cf(self.cf_meta(), KEY_COMMITTED, log_id_to_pb(&c).encode_to_vec()),
            None => self.db.delete_cf(self.cf_meta(), KEY_COMMITTED),
        };
        res.map_err(|e| StorageIOError::write_logs(&e).into())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, StorageError> {
        self.read_log_id(KEY_COMMITTED)
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<TypeConfig>) -> Result<(), StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut batch = WriteBatch::default();
        let mut span = None;
        let mut kept = Vec::new();
        for entry in entries {
            let index = entry.log_id.index;
            span = Some((span.map_or(index, |(first, _)| first), index));
            let raw = entry_to_wire(&entry).encode_to_vec();
            kept.push((entry, raw.len() * HELD_PER_ENCODED_BYTE));
            batch.put_cf(self.cf_log(), index_key(index), raw);
        }
        let Some((first, last)) = span else {
            callback.log_io_completed(Ok(()));
            return Ok(());
        };
        // Readable as soon as this returns; durable once the sync thread has
        // synced the WAL. openraft is told now (see the module comment).
        let started = std::time::Instant::now();
        failpoints::io_here(failpoints::LOG_APPEND_BEFORE_WRITE).map_err(|e| StorageIOError::write_logs(&e))?;
        self.db.write(batch).map_err(|e| StorageIOError::write_logs(&e))?;
        failpoints::hit(failpoints::LOG_APPEND_AFTER_WRITE);
        crate::raft::warn_if_slow(
            "appending to the Raft log",
            started,
            format_args!("entries {first}..={last}"),
        );
        {
            let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
            for (entry, size) in kept {
                recent.push(entry, size);
            }
        }
        let seq = self.durability.appended(first, last);
        if self.sync_tx.send(seq).is_err() {
            return Err(StorageIOError::write_logs(&io::Error::other("log sync thread stopped")).into());
        }
        callback.log_io_completed(Ok(()));
        Ok(())
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        let mut batch = WriteBatch::default();
        batch.delete_range_cf(self.cf_log(), index_key(log_id.index), index_key(u64::MAX));
        batch.delete_cf(self.cf_log(), index_key(u64::MAX));
        let mut opts = WriteOptions::default();
        opts.set_sync(true);
        self.db
            .write_opt(batch, &opts)
            .map_err(|e| StorageIOError::write_logs(&e))?;
        // The synced write covered every append before it.
        self.durability.truncated(log_id.index);
        self.recent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .truncate(log_id.index);
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        // Record the purge point durably before deleting: a restart between
        // the two must not see a log that starts after an unknown gap.
        self.put_meta_sync(KEY_PURGED, log_id_to_pb(&log_id).encode_to_vec())
            .map_err(|e| StorageIOError::write_logs(&e))?;
        failpoints::hit(failpoints::LOG_PURGE_MID);
        self.recent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .purge(log_id.index);
        self.db
            .delete_range_cf(self.cf_log(), index_key(0), index_key(log_id.index.saturating_add(1)))
            .map_err(|e| StorageIOError::write_logs(&e).into())
    }
}

#[cfg(test)]
mod tests {
    use openraft::{CommittedLeaderId, EntryPayload};

    use super::*;

    fn entry(index: u64) -> Entry {
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
            payload: EntryPayload::Blank,
        }
    }

    fn indexes(v: Option<Vec<Entry>>) -> Option<Vec<u64>> {
        v.map(|v| v.iter().map(|e| e.log_id.index).collect())
    }

    fn recent(range: std::ops::RangeInclusive<u64>) -> Recent {
        let mut r = Recent::default();
        for i in range {
            r.push(entry(i), 100);
        }
        r
    }

    #[test]
    fn serves_only_ranges_it_holds_whole() {
        let r = recent(5..=9);
        assert_eq!(indexes(r.get(5, Some(10))), Some(vec![5, 6, 7, 8, 9]));
        assert_eq!(indexes(r.get(7, Some(9))), Some(vec![7, 8]));
        assert_eq!(indexes(r.get(9, Some(9))), Some(vec![]));
        // Before the first entry held, past the last, or open-ended: the
        // database answers.
        assert_eq!(indexes(r.get(4, Some(8))), None);
        assert_eq!(indexes(r.get(6, Some(11))), None);
        assert_eq!(indexes(r.get(6, None)), None);
        assert_eq!(indexes(Recent::default().get(1, Some(2))), None);
    }

    #[test]
    fn truncate_and_purge_drop_what_the_log_dropped() {
        let mut r = recent(1..=10);
        r.truncate(8);
        assert_eq!(indexes(r.get(1, Some(9))), None, "8 was truncated");
        assert_eq!(indexes(r.get(6, Some(8))), Some(vec![6, 7]));
        // A new leader's entries replace the truncated ones.
        r.push(entry(8), 100);
        assert_eq!(indexes(r.get(7, Some(9))), Some(vec![7, 8]));
        r.purge(6);
        assert_eq!(indexes(r.get(6, Some(8))), None, "6 was purged");
        assert_eq!(indexes(r.get(7, Some(9))), Some(vec![7, 8]));
        assert_eq!(r.bytes, 200);
    }

    #[test]
    fn a_gap_starts_over() {
        // After a restart or a snapshot install the next append does not
        // follow what is held: only a contiguous run is served.
        let mut r = recent(1..=3);
        r.push(entry(10), 100);
        assert_eq!(indexes(r.get(2, Some(4))), None);
        assert_eq!(indexes(r.get(10, Some(11))), Some(vec![10]));
        assert_eq!(r.bytes, 100);
    }

    async fn reopened_vote(stored: Vote, id: NodeId) -> Option<Vote> {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = db::open(dir.path(), db::DbConfig::default()).expect("db");
        {
            let mut log = LogStore::new(db.clone(), id).expect("log");
            log.save_vote(&stored).await.expect("save");
        }
        let mut log = LogStore::new(db, id).expect("reopened");
        log.read_vote().await.expect("read")
    }

    #[tokio::test]
    async fn a_leader_starts_again_as_a_follower_with_the_same_term() {
        let led = Vote::new_committed(7, 2);
        let back = reopened_vote(led, 2).await.expect("a vote");
        assert!(!back.is_committed(), "{back}");
        assert_eq!(back.leader_id(), led.leader_id());
        // Another node's leadership, and an uncommitted vote, are kept as is.
        assert_eq!(reopened_vote(led, 3).await, Some(led));
        assert_eq!(reopened_vote(Vote::new(7, 2), 2).await, Some(Vote::new(7, 2)));
    }

    #[test]
    fn bounded_by_count_and_bytes() {
        let r = recent(1..=(RECENT_MAX_ENTRIES as u64 + 10));
        assert_eq!(r.entries.len(), RECENT_MAX_ENTRIES);
        assert_eq!(r.first(), Some(11));
        let mut r = Recent::default();
        for i in 1..=5 {
            r.push(entry(i), RECENT_MAX_BYTES / 2);
        }
        assert_eq!(indexes(r.get(4, Some(6))), Some(vec![4, 5]));
        assert_eq!(r.entries.len(), 2);
    }
}

//! The Raft log in RocksDB, with group commit.
//!
//! `append` writes entries to RocksDB (memtable + WAL, not yet synced) and
//! returns at once, so they are readable; the flush callback is handed to a
//! dedicated sync thread. That thread takes every callback that has queued up,
//! syncs the WAL once (`FlushWAL(sync=true)`), and only then tells openraft the
//! entries are on disk. Many appends, one fsync; and never "flushed" before
//! the bytes are durable (the defect of openraft's rocksdb example, #618).
//!
//! Vote, truncation and the purge marker are written with `sync=true`
//! directly: they are rare and must be durable before the call returns.

use std::fmt::Debug;
use std::io;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc as std_mpsc;

use handlestore_proto::v1 as pb;
use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{LogState, OptionalSend, RaftLogReader, StorageIOError};
use prost::Message;
use rocksdb::{DB, Direction, IteratorMode, ReadOptions, WriteBatch, WriteOptions};

use super::codec::{entry_from_pb, entry_to_pb, log_id_from_pb, log_id_to_pb, vote_from_pb, vote_to_pb};
use super::{Entry, LogId, StorageError, TypeConfig, Vote};
use crate::db::{self, CF_LOG, CF_LOG_META};

const KEY_VOTE: &[u8] = b"vote";
const KEY_COMMITTED: &[u8] = b"committed";
const KEY_PURGED: &[u8] = b"last_purged";

/// The Raft log store. Cheap to clone; clones share the database and the
/// sync thread.
#[derive(Clone)]
pub struct LogStore {
    db: Arc<DB>,
    sync_tx: std_mpsc::Sender<LogFlushed<TypeConfig>>,
    syncs: Arc<AtomicU64>,
}

impl LogStore {
    pub fn new(db: Arc<DB>) -> io::Result<Self> {
        let (sync_tx, sync_rx) = std_mpsc::channel::<LogFlushed<TypeConfig>>();
        let sync_db = db.clone();
        let syncs = Arc::new(AtomicU64::new(0));
        let counter = syncs.clone();
        std::thread::Builder::new()
            .name("raft-log-sync".into())
            .spawn(move || sync_loop(&sync_db, &sync_rx, &counter))?;
        Ok(Self { db, sync_tx, syncs })
    }

    /// The number of WAL syncs done for log appends so far.
    pub fn sync_counter(&self) -> Arc<AtomicU64> {
        self.syncs.clone()
    }

    fn cf_log(&self) -> &rocksdb::ColumnFamily {
        db::cf(&self.db, CF_LOG)
    }

    fn cf_meta(&self) -> &rocksdb::ColumnFamily {
        db::cf(&self.db, CF_LOG_META)
    }

    fn put_meta_sync(&self, key: &[u8], value: Vec<u8>) -> Result<(), rocksdb::Error> {
        let mut opts = WriteOptions::default();
        opts.set_sync(true);
        self.db.put_cf_opt(self.cf_meta(), key, value, &opts)
    }

    fn read_log_id(&self, key: &[u8]) -> Result<Option<LogId>, StorageError> {
        let raw = self
            .db
            .get_pinned_cf(self.cf_meta(), key)
            .map_err(|e| StorageIOError::read_logs(&e))?;
        match raw {
            None => Ok(None),
            Some(raw) => {
                let pb = pb::LogId::decode(raw.as_ref()).map_err(|e| StorageIOError::read_logs(&e))?;
                Ok(Some(log_id_from_pb(&pb).map_err(|e| StorageIOError::read_logs(&e))?))
            }
        }
    }

    /// The last entry's log id, if any entry is stored.
    fn last_entry_id(&self) -> Result<Option<LogId>, StorageError> {
        let mut iter = self.db.iterator_cf(self.cf_log(), IteratorMode::End);
        match iter.next() {
            None => Ok(None),
            Some(item) => {
                let (_, v) = item.map_err(|e| StorageIOError::read_logs(&e))?;
                Ok(Some(decode_entry(&v)?.log_id))
            }
        }
    }
}

fn sync_loop(db: &DB, rx: &std_mpsc::Receiver<LogFlushed<TypeConfig>>, syncs: &AtomicU64) {
    // Ends when every LogStore clone is dropped.
    while let Ok(first) = rx.recv() {
        let mut waiting = vec![first];
        waiting.extend(rx.try_iter());
        let res = db.flush_wal(true);
        syncs.fetch_add(1, Ordering::Relaxed);
        for cb in waiting {
            cb.log_io_completed(res.clone().map_err(io::Error::other));
        }
    }
}

fn index_key(index: u64) -> [u8; 8] {
    index.to_be_bytes()
}

fn decode_entry(raw: &[u8]) -> Result<Entry, StorageError> {
    let pb = pb::Entry::decode(raw).map_err(|e| StorageIOError::read_logs(&e))?;
    entry_from_pb(pb).map_err(|e| StorageIOError::read_logs(&e).into())
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
        let mut opts = ReadOptions::default();
        match range.end_bound() {
            Bound::Included(x) => opts.set_iterate_upper_bound(index_key(x.saturating_add(1))),
            Bound::Excluded(x) => opts.set_iterate_upper_bound(index_key(*x)),
            Bound::Unbounded => {}
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
        self.put_meta_sync(KEY_VOTE, vote_to_pb(vote).encode_to_vec())
            .map_err(|e| StorageIOError::write_vote(&e).into())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, StorageError> {
        let raw = self
            .db
            .get_pinned_cf(self.cf_meta(), KEY_VOTE)
            .map_err(|e| StorageIOError::read_vote(&e))?;
        match raw {
            None => Ok(None),
            Some(raw) => {
                let pb = pb::Vote::decode(raw.as_ref()).map_err(|e| StorageIOError::read_vote(&e))?;
                Ok(Some(
                    vote_from_pb(Some(&pb)).map_err(|e| StorageIOError::read_vote(&e))?,
                ))
            }
        }
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
        for entry in entries {
            batch.put_cf(
                self.cf_log(),
                index_key(entry.log_id.index),
                entry_to_pb(&entry).encode_to_vec(),
            );
        }
        // Readable as soon as this returns; durable once the sync thread has
        // synced the WAL, which is when the callback fires.
        self.db.write(batch).map_err(|e| StorageIOError::write_logs(&e))?;
        if let Err(std_mpsc::SendError(cb)) = self.sync_tx.send(callback) {
            cb.log_io_completed(Err(io::Error::other("log sync thread stopped")));
        }
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
            .map_err(|e| StorageIOError::write_logs(&e).into())
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        // Record the purge point durably before deleting: a restart between
        // the two must not see a log that starts after an unknown gap.
        self.put_meta_sync(KEY_PURGED, log_id_to_pb(&log_id).encode_to_vec())
            .map_err(|e| StorageIOError::write_logs(&e))?;
        self.db
            .delete_range_cf(self.cf_log(), index_key(0), index_key(log_id.index.saturating_add(1)))
            .map_err(|e| StorageIOError::write_logs(&e).into())
    }
}

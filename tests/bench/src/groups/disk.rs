//! A node's one RocksDB and its log writers.
//!
//! As in the node (`node/src/storage/db.rs`), writes go to the memtable
//! and RocksDB's WAL buffer (`manual_wal_flush`), and a sync is one
//! `FlushWAL(sync)`: a write never waits for another's fsync. A log
//! writer takes every append queued since its last sync, writes them as
//! one batch, syncs once and then fires each append's `LogFlushed`.

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

use anyhow::{Context, Result};
use openraft::storage::LogFlushed;
use rocksdb::statistics::Ticker;
use rocksdb::{ColumnFamily, DB, Options, WriteBatch};

use super::Cfg;

/// The log's entries, by group ‖ index.
pub const LOG: &str = "raft_log";
/// Votes, by group ‖ name.
pub const META: &str = "raft_meta";
/// What the state machines applied, by group ‖ index.
pub const KV: &str = "kv";

/// How a node's appends reach the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Writers {
    /// One writer for every group: one sync covers all that was queued.
    Merged,
    /// A writer for each group, each syncing its own appends.
    PerGroup,
}

/// One append waiting for a writer: the rows to write, the callback to
/// fire once they are synced.
struct Append {
    rows: Vec<(Vec<u8>, Vec<u8>)>,
    done: LogFlushed<Cfg>,
}

/// A node's database and its writers' queues.
pub struct Disk {
    db: Arc<DB>,
    opts: Options,
    queues: Vec<mpsc::Sender<Append>>,
    /// Syncs the writers ran (each one `FlushWAL(sync)`).
    syncs: Arc<AtomicU64>,
}

impl Disk {
    /// Opens a database in `dir` with a writer per `writers` queue.
    pub fn open(dir: &Path, writers: usize) -> Result<Arc<Self>> {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        opts.set_manual_wal_flush(true);
        opts.enable_statistics();
        let db = DB::open_cf(&opts, dir, [LOG, META, KV]).with_context(|| format!("opening {}", dir.display()))?;
        let db = Arc::new(db);
        let syncs = Arc::new(AtomicU64::new(0));
        let mut queues = Vec::new();
        for i in 0..writers.max(1) {
            let (tx, rx) = mpsc::channel();
            let (db, syncs) = (db.clone(), syncs.clone());
            std::thread::Builder::new()
                .name(format!("log-writer-{i}"))
                .spawn(move || write_loop(&db, &rx, &syncs))?;
            queues.push(tx);
        }
        Ok(Arc::new(Self {
            db,
            opts,
            queues,
            syncs,
        }))
    }

    /// Queues group `gid`'s log rows; `done` fires once they are synced.
    pub fn append(&self, gid: u32, rows: Vec<(Vec<u8>, Vec<u8>)>, done: LogFlushed<Cfg>) {
        let queue = &self.queues[gid as usize % self.queues.len()];
        if let Err(mpsc::SendError(a)) = queue.send(Append { rows, done }) {
            a.done
                .log_io_completed(Err(io::Error::other("the log writer has stopped")));
        }
    }

    /// Writes `batch` to the memtable and the WAL buffer, unsynced: the
    /// next log sync makes it durable.
    pub fn write(&self, batch: WriteBatch) -> Result<(), rocksdb::Error> {
        self.db.write(batch)
    }

    /// Writes one row and syncs it before returning (a vote: rare).
    pub fn put_synced(&self, family: &str, key: &[u8], value: &[u8]) -> Result<(), rocksdb::Error> {
        self.db.put_cf(self.family(family), key, value)?;
        self.db.flush_wal(true)
    }

    pub fn family(&self, name: &str) -> &ColumnFamily {
        self.db
            .cf_handle(name)
            .expect("every family is opened with the database")
    }

    /// Syncs the log writers ran so far.
    pub fn syncs(&self) -> u64 {
        self.syncs.load(Ordering::Relaxed)
    }

    /// WAL syncs RocksDB itself counted (any writer's, and votes').
    pub fn wal_syncs(&self) -> u64 {
        self.opts.get_ticker_count(Ticker::WalFileSynced)
    }
}

/// A log writer: everything queued since the last sync, one write, one
/// sync, then every callback.
fn write_loop(db: &DB, rx: &mpsc::Receiver<Append>, syncs: &AtomicU64) {
    let log = db.cf_handle(LOG).expect("the log family");
    while let Ok(first) = rx.recv() {
        let mut batch = WriteBatch::default();
        let mut waiting = Vec::new();
        for a in std::iter::once(first).chain(rx.try_iter()) {
            for (k, v) in a.rows {
                batch.put_cf(log, k, v);
            }
            waiting.push(a.done);
        }
        let result = db.write(batch).and_then(|()| db.flush_wal(true));
        syncs.fetch_add(1, Ordering::Relaxed);
        for done in waiting {
            done.log_io_completed(result.as_ref().map(|_| ()).map_err(|e| io::Error::other(e.to_string())));
        }
    }
}

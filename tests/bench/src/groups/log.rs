//! A Raft log whose entries openraft reads back from memory (the node
//! keeps its recent entries so too), made durable by a [`Persist`]: a
//! group's through its node's log writers ([`GroupDisk`]), or the
//! `raft_floor` tool's sync thread.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::io;
use std::ops::RangeBounds;
use std::sync::{Arc, Mutex, MutexGuard};

use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{Entry, LogId, LogState, OptionalSend, RaftLogReader, Vote};

use super::disk::{Disk, META};
use super::{Cfg, StorageErr, io_err, key};

/// How a [`MemLog`] makes its votes and appends durable.
pub trait Persist: Clone + Send + Sync + 'static {
    /// What `prepare` made of an append, for `submit`.
    type Prepared: Send;
    /// Stores the vote before returning.
    fn save_vote(&self, vote: &Vote<u64>) -> io::Result<()>;
    /// Called before the entries are readable, with them.
    fn prepare(&self, entries: &[Entry<Cfg>]) -> io::Result<Self::Prepared>;
    /// Called once they are readable: fires `done` once they are durable.
    fn submit(&self, prepared: Self::Prepared, done: LogFlushed<Cfg>);
}

#[derive(Default)]
struct Inner {
    vote: Option<Vote<u64>>,
    committed: Option<LogId<u64>>,
    entries: BTreeMap<u64, Entry<Cfg>>,
    purged: Option<LogId<u64>>,
}

#[derive(Clone)]
pub struct MemLog<P> {
    inner: Arc<Mutex<Inner>>,
    persist: P,
}

impl<P: Persist> MemLog<P> {
    pub fn new(persist: P) -> Self {
        Self {
            inner: Arc::default(),
            persist,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A group's log rows, by group ‖ index, through its node's log writers.
#[derive(Clone)]
pub struct GroupDisk {
    pub gid: u32,
    pub disk: Arc<Disk>,
}

impl Persist for GroupDisk {
    type Prepared = Vec<(Vec<u8>, Vec<u8>)>;

    fn save_vote(&self, vote: &Vote<u64>) -> io::Result<()> {
        let bytes = postcard::to_allocvec(vote).map_err(io::Error::other)?;
        self.disk
            .put_synced(META, &key(self.gid, b"vote"), &bytes)
            .map_err(io::Error::other)
    }

    fn prepare(&self, entries: &[Entry<Cfg>]) -> io::Result<Self::Prepared> {
        entries
            .iter()
            .map(|e| {
                Ok((
                    key(self.gid, &e.log_id.index.to_be_bytes()),
                    postcard::to_allocvec(e).map_err(io::Error::other)?,
                ))
            })
            .collect()
    }

    fn submit(&self, rows: Self::Prepared, done: LogFlushed<Cfg>) {
        self.disk.append(self.gid, rows, done);
    }
}

impl<P: Persist> RaftLogReader<Cfg> for MemLog<P> {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<Cfg>>, StorageErr> {
        Ok(self.lock().entries.range(range).map(|(_, e)| e.clone()).collect())
    }
}

impl<P: Persist> RaftLogStorage<Cfg> for MemLog<P> {
    type LogReader = Self;

    async fn get_log_state(&mut self) -> Result<LogState<Cfg>, StorageErr> {
        let inner = self.lock();
        let last = inner.entries.values().next_back().map(|e| e.log_id).or(inner.purged);
        Ok(LogState {
            last_purged_log_id: inner.purged,
            last_log_id: last,
        })
    }

    async fn get_log_reader(&mut self) -> Self {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<u64>) -> Result<(), StorageErr> {
        self.persist.save_vote(vote).map_err(io_err)?;
        self.lock().vote = Some(*vote);
        Ok(())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<u64>>, StorageErr> {
        Ok(self.lock().vote)
    }

    async fn save_committed(&mut self, committed: Option<LogId<u64>>) -> Result<(), StorageErr> {
        self.lock().committed = committed;
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<u64>>, StorageErr> {
        Ok(self.lock().committed)
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<Cfg>) -> Result<(), StorageErr>
    where
        I: IntoIterator<Item = Entry<Cfg>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let entries: Vec<Entry<Cfg>> = entries.into_iter().collect();
        let prepared = self.persist.prepare(&entries).map_err(io_err)?;
        {
            let mut inner = self.lock();
            for e in entries {
                inner.entries.insert(e.log_id.index, e);
            }
        }
        // Readable now; `callback` fires once they are durable.
        self.persist.submit(prepared, callback);
        Ok(())
    }

    async fn truncate(&mut self, log_id: LogId<u64>) -> Result<(), StorageErr> {
        // On disk the rows after a cut are overwritten by the new
        // entries of the same indexes; memory is what openraft reads.
        self.lock().entries.split_off(&log_id.index);
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId<u64>) -> Result<(), StorageErr> {
        let mut inner = self.lock();
        inner.entries = inner.entries.split_off(&(log_id.index + 1));
        inner.purged = Some(log_id);
        Ok(())
    }
}

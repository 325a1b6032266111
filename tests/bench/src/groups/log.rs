//! One group's log on its node: the entries in memory for openraft to
//! read back (the node keeps its recent entries so too), and on disk
//! through the node's log writers.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::ops::RangeBounds;
use std::sync::{Arc, Mutex, MutexGuard};

use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{Entry, LogId, LogState, OptionalSend, RaftLogReader, Vote};

use super::disk::{Disk, META};
use super::{Cfg, StorageErr, io_err, key};

#[derive(Default)]
struct Inner {
    vote: Option<Vote<u64>>,
    committed: Option<LogId<u64>>,
    entries: BTreeMap<u64, Entry<Cfg>>,
    purged: Option<LogId<u64>>,
}

#[derive(Clone)]
pub struct GroupLog {
    gid: u32,
    inner: Arc<Mutex<Inner>>,
    disk: Arc<Disk>,
}

impl GroupLog {
    pub fn new(gid: u32, disk: Arc<Disk>) -> Self {
        Self {
            gid,
            inner: Arc::default(),
            disk,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl RaftLogReader<Cfg> for GroupLog {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<Cfg>>, StorageErr> {
        Ok(self.lock().entries.range(range).map(|(_, e)| e.clone()).collect())
    }
}

impl RaftLogStorage<Cfg> for GroupLog {
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
        let bytes = postcard::to_allocvec(vote).map_err(io_err)?;
        self.disk
            .put_synced(META, &key(self.gid, b"vote"), &bytes)
            .map_err(io_err)?;
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
        let mut rows = Vec::new();
        {
            let mut inner = self.lock();
            for e in entries {
                let bytes = postcard::to_allocvec(&e).map_err(io_err)?;
                rows.push((key(self.gid, &e.log_id.index.to_be_bytes()), bytes));
                inner.entries.insert(e.log_id.index, e);
            }
        }
        // Readable now; `callback` fires once a writer synced the rows.
        self.disk.append(self.gid, rows, callback);
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

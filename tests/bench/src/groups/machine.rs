//! A state machine: its place in memory and, for a group, each applied
//! entry written to the node's database under the group's prefix
//! (unsynced: the log's next sync covers it, as in the node). The
//! `raft_floor` tool's has no database.

use std::io::Cursor;
use std::sync::{Arc, Mutex, MutexGuard};

use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    BasicNode, Entry, EntryPayload, LogId, OptionalSend, RaftSnapshotBuilder, SnapshotMeta, StoredMembership,
};
use rocksdb::WriteBatch;

use super::disk::{Disk, KV};
use super::{Cfg, StorageErr, io_err, key};

#[derive(Default)]
struct Inner {
    applied: Option<LogId<u64>>,
    membership: StoredMembership<u64, BasicNode>,
}

#[derive(Clone, Default)]
pub struct Machine {
    inner: Arc<Mutex<Inner>>,
    /// The group and its node's database; none: memory only.
    disk: Option<(u32, Arc<Disk>)>,
}

impl Machine {
    pub fn new(gid: u32, disk: Arc<Disk>) -> Self {
        Self {
            inner: Arc::default(),
            disk: Some((gid, disk)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl RaftSnapshotBuilder<Cfg> for Machine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<Cfg>, StorageErr> {
        let inner = self.lock();
        Ok(Snapshot {
            meta: SnapshotMeta {
                last_log_id: inner.applied,
                last_membership: inner.membership.clone(),
                snapshot_id: self
                    .disk
                    .as_ref()
                    .map_or("memory".into(), |(gid, _)| format!("group-{gid}")),
            },
            snapshot: Box::new(Cursor::new(Vec::new())),
        })
    }
}

impl RaftStateMachine<Cfg> for Machine {
    type SnapshotBuilder = Self;

    async fn applied_state(&mut self) -> Result<(Option<LogId<u64>>, StoredMembership<u64, BasicNode>), StorageErr> {
        let inner = self.lock();
        Ok((inner.applied, inner.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<u64>, StorageErr>
    where
        I: IntoIterator<Item = Entry<Cfg>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut batch = WriteBatch::default();
        let mut out = Vec::new();
        let mut inner = self.lock();
        for e in entries {
            inner.applied = Some(e.log_id);
            match (&e.payload, &self.disk) {
                (EntryPayload::Normal(bytes), Some((gid, disk))) => {
                    batch.put_cf(disk.family(KV), key(*gid, &e.log_id.index.to_be_bytes()), bytes)
                }
                (EntryPayload::Membership(m), _) => inner.membership = StoredMembership::new(Some(e.log_id), m.clone()),
                _ => {}
            }
            out.push(e.log_id.index);
        }
        drop(inner);
        if let Some((_, disk)) = &self.disk {
            disk.write(batch).map_err(io_err)?;
        }
        Ok(out)
    }

    async fn get_snapshot_builder(&mut self) -> Self {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>, StorageErr> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        _meta: &SnapshotMeta<u64, BasicNode>,
        _snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageErr> {
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<Cfg>>, StorageErr> {
        Ok(None)
    }
}

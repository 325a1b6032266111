//! Adapts [`state::StateStore`](crate::state::StateStore) to openraft's `RaftStateMachine`. RocksDB work
//! runs on blocking threads, except the apply of a few single-key writes
//! (see `Weight`).

use std::io;
use std::sync::Arc;

use handlestore_proto::internal::v1 as ipb;
use ipb::command::Op;
use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{EntryPayload, OptionalSend, RaftSnapshotBuilder, StorageIOError};
use tokio::io::AsyncSeekExt;

use crate::observe::metrics::Recorders;
use crate::raft::codec::{
    log_id_from_pb, log_id_to_pb, snapshot_meta_from_pb, snapshot_meta_to_pb, stored_membership_from_pb,
    stored_membership_to_pb,
};
use crate::raft::log::durability::Durability;
use crate::raft::{Entry, LogId, SnapshotMeta, StorageError, StoredMembership, TypeConfig};
use crate::state::snapshot::{self, SnapshotDir};
use crate::state::{ApplyBatch, ApplyEntry, StateStore};

/// What a run of entries to apply holds, to tell whether it is applied on
/// the state machine's task or in the blocking pool.
///
/// A few single-key writes take less time to apply than the hand-off to the
/// pool and back (two thread wake-ups, each a context switch, on every node
/// for every entry): with mint at 64 clients, applying them on the task used
/// 5-17% less CPU per write (medians of alternated runs, three series).
/// Anything that may touch many keys or many bytes goes to the pool, so a
/// runtime thread is never held for long.
#[derive(Default)]
struct Weight {
    commands: usize,
    bytes: usize,
    many_keys: bool,
}

impl Weight {
    /// Most commands, and most encoded bytes, applied on the task.
    const LIGHT_COMMANDS: usize = 64;
    const LIGHT_BYTES: usize = 256 << 10;

    fn add(&mut self, payload: &crate::raft::payload::Payload) {
        let p = payload.proposal();
        self.commands += p.commands.len();
        self.bytes += payload.encoded().len();
        self.many_keys |= p.commands.iter().any(|c| {
            !matches!(
                c.op,
                Some(Op::HandleWrite(_) | Op::HandleDelete(_) | Op::StateWrite(_) | Op::StateDelete(_))
            )
        });
    }

    fn light(&self) -> bool {
        !self.many_keys && self.commands <= Self::LIGHT_COMMANDS && self.bytes <= Self::LIGHT_BYTES
    }
}

#[derive(Clone)]
pub struct StateMachine {
    state: Arc<StateStore>,
    snapshots: Arc<SnapshotDir>,
    durability: Arc<Durability>,
}

impl StateMachine {
    pub fn new(state: Arc<StateStore>, snapshots: Arc<SnapshotDir>, durability: Arc<Durability>) -> Self {
        Self {
            state,
            snapshots,
            durability,
        }
    }
}

fn sm_read<E: std::error::Error + 'static>(e: E) -> StorageError {
    StorageIOError::read_state_machine(&e).into()
}

fn sm_write<E: std::error::Error + 'static>(e: E) -> StorageError {
    StorageIOError::write_state_machine(&e).into()
}

fn snap_err<E: std::error::Error + 'static>(e: E) -> StorageError {
    StorageIOError::write_snapshot(None, &e).into()
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, StorageError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| sm_write(io::Error::other(e)))
}

/// A snapshot for openraft: `file` (already open, at its start) under `meta`.
fn snapshot_of(file: std::fs::File, meta: &ipb::SnapshotMeta) -> Result<Snapshot<TypeConfig>, StorageError> {
    Ok(Snapshot {
        meta: snapshot_meta_from_pb(meta).map_err(snap_err)?,
        snapshot: Box::new(tokio::fs::File::from_std(file)),
    })
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError> {
        let (state, snapshots) = (self.state.clone(), self.snapshots.clone());
        let started = std::time::Instant::now();
        let built = blocking(move || snapshots.build(&state)).await;
        let r = crate::observe::metrics::recorders();
        Recorders::observe(&r.snapshot_build_seconds, started, matches!(built, Ok(Ok(_))));
        let (file, meta) = built?.map_err(snap_err)?;
        tracing::info!(snapshot_id = %meta.snapshot_id, "built snapshot");
        snapshot_of(file, &meta)
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = Self;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), StorageError> {
        let (applied, membership) = self.state.applied_state().map_err(sm_read)?;
        let applied = applied.map(|l| log_id_from_pb(&l)).transpose().map_err(sm_read)?;
        let membership = match membership {
            Some(m) => stored_membership_from_pb(&m).map_err(sm_read)?,
            None => StoredMembership::default(),
        };
        Ok((applied, membership))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<ipb::ProposalResult>, StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut items = Vec::new();
        let mut membership = None;
        let mut last = None;
        let mut weight = Weight::default();
        for e in entries {
            last = Some(e.log_id);
            let proposal = match e.payload {
                EntryPayload::Normal(p) => {
                    weight.add(&p);
                    Some(p.into_proposal())
                }
                EntryPayload::Membership(m) => {
                    membership = Some(stored_membership_to_pb(&StoredMembership::new(Some(e.log_id), m)));
                    None
                }
                EntryPayload::Blank => None,
            };
            items.push(ApplyEntry {
                index: e.log_id.index,
                proposal,
            });
        }
        let Some(last) = last else {
            return Ok(Vec::new());
        };
        let batch = ApplyBatch {
            entries: items,
            last_log_id: log_id_to_pb(&last),
            membership,
        };
        // Nothing is applied, and so answered, before the entries are on disk
        // here. With followers this has already happened (a quorum counts
        // only synced entries, see raft::log::durability); a one-voter cluster
        // commits on the leader's word alone, and waits here instead.
        self.durability.wait_durable(last.index).await;
        let state = self.state.clone();
        let count = batch.entries.len();
        let commands = weight.commands;
        let started = std::time::Instant::now();
        let applied = if weight.light() {
            Ok(state.apply(batch))
        } else {
            blocking(move || state.apply(batch)).await
        };
        crate::observe::metrics::recorders()
            .apply_seconds
            .observe(started.elapsed().as_secs_f64());
        crate::raft::warn_if_slow(
            "applying committed entries",
            started,
            format_args!("{count} entries ({commands} commands) up to index {}", last.index),
        );
        let results = applied?.map_err(|e| StorageError::from(StorageIOError::apply(last, &e)))?;
        Ok(results.into_iter().map(Option::unwrap_or_default).collect())
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<tokio::fs::File>, StorageError> {
        // Only openraft's chunk-by-chunk transport uses this; handlestore
        // streams snapshots itself (see raft::service), but keep it correct.
        let path = self
            .snapshots
            .incoming_path(&format!("chunked-{}", crate::clock::wall_ms()));
        let file = tokio::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .await
            .map_err(snap_err)?;
        Ok(Box::new(file))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta,
        mut data: Box<tokio::fs::File>,
    ) -> Result<(), StorageError> {
        let incoming = self.snapshots.incoming_path(&meta.snapshot_id);
        if !incoming.exists() {
            // Not received by our streaming service: copy the data handle.
            let mut out = tokio::fs::File::create(&incoming).await.map_err(snap_err)?;
            data.seek(io::SeekFrom::Start(0)).await.map_err(snap_err)?;
            tokio::io::copy(&mut *data, &mut out).await.map_err(snap_err)?;
            out.sync_all().await.map_err(snap_err)?;
        }
        let (state, snapshots) = (self.state.clone(), self.snapshots.clone());
        let meta_pb = snapshot_meta_to_pb(meta);
        let installed = blocking(move || -> Result<ipb::SnapshotMeta, crate::state::StateError> {
            snapshot::verify(&incoming)?;
            snapshots.force_current(&incoming)?;
            snapshot::install(&state, &snapshots.current_path())
        })
        .await?
        .map_err(snap_err)?;
        if installed.last_log_id != meta_pb.last_log_id {
            return Err(snap_err(io::Error::other(
                "installed snapshot does not match its metadata",
            )));
        }
        tracing::info!(snapshot_id = %meta.snapshot_id, "installed snapshot");
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        let (state, snapshots) = (self.state.clone(), self.snapshots.clone());
        let current = blocking(move || snapshots.current_verified(&state))
            .await?
            .map_err(sm_read)?;
        current.map(|(file, meta)| snapshot_of(file, &meta)).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raft::payload::Payload;

    fn mint(value_len: usize) -> ipb::Command {
        ipb::Command {
            write_id: None,
            op: Some(Op::HandleWrite(ipb::HandleWrite {
                namespace: "default".into(),
                store: "cart".into(),
                id: "h".into(),
                value: vec![7; value_len],
                ..Default::default()
            })),
            ..Default::default()
        }
    }

    fn weight(proposals: Vec<Vec<ipb::Command>>) -> Weight {
        let mut w = Weight::default();
        for commands in proposals {
            w.add(&Payload::new(ipb::Proposal { stamp_ms: 1, commands }));
        }
        w
    }

    #[test]
    fn a_few_single_key_writes_are_light_and_anything_larger_is_not() {
        assert!(weight(vec![vec![mint(256); 40], vec![mint(256); 24]]).light());
        assert!(
            !weight(vec![vec![mint(256); 40], vec![mint(256); 25]]).light(),
            "too many commands"
        );
        assert!(!weight(vec![vec![mint(300 << 10)]]).light(), "too many bytes");
        let prefix = ipb::Command {
            write_id: None,
            op: Some(Op::StateDeletePrefix(Default::default())),
            ..Default::default()
        };
        assert!(!weight(vec![vec![mint(256), prefix]]).light(), "may touch many keys");
        let sweep = ipb::Command {
            write_id: None,
            op: Some(Op::Expire(Default::default())),
            ..Default::default()
        };
        assert!(!weight(vec![vec![sweep]]).light(), "may touch many keys");
        assert!(weight(vec![]).light(), "blank and membership entries");
    }
}

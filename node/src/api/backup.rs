//! `Admin.SnapshotSave`: a backup of the cluster's state, streamed from this
//! node (the file's format: [`state::backup`](crate::state::backup)).
//!
//! Consistent with every acknowledged write: the node first waits until it
//! has applied everything committed when the call came in (a read index, as
//! a linearizable read), then builds a snapshot from one RocksDB snapshot
//! of its state, apart from the snapshot Raft keeps, and streams it. Writes
//! go on meanwhile; the backup holds what was applied when it was built.

use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use handlestore_proto::v1 as pb;
use tonic::Status;

use super::{Api, Credentials, Need};
use crate::state::backup::Pieces;
use crate::state::snapshot::SnapshotDir;
use crate::status;

pub type SaveStream = Pin<Box<dyn Stream<Item = Result<pb::SnapshotSaveChunk, Status>> + Send>>;

/// Pieces sent ahead of the client's reading.
const AHEAD: usize = 4;

/// The snapshot file a backup is streamed from, removed once it is sent or
/// the client is gone.
struct Export(PathBuf);

impl Drop for Export {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Builds a backup and returns the stream that sends it.
pub async fn save(api: &Api, snapshots: Arc<SnapshotDir>, creds: &Credentials) -> Result<SaveStream, Status> {
    api.read_as(creds, &Need::Root, Some(&pb::ReadOptions::default()))
        .await?;
    let state = api.state.clone();
    let cluster_id = state.cluster_id().to_string();
    let (path, meta) = super::blocking(move || snapshots.export(&state)).await?;
    let export = Export(path);
    let pieces = Pieces::open(&export.0).map_err(|e| status::internal(format!("opening the backup: {e}")))?;
    let first = pb::SnapshotSaveChunk {
        total_bytes: pieces.total(),
        revision: meta.last_log_id.as_ref().map_or(0, |l| l.index),
        cluster_id,
        ..Default::default()
    };
    tracing::info!(revision = first.revision, bytes = first.total_bytes, "saving a backup");
    let (tx, rx) = tokio::sync::mpsc::channel(AHEAD);
    tokio::spawn(send(export, pieces, first, tx));
    Ok(Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx)))
}

type Sender = tokio::sync::mpsc::Sender<Result<pb::SnapshotSaveChunk, Status>>;

/// Sends the pieces, each read on a blocking thread, none held while the
/// client is slow to take them; stops when the client is gone.
async fn send(export: Export, mut pieces: Pieces, first: pb::SnapshotSaveChunk, tx: Sender) {
    let mut next = Some(first);
    loop {
        let read = tokio::task::spawn_blocking(move || {
            let piece = pieces.next_piece();
            (pieces, piece)
        })
        .await;
        let (p, piece) = match read {
            Ok(r) => r,
            Err(e) => {
                let _ = tx.send(Err(status::internal(format!("reading the backup: {e}")))).await;
                return;
            }
        };
        pieces = p;
        let mut chunk = next.take().unwrap_or_default();
        match piece {
            Ok(Some(data)) => chunk.data = data,
            Ok(None) => {
                chunk.sha256 = pieces.sha256().to_vec();
                let _ = tx.send(Ok(chunk)).await;
                tracing::info!(sha256 = %crate::state::backup::hex(&pieces.sha256()), "backup sent");
                drop(export);
                return;
            }
            Err(e) => {
                let _ = tx.send(Err(status::internal(format!("reading the backup: {e}")))).await;
                return;
            }
        }
        if tx.send(Ok(chunk)).await.is_err() {
            tracing::info!("the backup's client went away before the end");
            return;
        }
    }
}

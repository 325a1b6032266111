//! A group's proposer on its leader's node, as the node's
//! (`node/src/raft/writes/batch.rs`): the writes queued while an entry is
//! in flight become the next entry, up to 512 of them, one entry in
//! flight at a time, each write answered when its entry is applied.

use tokio::sync::{mpsc, oneshot};

use super::Raft;

/// The node's default `--max-batch-commands`.
const MAX_BATCH: usize = 512;

struct Pending {
    payload: Vec<u8>,
    done: oneshot::Sender<Result<(), String>>,
}

#[derive(Clone)]
pub struct Proposer {
    tx: mpsc::UnboundedSender<Pending>,
}

impl Proposer {
    /// Starts `raft`'s proposer on the current runtime (its node's loop).
    pub fn start(raft: Raft) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(run(raft, rx));
        Self { tx }
    }

    /// One write, answered once the entry that carries it is applied.
    pub async fn write(&self, payload: Vec<u8>) -> Result<(), String> {
        let (done, answer) = oneshot::channel();
        self.tx
            .send(Pending { payload, done })
            .map_err(|_| "the proposer stopped".to_string())?;
        answer.await.map_err(|_| "the proposer dropped the write".to_string())?
    }
}

async fn run(raft: Raft, mut rx: mpsc::UnboundedReceiver<Pending>) {
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(p) => batch.push(p),
                Err(_) => break,
            }
        }
        let entry: Vec<u8> = batch.iter().flat_map(|p| p.payload.iter().copied()).collect();
        let result = raft.client_write(entry).await.map(|_| ()).map_err(|e| e.to_string());
        for p in batch {
            let _ = p.done.send(result.clone());
        }
    }
}

//! Read index on the leader, one quorum round for many reads.
//!
//! A linearizable read needs the leader to confirm, after the read arrived,
//! that it is still leader (a heartbeat round answered by a quorum), and the
//! commit index at that moment. openraft's `get_read_log_id` does one round
//! per call, so 64 concurrent readers meant 64 rounds, each an AppendEntries
//! to every follower. Here readers queue up; one task takes every reader
//! that has queued, runs one round for all of them, and answers them all.
//!
//! Why sharing a round is safe: a reader is only answered by a round that
//! started after it was queued (readers that arrive while a round is in
//! flight wait for the next one), so the leadership it observes was
//! confirmed after the read began, and the index covers every write
//! acknowledged before then. This is etcd's read-index batching.
//!
//! The leader's clock, read once the round has confirmed its leadership,
//! goes with the index: it is the time the read judges expiry at, on
//! whichever node serves it (`api::read`). A leader whose clock is not
//! trusted (`crate::clock`) answers no round.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use handlestore_proto::reason;

use super::Raft;
use super::proposer::{ProposeError, raft_error};
use crate::clock::Clock;
use crate::status;

/// Where a linearizable read stands: the index to wait for, and the
/// leader's clock (unix ms) once leadership was confirmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadPoint {
    pub index: u64,
    pub time_ms: u64,
}

type Waiter = oneshot::Sender<Result<ReadPoint, ProposeError>>;

/// Queue of readers waiting for the next round. Cheap to clone.
#[derive(Clone)]
pub struct ReadIndex {
    tx: mpsc::Sender<Waiter>,
}

impl ReadIndex {
    /// Starts the round task. A round that takes longer than `timeout`
    /// fails every reader in it.
    pub fn start(raft: Raft, timeout: Duration, clock: Arc<Clock>) -> Self {
        let (tx, rx) = mpsc::channel(4096);
        tokio::spawn(rounds(raft, rx, timeout, clock));
        Self { tx }
    }

    /// The index a linearizable read must wait for, confirmed by a quorum
    /// round that began after this call, with the leader's clock. Errors if
    /// this node is not the leader (or stops being it), or its clock is not
    /// trusted.
    pub async fn get(&self) -> Result<ReadPoint, ProposeError> {
        let (tx, rx) = oneshot::channel();
        self.tx.send(tx).await.map_err(|_| ProposeError::Shutdown)?;
        rx.await.map_err(|_| ProposeError::Shutdown)?
    }
}

async fn rounds(raft: Raft, mut rx: mpsc::Receiver<Waiter>, timeout: Duration, clock: Arc<Clock>) {
    while let Some(first) = rx.recv().await {
        let mut waiters = vec![first];
        while let Ok(w) = rx.try_recv() {
            waiters.push(w);
        }
        let res = round(&raft, timeout, &clock).await;
        for w in waiters {
            let _ = w.send(res.clone());
        }
    }
}

/// One quorum round, refused before it starts if the clock is not
/// trusted (so an untrusted leader sends no heartbeats for reads).
async fn round(raft: &Raft, timeout: Duration, clock: &Clock) -> Result<ReadPoint, ProposeError> {
    clock.check().map_err(ProposeError::Clock)?;
    let index = match tokio::time::timeout(timeout, raft.get_read_log_id()).await {
        Ok(Ok((log_id, _applied))) => log_id.map(|l| l.index).unwrap_or(0),
        Ok(Err(e)) => return Err(raft_error(e)),
        Err(_) => {
            return Err(ProposeError::Remote(status::unavailable(
                reason::TIMEOUT,
                format!("confirming leadership took longer than {timeout:?} (no quorum?)"),
                None,
            )));
        }
    };
    let time_ms = clock.now().map_err(ProposeError::Clock)?;
    Ok(ReadPoint { index, time_ms })
}

//! Read index on the leader, one quorum round for many reads; and a
//! follower's request for one.
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
//! While the leader holds a read lease (`lease`), a round needs no quorum:
//! the index is its commit index, read inside Raft's core. Every quorum
//! round also renews the lease, and a lease past half its length is
//! renewed in the background, so steady reads seldom wait for one.
//!
//! The leader's clock, read once the round has confirmed its leadership,
//! goes with the index: it is the time the read judges expiry at, on
//! whichever node serves it ([`api::read`](crate::api::read)). A leader whose clock is not
//! trusted (`crate::clock`) answers no round.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use handlestore_proto::internal::v1 as ipb;
use tokio::sync::{mpsc, oneshot};

use crate::clock::Clock;
use crate::observe::metrics;
use crate::raft::Raft;
use crate::raft::error::LeaderHint;
use crate::raft::error::{ProposeError, raft_error};
use crate::raft::net::network::Peers;
use crate::raft::reads::lease::{Leadership, ReadLease};

/// Where a linearizable read stands: the index to wait for, and the
/// leader's clock (unix ms) once leadership was confirmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadPoint {
    pub index: u64,
    pub time_ms: u64,
}

type Answer = Result<ReadPoint, ProposeError>;
type Waiter = oneshot::Sender<Answer>;

/// Queue of readers waiting for the next round. Cheap to clone.
#[derive(Clone)]
pub struct ReadIndex {
    tx: mpsc::Sender<Waiter>,
}

impl ReadIndex {
    /// Starts the round task, served on `lease` while it holds. A round
    /// that takes longer than `timeout` fails every reader in it.
    pub fn start(raft: Raft, timeout: Duration, clock: Arc<Clock>, lease: Arc<ReadLease>) -> Self {
        Self::with_rounds(move || {
            let r = Round {
                raft: raft.clone(),
                timeout,
                clock: clock.clone(),
                lease: lease.clone(),
            };
            async move { r.run().await }
        })
    }

    /// Starts the task over any round (a seam for tests).
    fn with_rounds<R, F>(round: R) -> Self
    where
        R: FnMut() -> F + Send + 'static,
        F: Future<Output = Answer> + Send + 'static,
    {
        let (tx, rx) = mpsc::channel(4096);
        tokio::spawn(rounds(round, rx));
        Self { tx }
    }

    /// The index a linearizable read must wait for, confirmed by a quorum
    /// round that began after this call, with the leader's clock. Errors if
    /// this node is not the leader (or stops being it), or its clock is not
    /// trusted.
    pub async fn get(&self) -> Answer {
        let (tx, rx) = oneshot::channel();
        self.tx.send(tx).await.map_err(|_| ProposeError::Shutdown)?;
        rx.await.map_err(|_| ProposeError::Shutdown)?
    }
}

/// Runs one round for every reader that has queued, then the next.
async fn rounds<R, F>(mut round: R, mut rx: mpsc::Receiver<Waiter>)
where
    R: FnMut() -> F,
    F: Future<Output = Answer>,
{
    while let Some(first) = rx.recv().await {
        let mut waiters = vec![first];
        while let Ok(w) = rx.try_recv() {
            waiters.push(w);
        }
        let res = round().await;
        for w in waiters {
            let _ = w.send(res.clone());
        }
    }
}

/// What a round works with.
#[derive(Clone)]
struct Round {
    raft: Raft,
    timeout: Duration,
    clock: Arc<Clock>,
    lease: Arc<ReadLease>,
}

impl Round {
    /// A read point on the lease, else from a quorum round; refused before
    /// either if the clock is not trusted (so an untrusted leader sends no
    /// heartbeats for reads).
    async fn run(self) -> Answer {
        self.clock.check().map_err(ProposeError::Clock)?;
        let index = match self.on_lease().await {
            Some(index) => index,
            None => self.quorum().await?,
        };
        let time_ms = self.clock.now().map_err(ProposeError::Clock)?;
        Ok(ReadPoint { index, time_ms })
    }

    /// The commit index, if a lease is held and this node is still the
    /// leader it was granted to, with an entry of its own term committed.
    /// Starts a renewal once the lease is past half its length.
    async fn on_lease(&self) -> Option<u64> {
        let now = std::time::Instant::now();
        let office = self.lease.held_at(now)?;
        let leadership = Leadership::read(&self.raft).await?;
        let index = leadership
            .committed_in_term
            .filter(|_| leadership.leads && leadership.office == office)?;
        metrics::recorders().reads_on_lease.inc();
        if self.lease.should_renew(now) {
            let r = self.clone();
            tokio::spawn(async move {
                let _ = r.quorum().await;
                r.lease.renewed();
            });
        }
        Some(index)
    }

    /// One quorum round (openraft's read index), which grants the lease
    /// from its start if this node leads in the same office after it.
    async fn quorum(&self) -> Result<u64, ProposeError> {
        let start = match self.lease.is_on() {
            true => Leadership::read(&self.raft)
                .await
                .filter(|s| s.leads)
                .and_then(|s| self.lease.round_starts(s.office)),
            false => None,
        };
        let index = match tokio::time::timeout(self.timeout, self.raft.get_read_log_id()).await {
            Ok(Ok((log_id, _applied))) => log_id.map(|l| l.index).unwrap_or(0),
            Ok(Err(e)) => return Err(raft_error(e)),
            Err(_) => return Err(timed_out(self.timeout)),
        };
        if let Some(start) = start
            && let Some(after) = Leadership::read(&self.raft).await.filter(|s| s.leads)
        {
            self.lease.grant(start, &after.office);
        }
        Ok(index)
    }
}

/// Confirming leadership took longer than `timeout`.
pub(in crate::raft) fn timed_out(timeout: Duration) -> ProposeError {
    ProposeError::TookTooLong(format!(
        "confirming leadership took longer than {timeout:?} (no quorum?)"
    ))
}

/// Asks the leader for a read point (its `ReadIndex` RPC), for a read
/// served on this follower.
pub(in crate::raft) async fn from_leader(peers: &Peers, leader: &LeaderHint, timeout: Duration) -> Answer {
    let unreachable = |why: String| ProposeError::LeaderUnreachable(leader.clone(), why);
    let mut client = peers
        .raft_client(leader.peer())
        .map_err(|e| unreachable(e.to_string()))?;
    let mut req = tonic::Request::new(ipb::ReadIndexRequest {});
    req.set_timeout(timeout);
    match client.read_index(req).await {
        Ok(r) => Ok(ReadPoint {
            index: r.get_ref().index,
            time_ms: r.get_ref().leader_time_ms,
        }),
        Err(s) if !s.details().is_empty() => Err(ProposeError::Remote(s)),
        Err(s) => Err(unreachable(format!(
            "could not get a read index from the leader (node {} at {}): {}",
            leader.id,
            leader.peer(),
            s.message()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use tokio::sync::Semaphore;

    use super::*;

    /// Rounds that each wait for a permit, numbered from 1: the answer's
    /// index is the round that answered.
    fn gated() -> (ReadIndex, Arc<Semaphore>, Arc<AtomicU64>) {
        let gate = Arc::new(Semaphore::new(0));
        let started = Arc::new(AtomicU64::new(0));
        let (g, s) = (gate.clone(), started.clone());
        let ri = ReadIndex::with_rounds(move || {
            let (g, s) = (g.clone(), s.clone());
            async move {
                let n = s.fetch_add(1, Ordering::SeqCst) + 1;
                g.acquire().await.expect("gate").forget();
                Ok(ReadPoint { index: n, time_ms: 0 })
            }
        });
        (ri, gate, started)
    }

    async fn until(started: &AtomicU64, n: u64) {
        while started.load(Ordering::SeqCst) < n {
            tokio::task::yield_now().await;
        }
    }

    /// Readers queued together share a round; one that arrives while a
    /// round is in flight is answered only by the next round, which began
    /// after it.
    #[tokio::test]
    async fn readers_share_a_round_but_never_one_that_began_before_them() {
        let (ri, gate, started) = gated();
        let first = tokio::spawn({
            let ri = ri.clone();
            async move { ri.get().await }
        });
        until(&started, 1).await;
        let late: Vec<_> = (0..5)
            .map(|_| {
                let ri = ri.clone();
                tokio::spawn(async move { ri.get().await })
            })
            .collect();
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
        gate.add_permits(1);
        assert_eq!(first.await.expect("task").expect("answer").index, 1);
        until(&started, 2).await;
        gate.add_permits(1);
        for r in late {
            assert_eq!(
                r.await.expect("task").expect("answer").index,
                2,
                "one round for all five"
            );
        }
        assert_eq!(started.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_failed_round_fails_every_reader_in_it() {
        let ri = ReadIndex::with_rounds(|| async { Err(ProposeError::NotLeader(None)) });
        let (a, b) = tokio::join!(ri.get(), ri.get());
        assert!(matches!(a, Err(ProposeError::NotLeader(None))));
        assert!(matches!(b, Err(ProposeError::NotLeader(None))));
    }
}

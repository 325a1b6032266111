//! Batching: validated commands queue on a channel; a single task takes
//! everything that has queued (up to a bound) into one `Proposal`, i.e. one
//! log entry, one append and (with the log store's group commit) a shared
//! fsync. A bounded number of proposals are in flight at once, so under
//! load the queue grows and batches get bigger instead of entries piling up.
//!
//! Two commands on the same key never share an entry: a key's revision (the
//! log index) then always names exactly one version, which compare-and-set
//! relies on. The later command waits for the next batch.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use handlestore_proto::internal::v1 as ipb;
use prost::Message;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError, mpsc, oneshot};

use crate::clock::Clock;
use crate::raft::Raft;
use crate::raft::error::{ProposeError, write_error};
use crate::raft::payload::Payload;

/// One command waiting for its entry, and who waits for its result.
pub(in crate::raft) struct Pending {
    pub cmd: ipb::Command,
    /// The data keys it writes ([`state::keys::conflict_keys`](crate::state::keys::conflict_keys)).
    pub keys: Vec<Vec<u8>>,
    pub done: oneshot::Sender<Result<ipb::CommandResult, ProposeError>>,
}

/// How large an entry grows, and how long it may take to commit.
#[derive(Debug, Clone)]
pub(in crate::raft) struct BatchLimits {
    pub max_commands: usize,
    pub max_bytes: usize,
    /// A proposal not committed within this fails its commands.
    pub timeout: Duration,
}

/// The slots for entries in flight, which a leader transfer takes all of
/// to hold writes back: with every slot taken, no entry is in flight and
/// none is proposed until they are given back, so the leader's log stops
/// growing while the next leader catches up with it.
#[derive(Clone)]
pub struct WriteGate {
    permits: Arc<Semaphore>,
    slots: u32,
}

impl WriteGate {
    pub(in crate::raft) fn new(slots: usize) -> Self {
        let slots = slots.max(1);
        Self {
            permits: Arc::new(Semaphore::new(slots)),
            slots: slots as u32,
        }
    }

    /// Waits until every entry in flight is answered, then holds writes
    /// back until the permit is dropped (None: the proposer stopped).
    pub async fn hold(&self) -> Option<OwnedSemaphorePermit> {
        self.permits.clone().acquire_many_owned(self.slots).await.ok()
    }
}

/// Forms entries from the queue until it closes, one per slot of `gate`.
pub(in crate::raft) async fn run(
    raft: Raft,
    mut rx: mpsc::Receiver<Pending>,
    clock: Arc<Clock>,
    limits: BatchLimits,
    gate: WriteGate,
) {
    let permits = gate.permits;
    let mut deferred: VecDeque<Pending> = VecDeque::new();
    loop {
        let first = match deferred.pop_front() {
            Some(p) => p,
            None => match rx.recv().await {
                Some(p) => p,
                None => return,
            },
        };
        let Some(permit) = slot(&permits).await else {
            return;
        };
        let batch = collect(first, &mut deferred, &mut rx, &limits);
        if !batch.items.is_empty() {
            propose(&raft, batch, &clock, permit, limits.timeout).await;
        }
    }
}

/// Waits for a slot for one more entry in flight. While every slot is
/// busy, requests accumulate and the next batch is larger.
async fn slot(permits: &Arc<Semaphore>) -> Option<OwnedSemaphorePermit> {
    match permits.clone().try_acquire_owned() {
        Ok(p) => Some(p),
        Err(TryAcquireError::Closed) => None,
        Err(TryAcquireError::NoPermits) => {
            let p = permits.clone().acquire_owned().await.ok()?;
            take_in_arrived_requests().await;
            Some(p)
        }
    }
}

/// One entry's commands: `first`, then the deferred ones, then what has
/// queued, up to the limits. Commands on a key already in the entry are
/// deferred (in order) to the next one.
fn collect(
    first: Pending,
    deferred: &mut VecDeque<Pending>,
    rx: &mut mpsc::Receiver<Pending>,
    limits: &BatchLimits,
) -> Batch {
    let mut batch = Batch::default();
    let mut still_deferred = VecDeque::new();
    batch.add(first, &mut still_deferred);
    while let Some(p) = deferred.pop_front() {
        if batch.full(limits) {
            still_deferred.push_back(p);
        } else {
            batch.add(p, &mut still_deferred);
        }
    }
    while !batch.full(limits) {
        match rx.try_recv() {
            Ok(p) => batch.add(p, &mut still_deferred),
            Err(_) => break,
        }
    }
    *deferred = still_deferred;
    batch
}

/// Stamps and proposes one entry; its commands are answered when it is
/// applied (or fail together), on a task of its own that holds the slot.
async fn propose(raft: &Raft, batch: Batch, clock: &Clock, permit: OwnedSemaphorePermit, timeout: Duration) {
    let (cmds, dones): (Vec<_>, Vec<_>) = batch.items.into_iter().map(|p| (p.cmd, p.done)).unzip();
    // The stamp every expiry in the entry is computed from: refused,
    // rather than taken from a clock that jumped since the check.
    let stamp_ms = match clock.now() {
        Ok(t) => t,
        Err(e) => return fail_all(dones, ProposeError::Clock(e)),
    };
    let proposal = ipb::Proposal {
        stamp_ms,
        commands: cmds,
    };
    let responder = match raft.client_write_ff(Payload::new(proposal)).await {
        Ok(r) => r,
        Err(_) => return fail_all(dones, ProposeError::Shutdown),
    };
    tokio::spawn(async move {
        let _permit = permit;
        match tokio::time::timeout(timeout, responder).await {
            Err(_) => fail_all(dones, ProposeError::Timeout(timeout)),
            Ok(Err(_)) => fail_all(dones, ProposeError::Shutdown),
            Ok(Ok(Err(e))) => fail_all(dones, write_error(e)),
            Ok(Ok(Ok(resp))) => answer(dones, resp.data.results),
        }
    });
}

/// Answers each command with its result, in order.
fn answer(dones: Vec<oneshot::Sender<Result<ipb::CommandResult, ProposeError>>>, results: Vec<ipb::CommandResult>) {
    if results.len() != dones.len() {
        return fail_all(dones, ProposeError::Internal("result count mismatch".into()));
    }
    for (done, r) in dones.into_iter().zip(results) {
        let _ = done.send(Ok(r));
    }
}

/// Scheduler turns given to the node's other tasks before an entry is
/// formed after waiting for a slot: one for the connections to read what has
/// arrived, one for the handlers of those requests to queue their writes,
/// and two to spare.
const TAKE_IN_TURNS: usize = 4;

/// Lets requests that reached this node while the previous entry was being
/// committed and applied join the next entry. On one event-loop thread
/// (`--worker-threads`), the apply and the answers of that entry run before
/// the loop looks at its sockets again, so without this the next entry
/// leaves with only the writes already queued, and the rest wait a whole
/// round (measured: docs/dev/performance-notes.md, "Requests that arrived join the
/// next entry"). Each turn lets the runtime poll for I/O and run what became
/// ready. Only after a wait: a lone writer's entry leaves at once.
async fn take_in_arrived_requests() {
    for _ in 0..TAKE_IN_TURNS {
        tokio::task::yield_now().await;
    }
}

/// The commands of one log entry being collected.
#[derive(Default)]
pub(in crate::raft) struct Batch {
    items: Vec<Pending>,
    keys: HashSet<Vec<u8>>,
    bytes: usize,
}

impl Batch {
    fn full(&self, limits: &BatchLimits) -> bool {
        self.items.len() >= limits.max_commands || self.bytes >= limits.max_bytes
    }

    /// Adds `p`, or defers it to a later entry if one of its keys is
    /// already written here.
    fn add(&mut self, p: Pending, later: &mut VecDeque<Pending>) {
        if p.keys.iter().any(|k| self.keys.contains(k)) {
            later.push_back(p);
            return;
        }
        self.keys.extend(p.keys.iter().cloned());
        self.bytes += p.cmd.encoded_len();
        self.items.push(p);
    }
}

fn fail_all(dones: Vec<oneshot::Sender<Result<ipb::CommandResult, ProposeError>>>, err: ProposeError) {
    for d in dones {
        let _ = d.send(Err(err.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(keys: &[&str]) -> (Pending, oneshot::Receiver<Result<ipb::CommandResult, ProposeError>>) {
        let (done, rx) = oneshot::channel();
        let cmd = ipb::Command {
            write_id: None,
            op: Some(ipb::command::Op::StateDelete(ipb::StateDelete {
                namespace: "ns".into(),
                key: keys.join("+"),
                expected_revision: None,
            })),
            ..Default::default()
        };
        let keys = keys.iter().map(|k| k.as_bytes().to_vec()).collect();
        (Pending { cmd, keys, done }, rx)
    }

    fn limits(max_commands: usize) -> BatchLimits {
        BatchLimits {
            max_commands,
            max_bytes: 1 << 20,
            timeout: Duration::from_secs(1),
        }
    }

    fn keys_of(b: &Batch) -> Vec<String> {
        b.items
            .iter()
            .map(|p| {
                p.keys
                    .iter()
                    .map(|k| String::from_utf8_lossy(k).into_owned())
                    .collect::<Vec<_>>()
                    .join("+")
            })
            .collect()
    }

    /// Compare-and-set depends on it: a key's revision names one version.
    #[test]
    fn two_writes_of_one_key_never_share_an_entry_and_keep_their_order() {
        let (tx, mut rx) = mpsc::channel(16);
        let mut waiting = Vec::new();
        for keys in [&["a"][..], &["b"], &["a"], &["c", "b"], &["d"], &["a"]] {
            let (p, r) = pending(keys);
            waiting.push(r);
            tx.try_send(p).expect("queued");
        }
        let mut deferred = VecDeque::new();
        let first = rx.try_recv().expect("first");
        let one = collect(first, &mut deferred, &mut rx, &limits(100));
        assert_eq!(keys_of(&one), ["a", "b", "d"]);
        let first = deferred.pop_front().expect("deferred");
        let two = collect(first, &mut deferred, &mut rx, &limits(100));
        assert_eq!(
            keys_of(&two),
            ["a", "c+b"],
            "deferred in order, together where they do not collide"
        );
        let first = deferred.pop_front().expect("deferred");
        let three = collect(first, &mut deferred, &mut rx, &limits(100));
        assert_eq!(keys_of(&three), ["a"]);
        assert!(deferred.is_empty());
    }

    #[test]
    fn an_entry_stops_at_its_limit_and_the_rest_waits_in_order() {
        let (tx, mut rx) = mpsc::channel(16);
        for k in ["a", "b", "c", "d", "e"] {
            tx.try_send(pending(&[k]).0).expect("queued");
        }
        let mut deferred = VecDeque::new();
        let first = rx.try_recv().expect("first");
        assert_eq!(keys_of(&collect(first, &mut deferred, &mut rx, &limits(2))), ["a", "b"]);
        let first = rx.try_recv().expect("next");
        assert_eq!(keys_of(&collect(first, &mut deferred, &mut rx, &limits(2))), ["c", "d"]);
    }
}

//! The write path: validated commands are batched into Raft entries on the
//! leader, or forwarded to the leader from a follower.
//!
//! Batching: requests queue on a channel; a single task takes everything that
//! has queued (up to a bound) into one `Proposal`, i.e. one log entry, one
//! append and (with the log store's group commit) a shared fsync. A bounded
//! number of proposals are in flight at once, so under load the queue grows
//! and batches get bigger instead of entries piling up.
//!
//! Two commands on the same key never share an entry: a key's revision (the
//! log index) then always names exactly one version, which compare-and-set
//! relies on. The later command waits for the next batch.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use handlestore_proto::internal::v1 as ipb;
use handlestore_proto::reason;
use openraft::error::{ClientWriteError, RaftError};
use openraft::{RaftMetrics, ServerState};
use prost::Message;
use tokio::sync::{Semaphore, TryAcquireError, mpsc, oneshot, watch};
use tonic::Code;

use super::network::Peers;
use super::payload::Payload;
use super::read_index::{ReadIndex, ReadPoint};
use super::{NodeId, Raft};
use crate::clock::{Clock, ClockError};
use crate::status::{self, LeaderHint};

/// Why a write was not (known to be) applied.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProposeError {
    #[error("this node is not the leader")]
    NotLeader(Option<LeaderHint>),
    #[error("{0}")]
    NoQuorum(String),
    #[error("write not committed within {0:?}; it may still be applied: retry with the same write id")]
    Timeout(Duration),
    #[error("node is shutting down")]
    Shutdown,
    /// This node (the leader) may not stamp time: its clock is off.
    #[error("{0}")]
    Clock(ClockError),
    #[error("{0}")]
    Remote(tonic::Status),
}

impl ProposeError {
    pub fn to_status(&self) -> tonic::Status {
        match self {
            ProposeError::NotLeader(hint) => status::unavailable(
                reason::NOT_LEADER,
                match hint {
                    Some(h) => format!("not the leader; the leader is node {} at {}", h.id, h.addr),
                    None => "no leader is known right now (election in progress or no quorum)".into(),
                },
                hint.as_ref(),
            ),
            ProposeError::NoQuorum(msg) => status::unavailable(reason::NO_QUORUM, msg.clone(), None),
            ProposeError::Timeout(_) => status::unavailable(reason::TIMEOUT, self.to_string(), None),
            ProposeError::Shutdown => status::unavailable(reason::SHUTDOWN, self.to_string(), None),
            ProposeError::Clock(e) => status::clock(e),
            ProposeError::Remote(s) => s.clone(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct ProposerConfig {
    pub write_timeout: Duration,
    /// The leader refuses writes at once when it has not heard from a quorum
    /// for this long (fail fast, never queue).
    pub quorum_silence: Duration,
    pub max_batch_commands: usize,
    pub max_batch_bytes: usize,
    pub max_in_flight: usize,
}

struct Pending {
    cmd: ipb::Command,
    keys: Vec<Vec<u8>>,
    done: oneshot::Sender<Result<ipb::CommandResult, ProposeError>>,
}

pub struct Proposer {
    id: NodeId,
    raft: Raft,
    metrics: watch::Receiver<RaftMetrics<NodeId, openraft::BasicNode>>,
    tx: mpsc::Sender<Pending>,
    forward_peers: Arc<Peers>,
    read_index: ReadIndex,
    clock: Arc<Clock>,
    cfg: ProposerConfig,
    /// Writes this node forwarded to the leader and got an answer for.
    forwarded: AtomicU64,
}

/// This node's view of leadership, read from the metrics without holding the
/// borrow across an await.
#[derive(Debug, Clone)]
pub struct LeaderView {
    pub state: ServerState,
    pub leader: Option<LeaderHint>,
    pub millis_since_quorum_ack: Option<u64>,
}

impl Proposer {
    pub fn start(
        id: NodeId,
        raft: Raft,
        forward_peers: Arc<Peers>,
        clock: Arc<Clock>,
        cfg: ProposerConfig,
    ) -> Arc<Self> {
        let (tx, rx) = mpsc::channel(cfg.max_batch_commands * 8);
        let metrics = raft.metrics();
        tokio::spawn(batch_loop(raft.clone(), rx, clock.clone(), cfg.clone()));
        let read_index = ReadIndex::start(raft.clone(), cfg.write_timeout, clock.clone());
        Arc::new(Self {
            id,
            raft,
            metrics,
            tx,
            forward_peers,
            read_index,
            clock,
            cfg,
            forwarded: AtomicU64::new(0),
        })
    }

    pub fn leader_view(&self) -> LeaderView {
        let m = self.metrics.borrow();
        let leader = m.current_leader.map(|id| LeaderHint {
            id,
            addr: m
                .membership_config
                .membership()
                .get_node(&id)
                .map(|n| n.addr.clone())
                .unwrap_or_default(),
        });
        LeaderView {
            state: m.state,
            leader,
            millis_since_quorum_ack: m.millis_since_quorum_ack,
        }
    }

    /// Applies `cmd` through Raft and returns its result. On a follower the
    /// command is forwarded to the leader once (`forwarded` marks a command
    /// that already was, so it is never bounced around).
    pub async fn write(
        &self,
        cmd: ipb::Command,
        keys: Vec<Vec<u8>>,
        forwarded: bool,
    ) -> Result<ipb::CommandResult, ProposeError> {
        let view = self.leader_view();
        match view.leader {
            Some(hint)
                if view.state != ServerState::Leader && !forwarded && hint.id != self.id && !hint.addr.is_empty() =>
            {
                self.forward(&hint, cmd).await
            }
            _ => self.propose_local(cmd, keys).await,
        }
    }

    async fn forward(&self, leader: &LeaderHint, cmd: ipb::Command) -> Result<ipb::CommandResult, ProposeError> {
        let mut client = self.forward_peers.raft_client(&leader.addr).map_err(|e| {
            ProposeError::NotLeader(Some(LeaderHint {
                addr: format!("{} ({e})", leader.addr),
                ..leader.clone()
            }))
        })?;
        let mut req = tonic::Request::new(ipb::ForwardRequest { command: Some(cmd) });
        req.set_timeout(self.cfg.write_timeout);
        match client.forward(req).await {
            Ok(resp) => {
                self.forwarded.fetch_add(1, Ordering::Relaxed);
                status::note_forwarded(&leader.addr);
                Ok(resp.into_inner().result.unwrap_or_default())
            }
            Err(s) if s.code() == Code::Unavailable && !s.details().is_empty() => Err(ProposeError::Remote(s)),
            Err(s) => Err(ProposeError::Remote(status::unavailable(
                reason::LEADER_UNREACHABLE,
                format!(
                    "could not reach the leader (node {} at {}): {}",
                    leader.id,
                    leader.addr,
                    s.message()
                ),
                Some(leader),
            ))),
        }
    }

    /// Proposes on this node, which must be the leader.
    pub async fn propose_local(
        &self,
        cmd: ipb::Command,
        keys: Vec<Vec<u8>>,
    ) -> Result<ipb::CommandResult, ProposeError> {
        let view = self.leader_view();
        if view.state != ServerState::Leader {
            return Err(ProposeError::NotLeader(view.leader));
        }
        if let Some(ms) = view.millis_since_quorum_ack
            && ms > self.cfg.quorum_silence.as_millis() as u64
        {
            return Err(ProposeError::NoQuorum(format!(
                "no quorum: the leader has not heard from a majority for {ms} ms; the write was not applied"
            )));
        }
        self.clock.check().map_err(ProposeError::Clock)?;
        let (done, rx) = oneshot::channel();
        self.tx
            .send(Pending { cmd, keys, done })
            .await
            .map_err(|_| ProposeError::Shutdown)?;
        match tokio::time::timeout(self.cfg.write_timeout, rx).await {
            Ok(Ok(res)) => res,
            Ok(Err(_)) => Err(ProposeError::Shutdown),
            Err(_) => Err(ProposeError::Timeout(self.cfg.write_timeout)),
        }
    }

    /// The read index for a linearizable read on this node, which must be
    /// the leader, with its clock; concurrent callers share one quorum
    /// round.
    pub async fn read_index(&self) -> Result<ReadPoint, ProposeError> {
        self.read_index.get().await
    }

    /// This node's clock, as far as it is trusted.
    pub fn clock(&self) -> &Arc<Clock> {
        &self.clock
    }

    /// Writes this node has forwarded to the leader since it started.
    pub fn forwarded_writes(&self) -> u64 {
        self.forwarded.load(Ordering::Relaxed)
    }

    pub fn raft(&self) -> &Raft {
        &self.raft
    }
}

async fn batch_loop(raft: Raft, mut rx: mpsc::Receiver<Pending>, clock: Arc<Clock>, cfg: ProposerConfig) {
    let permits = Arc::new(Semaphore::new(cfg.max_in_flight.max(1)));
    let mut deferred: VecDeque<Pending> = VecDeque::new();
    loop {
        let first = match deferred.pop_front() {
            Some(p) => p,
            None => match rx.recv().await {
                Some(p) => p,
                None => return,
            },
        };
        // Wait for a slot before collecting: while every slot is busy,
        // requests accumulate and the next batch is larger.
        let permit = match permits.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(TryAcquireError::Closed) => return,
            Err(TryAcquireError::NoPermits) => {
                let Ok(p) = permits.clone().acquire_owned().await else {
                    return;
                };
                take_in_arrived_requests().await;
                p
            }
        };
        let mut batch = Batch::default();
        let mut still_deferred = VecDeque::new();
        batch.add(first, &mut still_deferred);
        while let Some(p) = deferred.pop_front() {
            if batch.full(&cfg) {
                still_deferred.push_back(p);
            } else {
                batch.add(p, &mut still_deferred);
            }
        }
        while !batch.full(&cfg) {
            match rx.try_recv() {
                Ok(p) => batch.add(p, &mut still_deferred),
                Err(_) => break,
            }
        }
        deferred = still_deferred;
        if batch.items.is_empty() {
            continue;
        }
        let (cmds, dones): (Vec<_>, Vec<_>) = batch.items.into_iter().map(|p| (p.cmd, p.done)).unzip();
        // The stamp every expiry in the entry is computed from: refused,
        // rather than taken from a clock that jumped since the check.
        let stamp_ms = match clock.now() {
            Ok(t) => t,
            Err(e) => {
                fail_all(dones, ProposeError::Clock(e));
                continue;
            }
        };
        let proposal = ipb::Proposal {
            stamp_ms,
            commands: cmds,
        };
        match raft.client_write_ff(Payload::new(proposal)).await {
            Err(_) => fail_all(dones, ProposeError::Shutdown),
            Ok(responder) => {
                let timeout = cfg.write_timeout;
                tokio::spawn(async move {
                    let _permit = permit;
                    match tokio::time::timeout(timeout, responder).await {
                        Err(_) => fail_all(dones, ProposeError::Timeout(timeout)),
                        Ok(Err(_)) => fail_all(dones, ProposeError::Shutdown),
                        Ok(Ok(Err(e))) => fail_all(dones, write_error(e)),
                        Ok(Ok(Ok(resp))) => {
                            let results = resp.data.results;
                            if results.len() != dones.len() {
                                fail_all(dones, ProposeError::Remote(status::internal("result count mismatch")));
                                return;
                            }
                            for (done, r) in dones.into_iter().zip(results) {
                                let _ = done.send(Ok(r));
                            }
                        }
                    }
                });
            }
        }
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
struct Batch {
    items: Vec<Pending>,
    keys: HashSet<Vec<u8>>,
    bytes: usize,
}

impl Batch {
    fn full(&self, cfg: &ProposerConfig) -> bool {
        self.items.len() >= cfg.max_batch_commands || self.bytes >= cfg.max_batch_bytes
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

fn write_error(e: ClientWriteError<NodeId, openraft::BasicNode>) -> ProposeError {
    match e {
        ClientWriteError::ForwardToLeader(f) => ProposeError::NotLeader(f.leader_id.map(|id| LeaderHint {
            id,
            addr: f.leader_node.map(|n| n.addr).unwrap_or_default(),
        })),
        ClientWriteError::ChangeMembershipError(e) => ProposeError::Remote(status::internal(e.to_string())),
    }
}

/// Maps errors of `Raft` calls that confirm leadership (read-index,
/// membership changes) to the same vocabulary.
pub fn raft_error<E: std::fmt::Display>(e: RaftError<NodeId, E>) -> ProposeError {
    match e {
        RaftError::Fatal(_) => ProposeError::Shutdown,
        RaftError::APIError(e) => ProposeError::Remote(status::unavailable(reason::NOT_LEADER, e.to_string(), None)),
    }
}

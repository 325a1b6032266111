//! The way in for writes and linearizable reads, on any node: validated
//! commands are batched into Raft entries on the leader (`batch`), or
//! forwarded to the leader from a follower; a read asks the leader for a
//! read index, here or over the network (`read_index`). One check refuses
//! both at once on a leader cut off from its quorum (fail fast, never
//! queue).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use handlestore_proto::internal::v1 as ipb;
use openraft::{RaftMetrics, ServerState};
use tokio::sync::{mpsc, oneshot, watch};
use tonic::Code;

use crate::clock::Clock;
use crate::observe::metrics;
use crate::raft::error::LeaderHint;
use crate::raft::error::ProposeError;
use crate::raft::log::room::Room;
use crate::raft::net::network::Peers;
use crate::raft::reads::lease::ReadLease;
use crate::raft::reads::read_index::{self, ReadIndex, ReadPoint};
use crate::raft::reads::tenure::Tenure;
use crate::raft::writes::batch::{self, BatchLimits, Pending, WriteGate};
use crate::raft::writes::forwarded;
use crate::raft::{NodeId, Raft};
use crate::storage::disk::Disk;

#[derive(Debug, Clone)]
pub struct ProposerConfig {
    pub write_timeout: Duration,
    /// Longest a read-index round (here or on the leader) may take.
    pub read_timeout: Duration,
    /// The leader refuses writes and reads at once when it has not heard
    /// from a quorum for this long (fail fast, never queue).
    pub quorum_silence: Duration,
    pub max_batch_commands: usize,
    pub max_batch_bytes: usize,
    pub max_in_flight: usize,
    /// How long a quorum round lets the leader serve reads on its lease
    /// (None: every read has its round).
    pub read_lease: Option<Duration>,
}

pub struct Proposer {
    id: NodeId,
    metrics: watch::Receiver<RaftMetrics<NodeId, crate::config::Member>>,
    tx: mpsc::Sender<Pending>,
    /// Channels to the leader for client traffic (forwarded writes, read
    /// indexes), apart from replication's.
    forward_peers: Arc<Peers>,
    read_index: ReadIndex,
    lease: Arc<ReadLease>,
    clock: Arc<Clock>,
    /// This node's disk, and which voters' have room.
    room: Arc<Room>,
    tenure: Arc<Tenure>,
    cfg: ProposerConfig,
    /// Writes this node forwarded to the leader and got an answer for.
    forwarded: AtomicU64,
    /// The slots of entries in flight (held by a leader transfer).
    gate: WriteGate,
}

/// This node's view of leadership, read from the metrics without holding the
/// borrow across an await.
#[derive(Debug, Clone)]
pub struct LeaderView {
    state: ServerState,
    pub leader: Option<LeaderHint>,
    /// On a leader: since it last heard from a majority (`Tenure`).
    pub millis_since_quorum_ack: Option<u64>,
}

impl LeaderView {
    pub fn is_leader(&self) -> bool {
        self.state == ServerState::Leader
    }

    /// On a leader that has not heard from a majority for longer than
    /// `silence`: refuse at once (`what` says what was not done).
    fn check_quorum(&self, silence: Duration, what: &str) -> Result<(), ProposeError> {
        match self.millis_since_quorum_ack {
            Some(ms) if self.is_leader() && ms > silence.as_millis() as u64 => Err(ProposeError::NoQuorum(format!(
                "no quorum: the leader has not heard from a majority for {ms} ms; {what}"
            ))),
            _ => Ok(()),
        }
    }
}

impl Proposer {
    pub fn start(
        id: NodeId,
        raft: Raft,
        forward_peers: Arc<Peers>,
        clock: Arc<Clock>,
        room: Arc<Room>,
        tenure: Arc<Tenure>,
        cfg: ProposerConfig,
    ) -> Arc<Self> {
        let (tx, rx) = mpsc::channel(cfg.max_batch_commands * 8);
        let metrics = raft.metrics();
        let limits = BatchLimits {
            max_commands: cfg.max_batch_commands,
            max_bytes: cfg.max_batch_bytes,
            timeout: cfg.write_timeout,
        };
        let gate = WriteGate::new(cfg.max_in_flight);
        tokio::spawn(batch::run(raft.clone(), rx, clock.clone(), limits, gate.clone()));
        let lease = Arc::new(ReadLease::new(cfg.read_lease));
        let read_index = ReadIndex::start(raft, cfg.read_timeout, clock.clone(), lease.clone());
        Arc::new(Self {
            id,
            metrics,
            tx,
            forward_peers,
            read_index,
            lease,
            clock,
            room,
            tenure,
            cfg,
            forwarded: AtomicU64::new(0),
            gate,
        })
    }

    pub fn leader_view(&self) -> LeaderView {
        let m = self.metrics.borrow();
        let leader = m
            .current_leader
            .map(|id| LeaderHint::new(id, m.membership_config.membership().get_node(&id)));
        LeaderView {
            state: m.state,
            leader,
            millis_since_quorum_ack: self.tenure.silence(&m).map(|d| d.as_millis() as u64),
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
        match self.remote_leader() {
            Some((_, hint)) if !forwarded => self.forward(&hint, cmd).await,
            _ => self.propose_local(cmd, keys).await,
        }
    }

    /// The leader, when it is another node whose address is known.
    fn remote_leader(&self) -> Option<(LeaderView, LeaderHint)> {
        let view = self.leader_view();
        match view.leader.clone() {
            Some(hint) if !view.is_leader() && hint.id != self.id && !hint.addr.is_empty() => Some((view, hint)),
            _ => None,
        }
    }

    async fn forward(&self, leader: &LeaderHint, cmd: ipb::Command) -> Result<ipb::CommandResult, ProposeError> {
        let mut client = self.forward_peers.raft_client(leader.peer()).map_err(|e| {
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
                forwarded::note(&leader.addr);
                Ok(resp.into_inner().result.unwrap_or_default())
            }
            Err(s) if s.code() == Code::Unavailable && !s.details().is_empty() => Err(ProposeError::Remote(s)),
            Err(s) => Err(ProposeError::LeaderUnreachable(
                leader.clone(),
                format!(
                    "could not reach the leader (node {} at {}): {}",
                    leader.id,
                    leader.peer(),
                    s.message()
                ),
            )),
        }
    }

    /// Proposes on this node, which must be the leader; counted in the
    /// proposal metrics.
    pub async fn propose_local(
        &self,
        cmd: ipb::Command,
        keys: Vec<Vec<u8>>,
    ) -> Result<ipb::CommandResult, ProposeError> {
        let _in_flight = InFlight::counted();
        let res = self.propose_here(cmd, keys).await;
        let r = metrics::recorders();
        match &res {
            Ok(_) => {
                r.proposals_committed.inc();
            }
            Err(e) => {
                let reason = e.reason().map_or("remote", |r| r.name());
                r.proposals_failed
                    .get_or_create(&metrics::FailedBecause { reason: reason.into() })
                    .inc();
            }
        }
        res
    }

    async fn propose_here(&self, cmd: ipb::Command, keys: Vec<Vec<u8>>) -> Result<ipb::CommandResult, ProposeError> {
        let view = self.leader_view();
        if !view.is_leader() {
            return Err(ProposeError::NotLeader(view.leader));
        }
        view.check_quorum(self.cfg.quorum_silence, "the write was not applied")?;
        self.clock.check().map_err(ProposeError::Clock)?;
        self.room.writes().map_err(ProposeError::DiskFull)?;
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

    /// Where a linearizable read on this node stands: the read index and
    /// the leader's clock, from a quorum round that began after this call,
    /// run here if this node leads, else on the leader.
    pub async fn read_point(&self) -> Result<ReadPoint, ProposeError> {
        if let Some((_, leader)) = self.remote_leader() {
            return read_index::from_leader(&self.forward_peers, &leader, self.cfg.read_timeout).await;
        }
        self.leader_read_point().await
    }

    /// A read point on this node, which must be the leader (a follower's
    /// `ReadIndex` call lands here); concurrent callers share one quorum
    /// round.
    pub async fn leader_read_point(&self) -> Result<ReadPoint, ProposeError> {
        let view = self.leader_view();
        if !view.is_leader() {
            return Err(ProposeError::NotLeader(view.leader.filter(|l| !l.addr.is_empty())));
        }
        if let Err(e) = view.check_quorum(self.cfg.quorum_silence, "cannot serve a linearizable read") {
            // The lease broken on purpose trusts itself over this check too.
            if !crate::failpoints::error_here(crate::failpoints::READ_LEASE_UNBOUNDED) {
                return Err(e);
            }
        }
        let timeout = self.cfg.read_timeout;
        let started = std::time::Instant::now();
        let point = tokio::time::timeout(timeout, self.read_index.get())
            .await
            .map_err(|_| read_index::timed_out(timeout))
            .and_then(|answer| answer);
        let r = metrics::recorders();
        match &point {
            Ok(_) => r.read_index_seconds.observe(started.elapsed().as_secs_f64()),
            Err(_) => {
                r.read_index_failures.inc();
            }
        }
        point
    }

    /// This node's clock, as far as it is trusted.
    pub fn clock(&self) -> &Arc<Clock> {
        &self.clock
    }

    /// This node's disk: its free space and syncs.
    pub fn disk(&self) -> &Arc<Disk> {
        self.room.disk()
    }

    /// This node's read lease, to suspend it (a leader transfer).
    pub fn read_lease(&self) -> Arc<ReadLease> {
        self.lease.clone()
    }

    /// The slots of this node's entries in flight, to hold writes back.
    pub fn write_gate(&self) -> WriteGate {
        self.gate.clone()
    }

    /// Writes this node has forwarded to the leader since it started.
    pub fn forwarded_writes(&self) -> u64 {
        self.forwarded.load(Ordering::Relaxed)
    }
}

/// A proposal in flight, counted in `proposals_pending` until it is
/// answered or its caller gives up (the future dropped).
struct InFlight;

impl InFlight {
    fn counted() -> Self {
        metrics::recorders().proposals_pending.inc();
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        metrics::recorders().proposals_pending.dec();
    }
}

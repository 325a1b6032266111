//! Starts this node's Raft: openraft's configuration, the log store and
//! state machine plugged in, the clock probe, the proposer and the sweep,
//! and the static bootstrap of a new cluster. The rest of the node gets a
//! [`RaftNode`] and never sees openraft's types.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use openraft::SnapshotPolicy;

use crate::clock::Clock;
use crate::config::{ClusterState, Member, NodeConfig};
use crate::raft::life::admin::RaftAdmin;
use crate::raft::life::founding::{Founding, Verdict};
use crate::raft::life::naming;
use crate::raft::log::abstain::Standing;
use crate::raft::log::abstain::{self, Abstention};
use crate::raft::log::durability::Durability;
use crate::raft::log::log_store::LogStore;
use crate::raft::log::room::Room;
use crate::raft::log::state_machine::StateMachine;
use crate::raft::net::identity::Identity;
use crate::raft::net::names::Names;
use crate::raft::net::network::{Network, Peers};
use crate::raft::net::protocol::PeerProtocols;
use crate::raft::net::reach::Reach;
use crate::raft::reads::lease::ReadLease;
use crate::raft::reads::tenure::Tenure;
use crate::raft::writes::proposer::{Proposer, ProposerConfig};
use crate::raft::{Raft, life::clock_probe, life::disk_guard, writes::sweeper};
use crate::state::StateStore;
use crate::state::snapshot::SnapshotDir;
use crate::storage::disk::{Disk, Reserve};
use crate::tls::gate::PeerGate;

/// What the rest of the node uses of its Raft.
pub struct RaftNode {
    pub raft: Raft,
    pub proposer: Arc<Proposer>,
    pub admin: RaftAdmin,
    pub durability: Arc<Durability>,
    /// This node's disk: free space and syncs.
    pub disk: Arc<Disk>,
    /// This node's initial membership, for founding a new cluster.
    pub founding: Arc<Founding>,
    /// What each peer speaks.
    pub protocols: Arc<PeerProtocols>,
    /// The cluster's name, which peers' requests must carry.
    pub identity: Identity,
    /// Whether this node sits elections out while its log is repaired.
    pub abstention: Arc<Abstention>,
    /// Set once this node begins to stop: it takes no leadership over.
    pub stopping: Arc<std::sync::atomic::AtomicBool>,
}

impl RaftNode {
    /// Resolves, saying why, if the Raft core stops on its own (a storage
    /// error or a panic): openraft then refuses every call until the process
    /// restarts, so the node must exit rather than linger half alive. Never
    /// resolves while Raft runs, nor after a shutdown the node asked for.
    pub async fn stopped_on_error(&self) -> String {
        let mut metrics = self.raft.metrics();
        // An error: the core sent its last word, or ended without one.
        let _ = metrics.wait_for(|m| m.running_state.is_err()).await;
        let why = match &metrics.borrow().running_state {
            Err(openraft::error::Fatal::Stopped) => None,
            Err(e) => Some(e.to_string()),
            Ok(()) => Some("it ended without saying why (a panic?)".to_string()),
        };
        match why {
            Some(why) => why,
            None => std::future::pending().await,
        }
    }
}

/// Starts Raft over the opened storage, and everything that drives it.
pub async fn start(
    cfg: &NodeConfig,
    state: Arc<StateStore>,
    snapshots: Arc<SnapshotDir>,
    log_store: LogStore,
    gate: Arc<PeerGate>,
) -> anyhow::Result<RaftNode> {
    let durability = log_store.durability();
    let abstention = Abstention::load(state.db())?;
    let sm = StateMachine::new(state.clone(), snapshots, durability.clone());
    let peer_tls = match &cfg.peer_tls {
        Some(files) => {
            let tls = crate::tls::peer::load_client(files.clone())?;
            tls.watch();
            Some(tls)
        }
        None => None,
    };
    // One view of where peers' names resolve, for every connection.
    let names = Names::default();
    let raft_peers = Arc::new(Peers::new(peer_tls.clone(), names.clone()));
    let ident = Identity::new(state.clone());
    let reserve = Reserve::new(cfg.tuning.min_free_disk_mb, cfg.tuning.write_buffer_mb);
    let disk = Disk::new(cfg.data.clone(), reserve, durability.clone());
    disk.watch();
    let room = Room::new(cfg.id, disk.clone());
    let reach = Arc::new(Reach::default());
    let network = Network::new(
        raft_peers.clone(),
        durability.clone(),
        ident.clone(),
        room.clone(),
        reach,
    );
    let raft = Raft::new(cfg.id, Arc::new(config(cfg)?), network, log_store, sm)
        .await
        .context("starting raft")?;
    let clock = Arc::new(Clock::new(cfg.id, cfg.tuning.max_clock_offset, clock_probe::SAMPLE_TTL));
    let founding = Arc::new(Founding::new(cfg.id, initial_members(cfg), clock_probe::SAMPLE_TTL));
    let protocols = Arc::new(PeerProtocols::default());
    let standing = Standing {
        room: room.clone(),
        log: abstention.clone(),
    };
    clock_probe::spawn(
        raft.clone(),
        clock.clone(),
        raft_peers,
        founding.clone(),
        protocols.clone(),
        standing.clone(),
    );
    if may_found(&raft, cfg).await? {
        tokio::spawn(found_when_agreed(
            raft.clone(),
            clock.clone(),
            founding.clone(),
            cfg.tuning.election_max(),
        ));
    }
    // Client traffic to the leader (forwarded writes, read indexes) goes on
    // channels of its own, apart from replication's.
    let forward_peers = Arc::new(Peers::new(peer_tls, names));
    let (stand, stand_clock) = (standing.clone(), clock.clone());
    abstain::spawn(raft.clone(), state.db().clone(), abstention.clone(), move || {
        disk_guard::may_campaign(&stand, &stand_clock)
    });
    let tenure = Arc::new(Tenure::default());
    let proposer = Proposer::start(
        cfg.id,
        raft.clone(),
        forward_peers.clone(),
        clock.clone(),
        room,
        tenure.clone(),
        proposer_config(cfg),
    );
    naming::spawn_naming(raft.clone(), proposer.clone(), state.clone(), protocols.clone());
    sweeper::spawn(
        state,
        proposer.clone(),
        cfg.tuning.sweep_interval,
        cfg.tuning.dedup_window,
    );
    spawn_leader_log(&raft, tenure.clone());
    spawn_peer_gate(&raft, gate);
    let admin = RaftAdmin::new(
        raft.clone(),
        protocols.clone(),
        forward_peers,
        proposer.write_gate(),
        proposer.read_lease(),
        tenure,
        cfg.tuning.election_max(),
    );
    disk_guard::spawn(raft.clone(), admin.clone(), standing, clock);
    Ok(RaftNode {
        admin,
        raft,
        proposer,
        disk,
        durability,
        founding,
        protocols,
        identity: ident,
        abstention,
        stopping: Arc::default(),
    })
}

fn config(cfg: &NodeConfig) -> anyhow::Result<openraft::Config> {
    let t = &cfg.tuning;
    openraft::Config {
        cluster_name: "handlestore".into(),
        heartbeat_interval: t.heartbeat.as_millis() as u64,
        election_timeout_min: t.election_timeout.as_millis() as u64,
        election_timeout_max: t.election_max().as_millis() as u64,
        snapshot_policy: SnapshotPolicy::LogsSinceLast(t.snapshot_entries),
        max_in_snapshot_log_to_keep: t.keep_entries,
        // Our snapshot transport streams and is bounded by replication
        // cancellation, not by this per-chunk timeout.
        install_snapshot_timeout: 60_000,
        max_payload_entries: 256,
        // Elections start once the clock is trusted (raft::life::clock_probe).
        enable_elect: false,
        ..Default::default()
    }
    .validate()
    .context("raft configuration")
}

fn proposer_config(cfg: &NodeConfig) -> ProposerConfig {
    ProposerConfig {
        write_timeout: cfg.tuning.write_timeout,
        read_timeout: cfg.tuning.read_timeout,
        quorum_silence: cfg.tuning.election_max(),
        max_batch_commands: cfg.tuning.max_batch_commands,
        max_batch_bytes: 4 << 20,
        // One entry in flight: while it commits, the next batch grows.
        // Much of a write's cost is per entry (a replication round per
        // follower, a sync on every node, openraft's bookkeeping, one
        // read and write of each client's exactly-once record), so
        // fewer, larger entries cost less CPU per write; on two shared
        // cores that is also more writes per second. Measured against
        // two in flight (CPU per write, alternated runs): lower at 16
        // and 64 clients, even at 256 (see docs/dev/performance-notes.md,
        // "Less CPU per write"). Before answers were kept per client, one
        // and two were even.
        max_in_flight: 1,
        read_lease: cfg
            .tuning
            .read_lease
            .then(|| ReadLease::length_for(cfg.tuning.election_max())),
    }
}

/// The initial membership: `--initial-cluster`, or this node alone.
fn initial_members(cfg: &NodeConfig) -> BTreeMap<u64, Member> {
    if cfg.initial_cluster.is_empty() {
        [(cfg.id, cfg.member())].into()
    } else {
        cfg.initial_cluster.clone()
    }
}

/// Static bootstrap (like etcd): a node with an empty log may found a new
/// cluster with the initial membership ([`raft::life::founding`](crate::raft::life::founding) says when); a
/// restart never does, nor a node started to join (`existing`).
async fn may_found(raft: &Raft, cfg: &NodeConfig) -> anyhow::Result<bool> {
    if raft.is_initialized().await? {
        return Ok(false);
    }
    if cfg.cluster_state == ClusterState::Existing {
        tracing::info!("empty log; waiting to be added to the existing cluster");
        return Ok(false);
    }
    Ok(true)
}

/// How often founding is reconsidered, and how often why it waits is
/// logged.
const FOUND_EVERY: Duration = Duration::from_millis(100);
const SAY_WHY_EVERY: Duration = Duration::from_secs(10);

/// Founds the cluster once a majority of the initial members agree
/// ([`raft::life::founding`](crate::raft::life::founding)), unless this node joins one first. openraft
/// campaigns at once after initializing, so this node's clock must be
/// trusted; its peers answer probes only once they serve, hence a task of
/// its own. The lowest id in reach founds at once, the others after
/// `grace` of agreement (by then its vote has usually reached them, and
/// they are in the cluster; if it never founds, they do).
async fn found_when_agreed(raft: Raft, clock: Arc<Clock>, founding: Arc<Founding>, grace: Duration) {
    let mut said = Instant::now();
    let mut agreed_since: Option<Instant> = None;
    loop {
        if raft.is_initialized().await.unwrap_or(true) {
            return;
        }
        let verdict = founding.decide(clock.check().is_ok());
        if !matches!(verdict, Verdict::Found { .. }) {
            agreed_since = None;
        }
        let why = match verdict {
            Verdict::Found { first } => {
                let since = *agreed_since.get_or_insert_with(Instant::now);
                if first == founding.id() || since.elapsed() >= grace {
                    break;
                }
                format!("a majority agrees; node {first} founds first")
            }
            Verdict::Exists { member } => {
                format!("node {member} is in the cluster already; waiting for its leader to add this node's log")
            }
            Verdict::Wait(why) => why,
        };
        if said.elapsed() >= SAY_WHY_EVERY {
            tracing::info!("not founding the cluster yet: {why}");
            said = Instant::now();
        }
        tokio::time::sleep(FOUND_EVERY).await;
    }
    let members = founding.initial().clone();
    tracing::info!(members = ?members.keys().collect::<Vec<_>>(), "founding a new cluster: a majority of its members agree");
    match raft.initialize(members).await {
        Ok(()) => {}
        // Another member's leader reached this node first.
        Err(openraft::error::RaftError::APIError(openraft::error::InitializeError::NotAllowed(_))) => {}
        Err(e) => tracing::error!("founding the cluster failed: {e}"),
    }
}

/// Keeps the peer port's gate to the members of the membership this node
/// holds (voters and learners, from the moment a change is appended),
/// from openraft's server metrics, which change with the membership.
fn spawn_peer_gate(raft: &Raft, gate: Arc<PeerGate>) {
    let mut rx = raft.server_metrics();
    tokio::spawn(async move {
        let mut last = None;
        loop {
            let ids: Vec<u64> = {
                let m = rx.borrow_and_update();
                m.membership_config.membership().nodes().map(|(id, _)| *id).collect()
            };
            // An uninitialized node holds no membership yet.
            if !ids.is_empty() && last.as_ref() != Some(&ids) {
                gate.set_members(ids.iter().copied());
                last = Some(ids);
            }
            if rx.changed().await.is_err() {
                return;
            }
        }
    });
}

/// One info line per leader change and per membership change; and the
/// start of each term this node leads (`Tenure`).
///
/// Watches openraft's server metrics, which change only with the vote, the
/// role, the leader or the membership; its full metrics are sent again
/// after every turn of its core (several times per write on every node),
/// and a task watching those would be woken, on the event loop that
/// serves the writes, as often.
fn spawn_leader_log(raft: &Raft, tenure: Arc<Tenure>) {
    let mut rx = raft.server_metrics();
    tokio::spawn(async move {
        let mut last_leader = None;
        let mut last_membership = None;
        while rx.changed().await.is_ok() {
            let (leader, term, membership_log, voters, learners) = {
                let m = rx.borrow_and_update();
                tenure.note(m.state == openraft::ServerState::Leader, m.vote);
                let mem = m.membership_config.membership();
                (
                    m.current_leader,
                    m.vote.leader_id().term,
                    m.membership_config.log_id().map(|l| l.index),
                    mem.voter_ids().collect::<Vec<_>>(),
                    mem.learner_ids().collect::<Vec<_>>(),
                )
            };
            if leader != last_leader {
                match leader {
                    Some(l) => {
                        tracing::info!(leader = l, term, "leader changed");
                        crate::observe::metrics::recorders().leader_changes.inc();
                    }
                    None => tracing::info!(term, "no leader"),
                }
                last_leader = leader;
            }
            if membership_log != last_membership {
                tracing::info!(?voters, ?learners, at = ?membership_log, "membership changed");
                last_membership = membership_log;
            }
        }
    });
}

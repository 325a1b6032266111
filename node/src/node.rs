//! Assembles and runs one node: RocksDB, openraft, the gRPC server, the
//! sweep, and a clean shutdown.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use anyhow::Context;
use handlestore_proto::conn::Conn;
use handlestore_proto::internal::v1 as ipb;
use handlestore_proto::v1 as pb;
use openraft::{BasicNode, SnapshotPolicy};
use tokio::net::TcpListener;
use tokio_stream::wrappers::ReceiverStream;

use crate::api::{
    Api,
    admin::{AdminService, MemoryProbe},
    handles::HandlesService,
    read::ReadGate,
    state::StateService,
    writes::WritesService,
};
use crate::clock::Clock;
use crate::config::{ClusterState, NodeConfig};
use crate::raft::durability::Durability;
use crate::raft::log_store::LogStore;
use crate::raft::network::{MAX_PEER_MESSAGE, Network, Peers};
use crate::raft::peer_wire::{self, Protocol};
use crate::raft::proposer::{Proposer, ProposerConfig};
use crate::raft::service::{self, RaftService};
use crate::raft::state_machine::StateMachine;
use crate::raft::{Raft, clock_probe, sweeper};
use crate::state::snapshot::{self, SnapshotDir};
use crate::state::{StateLimits, StateStore};

/// Client messages may carry a value up to the configured limit plus
/// envelope; larger ones are refused by the transport before decoding.
fn max_client_message(cfg: &NodeConfig) -> usize {
    let l = &cfg.limits;
    l.max_value_bytes
        .saturating_mul(2)
        .max(l.max_batch_bytes)
        .saturating_add(l.max_batch_items.saturating_mul(l.max_key_bytes + 64))
        .saturating_add(64 << 10)
}

/// Reads where this node's memory is, for the Admin status.
fn memory_probe(db: Arc<rocksdb::DB>, log: LogStore) -> MemoryProbe {
    Arc::new(move || {
        let rocks = crate::db::memory_use(&db);
        pb::Memory {
            rss: process_rss_bytes().unwrap_or(0),
            memtables: rocks.memtables,
            block_cache: rocks.block_cache,
            block_cache_pinned: rocks.block_cache_pinned,
            table_readers: rocks.table_readers,
            log_cache: log.cache_bytes(),
        }
    })
}

/// This process's resident set size, from /proc (Linux; None elsewhere).
fn process_rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf only reads a constant of the system.
    let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page_size).ok()?)
}

/// Hands the C heap's free pages back to the OS every `interval` (0: never).
///
/// RocksDB allocates through glibc's malloc, whose arenas keep what is
/// freed (flushed memtables, evicted blocks) for reuse: a loaded node's
/// glibc held 173 MiB from the OS with 114 MiB in use. `malloc_trim` gives
/// the free pages back; those reused later are faulted in again, which is
/// the cost of a short interval (docs/operations.md, "Memory"). One thread
/// per process, however many nodes it runs.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn start_malloc_trim(interval: std::time::Duration) {
    static STARTED: std::sync::Once = std::sync::Once::new();
    if interval.is_zero() {
        return;
    }
    STARTED.call_once(|| {
        let spawned = std::thread::Builder::new().name("malloc-trim".into()).spawn(move || {
            loop {
                std::thread::sleep(interval);
                let started = std::time::Instant::now();
                // SAFETY: malloc_trim only releases free memory of the
                // allocator's own arenas; glibc makes it safe to call from
                // any thread at any time.
                unsafe {
                    libc::malloc_trim(0);
                }
                crate::raft::warn_if_slow(
                    "returning free memory (malloc_trim)",
                    started,
                    format_args!("it runs every {interval:?} (--malloc-trim-interval)"),
                );
            }
        });
        if let Err(e) = spawned {
            tracing::warn!("not returning free memory periodically: {e}");
        }
    });
}

/// Other C libraries have no `malloc_trim`: nothing to do.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn start_malloc_trim(_interval: std::time::Duration) {}

/// Runs a node until `shutdown` resolves, then stops it cleanly.
pub async fn run(cfg: NodeConfig, shutdown: impl Future<Output = ()> + Send + 'static) -> anyhow::Result<()> {
    if !cfg.initial_cluster.is_empty() && !cfg.initial_cluster.contains_key(&cfg.id) {
        anyhow::bail!("node id {} is not in --initial-cluster", cfg.id);
    }
    std::fs::create_dir_all(&cfg.data_dir).with_context(|| format!("creating data dir {}", cfg.data_dir.display()))?;
    let db = crate::db::open(&cfg.data_dir.join("db"), cfg.db_memory).with_context(|| {
        format!(
            "opening the database in {} (is another node using this data dir?)",
            cfg.data_dir.display()
        )
    })?;
    let state = StateStore::open(
        db.clone(),
        StateLimits {
            dedup_max_entries: cfg.dedup_max_entries,
        },
    )?;
    let snapshots = Arc::new(SnapshotDir::new(cfg.data_dir.join("snapshots"))?);
    snapshots.remove_leftovers()?;
    snapshot::resume_install(&state, &snapshots)?;

    let log_store = LogStore::new(db.clone(), cfg.id).context("opening the raft log")?;
    let log_syncs = log_store.sync_counter();
    let durability = log_store.durability();
    let memory = memory_probe(db.clone(), log_store.clone());
    start_malloc_trim(cfg.malloc_trim_interval);
    let sm = StateMachine::new(state.clone(), snapshots.clone(), durability.clone());
    let raft_peers = Arc::new(Peers::default());
    let forward_peers = Arc::new(Peers::default());
    let raft_config = openraft::Config {
        cluster_name: "handlestore".into(),
        heartbeat_interval: cfg.raft.heartbeat.as_millis() as u64,
        election_timeout_min: cfg.raft.election_min.as_millis() as u64,
        election_timeout_max: cfg.raft.election_max.as_millis() as u64,
        snapshot_policy: SnapshotPolicy::LogsSinceLast(cfg.raft.snapshot_logs),
        max_in_snapshot_log_to_keep: cfg.raft.keep_logs,
        // Our snapshot transport streams and is bounded by replication
        // cancellation, not by this per-chunk timeout.
        install_snapshot_timeout: 60_000,
        max_payload_entries: 256,
        // Elections start once the clock is trusted (raft::clock_probe).
        enable_elect: false,
        ..Default::default()
    }
    .validate()
    .context("raft configuration")?;
    let raft = Raft::new(
        cfg.id,
        Arc::new(raft_config),
        Network::new(raft_peers.clone(), durability.clone()),
        log_store,
        sm,
    )
    .await
    .context("starting raft")?;

    let listener = TcpListener::bind(cfg.listen)
        .await
        .with_context(|| format!("listening on {}", cfg.listen))?;

    let clock = Arc::new(Clock::new(cfg.id, cfg.max_clock_offset, clock_probe::SAMPLE_TTL));
    clock_probe::spawn(
        raft.clone(),
        clock.clone(),
        raft_peers.clone(),
        cfg.initial_cluster.clone(),
    );
    if let Some(members) = initial_members(&raft, &cfg).await? {
        tokio::spawn(initialize_when_trusted(raft.clone(), clock.clone(), members));
    }

    let quorum_silence = cfg.raft.election_max;
    let proposer = Proposer::start(
        cfg.id,
        raft.clone(),
        forward_peers,
        clock,
        ProposerConfig {
            write_timeout: cfg.write_timeout,
            quorum_silence,
            max_batch_commands: cfg.max_batch_commands,
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
        },
    );
    sweeper::spawn(state.clone(), proposer.clone(), cfg.sweep_interval, cfg.dedup_window);
    spawn_leader_log(&raft);

    let api = Arc::new(Api {
        limits: cfg.limits.clone(),
        state: state.clone(),
        proposer: proposer.clone(),
        reads: ReadGate {
            proposer: proposer.clone(),
            state: state.clone(),
            raft_peers,
            timeout: cfg.read_timeout,
            quorum_silence,
        },
    });
    let max_msg = max_client_message(&cfg);
    // A call of the Writes service carries one write of any allowed size,
    // or several that the client keeps under its own bound together.
    let max_submit = max_msg
        .max(handlestore_proto::limits::MAX_SUBMIT_BYTES)
        .saturating_add(64 << 10);
    let mut routes = tonic::service::RoutesBuilder::default();
    routes
        .add_service(
            ipb::raft_server::RaftServer::new(RaftService::new(
                raft.clone(),
                proposer.clone(),
                snapshots.clone(),
                durability.clone(),
            ))
            .max_decoding_message_size(MAX_PEER_MESSAGE)
            .max_encoding_message_size(MAX_PEER_MESSAGE),
        )
        .add_service(
            pb::handles_server::HandlesServer::new(HandlesService::new(api.clone()))
                .max_decoding_message_size(max_msg)
                .max_encoding_message_size(max_msg),
        )
        .add_service(
            pb::state_server::StateServer::new(StateService::new(api.clone()))
                .max_decoding_message_size(max_msg)
                .max_encoding_message_size(max_msg),
        )
        .add_service(
            pb::writes_server::WritesServer::new(WritesService::new(api.clone()))
                .max_decoding_message_size(max_submit)
                .max_encoding_message_size(max_submit),
        )
        .add_service(pb::admin_server::AdminServer::new(AdminService::new(
            api.clone(),
            cfg.id,
            cfg.advertise.clone(),
            log_syncs,
            memory,
        )));
    let mut routes = routes.routes();
    crate::health::add_routes(routes.axum_router_mut(), api, cfg.id);
    let router = std::mem::take(routes.axum_router_mut());
    *routes.axum_router_mut() = router.layer(axum::middleware::from_fn(crate::status::leader_header));
    // HTTP/1.1 too, for the plain-HTTP health endpoints.
    let router = tonic::transport::Server::builder()
        .accept_http1(true)
        .add_routes(routes);

    tracing::info!(id = cfg.id, listen = %cfg.listen, data = %cfg.data_dir.display(), "node started");
    // One port: leaders' Raft wire connections are served here, the rest
    // go to the gRPC server.
    let (grpc_tx, grpc_rx) = tokio::sync::mpsc::channel(64);
    let acceptor = tokio::spawn(accept(listener, grpc_tx, raft.clone(), durability)).abort_handle();
    // The port closes when shutdown begins, as tonic's own listener would.
    let stop_accepting = acceptor.clone();
    let shutdown = async move {
        shutdown.await;
        stop_accepting.abort();
    };
    let served = router
        .serve_with_incoming_shutdown(ReceiverStream::new(grpc_rx), shutdown)
        .await;
    acceptor.abort();
    tracing::info!(id = cfg.id, "stopping");
    if let Err(e) = raft.shutdown().await {
        tracing::warn!("raft shutdown: {e}");
    }
    // Everything acknowledged was synced already; flush memtables so the
    // next start does not need to replay the WAL.
    if let Err(e) = db.flush_wal(true) {
        tracing::warn!("final WAL sync: {e}");
    }
    served.context("gRPC server")?;
    tracing::info!(id = cfg.id, "stopped");
    Ok(())
}

/// Accepts the connections of the node's one port. A leader's Raft wire
/// connection (`raft::peer_wire`) is served on a task of its own; anything
/// else goes to the gRPC server as a [`Conn`]: `Server::tcp_nodelay` only
/// applies to listeners tonic binds itself, and `Conn` sets it on ours
/// (without it a reply's trailers wait for the client's delayed ACK, ~40 ms
/// per read) and lets HTTP/2 gather the answers that are ready into one
/// socket write.
async fn accept(
    listener: TcpListener,
    grpc: tokio::sync::mpsc::Sender<std::io::Result<Conn>>,
    raft: Raft,
    durability: Arc<Durability>,
) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // As tonic does with its own listener: note it and go on (out
                // of file descriptors, say), without spinning on it.
                tracing::debug!("error accepting a connection: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let (grpc, raft, durability) = (grpc.clone(), raft.clone(), durability.clone());
        tokio::spawn(async move {
            let protocol = tokio::time::timeout(peer_wire::SNIFF_TIMEOUT, peer_wire::sniff(&stream))
                .await
                .unwrap_or(Protocol::Other);
            match protocol {
                Protocol::RaftWire => {
                    // An answer leaves once every log write made before it
                    // is synced (see raft::durability), written by the log's
                    // sync thread as soon as the sync lands.
                    let hold = |answer| durability.when_synced(answer);
                    peer_wire::serve(stream, MAX_PEER_MESSAGE, hold, |req| {
                        let raft = raft.clone();
                        async move { service::append_entries_unsynced(&raft, req).await }
                    })
                    .await;
                }
                Protocol::Other => {
                    // Fails only once the gRPC server has stopped.
                    let _ = grpc.send(Ok(Conn::new(stream))).await;
                }
            }
        });
    }
}

/// Static bootstrap (like etcd): with `--initial-cluster`, the lowest id
/// initializes a new cluster when its log is empty; a restart never does.
/// Without it, the node is a one-node cluster. Returns the members to
/// initialize with, if this node is to.
async fn initial_members(raft: &Raft, cfg: &NodeConfig) -> anyhow::Result<Option<BTreeMap<u64, BasicNode>>> {
    if raft.is_initialized().await? {
        return Ok(None);
    }
    let members: BTreeMap<u64, BasicNode> = if cfg.initial_cluster.is_empty() {
        [(cfg.id, BasicNode::new(&cfg.advertise))].into()
    } else {
        if cfg.cluster_state == ClusterState::Existing {
            tracing::info!("empty log; waiting to be added to the existing cluster");
            return Ok(None);
        }
        let lowest = cfg.initial_cluster.keys().next().copied();
        if lowest != Some(cfg.id) {
            tracing::info!("empty log; node {} initializes the cluster", lowest.unwrap_or(0));
            return Ok(None);
        }
        cfg.initial_cluster
            .iter()
            .map(|(id, addr)| (*id, BasicNode::new(addr)))
            .collect()
    };
    Ok(Some(members))
}

/// Initializes the cluster once this node's clock is trusted: openraft
/// starts an election right away, and a node whose clock is off must not
/// lead (raft::clock_probe). Its peers answer clock probes only once they
/// serve, so this waits on a task of its own.
async fn initialize_when_trusted(raft: Raft, clock: Arc<Clock>, members: BTreeMap<u64, BasicNode>) {
    let mut waited = std::time::Instant::now();
    while let Err(e) = clock.check() {
        if waited.elapsed() >= std::time::Duration::from_secs(10) {
            tracing::warn!("not initializing the cluster yet: {e}");
            waited = std::time::Instant::now();
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    tracing::info!(members = ?members.keys().collect::<Vec<_>>(), "initializing a new cluster");
    if let Err(e) = raft.initialize(members).await {
        tracing::error!("initializing the cluster failed: {e}");
    }
}

/// One info line per leader change and per membership change.
///
/// Watches openraft's server metrics, which change only with the vote, the
/// role, the leader or the membership; its full metrics are sent again
/// after every turn of its core (several times per write on every node),
/// and a task watching those would be woken, on the event loop that
/// serves the writes, as often.
fn spawn_leader_log(raft: &Raft) {
    let mut rx = raft.server_metrics();
    tokio::spawn(async move {
        let mut last_leader = None;
        let mut last_membership = None;
        while rx.changed().await.is_ok() {
            let (leader, term, membership_log, voters, learners) = {
                let m = rx.borrow_and_update();
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
                    Some(l) => tracing::info!(leader = l, term, "leader changed"),
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

//! Assembles and runs one node: storage (RocksDB), Raft (`raft::life::boot`),
//! the gRPC and health routes, its ports (`ports`), and a clean shutdown.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use anyhow::Context;
use handlestore_proto::internal::v1 as ipb;
use handlestore_proto::v1 as pb;

use crate::api::auth::service::AuthService;
use crate::api::{
    Api,
    admin::{AdminService, MemoryProbe},
    handles::HandlesService,
    read::ReadGate,
    reads::ReadsService,
    state::StateService,
    watch::WatchService,
    writes::WritesService,
};
use crate::config::{ClusterState, NodeConfig};
use crate::observe::metrics::{self, Metrics};
use crate::raft::LogStore;
use crate::raft::MAX_PEER_MESSAGE;
use crate::raft::RaftService;
use crate::raft::boot::{self, RaftNode};
use crate::raft::join;
use crate::server::ports::{self, Ports, Wire};
use crate::state::snapshot::{self, SnapshotDir};
use crate::state::{StateLimits, StateStore};
use crate::tls::gate::PeerGate;

/// Client messages may carry a value up to the configured limit plus
/// envelope; larger ones are refused by the transport before decoding.
fn max_client_message(cfg: &NodeConfig) -> usize {
    let l = &cfg.limits();
    l.max_value_bytes
        .saturating_mul(2)
        .max(l.max_batch_bytes)
        .saturating_add(l.max_batch_items.saturating_mul(l.max_key_bytes + 64))
        .saturating_add(64 << 10)
}

/// The request bytes calls may hold at once (`--max-request-memory-mb`),
/// never below the largest request.
fn request_memory(cfg: &NodeConfig) -> usize {
    let mb = usize::try_from(cfg.tuning.max_request_memory_mb).unwrap_or(usize::MAX);
    mb.saturating_mul(1 << 20).max(max_client_message(cfg))
}

/// This node's storage, opened: one RocksDB for the Raft log and the
/// state machine, and the snapshot files.
struct Storage {
    db: Arc<rocksdb::DB>,
    state: Arc<StateStore>,
    snapshots: Arc<SnapshotDir>,
    log_store: LogStore,
}

type OpenDb =
    fn(&std::path::Path, crate::storage::db::DbConfig) -> Result<Arc<rocksdb::DB>, crate::storage::format::FormatError>;

fn open_db(cfg: &NodeConfig, open: OpenDb) -> anyhow::Result<Arc<rocksdb::DB>> {
    match open(&cfg.data.join("db"), cfg.tuning.db_config()) {
        Ok(db) => Ok(db),
        Err(crate::storage::format::FormatError::Rocks(e)) if e.kind() == rocksdb::ErrorKind::Corruption => {
            anyhow::bail!(
                "the database in {} is damaged on disk: {e}. This node cannot start on it: replace the member \
             (docs/operations.md, \"A damaged disk\")",
                cfg.data.display()
            )
        }
        Err(crate::storage::format::FormatError::Rocks(e)) => anyhow::bail!(
            "opening the database in {} (is another node using this data dir?): {e}",
            cfg.data.display()
        ),
        Err(e) => Err(e.into()),
    }
}

/// Reads the Raft log whole, with no compaction running, and writes it
/// again without what is damaged, if anything is (`raft::log::log_check`).
fn check_log(cfg: &NodeConfig) -> anyhow::Result<Option<crate::raft::log_check::Repaired>> {
    let mut db = open_db(cfg, crate::storage::db::open_for_check)?;
    let only = Arc::get_mut(&mut db).context("the database is shared before its log was checked")?;
    crate::raft::log_check::check(only).context("checking the Raft log")
}

fn open_storage(cfg: &NodeConfig) -> anyhow::Result<Storage> {
    crate::storage::durable_dir::create(&cfg.data)
        .with_context(|| format!("creating data dir {}", cfg.data.display()))?;
    let repaired = check_log(cfg)?;
    let db = open_db(cfg, crate::storage::db::open)?;
    let state = StateStore::open(
        db.clone(),
        StateLimits {
            dedup_max_entries: cfg.tuning.dedup_max_entries,
            history_revisions: cfg.tuning.watch_history,
            recent_bytes: cfg.tuning.watch_split().0,
        },
    )?;
    let snapshots = Arc::new(SnapshotDir::new(cfg.data.join("snapshots"))?);
    snapshots.remove_leftovers()?;
    snapshot::resume_install(&state, &snapshots)?;
    if repaired.is_some_and(|r| r.purged_to.is_some()) {
        // The log now begins after the applied entry: a follower that
        // needs the entries before gets this snapshot of them.
        snapshots
            .build(&state)
            .context("building a snapshot after the log repair")?;
    }
    let log_store = LogStore::new(db.clone(), cfg.id).context("opening the raft log")?;
    Ok(Storage {
        db,
        state,
        snapshots,
        log_store,
    })
}

/// How long open calls have to finish once the node begins to stop; then
/// it stops without them (a client that reads nothing of a stream must
/// not hold a node up).
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Runs a node until `shutdown` resolves, then stops it cleanly; with
/// `join`, it also joins the cluster that way once its ports serve
/// (`raft::life::join`).
pub async fn run(
    cfg: NodeConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
    join: Option<Box<dyn join::Cluster>>,
) -> anyhow::Result<()> {
    let listed = cfg.initial_cluster.contains_key(&cfg.id);
    // `--initial-cluster` names the founders; a node that never founds
    // (`existing`) may be another (a StatefulSet's later ordinal).
    if !cfg.initial_cluster.is_empty() && !listed && cfg.cluster_state == ClusterState::New {
        anyhow::bail!("node id {} is not in --initial-cluster", cfg.id);
    }
    crate::failpoints::init()?;
    // A node waiting to be added, and not a founder, takes any node name
    // on its peer port until it learns the membership (`tls::gate`).
    let founders = cfg.initial_cluster.keys().copied().filter(|_| listed);
    let gate = Arc::new(PeerGate::new(cfg.peer_allowed_names.clone(), founders));
    if let Some(files) = &cfg.peer_tls {
        gate.check_own(cfg.id, files)?;
    }
    let storage = open_storage(&cfg)?;
    let log_syncs = storage.log_store.sync_counter();
    let memory = crate::server::memory::probe(storage.db.clone(), storage.log_store.clone());
    crate::server::memory::start_malloc_trim(cfg.tuning.malloc_trim_interval);
    let node = boot::start(
        &cfg,
        storage.state.clone(),
        storage.snapshots.clone(),
        storage.log_store,
        gate.clone(),
    )
    .await?;
    let ports = Ports::bind(&cfg, gate).await?;
    let raft_server = raft_server(&node, storage.snapshots.clone());
    let watched = storage.state.clone();
    let (mut client, node_metrics) =
        client_routes(&cfg, &node, storage.state, log_syncs, memory, storage.snapshots.clone());
    let metrics_port = bind_metrics_port(&cfg).await?;
    // With TLS, the client port never serves Raft (a one-node cluster
    // without a peer port has no one to talk to).
    let peer = if ports.has_peer_port() {
        Some(tonic::service::Routes::new(raft_server))
    } else {
        if cfg.tls.is_none() {
            client = client.add_service(raft_server);
        }
        None
    };
    say_started(&cfg);
    let wire = Wire {
        raft: node.raft.clone(),
        durability: node.durability.clone(),
        identity: node.identity.clone(),
        disk: node.disk.clone(),
    };
    // A leader hands leadership over first, while its ports still serve;
    // watches last: they are ended first, or the servers would wait for
    // them to finish before stopping.
    let handover = cfg.tuning.handover_on_stop.then(|| node.admin.clone());
    let stopping = node.stopping.clone();
    let shutdown = futures::FutureExt::shared(Box::pin(async move {
        shutdown.await;
        stopping.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(admin) = handover {
            admin.hand_over().await;
        }
        watched.close_watchers();
    }));
    if let Some(cluster) = join {
        spawn_join(&cfg, &node, cluster, shutdown.clone());
    }
    if let Some(listener) = metrics_port {
        let stopping = shutdown.clone();
        tokio::spawn(async move {
            if let Err(e) = metrics::serve(node_metrics, listener, stopping).await {
                tracing::error!("--metrics-listen: {e}");
            }
        });
    }
    let overdue = {
        let stopping = shutdown.clone();
        async move {
            stopping.await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        }
    };
    let served = tokio::select! {
        served = ports::serve(ports, client, peer, wire, shutdown) => served.context("gRPC server"),
        () = overdue => {
            tracing::warn!("calls still open {SHUTDOWN_GRACE:?} after stopping began (a client reading nothing?); leaving them");
            Ok(())
        }
        why = node.stopped_on_error() => {
            tracing::error!("Raft stopped on an error ({why}): exiting, for a supervisor to restart the node");
            Err(anyhow::anyhow!("Raft stopped on an error: {why}"))
        }
    };
    tracing::info!(id = cfg.id, "stopping");
    if let Err(e) = node.raft.shutdown().await {
        tracing::warn!("raft shutdown: {e}");
    }
    // Everything acknowledged was synced already; flush memtables so the
    // next start does not need to replay the WAL.
    if let Err(e) = storage.db.flush_wal(true) {
        tracing::warn!("final WAL sync: {e}");
    }
    // RocksDB's compaction and flush threads must be stopped before the
    // process exits (else they may take a lock the exit already tore down).
    storage.db.cancel_all_background_work(true);
    served?;
    tracing::info!(id = cfg.id, "stopped");
    Ok(())
}

/// Joins the cluster through `cluster` in the background, until the node
/// begins to stop.
fn spawn_join(
    cfg: &NodeConfig,
    node: &RaftNode,
    cluster: Box<dyn join::Cluster>,
    stopping: impl Future<Output = ()> + Send + 'static,
) {
    let joining = join::run(node.raft.clone(), cfg.id, cfg.member(), cluster);
    tokio::spawn(async move {
        tokio::select! {
            () = joining => {}
            () = stopping => {}
        }
    });
}

/// The listener of `--metrics-listen`, bound before the node starts (so a
/// taken port stops it at once, with the reason).
async fn bind_metrics_port(cfg: &NodeConfig) -> anyhow::Result<Option<tokio::net::TcpListener>> {
    let Some(addr) = cfg.metrics_listen else {
        return Ok(None);
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("listening on {addr} (--metrics-listen)"))?;
    Ok(Some(listener))
}

/// The Raft gRPC service peers call (votes, snapshots, forwarded writes,
/// read indexes, clock probes).
fn raft_server(node: &RaftNode, snapshots: Arc<SnapshotDir>) -> ipb::raft_server::RaftServer<RaftService> {
    let raft_service = RaftService::new(node, snapshots);
    ipb::raft_server::RaftServer::new(raft_service)
        .max_decoding_message_size(MAX_PEER_MESSAGE)
        .max_encoding_message_size(MAX_PEER_MESSAGE)
}

/// The services clients call: the API, admin, the health endpoints and
/// `/metrics` (HTTP/1.1 too, for those), with every call counted; and the
/// node's metrics.
fn client_routes(
    cfg: &NodeConfig,
    node: &RaftNode,
    state: Arc<StateStore>,
    log_syncs: Arc<AtomicU64>,
    memory: MemoryProbe,
    snapshots: Arc<SnapshotDir>,
) -> (tonic::service::Routes, Metrics) {
    let api = Arc::new(Api {
        limits: cfg.limits(),
        state: state.clone(),
        proposer: node.proposer.clone(),
        reads: ReadGate {
            proposer: node.proposer.clone(),
            state: state.clone(),
            timeout: cfg.tuning.read_timeout,
        },
        guard: crate::api::auth::Guard::new(state),
        watches: {
            let (_, queues, share) = cfg.tuning.watch_split();
            crate::api::watch::WatchBudget::new(queues, share)
        },
    });
    let max_msg = max_client_message(cfg);
    // A call of the Writes service carries one write of any allowed size,
    // or several that the client keeps under its own bound together.
    let max_submit = max_msg
        .max(handlestore_proto::wire::MAX_SUBMIT_WRITE_BYTES)
        .saturating_add(64 << 10);
    // A response of the Reads service carries answers up to this bound, or
    // one answer of any allowed size.
    let max_reads_response = max_msg.max(handlestore_proto::limits::MAX_READS_RESPONSE_BYTES);
    let admin = AdminService::new(
        api.clone(),
        node.admin.clone(),
        cfg.id,
        cfg.advertise.clone(),
        log_syncs,
        memory,
        snapshots,
    );
    let mut routes = tonic::service::RoutesBuilder::default();
    routes
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
        .add_service(
            pb::reads_server::ReadsServer::new(ReadsService::new(api.clone(), max_reads_response))
                .max_decoding_message_size(max_msg)
                .max_encoding_message_size(max_reads_response.saturating_add(max_msg)),
        )
        .add_service(
            // A response carries whole revisions: one may hold a full
            // log entry past the page size (see api::watch).
            crate::api::watch::WatchServer::new(WatchService::new(api.clone()))
                .max_decoding_message_size(max_msg)
                .max_encoding_message_size(max_msg.saturating_mul(4)),
        )
        .add_service(pb::admin_server::AdminServer::new(admin))
        .add_service(pb::auth_server::AuthServer::new(AuthService::new(api.clone())));
    let mut routes = routes.routes();
    let metrics = Metrics::new(crate::server::readings::gather(cfg, api.clone(), node.admin.clone()));
    metrics.add_route(routes.axum_router_mut());
    crate::server::health::add_routes(routes.axum_router_mut(), api, cfg.id);
    let router = std::mem::take(routes.axum_router_mut());
    *routes.axum_router_mut() = router
        .layer(axum::middleware::from_fn_with_state(
            crate::server::admission::Admission::new(cfg.tuning.max_concurrent_calls, request_memory(cfg)),
            crate::server::admission::admit,
        ))
        .layer(axum::middleware::from_fn(crate::server::leader_header::leader_header))
        .layer(axum::middleware::from_fn_with_state(
            crate::server::calls::CallsConfig {
                slow: cfg.tuning.slow_requests(),
            },
            crate::server::calls::watch_calls,
        ));
    (routes, metrics)
}

/// How this node talks to its peers, for the log.
fn peers_mode(cfg: &NodeConfig) -> &'static str {
    match (cfg.peer_listen, &cfg.peer_tls, &cfg.tls) {
        (Some(_), Some(_), _) => "peer port, mutual TLS",
        (Some(_), None, _) => "peer port, in the clear",
        (None, _, Some(_)) => "none: with TLS and no peer port this node serves no Raft",
        (None, _, None) => "on the client port, in the clear",
    }
}

fn say_started(cfg: &NodeConfig) {
    let tls = match &cfg.tls {
        Some(t) if t.ca.is_some() => "TLS, client certificates required",
        Some(_) => "TLS",
        None => "in the clear",
    };
    tracing::info!(
        id = cfg.id,
        listen = %cfg.listen,
        peer_listen = ?cfg.peer_listen,
        clients = tls,
        peers = peers_mode(cfg),
        data = %cfg.data.display(),
        "node started"
    );
    if cfg.protected_mode() {
        tracing::info!("protected mode: no TLS, so this node serves loopback only (--tls-cert, or --insecure)");
    } else if cfg.tls.is_none() || (cfg.peer_listen.is_some() && cfg.peer_tls.is_none()) {
        tracing::warn!("--insecure: serving in the clear; anyone who reaches the ports can read and write everything");
    }
}

//! Assembles and runs one node: storage (RocksDB), Raft (`raft::boot`),
//! the gRPC and health routes on one port, and a clean shutdown.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use anyhow::Context;
use handlestore_proto::conn::Conn;
use handlestore_proto::internal::v1 as ipb;
use handlestore_proto::v1 as pb;
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
use crate::config::NodeConfig;
use crate::raft::Raft;
use crate::raft::boot::{self, RaftNode};
use crate::raft::durability::Durability;
use crate::raft::log_store::LogStore;
use crate::raft::network::MAX_PEER_MESSAGE;
use crate::raft::peer_wire::{self, Protocol};
use crate::raft::service::{self, RaftService};
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

/// This node's storage, opened: one RocksDB for the Raft log and the
/// state machine, and the snapshot files.
struct Storage {
    db: Arc<rocksdb::DB>,
    state: Arc<StateStore>,
    snapshots: Arc<SnapshotDir>,
    log_store: LogStore,
}

fn open_storage(cfg: &NodeConfig) -> anyhow::Result<Storage> {
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
    Ok(Storage {
        db,
        state,
        snapshots,
        log_store,
    })
}

/// Runs a node until `shutdown` resolves, then stops it cleanly.
pub async fn run(cfg: NodeConfig, shutdown: impl Future<Output = ()> + Send + 'static) -> anyhow::Result<()> {
    if !cfg.initial_cluster.is_empty() && !cfg.initial_cluster.contains_key(&cfg.id) {
        anyhow::bail!("node id {} is not in --initial-cluster", cfg.id);
    }
    let storage = open_storage(&cfg)?;
    let log_syncs = storage.log_store.sync_counter();
    let memory = crate::memory::probe(storage.db.clone(), storage.log_store.clone());
    crate::memory::start_malloc_trim(cfg.malloc_trim_interval);
    let node = boot::start(
        &cfg,
        storage.state.clone(),
        storage.snapshots.clone(),
        storage.log_store,
    )
    .await?;
    let listener = TcpListener::bind(cfg.listen)
        .await
        .with_context(|| format!("listening on {}", cfg.listen))?;
    let routes = routes(&cfg, &node, storage.state, storage.snapshots, log_syncs, memory);
    tracing::info!(id = cfg.id, listen = %cfg.listen, data = %cfg.data_dir.display(), "node started");
    let served = serve(listener, routes, &node, shutdown).await;
    tracing::info!(id = cfg.id, "stopping");
    if let Err(e) = node.raft.shutdown().await {
        tracing::warn!("raft shutdown: {e}");
    }
    // Everything acknowledged was synced already; flush memtables so the
    // next start does not need to replay the WAL.
    if let Err(e) = storage.db.flush_wal(true) {
        tracing::warn!("final WAL sync: {e}");
    }
    served.context("gRPC server")?;
    tracing::info!(id = cfg.id, "stopped");
    Ok(())
}

/// The services of the node's port: peers' Raft service, the client API,
/// admin, and the health endpoints (HTTP/1.1 too, for those).
fn routes(
    cfg: &NodeConfig,
    node: &RaftNode,
    state: Arc<StateStore>,
    snapshots: Arc<SnapshotDir>,
    log_syncs: Arc<AtomicU64>,
    memory: MemoryProbe,
) -> tonic::service::Routes {
    let api = Arc::new(Api {
        limits: cfg.limits.clone(),
        state: state.clone(),
        proposer: node.proposer.clone(),
        reads: ReadGate {
            proposer: node.proposer.clone(),
            state,
            timeout: cfg.read_timeout,
        },
    });
    let max_msg = max_client_message(cfg);
    // A call of the Writes service carries one write of any allowed size,
    // or several that the client keeps under its own bound together.
    let max_submit = max_msg
        .max(handlestore_proto::limits::MAX_SUBMIT_BYTES)
        .saturating_add(64 << 10);
    let raft_service = RaftService::new(
        node.raft.clone(),
        node.proposer.clone(),
        snapshots,
        node.durability.clone(),
    );
    let admin = AdminService::new(
        api.clone(),
        node.admin.clone(),
        cfg.id,
        cfg.advertise.clone(),
        log_syncs,
        memory,
    );
    let mut routes = tonic::service::RoutesBuilder::default();
    routes
        .add_service(
            ipb::raft_server::RaftServer::new(raft_service)
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
        .add_service(pb::admin_server::AdminServer::new(admin));
    let mut routes = routes.routes();
    crate::health::add_routes(routes.axum_router_mut(), api, cfg.id);
    let router = std::mem::take(routes.axum_router_mut());
    *routes.axum_router_mut() = router.layer(axum::middleware::from_fn(crate::status::leader_header));
    routes
}

/// Serves the node's one port until `shutdown`: leaders' Raft wire
/// connections here, the rest to the gRPC server.
async fn serve(
    listener: TcpListener,
    routes: tonic::service::Routes,
    node: &RaftNode,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), tonic::transport::Error> {
    let (grpc_tx, grpc_rx) = tokio::sync::mpsc::channel(64);
    let acceptor = tokio::spawn(accept(listener, grpc_tx, node.raft.clone(), node.durability.clone())).abort_handle();
    // The port closes when shutdown begins, as tonic's own listener would.
    let stop_accepting = acceptor.clone();
    let shutdown = async move {
        shutdown.await;
        stop_accepting.abort();
    };
    let served = tonic::transport::Server::builder()
        .accept_http1(true)
        .add_routes(routes)
        .serve_with_incoming_shutdown(ReceiverStream::new(grpc_rx), shutdown)
        .await;
    acceptor.abort();
    served
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

//! Each system started for a round, with the keys its reads pick among
//! written beforehand, and the operations it runs.

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use handlestore_client::{Client, ClusterHandleStore, Consistency, HandleStore, Ttl};
use serde_json::{Value, json};

use super::java::{self, JavaCartServer};
use super::systems::{Etcd, EtcdRelease, Nats, NatsSync, Redis, RedisMode};
use super::typescript::{Node, TsCartServer};
use super::workload::Op;
use super::{HISTORY_SYSTEMS, JAVA_SYSTEMS, OVERLOAD_SYSTEMS, PYTHON_SYSTEMS, SYSTEMS, TS_SYSTEMS, VALUE_BYTES};
use handlestore_tests::cluster::TestCluster;
use handlestore_tests::mcp::CartServer;

/// Keys written before a read workload, read at random.
const PRELOAD: usize = 1000;

/// Clients of the fleet systems: each its own connections to the nodes,
/// as 64 stateless MCP server replicas would hold.
const FLEET: usize = 64;

/// Admission off, for the A/B of the overload rows: limits no load here
/// reaches.
const UNLIMITED: [&str; 4] = [
    "--max-concurrent-calls",
    "1000000",
    "--max-request-memory-mb",
    "1048576",
];

/// The operations each system runs, in order.
pub(super) fn plan(system: &str) -> Vec<&'static str> {
    match system {
        "handlestore" => vec!["mint", "get", "get_stale", "update", "batch_store", "cart_flow"],
        "handlestore-secure" | "handlestore-fleet" | "handlestore-fleet-unlimited" => vec!["mint", "get"],
        "cart-memory" | "cart-redis" | "cart-redis-fsync" => vec!["cart_flow"],
        "fastmcp" | "fastmcp-handles" | "fastmcp-redis-fsync" | "fastmcp-memory" => vec!["cart_flow"],
        "ts-cart" | "ts-cart-redis-fsync" | "ts-cart-memory" => vec!["cart_flow"],
        "java-cart" | "java-cart-redis-fsync" | "java-cart-memory" => vec!["cart_flow"],
        "etcd" | "etcd-3.5" | "etcd-3.4" => {
            vec!["put", "put_lease", "range", "range_serializable", "update", "txn_put10"]
        }
        "nats" | "nats-default" => vec!["put", "create_ttl", "get", "update"],
        "redis" | "redis-fsync" => vec!["set_ex", "get", "multi_set10"],
        "fsync" => vec!["fdatasync"],
        _ => vec![],
    }
}

/// Whether `system`'s servers are JVMs, whose operations are warmed up
/// before they are measured.
pub(super) fn on_jvm(system: &str) -> bool {
    JAVA_SYSTEMS.contains(&system)
}

/// What keeps a system running until its rows are measured (dropping it
/// stops the system).
pub(super) type Running = Box<dyn std::any::Any + Send>;

/// Starts `system`, returns its operations, and records the pids of its
/// server processes in `pids`.
pub(super) async fn start(
    system: &str,
    dir: &Path,
    keep: &mut Vec<Running>,
    pids: &mut Vec<u32>,
) -> Result<Vec<(&'static str, Op)>> {
    match system {
        "handlestore" => start_handlestore(dir, keep, pids).await,
        "handlestore-secure" => start_handlestore_secure(dir, keep, pids).await,
        "handlestore-fleet" => start_handlestore_fleet(dir, &[], keep, pids).await,
        "handlestore-fleet-unlimited" => start_handlestore_fleet(dir, &UNLIMITED, keep, pids).await,
        "cart-memory" => start_cart_memory(dir, keep, pids).await,
        "cart-redis" => start_cart_redis(dir, RedisMode::Shipped, keep, pids).await,
        "cart-redis-fsync" => start_cart_redis(dir, RedisMode::FsyncAlways, keep, pids).await,
        "fastmcp" => start_fastmcp_cluster(dir, &["--kv", "handlestore"], keep, pids).await,
        "fastmcp-handles" => start_fastmcp_cluster(dir, &[], keep, pids).await,
        "fastmcp-redis-fsync" => start_fastmcp_redis(dir, keep, pids).await,
        "fastmcp-memory" => start_fastmcp_memory(dir, keep, pids).await,
        "ts-cart" => start_ts_cluster(dir, keep, pids).await,
        "ts-cart-redis-fsync" => start_ts_redis(dir, keep, pids).await,
        "ts-cart-memory" => start_ts_memory(dir, keep, pids).await,
        "java-cart" => start_java_cluster(dir, keep, pids).await,
        "java-cart-redis-fsync" => start_java_redis(dir, keep, pids).await,
        "java-cart-memory" => start_java_memory(dir, keep, pids).await,
        "etcd" => start_etcd(dir, EtcdRelease::V3_7, keep, pids).await,
        "etcd-3.5" => start_etcd(dir, EtcdRelease::V3_5, keep, pids).await,
        "etcd-3.4" => start_etcd(dir, EtcdRelease::V3_4, keep, pids).await,
        "nats" => start_nats(dir, NatsSync::Always, keep, pids).await,
        "nats-default" => start_nats(dir, NatsSync::Shipped, keep, pids).await,
        "redis" => start_redis(dir, RedisMode::Shipped, keep, pids).await,
        "redis-fsync" => start_redis(dir, RedisMode::FsyncAlways, keep, pids).await,
        "fsync" => start_fsync(dir, keep),
        other => anyhow::bail!(
            "unknown system {other:?}; known: {}, {}, {}, {}, {}, {}",
            SYSTEMS.join(", "),
            HISTORY_SYSTEMS.join(", "),
            OVERLOAD_SYSTEMS.join(", "),
            PYTHON_SYSTEMS.join(", "),
            TS_SYSTEMS.join(", "),
            JAVA_SYSTEMS.join(", ")
        ),
    }
}

/// Three nodes, and two stateless MCP replicas over them.
async fn start_handlestore(
    dir: &Path,
    keep: &mut Vec<Running>,
    pids: &mut Vec<u32>,
) -> Result<Vec<(&'static str, Op)>> {
    let cluster = TestCluster::builder(3).dir_in(dir).start().await?;
    let client = Client::builder(cluster.endpoints()).namespace("bench").build()?;
    let mut carts = Vec::new();
    for _ in 0..2 {
        carts.push(CartServer::start(&cluster.endpoints(), dir).await?);
    }
    let cart_flow = cart_op(carts, keep, pids);
    pids.extend((1..=3).filter_map(|id| cluster.node(id).pid()));
    keep.push(Box::new(cluster));
    let store: Arc<ClusterHandleStore<Value>> = Arc::new(client.handle_store("bench").build());
    let keys = preload(&store).await?;
    let stale = Arc::new(client.handle_store("bench").consistency(Consistency::Stale).build());
    Ok(vec![
        ("mint", Op::HsMint(Arc::new(vec![store.clone()]))),
        ("get", Op::HsGet(Arc::new(vec![store.clone()]), keys.clone())),
        ("get_stale", Op::HsGet(Arc::new(vec![stale]), keys.clone())),
        ("update", Op::HsUpdate(store, keys)),
        ("batch_store", Op::HsBatch(client.state_tool())),
        ("cart_flow", cart_flow),
    ])
}

/// Three nodes secured as production should be: TLS to clients, peer
/// ports with mutual TLS (AppendEntries over gRPC, not the Raft wire),
/// auth on and every call carrying a token.
async fn start_handlestore_secure(
    dir: &Path,
    keep: &mut Vec<Running>,
    pids: &mut Vec<u32>,
) -> Result<Vec<(&'static str, Op)>> {
    let cluster = TestCluster::builder(3).secure(true).dir_in(dir).start().await?;
    let client = cluster
        .credentials()
        .builder(cluster.endpoints())
        .namespace("bench")
        .build()?;
    pids.extend((1..=3).filter_map(|id| cluster.node(id).pid()));
    keep.push(Box::new(cluster));
    let store: Arc<ClusterHandleStore<Value>> = Arc::new(client.handle_store("bench").build());
    let keys = preload(&store).await?;
    let stores = Arc::new(vec![store]);
    Ok(vec![
        ("mint", Op::HsMint(stores.clone())),
        ("get", Op::HsGet(stores, keys)),
    ])
}

/// Three nodes (with `args`) and [`FLEET`] clients, each its own
/// connections, for the overload rows: thousands of concurrent callers,
/// more than a node serves at once.
async fn start_handlestore_fleet(
    dir: &Path,
    args: &[&str],
    keep: &mut Vec<Running>,
    pids: &mut Vec<u32>,
) -> Result<Vec<(&'static str, Op)>> {
    let cluster = TestCluster::builder(3)
        .args(args.iter().copied())
        .dir_in(dir)
        .start()
        .await?;
    let mut stores = Vec::new();
    for _ in 0..FLEET {
        let client = Client::builder(cluster.endpoints()).namespace("bench").build()?;
        stores.push(Arc::new(client.handle_store("bench").build()));
    }
    pids.extend((1..=3).filter_map(|id| cluster.node(id).pid()));
    keep.push(Box::new(cluster));
    let keys = preload(&stores[0]).await?;
    let stores = Arc::new(stores);
    Ok(vec![
        ("mint", Op::HsMint(stores.clone())),
        ("get", Op::HsGet(stores, keys)),
    ])
}

/// Mints the handles a read workload picks among.
async fn preload(store: &ClusterHandleStore<Value>) -> Result<Arc<Vec<String>>> {
    let value = "v".repeat(VALUE_BYTES);
    let mut keys = Vec::new();
    for _ in 0..PRELOAD {
        keys.push(store.mint(json!(value), Ttl::Never).await?);
    }
    Ok(Arc::new(keys))
}

/// The baseline MCP servers use today: one replica, carts in its own memory
/// (gone on restart, invisible to other replicas).
async fn start_cart_memory(
    dir: &Path,
    keep: &mut Vec<Running>,
    pids: &mut Vec<u32>,
) -> Result<Vec<(&'static str, Op)>> {
    let server = CartServer::start_memory(dir).await?;
    Ok(vec![("cart_flow", cart_op(vec![server], keep, pids))])
}

/// The server an author would write with Redis: two stateless replicas
/// (as over handlestore) whose carts are keys in one Redis, with its TTL,
/// `WATCH`/`MULTI` for concurrent adds, and `PUBLISH` for cart updates.
async fn start_cart_redis(
    dir: &Path,
    mode: RedisMode,
    keep: &mut Vec<Running>,
    pids: &mut Vec<u32>,
) -> Result<Vec<(&'static str, Op)>> {
    let replica = async |url: &str| CartServer::start_redis(url, dir).await;
    start_over_redis(dir, mode, replica, keep, pids).await
}

/// Two stateless replicas (started by `replica`, given the Redis URL) over
/// one Redis in `mode`.
async fn start_over_redis<R: Replica>(
    dir: &Path,
    mode: RedisMode,
    replica: impl AsyncFn(&str) -> Result<R>,
    keep: &mut Vec<Running>,
    pids: &mut Vec<u32>,
) -> Result<Vec<(&'static str, Op)>> {
    let redis = Redis::start(dir, mode).await?;
    let mut carts = Vec::new();
    for _ in 0..2 {
        carts.push(replica(&redis.url).await?);
    }
    let cart_flow = cart_op(carts, keep, pids);
    pids.extend(redis.pids());
    keep.push(Box::new(redis));
    Ok(vec![("cart_flow", cart_flow)])
}

/// The tests' Python (the MCP SDK, FastMCP, py-key-value and the client),
/// or why there is none.
fn python() -> Result<std::path::PathBuf> {
    handlestore_tests::python::interpreter()
        .map_err(|why| anyhow::anyhow!("the FastMCP systems need the tests' Python environment: {why}"))
}

/// `fastmcp_cart.py` as two stateless replicas over three nodes, with
/// `args`: carts in `HandlestoreStore` (`--kv handlestore`), or as handles
/// (none).
async fn start_fastmcp_cluster(
    dir: &Path,
    args: &[&str],
    keep: &mut Vec<Running>,
    pids: &mut Vec<u32>,
) -> Result<Vec<(&'static str, Op)>> {
    let python = python()?;
    let cluster = TestCluster::builder(3).dir_in(dir).start().await?;
    let endpoints = cluster.endpoints().join(",");
    let mut carts = Vec::new();
    for _ in 0..2 {
        let mut a = vec!["--endpoints", endpoints.as_str()];
        a.extend_from_slice(args);
        carts.push(CartServer::start_fastmcp(&python, &a, dir).await?);
    }
    let cart_flow = cart_op(carts, keep, pids);
    pids.extend((1..=3).filter_map(|id| cluster.node(id).pid()));
    keep.push(Box::new(cluster));
    Ok(vec![("cart_flow", cart_flow)])
}

/// `fastmcp_cart.py` as two replicas over py-key-value's `RedisStore`, on
/// a Redis with `appendfsync always`: what a FastMCP author picks today.
async fn start_fastmcp_redis(
    dir: &Path,
    keep: &mut Vec<Running>,
    pids: &mut Vec<u32>,
) -> Result<Vec<(&'static str, Op)>> {
    let python = python()?;
    let replica = async |url: &str| CartServer::start_fastmcp(&python, &["--kv", "redis", "--redis", url], dir).await;
    start_over_redis(dir, RedisMode::FsyncAlways, replica, keep, pids).await
}

/// `fastmcp_cart.py` alone, carts in py-key-value's `MemoryStore`.
async fn start_fastmcp_memory(
    dir: &Path,
    keep: &mut Vec<Running>,
    pids: &mut Vec<u32>,
) -> Result<Vec<(&'static str, Op)>> {
    let server = CartServer::start_fastmcp(&python()?, &["--kv", "memory"], dir).await?;
    Ok(vec![("cart_flow", cart_op(vec![server], keep, pids))])
}

/// `client/ts/examples/cartServer.ts` as two stateless replicas over three
/// nodes, carts as the cluster's handles (as shipped).
async fn start_ts_cluster(dir: &Path, keep: &mut Vec<Running>, pids: &mut Vec<u32>) -> Result<Vec<(&'static str, Op)>> {
    let node = Node::find()?;
    let cluster = TestCluster::builder(3).dir_in(dir).start().await?;
    let endpoints = cluster.endpoints().join(",");
    let mut carts = Vec::new();
    for _ in 0..2 {
        carts.push(TsCartServer::start(&node, &["--endpoints", &endpoints], dir).await?);
    }
    let cart_flow = cart_op(carts, keep, pids);
    pids.extend((1..=3).filter_map(|id| cluster.node(id).pid()));
    keep.push(Box::new(cluster));
    Ok(vec![("cart_flow", cart_flow)])
}

/// `cartServer.ts --kv redis` as two replicas over one Redis with
/// `appendfsync always`: the same server as a careful author writes it
/// over Redis (a key per cart with its TTL, `WATCH`/`MULTI` adds, a `SET
/// NX` checkout).
async fn start_ts_redis(dir: &Path, keep: &mut Vec<Running>, pids: &mut Vec<u32>) -> Result<Vec<(&'static str, Op)>> {
    let node = Node::find()?;
    let replica = async |url: &str| TsCartServer::start(&node, &["--kv", "redis", "--redis", url], dir).await;
    start_over_redis(dir, RedisMode::FsyncAlways, replica, keep, pids).await
}

/// `cartServer.ts --kv memory` alone, carts in a `Map`.
async fn start_ts_memory(dir: &Path, keep: &mut Vec<Running>, pids: &mut Vec<u32>) -> Result<Vec<(&'static str, Op)>> {
    let server = TsCartServer::start(&Node::find()?, &["--kv", "memory"], dir).await?;
    Ok(vec![("cart_flow", cart_op(vec![server], keep, pids))])
}

/// The Java cart server (client/java/examples) as two stateless replicas
/// over three nodes, carts as the cluster's handles (`--kv handlestore`, as
/// shipped).
async fn start_java_cluster(
    dir: &Path,
    keep: &mut Vec<Running>,
    pids: &mut Vec<u32>,
) -> Result<Vec<(&'static str, Op)>> {
    let jar = java::cart_jar().await?;
    let cluster = TestCluster::builder(3).dir_in(dir).start().await?;
    let endpoints = cluster.endpoints().join(",");
    let mut carts = Vec::new();
    for _ in 0..2 {
        carts.push(JavaCartServer::start(&jar, &["--endpoints", &endpoints], dir).await?);
    }
    let cart_flow = cart_op(carts, keep, pids);
    pids.extend((1..=3).filter_map(|id| cluster.node(id).pid()));
    keep.push(Box::new(cluster));
    Ok(vec![("cart_flow", cart_flow)])
}

/// The Java cart server with `--kv redis` as two replicas over one Redis
/// with `appendfsync always`, as a careful author keeps carts there (a key
/// per cart with its TTL, `WATCH`/`MULTI` adds through Lettuce, a `SET NX`
/// checkout).
async fn start_java_redis(dir: &Path, keep: &mut Vec<Running>, pids: &mut Vec<u32>) -> Result<Vec<(&'static str, Op)>> {
    let jar = java::cart_jar().await?;
    let replica = async |url: &str| JavaCartServer::start(&jar, &["--kv", "redis", "--redis", url], dir).await;
    start_over_redis(dir, RedisMode::FsyncAlways, replica, keep, pids).await
}

/// The Java cart server with `--kv memory` alone, carts in a
/// `ConcurrentHashMap`.
async fn start_java_memory(
    dir: &Path,
    keep: &mut Vec<Running>,
    pids: &mut Vec<u32>,
) -> Result<Vec<(&'static str, Op)>> {
    let server = JavaCartServer::start(&java::cart_jar().await?, &["--kv", "memory"], dir).await?;
    Ok(vec![("cart_flow", cart_op(vec![server], keep, pids))])
}

/// An MCP cart server replica the cart flow drives: the Rust or FastMCP
/// one, the TypeScript one, or the Java one.
trait Replica: Send + 'static {
    fn mcp_url(&self) -> String;
    fn pid(&self) -> Option<u32>;
}

impl Replica for CartServer {
    fn mcp_url(&self) -> String {
        CartServer::mcp_url(self)
    }

    fn pid(&self) -> Option<u32> {
        CartServer::pid(self)
    }
}

impl Replica for TsCartServer {
    fn mcp_url(&self) -> String {
        TsCartServer::mcp_url(self)
    }

    fn pid(&self) -> Option<u32> {
        Some(TsCartServer::pid(self))
    }
}

impl Replica for JavaCartServer {
    fn mcp_url(&self) -> String {
        JavaCartServer::mcp_url(self)
    }

    fn pid(&self) -> Option<u32> {
        Some(JavaCartServer::pid(self))
    }
}

/// The cart flow over `carts` (each call to the next replica in turn);
/// their pids recorded, and kept running until the rows are measured.
fn cart_op<R: Replica>(carts: Vec<R>, keep: &mut Vec<Running>, pids: &mut Vec<u32>) -> Op {
    let urls: Vec<String> = carts.iter().map(R::mcp_url).collect();
    pids.extend(carts.iter().filter_map(R::pid));
    keep.push(Box::new(carts));
    Op::Cart(Arc::new(urls), Vec::new())
}

async fn start_etcd(
    dir: &Path,
    release: EtcdRelease,
    keep: &mut Vec<Running>,
    pids: &mut Vec<u32>,
) -> Result<Vec<(&'static str, Op)>> {
    let value = "v".repeat(VALUE_BYTES);
    let etcd = Etcd::start(dir, release).await?;
    let mut c = etcd.client().await?;
    pids.extend(etcd.pids());
    keep.push(Box::new(etcd));
    let mut keys = Vec::new();
    for i in 0..PRELOAD {
        let k = format!("bench/read/{i}");
        c.put(k.clone(), value.clone(), None).await?;
        keys.push(k);
    }
    let keys = Arc::new(keys);
    let lease = c.lease_grant(3600, None).await?.id();
    Ok(vec![
        ("put", Op::EtcdPut(c.clone(), None)),
        ("put_lease", Op::EtcdPut(c.clone(), Some(lease))),
        ("range", Op::EtcdRange(c.clone(), keys.clone(), false)),
        ("range_serializable", Op::EtcdRange(c.clone(), keys.clone(), true)),
        ("update", Op::EtcdUpdate(c.clone(), keys)),
        ("txn_put10", Op::EtcdTxn(c)),
    ])
}

/// Three NATS servers with JetStream and one KV bucket of three replicas,
/// preloaded as the others.
async fn start_nats(
    dir: &Path,
    sync: NatsSync,
    keep: &mut Vec<Running>,
    pids: &mut Vec<u32>,
) -> Result<Vec<(&'static str, Op)>> {
    let nats = Nats::start(dir, sync).await?;
    let kv = nats.bucket().await?;
    pids.extend(nats.pids());
    keep.push(Box::new(nats));
    let value = bytes::Bytes::from("v".repeat(VALUE_BYTES));
    let mut keys = Vec::new();
    for i in 0..PRELOAD {
        let k = format!("read-{i}");
        kv.put(&k, value.clone()).await?;
        keys.push(k);
    }
    let keys = Arc::new(keys);
    Ok(vec![
        ("put", Op::NatsPut(kv.clone())),
        ("create_ttl", Op::NatsCreateTtl(kv.clone())),
        ("get", Op::NatsGet(kv.clone(), keys.clone())),
        ("update", Op::NatsUpdate(kv, keys)),
    ])
}

async fn start_redis(
    dir: &Path,
    mode: RedisMode,
    keep: &mut Vec<Running>,
    pids: &mut Vec<u32>,
) -> Result<Vec<(&'static str, Op)>> {
    let value = "v".repeat(VALUE_BYTES);
    let redis = Redis::start(dir, mode).await?;
    let mut conn = redis.connection().await?;
    pids.extend(redis.pids());
    keep.push(Box::new(redis));
    let mut keys = Vec::new();
    for i in 0..PRELOAD {
        let k = format!("bench:read:{i}");
        redis::cmd("SET")
            .arg(&k)
            .arg(&value)
            .query_async::<()>(&mut conn)
            .await?;
        keys.push(k);
    }
    Ok(vec![
        ("set_ex", Op::RedisSetEx(conn.clone())),
        ("get", Op::RedisGet(conn.clone(), Arc::new(keys))),
        ("multi_set10", Op::RedisMulti(conn)),
    ])
}

/// A file of its own to append to and sync.
fn start_fsync(dir: &Path, keep: &mut Vec<Running>) -> Result<Vec<(&'static str, Op)>> {
    let tmp = tempfile::tempdir_in(dir)?;
    let f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(tmp.path().join("floor"))?;
    keep.push(Box::new(tmp));
    Ok(vec![("fdatasync", Op::Fdatasync(Arc::new(f)))])
}

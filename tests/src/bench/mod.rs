//! The benchmark harness: the same workloads against handlestore and the
//! systems users would pick instead, in one run on one machine, reported as
//! throughput and latency per concurrency, and as the ratios the targets in
//! docs/performance.md are stated in.

pub mod cpu;
pub mod fs;
pub mod plot;
pub mod systems;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use handlestore_client::{
    Client, ClusterHandleStore, ClusterStateTool, Consistency, HandleStore, StateTool, StoreItem, Ttl,
};
use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use serde_json::{Value, json};

use self::systems::{Etcd, Redis, RedisMode};
use crate::cluster::TestCluster;
use crate::mcp::{self, CartServer, McpClient, ToolOutcome};

/// Bytes per written value.
pub const VALUE_BYTES: usize = 256;
/// Keys written before a read workload, read at random.
const PRELOAD: usize = 1000;
/// Keys per atomic batch.
const BATCH: usize = 10;
/// Items added in one cart flow.
const CART_ITEMS: usize = 3;

/// One measured cell: a system's operation at one concurrency.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Which round of the run measured it (from 1); none in a row of
    /// medians over rounds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub round: Option<usize>,
    pub system: String,
    pub op: String,
    pub concurrency: usize,
    pub ops: u64,
    pub errors: u64,
    pub seconds: f64,
    pub throughput: f64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    /// CPU time the system's server processes spent per operation during
    /// the cell, all of them together (None: no server, as for fsync).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cpu_us: Option<f64>,
    /// CPU time the load generator (this process: client library,
    /// connections, bookkeeping) spent per operation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_cpu_us: Option<f64>,
    /// The first error, if any, to say what went wrong.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
}

/// How long one cell runs: for a fixed time, or for a fixed number of
/// operations shared by its clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Length {
    /// Every client loops on its operation until the time is up.
    For(Duration),
    /// The clients take operations from one pool of this many until it is
    /// empty; one that fails counts toward the number. The cell's time is
    /// what the last operation took to end.
    Ops(u64),
}

impl Length {
    /// What the progress bar counts for one cell: milliseconds, or
    /// operations.
    fn units(self) -> u64 {
        match self {
            Length::For(d) => d.as_millis() as u64,
            Length::Ops(n) => n,
        }
    }
}

#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub systems: Vec<String>,
    pub concurrency: Vec<usize>,
    pub length: Length,
    /// Where every system keeps its data (one disk for all).
    pub data_dir: std::path::PathBuf,
    /// Only these operations (by name, e.g. "mint", "put"); empty: all.
    pub ops: Vec<String>,
    /// How many times the whole run is repeated, every system started
    /// afresh each time; even rounds take the systems in reverse order.
    pub rounds: usize,
}

impl BenchConfig {
    fn wants(&self, op: &str) -> bool {
        self.ops.is_empty() || self.ops.iter().any(|o| o == op)
    }
}

/// One operation, with what each worker needs to run it.
#[derive(Clone)]
enum Op {
    HsMint(Arc<ClusterHandleStore<Value>>),
    HsGet(Arc<ClusterHandleStore<Value>>, Arc<Vec<String>>),
    HsUpdate(Arc<ClusterHandleStore<Value>>, Arc<Vec<String>>),
    HsBatch(ClusterStateTool),
    EtcdUpdate(etcd_client::Client, Arc<Vec<String>>),
    EtcdTxn(etcd_client::Client),
    RedisMulti(redis::aio::MultiplexedConnection),
    EtcdPut(etcd_client::Client, Option<i64>),
    EtcdRange(etcd_client::Client, Arc<Vec<String>>, bool),
    RedisSetEx(redis::aio::MultiplexedConnection),
    RedisGet(redis::aio::MultiplexedConnection, Arc<Vec<String>>),
    Fdatasync(Arc<std::fs::File>),
    /// One cart flow over MCP: create_cart, add_item × CART_ITEMS, get_cart,
    /// checkout, each call sent to the next cart_server replica in turn (as a
    /// round-robin load balancer would). Each worker connects to every
    /// replica before the clock starts.
    Cart(Arc<Vec<String>>, Vec<Arc<McpClient>>),
}

fn value() -> Value {
    // A JSON string of VALUE_BYTES bytes on the wire (quotes included).
    Value::String("v".repeat(VALUE_BYTES - 2))
}

impl Op {
    /// Per-worker setup that is not measured (connections).
    async fn prepare(&mut self) -> Result<(), String> {
        if let Op::Cart(urls, conns) = self {
            for url in urls.iter() {
                conns.push(Arc::new(mcp::connect(url).await.map_err(|e| format!("{e:#}"))?));
            }
        }
        Ok(())
    }

    async fn once(&mut self, worker: usize, i: u64) -> Result<(), String> {
        let e = |e: &dyn std::fmt::Display| e.to_string();
        match self {
            Op::HsMint(s) => s
                .mint(value(), Ttl::After(Duration::from_secs(3600)))
                .await
                .map(drop)
                .map_err(|x| e(&x)),
            Op::HsGet(s, keys) => {
                let k = &keys[pick(worker, i, keys.len())];
                match s.get(k).await {
                    Ok(Some(_)) => Ok(()),
                    Ok(None) => Err(format!("{k} not found")),
                    Err(x) => Err(e(&x)),
                }
            }
            Op::HsUpdate(s, keys) => {
                let k = &keys[pick(worker, i, keys.len())];
                let v = value();
                match s.update(k, &mut |cur: &mut Value| *cur = v.clone()).await {
                    Ok(Some(_)) => Ok(()),
                    Ok(None) => Err(format!("{k} not found")),
                    Err(x) => Err(e(&x)),
                }
            }
            Op::HsBatch(tool) => {
                let items = (0..BATCH)
                    .map(|j| StoreItem::new(format!("bench/{worker}/{i}/{j}"), value()))
                    .collect();
                tool.batch_store(items).await.map(drop).map_err(|x| e(&x))
            }
            Op::EtcdUpdate(c, keys) => {
                // Read, then write only if unchanged; again on a conflict.
                // As the client crate's update: the first read is
                // serializable (etcd's stale read), the ones after a
                // conflict or a miss linearizable.
                let k = keys[pick(worker, i, keys.len())].clone();
                let mut serializable = true;
                loop {
                    let opts = serializable.then(|| etcd_client::GetOptions::new().with_serializable());
                    let got = c.get(k.clone(), opts).await.map_err(|x| e(&x))?;
                    let first = std::mem::replace(&mut serializable, false);
                    let Some(rev) = got.kvs().first().map(|kv| kv.mod_revision()) else {
                        if first {
                            continue;
                        }
                        return Err("not found".into());
                    };
                    let txn = etcd_client::Txn::new()
                        .when([etcd_client::Compare::mod_revision(
                            k.clone(),
                            etcd_client::CompareOp::Equal,
                            rev,
                        )])
                        .and_then([etcd_client::TxnOp::put(k.clone(), "v".repeat(VALUE_BYTES), None)]);
                    if c.txn(txn).await.map_err(|x| e(&x))?.succeeded() {
                        return Ok(());
                    }
                }
            }
            Op::EtcdTxn(c) => {
                let puts: Vec<etcd_client::TxnOp> = (0..BATCH)
                    .map(|j| etcd_client::TxnOp::put(format!("bench/{worker}/{i}/{j}"), "v".repeat(VALUE_BYTES), None))
                    .collect();
                c.txn(etcd_client::Txn::new().and_then(puts))
                    .await
                    .map(drop)
                    .map_err(|x| e(&x))
            }
            Op::RedisMulti(c) => {
                let mut p = redis::pipe();
                p.atomic();
                for j in 0..BATCH {
                    p.cmd("SET")
                        .arg(format!("bench:{worker}:{i}:{j}"))
                        .arg("v".repeat(VALUE_BYTES))
                        .arg("EX")
                        .arg(3600)
                        .ignore();
                }
                p.query_async::<()>(c).await.map_err(|x| e(&x))
            }
            Op::EtcdPut(c, lease) => {
                let opts = lease.map(|l| etcd_client::PutOptions::new().with_lease(l));
                c.put(format!("bench/{worker}/{i}"), "v".repeat(VALUE_BYTES), opts)
                    .await
                    .map(drop)
                    .map_err(|x| e(&x))
            }
            Op::EtcdRange(c, keys, serializable) => {
                let k = keys[pick(worker, i, keys.len())].clone();
                let opts = serializable.then(|| etcd_client::GetOptions::new().with_serializable());
                match c.get(k.clone(), opts).await {
                    Ok(r) if !r.kvs().is_empty() => Ok(()),
                    Ok(_) => Err(format!("{k} not found")),
                    Err(x) => Err(e(&x)),
                }
            }
            Op::RedisSetEx(c) => redis::cmd("SET")
                .arg(format!("bench:{worker}:{i}"))
                .arg("v".repeat(VALUE_BYTES))
                .arg("EX")
                .arg(3600)
                .query_async::<()>(c)
                .await
                .map_err(|x| e(&x)),
            Op::RedisGet(c, keys) => {
                let k = &keys[pick(worker, i, keys.len())];
                match redis::cmd("GET").arg(k).query_async::<Option<Vec<u8>>>(c).await {
                    Ok(Some(_)) => Ok(()),
                    Ok(None) => Err(format!("{k} not found")),
                    Err(x) => Err(e(&x)),
                }
            }
            Op::Cart(_, conns) => {
                let mut turn = (worker + i as usize) % conns.len();
                let mut next = || {
                    turn = (turn + 1) % conns.len();
                    conns[turn].clone()
                };
                let created = tool(&next(), "create_cart", json!({})).await?;
                let cart = created
                    .get("cart_id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("create_cart answered {created}"))?
                    .to_string();
                for j in 0..CART_ITEMS {
                    let rid = format!("w{worker}-{i}-{j}");
                    let args = json!({"cart_id": cart, "sku": format!("sku-{j}"), "quantity": 1, "request_id": rid});
                    tool(&next(), "add_item", args).await?;
                }
                tool(&next(), "get_cart", json!({"cart_id": cart})).await?;
                tool(&next(), "checkout", json!({"cart_id": cart})).await.map(drop)
            }
            Op::Fdatasync(f) => {
                let f = f.clone();
                tokio::task::spawn_blocking(move || {
                    use std::io::Write;
                    let mut w: &std::fs::File = &f;
                    w.write_all(&[b'x'; VALUE_BYTES])?;
                    f.sync_data()
                })
                .await
                .map_err(|x| e(&x))?
                .map_err(|x| e(&x))
            }
        }
    }
}

/// One MCP tool call; a tool error or a failed call is an error.
async fn tool(c: &McpClient, name: &str, args: Value) -> Result<Value, String> {
    match mcp::call(c, name, args).await {
        ToolOutcome::Ok(v) => Ok(v),
        ToolOutcome::ToolError(e) => Err(format!("{name}: {e}")),
        ToolOutcome::Failed(e) => Err(format!("{name} failed: {e}")),
    }
}

/// A spread of keys without a shared RNG: worker and step pick the key.
fn pick(worker: usize, i: u64, n: usize) -> usize {
    ((worker as u64).wrapping_mul(7919).wrapping_add(i.wrapping_mul(104_729)) % n as u64) as usize
}

/// Runs `op` with `concurrency` workers for the cell's length.
async fn measure(cell: Cell<'_>, op: Op, bar: &ProgressBar) -> Row {
    let Cell {
        round,
        system,
        name,
        concurrency,
        length,
        pids,
    } = cell;
    bar.set_message(format!("round {round}: {system} {name} x{concurrency}"));
    // Operations taken from the pool (Length::Ops), and operations ended.
    let taken = Arc::new(AtomicU64::new(0));
    let ended = Arc::new(AtomicU64::new(0));
    // Every worker prepares (connects), then all start together.
    let ready = Arc::new(tokio::sync::Barrier::new(concurrency + 1));
    let mut tasks = Vec::new();
    for w in 0..concurrency {
        let mut op = op.clone();
        let ready = ready.clone();
        let (taken, ended) = (taken.clone(), ended.clone());
        tasks.push(tokio::spawn(async move {
            let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("histogram bounds");
            let (mut errors, mut first_error) = (0u64, None);
            let prepared = op.prepare().await;
            ready.wait().await;
            if let Err(e) = prepared {
                return (h, 1, Some(e));
            }
            let began = Instant::now();
            let mut i = 0u64;
            loop {
                let more = match length {
                    Length::For(d) => began.elapsed() < d,
                    Length::Ops(n) => taken.fetch_add(1, Ordering::Relaxed) < n,
                };
                if !more {
                    break;
                }
                let t = Instant::now();
                match op.once(w, i).await {
                    Ok(()) => {
                        let _ = h.record((t.elapsed().as_micros() as u64).max(1));
                    }
                    Err(e) => {
                        errors += 1;
                        first_error.get_or_insert(e);
                    }
                }
                i += 1;
                if let Length::Ops(_) = length {
                    ended.fetch_add(1, Ordering::Relaxed);
                }
            }
            (h, errors, first_error)
        }));
    }
    ready.wait().await;
    let start = Instant::now();
    let (server_before, client_before) = (cpu::total_cpu(pids), cpu::own_cpu());
    // The bar moves by the cell's time, or by its operations ended; it is
    // set to the cell's end once every worker is done.
    let base = bar.position();
    let ticker = {
        let (bar, ended) = (bar.clone(), ended.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(200)).await;
                let now = match length {
                    Length::For(_) => start.elapsed().as_millis() as u64,
                    Length::Ops(_) => ended.load(Ordering::Relaxed),
                };
                bar.set_position(base + now.min(length.units()));
            }
        })
    };
    let mut all = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("histogram bounds");
    let (mut errors, mut first_error) = (0, None);
    for t in tasks {
        if let Ok((h, e, f)) = t.await {
            let _ = all.add(&h);
            errors += e;
            if first_error.is_none() {
                first_error = f;
            }
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let (server_after, client_after) = (cpu::total_cpu(pids), cpu::own_cpu());
    ticker.abort();
    let _ = ticker.await;
    bar.set_position(base + length.units());
    let ops = all.len();
    Row {
        round: Some(round),
        system: system.to_string(),
        op: name.to_string(),
        concurrency,
        ops,
        errors,
        seconds,
        throughput: ops as f64 / seconds,
        p50_us: all.value_at_quantile(0.5),
        p99_us: all.value_at_quantile(0.99),
        p999_us: all.value_at_quantile(0.999),
        server_cpu_us: cpu::per_op_us(server_before, server_after, ops),
        client_cpu_us: cpu::per_op_us(client_before, client_after, ops),
        first_error,
    }
}

/// What one measured cell is: whose operation, how many workers, how long
/// (or how many operations), and which processes are the system's servers
/// (for CPU per operation).
struct Cell<'a> {
    round: usize,
    system: &'a str,
    name: &'a str,
    concurrency: usize,
    length: Length,
    pids: &'a [u32],
}

/// The operations each system runs, in order.
fn plan(system: &str) -> Vec<&'static str> {
    match system {
        "handlestore" => vec!["mint", "get", "get_stale", "update", "batch_store", "cart_flow"],
        "cart-memory" => vec!["cart_flow"],
        "etcd" => vec!["put", "put_lease", "range", "range_serializable", "update", "txn_put10"],
        "redis" | "redis-fsync" => vec!["set_ex", "get", "multi_set10"],
        "fsync" => vec!["fdatasync"],
        _ => vec![],
    }
}

pub const SYSTEMS: [&str; 6] = ["fsync", "handlestore", "etcd", "redis", "redis-fsync", "cart-memory"];

/// Runs every system's operations at every concurrency, `cfg.rounds` times.
pub async fn run(cfg: &BenchConfig) -> Result<Vec<Row>> {
    anyhow::ensure!(cfg.rounds >= 1, "a run needs at least one round");
    for op in &cfg.ops {
        if !cfg.systems.iter().any(|s| plan(s).contains(&op.as_str())) {
            anyhow::bail!(
                "no selected system has an operation {op:?}; they have: {}",
                cfg.systems.iter().flat_map(|s| plan(s)).collect::<Vec<_>>().join(", ")
            );
        }
    }
    if cfg
        .systems
        .iter()
        .any(|s| ["etcd", "redis", "redis-fsync"].contains(&s.as_str()))
    {
        systems::ensure_installed()?;
    }
    let cells: u64 = cfg
        .systems
        .iter()
        .map(|s| {
            let per_op = if s == "fsync" { 1 } else { cfg.concurrency.len() };
            (plan(s).into_iter().filter(|op| cfg.wants(op)).count() * per_op) as u64
        })
        .sum();
    let bar = ProgressBar::new(cfg.rounds as u64 * cells * cfg.length.units());
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {percent:>3}% {msg}")
            .expect("progress template"),
    );
    let mut rows = Vec::new();
    for round in 1..=cfg.rounds {
        // A machine that drifts over a run favours the systems measured
        // in its better part: reversing the order every other round
        // spreads that over all of them.
        let mut order: Vec<&String> = cfg.systems.iter().collect();
        if round % 2 == 0 {
            order.reverse();
        }
        for system in order {
            run_system(cfg, round, system, &bar, &mut rows).await?;
        }
    }
    bar.finish_and_clear();
    Ok(rows)
}

/// Starts `system` afresh (its data under a directory of this round), runs
/// its operations at every concurrency, and stops it.
async fn run_system(
    cfg: &BenchConfig,
    round: usize,
    system: &str,
    bar: &ProgressBar,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let dir = if cfg.rounds > 1 {
        cfg.data_dir.join(format!("round-{round}")).join(system)
    } else {
        cfg.data_dir.join(system)
    };
    std::fs::create_dir_all(&dir)?;
    let mut keep = Vec::new();
    let mut pids = Vec::new();
    let ops = setup(system, &dir, &mut keep, &mut pids)
        .await
        .with_context(|| format!("starting {system}"))?;
    for (name, op) in ops.into_iter().filter(|(name, _)| cfg.wants(name)) {
        let levels: Vec<usize> = if system == "fsync" {
            vec![1]
        } else {
            cfg.concurrency.clone()
        };
        for c in levels {
            let cell = Cell {
                round,
                system,
                name,
                concurrency: c,
                length: cfg.length,
                pids: &pids,
            };
            let row = measure(cell, op.clone(), bar).await;
            let cpu = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0}"));
            let prefix = if cfg.rounds > 1 {
                format!("r{round} ")
            } else {
                String::new()
            };
            let line = format!(
                "{prefix}{:<12} {:<19} x{:<4} {:>9.0} ops/s  p50 {:>7} us  p99 {:>7} us  p999 {:>7} us  \
                 cpu/op server {:>5} us client {:>5} us  errors {}",
                row.system,
                row.op,
                row.concurrency,
                row.throughput,
                row.p50_us,
                row.p99_us,
                row.p999_us,
                cpu(row.server_cpu_us),
                cpu(row.client_cpu_us),
                row.errors
            );
            // Above the bar on a terminal; plain lines in a log.
            if bar.is_hidden() {
                println!("{line}");
            } else {
                bar.println(line);
            }
            rows.push(row);
        }
    }
    drop(keep);
    // The next system (or round) gets the disk without this one's files.
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// What keeps a system running until its rows are measured (dropping it
/// stops the system).
type Running = Box<dyn std::any::Any + Send>;

/// Starts `system`, returns its operations, and records the pids of its
/// server processes in `pids`.
async fn setup(
    system: &str,
    dir: &Path,
    keep: &mut Vec<Running>,
    pids: &mut Vec<u32>,
) -> Result<Vec<(&'static str, Op)>> {
    let value = "v".repeat(VALUE_BYTES);
    Ok(match system {
        "handlestore" => {
            let cluster = TestCluster::builder(3).dir_in(dir).start().await?;
            let client = Client::builder(cluster.endpoints()).namespace("bench").build()?;
            // Two stateless MCP replicas over the cluster.
            let mut carts = Vec::new();
            for _ in 0..2 {
                carts.push(CartServer::start(&cluster.endpoints(), dir).await?);
            }
            let cart_urls: Vec<String> = carts.iter().map(|c| format!("{}/mcp", c.url())).collect();
            pids.extend((1..=3).filter_map(|id| cluster.node(id).pid()));
            pids.extend(carts.iter().filter_map(CartServer::pid));
            keep.push(Box::new(carts));
            keep.push(Box::new(cluster));
            let store: Arc<ClusterHandleStore<Value>> = Arc::new(client.handle_store("bench").build());
            let mut keys = Vec::new();
            for _ in 0..PRELOAD {
                keys.push(store.mint(json!(value), Ttl::Never).await?);
            }
            let keys = Arc::new(keys);
            let stale = Arc::new(client.handle_store("bench").consistency(Consistency::Stale).build());
            vec![
                ("mint", Op::HsMint(store.clone())),
                ("get", Op::HsGet(store.clone(), keys.clone())),
                ("get_stale", Op::HsGet(stale, keys.clone())),
                ("update", Op::HsUpdate(store, keys)),
                ("batch_store", Op::HsBatch(client.state_tool())),
                ("cart_flow", Op::Cart(Arc::new(cart_urls), Vec::new())),
            ]
        }
        "cart-memory" => {
            // The baseline MCP servers use today: one replica, carts in its
            // own memory (gone on restart, invisible to other replicas).
            let server = CartServer::start_memory(dir).await?;
            let url = format!("{}/mcp", server.url());
            pids.extend(server.pid());
            keep.push(Box::new(server));
            vec![("cart_flow", Op::Cart(Arc::new(vec![url]), Vec::new()))]
        }
        "etcd" => {
            let etcd = Etcd::start(dir).await?;
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
            vec![
                ("put", Op::EtcdPut(c.clone(), None)),
                ("put_lease", Op::EtcdPut(c.clone(), Some(lease))),
                ("range", Op::EtcdRange(c.clone(), keys.clone(), false)),
                ("range_serializable", Op::EtcdRange(c.clone(), keys.clone(), true)),
                ("update", Op::EtcdUpdate(c.clone(), keys)),
                ("txn_put10", Op::EtcdTxn(c)),
            ]
        }
        "redis" | "redis-fsync" => {
            let mode = if system == "redis" {
                RedisMode::Shipped
            } else {
                RedisMode::FsyncAlways
            };
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
            vec![
                ("set_ex", Op::RedisSetEx(conn.clone())),
                ("get", Op::RedisGet(conn.clone(), Arc::new(keys))),
                ("multi_set10", Op::RedisMulti(conn)),
            ]
        }
        "fsync" => {
            let tmp = tempfile::tempdir_in(dir)?;
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(tmp.path().join("floor"))?;
            keep.push(Box::new(tmp));
            vec![("fdatasync", Op::Fdatasync(Arc::new(f)))]
        }
        other => anyhow::bail!("unknown system {other:?}; known: {}", SYSTEMS.join(", ")),
    })
}

/// A target stated as a ratio between two cells of one run.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    pub name: String,
    /// The ratio; over several rounds, the median of each round's ratio.
    pub value: Option<f64>,
    pub goal: String,
    /// Whether `value` meets the goal (none for a ratio only reported).
    pub met: Option<bool>,
    /// Over several rounds: each round's ratio, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_round: Vec<Option<f64>>,
    /// Over several rounds: in how many of them the ratio met the goal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub met_in_rounds: Option<usize>,
}

impl Target {
    /// The target as the bench prints it: name, value, goal, verdict, and
    /// over several rounds each round's ratio and how many met the goal.
    pub fn line(&self) -> String {
        let ratio = |v: Option<f64>| v.map_or_else(|| "n/a".to_string(), |v| format!("{v:.2}"));
        let met = match self.met {
            Some(true) => "met",
            Some(false) => "MISSED",
            None => "",
        };
        // Nothing to show for a target whose cells were not measured.
        let rounds = if self.per_round.iter().all(Option::is_none) {
            String::new()
        } else {
            let each: Vec<String> = self.per_round.iter().map(|v| ratio(*v)).collect();
            let met_in = self
                .met_in_rounds
                .map(|k| format!(", met in {k} of {}", self.per_round.len()))
                .unwrap_or_default();
            format!("  [rounds: {}{met_in}]", each.join(" "))
        };
        format!(
            "{:<58} {:>8}  (goal {}) {met}{rounds}",
            self.name,
            ratio(self.value),
            self.goal
        )
    }
}

/// The rounds present in `rows`, in order.
fn rounds(rows: &[Row]) -> Vec<Option<usize>> {
    let mut seen = Vec::new();
    for r in rows {
        if !seen.contains(&r.round) {
            seen.push(r.round);
        }
    }
    seen
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Over several rounds, one row per cell (in the order the cells first
/// ran) whose every measure is the median of that cell's rounds; errors
/// and operations are the sums. Rows of one round come back as they are.
pub fn medians(rows: &[Row]) -> Vec<Row> {
    if rounds(rows).len() <= 1 {
        return rows.to_vec();
    }
    let same_cell = |a: &Row, b: &Row| a.system == b.system && a.op == b.op && a.concurrency == b.concurrency;
    let mut out: Vec<Row> = Vec::new();
    for r in rows {
        if out.iter().any(|o| same_cell(o, r)) {
            continue;
        }
        let same: Vec<&Row> = rows.iter().filter(|o| same_cell(o, r)).collect();
        let m = |f: &dyn Fn(&Row) -> f64| median(same.iter().map(|r| f(r)).collect()).unwrap_or(0.0);
        let m_opt = |f: &dyn Fn(&Row) -> Option<f64>| median(same.iter().filter_map(|r| f(r)).collect());
        out.push(Row {
            round: None,
            system: r.system.clone(),
            op: r.op.clone(),
            concurrency: r.concurrency,
            ops: same.iter().map(|r| r.ops).sum(),
            errors: same.iter().map(|r| r.errors).sum(),
            seconds: same.iter().map(|r| r.seconds).sum(),
            throughput: m(&|r| r.throughput),
            p50_us: m(&|r| r.p50_us as f64).round() as u64,
            p99_us: m(&|r| r.p99_us as f64).round() as u64,
            p999_us: m(&|r| r.p999_us as f64).round() as u64,
            server_cpu_us: m_opt(&|r| r.server_cpu_us),
            client_cpu_us: m_opt(&|r| r.client_cpu_us),
            first_error: same.iter().find_map(|r| r.first_error.clone()),
        });
    }
    out
}

fn cell<'a>(rows: &'a [Row], system: &str, op: &str, c: usize) -> Option<&'a Row> {
    rows.iter()
        .find(|r| r.system == system && r.op == op && r.concurrency == c)
}

/// The targets of docs/performance.md. Each ratio compares cells of one
/// round; over several rounds, a target's value is the median of its
/// rounds' ratios, and it says in how many rounds it was met.
pub fn targets(rows: &[Row]) -> Vec<Target> {
    let rounds = rounds(rows);
    if rounds.len() <= 1 {
        return round_targets(rows);
    }
    let each: Vec<Vec<Target>> = rounds
        .iter()
        .map(|n| {
            let of_round: Vec<Row> = rows.iter().filter(|r| r.round == *n).cloned().collect();
            round_targets(&of_round)
        })
        .collect();
    let mut out = round_targets(&[]);
    for (i, t) in out.iter_mut().enumerate() {
        t.per_round = each.iter().map(|ts| ts[i].value).collect();
        t.value = median(t.per_round.iter().flatten().copied().collect());
        t.met = t.value.and_then(|v| goal_met(&t.goal, v));
        if t.met.is_some() {
            t.met_in_rounds = Some(each.iter().filter(|ts| ts[i].met == Some(true)).count());
        }
    }
    out
}

/// Whether `v` meets a goal written as ">= x" or "<= x".
fn goal_met(goal: &str, v: f64) -> Option<bool> {
    if let Some(x) = goal.strip_prefix(">= ") {
        return x.parse::<f64>().ok().map(|x| v >= x);
    }
    if let Some(x) = goal.strip_prefix("<= ") {
        return x.parse::<f64>().ok().map(|x| v <= x);
    }
    None
}

/// The targets computed from one round's rows.
fn round_targets(rows: &[Row]) -> Vec<Target> {
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    let tp = |s, o, c| cell(rows, s, o, c).map(|r| r.throughput);
    let p99 = |s, o, c| cell(rows, s, o, c).map(|r| r.p99_us as f64);
    let p50 = |s, o, c| cell(rows, s, o, c).map(|r| r.p50_us as f64);
    let cpu = |s, o, c| cell(rows, s, o, c).and_then(|r| r.server_cpu_us);
    let target = |name: &str, v: Option<f64>, goal: String| Target {
        name: name.into(),
        value: v,
        met: v.and_then(|v| goal_met(&goal, v)),
        goal,
        per_round: Vec::new(),
        met_in_rounds: None,
    };
    let at_least = |name: &str, v: Option<f64>, goal: f64| target(name, v, format!(">= {goal}"));
    let at_most = |name: &str, v: Option<f64>, goal: f64| target(name, v, format!("<= {goal}"));
    let reported = |name: &str, v: Option<f64>| target(name, v, "reported".into());
    vec![
        at_least(
            "mint x64 throughput / etcd put x64",
            ratio(tp("handlestore", "mint", 64), tp("etcd", "put", 64)),
            2.0,
        ),
        // Steadier than throughput on a shared machine: what one write costs
        // the servers, all members together.
        reported(
            "server CPU per mint x64 / etcd server CPU per put x64 (reported)",
            ratio(cpu("handlestore", "mint", 64), cpu("etcd", "put", 64)),
        ),
        reported(
            "mint x64 throughput / etcd put_lease x64 (reported)",
            ratio(tp("handlestore", "mint", 64), tp("etcd", "put_lease", 64)),
        ),
        at_least(
            "linearizable get x64 / etcd range x64",
            ratio(tp("handlestore", "get", 64), tp("etcd", "range", 64)),
            2.0,
        ),
        at_most(
            "mint p99 x64 / etcd put p99 x64",
            ratio(p99("handlestore", "mint", 64), p99("etcd", "put", 64)),
            0.5,
        ),
        at_most(
            "mint p50 x1 / one fdatasync p50",
            ratio(p50("handlestore", "mint", 1), p50("fsync", "fdatasync", 1)),
            3.0,
        ),
        // What the target above is measured against on this machine. A
        // replicated write needs at least what a linearizable read needs (a
        // client round trip and one quorum round) plus the fsync inside that
        // round; on a transport where that sum is above 3 fdatasyncs the
        // target cannot be met, whatever the write path does.
        reported(
            "floor: (linearizable get p50 x1 + fdatasync p50) / fdatasync p50 (reported)",
            ratio(
                p50("handlestore", "get", 1)
                    .zip(p50("fsync", "fdatasync", 1))
                    .map(|(g, f)| g + f),
                p50("fsync", "fdatasync", 1),
            ),
        ),
        reported(
            "etcd put p50 x1 / one fdatasync p50 (reported)",
            ratio(p50("etcd", "put", 1), p50("fsync", "fdatasync", 1)),
        ),
        reported(
            "cart_flow x64 / in-memory cart_server cart_flow x64 (reported)",
            ratio(tp("handlestore", "cart_flow", 64), tp("cart-memory", "cart_flow", 64)),
        ),
        at_least(
            "stretch: mint x64 / redis appendfsync-always set_ex x64",
            ratio(tp("handlestore", "mint", 64), tp("redis-fsync", "set_ex", 64)),
            1.0,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(system: &str, op: &str, concurrency: usize, p50_us: u64, throughput: f64) -> Row {
        Row {
            round: None,
            system: system.into(),
            op: op.into(),
            concurrency,
            ops: 1,
            errors: 0,
            seconds: 1.0,
            throughput,
            p50_us,
            p99_us: p50_us,
            p999_us: p50_us,
            server_cpu_us: None,
            client_cpu_us: None,
            first_error: None,
        }
    }

    fn value(targets: &[Target], prefix: &str) -> Option<f64> {
        targets
            .iter()
            .find(|t| t.name.starts_with(prefix))
            .unwrap_or_else(|| panic!("no target {prefix}"))
            .value
    }

    #[test]
    fn single_client_targets_are_ratios_to_one_fdatasync() {
        let rows = vec![
            row("fsync", "fdatasync", 1, 200, 5000.0),
            row("handlestore", "mint", 1, 1000, 900.0),
            row("handlestore", "get", 1, 500, 2000.0),
            row("etcd", "put", 1, 1200, 800.0),
        ];
        let t = targets(&rows);
        assert_eq!(value(&t, "mint p50 x1"), Some(5.0));
        // (500 + 200) / 200
        assert_eq!(value(&t, "floor:"), Some(3.5));
        assert_eq!(value(&t, "etcd put p50 x1"), Some(6.0));
        assert!(
            !t.iter()
                .find(|t| t.name.starts_with("mint p50 x1"))
                .unwrap()
                .met
                .unwrap()
        );
    }

    #[test]
    fn targets_without_their_cells_have_no_value() {
        let t = targets(&[row("handlestore", "get", 1, 500, 2000.0)]);
        assert!(t.iter().all(|t| t.value.is_none()), "{t:#?}");
    }

    fn in_round(round: usize, mut r: Row) -> Row {
        r.round = Some(round);
        r
    }

    #[test]
    fn over_rounds_a_target_is_the_median_of_each_rounds_ratio() {
        // Round 1: 2.5x, round 2: 1.5x, round 3: 2.2x. The ratio of the
        // medians (mint 3000 over put 1250) would be 2.4: not what is asked.
        let mut rows = Vec::new();
        for (n, mint, put) in [(1, 2500.0, 1000.0), (2, 3000.0, 2000.0), (3, 3300.0, 1500.0)] {
            rows.push(in_round(n, row("handlestore", "mint", 64, 100, mint)));
            rows.push(in_round(n, row("etcd", "put", 64, 100, put)));
        }
        let t = targets(&rows);
        let tp = t
            .iter()
            .find(|t| t.name.starts_with("mint x64 throughput / etcd put x64"))
            .unwrap();
        assert_eq!(tp.per_round, vec![Some(2.5), Some(1.5), Some(2.2)]);
        assert_eq!(tp.value, Some(2.2));
        assert_eq!((tp.met, tp.met_in_rounds), (Some(true), Some(2)));
        assert!(
            tp.line()
                .ends_with("2.20  (goal >= 2) met  [rounds: 2.50 1.50 2.20, met in 2 of 3]"),
            "{}",
            tp.line()
        );
        // A target only reported says nothing about rounds met.
        let lease = t.iter().find(|t| t.name.contains("put_lease")).unwrap();
        assert_eq!((lease.value, lease.met, lease.met_in_rounds), (None, None, None));
        // Its cells were not measured: no list of rounds beside it.
        assert!(lease.line().ends_with("n/a  (goal reported) "), "{}", lease.line());
        // One round: as before, no per-round fields.
        let one = targets(&rows[..2]);
        let tp = &one[0];
        assert_eq!((tp.value, tp.met, tp.met_in_rounds), (Some(2.5), Some(true), None));
        assert!(tp.per_round.is_empty());
        assert!(tp.line().ends_with("2.50  (goal >= 2) met"), "{}", tp.line());
    }

    #[test]
    fn medians_give_one_row_per_cell_in_the_order_cells_first_ran() {
        let mut rows = Vec::new();
        for (n, a, b) in [(1, 10.0, 40.0), (2, 30.0, 10.0), (3, 20.0, 30.0), (4, 50.0, 20.0)] {
            let mut x = in_round(n, row("redis", "get", 1, n as u64 * 100, a));
            x.errors = 1;
            rows.push(x);
            rows.push(in_round(n, row("fsync", "fdatasync", 1, 7, b)));
        }
        let m = medians(&rows);
        let cells: Vec<(&str, Option<usize>)> = m.iter().map(|r| (r.system.as_str(), r.round)).collect();
        assert_eq!(cells, vec![("redis", None), ("fsync", None)]);
        // Four rounds: the mean of the two middle values.
        assert_eq!(m[0].throughput, 25.0);
        assert_eq!(m[1].throughput, 25.0);
        assert_eq!(m[0].p50_us, 250);
        assert_eq!((m[0].ops, m[0].errors), (4, 4));
        // One round: the rows as they are.
        assert_eq!(medians(&rows[..2]).len(), 2);
        assert_eq!(medians(&rows[..2])[0].round, Some(1));
    }
}

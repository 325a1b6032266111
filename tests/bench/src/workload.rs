//! The operations each system runs: one function per operation, each one
//! call as a client of that system makes it, with its error as text.

use std::fmt::Display;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::kv;
use handlestore_client::{ClusterHandleStore, ClusterStateTool, HandleStore, StateTool, StoreItem, Ttl};
use redis::aio::MultiplexedConnection;
use serde_json::{Value, json};

use super::VALUE_BYTES;
use handlestore_tests::mcp::{self, McpClient, ToolOutcome};

/// Keys per atomic batch.
const BATCH: usize = 10;
/// Items added in one cart flow.
const CART_ITEMS: usize = 3;

/// Handle stores of one or more clients (each its own connections, as
/// MCP server replicas each hold one); worker `w` uses client `w % len`.
pub(super) type Stores = Arc<Vec<Arc<ClusterHandleStore<Value>>>>;

/// One operation, with what each worker needs to run it.
#[derive(Clone)]
pub(super) enum Op {
    HsMint(Stores),
    HsGet(Stores, Arc<Vec<String>>),
    HsUpdate(Arc<ClusterHandleStore<Value>>, Arc<Vec<String>>),
    HsBatch(ClusterStateTool),
    EtcdUpdate(etcd_client::Client, Arc<Vec<String>>),
    EtcdTxn(etcd_client::Client),
    RedisMulti(MultiplexedConnection),
    EtcdPut(etcd_client::Client, Option<i64>),
    EtcdRange(etcd_client::Client, Arc<Vec<String>>, bool),
    RedisSetEx(MultiplexedConnection),
    RedisGet(MultiplexedConnection, Arc<Vec<String>>),
    /// NATS KV: put, create with a per-key TTL, get (answered by the
    /// stream's leader), update by revision.
    NatsPut(kv::Store),
    NatsCreateTtl(kv::Store),
    NatsGet(kv::Store, Arc<Vec<String>>),
    NatsUpdate(kv::Store, Arc<Vec<String>>),
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

/// A key no create has used in this process (a create-only write
/// refuses a key that exists, and every cell of a system shares its bucket).
fn fresh_key() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!("t{}", NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}

/// VALUE_BYTES bytes, as etcd's and Redis' values.
fn value_bytes() -> bytes::Bytes {
    bytes::Bytes::from("v".repeat(VALUE_BYTES))
}

fn err(e: impl Display) -> String {
    e.to_string()
}

impl Op {
    /// Per-worker setup that is not measured (connections).
    pub(super) async fn prepare(&mut self) -> Result<(), String> {
        if let Op::Cart(urls, conns) = self {
            for url in urls.iter() {
                conns.push(Arc::new(mcp::connect(url).await.map_err(|e| format!("{e:#}"))?));
            }
        }
        Ok(())
    }

    /// The operation once, as step `i` of `worker`.
    pub(super) async fn once(&mut self, worker: usize, i: u64) -> Result<(), String> {
        match self {
            Op::HsMint(s) => s[worker % s.len()]
                .mint(value(), Ttl::After(Duration::from_secs(3600)))
                .await
                .map(drop)
                .map_err(err),
            Op::HsGet(s, keys) => hs_get(&s[worker % s.len()], &keys[pick(worker, i, keys.len())]).await,
            Op::HsUpdate(s, keys) => hs_update(s, &keys[pick(worker, i, keys.len())]).await,
            Op::HsBatch(tool) => hs_batch(tool, worker, i).await,
            Op::EtcdUpdate(c, keys) => etcd_update(c, keys[pick(worker, i, keys.len())].clone()).await,
            Op::EtcdTxn(c) => etcd_txn(c, worker, i).await,
            Op::RedisMulti(c) => redis_multi(c, worker, i).await,
            Op::EtcdPut(c, lease) => etcd_put(c, *lease, worker, i).await,
            Op::EtcdRange(c, keys, serializable) => {
                etcd_range(c, keys[pick(worker, i, keys.len())].clone(), *serializable).await
            }
            Op::RedisSetEx(c) => redis_set_ex(c, worker, i).await,
            Op::RedisGet(c, keys) => redis_get(c, &keys[pick(worker, i, keys.len())]).await,
            Op::NatsPut(kv) => kv
                .put(format!("w{worker}-{i}"), value_bytes())
                .await
                .map(drop)
                .map_err(err),
            Op::NatsCreateTtl(kv) => kv
                .create_with_ttl(fresh_key(), value_bytes(), Duration::from_secs(3600))
                .await
                .map(drop)
                .map_err(err),
            Op::NatsGet(kv, keys) => nats_get(kv, &keys[pick(worker, i, keys.len())]).await,
            Op::NatsUpdate(kv, keys) => nats_update(kv, &keys[pick(worker, i, keys.len())]).await,
            Op::Cart(_, conns) => cart_flow(conns, worker, i).await,
            Op::Fdatasync(f) => fdatasync(f).await,
        }
    }
}

async fn hs_get(s: &ClusterHandleStore<Value>, k: &str) -> Result<(), String> {
    match s.get(k).await {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(format!("{k} not found")),
        Err(x) => Err(err(x)),
    }
}

async fn hs_update(s: &ClusterHandleStore<Value>, k: &str) -> Result<(), String> {
    let v = value();
    match s.update(k, &mut |cur: &mut Value| *cur = v.clone()).await {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(format!("{k} not found")),
        Err(x) => Err(err(x)),
    }
}

async fn hs_batch(tool: &ClusterStateTool, worker: usize, i: u64) -> Result<(), String> {
    let items = (0..BATCH)
        .map(|j| StoreItem::new(format!("bench/{worker}/{i}/{j}"), value()))
        .collect();
    tool.batch_store(items).await.map(drop).map_err(err)
}

/// Read, then write only if unchanged; again on a conflict. As the client
/// crate's update: the first read is serializable (etcd's stale read), the
/// ones after a conflict or a miss linearizable.
async fn etcd_update(c: &mut etcd_client::Client, k: String) -> Result<(), String> {
    let mut serializable = true;
    loop {
        let opts = serializable.then(|| etcd_client::GetOptions::new().with_serializable());
        let got = c.get(k.clone(), opts).await.map_err(err)?;
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
        if c.txn(txn).await.map_err(err)?.succeeded() {
            return Ok(());
        }
    }
}

async fn etcd_txn(c: &mut etcd_client::Client, worker: usize, i: u64) -> Result<(), String> {
    let puts: Vec<etcd_client::TxnOp> = (0..BATCH)
        .map(|j| etcd_client::TxnOp::put(format!("bench/{worker}/{i}/{j}"), "v".repeat(VALUE_BYTES), None))
        .collect();
    c.txn(etcd_client::Txn::new().and_then(puts))
        .await
        .map(drop)
        .map_err(err)
}

async fn etcd_put(c: &mut etcd_client::Client, lease: Option<i64>, worker: usize, i: u64) -> Result<(), String> {
    let opts = lease.map(|l| etcd_client::PutOptions::new().with_lease(l));
    c.put(format!("bench/{worker}/{i}"), "v".repeat(VALUE_BYTES), opts)
        .await
        .map(drop)
        .map_err(err)
}

async fn etcd_range(c: &mut etcd_client::Client, k: String, serializable: bool) -> Result<(), String> {
    let opts = serializable.then(|| etcd_client::GetOptions::new().with_serializable());
    match c.get(k.clone(), opts).await {
        Ok(r) if !r.kvs().is_empty() => Ok(()),
        Ok(_) => Err(format!("{k} not found")),
        Err(x) => Err(err(x)),
    }
}

async fn redis_multi(c: &mut MultiplexedConnection, worker: usize, i: u64) -> Result<(), String> {
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
    p.query_async::<()>(c).await.map_err(err)
}

async fn redis_set_ex(c: &mut MultiplexedConnection, worker: usize, i: u64) -> Result<(), String> {
    redis::cmd("SET")
        .arg(format!("bench:{worker}:{i}"))
        .arg("v".repeat(VALUE_BYTES))
        .arg("EX")
        .arg(3600)
        .query_async::<()>(c)
        .await
        .map_err(err)
}

async fn redis_get(c: &mut MultiplexedConnection, k: &str) -> Result<(), String> {
    match redis::cmd("GET").arg(k).query_async::<Option<Vec<u8>>>(c).await {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(format!("{k} not found")),
        Err(x) => Err(err(x)),
    }
}

async fn nats_get(kv: &kv::Store, k: &str) -> Result<(), String> {
    match kv.get(k).await {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(format!("{k} not found")),
        Err(x) => Err(err(x)),
    }
}

/// Read the entry, then write only if its revision is still the last;
/// again on a conflict (as etcd's update).
async fn nats_update(kv: &kv::Store, k: &str) -> Result<(), String> {
    loop {
        let entry = kv
            .entry(k)
            .await
            .map_err(err)?
            .ok_or_else(|| format!("{k} not found"))?;
        match kv.update(k, value_bytes(), entry.revision).await {
            Ok(_) => return Ok(()),
            Err(e) if lost_the_race(&e) => continue,
            Err(e) => return Err(err(e)),
        }
    }
}

/// Whether an update failed because another wrote the key first. NATS
/// 2.12 and later answer with error code 10164 (the "constant" wrong last
/// sequence), which async-nats 0.51 knows only as 10071, so its kind says
/// `Other`; both say "wrong last sequence".
fn lost_the_race(e: &kv::UpdateError) -> bool {
    e.kind() == kv::UpdateErrorKind::WrongLastRevision || e.to_string().contains("wrong last sequence")
}

/// One cart flow, each call to the next of `conns` in turn.
async fn cart_flow(conns: &[Arc<McpClient>], worker: usize, i: u64) -> Result<(), String> {
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

/// VALUE_BYTES appended to the file and synced, off the async threads.
async fn fdatasync(f: &Arc<std::fs::File>) -> Result<(), String> {
    let f = f.clone();
    tokio::task::spawn_blocking(move || {
        use std::io::Write;
        let mut w: &std::fs::File = &f;
        w.write_all(&[b'x'; VALUE_BYTES])?;
        f.sync_data()
    })
    .await
    .map_err(err)?
    .map_err(err)
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

//! The scale run: a 3-node cluster holding a million live handles.
//!
//! target/release/scale \
//!     [--handles 1000000] [--concurrency 256] [--out target/scale]
//!
//! Mints `--handles` handles (256-byte values, 24-hour TTL) and samples each
//! node's resident memory and disk use as they pile up; then measures the
//! restart of a follower killed with SIGKILL (until it has applied what the
//! leader had) and a new member catching up by snapshot after every node
//! compacted its log; then checks the new member holds every handle.
//! Writes results.json to --out and prints a summary.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;
use handlestore_bench::mem::rss_mib;
use handlestore_client::{ClusterHandleStore, Consistency, HandleStore, Ttl};
use handlestore_proto::v1 as pb;
use handlestore_tests::{TestCluster, retry_unavailable};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use serde_json::{Value, json};

#[derive(Parser, Debug)]
#[command(about = "A million live handles on a 3-node cluster: memory, disk, restart and catch-up")]
struct Args {
    /// Live handles to mint.
    #[arg(long, default_value_t = 1_000_000)]
    handles: u64,
    /// Concurrent minting clients.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..))]
    concurrency: u64,
    /// Memory and disk samples taken while loading.
    #[arg(long, default_value_t = 10)]
    samples: u64,
    /// Extra flags for every node, e.g. --node-arg=--block-cache-mb=16.
    #[arg(long = "node-arg", allow_hyphen_values = true)]
    node_args: Vec<String>,
    /// Where results.json goes.
    #[arg(long, default_value = "target/scale")]
    out: PathBuf,
}

/// One node at one point of the run.
#[derive(Debug, Clone, Serialize)]
struct NodeSample {
    node: u64,
    rss_mib: f64,
    disk_mib: f64,
    /// Where the node says its memory is (Admin.Status), if it answered.
    memory: Option<MemoryMib>,
}

/// A node's own account of its memory, in MiB (see pb::Memory).
#[derive(Debug, Clone, Serialize)]
struct MemoryMib {
    memtables: f64,
    block_cache: f64,
    block_cache_pinned: f64,
    table_readers: f64,
    log_cache: f64,
    /// The resident set beyond all of the above (the node's own reading).
    other: f64,
}

impl MemoryMib {
    fn from_pb(m: &pb::Memory) -> Self {
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        let known = m.memtables + m.block_cache + m.table_readers + m.log_cache;
        Self {
            memtables: mib(m.memtables),
            block_cache: mib(m.block_cache),
            block_cache_pinned: mib(m.block_cache_pinned),
            table_readers: mib(m.table_readers),
            log_cache: mib(m.log_cache),
            other: mib(m.rss.saturating_sub(known)),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
struct Sample {
    handles: u64,
    nodes: Vec<NodeSample>,
}

/// Bytes allocated on disk under `dir` (what du counts).
fn disk_bytes(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => disk_bytes(&e.path()),
            Ok(m) => m.blocks() * 512,
            Err(_) => 0,
        })
        .sum()
}

async fn sample(cluster: &TestCluster, handles: u64) -> Sample {
    let mut nodes = Vec::new();
    for n in &cluster.nodes {
        let Some(rss_mib) = n.pid().and_then(rss_mib) else {
            continue;
        };
        let memory = match cluster.status(n.id).await {
            Ok(s) => s.memory.as_ref().map(MemoryMib::from_pb),
            Err(_) => None,
        };
        nodes.push(NodeSample {
            node: n.id,
            rss_mib,
            disk_mib: disk_bytes(&n.data) as f64 / (1 << 20) as f64,
            memory,
        });
    }
    Sample { handles, nodes }
}

fn describe(s: &Sample) -> String {
    let parts: Vec<String> = s
        .nodes
        .iter()
        .map(|n| {
            let memory = match &n.memory {
                Some(m) => format!(
                    " (mem {:.0} cache {:.0} log {:.0} other {:.0})",
                    m.memtables, m.block_cache, m.log_cache, m.other
                ),
                None => String::new(),
            };
            format!(
                "n{} rss {:.0} MiB{memory} disk {:.0} MiB",
                n.node, n.rss_mib, n.disk_mib
            )
        })
        .collect();
    format!("{:>9} handles: {}", s.handles, parts.join(" | "))
}

/// Mints `n` handles with `concurrency` clients; returns the ids of a
/// spread-out sample of them, for checking later.
async fn load(
    cluster: &TestCluster,
    store: Arc<ClusterHandleStore<Value>>,
    n: u64,
    concurrency: u64,
    samples: u64,
    taken: &mut Vec<Sample>,
) -> Result<(Vec<(String, Value)>, f64)> {
    let bar = ProgressBar::new(n);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} {per_sec} eta {eta}")
            .context("progress template")?,
    );
    let next = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (store, next, bar) = (store.clone(), next.clone(), bar.clone());
        tasks.push(tokio::spawn(async move {
            let mut kept = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return Ok::<_, anyhow::Error>(kept);
                }
                let v = json!({"i": i, "pad": "p".repeat(230)});
                // A refused write (a leader change) is retried; the client
                // makes the retry exactly-once.
                let mut tries = 0;
                let id = loop {
                    match store.mint(v.clone(), Ttl::After(Duration::from_secs(24 * 3600))).await {
                        Ok(id) => break id,
                        Err(e) if tries < 20 => {
                            tries += 1;
                            tracing::debug!("mint {i}: {e}; retrying");
                            tokio::time::sleep(Duration::from_millis(200)).await;
                        }
                        Err(e) => return Err(anyhow::anyhow!("mint {i}: {e}")),
                    }
                };
                if i % 997 == 0 {
                    kept.push((id, v));
                }
                bar.inc(1);
            }
        }));
    }
    // Sample while loading.
    let every = (n / samples.max(1)).max(1);
    let mut mark = every;
    while tasks.iter().any(|t| !t.is_finished()) {
        tokio::time::sleep(Duration::from_millis(200)).await;
        if bar.position() >= mark {
            let s = sample(cluster, bar.position()).await;
            if bar.is_hidden() {
                println!("{}", describe(&s));
            } else {
                bar.println(describe(&s));
            }
            taken.push(s);
            mark += every;
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let mut kept = Vec::new();
    for t in tasks {
        kept.extend(t.await??);
    }
    Ok((kept, n as f64 / seconds))
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    std::fs::create_dir_all(&args.out)?;
    println!(
        "scale: {} handles, {} clients, 3 nodes (flags: {})",
        args.handles,
        args.concurrency,
        if args.node_args.is_empty() {
            "defaults".to_string()
        } else {
            args.node_args.join(" ")
        }
    );
    let mut cluster = TestCluster::builder(3).args(args.node_args.clone()).start().await?;
    let client = handlestore_client::Client::builder(cluster.endpoints())
        .namespace("scale")
        .build()?;
    let store: Arc<ClusterHandleStore<Value>> = Arc::new(client.handle_store("scale").build());
    let mut samples = vec![sample(&cluster, 0).await];
    println!("{}", describe(&samples[0]));

    let (kept, mint_rate) = load(
        &cluster,
        store.clone(),
        args.handles,
        args.concurrency,
        args.samples,
        &mut samples,
    )
    .await?;
    let count = store.len_with(Consistency::Linearizable).await?;
    if count != args.handles {
        bail!("the store holds {count} handles, expected {}", args.handles);
    }
    println!("loaded {count} handles at {mint_rate:.0} mints/s");
    let loaded = sample(&cluster, count).await;
    println!("{}", describe(&loaded));

    let (snapshot_seconds, snapshot_bytes) = compact_every_node(&cluster).await?;
    let compacted = sample(&cluster, count).await;
    println!("{}", describe(&compacted));

    let leader = cluster.wait_leader(Duration::from_secs(30)).await?;
    let (follower, restart_seconds) = restart_a_follower(&mut cluster, leader).await?;
    let restarted = sample(&cluster, count).await;
    println!("follower {follower} restarted and caught up in {restart_seconds:.2}s");
    println!("{}", describe(&restarted));

    let (new, catch_up_seconds, by_snapshot) = add_a_member(&mut cluster, leader).await?;
    println!("new member {new} caught up by snapshot in {catch_up_seconds:.1}s");
    let joined = sample(&cluster, count).await;
    println!("{}", describe(&joined));

    let held = check_the_new_member(&cluster, new, count, &kept).await?;
    println!("node {new} holds all {held} handles; {} sampled ones match", kept.len());

    let report = json!({
        "handles": count,
        "concurrency": args.concurrency,
        "node_args": args.node_args,
        "mint_per_second": mint_rate,
        "loading": samples,
        "loaded": loaded,
        "compacted": compacted,
        "snapshot_seconds": snapshot_seconds,
        "snapshot_mib": snapshot_bytes as f64 / (1 << 20) as f64,
        "restart": {"node": follower, "seconds": restart_seconds, "after": restarted},
        "new_member": {"node": new, "seconds": catch_up_seconds, "by_snapshot": by_snapshot, "after": joined},
        "machine": {"cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)},
    });
    let path = args.out.join("results.json");
    std::fs::write(&path, serde_json::to_string_pretty(&report)?)?;
    println!("wrote {}", path.display());
    Ok(())
}

/// Compacts every node: each builds a snapshot and purges its log, so a new
/// member can only catch up by snapshot. Returns how long each took, and
/// the largest snapshot's size in bytes.
async fn compact_every_node(cluster: &TestCluster) -> Result<(Vec<f64>, u64)> {
    let mut snapshot_seconds = Vec::new();
    let mut snapshot_bytes = 0;
    for id in 1..=3 {
        let mut adm = pb::admin_client::AdminClient::connect(cluster.node(id).endpoint()).await?;
        let t = Instant::now();
        let r = adm.snapshot(pb::SnapshotRequest {}).await?.into_inner();
        snapshot_seconds.push(t.elapsed().as_secs_f64());
        snapshot_bytes = snapshot_bytes.max(disk_bytes(&cluster.node(id).data.join("snapshots")));
        println!(
            "node {id}: snapshot at index {} in {:.1}s (log purged to {})",
            r.snapshot_index,
            t.elapsed().as_secs_f64(),
            r.purged_index
        );
    }
    Ok((snapshot_seconds, snapshot_bytes))
}

/// Kills a follower with SIGKILL and restarts it; returns which, and the
/// seconds until it had applied what the leader had when it died.
async fn restart_a_follower(cluster: &mut TestCluster, leader: u64) -> Result<(u64, f64)> {
    let follower = (1..=3).find(|id| *id != leader).context("a follower")?;
    cluster.kill(follower);
    let target = cluster.status(leader).await?.applied_index;
    let t = Instant::now();
    cluster.restart(follower)?;
    cluster.wait_applied(follower, target, Duration::from_secs(600)).await?;
    Ok((follower, t.elapsed().as_secs_f64()))
}

/// Adds a new member as a learner; returns its id, the seconds until it had
/// applied what the leader had, and that it caught up by snapshot (an error
/// if it did not).
async fn add_a_member(cluster: &mut TestCluster, leader: u64) -> Result<(u64, f64, bool)> {
    let new = cluster.spawn_extra()?;
    let add = pb::AddLearnerRequest {
        id: new,
        addr: cluster.node(new).addr.clone(),
        peer_addr: cluster.node(new).peer_addr.clone(),
        blocking: false,
    };
    let target = cluster.status(leader).await?.applied_index;
    let t = Instant::now();
    retry_unavailable(|| {
        let (c, req) = (&*cluster, add.clone());
        async move { c.leader_admin().await?.add_learner(req).await }
    })
    .await?;
    cluster.wait_applied(new, target, Duration::from_secs(1800)).await?;
    let catch_up_seconds = t.elapsed().as_secs_f64();
    let by_snapshot = cluster.log(new).contains("installed snapshot");
    if !by_snapshot {
        bail!("node {new} caught up without a snapshot; the log was not purged");
    }
    Ok((new, catch_up_seconds, by_snapshot))
}

/// Checks that node `new` holds all `count` handles, and the sampled ones
/// as they were written; returns how many it holds.
async fn check_the_new_member(cluster: &TestCluster, new: u64, count: u64, kept: &[(String, Value)]) -> Result<u64> {
    let on_new: ClusterHandleStore<Value> = handlestore_client::Client::builder([cluster.node(new).endpoint()])
        .namespace("scale")
        .build()?
        .handle_store("scale")
        .build();
    let held = on_new.len_with(Consistency::Stale).await?;
    if held != count {
        bail!("node {new} holds {held} handles, expected {count}");
    }
    for (id, v) in kept {
        let got = on_new.get_with(id, Consistency::Stale).await?;
        if got.as_ref() != Some(v) {
            bail!("node {new}: handle {id} is {got:?}, expected {v}");
        }
    }
    Ok(held)
}

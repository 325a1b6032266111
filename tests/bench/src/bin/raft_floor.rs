//! The floor of openraft itself: what one client's write costs in openraft
//! 0.9 alone, with nothing of handlestore's around it.
//!
//! target/release/raft_floor \
//!     [--writes 3000] [--dir /path/on/the/disk] [--out target/raft-floor]
//!
//! Three openraft nodes in one process, each on its own thread with a
//! current-thread runtime (as a handlestore node runs one event loop on a
//! machine of two cores). The log and the state machine are in memory
//! (`handlestore_bench::groups`'s `MemLog` and `Machine`, without a database); a
//! Raft call is a task spawned on the target node's runtime and an answer
//! sent back, so each hop wakes another thread as a message between
//! processes would, with no socket, no encoding and no gRPC. One client on
//! the main thread proposes 300-byte entries on the leader one after another
//! and then confirms leadership (openraft's read-index round) as many times.
//!
//! With `--dir`, every node also has a sync thread, as handlestore's log has:
//! each append is written (400 bytes) to a file of that node in `--dir` and
//! `fdatasync`ed, and a follower answers only once its appends are synced;
//! the leader's own sync runs beside the round and is not waited for. One
//! `fdatasync` of the same size alone, in the same directory, is measured
//! first: the yardstick of the single-client target (docs/performance.md).
//!
//! Prints p50/p90/p99 in µs and writes them to `--out`/results.json. What
//! these numbers say, against a single client's mint: docs/dev/performance-notes.md,
//! "openraft's own floor, and where a single client's mint goes".

use std::collections::BTreeMap;
use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use clap::Parser;
use handlestore_bench::groups::Cfg;
use handlestore_bench::groups::log::{MemLog, Persist};
use handlestore_bench::groups::machine::Machine;
use openraft::error::{InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse, VoteRequest,
    VoteResponse,
};
use openraft::storage::LogFlushed;
use openraft::{BasicNode, Entry, Vote};
use serde_json::json;
use tokio::sync::{oneshot, watch};

#[derive(Parser, Debug)]
#[command(about = "openraft's own cost of one client's write: three in-process nodes, no sockets, no gRPC")]
struct Args {
    /// Writes (and read-index rounds) to time, after as many to warm up.
    #[arg(long, default_value_t = 3000, value_parser = clap::value_parser!(u64).range(1..))]
    writes: u64,
    /// Sync every node's appends to a file in this directory (the disk to
    /// compare with); without it, appends stay in memory.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Where results.json goes.
    #[arg(long, default_value = "target/raft-floor")]
    out: PathBuf,
}

type Raft = openraft::Raft<Cfg>;

/// Bytes written per sync, about an entry of one mint in handlestore's WAL.
const SYNC_BYTES: usize = 400;
/// A write's payload, about one mint's command.
const ENTRY_BYTES: usize = 300;

/// A node's appends and their syncs: `written` counts appends, `synced`
/// the highest one on disk (without a sync thread, every append at once).
struct Syncs {
    written: AtomicU64,
    synced: watch::Sender<u64>,
    thread: Option<std::sync::mpsc::Sender<u64>>,
}

impl Syncs {
    fn start(file: Option<std::fs::File>) -> Arc<Self> {
        let synced = watch::Sender::new(0);
        let thread = file.map(|mut f| {
            let (tx, rx) = std::sync::mpsc::channel::<u64>();
            let synced = synced.clone();
            std::thread::spawn(move || {
                let block = [7u8; SYNC_BYTES];
                while let Ok(first) = rx.recv() {
                    let upto = rx.try_iter().fold(first, u64::max);
                    if let Err(e) = f.write_all(&block).and_then(|()| f.sync_data()) {
                        eprintln!("raft_floor: sync failed: {e}");
                        std::process::exit(1);
                    }
                    synced.send_replace(upto);
                }
            });
            tx
        });
        Arc::new(Self {
            written: AtomicU64::new(0),
            synced,
            thread,
        })
    }

    fn appended(&self) {
        let n = self.written.fetch_add(1, Ordering::SeqCst) + 1;
        match &self.thread {
            Some(tx) => {
                // The thread ends only with the process.
                let _ = tx.send(n);
            }
            None => {
                self.synced.send_replace(n);
            }
        }
    }

    async fn wait_all_synced(&self) {
        let upto = self.written.load(Ordering::SeqCst);
        let mut rx = self.synced.subscribe();
        // The sender lives as long as `self`.
        let _ = rx.wait_for(|s| *s >= upto).await;
    }
}

/// As handlestore's log: openraft hears "flushed" at once, and a
/// follower's answer waits for the sync (see `Net`); votes stay in memory.
#[derive(Clone)]
struct FloorSyncs(Arc<Syncs>);

impl Persist for FloorSyncs {
    type Prepared = ();

    fn save_vote(&self, _vote: &Vote<u64>) -> std::io::Result<()> {
        Ok(())
    }

    fn prepare(&self, _entries: &[Entry<Cfg>]) -> std::io::Result<()> {
        Ok(())
    }

    fn submit(&self, (): (), done: LogFlushed<Cfg>) {
        self.0.appended();
        done.log_io_completed(Ok(()));
    }
}

/// A running node: its Raft, its runtime (on its own thread) and its syncs.
struct Node {
    raft: Raft,
    runtime: tokio::runtime::Handle,
    syncs: Arc<Syncs>,
}

type Nodes = Arc<Mutex<BTreeMap<u64, Arc<Node>>>>;

/// Runs `f` on `node`'s runtime and waits for its result from another: a
/// hop between threads, as a message between processes wakes another one.
async fn on<T, F, Fut>(node: &Arc<Node>, f: F) -> Result<T, NetworkError>
where
    T: Send + 'static,
    F: FnOnce(Arc<Node>) -> Fut + Send + 'static,
    Fut: Future<Output = T> + Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    let target = node.clone();
    node.runtime.spawn(async move {
        let _ = tx.send(f(target).await);
    });
    rx.await
        .map_err(|e| NetworkError::new(&std::io::Error::other(e.to_string())))
}

struct Net(Nodes);

struct Conn {
    target: u64,
    nodes: Nodes,
}

impl Conn {
    fn node(&self) -> Result<Arc<Node>, NetworkError> {
        let nodes = self.nodes.lock().unwrap_or_else(|p| p.into_inner());
        nodes
            .get(&self.target)
            .cloned()
            .ok_or_else(|| NetworkError::new(&std::io::Error::other(format!("no node {}", self.target))))
    }

    /// Runs `f` on the target node, as a Raft call to it would.
    async fn call<T, F, Fut>(&self, f: F) -> Result<T, RPCError<u64, BasicNode, RaftError<u64>>>
    where
        T: Send + 'static,
        F: FnOnce(Arc<Node>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, RaftError<u64>>> + Send + 'static,
    {
        let node = self.node().map_err(RPCError::Network)?;
        let answer = on(&node, f).await.map_err(RPCError::Network)?;
        answer.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

impl RaftNetworkFactory<Cfg> for Net {
    type Network = Conn;

    async fn new_client(&mut self, target: u64, _node: &BasicNode) -> Conn {
        Conn {
            target,
            nodes: self.0.clone(),
        }
    }
}

impl RaftNetwork<Cfg> for Conn {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<Cfg>,
        _option: RPCOption,
    ) -> Result<AppendEntriesResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        let carries_entries = !rpc.entries.is_empty();
        self.call(move |n: Arc<Node>| async move {
            let answer = n.raft.append_entries(rpc).await;
            if carries_entries {
                n.syncs.wait_all_synced().await;
            }
            answer
        })
        .await
    }

    async fn install_snapshot(
        &mut self,
        _rpc: InstallSnapshotRequest<Cfg>,
        _option: RPCOption,
    ) -> Result<InstallSnapshotResponse<u64>, RPCError<u64, BasicNode, RaftError<u64, InstallSnapshotError>>> {
        Err(RPCError::Network(NetworkError::new(&std::io::Error::other(
            "no snapshots in this measurement",
        ))))
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        _option: RPCOption,
    ) -> Result<VoteResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        self.call(move |n: Arc<Node>| async move { n.raft.vote(rpc).await })
            .await
    }
}

fn sync_file(dir: &Path, name: &str) -> Result<std::fs::File> {
    let path = dir.join(name);
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))
}

/// Builds node `id` on a new current-thread runtime and registers it.
fn build_node(id: u64, nodes: &Nodes, file: Option<std::fs::File>) -> Result<tokio::runtime::Runtime> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let syncs = Syncs::start(file);
    let config = openraft::Config {
        heartbeat_interval: 500,
        election_timeout_min: 1500,
        election_timeout_max: 3000,
        max_payload_entries: 256,
        ..Default::default()
    }
    .validate()?;
    let log = MemLog::new(FloorSyncs(syncs.clone()));
    let raft = runtime.block_on(Raft::new(
        id,
        Arc::new(config),
        Net(nodes.clone()),
        log,
        Machine::default(),
    ))?;
    let node = Arc::new(Node {
        raft,
        runtime: runtime.handle().clone(),
        syncs,
    });
    nodes.lock().unwrap_or_else(|p| p.into_inner()).insert(id, node);
    Ok(runtime)
}

/// Starts node `id` on a thread of its own, which runs it until the
/// process ends.
fn start_node(id: u64, nodes: &Nodes, dir: Option<&Path>) -> Result<()> {
    let file = dir.map(|d| sync_file(d, &format!("node-{id}.log"))).transpose()?;
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let nodes = nodes.clone();
    std::thread::Builder::new()
        .name(format!("node-{id}"))
        .spawn(move || match build_node(id, &nodes, file) {
            Ok(runtime) => {
                let _ = ready_tx.send(Ok(()));
                runtime.block_on(std::future::pending::<()>());
            }
            Err(e) => {
                let _ = ready_tx.send(Err(e));
            }
        })?;
    ready_rx.recv().context("node thread ended")?
}

/// p50, p90 and p99 of `samples` (µs), sorted in place.
fn percentiles(samples: &mut [u64]) -> [u64; 3] {
    samples.sort_unstable();
    let at = |p: f64| samples[((samples.len() - 1) as f64 * p).round() as usize];
    [at(0.5), at(0.9), at(0.99)]
}

fn fdatasync_alone(dir: &Path, n: u64) -> Result<Vec<u64>> {
    let mut f = sync_file(dir, "fdatasync-alone")?;
    let block = [7u8; SYNC_BYTES];
    let mut out = Vec::new();
    for _ in 0..n {
        let t = Instant::now();
        f.write_all(&block)?;
        f.sync_data()?;
        out.push(t.elapsed().as_micros() as u64);
    }
    Ok(out)
}

/// Times `n` calls of `op` on the leader from the main thread's runtime.
async fn time_calls(leader: &Arc<Node>, n: u64, write: bool) -> Result<Vec<u64>> {
    let mut out = Vec::new();
    for _ in 0..n {
        let t = Instant::now();
        let done = on(leader, move |l: Arc<Node>| async move {
            if write {
                l.raft
                    .client_write(vec![1u8; ENTRY_BYTES])
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            } else {
                l.raft
                    .ensure_linearizable()
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
        })
        .await?;
        done.map_err(|e| anyhow!("{e}"))?;
        out.push(t.elapsed().as_micros() as u64);
    }
    Ok(out)
}

fn main() -> Result<()> {
    let args = Args::parse();
    let dir = match &args.dir {
        Some(d) => Some(tempfile::tempdir_in(d).with_context(|| format!("a directory in {}", d.display()))?),
        None => None,
    };
    let dir_path = dir.as_ref().map(|d| d.path());
    let mut results = serde_json::Map::new();
    let mut report = |name: &str, samples: &mut Vec<u64>| {
        let [p50, p90, p99] = percentiles(samples);
        println!(
            "{name:<24} p50 {p50:>6} us  p90 {p90:>6} us  p99 {p99:>6} us  ({} samples)",
            samples.len()
        );
        results.insert(
            name.into(),
            json!({"p50_us": p50, "p90_us": p90, "p99_us": p99, "samples": samples.len()}),
        );
    };
    if let Some(d) = dir_path {
        report("fdatasync alone", &mut fdatasync_alone(d, args.writes)?);
    }

    let nodes: Nodes = Arc::default();
    for id in 1..=3 {
        start_node(id, &nodes, dir_path)?;
    }
    let leader = nodes
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&1)
        .cloned()
        .context("node 1")?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (mut writes, mut reads) = runtime.block_on(async {
        let members: BTreeMap<u64, BasicNode> = (1..=3).map(|i| (i, BasicNode::new(""))).collect();
        on(&leader, move |l: Arc<Node>| async move {
            l.raft.initialize(members).await.map_err(|e| e.to_string())
        })
        .await?
        .map_err(|e| anyhow!("initialize: {e}"))?;
        leader
            .raft
            .wait(Some(Duration::from_secs(10)))
            .current_leader(1, "node 1 leads")
            .await?;
        // Warm up, then time.
        time_calls(&leader, args.writes, true).await?;
        time_calls(&leader, args.writes, false).await?;
        let writes = time_calls(&leader, args.writes, true).await?;
        let reads = time_calls(&leader, args.writes, false).await?;
        anyhow::Ok((writes, reads))
    })?;
    let kind = if dir_path.is_some() { "synced" } else { "in memory" };
    report(&format!("write ({kind})"), &mut writes);
    report("read-index round", &mut reads);

    std::fs::create_dir_all(&args.out)?;
    let file = args.out.join("results.json");
    let doc = json!({
        "what": "openraft 0.9 alone: three in-process nodes, one client, no sockets or gRPC",
        "dir": args.dir,
        "writes": args.writes,
        "results": results,
    });
    std::fs::write(&file, serde_json::to_string_pretty(&doc)?)?;
    eprintln!("results: {}", file.display());
    // The node threads run until the process ends: remove the sync files
    // first, as exiting skips destructors.
    drop(dir);
    std::process::exit(0);
}

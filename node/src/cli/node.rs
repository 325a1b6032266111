//! `handlestore node`: run one node.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use super::CliError;
use crate::config::{ClusterState, NodeConfig, parse_initial_cluster};
use crate::tls::TlsFiles;

#[derive(clap::Args, Debug)]
pub struct NodeArgs {
    /// This node's id (a positive integer, unique in the cluster).
    #[arg(long)]
    pub id: u64,
    /// Address to serve clients on (and peers, without --peer-listen).
    #[arg(long, default_value = "127.0.0.1:7401")]
    pub listen: SocketAddr,
    /// Address clients reach this node at; default: its --initial-cluster
    /// entry, else --listen.
    #[arg(long)]
    pub advertise: Option<String>,
    /// A port of its own for node-to-node traffic (Raft, forwarded writes,
    /// read indexes, clock probes); the client port then refuses all of it.
    #[arg(long)]
    pub peer_listen: Option<SocketAddr>,
    /// Address peers reach this node's peer port at; default: its
    /// --initial-cluster entry's peer address, else --peer-listen.
    #[arg(long)]
    pub peer_advertise: Option<String>,
    /// Data directory (RocksDB and snapshots).
    #[arg(long)]
    pub data: PathBuf,
    /// All members: 1=HOST:PORT,2=HOST:PORT,... (with peer ports:
    /// 1=HOST:PORT/PEER_HOST:PEER_PORT,...). Without it the node is a
    /// one-node cluster.
    #[arg(long)]
    pub initial_cluster: Option<String>,
    /// "new": any majority of the --initial-cluster members founds a new
    /// cluster (the others join it); "existing": join only by being added
    /// (never found one).
    #[arg(long, value_enum, default_value = "new")]
    pub initial_cluster_state: ClusterState,
    /// Largest value accepted, in bytes.
    #[arg(long, default_value_t = handlestore_proto::limits::MAX_VALUE_BYTES)]
    pub max_value_bytes: usize,
    /// A write not committed within this is refused with UNAVAILABLE.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    pub write_timeout: Duration,
    /// Longest a read waits for this node to catch up.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    pub read_timeout: Duration,
    #[arg(long, default_value = "100ms", value_parser = humantime::parse_duration)]
    pub heartbeat: Duration,
    /// Election timeout (the upper bound is twice this).
    #[arg(long, default_value = "800ms", value_parser = humantime::parse_duration)]
    pub election_timeout: Duration,
    /// Build a snapshot every this many log entries.
    #[arg(long, default_value_t = 20_000)]
    pub snapshot_entries: u64,
    /// Log entries kept behind a snapshot for slow followers.
    #[arg(long, default_value_t = 5_000)]
    pub keep_entries: u64,
    /// How often the leader sweeps expired entries.
    #[arg(long, default_value = "250ms", value_parser = humantime::parse_duration)]
    pub sweep_interval: Duration,
    /// How long answers are remembered for exactly-once retries.
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration)]
    pub dedup_window: Duration,
    /// Revisions (log entries) of changes kept for watchers: a watch may
    /// start, or resume, this far back. Each change is kept with its value.
    #[arg(long, default_value_t = crate::state::DEFAULT_HISTORY_REVISIONS,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub watch_history: u64,
    /// Memory for watch delivery (MiB): a quarter keeps recent changes for
    /// live watchers, the rest holds what watchers' clients have not taken
    /// yet. A watcher whose client takes nothing while its share is full is
    /// cut off (slow_watcher; the client resumes from its revision).
    #[arg(long, default_value_t = crate::config::DEFAULT_WATCH_MEMORY_MB,
          value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pub watch_memory_mb: u64,
    /// RocksDB block cache, shared by all data (MiB). With the write
    /// buffers, this bounds the node's memory whatever the number of keys.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pub block_cache_mb: u64,
    /// RocksDB memtables, all together (MiB).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(2..=1 << 20))]
    pub write_buffer_mb: u64,
    /// How often memory RocksDB freed is given back to the OS (glibc's
    /// malloc_trim); 0s never. glibc keeps it for reuse otherwise: tens of
    /// MiB per node under steady writes.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub malloc_trim_interval: Duration,
    /// Threads that run the node's network and Raft work. 1 runs all of it
    /// on one event-loop thread; more spreads it over a work-stealing pool.
    /// 0: 1 on a machine with 2 cores or fewer, else one per core. RocksDB's
    /// background work, log syncs, large applies and scans run on threads of
    /// their own either way.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u16).range(0..=1024))]
    pub worker_threads: u16,
    /// Farthest this node's clock may be from the cluster's (the median of
    /// the members' clocks, measured every 500ms) for it to lead and to
    /// serve reads that depend on expiry. Beyond it the node says so in its
    /// log and status and refuses those with UNAVAILABLE until its clock is
    /// back within it. At least 10ms.
    #[arg(long, default_value = "500ms", value_parser = humantime::parse_duration)]
    pub max_clock_offset: Duration,
    /// The client port's TLS certificate chain (PEM): with it, the client
    /// port takes TLS only. `handlestore certs` makes one.
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Require every client to show a certificate signed by this CA (PEM).
    #[arg(long, requires = "tls_cert")]
    pub tls_client_ca: Option<PathBuf>,
    /// The peer port's certificate chain (PEM), shown to peers both ways:
    /// with it, the peer port takes mutual TLS only, and this node dials
    /// its peers with it. Node certificates of `handlestore certs` serve
    /// for both ports.
    #[arg(long, requires_all = ["peer_tls_key", "peer_tls_ca"])]
    pub peer_tls_cert: Option<PathBuf>,
    /// The private key of --peer-tls-cert (PEM).
    #[arg(long, requires = "peer_tls_cert")]
    pub peer_tls_key: Option<PathBuf>,
    /// The CA every peer's certificate must come from (PEM).
    #[arg(long, requires = "peer_tls_cert")]
    pub peer_tls_ca: Option<PathBuf>,
    /// Only peers whose certificate names one of these (common name or DNS
    /// name), comma-separated. Default: only current members, by their
    /// node names (node-ID, as `handlestore certs` names node
    /// certificates); a client's certificate of the same CA never.
    #[arg(long, value_delimiter = ',', requires = "peer_tls_cert")]
    pub peer_allowed_names: Vec<String>,
    /// Serve non-loopback addresses without TLS. Without TLS (and without
    /// this flag) a node listens on loopback only, as Redis's protected
    /// mode does.
    #[arg(long)]
    pub insecure: bool,
}

/// How a node schedules its async work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheduler {
    /// One event-loop thread (tokio's current-thread scheduler).
    EventLoop,
    /// A work-stealing pool of this many threads.
    Pool(usize),
}

/// The scheduler for `--worker-threads requested` on a machine with `cores`
/// cores. On 2 cores, work stealing between two threads cost more than it
/// gave: one event loop took 10-30% less CPU per request and served as many
/// or more (docs/dev/performance-notes.md, "One event loop per node").
pub fn scheduler(requested: u16, cores: usize) -> Scheduler {
    match (requested, cores) {
        (1, _) => Scheduler::EventLoop,
        (0, c) if c <= 2 => Scheduler::EventLoop,
        (0, c) => Scheduler::Pool(c),
        (n, _) => Scheduler::Pool(n as usize),
    }
}

/// Builds the runtime a node runs on.
pub fn runtime(s: Scheduler) -> std::io::Result<tokio::runtime::Runtime> {
    match s {
        Scheduler::EventLoop => tokio::runtime::Builder::new_current_thread().enable_all().build(),
        Scheduler::Pool(n) => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(n)
            .enable_all()
            .build(),
    }
}

impl NodeArgs {
    /// Where this node serves and is reached, for clients and for peers.
    fn addresses(&self, cfg: &mut NodeConfig) -> Result<(), CliError> {
        let listed = cfg.initial_cluster.get(&self.id).cloned();
        cfg.advertise = self
            .advertise
            .clone()
            .or_else(|| listed.as_ref().map(|m| m.addr.clone()))
            .unwrap_or_else(|| self.listen.to_string());
        cfg.peer_listen = self.peer_listen;
        cfg.peer_advertise = match self.peer_listen {
            None => String::new(),
            Some(peer_listen) => self
                .peer_advertise
                .clone()
                .or_else(|| listed.as_ref().map(|m| m.peer_addr.clone()).filter(|a| !a.is_empty()))
                .unwrap_or_else(|| peer_listen.to_string()),
        };
        if self.peer_listen.is_none()
            && (self.peer_advertise.is_some() || listed.is_some_and(|m| !m.peer_addr.is_empty()))
        {
            return Err(CliError::new(
                2,
                "this node has a peer address (--peer-advertise or --initial-cluster) but no --peer-listen",
            ));
        }
        Ok(())
    }

    pub fn into_config(self) -> Result<NodeConfig, CliError> {
        if self.id == 0 {
            return Err(CliError::new(2, "--id must be a positive integer"));
        }
        let mut cfg = NodeConfig::new(self.id, self.listen, self.data.clone());
        if let Some(ic) = &self.initial_cluster {
            cfg.initial_cluster =
                parse_initial_cluster(ic).map_err(|e| CliError::new(2, format!("--initial-cluster: {e}")))?;
        }
        self.addresses(&mut cfg)?;
        cfg.cluster_state = self.initial_cluster_state;
        cfg.limits.max_value_bytes = self.max_value_bytes;
        cfg.write_timeout = self.write_timeout;
        cfg.read_timeout = self.read_timeout;
        cfg.raft.heartbeat = self.heartbeat;
        cfg.raft.election_min = self.election_timeout;
        cfg.raft.election_max = self.election_timeout * 2;
        if self.heartbeat >= self.election_timeout {
            return Err(CliError::new(2, "--heartbeat must be shorter than --election-timeout"));
        }
        cfg.raft.snapshot_logs = self.snapshot_entries.max(1);
        cfg.raft.keep_logs = self.keep_entries;
        cfg.sweep_interval = self.sweep_interval.max(Duration::from_millis(10));
        cfg.dedup_window = self.dedup_window;
        cfg.watch_history = self.watch_history;
        cfg.watch_memory = (self.watch_memory_mb as usize) << 20;
        cfg.db_memory = crate::db::DbMemory {
            block_cache_bytes: (self.block_cache_mb as usize) << 20,
            write_buffer_bytes: (self.write_buffer_mb as usize) << 20,
        };
        cfg.malloc_trim_interval = self.malloc_trim_interval;
        if self.max_clock_offset < Duration::from_millis(10) {
            return Err(CliError::new(2, "--max-clock-offset must be at least 10ms"));
        }
        cfg.max_clock_offset = self.max_clock_offset;
        cfg.tls = self.tls_cert.zip(self.tls_key).map(|(cert, key)| TlsFiles {
            cert,
            key,
            ca: self.tls_client_ca,
        });
        cfg.peer_tls = self.peer_tls_cert.zip(self.peer_tls_key).map(|(cert, key)| TlsFiles {
            cert,
            key,
            ca: self.peer_tls_ca,
        });
        cfg.peer_allowed_names = self.peer_allowed_names;
        cfg.insecure = self.insecure;
        cfg.check_exposure().map_err(|e| CliError::new(2, e))?;
        Ok(cfg)
    }
}

pub async fn run(args: NodeArgs) -> Result<(), CliError> {
    let cfg = args.into_config()?;
    crate::node::run(cfg, super::shutdown_signal()).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_threads_default_to_one_event_loop_on_small_machines_and_obey_an_explicit_count() {
        assert_eq!(scheduler(0, 1), Scheduler::EventLoop);
        assert_eq!(scheduler(0, 2), Scheduler::EventLoop);
        assert_eq!(scheduler(0, 3), Scheduler::Pool(3));
        assert_eq!(scheduler(0, 16), Scheduler::Pool(16));
        assert_eq!(scheduler(1, 16), Scheduler::EventLoop);
        assert_eq!(scheduler(2, 1), Scheduler::Pool(2));
        assert_eq!(scheduler(8, 2), Scheduler::Pool(8));
    }

    #[test]
    fn both_schedulers_run_tasks_and_blocking_work() {
        for s in [Scheduler::EventLoop, Scheduler::Pool(2)] {
            let rt = runtime(s).expect("runtime");
            let got = rt.block_on(async {
                let spawned = tokio::spawn(async { 1 });
                let blocking = tokio::task::spawn_blocking(|| 2);
                spawned.await.expect("task") + blocking.await.expect("blocking")
            });
            assert_eq!(got, 3, "{s:?}");
        }
    }
}

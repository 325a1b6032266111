//! Node configuration: what `handlestore node` flags turn into.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// How to treat an empty data directory when `--initial-cluster` is given
/// (as etcd's `--initial-cluster-state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ClusterState {
    /// A new cluster: the lowest id initializes it if its log is empty.
    New,
    /// Joining an existing cluster: never initialize, wait to be added.
    Existing,
}

/// Limits checked before anything reaches Raft.
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_value_bytes: usize,
    /// Longest state key or prefix.
    pub max_key_bytes: usize,
    /// Most items in one batch store or batch retrieve.
    pub max_batch_items: usize,
    /// Most value bytes in one batch store.
    pub max_batch_bytes: usize,
    pub max_name_len: usize,
    pub max_ttl: Duration,
}

/// The wire contract's limits (`handlestore_proto::limits`).
impl Default for Limits {
    fn default() -> Self {
        use handlestore_proto::limits as wire;
        Self {
            max_value_bytes: wire::MAX_VALUE_BYTES,
            max_key_bytes: wire::MAX_KEY_BYTES,
            max_batch_items: wire::MAX_BATCH_ITEMS,
            max_batch_bytes: wire::MAX_BATCH_BYTES,
            max_name_len: wire::MAX_NAME_LEN,
            max_ttl: wire::MAX_TTL,
        }
    }
}

#[derive(Debug, Clone)]
pub struct RaftTuning {
    pub heartbeat: Duration,
    pub election_min: Duration,
    pub election_max: Duration,
    /// Build a snapshot after this many log entries since the last one.
    pub snapshot_logs: u64,
    /// Log entries kept behind a snapshot for slow followers.
    pub keep_logs: u64,
}

impl Default for RaftTuning {
    fn default() -> Self {
        Self {
            heartbeat: Duration::from_millis(100),
            election_min: Duration::from_millis(800),
            election_max: Duration::from_millis(1600),
            snapshot_logs: 20_000,
            keep_logs: 5_000,
        }
    }
}

#[derive(Debug, Clone)]
pub struct NodeConfig {
    pub id: u64,
    pub listen: SocketAddr,
    /// The address peers and clients reach this node at ("host:port").
    pub advertise: String,
    pub data_dir: PathBuf,
    pub initial_cluster: BTreeMap<u64, String>,
    pub cluster_state: ClusterState,
    pub raft: RaftTuning,
    pub limits: Limits,
    /// A write not committed within this is answered UNAVAILABLE.
    pub write_timeout: Duration,
    /// Longest a read waits for this node to catch up (linearizable and
    /// at-least reads).
    pub read_timeout: Duration,
    pub sweep_interval: Duration,
    /// How long remembered write answers (exactly-once retries) are kept.
    pub dedup_window: Duration,
    pub dedup_max_entries: u64,
    pub max_batch_commands: usize,
    pub db_memory: crate::db::DbMemory,
    /// How often free memory of the C heap (RocksDB's) is given back to
    /// the OS; zero never.
    pub malloc_trim_interval: Duration,
    /// Farthest this node's clock may be from the cluster's (the members'
    /// median) for it to lead and to serve reads that depend on expiry.
    pub max_clock_offset: Duration,
}

impl NodeConfig {
    pub fn new(id: u64, listen: SocketAddr, data_dir: PathBuf) -> Self {
        Self {
            id,
            listen,
            advertise: listen.to_string(),
            data_dir,
            initial_cluster: BTreeMap::new(),
            cluster_state: ClusterState::New,
            raft: RaftTuning::default(),
            limits: Limits::default(),
            write_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(5),
            sweep_interval: Duration::from_millis(250),
            dedup_window: Duration::from_secs(600),
            dedup_max_entries: 1_000_000,
            max_batch_commands: 512,
            db_memory: crate::db::DbMemory::default(),
            malloc_trim_interval: Duration::from_secs(10),
            max_clock_offset: Duration::from_millis(500),
        }
    }
}

/// Parses `1=host:port,2=host:port`.
pub fn parse_initial_cluster(s: &str) -> Result<BTreeMap<u64, String>, String> {
    let mut out = BTreeMap::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (id, addr) = part
            .split_once('=')
            .ok_or_else(|| format!("'{part}' is not ID=HOST:PORT"))?;
        let id: u64 = id
            .trim()
            .parse()
            .map_err(|_| format!("'{id}' in '{part}' is not a node id (a positive integer)"))?;
        if id == 0 {
            return Err("node id 0 is reserved; use 1, 2, 3, ...".into());
        }
        let addr = addr.trim();
        let valid = addr
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
        if !valid {
            return Err(format!("'{addr}' in '{part}' is not HOST:PORT"));
        }
        if out.insert(id, addr.to_string()).is_some() {
            return Err(format!("node id {id} appears twice"));
        }
    }
    if out.is_empty() {
        return Err("empty cluster".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cluster() {
        let c = parse_initial_cluster("1=a:1, 2=b:2,3=127.0.0.1:7403").expect("parses");
        assert_eq!(c.len(), 3);
        assert_eq!(c[&3], "127.0.0.1:7403");
        for bad in ["", "1=a", "x=a:1", "0=a:1", "1=a:1,1=b:2", "1=:80", "1=a:99999"] {
            assert!(parse_initial_cluster(bad).is_err(), "{bad} should fail");
        }
    }
}

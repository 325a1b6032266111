//! `handlestore node`: run one node.

use std::net::SocketAddr;
use std::path::PathBuf;

use super::CliError;
use super::join::AdminCluster;
use crate::config::{ClusterState, NodeConfig, Tuning, parse_initial_cluster};
use crate::tls::TlsFiles;

#[derive(clap::Args, Debug)]
pub struct NodeArgs {
    /// This node's id (a positive integer, unique in the cluster).
    #[arg(long)]
    pub id: u64,
    /// Address to serve clients on (and peers, without --peer-listen).
    #[arg(long, default_value = crate::config::defaults::LISTEN)]
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
    /// A plain-HTTP listener of its own serving only `/metrics` (for a
    /// Prometheus that should not reach the client port); the client port
    /// serves `/metrics` too.
    #[arg(long)]
    pub metrics_listen: Option<SocketAddr>,
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
    /// Join a running cluster through these client endpoints
    /// (comma-separated; a Service's name will do): this node asks to be
    /// added as a learner at its --advertise/--peer-advertise addresses,
    /// catches up, and makes itself a voter. Implies
    /// `--initial-cluster-state existing`.
    #[arg(long, value_delimiter = ',')]
    pub join: Vec<String>,
    /// The CA of the cluster's client certificates (PEM), for --join.
    #[arg(long, env = "HANDLESTORE_CACERT")]
    pub join_cacert: Option<PathBuf>,
    /// A file holding a root token, for --join on a cluster with auth
    /// (read at each call; it wins over --join-token).
    #[arg(long, env = "HANDLESTORE_TOKEN_FILE")]
    pub join_token_file: Option<PathBuf>,
    /// A root token, for --join on a cluster with auth (prefer
    /// --join-token-file).
    #[arg(long, env = "HANDLESTORE_TOKEN", hide_env_values = true)]
    pub join_token: Option<String>,
    /// Every tunable: timeouts, Raft, snapshots, history, memory, threads
    /// ([`config::Tuning`](crate::config::Tuning)).
    #[command(flatten)]
    pub tuning: Tuning,
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
        cfg.metrics_listen = self.metrics_listen;
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

    /// The cluster `--join` names, if it names one.
    fn joining(&self) -> Result<Option<AdminCluster>, CliError> {
        if self.join.is_empty() {
            return Ok(None);
        }
        let endpoints = self.join.iter().map(|e| e.trim().to_string()).collect();
        let (ca, token, file) = (
            self.join_cacert.clone(),
            self.join_token.clone(),
            self.join_token_file.clone(),
        );
        AdminCluster::new(endpoints, ca, token, file).map(Some)
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
        cfg.cluster_state = if self.join.is_empty() {
            self.initial_cluster_state
        } else {
            check_join_addresses(&cfg)?;
            ClusterState::Existing
        };
        self.tuning.validate().map_err(|e| CliError::new(2, e))?;
        cfg.tuning = self.tuning;
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

/// A node that asks to be added must be reachable where it says it is: an
/// unspecified address (`--listen 0.0.0.0:7401` taken for the advertised
/// one) reaches no one.
fn check_join_addresses(cfg: &NodeConfig) -> Result<(), CliError> {
    for (flag, addr) in [
        ("--advertise", &cfg.advertise),
        ("--peer-advertise", &cfg.peer_advertise),
    ] {
        let host = addr.rsplit_once(':').map_or(addr.as_str(), |(h, _)| h);
        let ip = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>();
        if ip.is_ok_and(|ip| ip.is_unspecified()) {
            return Err(CliError::new(
                2,
                format!("--join: this node would ask to be added at {addr}, where no peer reaches it: give {flag}"),
            ));
        }
    }
    Ok(())
}

pub async fn run(args: NodeArgs) -> Result<(), CliError> {
    let join = args
        .joining()?
        .map(|c| Box::new(c) as Box<dyn crate::raft::join::Cluster>);
    let cfg = args.into_config()?;
    crate::server::node::run(cfg, super::shutdown_signal(), join).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use clap::{CommandFactory, Parser};

    use super::*;
    use crate::cli::{Cli, Command};

    #[test]
    fn a_node_given_no_tunables_runs_the_configs_defaults() {
        let cli = Cli::try_parse_from(["handlestore", "node", "--id", "1", "--data", "d"]).expect("parses");
        let Command::Node(args) = cli.command else {
            panic!("not the node command")
        };
        let cfg = args.into_config().expect("valid");
        assert_eq!(cfg.tuning, Tuning::default());
        assert_eq!(cfg.listen.to_string(), crate::config::defaults::LISTEN);
    }

    fn node_args(args: &[&str]) -> NodeArgs {
        let cli = Cli::try_parse_from([&["handlestore", "node", "--data", "d"][..], args].concat()).expect("parses");
        let Command::Node(args) = cli.command else {
            panic!("not the node command")
        };
        *args
    }

    #[test]
    fn join_implies_waiting_to_be_added_at_an_address_peers_can_reach() {
        let join = [
            "--id",
            "4",
            "--listen",
            "0.0.0.0:7401",
            "--insecure",
            "--join",
            "http://hs:7401",
        ];
        let e = node_args(&join).into_config().expect_err("0.0.0.0 advertised");
        assert!(e.message.contains("give --advertise"), "{}", e.message);
        let cfg = node_args(&[&join[..], &["--advertise", "hs-3.hs-peers:7401"][..]].concat())
            .into_config()
            .expect("valid");
        assert_eq!(cfg.cluster_state, ClusterState::Existing, "never founds");
        assert_eq!(cfg.advertise, "hs-3.hs-peers:7401");
        let founder = node_args(&["--id", "1"]).into_config().expect("valid");
        assert_eq!(founder.cluster_state, ClusterState::New);
    }

    #[test]
    fn an_out_of_range_flag_is_refused_not_clamped() {
        for (flag, value) in [
            ("--sweep-interval", "1ms"),
            ("--snapshot-entries", "0"),
            ("--heartbeat", "2s"),
        ] {
            let cli =
                Cli::try_parse_from(["handlestore", "node", "--id", "1", "--data", "d", flag, value]).expect("parses");
            let Command::Node(args) = cli.command else {
                panic!("not the node command")
            };
            let e = args.into_config().expect_err(flag);
            assert!(e.message.contains(flag), "{}", e.message);
        }
    }

    /// docs/operations.md's flag table: flag → its "default" cell.
    fn documented_flags() -> BTreeMap<String, String> {
        let doc = include_str!("../../../docs/operations.md");
        let table = doc
            .split("## Flags of `handlestore node`")
            .nth(1)
            .expect("the flag table");
        let table = table.split("\n## ").next().unwrap_or(table);
        let mut rows = BTreeMap::new();
        for line in table.lines().filter(|l| l.starts_with("| `--")) {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            for flag in cells[1].split(", ") {
                rows.insert(flag.trim_matches('`').to_string(), cells[2].to_string());
            }
        }
        rows
    }

    #[test]
    fn operations_md_lists_every_flag_of_the_node_command_with_its_default() {
        let documented = documented_flags();
        let mut command = Cli::command();
        // Global flags (--log-format) reach the subcommands when built.
        command.build();
        let node = command.find_subcommand("node").expect("node");
        let mut flags = BTreeSet::new();
        for arg in node.get_arguments() {
            let Some(long) = arg.get_long().filter(|l| *l != "help") else {
                continue;
            };
            let flag = format!("--{long}");
            let doc = documented
                .get(&flag)
                .unwrap_or_else(|| panic!("{flag} is missing from docs/operations.md's flag table"));
            if let Some(default) = arg
                .get_default_values()
                .first()
                .filter(|_| arg.get_action().takes_values())
            {
                let default = default.to_string_lossy();
                assert!(
                    doc.trim_matches('`').starts_with(&*default),
                    "{flag}: the command's default is {default}, docs/operations.md says {doc}"
                );
            }
            flags.insert(flag);
        }
        for flag in documented.keys() {
            assert!(
                flags.contains(flag),
                "docs/operations.md lists {flag}, which `handlestore node` lacks"
            );
        }
    }

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

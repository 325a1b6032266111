//! A cluster of real `handlestore node` processes.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use handlestore_client::Client;
use handlestore_proto::v1 as pb;
use pb::admin_client::AdminClient;

use crate::netns::NetNs;
use crate::powercut::mount::PowercutMount;

/// The binary chosen by this process for what it starts next (the bench's
/// A/B mode), before `$HANDLESTORE_BIN`.
static BIN_CHOSEN: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Makes the nodes and example servers this process starts from now on run
/// `bin` (and the examples in `examples/` beside it); with none, the binary
/// [`handlestore_bin`] finds otherwise. For a process that starts one
/// system at a time, as the bench does.
pub fn choose_handlestore_bin(bin: Option<PathBuf>) {
    *BIN_CHOSEN.lock().unwrap_or_else(|p| p.into_inner()) = bin;
}

/// The `handlestore` binary under test: the one chosen by
/// [`choose_handlestore_bin`], `$HANDLESTORE_BIN`, or the one built beside
/// this test executable (`target/<profile>/handlestore`).
pub fn handlestore_bin() -> PathBuf {
    if let Some(p) = BIN_CHOSEN.lock().unwrap_or_else(|p| p.into_inner()).clone() {
        return p;
    }
    if let Some(p) = std::env::var_os("HANDLESTORE_BIN") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("test executable path");
    // Tests live in target/<profile>/deps/, binaries (bin/chaos) in
    // target/<profile>/, beside handlestore.
    let mut dir = exe.parent().expect("target dir");
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir = dir.parent().expect("target dir");
    }
    let bin = dir.join("handlestore");
    assert!(
        bin.exists(),
        "{} is missing: build it first (cargo build --release -p handlestore-node), or run tests/run.sh",
        bin.display()
    );
    bin
}

/// Ports handed out by this process, so parallel tests never share one.
static USED_PORTS: Mutex<Option<HashSet<u16>>> = Mutex::new(None);

/// A free loopback port, never the same twice in this process.
pub fn free_port() -> u16 {
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("binding an ephemeral port");
        let mut used = USED_PORTS.lock().unwrap_or_else(|p| p.into_inner());
        if used.get_or_insert_with(HashSet::new).insert(port) {
            return port;
        }
    }
}

/// The first of `n` consecutive free loopback ports.
pub fn free_port_run(n: u16) -> u16 {
    loop {
        let base = free_port();
        let rest_free = (1..n).all(|i| {
            base.checked_add(i)
                .is_some_and(|p| TcpListener::bind(("127.0.0.1", p)).is_ok())
        });
        if rest_free {
            let mut used = USED_PORTS.lock().unwrap_or_else(|p| p.into_inner());
            let used = used.get_or_insert_with(HashSet::new);
            if (1..n).all(|i| used.insert(base + i)) {
                return base;
            }
        }
    }
}

pub struct TestNode {
    pub id: u64,
    pub addr: String,
    /// The node's peer port (`--peer-listen`), if it has one; empty if not.
    pub peer_addr: String,
    /// "https" when the cluster runs with TLS, else "http".
    scheme: &'static str,
    pub data: PathBuf,
    log: PathBuf,
    child: Option<Child>,
    /// Paused with SIGSTOP.
    paused: bool,
    /// Extra environment for this node's process (failpoints).
    env: Vec<(String, String)>,
    /// Its `--metrics-listen` address, if it has one.
    pub metrics_addr: Option<String>,
    /// The binary it runs, if not this build's (an earlier release).
    bin: Option<PathBuf>,
    /// The name its peers know it by (`hs-1.hs-peers`, published by the
    /// cluster's DNS server), in a cluster with names; its IP otherwise.
    pub name: Option<String>,
    /// Started with `--join` ([`TestCluster::spawn_joining`]): not one of
    /// `--initial-cluster`'s founders.
    joined: bool,
    /// Flags of its own, at every start.
    own_args: Vec<String>,
}

impl TestNode {
    /// Node `id`, not started: its addresses (a peer port too, if asked),
    /// data directory and log under `dir`.
    fn new(net: &mut Option<NetNs>, dir: &Path, id: u64, peer_port: bool) -> Result<Self> {
        let (addr, peer_addr) = match net {
            Some(n) => {
                let ip = n.add_node(id)?;
                (format!("{ip}:7401"), format!("{ip}:7402"))
            }
            None => (
                format!("127.0.0.1:{}", free_port()),
                format!("127.0.0.1:{}", free_port()),
            ),
        };
        Ok(Self {
            id,
            addr,
            peer_addr: if peer_port { peer_addr } else { String::new() },
            scheme: "http",
            data: dir.join(format!("n{id}")),
            log: dir.join(format!("n{id}.log")),
            child: None,
            paused: false,
            env: Vec::new(),
            metrics_addr: None,
            bin: None,
            name: None,
            joined: false,
            own_args: Vec::new(),
        })
    }

    /// `addr` (one of its addresses) as its peers know it: under its
    /// name, in a cluster with names.
    pub fn known_as(&self, addr: &str) -> String {
        match (&self.name, addr.rsplit_once(':')) {
            (Some(name), Some((_, port))) if !addr.is_empty() => format!("{name}:{port}"),
            _ => addr.to_string(),
        }
    }

    pub fn endpoint(&self) -> String {
        format!("{}://{}", self.scheme, self.addr)
    }

    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }
}

/// Short timings for tests, for each flag `extra` does not set itself.
fn fast_defaults(extra: &[String]) -> Vec<&'static str> {
    [
        ("--heartbeat", "100ms"),
        ("--election-timeout", "700ms"),
        ("--sweep-interval", "100ms"),
    ]
    .into_iter()
    .filter(|(flag, _)| !extra.iter().any(|a| a == flag))
    .flat_map(|(flag, value)| [flag, value])
    .collect()
}

/// Builds a [`TestCluster`].
pub struct TestClusterBuilder {
    size: usize,
    extra_args: Vec<String>,
    netns: bool,
    env: Vec<(u64, String, String)>,
    parent: Option<std::path::PathBuf>,
    faketime: Option<PathBuf>,
    clock_offsets: Vec<(u64, i64)>,
    wait_leader: bool,
    peer_ports: bool,
    tls: Option<crate::tls::TestTls>,
    secure: bool,
    absent: Vec<u64>,
    metrics_ports: bool,
    before_start: Option<BeforeStart>,
    bin: Option<PathBuf>,
    powercut_disks: bool,
    powercut_names: crate::powercut::Names,
    powercut_size: crate::powercut::Size,
    names: bool,
    publish_names: bool,
}

/// Runs on the nodes (addresses, data directories) and the cluster's
/// `--initial-cluster` before any node starts.
type BeforeStart = Box<dyn FnOnce(&[TestNode], &str) -> Result<()> + Send>;

impl TestClusterBuilder {
    /// Every node runs `bin` (another build's binary, an earlier release)
    /// instead of this build's.
    pub fn binary(mut self, bin: PathBuf) -> Self {
        self.bin = Some(bin);
        self
    }

    /// Runs `f` with the nodes and `--initial-cluster` before any node
    /// starts: to make their data directories (a restored backup).
    pub fn before_start(mut self, f: impl FnOnce(&[TestNode], &str) -> Result<()> + Send + 'static) -> Self {
        self.before_start = Some(Box::new(f));
        self
    }

    /// Leaves node `id` out at the start (a member that is down, or not
    /// yet started, when the cluster is new); [`TestCluster::restart`]
    /// starts it later.
    pub fn absent(mut self, id: u64) -> Self {
        self.absent.push(id);
        self
    }

    /// Secured as production should be: certificates for the nodes'
    /// addresses, TLS on client ports, peer ports with mutual TLS, and auth
    /// enabled once a leader is elected; the cluster's own clients use
    /// root's token ([`TestCluster::credentials`]).
    pub fn secure(mut self, on: bool) -> Self {
        self.secure = on;
        self.peer_ports |= on;
        self
    }

    /// Gives every node a `--metrics-listen` port of its own
    /// ([`TestNode::metrics_addr`]; not with network namespaces).
    pub fn metrics_ports(mut self, on: bool) -> Self {
        self.metrics_ports = on;
        self
    }

    /// Runs every node under libfaketime (`lib`, from
    /// [`crate::faketime::library`]), so that
    /// [`TestCluster::set_clock_offset`] can move its wall clock.
    pub fn faketime(mut self, lib: PathBuf) -> Self {
        self.faketime = Some(lib);
        self
    }

    /// Starts node `id` with its wall clock `offset_ms` off (needs
    /// [`faketime`](Self::faketime)).
    pub fn clock_offset(mut self, id: u64, offset_ms: i64) -> Self {
        self.clock_offsets.push((id, offset_ms));
        self
    }

    /// Gives every node a peer port of its own (`--peer-listen`), so the
    /// client port serves clients only.
    pub fn peer_ports(mut self, on: bool) -> Self {
        self.peer_ports = on;
        self
    }

    /// Runs every node with TLS on its client port, with the certificates
    /// in `tls` (and peer ports, which TLS needs); the cluster's clients
    /// and status calls use it too.
    pub fn tls(mut self, tls: crate::tls::TestTls) -> Self {
        self.tls = Some(tls);
        self.peer_ports = true;
        self
    }

    /// Puts every node's data directory on a `powercut_fs` mount of its
    /// own (`n{id}`, over the backing directory `n{id}.disk`; the file
    /// system's messages in `n{id}.disk.log`), so that
    /// [`TestCluster::power_cut`] loses what a node had not synced. Needs
    /// root and FUSE ([`crate::powercut::mount::unavailable`] says why not).
    pub fn powercut_disks(mut self, on: bool) -> Self {
        self.powercut_disks = on;
        self
    }

    /// When the `powercut_fs` disks make a name change durable (POSIX's
    /// directory fsync unless told otherwise).
    pub fn powercut_names(mut self, names: crate::powercut::Names) -> Self {
        self.powercut_names = names;
        self
    }

    /// What the `powercut_fs` disks' `statfs` reports (the backing file
    /// system's space unless told otherwise; [`crate::powercut::Size`]).
    pub fn powercut_size(mut self, size: crate::powercut::Size) -> Self {
        self.powercut_size = size;
        self
    }

    /// Whether [`start`](Self::start) waits for a leader (the default).
    pub fn wait_leader(mut self, wait: bool) -> Self {
        self.wait_leader = wait;
        self
    }

    /// Keeps the nodes' data and logs in a new directory under `parent`
    /// (default: the system's temporary directory).
    pub fn dir_in(mut self, parent: impl Into<std::path::PathBuf>) -> Self {
        self.parent = Some(parent.into());
        self
    }

    /// Extra flags for every node (e.g. `--snapshot-entries 50`).
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.extra_args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Extra environment for node `id`'s process from the start (e.g. a
    /// failpoint); `TestCluster::restart_with_env` changes it later.
    pub fn node_env(mut self, id: u64, key: &str, value: &str) -> Self {
        self.env.push((id, key.into(), value.into()));
        self
    }

    /// Runs each node in its own network namespace on a private bridge, so
    /// that [`TestCluster::cut`] can partition it (needs root; see
    /// [`NetNs::available`]).
    pub fn netns(mut self, on: bool) -> Self {
        self.netns = on;
        self
    }

    /// Members known by DNS names, as a StatefulSet's pods are
    /// (`--initial-cluster 1=hs-1.hs-peers:7401,...`): each node in its
    /// own network namespace (as [`netns`](Self::netns)) whose resolver is
    /// a pod's, asking the cluster's own DNS server ([`TestCluster::dns`]).
    pub fn names(mut self, on: bool) -> Self {
        self.names = on;
        self.netns |= on;
        self
    }

    /// With names: whether each name is published before its node starts
    /// (yes unless told); if not, the test publishes them
    /// ([`TestCluster::publish`]).
    pub fn publish_names(mut self, on: bool) -> Self {
        self.publish_names = on;
        self
    }

    pub async fn start(self) -> Result<TestCluster> {
        let mut tempdir = tempfile::Builder::new();
        tempdir.prefix("handlestore-test-");
        let dir = match &self.parent {
            Some(parent) => tempdir.tempdir_in(parent)?,
            None => tempdir.tempdir()?,
        };
        let mut net = if self.netns { Some(NetNs::create()?) } else { None };
        let mut nodes = Vec::new();
        for i in 0..self.size {
            let id = i as u64 + 1;
            let mut node = TestNode::new(&mut net, dir.path(), id, self.peer_ports)?;
            if self.metrics_ports && net.is_none() {
                node.metrics_addr = Some(format!("127.0.0.1:{}", free_port()));
            }
            if self.tls.is_some() || self.secure {
                node.scheme = "https";
            }
            node.bin = self.bin.clone();
            let clock_env = match &self.faketime {
                Some(lib) => {
                    let file = clock_file(dir.path(), id);
                    let env = crate::faketime::env(lib, &file)?;
                    for (_, offset) in self.clock_offsets.iter().filter(|(n, _)| *n == id) {
                        crate::faketime::set_offset(&file, *offset)?;
                    }
                    env
                }
                None => Vec::new(),
            };
            node.env = self
                .env
                .iter()
                .filter(|(node, _, _)| *node == id)
                .map(|(_, k, v)| (k.clone(), v.clone()))
                .chain(clock_env)
                .collect();
            nodes.push(node);
        }
        let tls = match self.secure {
            true => Some(certificates_for(dir.path(), &nodes)?),
            false => self.tls,
        };
        let mut cluster = TestCluster {
            nodes,
            dir,
            extra_args: self.extra_args,
            net,
            peer_ports: self.peer_ports,
            tls,
            token: None,
            disks: std::collections::BTreeMap::new(),
            shared: None,
            dns: None,
        };
        if self.names {
            cluster.name_members(self.publish_names)?;
        }
        if self.powercut_disks {
            cluster.mount_disks(self.powercut_names, self.powercut_size)?;
        }
        if let Some(f) = self.before_start {
            f(&cluster.nodes, &cluster.initial_cluster())?;
        }
        for id in (1..=self.size as u64).filter(|id| !self.absent.contains(id)) {
            cluster.spawn(id)?;
        }
        if !self.wait_leader {
            return Ok(cluster);
        }
        if let Err(e) = cluster.wait_leader(Duration::from_secs(30)).await {
            let logs: Vec<String> = (1..=self.size as u64)
                .map(|id| format!("node {id}:\n{}", cluster.log_tail(id, 20)))
                .collect();
            bail!("{e}\n{}", logs.join("\n"));
        }
        if self.secure {
            let root = cluster.client().auth_enable().await?.context("root's token")?;
            cluster.set_token(Some(root));
        }
        Ok(cluster)
    }
}

/// Certificates for `nodes` at their addresses, in `dir/certs`.
fn certificates_for(dir: &Path, nodes: &[TestNode]) -> Result<crate::tls::TestTls> {
    let hosts: Vec<(u64, String)> = nodes
        .iter()
        .map(|n| {
            (
                n.id,
                n.addr.rsplit_once(':').map_or(n.addr.clone(), |(h, _)| h.to_string()),
            )
        })
        .collect();
    crate::tls::TestTls::make_for(&dir.join("certs"), &hosts, false)
}

/// A node's log filter: its own `RUST_LOG` if the test gave it one, else
/// `HANDLESTORE_TEST_LOG`, else info.
fn log_filter(env: &[(String, String)]) -> String {
    env.iter()
        .find(|(k, _)| k == "RUST_LOG")
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var("HANDLESTORE_TEST_LOG").ok())
        .unwrap_or_else(|| "info".into())
}

/// The file holding node `id`'s clock offset under libfaketime.
fn clock_file(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("n{id}.faketime"))
}

/// Set to keep every test cluster's data and node logs when it is dropped
/// (their directory is printed), to look into a failed run afterwards.
pub const KEEP_DIRS: &str = "HANDLESTORE_KEEP_TEST_DIRS";

/// Real `handlestore` processes on loopback. Dropping it kills them all
/// and removes their data (unless `HANDLESTORE_KEEP_TEST_DIRS` is set); if
/// the test is failing, node logs are printed.
pub struct TestCluster {
    pub nodes: Vec<TestNode>,
    dir: tempfile::TempDir,
    extra_args: Vec<String>,
    net: Option<NetNs>,
    peer_ports: bool,
    tls: Option<crate::tls::TestTls>,
    /// The token the cluster's own clients send (once auth is on).
    token: Option<String>,
    /// Each node's `powercut_fs` mount, if the cluster has them.
    disks: std::collections::BTreeMap<u64, PowercutMount>,
    /// The cluster's directory made a shared mount, where the disks meet
    /// network namespaces (see [`SharedDir`]).
    shared: Option<SharedDir>,
    /// The DNS server its members' names are published on, with names.
    dns: Option<crate::dns::TestDns>,
}

/// A directory bind-mounted on itself and made a shared mount, so that
/// mounts and unmounts under it reach the mount namespaces that
/// `ip netns exec` gives each node. This machine's root mount is private:
/// without this, a node started earlier keeps its own copy of another
/// node's `powercut_fs` mount, whose file system then never learns it was
/// unmounted, and a node started later may not see a disk mounted again.
struct SharedDir(PathBuf);

impl SharedDir {
    fn new(dir: &Path) -> Result<Self> {
        use nix::mount::{MsFlags, mount};
        let none: Option<&str> = None;
        mount(Some(dir), dir, none, MsFlags::MS_BIND, none).context("bind-mounting the cluster's directory")?;
        let shared = Self(dir.to_path_buf());
        mount(none, dir, none, MsFlags::MS_SHARED | MsFlags::MS_REC, none)
            .context("making the cluster's directory a shared mount")?;
        Ok(shared)
    }
}

impl Drop for SharedDir {
    fn drop(&mut self) {
        let _ = nix::mount::umount2(&self.0, nix::mount::MntFlags::MNT_DETACH);
    }
}

impl TestCluster {
    pub fn builder(size: usize) -> TestClusterBuilder {
        TestClusterBuilder {
            size,
            extra_args: Vec::new(),
            netns: false,
            env: Vec::new(),
            parent: None,
            faketime: None,
            clock_offsets: Vec::new(),
            wait_leader: true,
            peer_ports: false,
            tls: None,
            secure: false,
            absent: Vec::new(),
            metrics_ports: false,
            before_start: None,
            bin: None,
            powercut_disks: false,
            powercut_names: crate::powercut::Names::Posix,
            powercut_size: crate::powercut::Size::Backing,
            names: false,
            publish_names: true,
        }
    }

    /// Starts `size` nodes with test defaults and waits for a leader.
    pub async fn start(size: usize) -> Result<Self> {
        Self::builder(size).start().await
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn node(&self, id: u64) -> &TestNode {
        &self.nodes[(id - 1) as usize]
    }

    fn node_mut(&mut self, id: u64) -> &mut TestNode {
        &mut self.nodes[(id - 1) as usize]
    }

    /// `--initial-cluster`: every node but those that joined by
    /// themselves (`--join`), which came later.
    pub fn initial_cluster(&self) -> String {
        self.nodes
            .iter()
            .filter(|n| !n.joined)
            .map(|n| match n.peer_addr.as_str() {
                "" => format!("{}={}", n.id, n.known_as(&n.addr)),
                peer => format!("{}={}/{}", n.id, n.known_as(&n.addr), n.known_as(peer)),
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    fn spawn(&mut self, id: u64) -> Result<()> {
        let initial = self.initial_cluster();
        let extra = self.extra_args.clone();
        let tls = self.tls.clone();
        let netns = self.net.is_some();
        let mut command = match &self.net {
            Some(net) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", &net.ns(id)]).arg(handlestore_bin());
                c
            }
            None => Command::new(self.node(id).bin.clone().unwrap_or_else(handlestore_bin)),
        };
        let node = self.node_mut(id);
        let mut port_args: Vec<String> = match node.peer_addr.as_str() {
            "" => vec![],
            peer => vec!["--peer-listen".into(), peer.into()],
        };
        if let Some(tls) = &tls {
            port_args.extend(tls.node_args(id));
        }
        if let Some(metrics) = &node.metrics_addr {
            port_args.extend(["--metrics-listen".to_string(), metrics.clone()]);
        }
        if netns {
            // Private addresses on a bridge of the test's own.
            port_args.push("--insecure".into());
        }
        command.envs(node.env.iter().map(|(k, v)| (k, v)));
        std::fs::create_dir_all(&node.data)?;
        let log = File::options().create(true).append(true).open(&node.log)?;
        let child = command
            .arg("node")
            .args(["--id", &id.to_string()])
            .args(["--listen", &node.addr])
            .args(port_args)
            .arg("--data")
            .arg(&node.data)
            .args(["--initial-cluster", &initial])
            .args(fast_defaults(&extra))
            .args(&extra)
            .args(&node.own_args)
            .env("RUST_LOG", log_filter(&node.env))
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log))
            .spawn()
            .context("spawning handlestore node")?;
        node.child = Some(child);
        node.paused = false;
        Ok(())
    }

    /// Adds (and starts) a node that is not in the initial cluster; it
    /// starts with `--initial-cluster-state existing` and waits to be added.
    pub fn spawn_extra(&mut self) -> Result<u64> {
        let id = self.nodes.len() as u64 + 1;
        let mut node = TestNode::new(&mut self.net, self.dir.path(), id, self.peer_ports)?;
        if self.tls.is_some() {
            node.scheme = "https";
        }
        self.nodes.push(node);
        let saved = self.extra_args.clone();
        self.extra_args
            .extend(["--initial-cluster-state".to_string(), "existing".to_string()]);
        let res = self.spawn(id);
        self.extra_args = saved;
        res.map(|_| id)
    }

    /// Adds and starts a node as a StatefulSet's later ordinal starts:
    /// `--initial-cluster-state existing --join` with the founders'
    /// endpoints, advertising its own addresses (under its name, which is
    /// published first, in a cluster with names); `env` for its process.
    /// It joins by itself.
    pub fn spawn_joining(&mut self, env: &[(&str, &str)]) -> Result<u64> {
        let id = self.nodes.len() as u64 + 1;
        let mut node = TestNode::new(&mut self.net, self.dir.path(), id, self.peer_ports)?;
        if self.tls.is_some() {
            node.scheme = "https";
        }
        if self.dns.is_some() {
            node.name = Some(format!("hs-{id}.hs-peers"));
        }
        let join: Vec<String> = self
            .nodes
            .iter()
            .filter(|n| !n.joined)
            .map(|n| format!("{}://{}", n.scheme, n.known_as(&n.addr)))
            .collect();
        node.own_args = ["--initial-cluster-state", "existing", "--join", &join.join(",")]
            .into_iter()
            .map(String::from)
            .chain(["--advertise".to_string(), node.known_as(&node.addr)])
            .collect();
        if !node.peer_addr.is_empty() {
            node.own_args
                .extend(["--peer-advertise".to_string(), node.known_as(&node.peer_addr)]);
        }
        node.env = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        node.joined = true;
        self.nodes.push(node);
        if self.dns.is_some() {
            self.resolve_like_a_pod(id)?;
            self.publish(id);
        }
        self.spawn(id)?;
        Ok(id)
    }

    pub fn endpoints(&self) -> Vec<String> {
        self.nodes.iter().map(TestNode::endpoint).collect()
    }

    /// Runs `handlestore ARGS` (the operator CLI) from node `id`'s network
    /// namespace, as a Kubernetes Job runs it from a pod of its own:
    /// resolving members' names as the nodes do, with
    /// `HANDLESTORE_ENDPOINTS` every node by name.
    pub fn cli_in(&self, id: u64, args: &[&str]) -> std::process::Output {
        let net = self.net.as_ref().expect("a cluster in network namespaces");
        let endpoints: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("{}://{}", n.scheme, n.known_as(&n.addr)))
            .collect();
        Command::new("ip")
            .args(["netns", "exec", &net.ns(id)])
            .arg(handlestore_bin())
            .args(args)
            .env("HANDLESTORE_ENDPOINTS", endpoints.join(","))
            .output()
            .expect("running the CLI")
    }

    /// Waits until node `id` answers `/readyz` with 200 (plain HTTP), as a
    /// readiness probe would see it.
    pub async fn wait_ready(&self, id: u64, timeout: Duration) -> Result<()> {
        let url = format!("http://{}/readyz", self.node(id).addr);
        let deadline = Instant::now() + timeout;
        loop {
            let answer = reqwest::get(&url).await;
            if answer.as_ref().is_ok_and(|r| r.status().is_success()) {
                return Ok(());
            }
            if Instant::now() > deadline {
                let why = match answer {
                    Ok(r) => format!("{} {}", r.status(), r.text().await.unwrap_or_default()),
                    Err(e) => e.to_string(),
                };
                bail!("node {id} was not ready within {timeout:?}: {why}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Runs `handlestore ARGS` (the operator CLI) against every node, as an
    /// operator would with `HANDLESTORE_ENDPOINTS`; waits for its output.
    pub fn cli(&self, args: &[&str]) -> std::process::Output {
        Command::new(handlestore_bin())
            .args(args)
            .env("HANDLESTORE_ENDPOINTS", self.endpoints().join(","))
            .output()
            .expect("running the CLI")
    }

    /// A client over every node (with the cluster's TLS, if it has any).
    pub fn client(&self) -> Client {
        self.client_builder(self.endpoints()).build().expect("client")
    }

    /// A client that only talks to one node.
    pub fn client_for(&self, id: u64) -> Client {
        self.client_builder([self.node(id).endpoint()]).build().expect("client")
    }

    /// A client builder for `endpoints`, with the cluster's TLS (and its
    /// client certificate) if it has any.
    pub fn client_builder<I: IntoIterator<Item = String>>(&self, endpoints: I) -> handlestore_client::ClientBuilder {
        let mut builder = Client::builder(endpoints);
        if let Some(tls) = &self.tls {
            builder = builder.tls(tls.client());
        }
        if let Some(token) = &self.token {
            builder = builder.token(token.clone());
        }
        builder
    }

    /// What a client of this cluster needs: its TLS (and CA file) and
    /// token, if it has them.
    pub fn credentials(&self) -> crate::creds::Credentials {
        crate::creds::Credentials {
            tls: self.tls.as_ref().map(|t| (t.client(), t.path("ca.pem"))),
            token: self.token.clone(),
        }
    }

    /// The token the cluster's own clients (status, waits, `client()`)
    /// send from now on: root's, once a test enabled auth.
    pub fn set_token(&mut self, token: Option<String>) {
        self.token = token;
    }

    /// Kills a node with SIGKILL (a crash: no shutdown path runs).
    pub fn kill(&mut self, id: u64) {
        let node = self.node_mut(id);
        if let Some(mut c) = node.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        node.paused = false;
    }

    /// Mounts `powercut_fs` at every node's data directory.
    fn mount_disks(&mut self, names: crate::powercut::Names, size: crate::powercut::Size) -> Result<()> {
        if self.net.is_some() {
            self.shared = Some(SharedDir::new(self.dir.path())?);
        }
        for node in &self.nodes {
            let backing = self.dir.path().join(format!("n{}.disk", node.id));
            let log = self.dir.path().join(format!("n{}.disk.log", node.id));
            let disk = PowercutMount::start_sized(&backing, &node.data, &log, names, size)?;
            self.disks.insert(node.id, disk);
        }
        Ok(())
    }

    /// Cuts the power of nodes `ids` at once (a cluster started with
    /// [`TestClusterBuilder::powercut_disks`]): each node freezes (SIGSTOP),
    /// its disk drops every write it had not synced, the node is killed,
    /// and its disk is mounted again over what it had synced. The nodes
    /// stay down; [`restart`](Self::restart) starts them again.
    pub fn power_cut(&mut self, ids: &[u64]) -> Result<()> {
        for &id in ids {
            if !self.disks.contains_key(&id) {
                bail!("node {id} has no powercut_fs disk (start the cluster with .powercut_disks(true))");
            }
            if self.node(id).is_running() && !self.node(id).paused {
                self.pause(id)?;
            }
        }
        for &id in ids {
            self.disks.get_mut(&id).expect("checked").cut()?;
        }
        for &id in ids {
            self.kill(id);
        }
        for &id in ids {
            self.disks.get_mut(&id).expect("checked").remount()?;
        }
        Ok(())
    }

    /// Cuts node `id`'s power at its next write to a table, manifest or
    /// snapshot file (a cluster started with
    /// [`TestClusterBuilder::powercut_disks`]), waiting up to `within` for
    /// one: the disk refuses that write and drops every unsynced one. Then
    /// the node is killed and its disk mounted again over what it had
    /// synced, as by [`power_cut`](Self::power_cut); it stays down. Returns
    /// the file system's line about the cut (the file, what was dropped).
    pub async fn power_cut_at_next_table_write(&mut self, id: u64, within: Duration) -> Result<String> {
        let Some(disk) = self.disks.get_mut(&id) else {
            bail!("node {id} has no powercut_fs disk (start the cluster with .powercut_disks(true))");
        };
        let before = disk.arm()?;
        let deadline = Instant::now() + within;
        let line = loop {
            if let Some(line) = self.disks[&id].cut_since(before) {
                break line;
            }
            if Instant::now() > deadline {
                bail!("node {id} wrote no table, manifest or snapshot file within {within:?}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        self.kill(id);
        self.disks.get_mut(&id).expect("checked").remount()?;
        Ok(line)
    }

    /// Stops a node with SIGTERM and waits for it to exit.
    pub fn stop(&mut self, id: u64) -> Result<()> {
        let node = self.node_mut(id);
        if let Some(mut c) = node.child.take() {
            signal(c.id(), "TERM")?;
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                if c.try_wait()?.is_some() {
                    break;
                }
                if Instant::now() > deadline {
                    let _ = c.kill();
                    let _ = c.wait();
                    bail!("node {id} did not stop within 20s of SIGTERM");
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(())
    }

    /// Stops nodes `ids` with SIGTERM all at once (as an orchestrator
    /// stopping the whole cluster does) and waits for each to exit.
    pub fn stop_together(&mut self, ids: &[u64]) -> Result<()> {
        for id in ids {
            if let Some(c) = &self.node(*id).child {
                signal(c.id(), "TERM")?;
            }
        }
        for id in ids {
            self.stop(*id)?;
        }
        Ok(())
    }

    /// Cuts node `id` off the network (needs a cluster started with
    /// `netns(true)`): a real partition, outside the node.
    pub fn cut(&self, id: u64) -> Result<()> {
        match &self.net {
            Some(n) => n.cut(id),
            None => bail!("this cluster has no private network (start it with .netns(true))"),
        }
    }

    /// Reconnects a node cut off with [`cut`](Self::cut).
    pub fn heal(&self, id: u64) -> Result<()> {
        match &self.net {
            Some(n) => n.heal(id),
            None => bail!("this cluster has no private network"),
        }
    }

    /// Cuts node `id` off the other nodes, not off clients (needs a cluster
    /// started with `netns(true)`, and iptables) until [`rejoin`](Self::rejoin).
    pub fn isolate(&self, id: u64) -> Result<()> {
        match &self.net {
            Some(n) => n.isolate(id),
            None => bail!("this cluster has no private network (start it with .netns(true))"),
        }
    }

    /// Reconnects a node cut off with [`isolate`](Self::isolate).
    pub fn rejoin(&self, id: u64) -> Result<()> {
        match &self.net {
            Some(n) => n.rejoin(id),
            None => bail!("this cluster has no private network"),
        }
    }

    /// Degrades node `id`'s link (delay, jitter, loss, reordering; needs a
    /// cluster started with `netns(true)`) until [`restore_link`](Self::restore_link).
    pub fn degrade_link(
        &self,
        id: u64,
        params: &crate::linkem::LinkParams,
        dir: crate::netns::Direction,
    ) -> Result<()> {
        match &self.net {
            Some(n) => n.degrade(id, params, dir),
            None => bail!("this cluster has no private network (start it with .netns(true))"),
        }
    }

    /// Gives node `id` back the link [`degrade_link`](Self::degrade_link) degraded.
    pub fn restore_link(&self, id: u64) {
        if let Some(n) = &self.net {
            n.restore(id);
        }
    }

    pub fn has_network(&self) -> bool {
        self.net.is_some()
    }

    /// Gives every member its name, a pod's resolver, and, if `publish`,
    /// its record (see [`TestClusterBuilder::names`]).
    fn name_members(&mut self, publish: bool) -> Result<()> {
        let net = self.net.as_ref().context("names need network namespaces")?;
        self.dns = Some(crate::dns::TestDns::start(net.host_ip().parse()?)?);
        for node in &mut self.nodes {
            node.name = Some(format!("hs-{}.hs-peers", node.id));
        }
        for id in 1..=self.nodes.len() as u64 {
            self.resolve_like_a_pod(id)?;
            if publish {
                self.publish(id);
            }
        }
        Ok(())
    }

    /// Node `id`'s resolv.conf and hosts, as the kubelet writes a pod's:
    /// the cluster's DNS server and search list; its own name and address.
    fn resolve_like_a_pod(&self, id: u64) -> Result<()> {
        let (net, node) = (self.net.as_ref().context("no network")?, self.node(id));
        let ip = net.ip(id);
        let short = format!("hs-{id}");
        let hosts = format!(
            "127.0.0.1 localhost\n::1 localhost\n{ip} {}.{} {short}\n",
            node.name.as_deref().unwrap_or(&short),
            crate::dns::DOMAIN
        );
        net.etc(id, "resolv.conf", &self.dns().resolv_conf())?;
        net.etc(id, "hosts", &hosts)
    }

    /// The DNS server of a cluster with names.
    pub fn dns(&self) -> &crate::dns::TestDns {
        self.dns
            .as_ref()
            .expect("a cluster with names (TestClusterBuilder::names)")
    }

    /// Publishes node `id`'s name at its address now.
    pub fn publish(&self, id: u64) {
        let node = self.node(id);
        let ip = node
            .addr
            .rsplit_once(':')
            .and_then(|(host, _)| host.parse().ok())
            .expect("an IPv4 address");
        self.dns().publish(node.name.as_deref().expect("a named node"), ip);
    }

    /// Takes node `id`'s name out of the DNS: it resolves no more.
    pub fn unpublish(&self, id: u64) {
        self.dns()
            .unpublish(self.node(id).name.as_deref().expect("a named node"));
    }

    /// Gives node `id` (stopped) a new network namespace and address, as a
    /// pod re-created on another machine: the old address goes. Its data
    /// stays; its name is not published at the new address yet.
    pub fn readdress(&mut self, id: u64) -> Result<()> {
        if self.node(id).is_running() {
            bail!("node {id} is running");
        }
        let ip = self
            .net
            .as_mut()
            .context("readdress needs network namespaces")?
            .readdress(id)?;
        let node = self.node_mut(id);
        node.addr = format!("{ip}:7401");
        if !node.peer_addr.is_empty() {
            node.peer_addr = format!("{ip}:7402");
        }
        if self.dns.is_some() {
            self.resolve_like_a_pod(id)?;
        }
        Ok(())
    }

    /// Moves node `id`'s wall clock to real time plus `offset_ms` (the
    /// cluster must run under [`TestClusterBuilder::faketime`]); it takes
    /// effect within [`crate::faketime::TAKES_EFFECT`].
    pub fn set_clock_offset(&self, id: u64, offset_ms: i64) -> Result<()> {
        let file = clock_file(self.dir(), id);
        if !file.exists() {
            bail!("node {id} does not run under libfaketime (start the cluster with .faketime(lib))");
        }
        crate::faketime::set_offset(&file, offset_ms)
    }

    /// SIGSTOP: the process freezes (like a long GC pause or a stalled VM).
    pub fn pause(&mut self, id: u64) -> Result<()> {
        let node = self.node_mut(id);
        let pid = node.pid().ok_or_else(|| anyhow!("node {id} is not running"))?;
        signal(pid, "STOP")?;
        node.paused = true;
        Ok(())
    }

    /// SIGCONT after `pause`.
    pub fn resume(&mut self, id: u64) -> Result<()> {
        let node = self.node_mut(id);
        let pid = node.pid().ok_or_else(|| anyhow!("node {id} is not running"))?;
        signal(pid, "CONT")?;
        node.paused = false;
        Ok(())
    }

    /// Waits up to `within` for node `id`'s process to end by itself (a
    /// crash at a failpoint), and returns how it ended.
    pub async fn wait_exit(&mut self, id: u64, within: Duration) -> Result<std::process::ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            let node = self.node_mut(id);
            let child = node.child.as_mut().ok_or_else(|| anyhow!("node {id} is not running"))?;
            if let Some(status) = child.try_wait()? {
                node.child = None;
                return Ok(status);
            }
            if Instant::now() > deadline {
                bail!("node {id} still runs after {within:?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Starts a stopped or killed node again from its data directory.
    pub fn restart(&mut self, id: u64) -> Result<()> {
        if self.node(id).is_running() {
            bail!("node {id} is running");
        }
        self.spawn(id)
    }

    /// Which binary node `id` runs from its next start: `Some` another
    /// build's (an earlier release), `None` this build's.
    pub fn set_binary(&mut self, id: u64, bin: Option<PathBuf>) {
        self.node_mut(id).bin = bin;
    }

    /// Like [`restart`](Self::restart), with extra environment variables for
    /// this node from now on (e.g. a failpoint); an empty list clears them.
    pub fn restart_with_env(&mut self, id: u64, env: &[(&str, &str)]) -> Result<()> {
        self.node_mut(id).env = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        self.restart(id)
    }

    pub async fn status(&self, id: u64) -> Result<pb::StatusResponse> {
        let ch = self.client_for(id).channel(0).context("a channel")?;
        let mut req = tonic::Request::new(pb::StatusRequest {});
        req.set_timeout(Duration::from_secs(2));
        Ok(AdminClient::new(ch).status(req).await?.into_inner())
    }

    /// Waits until a running node says it is the leader and every other
    /// member that answers agrees and knows its address; returns its id.
    /// A follower forwards writes only once it knows the leader's address
    /// (from the membership the leader replicates; until then it refuses
    /// with a hint), which on a loaded machine can come a moment after it
    /// knows the leader's id.
    /// Waits until every running node holds one cluster name (a leader
    /// names a new cluster once every member speaks peer protocol 2);
    /// returns it.
    pub async fn wait_named(&self, timeout: Duration) -> Result<String> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let mut names = Vec::new();
            for n in self.nodes.iter().filter(|n| n.is_running()) {
                names.push(self.status(n.id).await.map(|s| s.cluster_id).unwrap_or_default());
            }
            if names
                .first()
                .is_some_and(|f| !f.is_empty() && names.iter().all(|n| n == f))
            {
                return Ok(names.swap_remove(0));
            }
            if std::time::Instant::now() >= deadline {
                bail!("the cluster was not named within {timeout:?}: {names:?}");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Node `id`'s sample of metric `name` (a counter's `_total`, a gauge),
    /// scraped from its metrics port, or its client port if it has none.
    pub async fn metric(&self, id: u64, name: &str) -> Option<f64> {
        let n = self.node(id);
        let addr = n.metrics_addr.clone().unwrap_or_else(|| n.addr.clone());
        let text = reqwest::get(format!("http://{addr}/metrics"))
            .await
            .expect("scrape")
            .text()
            .await
            .expect("body");
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .and_then(|v| v.trim().parse().ok())
    }

    /// Waits until one of `ids` says it leads (whatever the others say: a
    /// leader cut off may still believe it leads); returns which.
    pub async fn wait_leader_among(&self, ids: &[u64], timeout: Duration) -> Result<u64> {
        let deadline = Instant::now() + timeout;
        loop {
            for &id in ids {
                if self.status(id).await.is_ok_and(|s| s.state == "leader") {
                    return Ok(id);
                }
            }
            if Instant::now() > deadline {
                bail!("none of nodes {ids:?} led within {timeout:?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn wait_leader(&self, timeout: Duration) -> Result<u64> {
        let deadline = Instant::now() + timeout;
        loop {
            let mut statuses = Vec::new();
            for n in self.nodes.iter().filter(|n| n.is_running() && !n.paused) {
                if let Ok(s) = self.status(n.id).await {
                    statuses.push(s);
                }
            }
            let leaders: HashSet<u64> = statuses
                .iter()
                .filter(|s| s.state == "leader")
                .map(|s| s.node_id)
                .collect();
            // Every member by the leader's membership must see it, including
            // one that has not yet received that membership (it knows no
            // address to forward to); a node waiting to be added knows no
            // leader yet and is not asked.
            let members: HashSet<u64> = statuses
                .iter()
                .filter(|s| s.state == "leader")
                .flat_map(|s| s.members.iter().map(|m| m.id))
                .collect();
            let views: HashSet<(u64, String)> = statuses
                .iter()
                .filter(|s| members.contains(&s.node_id) || s.members.iter().any(|m| m.id == s.node_id))
                .map(|s| (s.leader_id, s.leader_addr.clone()))
                .collect();
            if let [leader] = leaders.iter().copied().collect::<Vec<_>>()[..]
                && views.len() == 1
                && views.contains(&(leader, self.node(leader).known_as(&self.node(leader).addr)))
            {
                return Ok(leader);
            }
            if Instant::now() > deadline {
                bail!("no single leader within {timeout:?}: leaders {leaders:?}, views (id, address) {views:?}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// An admin client on the current leader (waiting for one). Errors are
    /// UNAVAILABLE, so `retry_unavailable` can re-resolve the leader.
    pub async fn leader_admin(&self) -> Result<AdminClient<handlestore_client::NodeChannel>, tonic::Status> {
        let leader = self
            .wait_leader(Duration::from_secs(30))
            .await
            .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
        self.client_for(leader)
            .channel(0)
            .map(AdminClient::new)
            .ok_or_else(|| tonic::Status::unavailable("no channel"))
    }

    /// Waits until node `id` has applied at least `index`.
    pub async fn wait_applied(&self, id: u64, index: u64, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(s) = self.status(id).await
                && s.applied_index >= index
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                let seen = self.status(id).await.map(|s| s.applied_index).ok();
                bail!("node {id} did not apply {index} within {timeout:?} (at {seen:?})");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The last lines of a node's log.
    pub fn log_tail(&self, id: u64, lines: usize) -> String {
        let Ok(f) = File::open(&self.node(id).log) else {
            return String::new();
        };
        let all: Vec<String> = BufReader::new(f).lines().map_while(Result::ok).collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// The whole log of a node.
    pub fn log(&self, id: u64) -> String {
        std::fs::read_to_string(&self.node(id).log).unwrap_or_default()
    }
}

fn signal(pid: u32, sig: &str) -> Result<()> {
    let st = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()?;
    if !st.success() {
        bail!("kill -{sig} {pid} failed");
    }
    Ok(())
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        let failing = std::thread::panicking();
        // How each node had ended before it is stopped here: a node that
        // died on its own (a crash, a signal) leaves no line in its log.
        let mut ended = Vec::new();
        for n in &mut self.nodes {
            if let Some(mut c) = n.child.take() {
                ended.push(match c.try_wait() {
                    Ok(Some(status)) => format!("had exited on its own: {status}"),
                    _ => "was running".to_string(),
                });
                if n.paused {
                    let _ = signal(c.id(), "CONT");
                }
                let _ = c.kill();
                let _ = c.wait();
            } else {
                ended.push("was stopped by the test".to_string());
            }
        }
        if failing {
            for (n, ended) in self.nodes.iter().zip(ended) {
                eprintln!(
                    "---- node {} ({ended}) log (last 60 lines) ----\n{}",
                    n.id,
                    self.log_tail(n.id, 60)
                );
            }
        }
        // Unmounted before their directories are removed.
        self.disks.clear();
        self.shared = None;
        if std::env::var_os(KEEP_DIRS).is_some() {
            self.dir.disable_cleanup(true);
            eprintln!("{KEEP_DIRS}: node data and logs kept in {}", self.dir.path().display());
        }
    }
}

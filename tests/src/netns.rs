//! A private network for test nodes: one network namespace per node, joined
//! by veth pairs to a bridge in the host namespace. Cutting a node's veth is
//! a real partition, made outside the node: the kernel drops its traffic to
//! and from everyone. A node's link can also be degraded (delay, jitter,
//! loss, reordering): iptables rules in its namespace send its packets to
//! an NFQUEUE that `linkem` serves (src/linkem.rs), netem's work in user
//! space, since kernels built without sch_netem (this CI's) cannot do it
//! with `tc`. Needs root (CAP_NET_ADMIN), iproute2 and, for degraded links,
//! iptables.

use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::linkem::LinkParams;

use anyhow::{Context, Result, bail};

/// Inserts (`-I`) or deletes (`-D`) the rule that lets traffic cross
/// `bridge`. Without iptables there is no firewall to open.
fn iptables_forward(bridge: &str, op: &str) {
    // Both backends: the firewall may live in either (Docker picks one).
    for bin in ["iptables", "iptables-legacy"] {
        let _ = Command::new(bin)
            .args([op, "FORWARD", "-i", bridge, "-o", bridge, "-j", "ACCEPT"])
            .output();
    }
}

fn ip(args: &[&str]) -> Result<()> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .context("running ip (iproute2)")?;
    if !out.status.success() {
        bail!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(())
}

/// One bridge and its namespaces.
pub struct NetNs {
    tag: String,
    subnet: (u8, u8),
    /// Its nodes, and how many times each was given a new namespace and
    /// address ([`readdress`](Self::readdress)).
    nodes: BTreeMap<u64, u8>,
    /// The degraded links, by node.
    links: Mutex<HashMap<u64, LinkEmulator>>,
}

impl NetNs {
    /// Whether namespaces can be made here; the reason if not.
    pub fn available() -> Result<(), String> {
        // Unique per call: tests of one process probe at the same time, and
        // a shared name made all but one of them skip their partitions.
        static PROBES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = PROBES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let probe = format!("hsprobe{}-{n}", std::process::id());
        match ip(&["netns", "add", &probe]) {
            Ok(()) => {
                let _ = ip(&["netns", "del", &probe]);
                Ok(())
            }
            Err(e) => Err(format!(
                "network namespaces are unavailable ({e}); run as root with iproute2"
            )),
        }
    }

    /// Creates the bridge (10.a.b.1/24 on a random subnet).
    pub fn create() -> Result<Self> {
        let r: u32 = rand::random();
        let tag = format!("{:04x}", r & 0xffff);
        let subnet = (200 + (r >> 16) as u8 % 50, (r >> 24) as u8);
        let s = Self {
            tag,
            subnet,
            nodes: BTreeMap::new(),
            links: Mutex::new(HashMap::new()),
        };
        let br = s.bridge();
        ip(&["link", "add", &br, "type", "bridge"])?;
        // A bridge takes the lowest MAC of its ports unless given one: a
        // node added or taken away (`readdress`) would change the host's
        // MAC under the others' ARP caches, and their packets to the host
        // (the test's DNS server) would vanish for seconds.
        let mac = format!("02:68:73:{:02x}:{:02x}:01", r & 0xff, (r >> 8) & 0xff);
        ip(&["link", "set", &br, "address", &mac])?;
        ip(&["addr", "add", &format!("{}/24", s.host_ip()), "dev", &br])?;
        ip(&["link", "set", &br, "up"])?;
        // Traffic between nodes crosses the bridge, and so the host's
        // FORWARD chain (which Docker sets to DROP). Accept it on this bridge
        // only; the rule goes with the bridge.
        iptables_forward(&br, "-I");
        Ok(s)
    }

    fn bridge(&self) -> String {
        format!("hs{}b", self.tag)
    }

    /// Its namespace's and veth's suffix after a move: "" before any.
    fn moved(&self, id: u64) -> String {
        match self.nodes.get(&id) {
            Some(k) if *k > 0 => format!("r{k}"),
            _ => String::new(),
        }
    }

    fn veth(&self, id: u64) -> String {
        format!("hs{}v{id}{}", self.tag, self.moved(id))
    }

    /// The namespace node `id` runs in.
    pub fn ns(&self, id: u64) -> String {
        format!("hs{}n{id}{}", self.tag, self.moved(id))
    }

    /// The host's address on the bridge, reachable from every namespace.
    pub fn host_ip(&self) -> String {
        format!("10.{}.{}.1", self.subnet.0, self.subnet.1)
    }

    /// Node `id`'s address on the bridge (another after each move).
    pub fn ip(&self, id: u64) -> String {
        let moves = u64::from(self.nodes.get(&id).copied().unwrap_or(0));
        format!("10.{}.{}.{}", self.subnet.0, self.subnet.1, 10 + id + 50 * moves)
    }

    /// Writes `file` of node `id`'s own /etc (`hosts`, `resolv.conf`):
    /// `ip netns exec` bind-mounts `/etc/netns/<namespace>/<file>` over
    /// `/etc/<file>` for the processes it starts from then on.
    pub fn etc(&self, id: u64, file: &str, content: &str) -> Result<()> {
        let dir = std::path::Path::new("/etc/netns").join(self.ns(id));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        std::fs::write(dir.join(file), content).with_context(|| format!("writing {file} in {}", dir.display()))
    }

    /// Gives node `id` (stopped) a new namespace and address, as a pod
    /// re-created elsewhere: its old namespace, link and address go.
    /// Returns the new address.
    pub fn readdress(&mut self, id: u64) -> Result<String> {
        let moves = self.nodes.get(&id).copied().unwrap_or(0) + 1;
        self.remove_node(id);
        self.nodes.insert(id, moves);
        self.add_node(id)
    }

    fn remove_node(&mut self, id: u64) {
        let _ = ip(&["link", "del", &self.veth(id)]);
        let _ = ip(&["netns", "del", &self.ns(id)]);
        let _ = std::fs::remove_dir_all(std::path::Path::new("/etc/netns").join(self.ns(id)));
        // /etc/netns itself too, once no namespace has files there.
        let _ = std::fs::remove_dir("/etc/netns");
        self.nodes.remove(&id);
    }

    /// Creates node `id`'s namespace and links it to the bridge.
    pub fn add_node(&mut self, id: u64) -> Result<String> {
        let (ns, veth) = (self.ns(id), self.veth(id));
        ip(&["netns", "add", &ns])?;
        self.nodes.entry(id).or_insert(0);
        ip(&[
            "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &ns,
        ])?;
        ip(&["link", "set", &veth, "master", &self.bridge(), "up"])?;
        ip(&[
            "netns",
            "exec",
            &ns,
            "ip",
            "addr",
            "add",
            &format!("{}/24", self.ip(id)),
            "dev",
            "eth0",
        ])?;
        ip(&["netns", "exec", &ns, "ip", "link", "set", "eth0", "up"])?;
        ip(&["netns", "exec", &ns, "ip", "link", "set", "lo", "up"])?;
        Ok(self.ip(id))
    }

    /// Cuts node `id` off the network (both directions).
    pub fn cut(&self, id: u64) -> Result<()> {
        ip(&["link", "set", &self.veth(id), "down"])
    }

    /// Reconnects node `id`.
    pub fn heal(&self, id: u64) -> Result<()> {
        ip(&["link", "set", &self.veth(id), "up"])
    }

    /// Cuts node `id` off the other nodes but not off the host, where the
    /// clients are: iptables in its namespace drops what it exchanges with
    /// their addresses (a leader its peers lose while clients still reach
    /// it). Needs iptables.
    pub fn isolate(&self, id: u64) -> Result<()> {
        self.peer_rules(id, "-I")
    }

    /// Undoes [`isolate`](Self::isolate).
    pub fn rejoin(&self, id: u64) -> Result<()> {
        self.peer_rules(id, "-D")
    }

    fn peer_rules(&self, id: u64, op: &str) -> Result<()> {
        let bin = iptables_bin().context("iptables is not installed")?;
        let ns = self.ns(id);
        for other in self.nodes.keys().filter(|o| **o != id) {
            let addr = self.ip(*other);
            for (chain, side) in [("INPUT", "-s"), ("OUTPUT", "-d")] {
                ip(&["netns", "exec", &ns, bin, op, chain, side, &addr, "-j", "DROP"])?;
            }
        }
        Ok(())
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        self.links.lock().unwrap_or_else(|e| e.into_inner()).clear();
        for id in self.nodes.keys().copied().collect::<Vec<_>>() {
            self.remove_node(id);
        }
        iptables_forward(&self.bridge(), "-D");
        let _ = ip(&["link", "del", &self.bridge()]);
    }
}

/// Which of a node's traffic a degraded link slows: what arrives on its
/// veth, or that and what leaves by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    In,
    Both,
}

/// The NFQUEUE a degraded link's packets go to (queues are per namespace).
const LINK_QUEUE: u16 = 7;

impl NetNs {
    /// Whether links can be degraded here (beyond [`available`](Self::available)):
    /// the `linkem` binary is built and iptables runs; the reason if not.
    pub fn links_available() -> Result<(), String> {
        if crate::linkem::bin().is_none() {
            return Err("the linkem binary is not built (cargo build --release -p handlestore-tests)".into());
        }
        match iptables_bin() {
            Some(_) => Ok(()),
            None => Err("iptables is not installed".into()),
        }
    }

    /// Degrades node `id`'s link by `params` (as `tc qdisc add dev eth0
    /// root netem` would), until [`restore`](Self::restore): starts `linkem`
    /// in its namespace, then sends its traffic to it. A link already
    /// degraded is restored first.
    pub fn degrade(&self, id: u64, params: &LinkParams, dir: Direction) -> Result<()> {
        self.restore(id);
        let emulator = LinkEmulator::start(&self.ns(id), params, dir)?;
        self.links
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, emulator);
        Ok(())
    }

    /// Gives node `id` its link back as it was (nothing if it was not
    /// degraded): the rules go first, then `linkem` lets the packets it
    /// holds through and ends.
    pub fn restore(&self, id: u64) {
        let emulator = self.links.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
        drop(emulator);
    }
}

/// The first iptables that runs here.
fn iptables_bin() -> Option<&'static str> {
    ["iptables", "iptables-legacy"]
        .into_iter()
        .find(|bin| Command::new(bin).arg("-V").output().is_ok_and(|o| o.status.success()))
}

/// One degraded link: `linkem` in a namespace and the rules that feed it.
struct LinkEmulator {
    ns: String,
    iptables: &'static str,
    /// Each rule's chain and match (`-I`/`-D` go before them).
    rules: Vec<Vec<String>>,
    child: Child,
}

impl LinkEmulator {
    fn start(ns: &str, params: &LinkParams, dir: Direction) -> Result<Self> {
        let iptables = iptables_bin().context("iptables is not installed")?;
        let bin = crate::linkem::bin().context("the linkem binary is not built")?;
        let mut child = Command::new("ip")
            .args(["netns", "exec", ns])
            .arg(bin)
            .arg(format!("--queue={LINK_QUEUE}"))
            .args(params.args())
            .arg("--until-stdin-closes")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .context("starting linkem")?;
        // It says "ready" once bound to the queue; before that, the rules
        // would let packets bypass it.
        let mut line = String::new();
        let out = child.stdout.take().context("linkem's stdout")?;
        let _ = std::io::BufReader::new(out).read_line(&mut line);
        let mut s = Self {
            ns: ns.to_string(),
            iptables,
            rules: Vec::new(),
            child,
        };
        if line.trim() != "ready" {
            bail!("linkem did not start in {ns}: {}", line.trim());
        }
        let queue = [
            "-j",
            "NFQUEUE",
            "--queue-num",
            &LINK_QUEUE.to_string(),
            "--queue-bypass",
        ]
        .map(String::from);
        let mut chains = vec![["INPUT", "-i", "eth0"]];
        if dir == Direction::Both {
            chains.push(["OUTPUT", "-o", "eth0"]);
        }
        for chain in chains {
            let rule: Vec<String> = chain
                .iter()
                .map(|a| a.to_string())
                .chain(queue.iter().cloned())
                .collect();
            s.iptables("-I", &rule)?;
            s.rules.push(rule);
        }
        Ok(s)
    }

    fn iptables(&self, op: &str, rule: &[String]) -> Result<()> {
        let out = Command::new("ip")
            .args(["netns", "exec", &self.ns, self.iptables, op])
            .args(rule)
            .output()
            .context("running iptables")?;
        if !out.status.success() {
            bail!(
                "{} {op} {} in {}: {}",
                self.iptables,
                rule.join(" "),
                self.ns,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(())
    }
}

impl Drop for LinkEmulator {
    fn drop(&mut self) {
        for rule in std::mem::take(&mut self.rules) {
            let _ = self.iptables("-D", &rule);
        }
        // linkem lets its held packets through once its stdin closes.
        drop(self.child.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

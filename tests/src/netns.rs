//! A private network for test nodes: one network namespace per node, joined
//! by veth pairs to a bridge in the host namespace. Cutting a node's veth is
//! a real partition, made outside the node: the kernel drops its traffic to
//! and from everyone. Needs root (CAP_NET_ADMIN) and iproute2.

use std::process::Command;

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
    nodes: Vec<u64>,
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
            nodes: Vec::new(),
        };
        let br = s.bridge();
        ip(&["link", "add", &br, "type", "bridge"])?;
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

    fn veth(&self, id: u64) -> String {
        format!("hs{}v{id}", self.tag)
    }

    /// The namespace node `id` runs in.
    pub fn ns(&self, id: u64) -> String {
        format!("hs{}n{id}", self.tag)
    }

    fn host_ip(&self) -> String {
        format!("10.{}.{}.1", self.subnet.0, self.subnet.1)
    }

    /// Node `id`'s address on the bridge.
    pub fn ip(&self, id: u64) -> String {
        format!("10.{}.{}.{}", self.subnet.0, self.subnet.1, 10 + id)
    }

    /// Creates node `id`'s namespace and links it to the bridge.
    pub fn add_node(&mut self, id: u64) -> Result<String> {
        let (ns, veth) = (self.ns(id), self.veth(id));
        ip(&["netns", "add", &ns])?;
        self.nodes.push(id);
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
}

impl Drop for NetNs {
    fn drop(&mut self) {
        for id in &self.nodes {
            let _ = ip(&["link", "del", &self.veth(*id)]);
            let _ = ip(&["netns", "del", &self.ns(*id)]);
        }
        iptables_forward(&self.bridge(), "-D");
        let _ = ip(&["link", "del", &self.bridge()]);
    }
}

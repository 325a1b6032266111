//! A DNS server of a test's own, answering as Kubernetes' cluster DNS does
//! for a StatefulSet's pods: a name resolves (an A record) only while the
//! test publishes it, to the address it is given, and is NXDOMAIN
//! otherwise, as for a pod not created yet. Nodes in network namespaces
//! ask it through the resolv.conf of a pod ([`TestDns::resolv_conf`]: its
//! search list and `ndots:5`), which `ip netns exec` bind-mounts over
//! /etc/resolv.conf from /etc/netns/<namespace>/ (`netns::NetNs::etc`), so
//! the node's own resolver (glibc's getaddrinfo) does what it does in a
//! pod. It serves UDP on the test's bridge, and counts the lookups it is
//! asked, by asker and name.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// The namespace's search domain: a published name `hs-1.hs-peers` is the
/// record `hs-1.hs-peers.default.svc.cluster.local`.
pub const DOMAIN: &str = "default.svc.cluster.local";

const TYPE_A: u16 = 1;
const NXDOMAIN: u16 = 3;

/// One question the server was asked.
#[derive(Debug, Clone)]
struct Asked {
    at: Instant,
    from: IpAddr,
    id: u16,
    name: String,
    qtype: u16,
}

#[derive(Default)]
struct Zone {
    records: HashMap<String, Ipv4Addr>,
    asked: Vec<Asked>,
}

pub struct TestDns {
    addr: SocketAddr,
    zone: Arc<Mutex<Zone>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn fqdn(name: &str) -> String {
    format!("{}.{DOMAIN}", name.to_ascii_lowercase())
}

impl TestDns {
    /// Serves on `ip`, port 53 (the test's bridge address, where every
    /// namespace reaches it).
    pub fn start(ip: IpAddr) -> Result<Self> {
        let socket = UdpSocket::bind((ip, 53)).with_context(|| format!("binding {ip}:53"))?;
        socket.set_read_timeout(Some(Duration::from_millis(50)))?;
        let zone: Arc<Mutex<Zone>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (z, s) = (zone.clone(), stop.clone());
        let thread = std::thread::spawn(move || serve(&socket, &z, &s));
        Ok(Self {
            addr: SocketAddr::new(ip, 53),
            zone,
            stop,
            thread: Some(thread),
        })
    }

    fn zone(&self) -> std::sync::MutexGuard<'_, Zone> {
        self.zone.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Publishes `name` (relative to [`DOMAIN`]) at `ip`, or moves it there.
    pub fn publish(&self, name: &str, ip: Ipv4Addr) {
        self.zone().records.insert(fqdn(name), ip);
    }

    /// Takes `name` out: NXDOMAIN from now on.
    pub fn unpublish(&self, name: &str) {
        self.zone().records.remove(&fqdn(name));
    }

    /// A pod's resolv.conf pointing at this server.
    pub fn resolv_conf(&self) -> String {
        format!(
            "search {DOMAIN} svc.cluster.local cluster.local\nnameserver {}\noptions ndots:5\n",
            self.addr.ip()
        )
    }

    /// How many lookups of `name` the resolver at `from` made at or after
    /// `since`: the A questions for the name's first search candidate (one
    /// per getaddrinfo call; a retransmission keeps its id).
    pub fn lookups(&self, from: IpAddr, name: &str, since: Instant) -> usize {
        let name = fqdn(name);
        let mut ids: Vec<u16> = self
            .zone()
            .asked
            .iter()
            .filter(|a| a.from == from && a.name == name && a.qtype == TYPE_A && a.at >= since)
            .map(|a| a.id)
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids.len()
    }
}

impl Drop for TestDns {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(socket: &UdpSocket, zone: &Mutex<Zone>, stop: &AtomicBool) {
    let mut buf = [0u8; 1500];
    while !stop.load(Ordering::Relaxed) {
        let Ok((n, from)) = socket.recv_from(&mut buf) else {
            continue;
        };
        let Some(q) = Question::parse(&buf[..n]) else {
            continue;
        };
        let answer = {
            let mut zone = zone.lock().unwrap_or_else(|p| p.into_inner());
            zone.asked.push(Asked {
                at: Instant::now(),
                from: from.ip(),
                id: q.id,
                name: q.name.clone(),
                qtype: q.qtype,
            });
            zone.records.get(&q.name).copied()
        };
        let _ = socket.send_to(&q.reply(answer), from);
    }
}

/// A query's header and first question, as received.
struct Question<'a> {
    id: u16,
    flags: u16,
    /// The question section's bytes (name, type, class).
    raw: &'a [u8],
    name: String,
    qtype: u16,
}

impl<'a> Question<'a> {
    fn parse(msg: &'a [u8]) -> Option<Self> {
        let be = |i: usize| Some(u16::from_be_bytes([*msg.get(i)?, *msg.get(i + 1)?]));
        let (id, flags, qdcount) = (be(0)?, be(2)?, be(4)?);
        if qdcount != 1 || flags & 0x8000 != 0 {
            return None;
        }
        let mut labels = Vec::new();
        let mut i = 12;
        loop {
            let len = *msg.get(i)? as usize;
            i += 1;
            if len == 0 {
                break;
            }
            labels.push(String::from_utf8_lossy(msg.get(i..i + len)?).to_ascii_lowercase());
            i += len;
        }
        let qtype = be(i)?;
        Some(Self {
            id,
            flags,
            raw: msg.get(12..i + 4)?,
            name: labels.join("."),
            qtype,
        })
    }

    /// The answer: the record for an A question of a published name,
    /// nothing (NOERROR) for its other types, NXDOMAIN for any other name.
    fn reply(&self, record: Option<Ipv4Addr>) -> Vec<u8> {
        let rd = self.flags & 0x0100;
        let rcode = if record.is_some() { 0 } else { NXDOMAIN };
        let a = record.filter(|_| self.qtype == TYPE_A);
        let mut out = Vec::with_capacity(64);
        out.extend_from_slice(&self.id.to_be_bytes());
        out.extend_from_slice(&(0x8000 | 0x0400 | rd | 0x0080 | rcode).to_be_bytes());
        for count in [1u16, u16::from(a.is_some()), 0, 0] {
            out.extend_from_slice(&count.to_be_bytes());
        }
        out.extend_from_slice(self.raw);
        if let Some(ip) = a {
            // The question's name (a pointer to offset 12), A, IN, a TTL of
            // 5 s (glibc keeps nothing), four bytes.
            out.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 5, 0, 4]);
            out.extend_from_slice(&ip.octets());
        }
        out
    }
}

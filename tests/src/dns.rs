//! A DNS server of a test's own, answering as Kubernetes' cluster DNS does
//! for a StatefulSet's pods: a name resolves (an A record) only while the
//! test publishes it, to the address it is given, and is NXDOMAIN
//! otherwise, as for a pod not created yet. Nodes in network namespaces
//! ask it through the resolv.conf of a pod ([`TestDns::resolv_conf`]: its
//! search list and `ndots:5`), which `ip netns exec` bind-mounts over
//! /etc/resolv.conf from `/etc/netns/<namespace>/` ([`crate::netns::NetNs::etc`]), so
//! the node's own resolver (glibc's getaddrinfo) does what it does in a
//! pod. It serves UDP on the test's bridge (messages read and written by
//! hickory-proto), and counts the lookups it is asked, by asker and name.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use hickory_proto::op::{Message, MessageType, ResponseCode};
use hickory_proto::rr::rdata::A;
use hickory_proto::rr::{RData, Record, RecordType};

/// The namespace's search domain: a published name `hs-1.hs-peers` is the
/// record `hs-1.hs-peers.default.svc.cluster.local`.
pub const DOMAIN: &str = "default.svc.cluster.local";

/// One question the server was asked.
#[derive(Debug, Clone)]
struct Asked {
    at: Instant,
    from: IpAddr,
    id: u16,
    name: String,
    qtype: RecordType,
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
            .filter(|a| a.from == from && a.name == name && a.qtype == RecordType::A && a.at >= since)
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
        let Some((query, name)) = question(&buf[..n]) else {
            continue;
        };
        let qtype = query.queries()[0].query_type();
        let record = {
            let mut zone = zone.lock().unwrap_or_else(|p| p.into_inner());
            zone.asked.push(Asked {
                at: Instant::now(),
                from: from.ip(),
                id: query.id(),
                name: name.clone(),
                qtype,
            });
            zone.records.get(&name).copied()
        };
        if let Ok(reply) = reply(&query, record).to_vec() {
            let _ = socket.send_to(&reply, from);
        }
    }
}

/// A query with one question, and the name it asks for (lower case, no
/// final dot); `None` for anything else.
fn question(bytes: &[u8]) -> Option<(Message, String)> {
    let msg = Message::from_vec(bytes).ok()?;
    if msg.message_type() != MessageType::Query || msg.queries().len() != 1 {
        return None;
    }
    let name = msg.queries()[0].name().to_lowercase().to_ascii();
    let name = name.trim_end_matches('.').to_string();
    Some((msg, name))
}

/// The answer: the record for an A question of a published name, nothing
/// (NOERROR) for its other types, NXDOMAIN for any other name. A TTL of
/// 5 s (glibc keeps nothing).
fn reply(query: &Message, record: Option<Ipv4Addr>) -> Message {
    let q = &query.queries()[0];
    let mut out = Message::new();
    out.set_id(query.id())
        .set_message_type(MessageType::Response)
        .set_op_code(query.op_code())
        .set_authoritative(true)
        .set_recursion_desired(query.recursion_desired())
        .set_recursion_available(true)
        .set_response_code(if record.is_some() {
            ResponseCode::NoError
        } else {
            ResponseCode::NXDomain
        })
        .add_query(q.clone());
    if let Some(ip) = record.filter(|_| q.query_type() == RecordType::A) {
        out.add_answer(Record::from_rdata(q.name().clone(), 5, RData::A(A(ip))));
    }
    out
}

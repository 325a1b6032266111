//! Node configuration: what `handlestore node` flags turn into. The
//! tunables, with their defaults and validation, are `tuning`; this is
//! who the node is and where it serves. It imports no other layer of
//! the node: every layer reads it.

mod tuning;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

pub use tuning::{DbConfig, Tuning, WATCH_PAGE_BYTES, WalRecovery, defaults};

/// How to treat an empty data directory when `--initial-cluster` is given
/// (as etcd's `--initial-cluster-state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ClusterState {
    /// A new cluster: any majority of the initial members founds it
    /// (`raft::life::founding`), a node whose log is empty joins it.
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

/// The files a port's TLS is made of (`crate::tls` loads them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// This node's certificate chain (PEM).
    pub cert: PathBuf,
    /// Its private key (PEM).
    pub key: PathBuf,
    /// With a CA (PEM), every client must show a certificate it signed;
    /// on the peer port, it is also the CA other nodes' certificates must
    /// come from.
    pub ca: Option<PathBuf>,
}

#[derive(Debug, Clone)]
pub struct NodeConfig {
    pub id: u64,
    pub listen: SocketAddr,
    /// The address clients (and peers, without a peer port) reach this
    /// node at ("host:port").
    pub advertise: String,
    /// A port of its own for node-to-node traffic (the Raft wire and the
    /// Raft gRPC service); the client port then serves clients only.
    pub peer_listen: Option<SocketAddr>,
    /// The address peers reach this node's peer port at.
    pub peer_advertise: String,
    /// A listener of its own for `/metrics` (plain HTTP).
    pub metrics_listen: Option<SocketAddr>,
    /// The data directory (`--data`).
    pub data: PathBuf,
    pub initial_cluster: BTreeMap<u64, Member>,
    pub cluster_state: ClusterState,
    /// Every tunable (`tuning`), validated.
    pub tuning: Tuning,
    /// TLS on the client port (`crate::tls`).
    pub tls: Option<TlsFiles>,
    /// Mutual TLS on the peer port, both ways ([`tls::peer`](crate::tls::peer)).
    pub peer_tls: Option<TlsFiles>,
    /// `--peer-allowed-names`: the only certificate names let in on the
    /// peer port; empty: current members' node names ([`tls::gate`](crate::tls::gate)).
    pub peer_allowed_names: Vec<String>,
    /// Serve non-loopback addresses in the clear (`--insecure`).
    pub insecure: bool,
}

impl NodeConfig {
    /// Protected mode, as Redis has it: in the clear, a node serves
    /// loopback only unless told `--insecure`, on either port. With TLS,
    /// peers need a port of their own: the client port never serves Raft.
    pub fn check_exposure(&self) -> Result<(), String> {
        let members = self.initial_cluster.len();
        if self.peer_tls.is_some() && self.peer_listen.is_none() {
            return Err("--peer-tls-cert needs --peer-listen: peer TLS is for the peer port".into());
        }
        if self.tls.is_some() && self.peer_listen.is_none() && members > 1 {
            return Err(
                "with TLS on the client port (--tls-cert), peers need a port of their own: \
                 add --peer-listen (and peer addresses to --initial-cluster)"
                    .into(),
            );
        }
        if self.insecure {
            return Ok(());
        }
        if self.tls.is_none() && !self.listen.ip().is_loopback() {
            return Err(format!(
                "--listen {} is not a loopback address, and the client port has no TLS: anyone who reaches it \
                 could read and write everything. Add --tls-cert/--tls-key (see `handlestore certs`), or \
                 --insecure to serve in the clear anyway",
                self.listen
            ));
        }
        if let Some(peer) = self.peer_listen
            && self.peer_tls.is_none()
            && !peer.ip().is_loopback()
        {
            return Err(format!(
                "--peer-listen {peer} is not a loopback address, and the peer port has no TLS: anyone who \
                 reaches it could speak Raft to this node. Add --peer-tls-cert/--peer-tls-key/--peer-tls-ca \
                 (see `handlestore certs`), or --insecure to serve peers in the clear anyway"
            ));
        }
        Ok(())
    }

    /// Whether this node serves only loopback in the clear (protected
    /// mode), to say so when it starts.
    pub fn protected_mode(&self) -> bool {
        self.tls.is_none() && !self.insecure
    }

    /// The limits requests are checked against.
    pub fn limits(&self) -> Limits {
        Limits {
            max_value_bytes: self.tuning.max_value_bytes,
            ..Limits::default()
        }
    }

    /// How this node is reached, as the membership records it.
    pub fn member(&self) -> Member {
        Member::new(&self.advertise, &self.peer_advertise)
    }

    pub fn new(id: u64, listen: SocketAddr, data: PathBuf) -> Self {
        Self {
            id,
            listen,
            advertise: listen.to_string(),
            peer_listen: None,
            peer_advertise: String::new(),
            metrics_listen: None,
            data,
            initial_cluster: BTreeMap::new(),
            cluster_state: ClusterState::New,
            tuning: Tuning::default(),
            tls: None,
            peer_tls: None,
            peer_allowed_names: Vec::new(),
            insecure: false,
        }
    }
}

/// How a member is reached: clients at `addr`; other nodes at `peer_addr`,
/// or at `addr` too when the member has no peer port of its own.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Member {
    pub addr: String,
    #[serde(default)]
    pub peer_addr: String,
}

impl Member {
    pub fn new(addr: impl Into<String>, peer_addr: impl Into<String>) -> Self {
        Self {
            addr: addr.into(),
            peer_addr: peer_addr.into(),
        }
    }

    /// Where other nodes reach this member.
    pub fn peer(&self) -> &str {
        peer_of(&self.addr, &self.peer_addr)
    }
}

/// Where other nodes reach a node with these addresses: its peer address,
/// or its client address when it has no peer port.
pub fn peer_of<'a>(addr: &'a str, peer_addr: &'a str) -> &'a str {
    if peer_addr.is_empty() { addr } else { peer_addr }
}

impl std::fmt::Display for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.peer_addr.is_empty() {
            write!(f, "{}", self.addr)
        } else {
            write!(f, "{}/{}", self.addr, self.peer_addr)
        }
    }
}

/// Checks a "HOST:PORT" address.
pub fn check_addr(addr: &str) -> Result<(), String> {
    let valid = addr
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
    if valid {
        Ok(())
    } else {
        Err(format!("'{addr}' is not HOST:PORT"))
    }
}

/// Parses one member's addresses: `HOST:PORT` (clients and peers alike) or
/// `HOST:PORT/PEER_HOST:PEER_PORT` (peers on a port of their own).
pub fn parse_member(s: &str) -> Result<Member, String> {
    match s.trim().split_once('/') {
        Some((addr, peer)) => {
            check_addr(addr.trim())?;
            check_addr(peer.trim())?;
            Ok(Member::new(addr.trim(), peer.trim()))
        }
        None => {
            check_addr(s.trim())?;
            Ok(Member::new(s.trim(), ""))
        }
    }
}

/// Parses `1=host:port,2=host:port` (each address optionally followed by
/// `/peer_host:peer_port`).
pub fn parse_initial_cluster(s: &str) -> Result<BTreeMap<u64, Member>, String> {
    let mut out = BTreeMap::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (id, addr) = part
            .split_once('=')
            .ok_or_else(|| format!("'{part}' is not ID=HOST:PORT[/PEER_HOST:PEER_PORT]"))?;
        let id: u64 = id
            .trim()
            .parse()
            .map_err(|_| format!("'{id}' in '{part}' is not a node id (a positive integer)"))?;
        if id == 0 {
            return Err("node id 0 is reserved; use 1, 2, 3, ...".into());
        }
        let member = parse_member(addr).map_err(|e| format!("{e} (in '{part}')"))?;
        if out.insert(id, member).is_some() {
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
    fn protected_mode_keeps_the_clear_on_loopback() {
        let local = NodeConfig::new(1, "127.0.0.1:7401".parse().expect("addr"), "d".into());
        assert!(local.check_exposure().is_ok());
        assert!(local.protected_mode());
        let mut open = NodeConfig::new(1, "0.0.0.0:7401".parse().expect("addr"), "d".into());
        assert!(open.check_exposure().expect_err("refused").contains("--insecure"));
        open.insecure = true;
        assert!(open.check_exposure().is_ok());
        let files = TlsFiles {
            cert: "c".into(),
            key: "k".into(),
            ca: None,
        };
        let mut peers = local.clone();
        peers.peer_listen = Some("10.0.0.1:7402".parse().expect("addr"));
        assert!(
            peers
                .check_exposure()
                .expect_err("peers in the clear")
                .contains("--peer-tls-cert")
        );
        peers.peer_tls = Some(files.clone());
        assert!(peers.check_exposure().is_ok(), "peers with mutual TLS");
        peers.peer_listen = None;
        assert!(peers.check_exposure().is_err(), "peer TLS without a peer port");
        let mut tls = NodeConfig::new(1, "0.0.0.0:7401".parse().expect("addr"), "d".into());
        tls.tls = Some(files);
        assert!(tls.check_exposure().is_ok(), "TLS on a public address");
        assert!(!tls.protected_mode());
        tls.initial_cluster = parse_initial_cluster("1=a:1,2=b:1").expect("cluster");
        assert!(
            tls.check_exposure()
                .expect_err("needs a peer port")
                .contains("--peer-listen")
        );
    }

    #[test]
    fn parses_cluster() {
        let c = parse_initial_cluster("1=a:1, 2=b:2,3=127.0.0.1:7403").expect("parses");
        assert_eq!(c.len(), 3);
        assert_eq!(c[&3], Member::new("127.0.0.1:7403", ""));
        assert_eq!(c[&3].peer(), "127.0.0.1:7403");
        let c = parse_initial_cluster("1=a:1/a:2").expect("parses");
        assert_eq!(c[&1].peer(), "a:2");
        assert_eq!(c[&1].to_string(), "a:1/a:2");
        for bad in [
            "",
            "1=a",
            "x=a:1",
            "0=a:1",
            "1=a:1,1=b:2",
            "1=:80",
            "1=a:99999",
            "1=a:1/b",
            "1=a:1/",
        ] {
            assert!(parse_initial_cluster(bad).is_err(), "{bad} should fail");
        }
    }
}

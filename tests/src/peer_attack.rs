//! An outsider on a node's peer port: with some certificate of the cluster's
//! CA (a client's, a non-member's, a removed member's), it tries every Raft
//! protocol the port serves with a made-up vote of a high term:
//! AppendEntries, Vote and InstallSnapshot over gRPC, a clock probe, and
//! AppendEntries over the Raft wire inside TLS. A node that lets any of
//! them through moves its term (and, with a vote, its leadership).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use handlestore_client::{Client, ClientTls};
use handlestore_proto::internal::v1 as ipb;
use ipb::raft_client::RaftClient;
use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The term the attacker's made-up votes carry.
pub const ATTACK_TERM: u64 = 1001;

/// A certificate and its key, as the attacker holds them.
pub struct Identity<'a> {
    pub ca: &'a Path,
    pub cert: &'a Path,
    pub key: &'a Path,
}

/// What each attempt came to: `Ok` names a protocol the node served.
pub type Outcome = Result<(), String>;

fn made_up_vote(from: u64) -> ipb::Vote {
    ipb::Vote {
        leader_id: Some(ipb::LeaderId {
            term: ATTACK_TERM,
            node_id: from,
        }),
        committed: true,
    }
}

/// Tries every protocol on `peer_addr` ("host:port") as `who`, posing as
/// node `from`; one outcome per protocol: an error string for each the
/// node refused, `Ok` for each it served.
pub async fn try_everything(who: &Identity<'_>, peer_addr: &str, from: u64) -> Vec<(&'static str, Outcome)> {
    let tls = match ClientTls::from_files(who.ca, Some(who.cert), Some(who.key)) {
        Ok(t) => t,
        Err(e) => return vec![("tls", Err(format!("client TLS: {e}")))],
    };
    let client = match Client::builder([format!("https://{peer_addr}")]).tls(tls).build() {
        Ok(c) => c,
        Err(e) => return vec![("client", Err(e.to_string()))],
    };
    let Some(channel) = client.channel(0) else {
        return vec![("channel", Err("no channel".into()))];
    };
    let mut raft = RaftClient::new(channel);
    let served = |r: Result<(), tonic::Status>| r.map_err(|s| format!("{:?}: {}", s.code(), s.message()));
    let append = ipb::AppendEntriesRequest {
        vote: Some(made_up_vote(from)),
        ..Default::default()
    };
    let vote = ipb::VoteRequest {
        vote: Some(made_up_vote(from)),
        last_log_id: Some(ipb::LogId {
            leader_id: Some(ipb::LeaderId {
                term: ATTACK_TERM,
                node_id: from,
            }),
            index: 1 << 40,
        }),
        ..Default::default()
    };
    let chunk = ipb::SnapshotChunk {
        vote: Some(made_up_vote(from)),
        meta: Some(ipb::SnapshotMeta {
            snapshot_id: "attack".into(),
            ..Default::default()
        }),
        data: vec![0; 16],
        ..Default::default()
    };
    vec![
        ("AppendEntries", served(raft.append_entries(append).await.map(drop))),
        ("Vote", served(raft.vote(vote).await.map(drop))),
        (
            "InstallSnapshot",
            served(raft.install_snapshot(futures::stream::iter([chunk])).await.map(drop)),
        ),
        (
            "ElectNow",
            served(
                raft.elect_now(ipb::ElectNowRequest {
                    leader_id: from,
                    term: ATTACK_TERM,
                    last_log_index: 0,
                })
                .await
                .map(drop),
            ),
        ),
        (
            "ClockProbe",
            served(
                raft.clock_probe(ipb::ClockProbeRequest {
                    from,
                    ..Default::default()
                })
                .await
                .map(drop),
            ),
        ),
        ("Raft wire", wire(who, peer_addr, from).await.map_err(|e| e.to_string())),
    ]
}

/// One AppendEntries over the Raft wire inside TLS (ALPN `hsraft/1`):
/// `Ok` if the node answered it.
async fn wire(who: &Identity<'_>, peer_addr: &str, from: u64) -> std::io::Result<()> {
    let config = wire_config(who)?;
    let tcp = tokio::net::TcpStream::connect(peer_addr).await?;
    let name = rustls::pki_types::ServerName::try_from("localhost").map_err(std::io::Error::other)?;
    let mut s = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await?;
    s.write_all(b"HSRAFT/1").await?;
    let mut echo = [0u8; 8];
    within(s.read_exact(&mut echo)).await?;
    let body = ipb::AppendEntriesRequest {
        vote: Some(made_up_vote(from)),
        ..Default::default()
    }
    .encode_to_vec();
    let mut frame = ((body.len() + 1) as u32).to_be_bytes().to_vec();
    frame.push(0);
    frame.extend(body);
    s.write_all(&frame).await?;
    let mut len = [0u8; 4];
    within(s.read_exact(&mut len)).await?;
    let mut answer = vec![0u8; u32::from_be_bytes(len) as usize];
    within(s.read_exact(&mut answer)).await?;
    match answer.first() {
        Some(0) => Ok(()),
        kind => Err(std::io::Error::other(format!(
            "refused (kind {kind:?}): {}",
            String::from_utf8_lossy(answer.get(1..).unwrap_or_default())
        ))),
    }
}

async fn within<T>(f: impl std::future::Future<Output = std::io::Result<T>>) -> std::io::Result<T> {
    tokio::time::timeout(Duration::from_secs(5), f)
        .await
        .map_err(std::io::Error::other)?
}

fn wire_config(who: &Identity<'_>) -> std::io::Result<rustls::ClientConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(who.ca).map_err(std::io::Error::other)? {
        roots
            .add(cert.map_err(std::io::Error::other)?)
            .map_err(std::io::Error::other)?;
    }
    let chain = CertificateDer::pem_file_iter(who.cert)
        .map_err(std::io::Error::other)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(std::io::Error::other)?;
    let key = PrivateKeyDer::from_pem_file(who.key).map_err(std::io::Error::other)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(std::io::Error::other)?
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, key)
        .map_err(std::io::Error::other)?;
    config.alpn_protocols = vec![b"hsraft/1".to_vec()];
    Ok(config)
}

/// Panics naming every protocol the node served.
pub fn assert_all_refused(who: &str, outcomes: &[(&'static str, Outcome)]) {
    let served: Vec<&str> = outcomes.iter().filter(|(_, o)| o.is_ok()).map(|(p, _)| *p).collect();
    assert!(
        served.is_empty(),
        "{who} was served {served:?} on the peer port: {outcomes:?}"
    );
}

//! What a metrics scrape reads of this node, gathered from its parts:
//! Raft's view, the database's size on disk, namespaces' usage and
//! quotas, watch delivery, the clock, and the certificates it serves and
//! trusts. The node hands [`gather`] to `metrics`, which reads nothing
//! itself.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::api::Api;
use crate::config::NodeConfig;
use crate::observe::metrics::{
    CertificateReading, NamespaceReading, PeerClockReading, RaftReadings, Readings, ReadingsFn,
};
use crate::raft::RaftAdmin;

/// The certificate files a scrape reads, each with its label.
fn certificate_files(cfg: &NodeConfig) -> Vec<(&'static str, PathBuf)> {
    let mut out = Vec::new();
    if let Some(t) = &cfg.tls {
        out.push(("client_port", t.cert.clone()));
        out.extend(t.ca.clone().map(|ca| ("client_port_ca", ca)));
    }
    if let Some(t) = &cfg.peer_tls {
        out.push(("peer_port", t.cert.clone()));
        out.extend(t.ca.clone().map(|ca| ("peer_port_ca", ca)));
    }
    out
}

/// This node's readings function.
pub fn gather(cfg: &NodeConfig, api: Arc<Api>, raft: RaftAdmin) -> ReadingsFn {
    let node_id = cfg.id;
    let db_dir = cfg.data.join("db");
    let certs = certificate_files(cfg);
    Arc::new(move || {
        let clock = api.proposer.clock().report();
        Readings {
            node_id,
            raft: raft_readings(&raft),
            db_bytes: dir_bytes(&db_dir),
            namespaces: namespaces(&api),
            watchers: api.watches.watchers() as u64,
            watch_bytes: (api.state.recent().bytes() + api.watches.used()) as u64,
            watch_budget_bytes: (api.state.recent().limit() + api.watches.limit()) as u64,
            clock_trusted: clock.error.is_none(),
            clock_max_offset_ms: clock.max_offset_ms,
            peer_clocks: clock
                .peers
                .iter()
                .map(|p| PeerClockReading {
                    id: p.id,
                    offset_ms: p.offset_ms,
                    rtt_ms: p.rtt_ms,
                })
                .collect(),
            certificates: certs
                .iter()
                .filter_map(|&(which, ref path)| {
                    not_after(path).map(|not_after| CertificateReading { which, not_after })
                })
                .collect(),
        }
    })
}

fn raft_readings(raft: &RaftAdmin) -> RaftReadings {
    let s = raft.status();
    RaftReadings {
        is_leader: s.state == "leader",
        leader_without_quorum: s.state == "leader (no quorum)",
        has_leader: s.leader.is_some(),
        term: s.term,
        last_log_index: s.last_log_index,
        applied_index: s.applied_index,
        snapshot_index: s.snapshot_index,
        followers: s.followers,
    }
}

/// Every namespace with data or a policy: usage and quota (the rows of
/// `namespace list`; a scrape that cannot read them shows none, and the
/// node logs why).
fn namespaces(api: &Api) -> Vec<NamespaceReading> {
    let rows = match crate::api::auth::service::namespaces(api, &api.state.auth()) {
        Ok(rows) => rows,
        Err(e) => {
            tracing::warn!("metrics: reading namespaces' usage: {}", e.message());
            return Vec::new();
        }
    };
    rows.into_iter()
        .map(|u| {
            let policy = u.policy.unwrap_or_default();
            NamespaceReading {
                name: u.name,
                entries: u.entries,
                bytes: u.bytes,
                max_entries: policy.max_entries,
                max_bytes: policy.max_bytes,
            }
        })
        .collect()
}

/// Bytes of the files in `dir` (not below it: RocksDB keeps its files in
/// one directory).
fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

/// The first certificate's notAfter in a PEM file, in Unix seconds.
fn not_after(path: &Path) -> Option<i64> {
    let pem = std::fs::read(path).ok()?;
    let (_, pem) = x509_parser::pem::parse_x509_pem(&pem).ok()?;
    let cert = pem.parse_x509().ok()?;
    Some(cert.validity().not_after.timestamp())
}

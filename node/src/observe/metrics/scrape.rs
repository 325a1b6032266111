//! What is read when `/metrics` is scraped: the node's readings (Raft's
//! view, the database's size, namespaces' usage and quotas, watchers, the
//! clock, certificates), taken by a function the node assembles, and
//! written as Prometheus metrics. Namespaces are labels: the largest
//! [`TOP_NAMESPACES`] by bytes each have their own, the rest are summed
//! under `namespace="(others)"` (no namespace's name has parentheses), so a
//! scrape stays small with any number of tenants. No key, value or token is ever a label.

use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;

/// Namespaces with labels of their own; the rest are summed as [`OTHERS`].
pub const TOP_NAMESPACES: usize = 20;

/// The label of the namespaces past the top ones, summed.
pub const OTHERS: &str = "(others)";

/// Raft's view from this node.
#[derive(Debug, Clone, Default)]
pub struct RaftReadings {
    /// Leads and has heard from a majority lately.
    pub is_leader: bool,
    /// Leads in Raft's eyes, but has not heard from a majority for longer
    /// than an election timeout.
    pub leader_without_quorum: bool,
    pub has_leader: bool,
    pub term: u64,
    pub last_log_index: u64,
    pub applied_index: u64,
    pub snapshot_index: u64,
    /// On the leader: each follower's last log index known on its disk.
    pub followers: Vec<(u64, u64)>,
}

/// One namespace's usage and quota (0: none).
#[derive(Debug, Clone, Default)]
pub struct NamespaceReading {
    pub name: String,
    pub entries: u64,
    pub bytes: u64,
    pub max_entries: u64,
    pub max_bytes: u64,
}

/// One peer's clock, as this node's probes measured it.
#[derive(Debug, Clone, Default)]
pub struct PeerClockReading {
    pub id: u64,
    pub offset_ms: i64,
    /// The round trip of the probe that measured it.
    pub rtt_ms: u64,
}

/// A certificate this node serves or trusts, and when it expires.
#[derive(Debug, Clone, Default)]
pub struct CertificateReading {
    /// Which: "client_port", "client_port_ca", "peer_port", "peer_port_ca".
    pub which: &'static str,
    /// Its notAfter, in Unix seconds.
    pub not_after: i64,
}

/// Everything read at one scrape.
#[derive(Debug, Clone, Default)]
pub struct Readings {
    pub node_id: u64,
    pub raft: RaftReadings,
    pub db_bytes: u64,
    pub namespaces: Vec<NamespaceReading>,
    pub watchers: u64,
    pub watch_bytes: u64,
    pub watch_budget_bytes: u64,
    pub clock_trusted: bool,
    pub clock_max_offset_ms: u64,
    pub peer_clocks: Vec<PeerClockReading>,
    pub certificates: Vec<CertificateReading>,
}

/// Takes this node's readings (run on a blocking thread: it reads the
/// database and files).
pub type ReadingsFn = Arc<dyn Fn() -> Readings + Send + Sync>;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Namespace {
    namespace: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Follower {
    follower: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Peer {
    peer: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Certificate {
    certificate: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Build {
    server_version: String,
    commit: String,
    server_id: String,
}

/// The readings of one scrape, written as metrics.
#[derive(Debug)]
pub(super) struct Scrape(pub Readings);

/// Writes one unlabelled gauge.
fn gauge(enc: &mut DescriptorEncoder, name: &str, help: &str, v: impl Into<f64>) -> std::fmt::Result {
    let g = ConstGauge::new(v.into());
    g.encode(enc.encode_descriptor(name, help, None, MetricType::Gauge)?)
}

/// Writes one gauge with a value per label set.
fn gauges<L: EncodeLabelSet>(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: impl IntoIterator<Item = (L, f64)>,
) -> std::fmt::Result {
    let mut family = enc.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, v) in rows {
        ConstGauge::new(v).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

fn flag(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

impl Collector for Scrape {
    fn encode(&self, mut enc: DescriptorEncoder) -> std::fmt::Result {
        let r = &self.0;
        gauges(
            &mut enc,
            "handlestore_server_version",
            "This node's build (the value is always 1)",
            [(
                Build {
                    server_version: env!("CARGO_PKG_VERSION").into(),
                    commit: env!("HANDLESTORE_COMMIT").into(),
                    server_id: r.node_id.to_string(),
                },
                1.0,
            )],
        )?;
        raft(&mut enc, &r.raft)?;
        gauge(
            &mut enc,
            "handlestore_db_total_size_in_bytes",
            "Bytes of this node's database files on disk (Raft log and state)",
            r.db_bytes as f64,
        )?;
        namespaces(&mut enc, &r.namespaces)?;
        watch(&mut enc, r)?;
        clock(&mut enc, r)?;
        gauges(
            &mut enc,
            "handlestore_tls_certificate_expiry_timestamp_seconds",
            "When a certificate this node serves or trusts expires (notAfter, Unix seconds)",
            r.certificates.iter().map(|c| {
                (
                    Certificate {
                        certificate: c.which.into(),
                    },
                    c.not_after as f64,
                )
            }),
        )
    }
}

fn raft(enc: &mut DescriptorEncoder, r: &RaftReadings) -> std::fmt::Result {
    gauge(
        enc,
        "handlestore_server_has_leader",
        "1 if this node knows a leader",
        flag(r.has_leader),
    )?;
    gauge(
        enc,
        "handlestore_server_is_leader",
        "1 if this node is the leader (and has heard from a majority lately)",
        flag(r.is_leader),
    )?;
    gauge(
        enc,
        "handlestore_server_leader_without_quorum",
        "1 if this node leads but has not heard from a majority for longer than an election timeout",
        flag(r.leader_without_quorum),
    )?;
    gauge(enc, "handlestore_raft_term", "The current Raft term", r.term as f64)?;
    gauge(
        enc,
        "handlestore_raft_last_log_index",
        "The last log index on this node",
        r.last_log_index as f64,
    )?;
    gauge(
        enc,
        "handlestore_raft_applied_index",
        "The last log index applied to this node's state",
        r.applied_index as f64,
    )?;
    gauge(
        enc,
        "handlestore_raft_snapshot_index",
        "The last log index in this node's snapshot",
        r.snapshot_index as f64,
    )?;
    gauges(
        enc,
        "handlestore_raft_follower_lag_entries",
        "On the leader: how many entries each follower lacks on disk",
        r.followers.iter().map(|&(id, matched)| {
            (
                Follower {
                    follower: id.to_string(),
                },
                r.last_log_index.saturating_sub(matched) as f64,
            )
        }),
    )
}

/// The largest namespaces by bytes, the rest summed as [`OTHERS`].
fn top(all: &[NamespaceReading]) -> Vec<NamespaceReading> {
    let mut sorted: Vec<NamespaceReading> = all.to_vec();
    sorted.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)));
    if sorted.len() <= TOP_NAMESPACES {
        return sorted;
    }
    let rest = sorted.split_off(TOP_NAMESPACES);
    let other = rest.iter().fold(
        NamespaceReading {
            name: OTHERS.into(),
            ..Default::default()
        },
        |mut o, n| {
            o.entries += n.entries;
            o.bytes += n.bytes;
            o
        },
    );
    sorted.push(other);
    sorted
}

fn namespaces(enc: &mut DescriptorEncoder, all: &[NamespaceReading]) -> std::fmt::Result {
    let shown = top(all);
    let label = |n: &NamespaceReading| Namespace {
        namespace: n.name.clone(),
    };
    gauges(
        enc,
        "handlestore_namespace_entries",
        "Stored entries (handles and state keys, live or awaiting expiry) per namespace",
        shown.iter().map(|n| (label(n), n.entries as f64)),
    )?;
    gauges(
        enc,
        "handlestore_namespace_bytes",
        "Stored bytes (keys and values) per namespace",
        shown.iter().map(|n| (label(n), n.bytes as f64)),
    )?;
    gauges(
        enc,
        "handlestore_namespace_quota_entries",
        "A namespace's entry quota (namespaces with one)",
        shown
            .iter()
            .filter(|n| n.max_entries > 0)
            .map(|n| (label(n), n.max_entries as f64)),
    )?;
    gauges(
        enc,
        "handlestore_namespace_quota_bytes",
        "A namespace's byte quota (namespaces with one)",
        shown
            .iter()
            .filter(|n| n.max_bytes > 0)
            .map(|n| (label(n), n.max_bytes as f64)),
    )
}

fn watch(enc: &mut DescriptorEncoder, r: &Readings) -> std::fmt::Result {
    gauge(
        enc,
        "handlestore_watchers",
        "Open watches on this node",
        r.watchers as f64,
    )?;
    gauge(
        enc,
        "handlestore_watch_memory_bytes",
        "Bytes held for watch delivery (history kept and events queued)",
        r.watch_bytes as f64,
    )?;
    gauge(
        enc,
        "handlestore_watch_memory_budget_bytes",
        "The byte budget for watch delivery (--watch-memory-mb)",
        r.watch_budget_bytes as f64,
    )
}

fn clock(enc: &mut DescriptorEncoder, r: &Readings) -> std::fmt::Result {
    gauge(
        enc,
        "handlestore_clock_trusted",
        "1 if this node's clock is trusted (within the bound of its peers')",
        flag(r.clock_trusted),
    )?;
    gauge(
        enc,
        "handlestore_clock_max_offset_seconds",
        "The largest clock offset between nodes that is tolerated (--max-clock-offset)",
        r.clock_max_offset_ms as f64 / 1000.0,
    )?;
    gauges(
        enc,
        "handlestore_clock_peer_offset_seconds",
        "Each peer's clock minus this node's, as last measured",
        r.peer_clocks
            .iter()
            .map(|p| (Peer { peer: p.id.to_string() }, p.offset_ms as f64 / 1000.0)),
    )?;
    gauges(
        enc,
        "handlestore_network_peer_round_trip_time_seconds",
        "The round trip to each peer of this node's last clock probe",
        r.peer_clocks
            .iter()
            .map(|p| (Peer { peer: p.id.to_string() }, p.rtt_ms as f64 / 1000.0)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(name: &str, bytes: u64) -> NamespaceReading {
        NamespaceReading {
            name: name.into(),
            entries: 1,
            bytes,
            ..Default::default()
        }
    }

    #[test]
    fn namespaces_past_the_top_are_summed_as_others() {
        let all: Vec<_> = (0..TOP_NAMESPACES as u64 + 5)
            .map(|i| ns(&format!("t{i}"), i))
            .collect();
        let shown = top(&all);
        assert_eq!(shown.len(), TOP_NAMESPACES + 1);
        assert_eq!(shown[0].name, format!("t{}", TOP_NAMESPACES + 4), "largest first");
        let other = shown.last().unwrap();
        assert_eq!(other.name, OTHERS);
        assert_eq!(other.entries, 5);
        assert_eq!(other.bytes, (0..5).sum::<u64>());
    }

    #[test]
    fn few_namespaces_are_shown_as_they_are() {
        let shown = top(&[ns("a", 1), ns("b", 2)]);
        let names: Vec<_> = shown.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["b", "a"]);
    }
}

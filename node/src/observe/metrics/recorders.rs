//! What the node records as it works: counters and histograms updated on
//! the write, read, apply and sync paths, one process-wide set (a process
//! runs one node). Recording costs an atomic add or a bucket search; no
//! lock, no allocation after a label set's first use.

use std::sync::LazyLock;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// A gRPC method's labels, as grpc-prometheus names them.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GrpcMethod {
    pub grpc_service: String,
    pub grpc_method: String,
}

/// A finished gRPC call's labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GrpcCall {
    pub grpc_service: String,
    pub grpc_method: String,
    pub grpc_code: String,
}

/// Why a proposal failed: a reason of the error table.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FailedBecause {
    pub reason: String,
}

/// How a timed step ended.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Outcome {
    pub outcome: &'static str,
}

/// A peer, by node id.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Peer {
    pub peer: String,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// Every metric the node records as it works.
#[derive(Debug)]
pub struct Recorders {
    pub leader_changes: Counter,
    pub proposals_committed: Counter,
    pub proposals_failed: Family<FailedBecause, Counter>,
    pub proposals_pending: Gauge,
    pub apply_seconds: Histogram,
    pub log_fsync_seconds: Histogram,
    /// NaN while the file system reports no size.
    pub disk_free_bytes: Gauge<f64, AtomicU64>,
    pub disk_size_known: Gauge,
    pub disk_full: Gauge,
    pub read_index_seconds: Histogram,
    pub read_index_failures: Counter,
    pub reads_on_lease: Counter,
    pub watch_events_sent: Counter,
    pub grpc_handled: Family<GrpcCall, Counter>,
    pub grpc_seconds: Histograms<GrpcMethod>,
    pub snapshot_build_seconds: Histograms<Outcome>,
    pub snapshot_send_seconds: Histograms<Outcome>,
    pub snapshot_receive_seconds: Histograms<Outcome>,
    pub peer_sent_failures: Family<Peer, Counter>,
}

impl Recorders {
    /// Times a step that ended `ok` (or not) in `histograms`.
    pub fn observe(histograms: &Histograms<Outcome>, started: std::time::Instant, ok: bool) {
        let outcome = if ok { "ok" } else { "failed" };
        histograms
            .get_or_create(&Outcome { outcome })
            .observe(started.elapsed().as_secs_f64());
    }

    /// Shows `peer`'s failures from 0, before the first.
    pub fn peer_known(&self, peer: u64) {
        let _ = self.peer_sent_failures.get_or_create(&Peer { peer: peer.to_string() });
    }

    /// Counts a message to `peer` that failed.
    pub fn peer_failed(&self, peer: u64) {
        self.peer_sent_failures
            .get_or_create(&Peer { peer: peer.to_string() })
            .inc();
    }
}

fn disk_buckets() -> Histogram {
    // 1 ms to 8 s, as etcd's WAL fsync histogram.
    Histogram::new(exponential_buckets(0.001, 2.0, 14))
}

fn slow_buckets() -> Histogram {
    // 10 ms to 82 s: snapshots.
    Histogram::new(exponential_buckets(0.01, 2.0, 14))
}

fn fast_buckets() -> Histogram {
    // 100 µs to 52 s, as etcd's apply histogram.
    Histogram::new(exponential_buckets(0.0001, 2.0, 20))
}

/// The reasons a proposal fails for, shown at 0 before the first (so a
/// rate over them exists from the start; snapshots' outcomes and peers'
/// failures are too).
const FAILURE_REASONS: [&str; 7] = [
    "not_leader",
    "no_quorum",
    "timeout",
    "leader_unreachable",
    "shutdown",
    "clock_offset",
    "internal",
];

impl Recorders {
    fn new() -> Self {
        let me = Self::empty();
        for reason in FAILURE_REASONS {
            let _ = me
                .proposals_failed
                .get_or_create(&FailedBecause { reason: reason.into() });
        }
        for outcome in ["ok", "failed"] {
            for h in [
                &me.snapshot_build_seconds,
                &me.snapshot_send_seconds,
                &me.snapshot_receive_seconds,
            ] {
                let _ = h.get_or_create(&Outcome { outcome });
            }
        }
        me
    }

    fn empty() -> Self {
        Self {
            leader_changes: Counter::default(),
            proposals_committed: Counter::default(),
            proposals_failed: Family::default(),
            proposals_pending: Gauge::default(),
            apply_seconds: fast_buckets(),
            log_fsync_seconds: disk_buckets(),
            disk_free_bytes: Gauge::default(),
            disk_size_known: Gauge::default(),
            disk_full: Gauge::default(),
            read_index_seconds: fast_buckets(),
            read_index_failures: Counter::default(),
            reads_on_lease: Counter::default(),
            watch_events_sent: Counter::default(),
            grpc_handled: Family::default(),
            grpc_seconds: Family::new_with_constructor(fast_buckets),
            snapshot_build_seconds: Family::new_with_constructor(slow_buckets),
            snapshot_send_seconds: Family::new_with_constructor(slow_buckets),
            snapshot_receive_seconds: Family::new_with_constructor(slow_buckets),
            peer_sent_failures: Family::default(),
        }
    }

    /// Registers every recorder under its documented name.
    pub(super) fn register(&self, r: &mut Registry) {
        r.register(
            "handlestore_server_leader_changes_seen",
            "Times this node has seen a new leader (its first included)",
            self.leader_changes.clone(),
        );
        r.register(
            "handlestore_server_proposals_committed",
            "Writes this node proposed as leader that were committed and applied",
            self.proposals_committed.clone(),
        );
        r.register(
            "handlestore_server_proposals_failed",
            "Writes this node proposed as leader that failed, by reason",
            self.proposals_failed.clone(),
        );
        r.register(
            "handlestore_server_proposals_pending",
            "Writes proposed on this node and not yet answered",
            self.proposals_pending.clone(),
        );
        r.register(
            "handlestore_server_apply_duration_seconds",
            "Time to apply one batch of committed entries to the state machine",
            self.apply_seconds.clone(),
        );
        r.register(
            "handlestore_disk_log_fsync_duration_seconds",
            "Time of one Raft log sync (WAL write and fdatasync)",
            self.log_fsync_seconds.clone(),
        );
        r.register(
            "handlestore_disk_free_bytes",
            "Bytes free on the data directory's file system (NaN while it reports no size)",
            self.disk_free_bytes.clone(),
        );
        r.register(
            "handlestore_disk_size_known",
            "0 while the data directory's file system reports no size (statfs total 0): the disk-full guard cannot work",
            self.disk_size_known.clone(),
        );
        r.register(
            "handlestore_disk_full",
            "1 while free space is under --min-free-disk-mb: the node takes no client writes",
            self.disk_full.clone(),
        );
        r.register(
            "handlestore_server_read_index_duration_seconds",
            "Time to get a read index (linearizable reads), on the leader: a quorum round, or its lease",
            self.read_index_seconds.clone(),
        );
        r.register(
            "handlestore_server_read_indexes_failed",
            "Read index rounds that failed (no quorum, lost leadership, timeout)",
            self.read_index_failures.clone(),
        );
        r.register(
            "handlestore_server_reads_on_lease",
            "Read index rounds the leader answered on its lease, without a quorum round",
            self.reads_on_lease.clone(),
        );
        r.register(
            "handlestore_watch_events_sent",
            "Watch events sent to watchers",
            self.watch_events_sent.clone(),
        );
        r.register(
            "handlestore_snapshot_build_duration_seconds",
            "Time to build a snapshot of the state, by outcome",
            self.snapshot_build_seconds.clone(),
        );
        r.register(
            "handlestore_snapshot_send_duration_seconds",
            "Time to send a snapshot to a follower (the leader), by outcome",
            self.snapshot_send_seconds.clone(),
        );
        r.register(
            "handlestore_snapshot_receive_duration_seconds",
            "Time to receive and install a snapshot from the leader, by outcome",
            self.snapshot_receive_seconds.clone(),
        );
        r.register(
            "handlestore_network_peer_sent_failures",
            "Raft messages to a peer that failed (unreachable, refused, late or malformed answers)",
            self.peer_sent_failures.clone(),
        );
        r.register(
            "grpc_server_handled",
            "gRPC calls completed on the client port, by service, method and code",
            self.grpc_handled.clone(),
        );
        r.register(
            "grpc_server_handling_seconds",
            "Time from a gRPC call's start to its end (a stream's whole life)",
            self.grpc_seconds.clone(),
        );
    }
}

static RECORDERS: LazyLock<Recorders> = LazyLock::new(Recorders::new);

/// The process's recorders.
pub fn recorders() -> &'static Recorders {
    &RECORDERS
}

#[cfg(test)]
mod tests {
    use handlestore_proto::reason::Reason;

    use super::FAILURE_REASONS;

    #[test]
    fn every_failure_reason_shown_at_zero_is_in_the_error_table() {
        for name in FAILURE_REASONS {
            assert!(Reason::from_name(name).is_some(), "{name}");
        }
    }
}

//! Measures the members' clocks against this node's (`crate::clock`), and
//! keeps a node whose clock is not trusted from leading.
//!
//! Every [`PROBE_INTERVAL`] each member is asked for its wall clock
//! (`ClockProbe`); the answer and the round trip make one sample. After
//! each round the leadership guard looks at the verdict: while the clock is
//! not trusted this node starts no election (openraft's `elect`) and, if it
//! leads, sends no heartbeats, so the followers' leases run out and they
//! elect a leader whose clock is trusted; writes and read-index rounds are
//! refused from the moment the clock is off (the proposer and read index
//! check it themselves), so nothing else renews the followers' leases.
//! openraft 0.9 has no call to step down; this is the way out it leaves.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use handlestore_proto::internal::v1 as ipb;

use crate::clock::{Clock, ClockError, ClockReport};
use crate::config::Member;
use crate::raft::life::founding::Founding;
use crate::raft::log::abstain::Standing;
use crate::raft::log::room::Room;
use crate::raft::net::network::Peers;
use crate::raft::net::protocol::{self, PeerProtocols};
use crate::raft::{NodeId, Raft};

/// How often each peer's clock is sampled. A jump of this node's own clock
/// is seen at once (`crate::clock`); this paces how soon a peer's jump or
/// a restored clock is seen by the others.
pub const PROBE_INTERVAL: Duration = Duration::from_millis(500);
/// A sample older than this is not used (the peer may have been stepped
/// since, or left).
pub const SAMPLE_TTL: Duration = Duration::from_secs(10);
/// How often the offsets are logged while nothing changes, and while the
/// clock is not trusted.
const LOG_EVERY: Duration = Duration::from_secs(300);
const WARN_EVERY: Duration = Duration::from_secs(30);

/// Starts probing the members (from the membership, or the initial one
/// before there is one) and guarding leadership; the answers also tell
/// `founding` what the peers know of a new cluster. The clock knows the
/// members when this returns, so it is not trusted before they are
/// measured.
pub fn spawn(
    raft: Raft,
    clock: Arc<Clock>,
    peers: Arc<Peers>,
    founding: Arc<Founding>,
    protocols: Arc<PeerProtocols>,
    standing: Standing,
) {
    clock.set_members(members(&raft, founding.initial()).into_keys());
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(PROBE_INTERVAL);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut guard = Guard::default();
        loop {
            ticker.tick().await;
            let members = members(&raft, founding.initial());
            clock.set_members(members.keys().copied());
            standing
                .room
                .set_voters(raft.metrics().borrow().membership_config.membership().voter_ids());
            let heard = Heard {
                founding: &founding,
                protocols: &protocols,
                room: &standing.room,
            };
            probe_all(&clock, &peers, &heard, &members).await;
            guard.update(&raft, &clock.report(), standing.allows());
        }
    });
}

/// The members and their addresses, as the membership has them.
fn members(raft: &Raft, initial: &BTreeMap<NodeId, Member>) -> BTreeMap<NodeId, String> {
    let metrics = raft.metrics();
    let m = metrics.borrow();
    let nodes: BTreeMap<NodeId, String> = m
        .membership_config
        .membership()
        .nodes()
        .map(|(id, n)| (*id, n.peer().to_string()))
        .collect();
    if nodes.is_empty() {
        initial.iter().map(|(id, n)| (*id, n.peer().to_string())).collect()
    } else {
        nodes
    }
}

/// Where what a probe's answer says is kept: what the peers know of a new
/// cluster, which protocol each speaks, whether its disk is full.
struct Heard<'a> {
    founding: &'a Founding,
    protocols: &'a PeerProtocols,
    room: &'a Room,
}

/// One probe of every other member, all at once.
async fn probe_all(clock: &Arc<Clock>, peers: &Peers, heard: &Heard<'_>, members: &BTreeMap<NodeId, String>) {
    let timeout = clock.max_offset().min(Duration::from_secs(1));
    let probes = members
        .iter()
        .filter(|(id, _)| **id != clock.id())
        .filter_map(|(id, addr)| Some((*id, peers.raft_client(addr).ok()?)))
        .map(|(id, mut client)| {
            let clock = clock.clone();
            async move {
                let sent = clock.mono_ms();
                let mut req = tonic::Request::new(ipb::ClockProbeRequest {
                    from: clock.id(),
                    protocol_version: protocol::VERSION,
                });
                req.set_timeout(timeout);
                match client.clock_probe(req).await {
                    Ok(r) if r.get_ref().node_id == id => {
                        clock.record(id, sent, r.get_ref().wall_ms);
                        heard.founding.record(id, r.get_ref());
                        heard.protocols.heard(id, r.get_ref().protocol_version);
                        heard.room.heard(id, r.get_ref().disk_full);
                    }
                    Ok(r) => tracing::debug!(
                        peer = id,
                        answered = r.get_ref().node_id,
                        "clock probe: another node answered"
                    ),
                    Err(e) => {
                        tracing::debug!(peer = id, "clock probe failed: {}", e.message());
                        heard.protocols.failed(id, e.code(), e.message());
                    }
                }
            }
        });
    futures::future::join_all(probes).await;
}

/// Turns elections and heartbeats off while the clock is not trusted, and
/// says so in the log. Elections stay off while the disk is full or the
/// log is being repaired ([`raft::log::abstain::Standing`](crate::raft::log::abstain::Standing)).
#[derive(Default)]
struct Guard {
    trusted: Option<bool>,
    logged_offset: Option<i64>,
    logged_at: Option<Instant>,
}

impl Guard {
    fn update(&mut self, raft: &Raft, report: &ClockReport, storage_allows: bool) {
        let trusted = report.error.is_none();
        if self.trusted != Some(trusted) {
            raft.runtime_config().elect(trusted && storage_allows);
            raft.runtime_config().heartbeat(trusted);
            match &report.error {
                None => tracing::info!(offset_ms = report.offset_ms, peers = %peer_list(report), "clock trusted"),
                Some(ClockError::Unmeasured { .. }) if self.trusted.is_none() => {
                    tracing::info!("measuring the members' clocks before this node may lead")
                }
                Some(e) => tracing::warn!(peers = %peer_list(report), "{e}"),
            }
            self.trusted = Some(trusted);
            self.note_logged(report);
            return;
        }
        let moved = match (report.offset_ms, self.logged_offset) {
            (Some(now), Some(then)) => now.abs_diff(then) as u128 * 4 >= report_max(report),
            (a, b) => a.is_some() != b.is_some(),
        };
        let every = if trusted { LOG_EVERY } else { WARN_EVERY };
        let due = self.logged_at.is_none_or(|t| t.elapsed() >= every);
        if moved || due {
            match &report.error {
                None => tracing::info!(offset_ms = report.offset_ms, peers = %peer_list(report), "clock offset"),
                Some(e) => tracing::warn!(peers = %peer_list(report), "{e}"),
            }
            self.note_logged(report);
        }
    }

    fn note_logged(&mut self, report: &ClockReport) {
        self.logged_offset = report.offset_ms;
        self.logged_at = Some(Instant::now());
    }
}

fn report_max(report: &ClockReport) -> u128 {
    u128::from(report.max_offset_ms.max(1))
}

/// "2=+3ms 3=-1ms": each peer's clock minus this node's.
fn peer_list(report: &ClockReport) -> String {
    let parts: Vec<String> = report
        .peers
        .iter()
        .map(|p| format!("{}={:+}ms", p.id, p.offset_ms))
        .collect();
    if parts.is_empty() {
        "none measured".into()
    } else {
        parts.join(" ")
    }
}

//! How far this node's wall clock can be trusted for expiry.
//!
//! Expiry is replicated: the leader stamps its clock into every entry and
//! the state machine computes `expires_at` from the stamp. Reads judge
//! expiry against the leader's clock carried with the read index (or the
//! latest stamp applied). So the only clocks that matter are the leader's,
//! and a skewed leader would shorten or stretch every TTL it stamps. This
//! module decides whether this node's clock is fit to lead and to serve
//! expiry-dependent reads.
//!
//! The measurement, as CockroachDB's: peers are probed for their wall clock
//! (`raft::life::clock_probe`), each answer bounded by the round trip. This node's
//! offset is its clock minus the median of the members' clocks (its own
//! counted), so one wrong clock in three is the one out of bounds, whoever
//! measures. A sample is kept relative to this node's monotonic clock, not
//! its wall clock: when the wall clock jumps (an NTP step, a VM resumed
//! from a pause), every offset moves with it at once, and the very next
//! [`Clock::now`] refuses, before a single stamp or read uses the jumped
//! time.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// This node's id, as Raft knows it.
pub type NodeId = u64;

/// Where wall and monotonic time come from (a seam for tests).
pub trait TimeSource: Send + Sync {
    /// Wall clock, unix milliseconds.
    fn wall_ms(&self) -> i64;
    /// A monotonic clock in milliseconds (any origin): never jumps.
    fn mono_ms(&self) -> i64;
}

/// The operating system's clocks.
pub struct SystemTime {
    origin: Instant,
}

impl Default for SystemTime {
    fn default() -> Self {
        Self { origin: Instant::now() }
    }
}

impl TimeSource for SystemTime {
    fn wall_ms(&self) -> i64 {
        wall_ms()
    }

    fn mono_ms(&self) -> i64 {
        self.origin.elapsed().as_millis() as i64
    }
}

/// The wall clock in unix milliseconds, untrusted: for answering a peer's
/// probe and for names, never for expiry.
pub fn wall_ms() -> i64 {
    match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d.as_millis() as i64,
        Err(e) => -(e.duration().as_millis() as i64),
    }
}

/// Why this node's clock is not trusted right now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClockError {
    #[error(
        "this node's clock is {abs} ms {dir} the cluster's (the maximum is {max_ms} ms, --max-clock-offset): \
         it does not lead or serve reads that depend on expiry until its clock is back within bounds",
        abs = .offset_ms.unsigned_abs(),
        dir = direction(*.offset_ms)
    )]
    Offset { offset_ms: i64, max_ms: u64 },
    #[error(
        "this node's clock offset is not measured yet (clocks of {have} of {members} members known, {need} needed): \
         it does not lead or serve reads that depend on expiry until it is"
    )]
    Unmeasured { have: usize, need: usize, members: usize },
}

fn direction(offset_ms: i64) -> &'static str {
    if offset_ms > 0 { "ahead of" } else { "behind" }
}

/// One peer's clock as last measured.
#[derive(Debug, Clone, Copy)]
struct Sample {
    /// The peer's wall clock minus this node's monotonic clock, at the
    /// moment of the answer: the peer's wall clock now is this plus the
    /// monotonic clock now.
    base_ms: i64,
    rtt_ms: u64,
    mono_at: i64,
}

/// A peer's clock as this node sees it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerOffset {
    pub id: NodeId,
    /// The peer's clock minus this node's.
    pub offset_ms: i64,
    pub rtt_ms: u64,
    pub age_ms: u64,
}

/// What the clock knows, for status and logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClockReport {
    /// This node's clock minus the cluster's (the members' median); None
    /// until a majority is measured.
    pub offset_ms: Option<i64>,
    pub max_offset_ms: u64,
    pub peers: Vec<PeerOffset>,
    pub error: Option<ClockError>,
}

#[derive(Default)]
struct Members {
    /// Every member, this node included.
    all: BTreeSet<NodeId>,
    samples: BTreeMap<NodeId, Sample>,
}

/// This node's view of its clock against its peers'.
pub struct Clock {
    id: NodeId,
    max_offset: Duration,
    /// A sample older than this is not used: the peer may have been
    /// stepped since.
    sample_ttl: Duration,
    source: Box<dyn TimeSource>,
    members: Mutex<Members>,
}

impl Clock {
    /// A clock that knows of no member but this node (so it trusts itself)
    /// until [`Clock::set_members`] is called.
    pub fn new(id: NodeId, max_offset: Duration, sample_ttl: Duration) -> Self {
        Self::with_source(id, max_offset, sample_ttl, Box::new(SystemTime::default()))
    }

    pub fn with_source(id: NodeId, max_offset: Duration, sample_ttl: Duration, source: Box<dyn TimeSource>) -> Self {
        let members = Members {
            all: [id].into(),
            samples: BTreeMap::new(),
        };
        Self {
            id,
            max_offset,
            sample_ttl,
            source,
            members: Mutex::new(members),
        }
    }

    pub fn id(&self) -> NodeId {
        self.id
    }

    pub fn max_offset(&self) -> Duration {
        self.max_offset
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Members> {
        self.members.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cluster's members (this node is always counted); samples of
    /// nodes no longer members are dropped.
    pub fn set_members(&self, ids: impl IntoIterator<Item = NodeId>) {
        let mut m = self.lock();
        m.all = ids.into_iter().chain([self.id]).collect();
        let all = m.all.clone();
        m.samples.retain(|id, _| all.contains(id));
    }

    /// The monotonic clock, for timing a probe.
    pub fn mono_ms(&self) -> i64 {
        self.source.mono_ms()
    }

    /// Records a probe of `peer`: sent at `sent_mono`, answered with the
    /// peer's wall clock `peer_wall_ms`, received now. A sample whose round
    /// trip exceeds the maximum offset says too little and is dropped.
    pub fn record(&self, peer: NodeId, sent_mono: i64, peer_wall_ms: i64) {
        let now = self.source.mono_ms();
        let rtt = now.saturating_sub(sent_mono).max(0);
        if peer == self.id || rtt as u128 > self.max_offset.as_millis() {
            return;
        }
        let mut m = self.lock();
        if !m.all.contains(&peer) {
            return;
        }
        let sample = Sample {
            base_ms: peer_wall_ms + rtt / 2 - now,
            rtt_ms: rtt as u64,
            mono_at: now,
        };
        m.samples.insert(peer, sample);
    }

    /// This node's wall clock in unix milliseconds, if it is within the
    /// maximum offset of the cluster's: the time to stamp entries and judge
    /// expiry with on this node.
    pub fn now(&self) -> Result<u64, ClockError> {
        let wall = self.source.wall_ms();
        let offset = self.offset(wall, self.source.mono_ms())?;
        if offset.unsigned_abs() as u128 > self.max_offset.as_millis() {
            return Err(ClockError::Offset {
                offset_ms: offset,
                max_ms: self.max_offset.as_millis() as u64,
            });
        }
        Ok(wall.max(0) as u64)
    }

    /// Whether this node's clock is trusted now.
    pub fn check(&self) -> Result<(), ClockError> {
        self.now().map(|_| ())
    }

    /// This node's clock minus the members' median. With an even number of
    /// clocks known, of the two middle ones the one farther from this
    /// node's counts: two clocks that disagree cannot tell which is wrong,
    /// so both are out.
    fn offset(&self, wall: i64, mono: i64) -> Result<i64, ClockError> {
        let m = self.lock();
        let mut peers_minus_me: Vec<i64> = vec![0];
        for (id, s) in &m.samples {
            if *id != self.id && self.fresh(s, mono) {
                peers_minus_me.push(s.base_ms + mono - wall);
            }
        }
        let members = m.all.len();
        let need = members / 2 + 1;
        if peers_minus_me.len() < need {
            return Err(ClockError::Unmeasured {
                have: peers_minus_me.len(),
                need,
                members,
            });
        }
        peers_minus_me.sort_unstable();
        let n = peers_minus_me.len();
        let (lo, hi) = (peers_minus_me[(n - 1) / 2], peers_minus_me[n / 2]);
        let median = if lo.abs() >= hi.abs() { lo } else { hi };
        Ok(-median)
    }

    fn fresh(&self, s: &Sample, mono: i64) -> bool {
        (mono - s.mono_at).max(0) as u128 <= self.sample_ttl.as_millis()
    }

    /// Offsets as measured now, for status and logs.
    pub fn report(&self) -> ClockReport {
        let (wall, mono) = (self.source.wall_ms(), self.source.mono_ms());
        let offset = self.offset(wall, mono);
        let peers = {
            let m = self.lock();
            m.samples
                .iter()
                .filter(|(_, s)| self.fresh(s, mono))
                .map(|(id, s)| PeerOffset {
                    id: *id,
                    offset_ms: s.base_ms + mono - wall,
                    rtt_ms: s.rtt_ms,
                    age_ms: (mono - s.mono_at).max(0) as u64,
                })
                .collect()
        };
        ClockReport {
            offset_ms: offset.as_ref().ok().copied(),
            max_offset_ms: self.max_offset.as_millis() as u64,
            peers,
            error: self.now().err(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicI64, Ordering};

    use super::*;

    /// A wall clock that can be stepped, and a monotonic one that only
    /// advances when told.
    #[derive(Default)]
    struct FakeTime {
        wall: AtomicI64,
        mono: AtomicI64,
    }

    impl FakeTime {
        fn advance(&self, ms: i64) {
            self.wall.fetch_add(ms, Ordering::SeqCst);
            self.mono.fetch_add(ms, Ordering::SeqCst);
        }
        fn step_wall(&self, ms: i64) {
            self.wall.fetch_add(ms, Ordering::SeqCst);
        }
    }

    impl TimeSource for Arc<FakeTime> {
        fn wall_ms(&self) -> i64 {
            self.wall.load(Ordering::SeqCst)
        }
        fn mono_ms(&self) -> i64 {
            self.mono.load(Ordering::SeqCst)
        }
    }

    const T0: i64 = 1_800_000_000_000;

    fn clock(members: &[NodeId]) -> (Clock, Arc<FakeTime>) {
        let t = Arc::new(FakeTime::default());
        t.wall.store(T0, Ordering::SeqCst);
        t.mono.store(1_000, Ordering::SeqCst);
        let c = Clock::with_source(
            1,
            Duration::from_millis(500),
            Duration::from_secs(10),
            Box::new(t.clone()),
        );
        c.set_members(members.iter().copied());
        (c, t)
    }

    /// A probe of `peer` whose clock reads ours plus `peer_offset`, with a
    /// round trip of `rtt` ms.
    fn probe(c: &Clock, t: &FakeTime, peer: NodeId, peer_offset: i64, rtt: i64) {
        let sent = t.mono.load(Ordering::SeqCst);
        t.advance(rtt / 2);
        let peer_wall = t.wall.load(Ordering::SeqCst) + peer_offset;
        t.advance(rtt - rtt / 2);
        c.record(peer, sent, peer_wall);
    }

    #[test]
    fn a_single_node_trusts_its_own_clock() {
        let (c, t) = clock(&[1]);
        assert_eq!(c.now(), Ok(T0 as u64));
        t.step_wall(3_600_000);
        assert_eq!(c.now(), Ok(T0 as u64 + 3_600_000), "nothing to compare with");
    }

    #[test]
    fn unmeasured_until_a_majority_of_clocks_is_known() {
        let (c, t) = clock(&[1, 2, 3]);
        assert!(matches!(c.now(), Err(ClockError::Unmeasured { have: 1, need: 2, .. })));
        probe(&c, &t, 2, 10, 4);
        assert!(c.now().is_ok());
        assert_eq!(c.report().offset_ms, Some(-10));
    }

    #[test]
    fn the_one_clock_off_in_three_is_the_one_out_of_bounds() {
        // This node is an hour ahead of two agreeing peers.
        let (c, t) = clock(&[1, 2, 3]);
        probe(&c, &t, 2, -3_600_000, 2);
        probe(&c, &t, 3, -3_600_003, 2);
        assert!(matches!(c.now(), Err(ClockError::Offset { offset_ms, .. }) if offset_ms > 3_599_000));
        // This node agrees with one of two peers: the other is off.
        let (c, t) = clock(&[1, 2, 3]);
        probe(&c, &t, 2, 3_600_000, 2);
        probe(&c, &t, 3, 5, 2);
        assert_eq!(c.report().offset_ms, Some(-5));
        assert!(c.now().is_ok());
    }

    #[test]
    fn two_clocks_that_disagree_are_both_out() {
        let (c, t) = clock(&[1, 2, 3]);
        probe(&c, &t, 2, -3_600_000, 2);
        assert!(matches!(c.now(), Err(ClockError::Offset { .. })));
        let (c, t) = clock(&[1, 2, 3]);
        probe(&c, &t, 2, 3_600_000, 2);
        assert!(matches!(c.now(), Err(ClockError::Offset { .. })));
    }

    #[test]
    fn a_jump_of_this_nodes_clock_is_refused_at_once_and_forgiven_when_it_is_restored() {
        let (c, t) = clock(&[1, 2, 3]);
        probe(&c, &t, 2, 0, 2);
        probe(&c, &t, 3, 0, 2);
        assert!(c.now().is_ok());
        t.advance(100);
        t.step_wall(-2_000);
        let err = c.now().expect_err("jumped back");
        assert!(err.to_string().contains("2000 ms behind"), "{err}");
        t.step_wall(2_000);
        assert!(c.now().is_ok(), "restored, without a new probe");
        t.step_wall(600);
        assert!(c.now().is_err(), "jumped forwards");
    }

    #[test]
    fn samples_age_out_and_slow_round_trips_are_dropped() {
        let (c, t) = clock(&[1, 2, 3]);
        probe(&c, &t, 2, 0, 501);
        assert!(c.now().is_err(), "a round trip over the bound says nothing");
        probe(&c, &t, 2, 0, 2);
        assert!(c.now().is_ok());
        t.advance(10_001);
        assert!(matches!(c.now(), Err(ClockError::Unmeasured { .. })));
    }

    #[test]
    fn non_members_are_neither_measured_nor_counted() {
        let (c, t) = clock(&[1, 2, 3]);
        probe(&c, &t, 9, 0, 2);
        assert!(c.now().is_err());
        probe(&c, &t, 2, 0, 2);
        probe(&c, &t, 3, 0, 2);
        c.set_members([1, 2]);
        assert_eq!(c.report().peers.iter().map(|p| p.id).collect::<Vec<_>>(), vec![2]);
    }

    #[test]
    fn within_the_bound_is_trusted() {
        let (c, t) = clock(&[1, 2, 3]);
        probe(&c, &t, 2, 450, 2);
        probe(&c, &t, 3, 480, 2);
        assert!(c.now().is_ok());
        probe(&c, &t, 2, 520, 2);
        probe(&c, &t, 3, 530, 2);
        assert!(c.now().is_err());
    }
}

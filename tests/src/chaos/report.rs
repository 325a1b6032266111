//! What a chaos run reports: the operations by outcome, the faults and how
//! long writes took to resume after each, and what the checkers found; and
//! the summary printed after a run.

use std::collections::BTreeMap;

use serde::Serialize;

use super::checker::Checks;
use super::expiry;
use super::faults::FaultEvent;
use super::history::{Outcome, Record};

#[derive(Debug, Default, Clone, Serialize)]
pub struct OpCounts {
    pub attempted: usize,
    pub acknowledged: usize,
    pub failed: usize,
    pub unknown: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Recovery {
    pub count: usize,
    pub p50_ms: u64,
    pub max_ms: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub seed: u64,
    pub duration_s: f64,
    pub nodes: usize,
    pub lossy: bool,
    /// Why network faults were skipped, if they were.
    pub skipped: Vec<String>,
    pub ops: OpCounts,
    pub ops_by_kind: BTreeMap<String, OpCounts>,
    pub faults: Vec<FaultEvent>,
    pub recovery: BTreeMap<String, Recovery>,
    /// Faults after which writes did not resume within the bound.
    pub slow_recoveries: Vec<String>,
    pub checks: Checks,
    pub expiry: expiry::ExpiryChecks,
    pub watch: super::watchers::WatchChecks,
    pub sessions: super::sessions::SessionChecks,
    pub redeem: super::redeem::RedeemChecks,
    /// No two nodes led one term.
    pub leaders: super::leaders::LeaderChecks,
}

impl Report {
    pub fn passed(&self) -> bool {
        self.checks.passed()
            && self.slow_recoveries.is_empty()
            && self.expiry.violations.is_empty()
            && self.watch.violations.is_empty()
            && self.sessions.ok()
            && self.redeem.violations.is_empty()
            && self.leaders.violations.is_empty()
    }

    /// The expiry, watch and session checkers' lines.
    fn other_checks(&self) -> String {
        let mut s = String::new();
        let e = &self.expiry;
        s += &format!(
            "expiry: {} handles with TTLs, {} reads live and {} gone, {} refused for the clock, violations = {}\n",
            e.handles,
            e.reads_live,
            e.reads_gone,
            e.refused_for_clock,
            e.violations.len()
        );
        let w = &self.watch;
        s += &format!(
            "watch: {} watchers, {} puts delivered, violations = {}\n",
            w.watchers,
            w.deliveries,
            w.violations.len()
        );
        let ss = &self.sessions;
        s += &format!(
            "sessions: {} clients, {} sessions, {} calls answered and {} failed, {} streams replayed, \
             lost sessions = {}, lost events = {}\n",
            ss.clients,
            ss.sessions,
            ss.calls_ok,
            ss.calls_failed,
            ss.streams_replayed,
            ss.lost_sessions.len(),
            ss.lost_events.len()
        );
        let r = &self.redeem;
        s += &format!(
            "single use: {} tokens, {} accepted, {} refused, {} unknown, violations = {}\n",
            r.tokens,
            r.accepted,
            r.refused,
            r.unknown,
            r.violations.len()
        );
        let l = &self.leaders;
        s += &format!(
            "leaders: {} statuses sampled, {} terms led, {} by two nodes (allowed), leader ids elected twice (split brain) = {}\n",
            l.samples,
            l.terms_led,
            l.shared_terms,
            l.violations.len()
        );
        s
    }

    /// A human summary; with the details of every violation.
    pub fn summary(&self) -> String {
        let c = &self.checks;
        let mut s = format!(
            "chaos run: seed {} | {} nodes | {:.0}s{}\n",
            self.seed,
            self.nodes,
            self.duration_s,
            if self.lossy {
                " | LOSSY CONTROL (one in-memory cart server)"
            } else {
                ""
            }
        );
        s += &format!(
            "operations: {} attempted, {} acknowledged, {} failed, {} unknown\n",
            self.ops.attempted, self.ops.acknowledged, self.ops.failed, self.ops.unknown
        );
        for (k, o) in &self.ops_by_kind {
            s += &format!(
                "  {k:<12} {:>6} attempted {:>6} ok {:>5} failed {:>5} unknown\n",
                o.attempted, o.acknowledged, o.failed, o.unknown
            );
        }
        s += &format!("faults injected: {}\n", self.faults.len());
        for (k, r) in &self.recovery {
            s += &format!(
                "  {k:<17} x{:<3} recovery p50 {:>6} ms, max {:>6} ms\n",
                r.count, r.p50_ms, r.max_ms
            );
        }
        for why in &self.skipped {
            s += &format!("  skipped: {why}\n");
        }
        // When each fault began, and on which nodes: what a violation's
        // time is read against.
        let timeline: Vec<String> = self
            .faults
            .iter()
            .map(|f| format!("{:.1}s {:?} {:?} {}ms", f.at_s, f.kind, f.nodes, f.held_ms))
            .collect();
        s += &format!("  timeline: {}\n", timeline.join("; "));
        s += &format!(
            "checks: acknowledged adds {}, carts {}, mints {}, checked-out carts {}, registers {} ({} ops)\n",
            c.acked_adds, c.acked_carts, c.acked_mints, c.checked_out_carts, c.registers_checked, c.register_ops
        );
        s += &format!(
            "lost = {}, duplicated = {}, linearizability violations = {}, inconclusive = {}, slow recoveries = {}\n",
            c.lost(),
            c.duplicated(),
            c.linearizability_violations.len(),
            c.linearizability_inconclusive.len(),
            self.slow_recoveries.len()
        );
        s += &self.other_checks();
        s += if self.passed() {
            "RESULT: PASS\n"
        } else {
            "RESULT: FAIL\n"
        };
        if !self.passed() {
            s += &format!("reproduce with: --seed {}\n", self.seed);
            for d in c.details.iter().take(10) {
                s += &format!("{d}\n");
            }
            for d in &self.slow_recoveries {
                s += &format!("SLOW RECOVERY: {d}\n");
            }
            for d in self
                .sessions
                .lost_sessions
                .iter()
                .chain(&self.sessions.lost_events)
                .take(10)
            {
                s += &format!("SESSION: {d}\n");
            }
            for d in self.leaders.violations.iter().take(10) {
                s += &format!("{d}\n");
            }
            for d in self.redeem.violations.iter().take(10) {
                s += &format!("SINGLE USE: {d}\n");
            }
            for d in self.expiry.violations.iter().take(10) {
                s += &format!("{d}\n");
            }
            for d in self.watch.violations.iter().take(10) {
                s += &format!("WATCH: {d}\n");
            }
        }
        s
    }
}

/// The operations of `records` by outcome: all of them, and per kind.
pub(super) fn count_ops(records: &[Record]) -> (OpCounts, BTreeMap<String, OpCounts>) {
    let mut ops = OpCounts::default();
    let mut ops_by_kind: BTreeMap<String, OpCounts> = BTreeMap::new();
    for r in records {
        for o in [&mut ops, ops_by_kind.entry(r.kind.to_string()).or_default()] {
            o.attempted += 1;
            match r.outcome {
                Outcome::Ok => o.acknowledged += 1,
                Outcome::Fail => o.failed += 1,
                Outcome::Unknown => o.unknown += 1,
            }
        }
    }
    (ops, ops_by_kind)
}

/// How long writes took to resume, per fault kind, over the faults after
/// which they did.
pub(super) fn recoveries(events: &[FaultEvent]) -> BTreeMap<String, Recovery> {
    let mut recovery = BTreeMap::new();
    let mut by_kind: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for e in events {
        if let Some(ms) = e.recovery_ms {
            by_kind.entry(format!("{:?}", e.kind)).or_default().push(ms);
        }
    }
    for (k, mut v) in by_kind {
        v.sort_unstable();
        recovery.insert(
            k,
            Recovery {
                count: v.len(),
                // Nearest rank: the smallest value at or above half of them.
                p50_ms: v[v.len().div_ceil(2) - 1],
                max_ms: *v.last().unwrap_or(&0),
            },
        );
    }
    recovery
}

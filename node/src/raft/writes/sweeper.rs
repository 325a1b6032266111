//! The leader-driven expiry sweep. Only the leader proposes; followers never
//! expire anything on their own clock. The sweep reads due entries from the
//! expiry index (oldest first, bounded), never a full scan, and proposes an
//! `Expire` command; the state machine re-checks each entry against the
//! proposal's stamp, so a handle renewed in the meantime survives.
//!
//! Because `expires_at` is absolute and replicated, a leader change neither
//! resets nor extends any TTL; the next leader simply continues sweeping.
//! The sweep's time is the leader's clock only while it is trusted
//! (`crate::clock`); otherwise nothing is swept.

use std::sync::Arc;
use std::time::{Duration, Instant};

use handlestore_proto::internal::v1 as ipb;

use crate::raft::writes::proposer::Proposer;
use crate::state::StateStore;

/// Most entries one sweep command removes.
const SWEEP_BATCH: usize = 1_000;
/// How often remembered write answers are aged out.
const DEDUP_AGING_EVERY: Duration = Duration::from_secs(5);

pub fn spawn(state: Arc<StateStore>, proposer: Arc<Proposer>, interval: Duration, dedup_window: Duration) {
    tokio::spawn(async move {
        let mut last_aging = Instant::now();
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            if !proposer.leader_view().is_leader() {
                continue;
            }
            loop {
                let now = match proposer.clock().now() {
                    Ok(now) => now,
                    Err(e) => {
                        tracing::debug!("expiry sweep skipped: {e}");
                        break;
                    }
                };
                let st = state.clone();
                let items = match tokio::task::spawn_blocking(move || st.due_expiries(now, SWEEP_BATCH)).await {
                    Ok(Ok(items)) => items,
                    Ok(Err(e)) => {
                        tracing::warn!("expiry sweep: reading the index failed: {e}");
                        break;
                    }
                    Err(_) => return,
                };
                let age = last_aging.elapsed() >= DEDUP_AGING_EVERY;
                if items.is_empty() && !age {
                    break;
                }
                if age {
                    last_aging = Instant::now();
                }
                let full = items.len() == SWEEP_BATCH;
                let n = items.len();
                let cmd = ipb::Command {
                    write_id: None,
                    op: Some(ipb::command::Op::Expire(ipb::Expire {
                        items,
                        dedup_before_ms: now.saturating_sub(dedup_window.as_millis() as u64),
                    })),
                    ..Default::default()
                };
                match proposer.propose_local(cmd, Vec::new()).await {
                    Ok(r) => tracing::debug!(due = n, removed = r.count, "expiry sweep"),
                    Err(e) => {
                        tracing::debug!("expiry sweep not applied: {e}");
                        break;
                    }
                }
                if !full {
                    break;
                }
            }
        }
    });
}

//! What Raft does while disks are under their reserve ([`storage::disk`](crate::storage::disk)),
//! this node's or a majority of the voters' ([`raft::log::room`](crate::raft::log::room)):
//!
//! - a node whose disk is full does not campaign while writes could commit
//!   with a leader that has room; when they could not (a majority is full,
//!   or the nodes with room are out of reach) it may, so that a leader
//!   serves reads;
//! - a leader whose disk is full hands leadership to the most caught-up
//!   voter with room, but only when the voters with room make a majority
//!   (else the new leader could not commit its first entry, and no node
//!   would serve a linearizable read), trying again every few seconds.
//!
//! Refusing the entries themselves is done where they arrive: the
//! proposer (client writes) and [`raft::service`](crate::raft::service) (the leader's appends,
//! trimmed by [`raft::net::intake`](crate::raft::net::intake), and snapshots).

use std::sync::Arc;
use std::time::{Duration, Instant};

use openraft::ServerState;

use crate::clock::Clock;
use crate::raft::Raft;
use crate::raft::life::admin::RaftAdmin;
use crate::raft::life::clock_probe::PROBE_INTERVAL;
use crate::raft::log::abstain::Standing;
use crate::raft::log::room::Room;

/// How long a leader with a full disk waits between attempts to hand
/// leadership over.
const RETRY: Duration = Duration::from_secs(3);

/// How long one attempt may take.
const HAND_OVER_WITHIN: Duration = Duration::from_secs(5);

pub fn spawn(raft: Raft, admin: RaftAdmin, standing: Standing, clock: Arc<Clock>) {
    tokio::spawn(async move {
        let mut full = standing.room.disk().subscribe();
        // Since when the disk is full, and when a hand-over was last tried.
        let (mut full_since, mut tried): (Option<Instant>, Option<Instant>) = (None, None);
        loop {
            raft.runtime_config().elect(may_campaign(&standing, &clock));
            let is_full = *full.borrow_and_update();
            if !is_full {
                (full_since, tried) = (None, None);
            } else if full_since.is_none() {
                full_since = Some(Instant::now());
            }
            let leads = raft.metrics().borrow().state == ServerState::Leader;
            let due = tried.is_none_or(|t| t.elapsed() >= RETRY);
            // The others' disks as they are now, not from before this one
            // filled (they may be filling with it).
            let known = full_since.is_some_and(|t| standing.room.all_heard_since(t));
            if leads && due && known && standing.room.commit_blocked().is_none() {
                hand_over(&admin, &standing.room).await;
                tried = Some(Instant::now());
            }
            // Peers' disks change with the clock probe's answers.
            tokio::select! {
                changed = full.changed() => if changed.is_err() { return },
                () = tokio::time::sleep(PROBE_INTERVAL) => {}
            }
        }
    });
}

/// Whether this node may stand for election: its clock is trusted, and
/// its storage allows it (`Standing`).
pub fn may_campaign(standing: &Standing, clock: &Clock) -> bool {
    standing.allows() && clock.check().is_ok()
}

async fn hand_over(admin: &RaftAdmin, room: &Room) {
    match admin
        .transfer_leader_avoiding(&room.full_voters(), HAND_OVER_WITHIN)
        .await
    {
        Ok(t) => tracing::warn!(
            to = t.to,
            term = t.term,
            "disk full: handed leadership to a member with room"
        ),
        Err(e) => tracing::warn!("disk full: could not hand leadership over ({e}); writes are refused here"),
    }
}

//! Which voters have room on their disks: this node's ([`storage::disk`](crate::storage::disk)), and
//! each peer's as it last said, in its answer to the clock probe or by
//! trimming a leader's request ([`raft::net::intake`](crate::raft::net::intake)).
//!
//! A client write commits once a majority has it on disk, so writes can
//! commit only while the voters known to be full are few enough for the
//! others to make a majority. What is built on that (docs/operations.md,
//! "A full or slow disk"):
//!
//! - the leader refuses client writes at once (`disk_full`) while they
//!   cannot commit, rather than append what would wait for space;
//! - a leader whose own disk is full hands leadership over only when the
//!   others can commit without it (else the new leader could not even
//!   commit its first entry, and no node would serve a linearizable read);
//! - a node whose disk is full stands for election only when writes could
//!   not commit anyway: reads need a leader, and none with room can win.
//!
//! A peer not heard from for [`FRESH`] counts as neither: it may be down,
//! and then it is not known to be full.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::raft::NodeId;
use crate::storage::disk::Disk;

/// How long a peer's word on its disk counts (four clock probes).
pub const FRESH: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, Copy)]
struct Heard {
    full: bool,
    at: Instant,
}

pub struct Room {
    id: NodeId,
    disk: Arc<Disk>,
    peers: Mutex<HashMap<NodeId, Heard>>,
    voters: Mutex<Vec<NodeId>>,
    /// Peers whose last word was "full", however old: zero lets the write
    /// path skip the locks.
    said_full: AtomicUsize,
}

impl Room {
    pub fn new(id: NodeId, disk: Arc<Disk>) -> Arc<Self> {
        Arc::new(Self {
            id,
            disk,
            peers: Mutex::default(),
            voters: Mutex::default(),
            said_full: AtomicUsize::new(0),
        })
    }

    pub fn disk(&self) -> &Arc<Disk> {
        &self.disk
    }

    /// What peer `id` said of its disk just now.
    pub fn heard(&self, id: NodeId, full: bool) {
        let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        peers.insert(
            id,
            Heard {
                full,
                at: Instant::now(),
            },
        );
        self.said_full
            .store(peers.values().filter(|h| h.full).count(), Ordering::Relaxed);
    }

    /// The voters, from the membership (the clock probe keeps this).
    pub fn set_voters(&self, voters: impl IntoIterator<Item = NodeId>) {
        *self.voters.lock().unwrap_or_else(|p| p.into_inner()) = voters.into_iter().collect();
    }

    /// Whether peer `id` said lately that its disk is full.
    pub fn is_full(&self, id: NodeId) -> bool {
        let peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        peers.get(&id).is_some_and(|h| h.full && h.at.elapsed() < FRESH)
    }

    /// Whether every other voter has said how its disk is since `t`.
    pub fn all_heard_since(&self, t: Instant) -> bool {
        let voters = self.voters.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        voters
            .iter()
            .filter(|v| **v != self.id)
            .all(|v| peers.get(v).is_some_and(|h| h.at >= t))
    }

    /// The voters known to be full, this node included, in id order.
    pub fn full_voters(&self) -> Vec<NodeId> {
        let voters = self.voters.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let me_full = self.disk.report().full;
        voters
            .into_iter()
            .filter(|v| if *v == self.id { me_full } else { self.is_full(*v) })
            .collect()
    }

    /// Why client writes cannot commit now, if they cannot: too many
    /// voters' disks are full.
    pub fn commit_blocked(&self) -> Option<String> {
        if self.said_full.load(Ordering::Relaxed) == 0 && !self.disk.report().full {
            return None;
        }
        let voters = self.voters.lock().unwrap_or_else(|p| p.into_inner()).len();
        blocked(voters, &self.full_voters())
    }

    /// Whether this node may take client writes as leader: its own disk
    /// has room and the voters with room make a majority.
    pub fn writes(&self) -> Result<(), String> {
        self.disk.room()?;
        match self.commit_blocked() {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }
}

/// Why writes cannot commit with `full` of `voters` voters full, if they
/// cannot.
fn blocked(voters: usize, full: &[NodeId]) -> Option<String> {
    let majority = voters / 2 + 1;
    if voters == 0 || full.len() <= voters - majority {
        return None;
    }
    let nodes: Vec<String> = full.iter().map(u64::to_string).collect();
    Some(format!(
        "disk full on {} of the {voters} voters (node {}): a write needs a majority with room, \
         so none is taken until space is freed (--min-free-disk-mb); reads go on",
        full.len(),
        nodes.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raft::log::durability::Durability;
    use crate::storage::disk::Reserve;

    #[test]
    fn writes_commit_while_the_voters_with_room_make_a_majority() {
        assert_eq!(blocked(3, &[]), None);
        assert_eq!(blocked(3, &[2]), None);
        let why = blocked(3, &[1, 3]).expect("blocked");
        assert!(why.contains("2 of the 3 voters (node 1, 3)"), "{why}");
        assert_eq!(blocked(5, &[1, 2]), None);
        assert!(blocked(5, &[1, 2, 5]).is_some());
        assert_eq!(blocked(0, &[]), None, "no membership yet");
        assert!(blocked(1, &[1]).is_some());
    }

    #[tokio::test]
    async fn a_peer_counts_as_full_only_while_its_word_is_fresh() {
        let dir = tempfile::tempdir().expect("dir");
        let room = Room::new(
            1,
            Disk::new(dir.path().into(), Reserve::new(0, 0), Arc::new(Durability::new(0))),
        );
        room.set_voters([1, 2, 3]);
        assert_eq!(room.writes(), Ok(()));
        room.heard(2, true);
        assert!(room.is_full(2));
        assert_eq!(room.writes(), Ok(()), "one full voter of three");
        room.heard(3, true);
        assert_eq!(room.full_voters(), [2, 3]);
        assert!(room.writes().is_err(), "two of three");
        room.heard(3, false);
        assert_eq!(room.writes(), Ok(()));
        let now = Instant::now();
        assert!(!room.all_heard_since(now), "not since now");
        room.heard(2, false);
        room.heard(3, false);
        assert!(room.all_heard_since(now));
        room.peers.lock().expect("lock").get_mut(&2).expect("heard").at -= FRESH;
        assert!(!room.is_full(2), "stale");
    }
}

//! Founding a new cluster (`--initial-cluster`, state `new`): any majority
//! of the initial members whose clocks are trusted forms it, whichever
//! members they are; a member that arrives later, or whose clock comes
//! back within bounds, joins it.
//!
//! Every member's flags give the same initial membership, and founding is
//! openraft's `initialize` with exactly that membership: one log entry at
//! index 0, identical on every node that writes it. A node writes it only
//! once it has heard, through the clock probes, from a majority of the
//! initial members (itself counted) that give the same membership (a
//! digest of ids and addresses), trust their clocks and hold no membership
//! yet; and only while its own clock is trusted (it campaigns at once, and
//! a node whose clock is off must not lead). If any of them already holds
//! a membership, the cluster exists: this node waits for its leader.
//!
//! Why two groups can never found two clusters: initializing writes no
//! decision, only the shared starting point; the cluster forms when a
//! candidate wins a vote of a majority of that one fixed membership, and
//! two majorities of one membership always share a member, who votes once
//! per term. Requiring the same digest keeps a node with different flags
//! (another membership under the same ids) out of the count.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use handlestore_proto::internal::v1 as ipb;
use sha2::{Digest, Sha256};

use crate::config::Member;
use crate::raft::NodeId;

/// What a peer's latest probe answer said about founding.
#[derive(Debug, Clone)]
struct Answer {
    digest: Vec<u8>,
    has_membership: bool,
    clock_trusted: bool,
    at: Instant,
}

/// Whether this node may found the cluster now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A majority agrees: initialize. `first` goes first, the lowest id of
    /// the members in reach that would found (its clock trusted yet or
    /// not: one that started a moment later is still measuring); the
    /// others give it a moment, as their founding at the same time would
    /// only split the first vote.
    Found { first: NodeId },
    /// A member already holds the membership: wait for its leader.
    Exists { member: NodeId },
    /// Not yet, and why.
    Wait(String),
}

/// This node's initial membership and what its peers said of theirs.
pub struct Founding {
    id: NodeId,
    initial: BTreeMap<NodeId, Member>,
    digest: Vec<u8>,
    /// An answer older than this is not counted.
    fresh_for: Duration,
    answers: Mutex<BTreeMap<NodeId, Answer>>,
}

/// The digest of a membership: its ids and addresses, in id order.
pub fn digest_of(members: &BTreeMap<NodeId, Member>) -> Vec<u8> {
    let mut h = Sha256::new();
    for (id, m) in members {
        h.update(format!("{id}\0{}\0{}\n", m.addr, m.peer_addr).as_bytes());
    }
    h.finalize().to_vec()
}

impl Founding {
    pub fn new(id: NodeId, initial: BTreeMap<NodeId, Member>, fresh_for: Duration) -> Self {
        Self {
            id,
            digest: digest_of(&initial),
            initial,
            fresh_for,
            answers: Mutex::new(BTreeMap::new()),
        }
    }

    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The digest this node answers probes with.
    pub fn digest(&self) -> &[u8] {
        &self.digest
    }

    pub fn initial(&self) -> &BTreeMap<NodeId, Member> {
        &self.initial
    }

    /// Notes a peer's probe answer.
    pub fn record(&self, peer: NodeId, answer: &ipb::ClockProbeResponse) {
        let a = Answer {
            digest: answer.initial_cluster_digest.clone(),
            has_membership: answer.has_membership,
            clock_trusted: answer.clock_trusted,
            at: Instant::now(),
        };
        self.answers.lock().unwrap_or_else(|p| p.into_inner()).insert(peer, a);
    }

    /// Whether to found the cluster now, given whether this node's clock
    /// is trusted.
    pub fn decide(&self, clock_trusted: bool) -> Verdict {
        let answers = self.answers.lock().unwrap_or_else(|p| p.into_inner());
        let mut agree = vec![self.id];
        let mut first = self.id;
        let mut waiting = Vec::new();
        for id in self.initial.keys().filter(|id| **id != self.id) {
            match answers.get(id).filter(|a| a.at.elapsed() <= self.fresh_for) {
                None => waiting.push(format!("node {id}: no answer")),
                Some(a) if a.digest != self.digest => waiting.push(format!("node {id}: a different --initial-cluster")),
                Some(a) if a.has_membership => return Verdict::Exists { member: *id },
                Some(a) => {
                    first = first.min(*id);
                    if a.clock_trusted {
                        agree.push(*id);
                    } else {
                        waiting.push(format!("node {id}: its clock is not trusted"));
                    }
                }
            }
        }
        let need = self.initial.len() / 2 + 1;
        if !clock_trusted {
            return Verdict::Wait("this node's clock is not trusted yet".into());
        }
        if agree.len() >= need {
            return Verdict::Found { first };
        }
        Verdict::Wait(format!(
            "{} of {} members ready ({need} needed); {}",
            agree.len(),
            self.initial.len(),
            waiting.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(n: u64) -> BTreeMap<NodeId, Member> {
        (1..=n)
            .map(|id| (id, Member::new(format!("10.0.0.{id}:7401"), "")))
            .collect()
    }

    fn answer(f: &Founding, peer: NodeId, digest: &[u8], has_membership: bool, trusted: bool) {
        f.record(
            peer,
            &ipb::ClockProbeResponse {
                node_id: peer,
                wall_ms: 0,
                initial_cluster_digest: digest.to_vec(),
                has_membership,
                clock_trusted: trusted,
                protocol_version: crate::raft::net::protocol::VERSION,
                disk_full: false,
            },
        );
    }

    #[test]
    fn any_majority_with_trusted_clocks_founds() {
        let f = Founding::new(2, members(3), Duration::from_secs(10));
        let d = f.digest().to_vec();
        assert!(matches!(f.decide(true), Verdict::Wait(_)), "alone");
        answer(&f, 3, &d, false, true);
        assert_eq!(
            f.decide(true),
            Verdict::Found { first: 2 },
            "nodes 2 and 3, node 1 absent"
        );
        assert!(
            matches!(f.decide(false), Verdict::Wait(_)),
            "not with its own clock off"
        );
    }

    #[test]
    fn a_member_with_its_clock_off_or_other_flags_is_not_counted() {
        let f = Founding::new(1, members(3), Duration::from_secs(10));
        let d = f.digest().to_vec();
        answer(&f, 2, &d, false, false);
        answer(&f, 3, b"other", false, true);
        let Verdict::Wait(why) = f.decide(true) else {
            panic!("founded without a majority")
        };
        assert!(
            why.contains("node 2: its clock") && why.contains("node 3: a different"),
            "{why}"
        );
        answer(&f, 2, &d, false, true);
        assert_eq!(f.decide(true), Verdict::Found { first: 1 });
    }

    #[test]
    fn the_lowest_member_in_reach_goes_first_even_while_its_clock_is_measured() {
        let f = Founding::new(2, members(3), Duration::from_secs(10));
        let d = f.digest().to_vec();
        answer(&f, 1, &d, false, false);
        answer(&f, 3, &d, false, true);
        assert_eq!(
            f.decide(true),
            Verdict::Found { first: 1 },
            "node 1 is there: it goes first"
        );
    }

    #[test]
    fn a_member_in_the_cluster_already_means_wait_for_its_leader() {
        let f = Founding::new(1, members(3), Duration::from_secs(10));
        let d = f.digest().to_vec();
        answer(&f, 2, &d, false, true);
        answer(&f, 3, &d, true, true);
        assert_eq!(f.decide(true), Verdict::Exists { member: 3 });
    }

    #[test]
    fn old_answers_do_not_count() {
        let f = Founding::new(1, members(3), Duration::ZERO);
        let d = f.digest().to_vec();
        answer(&f, 2, &d, false, true);
        std::thread::sleep(Duration::from_millis(5));
        assert!(matches!(f.decide(true), Verdict::Wait(_)));
    }

    #[test]
    fn the_digest_covers_ids_and_both_addresses() {
        let a = members(3);
        let mut b = a.clone();
        assert_eq!(digest_of(&a), digest_of(&b));
        b.insert(3, Member::new("10.0.0.3:7401", "10.0.0.3:7402"));
        assert_ne!(digest_of(&a), digest_of(&b));
        let single = Founding::new(1, members(1), Duration::from_secs(1));
        assert_eq!(
            single.decide(true),
            Verdict::Found { first: 1 },
            "a one-member cluster needs only itself"
        );
    }
}

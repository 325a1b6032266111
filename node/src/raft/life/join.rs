//! Joining a running cluster by itself (`--join ENDPOINTS`), as a
//! StatefulSet's new ordinal does: the node asks the cluster to add it as
//! a learner at its own addresses, waits until it has caught up, then
//! makes itself a voter, with no command typed.
//!
//! Every step is decided anew from two views, so a crash at any point
//! only repeats what is left: this node's own membership (a voter, or
//! removed: nothing to do; no membership yet, or a learner: ask) and the
//! leader's (not a member: add it; a learner: promote it once caught up;
//! a voter: wait to hear so). A node removed from the cluster (its own
//! membership holds it no more) never asks to come back: joining anew
//! takes an empty data directory.
//!
//! It watches for as long as the node runs: a voter that a concurrent
//! change made a learner again (two joiners promoting themselves from the
//! same view; promotions keep everyone, see [`Cluster::set_voters`])
//! promotes itself again. While the cluster cannot be reached, or refuses,
//! it retries with a backoff of up to [`MAX_BACKOFF`], saying why each
//! time. How the cluster is asked is the [`Cluster`] seam (the admin API,
//! as `handlestore member` asks it, in `cli::join`).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;

use crate::config::Member;
use crate::raft::{Membership, NodeId, Raft};

/// The first pause after a failed step; it doubles up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// The longest pause between two tries.
pub const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// How long one wait to catch up lasts before the leader is asked again
/// (it may have moved on, or removed this node).
const CATCH_UP_ROUND: Duration = Duration::from_secs(10);
/// How long to wait to hear of a change the leader already made.
const HEAR_WITHIN: Duration = Duration::from_secs(5);

/// The cluster to join, asked through its leader.
pub trait Cluster: Send + Sync {
    /// What the leader says of the membership and its progress.
    fn leader_view(&self) -> BoxFuture<'_, Result<LeaderView, String>>;
    /// Adds node `id` as a learner at `member`'s addresses, without
    /// waiting for it to catch up.
    fn add_learner(&self, id: NodeId, member: Member) -> BoxFuture<'_, Result<(), String>>;
    /// Makes the voters exactly `voters`, keeping any voter left out as a
    /// learner: a view that missed a concurrent promotion demotes that
    /// node, which promotes itself again, instead of removing it.
    fn set_voters(&self, voters: BTreeSet<NodeId>) -> BoxFuture<'_, Result<(), String>>;
}

/// What the leader said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderView {
    pub leader: NodeId,
    pub voters: BTreeSet<NodeId>,
    pub learners: BTreeSet<NodeId>,
    /// The leader's applied index when it answered.
    pub applied: u64,
}

/// Where this node stands in the membership it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// No membership: never added (or added, and told nothing yet).
    Nothing,
    Learner,
    Voter,
    /// A membership without this node: it was removed.
    Removed,
}

/// This node's place in `membership`.
pub fn held(membership: &Membership, me: NodeId) -> Held {
    if membership.nodes().next().is_none() {
        Held::Nothing
    } else if membership.voter_ids().any(|id| id == me) {
        Held::Voter
    } else if membership.learner_ids().any(|id| id == me) {
        Held::Learner
    } else {
        Held::Removed
    }
}

/// The next step toward being a voter, by the leader's view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The leader counts this node a voter already.
    Voter,
    /// Not a member: ask to be added as a learner.
    AddLearner,
    /// A learner: wait until this node has applied `to` (where the leader
    /// is now), then ask again.
    CatchUp { to: u64 },
    /// A learner that caught up: make the voters these.
    Promote { voters: BTreeSet<NodeId> },
}

/// Node `me`'s next step, given the leader's `view`, what this node has
/// `applied`, and the index it was last asked to catch up to (`target`):
/// it has caught up once it applied what the leader had applied when last
/// asked, so a cluster under load, whose leader is always a little ahead,
/// does not keep it waiting.
pub fn decide(me: NodeId, view: &LeaderView, applied: u64, target: Option<u64>) -> Step {
    if view.voters.contains(&me) {
        return Step::Voter;
    }
    if !view.learners.contains(&me) {
        return Step::AddLearner;
    }
    match target {
        Some(to) if applied >= to => Step::Promote {
            voters: view.voters.iter().copied().chain([me]).collect(),
        },
        _ => Step::CatchUp { to: view.applied },
    }
}

/// The pauses between failed steps: doubling, capped, with jitter.
struct Backoff(Duration);

impl Backoff {
    fn next(&mut self) -> Duration {
        let now = self.0;
        self.0 = (now * 2).min(MAX_BACKOFF);
        // Up to a quarter more, so joiners started together spread out.
        now + now.mul_f64(rand::random::<f64>() / 4.0)
    }

    fn reset(&mut self) {
        self.0 = FIRST_BACKOFF;
    }
}

/// Joins through `cluster` as node `me`, reached at `member`, and keeps
/// watching until Raft stops.
pub async fn run(raft: Raft, me: NodeId, member: Member, cluster: Box<dyn Cluster>) {
    let mut joiner = Joiner {
        raft,
        me,
        member,
        cluster,
        target: None,
        since: None,
    };
    let mut backoff = Backoff(FIRST_BACKOFF);
    while joiner.wait_needed().await {
        match joiner.step().await {
            Ok(()) => backoff.reset(),
            Err(why) => {
                joiner.target = None;
                let pause = backoff.next();
                tracing::warn!("joining the cluster: {why}; trying again in {} ms", pause.as_millis());
                tokio::time::sleep(pause).await;
            }
        }
    }
}

struct Joiner {
    raft: Raft,
    me: NodeId,
    member: Member,
    cluster: Box<dyn Cluster>,
    /// The leader's applied index this node was last told to reach.
    target: Option<u64>,
    /// When this join began, until it ends.
    since: Option<Instant>,
}

impl Joiner {
    /// Waits until this node's own membership says it needs the cluster
    /// (none yet, or a learner); false once Raft stops.
    async fn wait_needed(&mut self) -> bool {
        let mut rx = self.raft.server_metrics();
        let mut said = None;
        loop {
            let now = held(rx.borrow_and_update().membership_config.membership(), self.me);
            match now {
                Held::Nothing | Held::Learner => {
                    if self.since.is_none() {
                        tracing::info!(node = self.me, addr = %self.member, "joining the cluster (--join)");
                        self.since = Some(Instant::now());
                    }
                    return true;
                }
                Held::Voter => self.joined(),
                Held::Removed if said != Some(now) => tracing::info!(
                    "this node was removed from the cluster: it does not ask to join again (start it on an empty \
                     data directory to join anew)"
                ),
                Held::Removed => {}
            }
            said = Some(now);
            if rx.changed().await.is_err() {
                return false;
            }
        }
    }

    fn joined(&mut self) {
        if let Some(since) = self.since.take() {
            tracing::info!(
                node = self.me,
                took_ms = since.elapsed().as_millis() as u64,
                "joined the cluster: a voter now"
            );
        }
        self.target = None;
    }

    fn applied(&self) -> u64 {
        self.raft.metrics().borrow().last_applied.map_or(0, |l| l.index)
    }

    /// Asks the leader, and takes the step its answer calls for.
    async fn step(&mut self) -> Result<(), String> {
        let view = self.cluster.leader_view().await?;
        let applied = self.applied();
        match decide(self.me, &view, applied, self.target) {
            Step::Voter => self.hear(|m| held(m, self.me) == Held::Voter).await,
            Step::AddLearner => {
                tracing::info!(leader = view.leader, addr = %self.member, "asking to be added as a learner");
                self.cluster.add_learner(self.me, self.member.clone()).await?;
                tracing::info!("added as a learner; catching up with the leader");
                self.target = None;
                self.hear(|m| held(m, self.me) != Held::Nothing).await;
            }
            Step::CatchUp { to } => self.catch_up(applied, to).await,
            Step::Promote { voters } => {
                tracing::info!(leader = view.leader, ?voters, "caught up; asking to be made a voter");
                crate::failpoints::hit(crate::failpoints::JOIN_BEFORE_PROMOTE);
                self.cluster.set_voters(voters).await?;
                self.hear(|m| held(m, self.me) == Held::Voter).await;
            }
        }
        Ok(())
    }

    /// Waits (a while) until this node has applied `to`.
    async fn catch_up(&mut self, applied: u64, to: u64) {
        self.target = Some(to);
        if applied >= to {
            return;
        }
        tracing::info!(applied, of = to, "catching up with the leader");
        let _ = self
            .raft
            .wait(Some(CATCH_UP_ROUND))
            .applied_index_at_least(Some(to), "caught up")
            .await;
    }

    /// Waits (a while) until this node's own membership says `what` the
    /// leader already did.
    async fn hear(&self, what: impl Fn(&Membership) -> bool) {
        let mut rx = self.raft.server_metrics();
        let heard = rx.wait_for(|m| what(m.membership_config.membership()));
        let _ = tokio::time::timeout(HEAR_WITHIN, heard).await;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn view(voters: &[NodeId], learners: &[NodeId], applied: u64) -> LeaderView {
        LeaderView {
            leader: 1,
            voters: voters.iter().copied().collect(),
            learners: learners.iter().copied().collect(),
            applied,
        }
    }

    fn membership(voters: &[NodeId], learners: &[NodeId]) -> Membership {
        let nodes: BTreeMap<NodeId, Member> = voters
            .iter()
            .chain(learners)
            .map(|id| (*id, Member::new(format!("hs-{id}:7401"), "")))
            .collect();
        let voters: BTreeSet<NodeId> = voters.iter().copied().collect();
        Membership::new(vec![voters], nodes)
    }

    #[test]
    fn a_node_not_in_the_leaders_membership_asks_to_be_added() {
        assert_eq!(decide(4, &view(&[1, 2, 3], &[], 10), 0, None), Step::AddLearner);
        assert_eq!(
            decide(4, &view(&[1, 2, 3], &[5], 10), 0, Some(9)),
            Step::AddLearner,
            "a target left from before (its add was lost with a leader) changes nothing"
        );
    }

    #[test]
    fn a_learner_catches_up_to_where_the_leader_was_then_is_promoted_with_every_voter() {
        let v = view(&[1, 2, 3], &[4], 100);
        assert_eq!(decide(4, &v, 0, None), Step::CatchUp { to: 100 }, "never asked yet");
        assert_eq!(decide(4, &v, 99, Some(100)), Step::CatchUp { to: 100 }, "not there yet");
        let ahead = view(&[1, 2, 3], &[4], 180);
        assert_eq!(
            decide(4, &ahead, 100, Some(100)),
            Step::Promote {
                voters: [1, 2, 3, 4].into()
            },
            "the leader moved on meanwhile: caught up all the same"
        );
    }

    #[test]
    fn a_voter_by_the_leaders_view_has_nothing_left_to_ask() {
        assert_eq!(decide(4, &view(&[1, 2, 3, 4], &[], 100), 0, None), Step::Voter);
        assert_eq!(decide(4, &view(&[1, 2, 3, 4], &[5], 100), 100, Some(100)), Step::Voter);
    }

    #[test]
    fn a_learner_made_one_again_by_a_concurrent_promotion_is_promoted_again_with_the_other() {
        // Nodes 4 and 5 promoted themselves from the same view; 5's won
        // last and kept 4 as a learner.
        let v = view(&[1, 2, 3, 5], &[4], 200);
        assert_eq!(
            decide(4, &v, 200, Some(150)),
            Step::Promote {
                voters: [1, 2, 3, 4, 5].into()
            }
        );
    }

    #[test]
    fn its_own_membership_says_whether_to_ask_at_all() {
        assert_eq!(held(&Membership::default(), 4), Held::Nothing, "an empty log");
        assert_eq!(held(&membership(&[1, 2, 3], &[4]), 4), Held::Learner);
        assert_eq!(held(&membership(&[1, 2, 3, 4], &[]), 4), Held::Voter);
        assert_eq!(
            held(&membership(&[1, 2, 3], &[]), 4),
            Held::Removed,
            "never asks back in"
        );
    }

    #[test]
    fn the_backoff_doubles_to_its_cap_and_starts_over_after_a_success() {
        let mut b = Backoff(FIRST_BACKOFF);
        let first = b.next();
        assert!(
            first >= FIRST_BACKOFF && first <= FIRST_BACKOFF.mul_f64(1.25),
            "{first:?}"
        );
        let second = b.next();
        assert!(second >= FIRST_BACKOFF * 2, "{second:?}");
        for _ in 0..10 {
            assert!(b.next() <= MAX_BACKOFF.mul_f64(1.25));
        }
        b.reset();
        assert!(b.next() <= FIRST_BACKOFF.mul_f64(1.25));
    }
}

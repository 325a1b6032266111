//! `handlestore member shrink --to N`: removes every member whose id is
//! above N, highest first, one change at a time, each waited for; when the
//! leader is one of them, it first hands leadership to a voter that stays.
//! A StatefulSet scaled in to N replicas runs it first (the chart's
//! pre-upgrade hook), so the members whose pods go leave the membership
//! before their pods do; a rolling restart (N unchanged) finds nothing
//! above N and changes nothing.
//!
//! It refuses, changing nothing, to leave no voter, and to remove a
//! learner: one is a member still joining (`--join`) or added by hand,
//! which the admin API can promote but not remove. Wait until it is a
//! voter (`handlestore member list`), then shrink.

use std::collections::BTreeSet;

use handlestore_proto::v1 as pb;
use pb::admin_client::AdminClient;

use super::leader::leader_status;
use super::{CliError, Conn};

/// The next change toward N members.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Plan {
    /// No member above N.
    Done,
    /// The leader goes: hand leadership to one of these voters that stay
    /// (lowest id first).
    HandOver {
        from: u64,
        to: Vec<u64>,
    },
    /// Remove voter `id`: the voters become `voters`.
    Remove {
        id: u64,
        voters: BTreeSet<u64>,
    },
    Refuse(String),
}

/// The next change to make `members` (as the leader `leader` sees them)
/// those with an id of at most `n`.
fn plan(n: u64, leader: u64, members: &[pb::Member]) -> Plan {
    let staying: Vec<u64> = members.iter().filter(|m| m.voter && m.id <= n).map(|m| m.id).collect();
    let above: Vec<&pb::Member> = members.iter().filter(|m| m.id > n).collect();
    let Some(highest) = above.iter().map(|m| m.id).max() else {
        return Plan::Done;
    };
    if staying.is_empty() {
        return Plan::Refuse(format!(
            "no voter has an id of at most {n}: shrinking to {n} would leave the cluster without a voter"
        ));
    }
    if let Some(learner) = above.iter().find(|m| !m.voter) {
        return Plan::Refuse(format!(
            "node {} is a learner (a member still joining): wait until it is a voter \
             (`handlestore member list`), then shrink",
            learner.id
        ));
    }
    if highest == leader {
        return Plan::HandOver {
            from: leader,
            to: staying,
        };
    }
    let voters = members
        .iter()
        .filter(|m| m.voter && m.id != highest)
        .map(|m| m.id)
        .collect();
    Plan::Remove { id: highest, voters }
}

/// More changes than any shrink needs (a hand-over and a removal per
/// member): past this, something undoes them.
const MAX_CHANGES: usize = 64;

pub async fn run(conn: &Conn, n: u64) -> Result<(), CliError> {
    for changes in 0..MAX_CHANGES {
        let changed = changes > 0;
        let (status, ch) = leader_status(conn).await?;
        let mut admin = AdminClient::new(ch);
        match plan(n, status.node_id, &status.members) {
            Plan::Done if !changed => {
                println!("no member has an id above {n}: nothing to do");
                return Ok(());
            }
            Plan::Done => return Ok(()),
            Plan::Refuse(why) => return Err(CliError::new(2, why)),
            Plan::HandOver { from, to } => hand_over(&mut admin, from, &to).await?,
            Plan::Remove { id, voters } => {
                admin
                    .change_membership(pb::ChangeMembershipRequest {
                        voters: voters.into_iter().collect(),
                        retain: false,
                    })
                    .await
                    .map_err(|s| CliError::new(2, format!("removing node {id}: {}", s.message())))?;
                println!("removed node {id}");
            }
        }
    }
    Err(CliError::new(
        2,
        format!("still members above {n} after {MAX_CHANGES} changes: is something adding them back?"),
    ))
}

/// Hands leadership from `from` to the first of `to` that takes it.
async fn hand_over(
    admin: &mut AdminClient<handlestore_client::NodeChannel>,
    from: u64,
    to: &[u64],
) -> Result<(), CliError> {
    let mut why = Vec::new();
    for id in to {
        match admin.transfer_leader(pb::TransferLeaderRequest { to: *id }).await {
            Ok(t) => {
                println!("node {from} led and goes: node {} leads now", t.into_inner().leader_id);
                return Ok(());
            }
            Err(s) => why.push(format!("node {id}: {}", s.message())),
        }
    }
    Err(CliError::new(
        2,
        format!(
            "node {from} leads and goes, and could hand leadership to none that stays ({})",
            why.join("; ")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(voters: &[u64], learners: &[u64]) -> Vec<pb::Member> {
        let m = |id: u64, voter| pb::Member {
            id,
            addr: format!("hs-{id}:7401"),
            voter,
            peer_addr: String::new(),
        };
        voters
            .iter()
            .map(|id| m(*id, true))
            .chain(learners.iter().map(|id| m(*id, false)))
            .collect()
    }

    #[test]
    fn members_above_n_go_highest_first_and_a_leader_among_them_hands_over_first() {
        let five = members(&[1, 2, 3, 4, 5], &[]);
        assert_eq!(
            plan(3, 1, &five),
            Plan::Remove {
                id: 5,
                voters: [1, 2, 3, 4].into()
            }
        );
        assert_eq!(
            plan(3, 5, &five),
            Plan::HandOver {
                from: 5,
                to: vec![1, 2, 3]
            },
            "the leader goes: to one that stays, never to node 4"
        );
        assert_eq!(
            plan(3, 5, &members(&[1, 2, 3, 4], &[])),
            Plan::Remove {
                id: 4,
                voters: [1, 2, 3].into()
            },
            "node 5 left: its view of the leader is no longer asked"
        );
    }

    #[test]
    fn nothing_above_n_is_nothing_to_do() {
        assert_eq!(plan(3, 1, &members(&[1, 2, 3], &[])), Plan::Done);
        assert_eq!(plan(5, 2, &members(&[1, 2, 3], &[])), Plan::Done, "N above every id");
    }

    #[test]
    fn it_refuses_to_leave_no_voter_or_to_remove_a_learner() {
        let Plan::Refuse(why) = plan(1, 3, &members(&[2, 3], &[1])) else {
            panic!("would leave no voter");
        };
        assert!(why.contains("without a voter"), "{why}");
        let Plan::Refuse(why) = plan(3, 1, &members(&[1, 2, 3, 4], &[5])) else {
            panic!("node 5 is a learner");
        };
        assert!(why.contains("node 5 is a learner"), "{why}");
        assert_eq!(
            plan(3, 1, &members(&[1, 2, 4], &[3])),
            Plan::Remove {
                id: 4,
                voters: [1, 2].into()
            },
            "a learner that stays is no concern"
        );
    }
}

//! Handing leadership to another voter: `handlestore member transfer-leader`
//! and a leader stopping on SIGTERM. openraft 0.9 has no transfer call;
//! this builds one on what it has (docs/dev/design.md, "Leader transfer on openraft 0.9"):
//!
//! 1. the leader picks the target (the one asked for, or the voter with
//!    the most of the log on its disk), holds its writes back (they wait:
//!    a vote is granted only to a log as long as the voter's), and waits
//!    until the target has all of the leader's log on its disk;
//! 2. it asks the target to campaign now (`ElectNow`): the target checks
//!    that the leader and term are still the ones that asked and that it
//!    holds the leader's last index, then starts an election a term up;
//! 3. the old leader grants that vote (its own lease, from its election,
//!    has run out) and steps down; with the target's own vote that is a
//!    majority of three. In a larger cluster the other followers refuse
//!    while they hear from a leader, so the leader first stops its
//!    heartbeats for one election timeout (their leases run out).
//!
//! Writes held back are proposed once the transfer ends: refused
//! `not_leader` by the old leader and retried by clients at the new one.

use std::time::{Duration, Instant};

use handlestore_proto::internal::v1 as ipb;
use handlestore_proto::reason::Reason;
use openraft::{RaftMetrics, ServerState};

use crate::config::Member;
use crate::raft::error::ProposeError;
use crate::raft::net::network::Peers;
use crate::raft::reads::lease::ReadLease;
use crate::raft::writes::batch::WriteGate;
use crate::raft::{NodeId, Raft};

/// The leadership handed over.
#[derive(Debug, Clone, Copy)]
pub struct Transferred {
    pub to: NodeId,
    pub term: u64,
    /// From asking the target to campaign to seeing it lead.
    pub took: Duration,
}

/// Who leads now and what the target must hold.
struct Plan {
    me: NodeId,
    term: u64,
    target: NodeId,
    target_addr: String,
    last_log_index: u64,
    voters: usize,
}

/// What a transfer works with: this node's Raft, channels to its peers,
/// and the gate of its writes.
pub struct Cluster<'a> {
    pub raft: &'a Raft,
    pub peers: &'a Peers,
    pub writes: &'a WriteGate,
    /// The leader's read lease: suspended from the first step to the last
    /// (the target campaigns against the promise it made the lease on).
    pub lease: &'a ReadLease,
    /// The longest election timeout: a follower's lease.
    pub election_max: Duration,
    /// Whether a target that stops answering after it was asked to
    /// campaign is given up on at once (it is stopping too, say), rather
    /// than waited for.
    pub give_up_on_silence: bool,
}

/// Why there is no one to hand leadership to.
pub const NO_OTHER_VOTER: &str = "no other voter to hand leadership to";

/// Whom to hand leadership to.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// This voter; None: the most caught-up voter not in `avoid`.
    pub to: Option<NodeId>,
    pub avoid: &'a [NodeId],
}

/// Hands leadership from this node (the leader) to `to`, within `within`.
/// Writes are held back from the first step to the last (they wait, then
/// go to the new leader).
pub async fn transfer(c: &Cluster<'_>, to: Target<'_>, within: Duration) -> Result<Transferred, ProposeError> {
    let deadline = Instant::now() + within;
    let first = plan(c.raft, to)?;
    // A target that is gone already (the whole cluster stopping) is not
    // waited for: holding writes back would wait for those in flight, which
    // may need it to commit.
    if c.give_up_on_silence && !answers(c.peers, &first).await {
        return Err(ProposeError::TargetStopping(first.target));
    }
    let _no_lease = c.lease.suspend();
    let left = deadline.saturating_duration_since(Instant::now());
    let _held = tokio::time::timeout(left, c.writes.hold())
        .await
        .map_err(|_| ProposeError::TookTooLong(format!("writes in flight not answered within {left:?}")))?
        .ok_or(ProposeError::Shutdown)?;
    // The log no longer grows: plan against its end.
    let plan = plan(c.raft, to)?;
    caught_up(c.raft, &plan, deadline).await?;
    wait_out_leases(c, &plan).await?;
    let started = Instant::now();
    let asked = ask(c.peers, &plan, c.give_up_on_silence).await;
    let led = match asked {
        Ok(()) => new_leader(c, &plan, started, deadline).await,
        Err(e) => Err(e),
    };
    if plan.voters > 3 && c.raft.metrics().borrow().state == ServerState::Leader {
        c.raft.runtime_config().heartbeat(true);
    }
    let (to, term) = led?;
    Ok(Transferred {
        to,
        term,
        took: started.elapsed(),
    })
}

/// The old leader grants the target's vote only once its own lease (taken
/// when it was elected) has run out; the other followers, only once they
/// have not heard from a leader for as long: in a cluster of more than
/// three voters the leader stops its heartbeats for that long.
async fn wait_out_leases(c: &Cluster<'_>, plan: &Plan) -> Result<(), ProposeError> {
    let in_office = c
        .raft
        .with_raft_state(|st| st.vote_last_modified().map(|t| t.elapsed()))
        .await
        .map_err(|e| ProposeError::Stopped(e.to_string()))?
        .unwrap_or(Duration::MAX);
    let margin = Duration::from_millis(50);
    if plan.voters > 3 {
        c.raft.runtime_config().heartbeat(false);
        tokio::time::sleep(c.election_max + margin).await;
    } else if in_office < c.election_max {
        tokio::time::sleep(c.election_max - in_office + margin).await;
    }
    Ok(())
}

fn plan(raft: &Raft, target: Target<'_>) -> Result<Plan, ProposeError> {
    let m = raft.metrics().borrow().clone();
    if m.state != ServerState::Leader {
        return Err(ProposeError::NotLeader(None));
    }
    let membership = m.membership_config.membership();
    let voters: Vec<NodeId> = membership.voter_ids().collect();
    let matched = |id: NodeId| flushed(&m, id).unwrap_or(0);
    let target = match target.to {
        Some(id) if id == m.id => return Err(ProposeError::Precondition(format!("node {id} leads already"))),
        Some(id) if !voters.contains(&id) => {
            return Err(ProposeError::Precondition(format!(
                "node {id} is not a voter: only a voter can lead (voters: {voters:?})"
            )));
        }
        Some(id) => id,
        None => voters
            .iter()
            .copied()
            .filter(|v| *v != m.id && !target.avoid.contains(v))
            .max_by_key(|v| (matched(*v), std::cmp::Reverse(*v)))
            .ok_or_else(|| ProposeError::Precondition(NO_OTHER_VOTER.into()))?,
    };
    let target_addr = membership
        .get_node(&target)
        .map(|n| n.peer().to_string())
        .ok_or_else(|| ProposeError::Internal(format!("voter {target} has no address")))?;
    Ok(Plan {
        me: m.id,
        term: m.current_term,
        target,
        target_addr,
        last_log_index: m.last_log_index.unwrap_or(0),
        voters: voters.len(),
    })
}

/// On the leader: the last log index `id` has on its disk, as far as the
/// leader knows.
fn flushed(m: &RaftMetrics<NodeId, Member>, id: NodeId) -> Option<u64> {
    m.replication.as_ref()?.get(&id).copied().flatten().map(|l| l.index)
}

/// Waits until the target has the leader's last log index on its disk.
async fn caught_up(raft: &Raft, plan: &Plan, deadline: Instant) -> Result<(), ProposeError> {
    let target = plan.target;
    let index = plan.last_log_index;
    let left = deadline.saturating_duration_since(Instant::now());
    let _ = raft.trigger().heartbeat().await;
    raft.wait(Some(left))
        .metrics(
            |m| flushed(m, target).is_some_and(|i| i >= index),
            "the target caught up",
        )
        .await
        .map(drop)
        .map_err(|_| {
            ProposeError::TookTooLong(format!(
                "node {target} did not get the log up to index {index} within {left:?}; leadership stays"
            ))
        })
}

/// Asks the target to campaign now. With `silence_is_stopping`, a target
/// that cannot be reached is taken for one that is stopping too.
async fn ask(peers: &Peers, plan: &Plan, silence_is_stopping: bool) -> Result<(), ProposeError> {
    let mut client = peers
        .raft_client(&plan.target_addr)
        .map_err(|e| ProposeError::Internal(format!("node {}: {e}", plan.target)))?;
    let req = ipb::ElectNowRequest {
        leader_id: plan.me,
        term: plan.term,
        last_log_index: plan.last_log_index,
    };
    match client.elect_now(req).await {
        Ok(_) => Ok(()),
        Err(s) if s.code() == tonic::Code::Unimplemented => Err(ProposeError::Precondition(format!(
            "node {} runs a build without leader transfer; upgrade it first",
            plan.target
        ))),
        Err(s) if Reason::of(&s) == Some(Reason::Shutdown) => Err(ProposeError::TargetStopping(plan.target)),
        Err(s) if silence_is_stopping && s.code() == tonic::Code::Unavailable => {
            Err(ProposeError::TargetStopping(plan.target))
        }
        Err(s) => Err(ProposeError::Precondition(format!(
            "node {} would not campaign: {}",
            plan.target,
            s.message()
        ))),
    }
}

/// How often a stopping leader asks whether its target still answers.
const SILENCE_CHECK: Duration = Duration::from_millis(100);

/// Waits until a leader of a later term is known; the target, normally.
/// With `c.give_up_on_silence`, gives up once the target does not answer.
async fn new_leader(
    c: &Cluster<'_>,
    plan: &Plan,
    asked: Instant,
    deadline: Instant,
) -> Result<(NodeId, u64), ProposeError> {
    let term = plan.term;
    let mut metrics = c.raft.metrics();
    let led = |m: &RaftMetrics<NodeId, Member>| m.current_term > term && m.current_leader.is_some_and(|l| l != plan.me);
    loop {
        {
            let m = metrics.borrow_and_update();
            if led(&m) {
                return Ok((m.current_leader.unwrap_or(plan.target), m.current_term));
            }
        }
        if c.give_up_on_silence && !answers(c.peers, plan).await {
            return Err(ProposeError::TargetStopping(plan.target));
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(ProposeError::TookTooLong(format!(
                "no new leader within {:?} after node {} campaigned",
                now - asked,
                plan.target
            )));
        }
        let wake = deadline.min(now + SILENCE_CHECK);
        if let Ok(Err(_)) = tokio::time::timeout_at(wake.into(), metrics.changed()).await {
            return Err(ProposeError::Shutdown);
        }
    }
}

/// Whether the target answers a clock probe within [`SILENCE_CHECK`].
async fn answers(peers: &Peers, plan: &Plan) -> bool {
    let Ok(mut client) = peers.raft_client(&plan.target_addr) else {
        return false;
    };
    let mut req = tonic::Request::new(ipb::ClockProbeRequest {
        from: plan.me,
        protocol_version: crate::raft::net::protocol::VERSION,
    });
    req.set_timeout(SILENCE_CHECK);
    client.clock_probe(req).await.is_ok()
}

/// On the target: starts an election if the asking leader still leads
/// this node's term and this node holds the leader's last index.
pub async fn elect_now(raft: &Raft, req: &ipb::ElectNowRequest) -> Result<(), String> {
    let m = raft.metrics().borrow().clone();
    if m.current_term != req.term || m.current_leader != Some(req.leader_id) {
        return Err(format!(
            "asked by node {} in term {}, but this node is in term {} with leader {:?}",
            req.leader_id, req.term, m.current_term, m.current_leader
        ));
    }
    let have = m.last_log_index.unwrap_or(0);
    if have < req.last_log_index {
        return Err(format!(
            "this node has the log up to {have}, not {}",
            req.last_log_index
        ));
    }
    if !m.membership_config.membership().voter_ids().any(|v| v == m.id) {
        return Err("this node is not a voter".into());
    }
    raft.trigger().elect().await.map_err(|e| e.to_string())
}

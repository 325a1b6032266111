//! The cluster's name: a random id a leader gives the cluster once, through
//! the log (a `ClusterIdentity` command; the first one committed stays, see
//! `state::apply`), so every member holds the same name in its state and
//! every snapshot carries it. A restored backup gets a name of its own
//! (`state::backup`).
//!
//! Every AppendEntries, Vote and snapshot carries the sender's name, and a
//! named node refuses one that carries another name or none: a node
//! restored from a backup can never be taken into the cluster the backup
//! came from, nor an old member into the restored one, whatever addresses
//! they are given. A node without a name yet (a new learner, a member of a
//! cluster not named yet) takes anything; it learns the name with the log.
//!
//! The leader names the cluster only once every member speaks peer
//! protocol 2: a build from before names would fail the command, and its
//! state would differ from the others'. Once named, a build from before
//! names still follows a leader, but its votes and, as leader, its
//! appends are refused by the named members (docs/operations.md, "Rolling
//! upgrades").

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use handlestore_proto::internal::v1 as ipb;

use super::Raft;
use super::proposer::Proposer;
use super::protocol::PeerProtocols;
use crate::state::StateStore;

/// The peer protocol that knows names.
pub const NAMED_SINCE: u32 = 2;

/// How often a leader of an unnamed cluster looks again.
const NAME_EVERY: Duration = Duration::from_secs(1);

/// How often a refusal that goes on is logged.
const WARN_EVERY: Duration = Duration::from_secs(30);

/// This node's side of the check: its name, from its applied state.
#[derive(Clone)]
pub struct Identity {
    state: Arc<StateStore>,
    warned: Arc<Mutex<Option<Instant>>>,
}

impl Identity {
    pub fn new(state: Arc<StateStore>) -> Self {
        Self {
            state,
            warned: Arc::default(),
        }
    }

    /// This node's cluster name ("" while unnamed).
    pub fn ours(&self) -> String {
        self.state.cluster_id().to_string()
    }

    /// Whether to take a request from a node that says it is of `theirs`.
    pub fn admit(&self, theirs: &str, what: &str) -> Result<(), String> {
        let ours = self.state.cluster_id();
        if ours.is_empty() || *ours == *theirs {
            return Ok(());
        }
        let why = refusal(what, theirs, &ours);
        let mut warned = self.warned.lock().unwrap_or_else(|p| p.into_inner());
        if warned.is_none_or(|t| t.elapsed() >= WARN_EVERY) {
            tracing::warn!("{why}");
            *warned = Some(Instant::now());
        }
        Err(why)
    }
}

fn refusal(what: &str, theirs: &str, ours: &str) -> String {
    if theirs.is_empty() {
        return format!(
            "refused {what} from a node of no named cluster (this node is of {ours}): a build from before cluster \
             names, or a node given this cluster's addresses"
        );
    }
    format!(
        "refused {what} from a node of another cluster ({theirs}; this node is of {ours}): a node restored from a \
         backup, or given another cluster's addresses"
    )
}

/// A new random name: 128 bits, hex.
pub fn new_name() -> String {
    data_encoding::HEXLOWER.encode(&rand::random::<[u8; 16]>())
}

/// While this node leads an unnamed cluster whose members all speak
/// [`NAMED_SINCE`], proposes a name.
pub fn spawn_naming(raft: Raft, proposer: Arc<Proposer>, state: Arc<StateStore>, protocols: Arc<PeerProtocols>) {
    tokio::spawn(async move {
        let mut said_why = false;
        loop {
            tokio::time::sleep(NAME_EVERY).await;
            if !state.cluster_id().is_empty() {
                return;
            }
            if !proposer.leader_view().is_leader() {
                continue;
            }
            if let Some(old) = member_without_names(&raft, &protocols) {
                if !said_why {
                    tracing::info!("the cluster gets its name once node {old} runs a build that knows names");
                    said_why = true;
                }
                continue;
            }
            let cmd = ipb::Command {
                op: Some(ipb::command::Op::ClusterIdentity(ipb::ClusterIdentity {
                    id: new_name(),
                })),
                ..Default::default()
            };
            match proposer.propose_local(cmd, Vec::new()).await {
                Ok(_) => tracing::info!(cluster_id = %state.cluster_id(), "named the cluster"),
                Err(e) => tracing::debug!("naming the cluster: {e}"),
            }
        }
    });
}

/// A member (other than this node) not known to speak [`NAMED_SINCE`].
fn member_without_names(raft: &Raft, protocols: &PeerProtocols) -> Option<u64> {
    let (me, members): (u64, Vec<u64>) = {
        let m = raft.metrics();
        let m = m.borrow();
        let ids = m.membership_config.membership().nodes().map(|(id, _)| *id).collect();
        (m.id, ids)
    };
    let heard = protocols.report();
    members.into_iter().filter(|id| *id != me).find(|id| {
        !heard
            .iter()
            .any(|p| p.id == *id && p.version.is_some_and(|v| v >= NAMED_SINCE))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_names_both_clusters() {
        let why = refusal("an AppendEntries", "aaa", "bbb");
        assert!(why.contains("aaa") && why.contains("bbb"), "{why}");
        assert!(refusal("a vote", "", "bbb").contains("no named cluster"));
        assert_eq!(new_name().len(), 32);
        assert_ne!(new_name(), new_name());
    }
}

//! The cluster's name: a random id a leader gives the cluster once, through
//! the log (a `ClusterIdentity` command; the first one committed stays, see
//! `state::apply`), so every member holds the same name in its state and
//! every snapshot carries it. A restored backup gets a name of its own
//! ([`state::backup`](crate::state::backup)).
//!
//! Every AppendEntries, Vote and snapshot carries the sender's name, and a
//! named node refuses one that carries another name or none: a node
//! restored from a backup can never be taken into the cluster the backup
//! came from, nor an old member into the restored one, whatever addresses
//! they are given. A node without a name yet (a new learner, a member of a
//! cluster not named yet) takes anything; it learns the name with the log.
//!
//! The leader names the cluster ([`raft::life::naming`](crate::raft::life::naming)) only once every
//! member speaks peer protocol 2: a build from before names would fail the command, and its
//! state would differ from the others'. Once named, a build from before
//! names still follows a leader, but its votes and, as leader, its
//! appends are refused by the named members (docs/operations.md, "Rolling
//! upgrades").

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::state::StateStore;

/// The peer protocol that knows names.
pub const NAMED_SINCE: u32 = 2;

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

//! Naming the cluster: while this node leads a cluster without a name
//! ([`raft::net::identity`](crate::raft::net::identity)) whose members all speak [`NAMED_SINCE`], it
//! proposes one, once.

use std::sync::Arc;
use std::time::Duration;

use handlestore_proto::internal::v1 as ipb;

use crate::raft::Raft;
use crate::raft::net::identity::{NAMED_SINCE, new_name};
use crate::raft::net::protocol::PeerProtocols;
use crate::raft::writes::proposer::Proposer;
use crate::state::StateStore;

/// How often a leader of an unnamed cluster looks again.
const NAME_EVERY: Duration = Duration::from_secs(1);

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
